"""The reference device: the protocol's golden model, in pure Python."""

import dataclasses
import os
from collections import OrderedDict
from dataclasses import dataclass, field

from .. import gcm_model, model
from ..params import Mode, Op
from .cobs import cobs_decode
from .errors import (
    BadChunkOrder,
    ChainMismatch,
    ChainNotStarted,
    CobsError,
    EntropyUnavailable,
    KeyNotLoaded,
    OutOfOrder,
    ProtocolError,
    TooLong,
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
from .random_words import (
    SAMPLES_PER_BLOCK,
    SourceModel,
    build_random_reply,
    parse_random_request,
)
from .session_spec import CHALLENGE_BYTES, MAX_RECORDS, SESSIONS_HELD
from .sessions import SessionGate
from .spec import (
    ALL_SLOTS,
    BLOCK_SIZE,
    ENTROPY_COUNTERS,
    GCM_MAX_AAD_BYTES,
    GCM_MAX_DATA_BYTES,
    Command,
    EntropyStatus,
    Status,
    check_bytes,
    check_gcm_window,
    check_uint,
    frame_size,
    reply_opcode,
)

__all__ = [
    "run_mode",
    "GcmState",
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


class GcmState:
    """The state of one GCM message inside the device (SP 800-38D): the counter, the GHASH
    accumulator, the byte counts, and which kinds of chunk may still come.

    H and E_K(J0) are held, never shown: ``repr`` gives the counts only. Every method is called
    only after every check of the chunk has passed, so a refusal changes nothing.

    Parameters
    ----------
    key : bytes
        The slot's key.
    pre_counter : bytes
        J0, the ``FIRST`` chunk's IV field.
    seq : int
        The ``FIRST`` chunk's sequence number.
    """

    def __init__(self, key, pre_counter, seq):
        self._key = key
        self._h = gcm_model.hash_key(key)
        self._counter = int.from_bytes(pre_counter, "big")
        self._mask = model.encrypt_block(key, self._counter)     # E_K(J0), the tag's mask
        self._y = 0
        self.aad_bytes = self.data_bytes = 0
        #: A short AAD chunk, any data chunk, a short data chunk came: what may not follow.
        self.aad_short = self.data_seen = self.data_short = False
        self.next_seq = (seq + 1) & 0xFFFF

    def __repr__(self):
        return (f"GcmState(aad_bytes={self.aad_bytes}, data_bytes={self.data_bytes}, "
                f"next_seq={self.next_seq})")

    def refusal(self, aad, length, max_aad, max_data):
        """The error a chunk of ``length`` bytes (AAD or data) would be refused with, or
        ``None``: ``BAD_CHUNK_ORDER``, then ``TOO_LONG``."""
        if aad and (self.data_seen or self.aad_short):
            return BadChunkOrder("GCM AAD chunk after " + (
                "a data chunk" if self.data_seen else "a short AAD chunk"))
        if not aad and self.data_short:
            return BadChunkOrder("GCM data chunk after a short data chunk")
        if aad and self.aad_bytes + length > max_aad:
            return TooLong(f"GCM AAD would pass {max_aad} bytes")
        if not aad and self.data_bytes + length > max_data:
            return TooLong(f"GCM data would pass {max_data} bytes")
        return None

    def _ghash(self, data):
        padded = data + bytes(-len(data) % BLOCK_SIZE)
        self._y = gcm_model.ghash_blocks(self._h, (
            int.from_bytes(padded[i:i + BLOCK_SIZE], "big")
            for i in range(0, len(padded), BLOCK_SIZE)), self._y)

    def add_aad(self, data):
        """Take an AAD chunk."""
        self._ghash(data)
        self.aad_bytes += len(data)
        self.aad_short = len(data) % BLOCK_SIZE != 0

    def crypt(self, op, data):
        """Take a data chunk; return its output (ciphertext, or plaintext not yet verified)."""
        out = bytearray()
        for pos in range(0, len(data), BLOCK_SIZE):
            self._counter = gcm_model.inc32(self._counter)
            stream = model.encrypt_block(self._key, self._counter).to_bytes(BLOCK_SIZE, "big")
            out += _xor(data[pos:pos + BLOCK_SIZE], stream)
        self._ghash(bytes(out) if op == Op.ENCRYPT else data)
        self.data_bytes += len(data)
        self.data_seen = True
        self.data_short = len(data) % BLOCK_SIZE != 0
        return bytes(out)

    def tag(self):
        """The 16-byte tag of the message so far (its length block taken)."""
        s = gcm_model.ghash_blocks(
            self._h, [gcm_model.length_block(self.aad_bytes, self.data_bytes)], self._y)
        return (s ^ self._mask).to_bytes(gcm_model.TAG_BYTES, "big")


@dataclass
class _Message:
    slot: int
    op: Op
    mode: Mode
    chain: bytes = field(repr=False)
    gcm: GcmState | None = None


class DeviceModel:
    """Reference implementation of the device side: the golden model for the gateware.

    Holds key slots and the message in progress, and answers requests exactly as this module's
    specification says, errors included, using :mod:`aes_fpga.model` for the cipher. Keys cannot
    be read back (see "Key material" in the module docstring); :meth:`key_loaded` says only
    whether a slot holds one.

    GCM (spec "GCM messages") is offered when ``info`` lists it: the replies to the last
    ``window`` GCM chunks are kept by ``seq`` and given again to a retransmission, and the
    ``auth_failures`` counter follows :attr:`counters` in ``STATS``. Its window is at most
    :data:`~.spec.GCM_MAX_WINDOW` then (a wider one is a :class:`ValueError`, as in the
    gateware). ``ZEROIZE`` clears every kept reply but those still kept for another slot's
    message: here, where a dropped reply is held nowhere, that is dropping the replies of the
    slot's message (the gateware also overwrites the bytes of replies dropped before, which no
    request can reach).
    A device whose ``info`` has an entropy source reports :attr:`entropy` between
    :attr:`counters` and ``auth_failures``, and answers ``RANDOM`` with the words of
    :attr:`source` while ``entropy["entropy_state"]`` is ``OK`` (``ENTROPY_UNAVAILABLE``
    else); one without answers ``RANDOM`` ``UNKNOWN_COMMAND``. With ``info.entropy_raw`` it
    answers ``ENTROPY_RAW`` with :attr:`source`'s raw samples, whatever the state.

    Parameters
    ----------
    info : DeviceInfo, optional
        Capabilities to report and enforce (slot count, key sizes, modes, max payload); the
        default is 4 slots, every key size and every mode (GCM included), :data:`MAX_PAYLOAD`.
    max_gcm_data, max_gcm_aad : int, optional
        A GCM message's data and AAD limits (``TOO_LONG`` beyond); the protocol's by default,
        smaller ones let a test reach them.
    device_secret : bytes, optional
        32 bytes: the device requires sessions (:mod:`.session_spec`; ``INFO`` says so) and
        :attr:`sessions` is its :class:`~.sessions.SessionGate`.
    challenge_source : callable, optional
        Gives each handshake's 16-byte device challenge, or ``None`` for a failed source; by
        default the operating system's random bytes while :attr:`entropy` says the source is
        healthy (or the device has none).
    sessions_held, max_records : int, optional
        Established sessions held and records per session (see :mod:`.session_spec`).
    """

    def __init__(self, info=None, *, max_gcm_data=GCM_MAX_DATA_BYTES,
                 max_gcm_aad=GCM_MAX_AAD_BYTES, device_secret=None, challenge_source=None,
                 sessions_held=SESSIONS_HELD, max_records=MAX_RECORDS):
        if info is None:
            info = DeviceInfo(modes=tuple(Mode))
        if not isinstance(info, DeviceInfo):
            raise TypeError(f"info must be a DeviceInfo, not {type(info).__name__}")
        info = dataclasses.replace(info, sessions=device_secret is not None)
        #: The session gate of a device with a secret, else ``None``.
        self.sessions = None if device_secret is None else SessionGate(
            device_secret, challenge_source or self._challenge, window=info.window,
            held=sessions_held, max_records=max_records)
        check_gcm_window(info.modes, info.window)
        self.info = info
        self.max_gcm_data, self.max_gcm_aad = max_gcm_data, max_gcm_aad
        self._keys = [None] * info.key_slots
        self._message = None
        self._decoder = FrameDecoder(serial_frame_limit(info.max_payload))
        #: What ``STATS`` reports (a transport's drop counters; none by default).
        self.counters = []
        #: GCM decryptions answered ``AUTH_FAILED`` (reported by ``STATS`` after
        #: :attr:`counters` when the device offers GCM).
        self.auth_failures = 0
        #: The entropy source's state and failure counts (:data:`~.spec.ENTROPY_COUNTERS`),
        #: reported by ``STATS`` after :attr:`counters` when ``info.entropy``: by default a
        #: source past its start-up, healthy; set them to stand for another.
        self.entropy = {"entropy_state": EntropyStatus.OK, "entropy_rct_failures": 0,
                        "entropy_apt_failures": 0}
        #: The words ``RANDOM`` gives (a :class:`~.random_words.SourceModel`).
        self.source = SourceModel()
        # seq -> (request payload, reply payload) of the last `window` GCM chunks processed,
        # and the slot of their messages.
        self._kept = OrderedDict()
        self._kept_slot = None

    def _challenge(self):
        healthy = not self.info.entropy or self.entropy["entropy_state"] == EntropyStatus.OK
        return os.urandom(CHALLENGE_BYTES) if healthy else None

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
        opcodes = SessionGate.opcodes if self.sessions is not None else frozenset()
        try:
            frame = decode_frame(raw, crc=crc, max_payload=self.info.max_payload,
                                 opcodes=opcodes)
        except ProtocolError as e:
            if e.seq is None:
                return None
            # Echo the header as received: for BAD_CRC it is unverified, see the specification.
            return reply_opcode(e.command), e.seq, build_status_reply(e.status)
        try:
            if frame.is_reply:
                raise UnknownCommand(f"command {frame.command:#04x} is a reply opcode; a device "
                                     f"accepts only requests")
            if self.sessions is None:
                payload = self._execute(frame.request, frame.payload, frame.seq)
            else:
                payload = self.sessions.answer(frame, datagram=not crc, run=self._run)
                if payload is None:
                    return None
        except ProtocolError as e:
            payload = build_status_reply(e.status)
        return reply_opcode(frame.command), frame.seq, payload

    def _run(self, command, payload, seq):
        """The reply payload of a command (refusals included), as a record carries it."""
        try:
            return self._execute(command, payload, seq)
        except ProtocolError as e:
            return build_status_reply(e.status)

    def _execute(self, command, payload, seq):
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
            gcm = [self.auth_failures] if Mode.GCM in self.info.modes else []
            entropy = [self.entropy[k] for k in ENTROPY_COUNTERS] if self.info.entropy else []
            sessions = [self.sessions.failures & 0xFFFF] if self.sessions else []
            return build_stats_reply([*self.counters, *entropy, *gcm, *sessions])
        if command == Command.RANDOM:
            return self._random(payload)
        if command == Command.ENTROPY_RAW:
            if not self.info.entropy_raw:
                raise UnknownCommand("ENTROPY_RAW: this device is not built to give raw samples")
            count = parse_random_request(payload, self.info)
            return bytes([Status.OK]) + self.source.take_samples(SAMPLES_PER_BLOCK * count)
        if command == Command.ZEROIZE:
            slot = parse_zeroize_request(payload, self.info)
            slots = set(range(self.info.key_slots)) if slot == ALL_SLOTS else {slot}
            self._end_message(slots)
            for s in slots:
                self._keys[s] = None
            return build_zeroize_reply()
        req = parse_process_request(payload, self.info)
        if req.mode == Mode.GCM:
            return self._gcm(req, seq, payload)
        return build_process_reply(self._process(req))

    def _random(self, payload):
        if not self.info.entropy:
            raise UnknownCommand("RANDOM: this device has no entropy source")
        count = parse_random_request(payload, self.info)
        if self.entropy["entropy_state"] != EntropyStatus.OK:
            raise EntropyUnavailable("RANDOM: the entropy source is "
                                     f"{EntropyStatus(self.entropy['entropy_state']).name}")
        return build_random_reply(self.source.take(count))

    def _end_message(self, slots):
        if self._message is not None and self._message.slot in slots:
            self._message = None
        if self._kept_slot in slots:
            self._kept.clear()
            self._kept_slot = None

    def _continued(self, req):
        """The message in progress that the chunk ``req`` (without ``FIRST``) continues, or
        the error to refuse it with."""
        msg = self._message
        if msg is None:
            raise ChainNotStarted("PROCESS chunk without FIRST, but no message is in "
                                  "progress; send a FIRST chunk")
        now, then = (req.slot, req.op, req.mode), (msg.slot, msg.op, msg.mode)
        if now != then:
            raise ChainMismatch(
                f"PROCESS chunk has slot/op/mode {req.slot}/{req.op.name}/{req.mode.name}, "
                f"the message in progress {msg.slot}/{msg.op.name}/{msg.mode.name}")
        return msg

    def _gcm(self, req, seq, payload):
        """A GCM chunk (spec "GCM messages"): the kept reply of a retransmission, or every
        check, then the chunk processed and its reply kept."""
        kept = self._kept.get(seq)
        if kept is not None and kept[0] == payload:
            return kept[1]
        key = self._keys[req.slot]
        if key is None:
            raise KeyNotLoaded(f"slot {req.slot} holds no key; LOAD_KEY it first")
        if req.first:
            state = GcmState(key, req.iv, seq)
        else:
            state = self._continued(req).gcm
            if seq != state.next_seq:
                raise OutOfOrder(f"GCM chunk seq {seq}: the message's next is {state.next_seq}")
        if not req.last:
            error = state.refusal(req.aad, len(req.data), self.max_gcm_aad, self.max_gcm_data)
            if error is not None:
                raise error
        # Every check has passed: from here on the chunk is processed.
        state.next_seq = (seq + 1) & 0xFFFF
        if req.aad:
            state.add_aad(req.data)
            reply = build_status_reply(Status.OK)
        elif not req.last:
            reply = build_process_reply(state.crypt(req.op, req.data))
        elif req.op == Op.ENCRYPT:
            reply = build_process_reply(state.tag())
        elif gcm_model.tag_matches(req.data, state.tag()):
            reply = build_status_reply(Status.OK)
        else:
            self.auth_failures += 1
            reply = build_status_reply(Status.AUTH_FAILED)
        if req.first:
            self._kept.clear()
            self._kept_slot = req.slot
        self._message = None if req.last else _Message(req.slot, req.op, req.mode, b"", state)
        self._kept.pop(seq, None)
        self._kept[seq] = (payload, reply)
        while len(self._kept) > self.info.window:
            self._kept.popitem(last=False)
        return reply

    def _process(self, req):
        key = self._keys[req.slot]
        if key is None:
            raise KeyNotLoaded(f"slot {req.slot} holds no key; LOAD_KEY it first")
        chain = req.iv if req.first else self._continued(req).chain
        out, chain = run_mode(key, req.op, req.mode, chain, req.data)
        # State changes only now, after every check passed: an error leaves it untouched.
        self._message = None if req.last else _Message(req.slot, req.op, req.mode, chain)
        return out
