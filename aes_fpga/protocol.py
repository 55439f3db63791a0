"""Wire protocol of the serial-port AES appliance: specification and reference implementation.

This module is the single source of truth for the protocol spoken between a host and the AES
appliance over a serial port: opcodes, framing, field layouts, status codes and the order in which
a device validates a request. The gateware takes its constants from here and is checked against
:class:`DeviceModel`; host tools build and parse messages with the functions below. It imports
only the standard library and the pure-Python :mod:`aes_fpga.model` (never Amaranth), so host
tools work without the HDL toolchain and the model can be trusted on its own.

All multi-byte integers are big-endian. Offsets and sizes below are in bytes.

Exchange
--------
The host sends a *request*; the device answers every request it can attribute (see "Errors and
validation order") with exactly one *reply* carrying the request's sequence number. The host sends
one request at a time and waits for its reply (or a timeout) before sending the next. ``seq`` is
opaque to the device: it is echoed, never interpreted, and the device keeps no record of earlier
requests, so a host that retries a ``PROCESS`` chunk after a lost reply must restart that message
from its ``FIRST`` chunk (a repeated chunk would advance the chaining state twice).

Framing
-------
On the wire every frame is its *content* encoded with COBS (Consistent Overhead Byte Stuffing)
followed by one ``0x00`` delimiter. COBS removes every zero from the content, so a zero always
ends a frame and a receiver resynchronises at the next zero after any corruption. A host may send
a lone ``0x00`` at any time (for example on opening the port) to end whatever partial frame the
device holds; empty frames (two delimiters in a row) are ignored, not counted as errors.

COBS encoding splits the content at its zero bytes and writes each piece as *groups*. A group is a
code byte ``c`` (1..255) followed by ``c - 1`` non-zero data bytes; ``c < 255`` means "the data
bytes, then a zero", ``c == 255`` means "254 data bytes, no zero". The zero implied by the last
group of the frame is not part of the content. Pieces longer than 254 bytes take 255-groups first.
:func:`cobs_encode` emits the shortest form: when the content ends with a run of exactly a
multiple of 254 non-zero bytes, no empty ``0x01`` group follows the last 255-group. Decoders accept
that trailing ``0x01`` group too, as some encoders emit it. Examples::

    content                      encoded (without the delimiter)
    (empty)                      01
    00                           01 01
    11 22 00 33                  03 11 22 02 33
    254 non-zero bytes b         FF b
    254 non-zero bytes b, 00     FF b 01 01

Content of ``n`` bytes encodes to at most ``n + max(1, ceil(n / 254))`` bytes
(:func:`cobs_max_encoded_len`). An encoded frame is malformed (and dropped without a reply) if it
is empty, contains a zero, or its last group announces more bytes than remain.

Frame content
-------------
::

    offset  size  field
    0       1     command   request opcode (Command), or opcode | 0x80 in a reply
    1       2     seq       sequence number, chosen by the host, echoed in the reply
    3       2     length    payload length N, 0 <= N <= MAX_PAYLOAD
    5       N     payload   command-specific, see below
    5 + N   4     crc       CRC-32 of bytes 0 .. 5 + N - 1

The CRC is the IEEE 802.3 CRC-32 (reflected polynomial 0xEDB88320, initial value and final XOR
0xFFFFFFFF; what :func:`zlib.crc32` computes), sent most significant byte first.

``MAX_PAYLOAD`` is 1044 bytes: the largest ``PROCESS`` request, a 4-byte header, a 16-byte IV and
1024 bytes (64 blocks) of data. Every other payload is smaller (the largest reply is a ``PROCESS``
reply of 1025 bytes), so one buffer of ``MAX_FRAME`` = 1053 content bytes, or
``MAX_ENCODED_FRAME`` = 1058 encoded bytes, holds any frame. A device may support a smaller
maximum, reported by ``INFO``.

Commands
--------
Every reply payload starts with a one-byte :class:`Status`. A reply whose status is not ``OK``
carries nothing else: its payload is exactly one byte.

``INFO`` (0x01) -- what the device is. Request payload: empty. Reply::

    offset   size  field
    0        1     status
    1        4     magic             b"AESF"
    5        1     protocol version  PROTOCOL_VERSION (2)
    6        4     build id          identifies the bitstream (e.g. a source revision)
    10       1     name length L     0 .. 255
    11       L     core name         printable ASCII (0x20 .. 0x7E)
    11 + L   1     key sizes         bit 0: AES-128, bit 1: AES-192, bit 2: AES-256
    12 + L   1     key slots         number of key slots S, 1 .. 255 (slots 0 .. S - 1)
    13 + L   1     modes             bit 0: ECB, bit 1: CBC, bit 2: CTR
    14 + L   2     max payload       largest payload the device accepts, 36 .. MAX_PAYLOAD
    16 + L   1     window            requests a host may have unanswered at once, 1 .. 255

``LOAD_KEY`` (0x02) -- store a key in a slot. Request::

    offset  size  field
    0       1     slot
    1       1     key size code     0: AES-128, 1: AES-192, 2: AES-256 (KeySize)
    2       K     key               K = 16, 24 or 32 bytes, as given by the code

Reply: status only.

``ZEROIZE`` (0x03) -- erase a key. Request: one byte, the slot, or ``ALL_SLOTS`` (0xFF) for every
slot. Zeroizing an empty slot succeeds. Reply: status only.

``PROCESS`` (0x04) -- encrypt or decrypt one chunk of a message. Request::

    offset  size  field
    0       1     slot
    1       1     op                0: encrypt, 1: decrypt (Op)
    2       1     mode              0: ECB, 1: CBC, 2: CTR (Mode)
    3       1     flags             bit 0: FIRST, bit 1: LAST; bits 2..7 reserved, zero
    4       16    iv                only if FIRST: CBC IV or initial CTR counter block
    4 / 20  D     data              the rest of the payload

Reply: status, then on success the D processed bytes (so the reply payload is ``1 + D`` bytes).

A *message* is a sequence of chunks: the first has ``FIRST`` set, the last has ``LAST`` set (one
chunk may have both). Its slot, op and mode are fixed by the ``FIRST`` chunk and every later chunk
must repeat them. The chaining state (the CBC chaining value, the CTR counter) carries from one
chunk to the next exactly as if the whole message had been one chunk. ECB has no chaining state;
its ``FIRST`` chunk still carries the 16-byte IV field (send zeros; it is ignored) so that every
mode has the same layout. CTR uses the whole 128-bit block as a big-endian counter incremented
once per block, wrapping from 2**128 - 1 to 0 (SP 800-38A, B.1); CTR decryption is encryption.

``D`` must be a multiple of 16, except in the ``LAST`` chunk of a CTR message, which may end with a
partial block (the keystream block is truncated). ``D`` may be 0. ``D`` is at most
``max payload - 20`` (1024 for ``MAX_PAYLOAD``), whether or not the chunk carries an IV.

The device holds one message in progress. A ``FIRST`` chunk starts a new one, abandoning any
message in progress. The message ends after its ``LAST`` chunk, and also when ``LOAD_KEY`` or
``ZEROIZE`` changes the key of its slot (a message is never continued under a different key).

Status codes
------------
::

    0x00  OK                          0x07  BAD_MODE
    0x01  BAD_CRC                     0x08  BAD_KEY_SIZE
    0x02  UNKNOWN_COMMAND             0x09  BAD_OP
    0x03  BAD_LENGTH                  0x0A  BAD_FLAGS
    0x04  BAD_SLOT                    0x0B  CHAIN_NOT_STARTED
    0x05  KEY_NOT_LOADED              0x0C  CHAIN_MISMATCH
    0x06  LENGTH_NOT_MULTIPLE_OF_16   0x0D  BUSY

:func:`describe` gives each a one-line description. ``BUSY`` is reserved for gateware that
receives a request while still working on the previous one (a host that keeps to the window never
sees it); :class:`DeviceModel` is never busy.

Pipelining (the window)
-----------------------
A device answers requests in the order it receives them. ``INFO`` reports its *window* ``W``: a
host may send request ``n + W`` once it has the reply to request ``n``, so at most ``W`` requests
are unanswered at any time. A device guarantees that it loses no byte of a host that keeps to its
window, even without flow control on the line: the device's receive buffer holds ``W - 1`` whole
frames of ``MAX_ENCODED_FRAME`` bytes while it works on and answers another. With ``W >= 2`` the
line carries the next request while the device answers the previous one, which is what keeps a
serial line busy in both directions. Requests that get no reply (frames dropped as malformed, see
below) must not be pipelined: a host sends them, if at all, with nothing else unanswered.

Errors and validation order
---------------------------
A request answered with a status other than ``OK`` changes no device state. A device checks a
frame in this order and answers with the first failure:

1. Malformed COBS, an encoded frame longer than ``MAX_ENCODED_FRAME``, or content shorter than
   9 bytes (header and CRC): the frame is dropped *without a reply* (there is no trustworthy
   ``seq`` to answer to).
2. CRC mismatch: ``BAD_CRC``, replied with ``seq`` as received and opcode = received command byte
   | 0x80. The header may itself be corrupt, so a host ignores replies whose ``seq`` it is not
   waiting for, and resends on ``BAD_CRC`` or on a timeout.
3. ``length`` differs from the number of payload bytes, or exceeds ``MAX_PAYLOAD``: ``BAD_LENGTH``.
4. The command byte is not a request opcode (this includes reply opcodes): ``UNKNOWN_COMMAND``.
   (A host decoding replies accepts any opcode with bit 7 set, since this reply echoes the
   unknown opcode.)
5. The payload, field by field in byte order:

   - ``INFO``: payload not empty: ``BAD_LENGTH``.
   - ``LOAD_KEY``: shorter than 2 bytes: ``BAD_LENGTH``; slot not below the slot count:
     ``BAD_SLOT``; size code not 0..2, or the size not built in: ``BAD_KEY_SIZE``; key length
     not the size's: ``BAD_LENGTH``.
   - ``ZEROIZE``: not exactly 1 byte: ``BAD_LENGTH``; slot neither below the slot count nor
     ``ALL_SLOTS``: ``BAD_SLOT``.
   - ``PROCESS``: shorter than 4 bytes: ``BAD_LENGTH``; slot: ``BAD_SLOT``; op not 0/1:
     ``BAD_OP``; mode not 0..2, or not built in: ``BAD_MODE``; reserved flag bits set:
     ``BAD_FLAGS``; ``FIRST`` set but shorter than 20 bytes, or ``D`` too large: ``BAD_LENGTH``;
     ``D`` not a multiple of 16 where required: ``LENGTH_NOT_MULTIPLE_OF_16``.

6. Device state (``PROCESS`` only): no key in the slot: ``KEY_NOT_LOADED``; ``FIRST`` clear and
   no message in progress: ``CHAIN_NOT_STARTED``; ``FIRST`` clear and slot, op or mode differ
   from the message in progress: ``CHAIN_MISMATCH``.

Key material
------------
Keys are write-only. ``LOAD_KEY`` is the only frame that carries key bytes, and only from host to
device: no reply ever contains key material, and no reply builder here takes a key. The device
offers no way to read a key back, to learn which key a slot holds, or to export round keys;
:class:`LoadKeyRequest` leaves the key out of its ``repr`` so it does not reach logs.
"""

import enum
import struct
import zlib
from dataclasses import dataclass, field

from . import model
from .params import KeySize, Mode, Op

__all__ = [
    # constants
    "PROTOCOL_VERSION",
    "MAGIC",
    "REPLY_BIT",
    "HEADER_SIZE",
    "CRC_SIZE",
    "BLOCK_SIZE",
    "PROCESS_HEADER_SIZE",
    "MAX_PROCESS_DATA",
    "MAX_PAYLOAD",
    "MIN_MAX_PAYLOAD",
    "MAX_FRAME",
    "MAX_ENCODED_FRAME",
    "ALL_SLOTS",
    "MAX_KEY_SLOTS",
    "FLAG_FIRST",
    "FLAG_LAST",
    # enumerations
    "Command",
    "Status",
    "Op",
    "Mode",
    "KeySize",
    "describe",
    "reply_opcode",
    # errors
    "ProtocolError",
    "CobsError",
    "BadCrc",
    "UnknownCommand",
    "BadLength",
    "BadSlot",
    "KeyNotLoaded",
    "LengthNotMultipleOf16",
    "BadMode",
    "BadKeySize",
    "BadOp",
    "BadFlags",
    "ChainNotStarted",
    "ChainMismatch",
    "Busy",
    "BadReply",
    "DeviceError",
    "error_for_status",
    # framing
    "cobs_encode",
    "cobs_decode",
    "cobs_max_encoded_len",
    "FrameDecoder",
    "Frame",
    "encode_frame",
    "decode_frame",
    # payloads
    "DeviceInfo",
    "LoadKeyRequest",
    "ProcessRequest",
    "build_info_request",
    "parse_info_request",
    "build_info_reply",
    "parse_info_reply",
    "build_load_key_request",
    "parse_load_key_request",
    "build_load_key_reply",
    "parse_load_key_reply",
    "build_zeroize_request",
    "parse_zeroize_request",
    "build_zeroize_reply",
    "parse_zeroize_reply",
    "build_process_request",
    "build_process_requests",
    "parse_process_request",
    "build_process_reply",
    "parse_process_reply",
    "build_status_reply",
    "parse_status_reply",
    # device
    "DeviceModel",
    "run_mode",
]


# --------------------------------------------------------------------------------------------
# Constants
# --------------------------------------------------------------------------------------------

#: Version of this specification, reported by ``INFO``; changes whenever a layout changes.
PROTOCOL_VERSION = 2
#: First bytes of the ``INFO`` reply after the status, so a host knows it found the appliance.
MAGIC = b"AESF"
#: Set in the opcode of every reply (reply opcode = request opcode | ``REPLY_BIT``).
REPLY_BIT = 0x80

#: command (1) + seq (2) + length (2).
HEADER_SIZE = 5
#: CRC-32 after the payload.
CRC_SIZE = 4
#: AES block; also the size of the IV / initial counter block.
BLOCK_SIZE = 16
#: slot, op, mode, flags: the part of a ``PROCESS`` request before the optional IV.
PROCESS_HEADER_SIZE = 4
#: Most data bytes in one ``PROCESS`` chunk (64 blocks), with or without an IV.
MAX_PROCESS_DATA = 1024
#: Largest payload: a ``PROCESS`` request with its IV and ``MAX_PROCESS_DATA`` bytes of data.
MAX_PAYLOAD = PROCESS_HEADER_SIZE + BLOCK_SIZE + MAX_PROCESS_DATA
#: Smallest ``max payload`` a device may report: one full block in a ``FIRST`` chunk.
MIN_MAX_PAYLOAD = PROCESS_HEADER_SIZE + BLOCK_SIZE + BLOCK_SIZE
#: Largest frame content (header + payload + CRC), before COBS.
MAX_FRAME = HEADER_SIZE + MAX_PAYLOAD + CRC_SIZE

#: ``ZEROIZE`` slot number meaning every slot; hence slots are numbered 0 .. 254 at most.
ALL_SLOTS = 0xFF
#: Most key slots a device can have (``ALL_SLOTS`` is not a slot number).
MAX_KEY_SLOTS = 255

#: ``PROCESS`` flag: first chunk of a message; the IV field is present.
FLAG_FIRST = 0x01
#: ``PROCESS`` flag: last chunk of a message; CTR data may end with a partial block.
FLAG_LAST = 0x02
_FLAGS_RESERVED = 0xFF & ~(FLAG_FIRST | FLAG_LAST)

# The smallest well-formed frame content: header and CRC around an empty payload.
_MIN_FRAME = HEADER_SIZE + CRC_SIZE
_HEADER = struct.Struct(">BHH")
_CRC = struct.Struct(">I")
_INFO_FIXED = struct.Struct(">B4sBIB")   # status, magic, version, build id, name length
# key sizes, key slots, modes, max payload, window
_INFO_TAIL = struct.Struct(">BBBHB")


# --------------------------------------------------------------------------------------------
# Enumerations
# --------------------------------------------------------------------------------------------

class Command(enum.IntEnum):
    """Request opcodes; a reply's opcode is the request's with :data:`REPLY_BIT` set."""

    INFO = 0x01
    LOAD_KEY = 0x02
    ZEROIZE = 0x03
    PROCESS = 0x04


_OPCODES = frozenset(Command)


class Status(enum.IntEnum):
    """First payload byte of every reply; anything but ``OK`` is the whole reply payload."""

    OK = 0x00
    BAD_CRC = 0x01
    UNKNOWN_COMMAND = 0x02
    BAD_LENGTH = 0x03
    BAD_SLOT = 0x04
    KEY_NOT_LOADED = 0x05
    LENGTH_NOT_MULTIPLE_OF_16 = 0x06
    BAD_MODE = 0x07
    BAD_KEY_SIZE = 0x08
    BAD_OP = 0x09
    BAD_FLAGS = 0x0A
    CHAIN_NOT_STARTED = 0x0B
    CHAIN_MISMATCH = 0x0C
    BUSY = 0x0D


_DESCRIPTIONS = {
    Status.OK: "success",
    Status.BAD_CRC: "the frame's CRC-32 does not match its contents; the request was ignored",
    Status.UNKNOWN_COMMAND: "the command byte is not a request opcode",
    Status.BAD_LENGTH: "a payload or field length is wrong for the command",
    Status.BAD_SLOT: "the key slot number is not one of the device's slots",
    Status.KEY_NOT_LOADED: "the key slot holds no key (never loaded, or zeroized)",
    Status.LENGTH_NOT_MULTIPLE_OF_16:
        "the data is not whole 16-byte blocks (allowed only in the last chunk of a CTR message)",
    Status.BAD_MODE: "the mode is not ECB, CBC or CTR, or is not built into this device",
    Status.BAD_KEY_SIZE: "the key size code is not AES-128/192/256, or is not built in",
    Status.BAD_OP: "the op is neither 0 (encrypt) nor 1 (decrypt)",
    Status.BAD_FLAGS: "reserved PROCESS flag bits are set",
    Status.CHAIN_NOT_STARTED: "a continuation chunk arrived but no message is in progress",
    Status.CHAIN_MISMATCH:
        "a continuation chunk's slot, op or mode differs from the message in progress",
    Status.BUSY: "the device was busy with an earlier request; this one was ignored",
}


def describe(status):
    """Return a one-line human description of a status code.

    Parameters
    ----------
    status : Status or int
        A status byte, possibly one this version does not define.

    Returns
    -------
    str
        The description, or ``"unknown status 0xNN"`` for a value that is not a :class:`Status`.
    """
    try:
        return _DESCRIPTIONS[Status(status)]
    except ValueError:
        return f"unknown status {status:#04x}"


def reply_opcode(command):
    """Return the opcode of the reply to ``command`` (``command | REPLY_BIT``).

    Parameters
    ----------
    command : Command or int
        Request opcode.

    Returns
    -------
    int
        The reply opcode.
    """
    return _check_uint(command, "command", 8) | REPLY_BIT


# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------

class ProtocolError(ValueError):
    """Something violates the protocol.

    Subclasses exist per :class:`Status`; a device answers with the error's ``status``. It is a
    ``ValueError`` so that builders can share the checks of the parsers.

    Parameters
    ----------
    message : str
        What is wrong, naming the field, its value and the allowed range.
    command, seq : int, optional
        Opcode and sequence number of the offending frame, when they could be read; a device
        replies to an error only if ``seq`` is known.
    status : Status, optional
        Overrides the class's status (used by :class:`DeviceError`).

    Attributes
    ----------
    status : Status or None
        The status to reply with; ``None`` when there is none (:class:`CobsError`: no reply;
        :class:`BadReply`: a host's finding about a reply).
    command, seq : int or None
        As given.
    """

    status = None

    def __init__(self, message, *, command=None, seq=None, status=None):
        super().__init__(message)
        if status is not None:
            self.status = Status(status)
        self.command = command
        self.seq = seq


class CobsError(ProtocolError):
    """Malformed COBS data; the frame is dropped without a reply."""


class BadCrc(ProtocolError):
    """The frame's CRC-32 does not match."""

    status = Status.BAD_CRC


class UnknownCommand(ProtocolError):
    """The command byte is not a request opcode."""

    status = Status.UNKNOWN_COMMAND


class BadLength(ProtocolError):
    """A frame, payload or field has the wrong length."""

    status = Status.BAD_LENGTH


class BadSlot(ProtocolError):
    """The key slot number is out of range."""

    status = Status.BAD_SLOT


class KeyNotLoaded(ProtocolError):
    """``PROCESS`` names a slot that holds no key."""

    status = Status.KEY_NOT_LOADED


class LengthNotMultipleOf16(ProtocolError):
    """``PROCESS`` data is not whole blocks where it must be."""

    status = Status.LENGTH_NOT_MULTIPLE_OF_16


class BadMode(ProtocolError):
    """Unknown or unsupported mode."""

    status = Status.BAD_MODE


class BadKeySize(ProtocolError):
    """Unknown or unsupported key size code."""

    status = Status.BAD_KEY_SIZE


class BadOp(ProtocolError):
    """The op is neither encrypt nor decrypt."""

    status = Status.BAD_OP


class BadFlags(ProtocolError):
    """Reserved ``PROCESS`` flag bits are set."""

    status = Status.BAD_FLAGS


class ChainNotStarted(ProtocolError):
    """A continuation chunk without a message in progress."""

    status = Status.CHAIN_NOT_STARTED


class ChainMismatch(ProtocolError):
    """A continuation chunk that does not match the message in progress."""

    status = Status.CHAIN_MISMATCH


class Busy(ProtocolError):
    """The device was busy (gateware only)."""

    status = Status.BUSY


class BadReply(ProtocolError):
    """A reply that does not follow this protocol (found by a host; never sent by a device)."""


class DeviceError(ProtocolError):
    """The device answered with a status other than ``OK``; ``status`` is that status."""


_ERRORS = {cls.status: cls for cls in (
    BadCrc, UnknownCommand, BadLength, BadSlot, KeyNotLoaded, LengthNotMultipleOf16, BadMode,
    BadKeySize, BadOp, BadFlags, ChainNotStarted, ChainMismatch, Busy)}


def error_for_status(status):
    """Return the :class:`ProtocolError` subclass whose ``status`` is ``status``.

    Parameters
    ----------
    status : Status
        Any status but ``OK``.

    Returns
    -------
    type
        E.g. :class:`BadSlot` for ``Status.BAD_SLOT``.
    """
    status = Status(status)
    if status == Status.OK:
        raise ValueError("Status.OK is not an error")
    return _ERRORS[status]


# --------------------------------------------------------------------------------------------
# Argument checking
# --------------------------------------------------------------------------------------------

def _check_uint(value, name, bits):
    # bool is an int subclass; True as a slot number would hide a caller's bug.
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if not 0 <= value < (1 << bits):
        raise ValueError(f"{name} must be in range 0 .. {(1 << bits) - 1}, got {value}")
    return int(value)


def _check_bytes(value, name):
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise TypeError(f"{name} must be bytes, not {type(value).__name__}")
    return bytes(value)


def _check_enum(value, name, enum_cls, error):
    # Builders get the same error class as the parsers, so a host and the device describe one
    # bad field the same way.
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int or {enum_cls.__name__}, not {type(value).__name__}")
    try:
        return enum_cls(value)
    except ValueError:
        allowed = ", ".join(f"{m.value} ({m.name})" for m in enum_cls)
        raise error(f"{name} must be one of {allowed}, got {value}") from None


def _slot_range(key_slots):
    return f"0 .. {key_slots - 1}"


def _slots(info):
    return None if info is None else info.key_slots


def _check_slot(slot, key_slots, error_cls=BadSlot, allow_all=False):
    # key_slots None means "any slot number the protocol allows": the host side does not know
    # the device's slot count unless it asked with INFO.
    limit = MAX_KEY_SLOTS if key_slots is None else key_slots
    if 0 <= slot < limit or (allow_all and slot == ALL_SLOTS):
        return slot
    also = f" or {ALL_SLOTS:#04x} (all slots)" if allow_all else ""
    raise error_cls(f"slot must be in range {_slot_range(limit)}{also}, got {slot}")


# --------------------------------------------------------------------------------------------
# COBS
# --------------------------------------------------------------------------------------------

def cobs_max_encoded_len(n):
    """Return the largest COBS encoding of ``n`` content bytes, delimiter excluded.

    Parameters
    ----------
    n : int
        Content length, ``n >= 0``.

    Returns
    -------
    int
        ``n + max(1, ceil(n / 254))``: one code byte per started 254-byte run, at least one.
    """
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise ValueError(f"n must be a non-negative int, got {n!r}")
    return n + max(1, -(-n // 254))


#: Largest encoded frame (without its delimiter); the size of a receiver's frame buffer.
MAX_ENCODED_FRAME = cobs_max_encoded_len(MAX_FRAME)


def cobs_encode(data):
    """Encode bytes with COBS so that the result contains no zero byte.

    Parameters
    ----------
    data : bytes
        Any content, including empty or all zeros.

    Returns
    -------
    bytes
        The shortest encoding (see the module docstring); no delimiter is appended.
    """
    data = _check_bytes(data, "data")
    out = bytearray()
    pieces = data.split(b"\x00")
    last = len(pieces) - 1
    for i, piece in enumerate(pieces):
        pos = 0
        while len(piece) - pos >= 254:
            out.append(0xFF)
            out += piece[pos:pos + 254]
            pos += 254
        tail = piece[pos:]
        # Every piece but the last is followed by a zero, which only a code below 255 can
        # express. The last piece needs a closing group only if it has bytes left over, or is
        # empty altogether (an empty frame still encodes to one group).
        if i != last or tail or pos == 0:
            out.append(len(tail) + 1)
            out += tail
    return bytes(out)


def cobs_decode(data):
    """Decode one COBS-encoded frame (without its delimiter).

    Parameters
    ----------
    data : bytes
        The encoded frame.

    Returns
    -------
    bytes
        The content.

    Raises
    ------
    CobsError
        If ``data`` is empty, contains a zero byte, or its last group is truncated.
    """
    data = _check_bytes(data, "data")
    if not data:
        raise CobsError("COBS data is empty; even an empty frame encodes to one byte (0x01)")
    out = bytearray()
    i, n = 0, len(data)
    while i < n:
        code = data[i]
        if code == 0:
            raise CobsError(f"COBS data contains a zero byte at offset {i}")
        end = i + code
        if end > n:
            raise CobsError(f"COBS group at offset {i} announces {code - 1} data bytes, "
                            f"only {n - i - 1} remain")
        group = data[i + 1:end]
        zero = group.find(0)
        if zero >= 0:
            raise CobsError(f"COBS data contains a zero byte at offset {i + 1 + zero}")
        out += group
        i = end
        # A 255-group has no implied zero; neither has the frame's last group.
        if code != 0xFF and i < n:
            out.append(0)
    return bytes(out)


class FrameDecoder:
    """Split a received byte stream into frames and COBS-decode them.

    Never raises on what it receives: malformed and oversized frames are dropped and counted, and
    decoding resumes after the next delimiter, as a receiver on a noisy line must.

    Parameters
    ----------
    max_frame : int, optional
        Longest encoded frame accepted, delimiter excluded (default :data:`MAX_ENCODED_FRAME`).
        Bytes beyond it are not stored; the frame is discarded when its delimiter arrives.

    Attributes
    ----------
    discarded : int
        Frames dropped so far because they were malformed COBS or longer than ``max_frame``.
        Empty frames (consecutive delimiters) are not counted.
    """

    def __init__(self, max_frame=MAX_ENCODED_FRAME):
        if not isinstance(max_frame, int) or isinstance(max_frame, bool) or max_frame < 1:
            raise ValueError(f"max_frame must be an int >= 1, got {max_frame!r}")
        self.max_frame = max_frame
        self.discarded = 0
        self._buf = bytearray()
        self._overflow = False

    @property
    def pending(self):
        """Bytes of an unfinished frame held (0 after an overflow, which stores nothing)."""
        return len(self._buf)

    def reset(self):
        """Forget an unfinished frame without counting it (e.g. after reopening the port)."""
        self._buf.clear()
        self._overflow = False

    def feed(self, chunk):
        """Take received bytes; return the contents of the frames they complete.

        Parameters
        ----------
        chunk : bytes
            Any number of bytes, split anywhere (frames may span calls).

        Returns
        -------
        list of bytes
            Decoded contents of the frames completed by ``chunk``, in order. They are not yet
            checked: pass each to :func:`decode_frame`.
        """
        chunk = _check_bytes(chunk, "chunk")
        frames = []
        start = 0
        while True:
            end = chunk.find(0, start)
            if end < 0:
                self._store(chunk[start:])
                return frames
            self._store(chunk[start:end])
            self._finish(frames)
            start = end + 1

    def _store(self, part):
        if self._overflow:
            return
        if len(self._buf) + len(part) > self.max_frame:
            # Like a hardware buffer, keep nothing more; the frame is lost anyway.
            self._overflow = True
            self._buf.clear()
        else:
            self._buf += part

    def _finish(self, frames):
        if self._overflow:
            self.discarded += 1
        elif self._buf:
            try:
                frames.append(cobs_decode(self._buf))
            except CobsError:
                self.discarded += 1
        self.reset()


# --------------------------------------------------------------------------------------------
# Frames
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Frame:
    """A decoded, CRC-checked frame.

    Attributes
    ----------
    command : int
        The opcode byte: a :class:`Command` in a request, ``Command | REPLY_BIT`` in a reply.
    seq : int
        Sequence number, 0 .. 65535.
    payload : bytes
        The payload.
    """

    command: int
    seq: int
    payload: bytes

    @property
    def is_reply(self):
        """Whether the opcode has :data:`REPLY_BIT` set."""
        return bool(self.command & REPLY_BIT)

    @property
    def request(self):
        """The :class:`Command` this frame is or answers; ``None`` for a reply to an unknown
        opcode."""
        opcode = self.command & ~REPLY_BIT
        return Command(opcode) if opcode in _OPCODES else None


def _crc(data):
    # zlib.crc32 is the IEEE 802.3 CRC-32 the gateware implements; masking keeps the value
    # unsigned on every Python version.
    return zlib.crc32(data) & 0xFFFFFFFF


def encode_frame(command, seq, payload=b""):
    """Build a frame ready for the wire: COBS-encoded content and the 0x00 delimiter.

    Parameters
    ----------
    command : Command or int
        Opcode byte; any value 0 .. 255 so that replies and deliberately bad frames can be built.
    seq : int
        Sequence number, 0 .. 65535.
    payload : bytes, optional
        At most :data:`MAX_PAYLOAD` bytes.

    Returns
    -------
    bytes
        The encoded frame, ending with its single zero byte.
    """
    command = _check_uint(command, "command", 8)
    seq = _check_uint(seq, "seq", 16)
    payload = _check_bytes(payload, "payload")
    if len(payload) > MAX_PAYLOAD:
        raise BadLength(f"payload length must be in range 0 .. {MAX_PAYLOAD}, "
                        f"got {len(payload)}")
    content = _HEADER.pack(command, seq, len(payload)) + payload
    return cobs_encode(content + _CRC.pack(_crc(content))) + b"\x00"


def decode_frame(raw):
    """Check and split the content of one frame (as :meth:`FrameDecoder.feed` returns it).

    Parameters
    ----------
    raw : bytes
        Frame content: header, payload, CRC.

    Returns
    -------
    Frame
        The frame; its opcode is a :class:`Command` or any reply opcode (bit 7 set).

    Raises
    ------
    BadLength
        If ``raw`` is shorter than header and CRC (``seq`` unknown: no reply), or the length
        field disagrees with the payload or exceeds :data:`MAX_PAYLOAD`.
    BadCrc
        If the CRC does not match; ``command`` and ``seq`` are as received, unverified.
    UnknownCommand
        If bit 7 of the opcode is clear and it is not a :class:`Command`.
    """
    raw = _check_bytes(raw, "raw")
    if len(raw) < _MIN_FRAME:
        raise BadLength(f"frame length must be at least {_MIN_FRAME} bytes (header and CRC), "
                        f"got {len(raw)}")
    command, seq, length = _HEADER.unpack_from(raw)
    body, (crc,) = raw[:-CRC_SIZE], _CRC.unpack_from(raw, len(raw) - CRC_SIZE)
    where = {"command": command, "seq": seq}
    if _crc(body) != crc:
        raise BadCrc(f"frame CRC-32 is {crc:#010x}, its contents give {_crc(body):#010x}",
                     **where)
    actual = len(body) - HEADER_SIZE
    if length != actual:
        raise BadLength(f"length field says {length} payload bytes, the frame has {actual}",
                        **where)
    if length > MAX_PAYLOAD:
        raise BadLength(f"length must be in range 0 .. {MAX_PAYLOAD}, got {length}", **where)
    # Any reply opcode passes: the reply to an unknown request echoes that request's opcode
    # with REPLY_BIT set, and a host must still be able to read it.
    if not command & REPLY_BIT and command not in _OPCODES:
        known = ", ".join(f"{c.value:#04x} ({c.name})" for c in Command)
        raise UnknownCommand(f"command must be one of {known} (or have bit 7 set in a reply), "
                             f"got {command:#04x}", **where)
    return Frame(command, seq, body[HEADER_SIZE:])


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
    return bytes([_check_enum(status, "status", Status, ValueError)])


def _reply_status(payload, what):
    """Split a reply payload into its OK status and the rest; raise for anything else."""
    payload = _check_bytes(payload, "payload")
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
    rest = _reply_status(payload, "status")
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
        Supported modes, ascending.
    max_payload : int
        Largest payload accepted, :data:`MIN_MAX_PAYLOAD` .. :data:`MAX_PAYLOAD`.
    window : int
        Requests a host may have unanswered at once, 1 .. 255 (see *Pipelining*).
    protocol_version : int
        :data:`PROTOCOL_VERSION`.
    """

    core_name: str = "reference-model"
    build_id: int = 0
    key_sizes: tuple = model.KEY_SIZES
    key_slots: int = 4
    modes: tuple = tuple(Mode)
    max_payload: int = MAX_PAYLOAD
    window: int = 1
    protocol_version: int = PROTOCOL_VERSION

    def __post_init__(self):
        # Validate once here so that both the builder and the parser produce only valid infos.
        if not isinstance(self.core_name, str):
            raise TypeError(f"core_name must be a str, not {type(self.core_name).__name__}")
        bad = [c for c in self.core_name if not " " <= c <= "~"]
        if bad or len(self.core_name) > 255:
            raise ValueError(f"core_name must be 0 .. 255 printable ASCII characters, got "
                             f"{self.core_name!r}")
        _check_uint(self.build_id, "build_id", 32)
        sizes = tuple(sorted({KeySize.from_bits(b).bits for b in self.key_sizes}))
        if not sizes:
            raise BadKeySize("key_sizes must name at least one of 128, 192, 256, got none")
        object.__setattr__(self, "key_sizes", sizes)
        _check_uint(self.key_slots, "key_slots", 8)
        if not 1 <= self.key_slots <= MAX_KEY_SLOTS:
            raise BadSlot(f"key_slots must be in range 1 .. {MAX_KEY_SLOTS}, got {self.key_slots}")
        modes = tuple(sorted({_check_enum(m, "mode", Mode, BadMode) for m in self.modes}))
        if not modes:
            raise BadMode("modes must name at least one of ECB, CBC, CTR, got none")
        object.__setattr__(self, "modes", modes)
        _check_uint(self.max_payload, "max_payload", 16)
        if not MIN_MAX_PAYLOAD <= self.max_payload <= MAX_PAYLOAD:
            raise BadLength(f"max_payload must be in range {MIN_MAX_PAYLOAD} .. {MAX_PAYLOAD}, "
                            f"got {self.max_payload}")
        if isinstance(self.window, bool) or not isinstance(self.window, int):
            raise TypeError(f"window must be an int, not {type(self.window).__name__}")
        if not 1 <= self.window <= 255:
            raise ValueError(f"window must be in range 1 .. 255, got {self.window}")
        _check_uint(self.protocol_version, "protocol_version", 8)

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
    payload = _check_bytes(payload, "payload")
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
                                     info.window))


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
    payload = _check_bytes(payload, "payload")
    _reply_status(payload, "INFO")
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
    key_mask, key_slots, mode_mask, max_payload, window = _INFO_TAIL.unpack_from(
        payload, _INFO_FIXED.size + name_len)
    key_sizes = tuple(s.bits for s in _bits_to_members(key_mask, KeySize, "key sizes"))
    modes = tuple(_bits_to_members(mode_mask, Mode, "modes"))
    try:
        # Undecodable bytes become U+FFFD, which DeviceInfo refuses naming the field.
        name = name.decode("ascii", "replace")
        return DeviceInfo(core_name=name, build_id=build_id, key_sizes=key_sizes,
                          key_slots=key_slots, modes=modes, max_payload=max_payload,
                          window=window, protocol_version=version)
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
    slot = _check_slot(_check_uint(slot, "slot", 8), None)
    key = _check_bytes(key, "key")
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
    payload = _check_bytes(payload, "payload")
    if len(payload) < 2:
        raise BadLength(f"LOAD_KEY request payload length must be at least 2, got {len(payload)}")
    slot = _check_slot(payload[0], _slots(info))
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
    return bytes([_check_slot(_check_uint(slot, "slot", 8), None, allow_all=True)])


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
    payload = _check_bytes(payload, "payload")
    if len(payload) != 1:
        raise BadLength(f"ZEROIZE request payload length must be 1, got {len(payload)}")
    return _check_slot(payload[0], _slots(info), allow_all=True)


def build_zeroize_reply(status=Status.OK):
    """Build a ``ZEROIZE`` reply payload: only a status."""
    return build_status_reply(status)


def parse_zeroize_reply(payload):
    """Check a ``ZEROIZE`` reply payload; ``DeviceError`` unless it is ``OK``."""
    return parse_status_reply(payload)


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
        ECB, CBC or CTR.
    first, last : bool
        The ``FIRST`` and ``LAST`` flags.
    iv : bytes or None
        16 bytes if ``first``, else ``None``.
    data : bytes
        The chunk's data.
    """

    slot: int
    op: Op
    mode: Mode
    first: bool
    last: bool
    iv: bytes | None
    data: bytes


def _check_data_length(length, mode, last, limit):
    if length > limit:
        raise BadLength(f"PROCESS data length must be in range 0 .. {limit}, got {length}")
    if length % BLOCK_SIZE and not (mode == Mode.CTR and last):
        raise LengthNotMultipleOf16(
            f"PROCESS data length must be a multiple of {BLOCK_SIZE} (only the LAST chunk of a "
            f"CTR message may end with a partial block), got {length} in a "
            f"{'LAST' if last else 'non-LAST'} {mode.name} chunk")


def build_process_request(slot, op, mode, data, *, first, last, iv=None):
    """Build one ``PROCESS`` request payload (one chunk of a message).

    Parameters
    ----------
    slot : int
        Key slot, 0 .. 254.
    op : Op or int
        Encrypt or decrypt.
    mode : Mode or int
        ECB, CBC or CTR.
    data : bytes
        At most :data:`MAX_PROCESS_DATA` bytes; whole blocks unless this is the ``LAST`` chunk of
        a CTR message.
    first, last : bool
        The ``FIRST`` and ``LAST`` flags.
    iv : bytes, optional
        16 bytes, required with ``first`` for CBC and CTR; ECB sends zeros when omitted. Must be
        omitted without ``first``.

    Returns
    -------
    bytes
        The request payload.
    """
    slot = _check_slot(_check_uint(slot, "slot", 8), None)
    op = _check_enum(op, "op", Op, BadOp)
    mode = _check_enum(mode, "mode", Mode, BadMode)
    data = _check_bytes(data, "data")
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
        iv = _check_bytes(iv, "iv")
        if len(iv) != BLOCK_SIZE:
            raise BadLength(f"iv length must be {BLOCK_SIZE} bytes, got {len(iv)}")
    _check_data_length(len(data), mode, last, MAX_PROCESS_DATA)
    flags = (FLAG_FIRST if first else 0) | (FLAG_LAST if last else 0)
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
    data = _check_bytes(data, "data")
    _check_uint(chunk_size, "chunk_size", 16)
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
    BadLength, BadSlot, BadOp, BadMode, BadFlags, LengthNotMultipleOf16
        In the order of the module docstring.
    """
    payload = _check_bytes(payload, "payload")
    if len(payload) < PROCESS_HEADER_SIZE:
        raise BadLength(f"PROCESS request payload length must be at least {PROCESS_HEADER_SIZE}, "
                        f"got {len(payload)}")
    slot = _check_slot(payload[0], _slots(info))
    op = _check_enum(payload[1], "op", Op, BadOp)
    mode = _check_enum(payload[2], "mode", Mode, BadMode)
    if info is not None and mode not in info.modes:
        built = ", ".join(f"{m.value} ({m.name})" for m in info.modes)
        raise BadMode(f"mode must be one this device supports: {built}, got {mode.value} "
                      f"({mode.name})")
    flags = payload[3]
    if flags & _FLAGS_RESERVED:
        raise BadFlags(f"PROCESS flags must have bits 2..7 clear (allowed bits: "
                       f"{FLAG_FIRST:#04x} FIRST, {FLAG_LAST:#04x} LAST), got {flags:#04x}")
    first, last = bool(flags & FLAG_FIRST), bool(flags & FLAG_LAST)
    offset = PROCESS_HEADER_SIZE
    iv = None
    if first:
        offset += BLOCK_SIZE
        if len(payload) < offset:
            raise BadLength(f"PROCESS request payload length must be at least {offset} with "
                            f"FIRST (16-byte iv), got {len(payload)}")
        iv = payload[PROCESS_HEADER_SIZE:offset]
    data = payload[offset:]
    limit = MAX_PROCESS_DATA if info is None else info.max_process_data
    _check_data_length(len(data), mode, last, limit)
    return ProcessRequest(slot, op, mode, first, last, iv, data)


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
    data = _check_bytes(data, "data")
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
    data = _reply_status(payload, "PROCESS")
    if expected_length is not None and len(data) != expected_length:
        raise BadLength(f"PROCESS reply data length must be {expected_length} (the request's), "
                        f"got {len(data)}")
    return data


# --------------------------------------------------------------------------------------------
# Reference device
# --------------------------------------------------------------------------------------------

def _xor(a, b):
    return bytes(x ^ y for x, y in zip(a, b, strict=False))


def run_mode(key, op, mode, chain, data):
    """Process whole or (CTR) partial blocks with the pure-Python model (what
    :class:`DeviceModel` computes); return the output and the next chaining value.

    ``chain`` is the CBC chaining value or the CTR counter block, 16 bytes; ECB ignores it.
    """
    out = bytearray()
    for pos in range(0, len(data), BLOCK_SIZE):
        block = data[pos:pos + BLOCK_SIZE]
        if mode == Mode.ECB:
            cipher = model.encrypt_block if op == Op.ENCRYPT else model.decrypt_block
            out += cipher(key, block)
        elif mode == Mode.CBC and op == Op.ENCRYPT:
            chain = model.encrypt_block(key, _xor(block, chain))
            out += chain
        elif mode == Mode.CBC:
            out += _xor(model.decrypt_block(key, block), chain)
            chain = block
        else:
            # CTR: the op does not matter, decryption XORs the same keystream. zip() truncates
            # the keystream block to a partial last data block.
            out += _xor(block, model.encrypt_block(key, chain))
            chain = ((int.from_bytes(chain, "big") + 1) % (1 << 128)).to_bytes(BLOCK_SIZE, "big")
    return bytes(out), chain


@dataclass
class _Message:
    slot: int
    op: Op
    mode: Mode
    chain: bytes


class DeviceModel:
    """Reference implementation of the device side: the golden model for the gateware.

    Holds key slots and the message in progress, and answers requests exactly as this module's
    specification says, errors included, using :mod:`aes_fpga.model` for the cipher. Keys cannot
    be read back (see "Key material" in the module docstring); :meth:`key_loaded` says only
    whether a slot holds one.

    Parameters
    ----------
    info : DeviceInfo, optional
        Capabilities to report and enforce (slot count, key sizes, modes, max payload); the
        default is 4 slots, every key size and mode, :data:`MAX_PAYLOAD`.
    """

    def __init__(self, info=None):
        if info is None:
            info = DeviceInfo()
        if not isinstance(info, DeviceInfo):
            raise TypeError(f"info must be a DeviceInfo, not {type(info).__name__}")
        self.info = info
        self._keys = [None] * info.key_slots
        self._message = None
        self._decoder = FrameDecoder()

    @property
    def discarded(self):
        """Frames :meth:`feed` dropped without a reply (malformed COBS or oversized)."""
        return self._decoder.discarded

    def key_loaded(self, slot):
        """Whether ``slot`` holds a key (the only thing the model tells about its keys)."""
        _check_slot(_check_uint(slot, "slot", 8), self.info.key_slots, ValueError)
        return self._keys[slot] is not None

    @property
    def message_in_progress(self):
        """Whether a ``PROCESS`` message has started and not yet ended."""
        return self._message is not None

    def feed(self, data):
        """Receive bytes from the serial line; return the bytes to send back.

        Parameters
        ----------
        data : bytes
            Any part of the byte stream; frames may span calls.

        Returns
        -------
        bytes
            The encoded replies to the frames completed by ``data``, concatenated.
        """
        return b"".join(self.respond(raw) for raw in self._decoder.feed(data))

    def handle(self, frame):
        """Answer one frame given in wire form (as :func:`encode_frame` returns it).

        Parameters
        ----------
        frame : bytes
            One COBS-encoded frame, with or without its trailing delimiter.

        Returns
        -------
        bytes
            The encoded reply, or ``b""`` if the frame gets none (malformed COBS, too short).
        """
        frame = _check_bytes(frame, "frame")
        body = frame[:-1] if frame.endswith(b"\x00") else frame
        if 0 in body:
            raise ValueError("frame must be a single encoded frame; use feed() for a stream")
        try:
            raw = cobs_decode(body)
        except CobsError:
            return b""
        return self.respond(raw)

    def respond(self, raw):
        """Answer one frame given as its decoded content (as :class:`FrameDecoder` yields it).

        Parameters
        ----------
        raw : bytes
            Frame content: header, payload, CRC.

        Returns
        -------
        bytes
            The encoded reply, or ``b""`` if the frame gets none.
        """
        try:
            frame = decode_frame(raw)
        except ProtocolError as e:
            if e.seq is None:
                return b""
            # Echo the header as received: for BAD_CRC it is unverified, see the specification.
            return encode_frame(reply_opcode(e.command), e.seq, build_status_reply(e.status))
        try:
            if frame.is_reply:
                raise UnknownCommand(f"command {frame.command:#04x} is a reply opcode; a device "
                                     f"accepts only requests")
            payload = self._execute(frame.request, frame.payload)
        except ProtocolError as e:
            payload = build_status_reply(e.status)
        return encode_frame(reply_opcode(frame.command), frame.seq, payload)

    def _execute(self, command, payload):
        """Run a request; return the reply payload or raise the error to answer with."""
        if command == Command.INFO:
            parse_info_request(payload)
            return build_info_reply(self.info)
        if command == Command.LOAD_KEY:
            req = parse_load_key_request(payload, self.info)
            self._end_message({req.slot})
            self._keys[req.slot] = req.key
            return build_load_key_reply()
        if command == Command.ZEROIZE:
            slot = parse_zeroize_request(payload, self.info)
            slots = set(range(self.info.key_slots)) if slot == ALL_SLOTS else {slot}
            self._end_message(slots)
            for s in slots:
                self._keys[s] = None
            return build_zeroize_reply()
        return build_process_reply(self._process(parse_process_request(payload, self.info)))

    def _end_message(self, slots):
        if self._message is not None and self._message.slot in slots:
            self._message = None

    def _process(self, req):
        key = self._keys[req.slot]
        if key is None:
            raise KeyNotLoaded(f"slot {req.slot} holds no key; LOAD_KEY it first")
        if req.first:
            chain = req.iv
        else:
            msg = self._message
            if msg is None:
                raise ChainNotStarted("PROCESS chunk without FIRST, but no message is in "
                                      "progress; send a FIRST chunk")
            now, then = (req.slot, req.op, req.mode), (msg.slot, msg.op, msg.mode)
            if now != then:
                raise ChainMismatch(
                    f"PROCESS chunk has slot/op/mode {req.slot}/{req.op.name}/{req.mode.name}, "
                    f"the message in progress {msg.slot}/{msg.op.name}/{msg.mode.name}")
            chain = msg.chain
        out, chain = run_mode(key, req.op, req.mode, chain, req.data)
        # State changes only now, after every check passed: an error leaves it untouched.
        self._message = None if req.last else _Message(req.slot, req.op, req.mode, chain)
        return out

