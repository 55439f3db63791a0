"""The reference device: the protocol's golden model, in pure Python."""

from dataclasses import dataclass

from .. import model
from ..params import Mode, Op
from .cobs import cobs_decode
from .errors import (
    ChainMismatch,
    ChainNotStarted,
    CobsError,
    KeyNotLoaded,
    ProtocolError,
    UnknownCommand,
    check_slot,
)
from .frame import FrameDecoder, decode_frame, encode_frame, frame_content, serial_frame_limit
from .messages import (
    DeviceInfo,
    build_info_reply,
    build_load_key_reply,
    build_process_reply,
    build_stats_reply,
    build_status_reply,
    build_zeroize_reply,
    parse_info_request,
    parse_load_key_request,
    parse_process_request,
    parse_stats_request,
    parse_zeroize_request,
)
from .spec import (
    ALL_SLOTS,
    BLOCK_SIZE,
    Command,
    check_bytes,
    check_uint,
    frame_size,
    reply_opcode,
)

__all__ = [
    "run_mode",
    "DeviceModel",
]


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
        self._decoder = FrameDecoder(serial_frame_limit(info.max_payload))
        #: What ``STATS`` reports (a transport's drop counters; none by default).
        self.counters = []

    @property
    def discarded(self):
        """Frames :meth:`feed` dropped without a reply (malformed COBS or oversized)."""
        return self._decoder.discarded

    def key_loaded(self, slot):
        """Whether ``slot`` holds a key (the only thing the model tells about its keys)."""
        check_slot(check_uint(slot, "slot", 8), self.info.key_slots, ValueError)
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
        frame = check_bytes(frame, "frame")
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
        reply = self._answer(raw, crc=True)
        return b"" if reply is None else encode_frame(*reply)

    def datagram(self, raw):
        """Answer one UDP datagram (spec "Transport over UDP": header and payload, no CRC).

        Returns
        -------
        bytes
            The reply datagram, or ``b""`` if the datagram gets none (shorter than the header,
            longer than the header and the max payload).
        """
        raw = check_bytes(raw, "raw")
        if len(raw) > frame_size(self.info.max_payload, crc=False):
            return b""
        reply = self._answer(raw, crc=False)
        return b"" if reply is None else frame_content(*reply, crc=False)

    def _answer(self, raw, *, crc):
        """``(reply opcode, seq, reply payload)`` for the frame content ``raw``, or ``None``."""
        try:
            frame = decode_frame(raw, crc=crc, max_payload=self.info.max_payload)
        except ProtocolError as e:
            if e.seq is None:
                return None
            # Echo the header as received: for BAD_CRC it is unverified, see the specification.
            return reply_opcode(e.command), e.seq, build_status_reply(e.status)
        try:
            if frame.is_reply:
                raise UnknownCommand(f"command {frame.command:#04x} is a reply opcode; a device "
                                     f"accepts only requests")
            payload = self._execute(frame.request, frame.payload)
        except ProtocolError as e:
            payload = build_status_reply(e.status)
        return reply_opcode(frame.command), frame.seq, payload

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
        if command == Command.STATS:
            parse_stats_request(payload)
            return build_stats_reply(self.counters)
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
