"""``aes-fpga encrypt`` and ``aes-fpga decrypt``: a file through the appliance in ECB, CBC or
CTR, PKCS#7 padding added or removed on the host; or in GCM, authenticated.

A GCM file is nonce (12 bytes) || ciphertext || tag (16 bytes), what ``cryptography``'s
``AESGCM(key).decrypt(nonce, rest, aad)`` opens. Decryption writes OUT only once the device has
verified the tag, through a temporary file beside it renamed on success: after a failure
(``authentication failed`` or any other) no new OUT exists.

Everything that can be found wrong without the device is found before it is opened: options
the mode does not use, the key, the IV, whether IN can be read and OUT written, and whether
IN's length suits the mode (in GCM: the SP 800-38D limit, checked before IN is read). Host side
only: nothing here loads the HDL (``--port sim`` aside).
"""

import os
import sys
from pathlib import Path

from . import device
from .common import cannot_read, cannot_write, fail, write_atomically
from .options import add_port_options, hex_bytes

__all__ = ["add_arguments", "run", "MODE_OPTIONS", "mode_help", "read_key_file", "pkcs7_pad",
           "pkcs7_unpad", "check_mode_options", "GCM_NONCE_WARNING"]

#: The options each mode takes (beyond the key and the files); any other is refused.
MODE_OPTIONS = {"ecb": ("padding",), "cbc": ("iv", "padding"), "ctr": ("iv",),
                "gcm": ("aad_file", "nonce")}
#: What each of those options is in each mode that takes it.
_MEANING = {("cbc", "iv"): "the IV, required", ("ctr", "iv"): "the initial counter block, "
            "required", ("ecb", "padding"): "pkcs7, the default, or none",
            ("cbc", "padding"): "pkcs7, the default, or none",
            ("gcm", "aad_file"): "additional authenticated data, optional",
            ("gcm", "nonce"): "encryption only, random by default"}
#: Every option some mode takes, as ``args`` names them.
_OPTIONS = ("iv", "padding", "aad_file", "nonce")
#: What ``--help`` says of ``--nonce``.
GCM_NONCE_WARNING = ("WARNING: never encrypt two messages with the same key and nonce: GCM then "
                     "reveals the XOR of the plaintexts and lets anyone forge tags. Leave "
                     "--nonce out for a random one (os.urandom), safe for up to 2**32 messages "
                     "per key.")
#: Nonce and tag around a GCM file's ciphertext.
_NONCE, _TAG = 12, 16


def _flag(option):
    return "--" + option.replace("_", "-")


def mode_help():
    """One line per mode naming the options it takes (``--help`` shows it)."""
    return "; ".join(f"{mode}: " + ", ".join(f"{_flag(o)} ({_MEANING[mode, o]})" for o in opts)
                     for mode, opts in MODE_OPTIONS.items())


def add_arguments(p):
    p.description = (f"The options each mode takes (any other is refused): {mode_help()}. "
                     f"CTR and GCM never pad. A GCM file is nonce (12 bytes) || ciphertext || "
                     f"tag (16 bytes); decrypt --mode gcm writes OUT only when the tag "
                     f"verifies.")
    add_port_options(p)
    key = p.add_mutually_exclusive_group(required=True)
    key.add_argument("--key", type=hex_bytes("key", (16, 24, 32)),
                     help="the key in hex (16, 24 or 32 bytes)")
    key.add_argument("--key-file", help="file holding the key (raw bytes or hex)")
    p.add_argument("--key-slot", type=int, default=0, help="device key slot (default 0)")
    p.add_argument("--mode", default="ctr", choices=tuple(MODE_OPTIONS),
                   help="block-cipher mode (default ctr); ecb takes --padding, cbc --iv and "
                        "--padding, ctr --iv, gcm --aad-file and --nonce")
    p.add_argument("--iv", type=hex_bytes("iv", (16,)),
                   help="CBC IV or initial CTR counter block, 16 bytes in hex (CBC and CTR "
                        "only)")
    p.add_argument("--padding", default=None, choices=("pkcs7", "none"),
                   help="ECB/CBC only: PKCS#7 padding added on encryption and removed on "
                        "decryption (default), or none (whole blocks only)")
    p.add_argument("--aad-file", metavar="F",
                   help="GCM only: file of additional authenticated data (authenticated, not "
                        "encrypted, not stored in OUT: decryption needs the same file)")
    p.add_argument("--nonce", type=hex_bytes("nonce", (12,)),
                   help=f"GCM encryption only: the 12-byte nonce in hex. {GCM_NONCE_WARNING}")
    p.add_argument("input", metavar="IN", help="input file")
    p.add_argument("output", metavar="OUT", help="output file")


def check_mode_options(args):
    """Refuse (:class:`ValueError`, naming the option and the mode) an option ``args.mode``
    does not use, and a missing IV where it needs one."""
    mode = args.mode.upper()
    takes = MODE_OPTIONS[args.mode]
    for option in _OPTIONS:
        if getattr(args, option, None) is not None and option not in takes:
            name = option.replace("_", "-")
            raise ValueError(f"{name}: {_flag(option)} is not used by {mode}; {mode} takes "
                             f"{' and '.join(_flag(o) for o in takes)}")
    if "iv" in takes and args.iv is None:
        raise ValueError(f"iv: --iv is required for {mode} (16 bytes in hex)")
    if args.mode == "gcm" and args.command == "decrypt" and args.nonce is not None:
        raise ValueError("nonce: --nonce is for encryption only; decryption reads the nonce "
                         "from the first 12 bytes of IN")


def read_key_file(path):
    """The key held in file ``path``: 16, 24 or 32 raw bytes, or their hex form."""
    try:
        raw = Path(path).read_bytes()
    except OSError as e:
        raise ValueError(f"key-file: cannot read {path}: {e.strerror}") from None
    if len(raw) in (16, 24, 32):
        return raw
    try:
        key = bytes.fromhex(raw.decode("ascii").strip())
    except (UnicodeDecodeError, ValueError):
        key = b""
    if len(key) not in (16, 24, 32):
        raise ValueError(f"key-file: {path} holds neither a 16/24/32-byte key nor its hex form")
    return key


def pkcs7_pad(data):
    """``data`` with PKCS#7 padding to a whole number of 16-byte blocks."""
    n = 16 - len(data) % 16
    return data + bytes([n]) * n


def pkcs7_unpad(data):
    """``data`` without its PKCS#7 padding; :class:`ValueError` when it has none."""
    if not data or len(data) % 16 or not 1 <= data[-1] <= 16 or \
            data[-data[-1]:] != bytes([data[-1]]) * data[-1]:
        raise ValueError("the decrypted data does not end in valid PKCS#7 padding (wrong key, "
                         "IV or mode, or the data was not padded: use --padding none)")
    return data[:-data[-1]]


def _check_files(args):
    """The key, once IN (and the AAD file) can be read and OUT written; else
    :class:`ValueError`."""
    check_mode_options(args)
    key = args.key if args.key is not None else read_key_file(args.key_file)
    why = cannot_read(args.input)
    if why:
        raise ValueError(f"IN: cannot read {args.input}: {why}")
    aad_file = getattr(args, "aad_file", None)
    why = aad_file and cannot_read(aad_file)
    if why:
        raise ValueError(f"aad-file: cannot read {aad_file}: {why}")
    why = cannot_write(args.output)
    if why:
        raise ValueError(f"OUT: cannot write {args.output}: {why}")
    return key


def _read(path, what):
    try:
        return Path(path).read_bytes()
    except OSError as e:
        raise ValueError(f"{what}: cannot read {path}: {e.strerror}") from None


def _check_gcm_sizes(args, data_bytes, aad_bytes, decrypt):
    """:class:`ValueError` for a message over GCM's limits (sizes ``None``: not known yet)."""
    from ..appliance.spec import GCM_MAX_AAD_BYTES, GCM_MAX_DATA_BYTES
    if data_bytes is not None and decrypt:
        data_bytes -= _NONCE + _TAG
    if data_bytes is not None and data_bytes > GCM_MAX_DATA_BYTES:
        raise ValueError(f"IN: {args.input} holds {data_bytes} bytes of "
                         f"{'ciphertext' if decrypt else 'plaintext'}, over GCM's limit of "
                         f"{GCM_MAX_DATA_BYTES} bytes a message (SP 800-38D: 2**39 - 256 bits); "
                         f"split it into several messages")
    if aad_bytes is not None and aad_bytes > GCM_MAX_AAD_BYTES:
        raise ValueError(f"aad-file: {args.aad_file} holds {aad_bytes} bytes, over the "
                         f"appliance's GCM limit of {GCM_MAX_AAD_BYTES} bytes of AAD")


def _size(path):
    # The size of a regular file without reading it; None for a pipe (known once read).
    p = Path(path)
    return p.stat().st_size if p.is_file() else None


def _prepare_gcm(args, decrypt):
    """The key, nonce, AAD, data and (decryption) tag of a GCM run, every check made, the
    limits before anything is read; :class:`ValueError` otherwise."""
    key = _check_files(args)
    aad_size = _size(args.aad_file) if args.aad_file else 0
    _check_gcm_sizes(args, _size(args.input), aad_size, decrypt)
    aad = _read(args.aad_file, "aad-file") if args.aad_file else b""
    data = _read(args.input, "IN")
    _check_gcm_sizes(args, len(data), len(aad), decrypt)
    if not decrypt:
        return key, args.nonce or os.urandom(_NONCE), aad, data, None
    if len(data) < _NONCE + _TAG:
        raise ValueError(f"IN: {args.input} is not a GCM file: its {len(data)} bytes are fewer "
                         f"than a nonce ({_NONCE}) and a tag ({_TAG})")
    return key, data[:_NONCE], aad, data[_NONCE:-_TAG], data[-_TAG:]


def _prepare(args, decrypt):
    """The key and the message to send, every check made; :class:`ValueError` otherwise."""
    mode = args.mode.upper()
    key = _check_files(args)
    data = _read(args.input, "IN")
    padding = (args.padding or "pkcs7") if args.mode != "ctr" else "none"
    if not data and decrypt:
        raise ValueError(f"IN: {args.input} is empty: there is nothing to decrypt (an "
                         f"encrypted file is never empty)")
    if not data and padding == "none":
        # Refused rather than answered with an empty OUT, as decryption refuses it back.
        how = ("CTR" if args.mode == "ctr" else
               f"{mode} with --padding none (PKCS#7 padding makes a block of it)")
        raise ValueError(f"IN: {args.input} is empty: there is nothing to encrypt in {how}")
    if not decrypt and padding == "pkcs7":
        data = pkcs7_pad(data)
    if args.mode != "ctr" and len(data) % 16:
        if decrypt:
            # Every ECB or CBC ciphertext is whole blocks, padded or not: no option helps.
            raise ValueError(f"IN: {args.input} is not a {mode} ciphertext: its {len(data)} "
                             f"bytes are not a whole number of 16-byte blocks")
        raise ValueError(f"IN: {len(data)} bytes is not a whole number of 16-byte blocks, "
                         f"as {mode} needs; use --padding pkcs7")
    return key, data, padding


def _run_gcm(args, decrypt):
    from ..appliance.client import Progress
    from ..gcm_model import AuthenticationError

    try:
        key, nonce, aad, data, tag = _prepare_gcm(args, decrypt)
    except ValueError as e:
        return fail(args.command, e)
    slot = args.key_slot
    try:
        with device.open_device(args) as dev:
            dev.load_key(slot, key)
            bar = Progress(len(data), f"{args.command} GCM")
            try:
                if decrypt:
                    out = dev.gcm_decrypt(slot, nonce, aad, data, tag, progress=bar)
                else:
                    out = nonce + b"".join(dev.gcm_encrypt(slot, nonce, aad, data,
                                                           progress=bar))
            finally:
                bar.close(summary=False)    # the summary once OUT is written
                dev.zeroize(slot)
    except AuthenticationError:
        return fail(args.command, "authentication failed: IN, its nonce or tag, or the AAD "
                                  "was altered, or the key is not the one it was made with; "
                                  "nothing was written", 1)
    except device.device_errors() as e:
        return fail(args.command, e, 1)
    try:
        write_atomically(args.output, out)
    except OSError as e:
        return fail(args.command, f"OUT: cannot write {args.output}: {e.strerror}")
    print(bar.summary(), file=sys.stderr)
    return 0


def run(args):
    from ..appliance.client import Progress
    from ..appliance.spec import Mode, Op

    decrypt = args.command == "decrypt"
    if args.mode == "gcm":
        return _run_gcm(args, decrypt)
    try:
        key, data, padding = _prepare(args, decrypt)
    except ValueError as e:
        return fail(args.command, e)
    op, mode = (Op.DECRYPT if decrypt else Op.ENCRYPT), Mode[args.mode.upper()]
    try:
        with device.open_device(args) as dev:
            dev.load_key(args.key_slot, key)
            bar = Progress(len(data), f"{args.command} {args.mode.upper()}")
            try:
                out = dev.process(args.key_slot, op, mode, data, iv=args.iv or bytes(16),
                                  progress=bar)
            finally:
                bar.close(summary=False)    # the summary once OUT is written
            dev.zeroize(args.key_slot)
    except device.device_errors() as e:
        return fail(args.command, e, 1)
    if decrypt and padding == "pkcs7":
        try:
            out = pkcs7_unpad(out)
        except ValueError as e:
            return fail(args.command, e, 1)
    try:
        Path(args.output).write_bytes(out)
    except OSError as e:
        return fail(args.command, f"OUT: cannot write {args.output}: {e.strerror}")
    print(bar.summary(), file=sys.stderr)
    return 0
