"""``aes-fpga encrypt`` and ``aes-fpga decrypt``: a file through the appliance in ECB, CBC or
CTR, PKCS#7 padding added or removed on the host.

Everything that can be found wrong without the device is found before it is opened: options
the mode does not use, the key, the IV, whether IN can be read and OUT written, and whether
IN's length suits the mode. Host side only: nothing here loads the HDL (``--port sim`` aside).
"""

import sys
from pathlib import Path

from . import device
from .common import cannot_read, cannot_write, fail
from .options import add_port_options, hex_bytes

__all__ = ["add_arguments", "run", "MODE_OPTIONS", "mode_help", "read_key_file", "pkcs7_pad",
           "pkcs7_unpad", "check_mode_options"]

#: The options each mode takes (beyond the key and the files); any other is refused.
MODE_OPTIONS = {"ecb": ("padding",), "cbc": ("iv", "padding"), "ctr": ("iv",)}
#: What each of those options is in each mode that takes it.
_MEANING = {("cbc", "iv"): "the IV, required", ("ctr", "iv"): "the initial counter block, "
            "required", ("ecb", "padding"): "pkcs7, the default, or none",
            ("cbc", "padding"): "pkcs7, the default, or none"}


def mode_help():
    """One line per mode naming the options it takes (``--help`` shows it)."""
    return "; ".join(f"{mode}: " + ", ".join(f"--{o} ({_MEANING[mode, o]})" for o in opts)
                     for mode, opts in MODE_OPTIONS.items())


def add_arguments(p):
    p.description = (f"The options each mode takes (any other is refused): {mode_help()}. "
                     f"CTR never pads.")
    add_port_options(p)
    key = p.add_mutually_exclusive_group(required=True)
    key.add_argument("--key", type=hex_bytes("key", (16, 24, 32)),
                     help="the key in hex (16, 24 or 32 bytes)")
    key.add_argument("--key-file", help="file holding the key (raw bytes or hex)")
    p.add_argument("--key-slot", type=int, default=0, help="device key slot (default 0)")
    p.add_argument("--mode", default="ctr", choices=tuple(MODE_OPTIONS),
                   help="block-cipher mode (default ctr); ecb takes --padding, cbc --iv and "
                        "--padding, ctr --iv")
    p.add_argument("--iv", type=hex_bytes("iv", (16,)),
                   help="CBC IV or initial CTR counter block, 16 bytes in hex (CBC and CTR "
                        "only)")
    p.add_argument("--padding", default=None, choices=("pkcs7", "none"),
                   help="ECB/CBC only: PKCS#7 padding added on encryption and removed on "
                        "decryption (default), or none (whole blocks only)")
    p.add_argument("input", metavar="IN", help="input file")
    p.add_argument("output", metavar="OUT", help="output file")


def check_mode_options(args):
    """Refuse (:class:`ValueError`, naming the option and the mode) an option ``args.mode``
    does not use, and a missing IV where it needs one."""
    mode = args.mode.upper()
    takes = MODE_OPTIONS[args.mode]
    for option in ("iv", "padding"):
        if getattr(args, option) is not None and option not in takes:
            raise ValueError(f"{option}: --{option} is not used by {mode}; {mode} takes "
                             f"{' and '.join(f'--{o}' for o in takes)}")
    if "iv" in takes and args.iv is None:
        raise ValueError(f"iv: --iv is required for {mode} (16 bytes in hex)")


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


def _prepare(args, decrypt):
    """The key and the message to send, every check made; :class:`ValueError` otherwise."""
    mode = args.mode.upper()
    check_mode_options(args)
    key = args.key if args.key is not None else read_key_file(args.key_file)
    why = cannot_read(args.input)
    if why:
        raise ValueError(f"IN: cannot read {args.input}: {why}")
    why = cannot_write(args.output)
    if why:
        raise ValueError(f"OUT: cannot write {args.output}: {why}")
    try:
        data = Path(args.input).read_bytes()
    except OSError as e:
        raise ValueError(f"IN: cannot read {args.input}: {e.strerror}") from None
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


def run(args):
    from ..appliance.client import Progress
    from ..appliance.spec import Mode, Op

    decrypt = args.command == "decrypt"
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
