"""Frames: CRC-checked content (header, payload, CRC) and the decoder that cuts a received
byte stream into frames (see "Frame content" in :mod:`aes_fpga.appliance.spec`)."""

import struct
import zlib
from dataclasses import dataclass

from .cobs import cobs_decode, cobs_encode, cobs_max_encoded_len
from .errors import BadCrc, BadLength, CobsError, UnknownCommand
from .spec import (
    CRC_SIZE,
    HEADER,
    HEADER_SIZE,
    MAX_FRAME,
    MAX_PAYLOAD,
    REPLY_BIT,
    SERIAL_MAX_PAYLOAD,
    Command,
    check_bytes,
    check_uint,
    frame_size,
)

__all__ = [
    "MAX_ENCODED_FRAME",
    "SERIAL_MAX_ENCODED_FRAME",
    "max_encoded_frame",
    "serial_frame_limit",
    "FrameDecoder",
    "Frame",
    "frame_content",
    "encode_frame",
    "decode_frame",
    "split_through",
]

# The smallest well-formed frame content: header and CRC around an empty payload.
_MIN_FRAME = HEADER_SIZE + CRC_SIZE
_CRC = struct.Struct(">I")
_OPCODES = frozenset(Command)


def split_through(buffer, delimiter=b"\0"):
    """``(head, rest)``: the bytes of ``buffer`` up to and including the first ``delimiter``
    (all of them when there is none), as ``bytes``, and what follows them."""
    end = buffer.find(delimiter)
    end = end + len(delimiter) if end >= 0 else len(buffer)
    return bytes(buffer[:end]), buffer[end:]


def max_encoded_frame(max_payload):
    """The longest COBS-encoded frame (delimiter excluded) of a device whose ``max payload``
    is ``max_payload``: what one receive buffer of it must hold."""
    return cobs_max_encoded_len(frame_size(max_payload))


#: Longest COBS-encoded frame of the protocol (delimiter excluded), for ``MAX_PAYLOAD``.
MAX_ENCODED_FRAME = cobs_max_encoded_len(MAX_FRAME)
#: Longest COBS-encoded frame of the serial appliance (``SERIAL_MAX_PAYLOAD``).
SERIAL_MAX_ENCODED_FRAME = max_encoded_frame(SERIAL_MAX_PAYLOAD)


def serial_frame_limit(max_payload):
    """The longest encoded frame a serial device whose max payload is ``max_payload`` takes:
    :data:`SERIAL_MAX_ENCODED_FRAME`, or its own largest frame when that is longer."""
    return max(SERIAL_MAX_ENCODED_FRAME, max_encoded_frame(max_payload))


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
        chunk = check_bytes(chunk, "chunk")
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


def frame_content(command, seq, payload=b"", *, crc=True):
    """Build a frame's content (header, payload and, with ``crc``, the CRC) without COBS.
    Without the CRC it is what one UDP datagram carries (spec "Transport over UDP"). Other
    arguments as :func:`encode_frame`'s."""
    command = check_uint(command, "command", 8)
    seq = check_uint(seq, "seq", 16)
    payload = check_bytes(payload, "payload")
    if len(payload) > MAX_PAYLOAD:
        raise BadLength(f"payload length must be in range 0 .. {MAX_PAYLOAD}, "
                        f"got {len(payload)}")
    content = HEADER.pack(command, seq, len(payload)) + payload
    return content + _CRC.pack(_crc(content)) if crc else content


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
    return cobs_encode(frame_content(command, seq, payload)) + b"\x00"


def decode_frame(raw, *, crc=True, max_payload=MAX_PAYLOAD, opcodes=frozenset()):
    """Check and split the content of one frame (as :meth:`FrameDecoder.feed` returns it).

    Parameters
    ----------
    raw : bytes
        Frame content: header, payload, CRC.
    crc : bool, optional
        ``False`` for content without the CRC (a UDP datagram, spec "Transport over UDP").
    max_payload : int, optional
        The largest payload accepted (a device's max payload; default :data:`MAX_PAYLOAD`).
    opcodes : set of int, optional
        Request opcodes accepted besides :class:`Command` (a device with a secret takes the
        session opcodes of :mod:`.session_spec`).

    Returns
    -------
    Frame
        The frame; its opcode is a :class:`Command` or any reply opcode (bit 7 set).

    Raises
    ------
    BadLength
        If ``raw`` is shorter than header and CRC (or than the header, without ``crc``: ``seq``
        unknown, no reply), or the length field disagrees with the payload or exceeds
        ``max_payload``.
    BadCrc
        If the CRC does not match; ``command`` and ``seq`` are as received, unverified.
    UnknownCommand
        If bit 7 of the opcode is clear and it is not a :class:`Command`.
    """
    raw = check_bytes(raw, "raw")
    least, what = (_MIN_FRAME, "header and CRC") if crc else (HEADER_SIZE, "the header")
    if len(raw) < least:
        raise BadLength(f"frame length must be at least {least} bytes ({what}), "
                        f"got {len(raw)}")
    command, seq, length = HEADER.unpack(raw)
    where = {"command": command, "seq": seq}
    body = raw
    if crc:
        body, (sent,) = raw[:-CRC_SIZE], _CRC.unpack_from(raw, len(raw) - CRC_SIZE)
        if _crc(body) != sent:
            raise BadCrc(f"frame CRC-32 is {sent:#010x}, its contents give "
                         f"{_crc(body):#010x}", **where)
    actual = len(body) - HEADER_SIZE
    if length != actual:
        raise BadLength(f"length field says {length} payload bytes, the frame has {actual}",
                        **where)
    if length > max_payload:
        raise BadLength(f"length must be in range 0 .. {max_payload}, got {length}", **where)
    # Any reply opcode passes: the reply to an unknown request echoes that request's opcode
    # with REPLY_BIT set, and a host must still be able to read it.
    if not command & REPLY_BIT and command not in _OPCODES and command not in opcodes:
        known = ", ".join(f"{c.value:#04x} ({c.name})" for c in Command)
        raise UnknownCommand(f"command must be one of {known} (or have bit 7 set in a reply), "
                             f"got {command:#04x}", **where)
    return Frame(command, seq, body[HEADER_SIZE:])
