"""Request and reply payloads of every command: builders for the sender, parsers (which
validate in the protocol's order) for the receiver."""

import struct
from dataclasses import dataclass, field

from .. import gcm_model, model
from ..params import KeySize, Mode, Op
from .errors import (
    BadFlags,
    BadIv,
    BadKeySize,
    BadLength,
    BadMode,
    BadOp,
    BadReply,
    BadSlot,
    DeviceError,
    LengthNotMultipleOf16,
    check_slot,
)
from .session_spec import FEATURE_SESSIONS
from .spec import (
    ALL_SLOTS,
    BLOCK_MODES,
    BLOCK_SIZE,
    FEATURE_ENTROPY,
    FEATURE_ENTROPY_RAW,
    FLAG_AAD,
    FLAG_FIRST,
    FLAG_LAST,
    FLAGS_RESERVED,
    GCM_J0_SUFFIX,
    MAGIC,
    MAX_KEY_SLOTS,
    MAX_PAYLOAD,
    MAX_PROCESS_DATA,
    MIN_MAX_PAYLOAD,
    PROCESS_HEADER_SIZE,
    PROTOCOL_VERSION,
    Status,
    check_bytes,
    check_enum,
    check_uint,
    describe,
)

__all__ = [
    "build_status_reply",
    "parse_status_reply", "reply_status",
    "DeviceInfo",
    "build_info_request",
    "parse_info_request",
    "build_info_reply",
    "parse_info_reply",
    "LoadKeyRequest",
    "build_load_key_request",
    "parse_load_key_request",
    "build_load_key_reply",
    "parse_load_key_reply",
    "build_zeroize_request",
    "parse_zeroize_request",
    "build_zeroize_reply",
    "parse_zeroize_reply",
    "build_stats_request",
    "parse_stats_request",
    "build_stats_reply",
    "parse_stats_reply",
    "ProcessRequest",
    "build_process_request",
    "build_process_requests",
    "parse_process_request",
    "build_process_reply",
    "parse_process_reply",
]

# INFO's reply: status, magic, version, build id, name length; the name; then key sizes, key
# slots, modes, max payload, window, features.
_INFO_FIXED = struct.Struct(">B4sBIB")
_INFO_TAIL = struct.Struct(">BBBHBB")


def _slots(info):
    # The device's slot count when its INFO is known, else None (the protocol's limit).
    return None if info is None else info.key_slots


# --------------------------------------------------------------------------------------------
# Payloads: replies in general
# --------------------------------------------------------------------------------------------

def build_status_reply(status):
    """Build a reply payload that is only a status (any error reply; ``LOAD_KEY``/``ZEROIZE``).

    Parameters
    ----------
    status : Status or int
        The status.

    Returns
    -------
    bytes
        One byte.
    """
    return bytes([check_enum(status, "status", Status, ValueError)])


def reply_status(payload, what):
    """Split a reply payload into its OK status and the rest; raise for anything else
    (``what`` names the command in the errors)."""
    payload = check_bytes(payload, "payload")
    if not payload:
        raise BadLength(f"{what} reply payload length must be at least 1 (status), got 0")
    try:
        status = Status(payload[0])
    except ValueError:
        raise BadReply(f"{what} reply status byte {payload[0]:#04x} is not a known status "
                       f"(0x00 .. {max(Status):#04x})") from None
    if status != Status.OK:
        if len(payload) != 1:
            raise BadLength(f"{what} error reply payload length must be 1, got {len(payload)}")
        raise DeviceError(f"{what} failed: {status.name}: {describe(status)}", status=status)
    return payload[1:]


def parse_status_reply(payload):
    """Check a status-only reply payload.

    Parameters
    ----------
    payload : bytes
        Reply payload.

    Returns
    -------
    Status
        ``Status.OK``.

    Raises
    ------
    DeviceError
        If the status is not ``OK`` (its ``status`` attribute says which).
    BadLength, BadReply
        If the payload is not one known status byte.
    """
    rest = reply_status(payload, "status")
    if rest:
        raise BadLength(f"status reply payload length must be 1, got {1 + len(rest)}")
    return Status.OK


# --------------------------------------------------------------------------------------------
# INFO
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class DeviceInfo:
    """What ``INFO`` reports; a device's capabilities.

    Attributes
    ----------
    core_name : str
        Printable ASCII, at most 255 characters.
    build_id : int
        32-bit identifier of the bitstream.
    key_sizes : tuple of int
        Supported key lengths in bits, ascending (a subset of 128, 192, 256).
    key_slots : int
        Number of key slots, 1 .. 255.
    modes : tuple of Mode
        Supported modes, ascending; by default :data:`~.spec.BLOCK_MODES` (ECB, CBC, CTR):
        GCM only when listed.
    max_payload : int
        Largest payload accepted, :data:`MIN_MAX_PAYLOAD` .. :data:`MAX_PAYLOAD`.
    window : int
        Requests a host may have unanswered at once, 1 .. 255 (see *Pipelining*).
    entropy : bool
        The device has an entropy source (``INFO`` features bit 0): ``STATS`` reports its
        state and failure counts (:data:`~.spec.ENTROPY_COUNTERS`).
    sessions : bool
        The device has a secret and wants a session (``INFO`` features bit 1, see
        :mod:`.session_spec`).
    entropy_raw : bool
        A diagnostic build that gives its source's raw samples (features bit 2,
        ``ENTROPY_RAW``); only with ``entropy``.
    protocol_version : int
        :data:`PROTOCOL_VERSION`.
    """

    core_name: str = "reference-model"
    build_id: int = 0
    key_sizes: tuple = model.KEY_SIZES
    key_slots: int = 4
    modes: tuple = BLOCK_MODES
    max_payload: int = MAX_PAYLOAD
    window: int = 1
    entropy: bool = False
    sessions: bool = False
    entropy_raw: bool = False
    protocol_version: int = PROTOCOL_VERSION

    def __post_init__(self):
        # Validate once here so that both the builder and the parser produce only valid infos.
        if not isinstance(self.core_name, str):
            raise TypeError(f"core_name must be a str, not {type(self.core_name).__name__}")
        bad = [c for c in self.core_name if not " " <= c <= "~"]
        if bad or len(self.core_name) > 255:
            raise ValueError(f"core_name must be 0 .. 255 printable ASCII characters, got "
                             f"{self.core_name!r}")
        check_uint(self.build_id, "build_id", 32)
        sizes = tuple(sorted({KeySize.from_bits(b).bits for b in self.key_sizes}))
        if not sizes:
            raise BadKeySize("key_sizes must name at least one of 128, 192, 256, got none")
        object.__setattr__(self, "key_sizes", sizes)
        check_uint(self.key_slots, "key_slots", 8)
        if not 1 <= self.key_slots <= MAX_KEY_SLOTS:
            raise BadSlot(f"key_slots must be in range 1 .. {MAX_KEY_SLOTS}, got {self.key_slots}")
        modes = tuple(sorted({check_enum(m, "mode", Mode, BadMode) for m in self.modes}))
        if not modes:
            raise BadMode("modes must name at least one of ECB, CBC, CTR, GCM, got none")
        object.__setattr__(self, "modes", modes)
        check_uint(self.max_payload, "max_payload", 16)
        if not MIN_MAX_PAYLOAD <= self.max_payload <= MAX_PAYLOAD:
            raise BadLength(f"max_payload must be in range {MIN_MAX_PAYLOAD} .. {MAX_PAYLOAD}, "
                            f"got {self.max_payload}")
        if isinstance(self.window, bool) or not isinstance(self.window, int):
            raise TypeError(f"window must be an int, not {type(self.window).__name__}")
        if not 1 <= self.window <= 255:
            raise ValueError(f"window must be in range 1 .. 255, got {self.window}")
        for name in ("entropy", "sessions", "entropy_raw"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be a bool, not {type(getattr(self, name)).__name__}")
        if self.entropy_raw and not self.entropy:
            raise ValueError("entropy_raw: raw samples need an entropy source (entropy=True)")
        check_uint(self.protocol_version, "protocol_version", 8)

    @property
    def max_process_data(self):
        """Most data bytes in any ``PROCESS`` chunk (including an IV chunk)."""
        return self.max_payload - PROCESS_HEADER_SIZE - BLOCK_SIZE

    @property
    def max_chunk(self):
        """Largest whole-block chunk size a host should use (:attr:`max_process_data` rounded
        down to a multiple of 16)."""
        return self.max_process_data // BLOCK_SIZE * BLOCK_SIZE


def build_info_request():
    """Build the ``INFO`` request payload (empty)."""
    return b""


def parse_info_request(payload):
    """Check an ``INFO`` request payload.

    Raises
    ------
    BadLength
        If the payload is not empty.
    """
    payload = check_bytes(payload, "payload")
    if payload:
        raise BadLength(f"INFO request payload length must be 0, got {len(payload)}")


def build_info_reply(info):
    """Build a successful ``INFO`` reply payload.

    Parameters
    ----------
    info : DeviceInfo
        What to report.

    Returns
    -------
    bytes
        The reply payload (layout in the module docstring).
    """
    if not isinstance(info, DeviceInfo):
        raise TypeError(f"info must be a DeviceInfo, not {type(info).__name__}")
    name = info.core_name.encode("ascii")
    key_mask = sum(1 << KeySize.from_bits(b) for b in info.key_sizes)
    mode_mask = sum(1 << m for m in info.modes)
    return (_INFO_FIXED.pack(Status.OK, MAGIC, info.protocol_version, info.build_id, len(name))
            + name + _INFO_TAIL.pack(key_mask, info.key_slots, mode_mask, info.max_payload,
                                     info.window, FEATURE_ENTROPY * info.entropy
                                     | FEATURE_SESSIONS * info.sessions
                                     | FEATURE_ENTROPY_RAW * info.entropy_raw))


def _bits_to_members(mask, enum_cls, what):
    # Bit n stands for the member of value n; a bit this version does not define is an error
    # rather than ignored, so a device built from a different specification is noticed.
    if mask >> len(enum_cls):
        raise BadReply(f"INFO reply {what} bitmask must use bits 0 .. {len(enum_cls) - 1} only, "
                       f"got {mask:#04x}")
    return [m for m in enum_cls if mask >> m & 1]


def parse_info_reply(payload):
    """Parse an ``INFO`` reply payload.

    Parameters
    ----------
    payload : bytes
        Reply payload.

    Returns
    -------
    DeviceInfo
        What the device reported.

    Raises
    ------
    DeviceError
        If the status is not ``OK``.
    BadReply
        On a wrong magic, an unsupported protocol version, or reserved bitmask bits.
    BadLength
        If the payload is not exactly as long as its name length implies.
    """
    payload = check_bytes(payload, "payload")
    reply_status(payload, "INFO")
    shortest = _INFO_FIXED.size + _INFO_TAIL.size
    if len(payload) < shortest:
        raise BadLength(f"INFO reply payload length must be at least {shortest}, "
                        f"got {len(payload)}")
    _, magic, version, build_id, name_len = _INFO_FIXED.unpack_from(payload)
    if magic != MAGIC:
        raise BadReply(f"INFO reply magic must be {MAGIC!r}, got {magic!r}")
    if version != PROTOCOL_VERSION:
        raise BadReply(f"INFO reply protocol version must be {PROTOCOL_VERSION}, got {version}")
    if len(payload) != shortest + name_len:
        raise BadLength(f"INFO reply payload length must be {shortest + name_len} for a "
                        f"{name_len}-byte core name, got {len(payload)}")
    name = payload[_INFO_FIXED.size:_INFO_FIXED.size + name_len]
    key_mask, key_slots, mode_mask, max_payload, window, features = _INFO_TAIL.unpack_from(
        payload, _INFO_FIXED.size + name_len)
    if features & ~(FEATURE_ENTROPY | FEATURE_SESSIONS | FEATURE_ENTROPY_RAW):
        raise BadReply(f"INFO reply features must use bits 0 .. 2 only, got {features:#04x}")
    key_sizes = tuple(s.bits for s in _bits_to_members(key_mask, KeySize, "key sizes"))
    modes = tuple(_bits_to_members(mode_mask, Mode, "modes"))
    try:
        # Undecodable bytes become U+FFFD, which DeviceInfo refuses naming the field.
        name = name.decode("ascii", "replace")
        return DeviceInfo(core_name=name, build_id=build_id, key_sizes=key_sizes,
                          key_slots=key_slots, modes=modes, max_payload=max_payload,
                          window=window, entropy=bool(features & FEATURE_ENTROPY),
                          sessions=bool(features & FEATURE_SESSIONS),
                          entropy_raw=bool(features & FEATURE_ENTROPY_RAW),
                          protocol_version=version)
    except ValueError as e:
        # A value DeviceInfo refuses (non-ASCII name, no slots, ...) is the device's fault.
        raise BadReply(f"INFO reply is invalid: {e}") from None


# --------------------------------------------------------------------------------------------
# LOAD_KEY
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class LoadKeyRequest:
    """A parsed ``LOAD_KEY`` request. The key is left out of ``repr`` so it never reaches logs.

    Attributes
    ----------
    slot : int
        Key slot.
    key : bytes
        16, 24 or 32 bytes.
    """

    slot: int
    key: bytes = field(repr=False)

    @property
    def key_size(self):
        """The :class:`KeySize` of :attr:`key`."""
        return KeySize.from_bits(8 * len(self.key))


def build_load_key_request(slot, key):
    """Build a ``LOAD_KEY`` request payload.

    Parameters
    ----------
    slot : int
        Key slot, 0 .. 254.
    key : bytes
        16, 24 or 32 bytes; the size code is derived from the length.

    Returns
    -------
    bytes
        The request payload.
    """
    slot = check_slot(check_uint(slot, "slot", 8), None)
    key = check_bytes(key, "key")
    if len(key) not in (16, 24, 32):
        raise BadKeySize(f"key length must be 16, 24 or 32 bytes, got {len(key)}")
    return bytes([slot, KeySize.from_bits(8 * len(key))]) + key


def parse_load_key_request(payload, info=None):
    """Parse and validate a ``LOAD_KEY`` request payload.

    Parameters
    ----------
    payload : bytes
        Request payload.
    info : DeviceInfo, optional
        The device's capabilities; without it any slot 0 .. 254 and any key size is accepted.

    Returns
    -------
    LoadKeyRequest
        The request.

    Raises
    ------
    BadLength, BadSlot, BadKeySize
        In the order of the module docstring.
    """
    payload = check_bytes(payload, "payload")
    if len(payload) < 2:
        raise BadLength(f"LOAD_KEY request payload length must be at least 2, got {len(payload)}")
    slot = check_slot(payload[0], _slots(info))
    try:
        size = KeySize(payload[1])
    except ValueError:
        raise BadKeySize(f"key size code must be 0 (AES-128), 1 (AES-192) or 2 (AES-256), "
                         f"got {payload[1]}") from None
    if info is not None and size.bits not in info.key_sizes:
        built = ", ".join(f"{KeySize.from_bits(b).value} (AES-{b})" for b in info.key_sizes)
        raise BadKeySize(f"key size code must be one this device supports: {built}, "
                         f"got {size.value} (AES-{size.bits})")
    key = payload[2:]
    if len(key) != size.nbytes:
        raise BadLength(f"key length must be {size.nbytes} bytes for AES-{size.bits}, "
                        f"got {len(key)}")
    return LoadKeyRequest(slot, key)


def build_load_key_reply(status=Status.OK):
    """Build a ``LOAD_KEY`` reply payload: only a status, never key material."""
    return build_status_reply(status)


def parse_load_key_reply(payload):
    """Check a ``LOAD_KEY`` reply payload; ``DeviceError`` unless it is ``OK``."""
    return parse_status_reply(payload)


# --------------------------------------------------------------------------------------------
# ZEROIZE
# --------------------------------------------------------------------------------------------

def build_zeroize_request(slot=ALL_SLOTS):
    """Build a ``ZEROIZE`` request payload.

    Parameters
    ----------
    slot : int, optional
        Key slot 0 .. 254, or :data:`ALL_SLOTS` (the default).

    Returns
    -------
    bytes
        One byte.
    """
    return bytes([check_slot(check_uint(slot, "slot", 8), None, allow_all=True)])


def parse_zeroize_request(payload, info=None):
    """Parse and validate a ``ZEROIZE`` request payload.

    Parameters
    ----------
    payload : bytes
        Request payload.
    info : DeviceInfo, optional
        The device's capabilities; without it any slot 0 .. 254 is accepted.

    Returns
    -------
    int
        The slot, or :data:`ALL_SLOTS`.

    Raises
    ------
    BadLength, BadSlot
        In the order of the module docstring.
    """
    payload = check_bytes(payload, "payload")
    if len(payload) != 1:
        raise BadLength(f"ZEROIZE request payload length must be 1, got {len(payload)}")
    return check_slot(payload[0], _slots(info), allow_all=True)


def build_zeroize_reply(status=Status.OK):
    """Build a ``ZEROIZE`` reply payload: only a status."""
    return build_status_reply(status)


def parse_zeroize_reply(payload):
    """Check a ``ZEROIZE`` reply payload; ``DeviceError`` unless it is ``OK``."""
    return parse_status_reply(payload)


# --------------------------------------------------------------------------------------------
# STATS
# --------------------------------------------------------------------------------------------

def build_stats_request():
    """Build the ``STATS`` request payload (empty)."""
    return b""


def parse_stats_request(payload):
    """Check a ``STATS`` request payload; ``BadLength`` unless it is empty."""
    payload = check_bytes(payload, "payload")
    if payload:
        raise BadLength(f"STATS request payload length must be 0, got {len(payload)}")


def build_stats_reply(counters):
    """Build a successful ``STATS`` reply payload from the counter values (each taken modulo
    2**16, as the device's wrap)."""
    counters = list(counters)
    if len(counters) > 255:
        raise ValueError(f"a STATS reply holds at most 255 counters, got {len(counters)}")
    return bytes([Status.OK, len(counters)]) + b"".join(
        (check_uint(c, "counter", 64) & 0xFFFF).to_bytes(2, "big") for c in counters)


def parse_stats_reply(payload):
    """The counter values of a ``STATS`` reply payload (a list of int)."""
    rest = reply_status(payload, "STATS")
    if not rest or len(rest) != 1 + 2 * rest[0]:
        raise BadLength(f"STATS reply payload length must be 2 + 2 * count, got "
                        f"{1 + len(rest)}")
    return [int.from_bytes(rest[1 + 2 * n:3 + 2 * n], "big") for n in range(rest[0])]



# --------------------------------------------------------------------------------------------
# PROCESS
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ProcessRequest:
    """A parsed ``PROCESS`` request.

    Attributes
    ----------
    slot : int
        Key slot.
    op : Op
        Encrypt or decrypt.
    mode : Mode
        ECB, CBC, CTR or GCM.
    first, last : bool
        The ``FIRST`` and ``LAST`` flags.
    iv : bytes or None
        16 bytes if ``first``, else ``None``.
    data : bytes
        The chunk's data (in a GCM decryption's ``LAST`` chunk, the expected tag). Left out of
        ``repr``: it may be plaintext.
    aad : bool
        The ``AAD`` flag (GCM only): ``data`` is additional authenticated data.
    """

    slot: int
    op: Op
    mode: Mode
    first: bool
    last: bool
    iv: bytes | None
    data: bytes = field(repr=False)
    aad: bool = False


def _check_data_length(length, op, mode, last, limit):
    if length > limit:
        raise BadLength(f"PROCESS data length must be in range 0 .. {limit}, got {length}")
    if mode == Mode.GCM:
        # Any length but in LAST, which carries nothing (encryption) or the expected tag.
        if last and op == Op.ENCRYPT and length:
            raise BadLength(f"a GCM encryption's LAST chunk carries no data, got {length} bytes")
        if last and op == Op.DECRYPT and not (
                gcm_model.MIN_TAG_BYTES <= length <= gcm_model.TAG_BYTES):
            raise BadLength(f"a GCM decryption's LAST chunk carries the expected tag, "
                            f"{gcm_model.MIN_TAG_BYTES} .. {gcm_model.TAG_BYTES} bytes, "
                            f"got {length}")
        return
    if length % BLOCK_SIZE and not (mode == Mode.CTR and last):
        raise LengthNotMultipleOf16(
            f"PROCESS data length must be a multiple of {BLOCK_SIZE} (only the LAST chunk of a "
            f"CTR message may end with a partial block), got {length} in a "
            f"{'LAST' if last else 'non-LAST'} {mode.name} chunk")


def build_process_request(slot, op, mode, data, *, first, last, iv=None, aad=False):
    """Build one ``PROCESS`` request payload (one chunk of a message).

    Parameters
    ----------
    slot : int
        Key slot, 0 .. 254.
    op : Op or int
        Encrypt or decrypt.
    mode : Mode or int
        ECB, CBC, CTR or GCM.
    data : bytes
        At most :data:`MAX_PROCESS_DATA` bytes; whole blocks unless this is the ``LAST`` chunk of
        a CTR message, or GCM (see "GCM messages" in the specification).
    first, last : bool
        The ``FIRST`` and ``LAST`` flags.
    iv : bytes, optional
        16 bytes, required with ``first`` for CBC, CTR and GCM (J0,
        :func:`~.spec.gcm_pre_counter`; its value is the device's to check); ECB sends zeros
        when omitted. Must be omitted without ``first``.
    aad : bool, optional
        The ``AAD`` flag: in GCM, ``data`` is additional authenticated data (never with
        ``last``).

    Returns
    -------
    bytes
        The request payload.
    """
    slot = check_slot(check_uint(slot, "slot", 8), None)
    op = check_enum(op, "op", Op, BadOp)
    mode = check_enum(mode, "mode", Mode, BadMode)
    data = check_bytes(data, "data")
    if not first:
        if iv is not None:
            raise ValueError("iv must be omitted in a chunk without FIRST (the chaining state "
                             "continues from the previous chunk)")
        iv = b""
    elif iv is None:
        if mode != Mode.ECB:
            raise ValueError(f"iv is required in the FIRST chunk of a {mode.name} message")
        iv = bytes(BLOCK_SIZE)
    else:
        iv = check_bytes(iv, "iv")
        if len(iv) != BLOCK_SIZE:
            raise BadLength(f"iv length must be {BLOCK_SIZE} bytes, got {len(iv)}")
    if aad and (mode != Mode.GCM or last):
        raise BadFlags("the AAD flag is only for GCM chunks without LAST")
    _check_data_length(len(data), op, mode, last, MAX_PROCESS_DATA)
    flags = (FLAG_FIRST if first else 0) | (FLAG_LAST if last else 0) | (FLAG_AAD if aad else 0)
    return bytes([slot, op, mode, flags]) + iv + data


def build_process_requests(slot, op, mode, data, *, iv=None, chunk_size=MAX_PROCESS_DATA):
    """Split a whole message into ``PROCESS`` request payloads.

    Parameters
    ----------
    slot, op, mode, iv
        As for :func:`build_process_request`.
    data : bytes
        The whole message; whole blocks unless ``mode`` is CTR.
    chunk_size : int, optional
        Data bytes per chunk (the last may be shorter): a multiple of 16, at most
        :data:`MAX_PROCESS_DATA` (use :attr:`DeviceInfo.max_chunk` for a smaller device).

    Returns
    -------
    list of bytes
        One payload per chunk, the first with ``FIRST``, the last with ``LAST``; a single chunk
        (both flags) for a message of at most ``chunk_size`` bytes, even an empty one.
    """
    data = check_bytes(data, "data")
    if check_enum(mode, "mode", Mode, BadMode) == Mode.GCM:
        raise ValueError("a GCM message has AAD, data and tag chunks: use "
                         "aes_fpga.appliance.gcm.build_gcm_requests")
    check_uint(chunk_size, "chunk_size", 16)
    if not BLOCK_SIZE <= chunk_size <= MAX_PROCESS_DATA or chunk_size % BLOCK_SIZE:
        raise ValueError(f"chunk_size must be a multiple of {BLOCK_SIZE} in range "
                         f"{BLOCK_SIZE} .. {MAX_PROCESS_DATA}, got {chunk_size}")
    starts = range(0, max(len(data), 1), chunk_size)
    return [
        build_process_request(slot, op, mode, data[s:s + chunk_size], first=s == 0,
                              last=s + chunk_size >= len(data), iv=iv if s == 0 else None)
        for s in starts
    ]


def parse_process_request(payload, info=None):
    """Parse and validate a ``PROCESS`` request payload.

    Parameters
    ----------
    payload : bytes
        Request payload.
    info : DeviceInfo, optional
        The device's capabilities; without it any slot 0 .. 254, any mode and data up to
        :data:`MAX_PROCESS_DATA` bytes are accepted.

    Returns
    -------
    ProcessRequest
        The request.

    Raises
    ------
    BadLength, BadSlot, BadOp, BadMode, BadFlags, BadIv, LengthNotMultipleOf16
        In the order of the module docstring.
    """
    payload = check_bytes(payload, "payload")
    if len(payload) < PROCESS_HEADER_SIZE:
        raise BadLength(f"PROCESS request payload length must be at least {PROCESS_HEADER_SIZE}, "
                        f"got {len(payload)}")
    slot = check_slot(payload[0], _slots(info))
    op = check_enum(payload[1], "op", Op, BadOp)
    mode = check_enum(payload[2], "mode", Mode, BadMode)
    if info is not None and mode not in info.modes:
        built = ", ".join(f"{m.value} ({m.name})" for m in info.modes)
        raise BadMode(f"mode must be one this device supports: {built}, got {mode.value} "
                      f"({mode.name})")
    flags = payload[3]
    if flags & FLAGS_RESERVED:
        raise BadFlags(f"PROCESS flags must have bits 3..7 clear (allowed bits: "
                       f"{FLAG_FIRST:#04x} FIRST, {FLAG_LAST:#04x} LAST, {FLAG_AAD:#04x} AAD), "
                       f"got {flags:#04x}")
    first, last, aad = (bool(flags & f) for f in (FLAG_FIRST, FLAG_LAST, FLAG_AAD))
    if aad and mode != Mode.GCM:
        raise BadFlags(f"PROCESS flag AAD ({FLAG_AAD:#04x}) is only for GCM, got it in "
                       f"{mode.name}")
    if aad and last:
        raise BadFlags("PROCESS flag AAD is not allowed with LAST (a GCM LAST chunk carries "
                       "no message data)")
    offset = PROCESS_HEADER_SIZE
    iv = None
    if first:
        offset += BLOCK_SIZE
        if len(payload) < offset:
            raise BadLength(f"PROCESS request payload length must be at least {offset} with "
                            f"FIRST (16-byte iv), got {len(payload)}")
        iv = payload[PROCESS_HEADER_SIZE:offset]
        if mode == Mode.GCM and iv[gcm_model.NONCE_BYTES:] != GCM_J0_SUFFIX:
            raise BadIv(f"a GCM FIRST chunk's iv must be J0 = nonce || "
                        f"{GCM_J0_SUFFIX.hex(' ')}, got one ending in "
                        f"{iv[gcm_model.NONCE_BYTES:].hex(' ')}")
    data = payload[offset:]
    limit = MAX_PROCESS_DATA if info is None else info.max_process_data
    _check_data_length(len(data), op, mode, last, limit)
    return ProcessRequest(slot, op, mode, first, last, iv, data, aad)


def build_process_reply(data):
    """Build a successful ``PROCESS`` reply payload.

    Parameters
    ----------
    data : bytes
        The processed data, as long as the request's.

    Returns
    -------
    bytes
        ``Status.OK`` followed by ``data``.
    """
    data = check_bytes(data, "data")
    if len(data) > MAX_PROCESS_DATA:
        raise BadLength(f"PROCESS reply data length must be in range 0 .. {MAX_PROCESS_DATA}, "
                        f"got {len(data)}")
    return bytes([Status.OK]) + data


def parse_process_reply(payload, expected_length=None):
    """Parse a ``PROCESS`` reply payload.

    Parameters
    ----------
    payload : bytes
        Reply payload.
    expected_length : int, optional
        The request's data length; checked if given.

    Returns
    -------
    bytes
        The processed data.

    Raises
    ------
    DeviceError
        If the status is not ``OK``.
    BadLength
        If the data length differs from ``expected_length``.
    """
    data = reply_status(payload, "PROCESS")
    if expected_length is not None and len(data) != expected_length:
        raise BadLength(f"PROCESS reply data length must be {expected_length} (the request's), "
                        f"got {len(data)}")
    return data
