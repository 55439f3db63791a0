"""The executor's handlers of a device with a secret (:mod:`aes_fpga.appliance.session_spec`):
``OPEN_SESSION`` and ``AUTHENTICATE`` in the clear through a
:class:`~.session_handshake.SessionHandshake`, ``RECORD`` and ``CLOSE_SESSION``, and the
refusals every other request gets in the clear.

:class:`SessionParts` is what the handlers share, made once per executor: the handshake (its
KDF on a compact8 of its own, the device secret loaded into it after reset), the request's
payload gathered into a register, the reply bytes shifted out of one, and ``session_failures``
(wrong host cryptograms and dropped records; ``STATS`` reports it last).

Area (xc7a35t, :func:`aes_fpga.flow.synth.synthesize`, flattened)::

    python -c "from aes_fpga.appliance.gateware.engine import ProtocolEngine as E; \
    from aes_fpga.entropy import EntropySource as S; from aes_fpga.flow.synth import \
    synthesize; [print(synthesize(E(key_slots=4, entropy=S(), **kw)).total) \
    for kw in ({}, {'device_secret': bytes(range(32))})]"

gives 2965 LUT, 3307 FF, 12 RAMB18, 12 RAMB36, 18 DSP without a secret and 9754 LUT, 8849 FF, 18
RAMB18, 13 RAMB36 with one (2026-11-26, native Yosys, the records on a compact8, before their
LutRound core; 10166 LUT and 9964 FF with one before the handshake's keys, the kept replies'
entries and the handlers' key left their registers). Where the secret's logic goes (run with
``hierarchy=True`` and :func:`~aes_fpga.flow.synth.group_modules`, or the ``uart`` design's
synthesis report): the executor's own logic (the record layer: the inner request's registers and
the handlers' registered view of it, the kept replies' flags and LUT RAM, the seal; the
handshake's request gathered into a register), the handshake with its KDF (two 128-bit
cryptograms, the pending challenges, the held places; its compact8 360 LUT, 590 FF, 2 RAMB18),
the records' cipher (its mode engine with the LUT GHASH, and its core) and the replay rule's
pipeline. Sharing the KDF's compact8 with the records' cipher would save at most that compact8
(under 4 %), less the 256-bit key and 128-bit block multiplexers it needs: not done.

Records: :class:`Record` reads a ``RECORD``'s counter and hands it to the executor's
:class:`~.session_records.RecordLayer`, which opens it, runs its inner request through the
executor's handlers and seals the reply; :class:`SealedClose` answers ``CLOSE_SESSION`` inside
a record (``SESSION_REQUIRED`` in the clear). The established sessions' keys go into the
records' own cipher (:class:`~.session_record.RecordCipher`), not into the mode engine's core.
"""

from amaranth.hdl import Cat, Const, Mux, Signal

from ...cores import Compact8
from ..session_spec import (
    AUTHENTICATE_REQUEST,
    CHALLENGE_BYTES,
    COUNTER_BYTES,
    OPEN_REPLY,
    RECORD_MIN_PAYLOAD,
    RECORD_OVERHEAD,
    SESSION_ID_BYTES,
    SESSIONS_HELD,
    SessionCommand,
)
from ..spec import Status
from .check import HEAD_SIZE
from .handlers import CommandHandler
from .session_handshake import HandshakeOp, SessionHandshake

__all__ = ["SessionParts", "OpenSession", "Authenticate", "SealedClose", "Record",
           "SESSION_HANDLERS"]

_GATHER_BYTES = AUTHENTICATE_REQUEST.size        # the longest handshake payload


class SessionParts:
    """What the session handlers share (see the module docstring); ``x`` is the executor's
    :class:`~.executor.ExecutorParts`, ``secret`` the device secret (32 bytes)."""

    def __init__(self, x, m, secret, held=SESSIONS_HELD):
        self.x = x
        # The established sessions' keys go into the records' cipher (two slots a place).
        # (Its round keys written from a register: the S-box ROM's slow read on ECP5 then ends
        # at a flip-flop, not at the round-key RAM; the cycles are the same.)
        kdf_core = Compact8(key_sizes=(256,), tag_width=0, registered_key_write=True)
        self.hs = SessionHandshake(kdf_core, held=held, first_slot=0, key_slots=2 * held)
        m.submodules.session_handshake = hs = self.hs
        # The device secret goes into the KDF's core once after reset, and nowhere else.
        secret_loaded = Signal()
        m.d.comb += [hs.key.valid.eq(~secret_loaded),
                     hs.key.payload.key.eq(int.from_bytes(secret, "big")),
                     hs.key.payload.key_bits.eq(2), hs.key.payload.slot.eq(0)]
        with m.If(hs.key.valid & hs.key.ready):
            m.d.sync += secret_loaded.eq(1)
        m.d.comb += [hs.entropy_state.eq(x.entropy_state),
                     hs.entropy_words.payload.eq(x.entropy_words.payload)]
        #: The request's payload, first byte most significant (head, then the stream).
        self.gathered = Signal(8 * _GATHER_BYTES)
        # The handshake's request fields straight from the gathered bytes, whatever the state
        # (it reads them only while ``req.valid``): no state multiplexer lies between this
        # register and the handshake's 128-bit comparisons. ``OPEN_SESSION``'s challenge and
        # ``AUTHENTICATE``'s cryptogram are both the last 16 bytes, its session id the 4
        # before them.
        req = hs.req.payload
        c_bits = 8 * CHALLENGE_BYTES
        m.d.comb += [req.challenge.eq(self.gathered[:c_bits]),
                     req.cryptogram.eq(self.gathered[:c_bits]),
                     req.session_id.eq(self.gathered[c_bits:c_bits + 8 * SESSION_ID_BYTES])]
        self.left = Signal(range(_GATHER_BYTES + 1))
        # The reply bytes after the status, read straight out of the handshake's pending
        # registers (they stay until the next request), one byte a cycle.
        rep = hs.rep.payload
        fields = Cat(rep.cryptogram, rep.challenge, rep.session_id)
        self.out_at = Signal(range(OPEN_REPLY.size))     # the byte sent next, 0 the last
        self.active = Signal(name="in_session_reply")
        self.fire = Signal()
        self.results = (self.active, fields.word_select(self.out_at, 8), self.fire)
        self.failures = Signal(16)
        #: A record dropped (its tag or its counter refused): counted in ``failures``.
        self.record_drop = Signal()
        with m.If(hs.failure | self.record_drop):
            m.d.sync += self.failures.eq(self.failures + 1)
        x.records.datapath(m, hs)
        with m.If(self.fire):
            m.d.sync += self.out_at.eq(self.out_at - 1)

    def start_gather(self, payload_bytes):
        """``DECIDE``: the head bytes in, ``payload_bytes - HEAD_SIZE`` more to come."""
        x = self.x
        head = Cat(*[x.head(n) for n in reversed(range(HEAD_SIZE))])
        return [self.gathered.eq(head), self.left.eq(payload_bytes - HEAD_SIZE)]

    def states(self, m, name, op, payload_bytes):
        """The states of a handshake command: gather, run the handshake, reply, send."""
        x, hs = self.x, self.hs
        with m.State(f"{name}_GATHER"):
            m.d.comb += x.payload.ready.eq(self.left != 0)
            with m.If(x.payload.valid & x.payload.ready):
                m.d.sync += [self.gathered.eq(Cat(x.payload.payload, self.gathered)),
                             self.left.eq(self.left - 1)]
            with m.If(self.left == 0):
                m.next = f"{name}_RUN"
        with m.State(f"{name}_RUN"):
            # (The gathered bytes sit at the bottom of the register: the request's fields are
            # taken from it in ``__init__``.)
            req = hs.req.payload
            m.d.comb += [hs.req.valid.eq(1), req.op.eq(op), hs.rep.ready.eq(x.rep_free)]
            if op == HandshakeOp.OPEN_SESSION:
                m.d.comb += [x.entropy_words.ready.eq(hs.entropy_words.ready),
                             hs.entropy_words.valid.eq(x.entropy_words.valid)]
            with m.If(hs.rep.valid & x.rep_free):
                rep = hs.rep.payload
                with_fields = Const(op == HandshakeOp.OPEN_SESSION) & (rep.status == Status.OK)
                m.d.sync += [
                    x.reply(rep.status, Mux(with_fields, 1 + OPEN_REPLY.size, 1)),
                    self.out_at.eq(OPEN_REPLY.size - 1),
                ]
                with m.If(with_fields):
                    m.next = f"{name}_WAIT"
                with m.Else():
                    m.d.sync += x.release.eq(1)
                    m.next = "IDLE"
        with m.State(f"{name}_WAIT"):
            with m.If(x.rep_free):
                m.d.sync += self.active.eq(1)
                m.next = f"{name}_SEND"
        with m.State(f"{name}_SEND"):
            # (``fire`` is driven by the executor's data multiplexer.)
            with m.If(self.fire & (self.out_at == 0)):
                m.d.sync += [self.active.eq(0), x.release.eq(1)]
                m.next = "IDLE"

class _Handshake(CommandHandler):
    op = None
    payload_bytes = None

    def __init__(self, x):
        super().__init__(x)
        self.parts = x.sessions

    @property
    def name(self):
        return self.command.name

    def checks(self, m):
        return [(self.x.length != self.payload_bytes, Status.BAD_LENGTH)]

    def decide(self, m):
        m.d.sync += self.parts.start_gather(self.payload_bytes)
        m.next = f"{self.name}_GATHER"

    def states(self, m):
        self.parts.states(m, self.name, self.op, self.payload_bytes)


class OpenSession(_Handshake):
    """``OPEN_SESSION``: the host challenge (16 bytes) to the handshake; its reply (status,
    then session id, device challenge and device cryptogram) sent from a register."""

    command = SessionCommand.OPEN_SESSION
    op = HandshakeOp.OPEN_SESSION
    payload_bytes = CHALLENGE_BYTES

    def __init__(self, x):
        super().__init__(x)
        #: The reply bytes (shared by the handshake commands; only this one sends any).
        self.results = self.parts.results


class Authenticate(_Handshake):
    """``AUTHENTICATE``: session id and host cryptogram to the handshake; an established
    session's keys go into the core; the status alone is the reply."""

    command = SessionCommand.AUTHENTICATE
    op = HandshakeOp.AUTHENTICATE
    payload_bytes = AUTHENTICATE_REQUEST.size


class SealedClose(CommandHandler):
    """``CLOSE_SESSION``: inside a record, ``OK`` (``BAD_LENGTH`` with a payload), and the
    session ends once the sealed reply is out; in the clear ``SESSION_REQUIRED``."""

    command = SessionCommand.CLOSE_SESSION
    answers = True

    def checks(self, m):
        x = self.x
        return [(~x.records.inner, Status.SESSION_REQUIRED), (x.length != 0, Status.BAD_LENGTH)]

    def decide(self, m):
        m.d.sync += self.x.records.close_due.eq(1)
        m.next = self.x.ANSWER

    def states(self, m):
        pass


class Record(CommandHandler):
    """``RECORD``: ``BAD_LENGTH`` when shorter than a record, ``UNKNOWN_SESSION`` when its
    session id is not held; else its counter read, the record opened, and dropped or run by
    the :class:`~.session_records.RecordLayer`."""

    command = SessionCommand.RECORD

    def __init__(self, x):
        super().__init__(x)
        hs = x.sessions.hs
        self.session_id = Cat(*[x.head(n) for n in reversed(range(4))])
        self.match = [hs.held[k] & (hs.held_ids[k] == self.session_id)
                      for k in range(len(hs.held_ids))]
        self.counter_left = Signal(range(COUNTER_BYTES + 1), name="record_counter_left")
        # A kept reply being sent again: its bytes after the status, from the kept records.
        kept = x.records.kept
        self.kept_active = Signal(name="in_kept_record")
        self.kept_left = Signal(range(kept.stride + 1), name="kept_record_out")
        self.fire = Signal(name="kept_record_fire")
        self.results = (self.kept_active & kept.reader.valid, kept.reader.payload, self.fire)

    def checks(self, m):
        x = self.x
        return [(x.length < RECORD_MIN_PAYLOAD, Status.BAD_LENGTH),
                (~Cat(*self.match).any(), Status.UNKNOWN_SESSION)]

    def decide(self, m):
        x, layer = self.x, self.x.records
        place = 0
        for k, match in enumerate(self.match):
            place = Mux(match, k, place)
        m.d.sync += [layer.place.eq(place), layer.session_id.eq(self.session_id),
                     layer.i_length.eq(x.length - RECORD_OVERHEAD),
                     layer.open_length.eq(x.length - RECORD_OVERHEAD + 1),
                     self.counter_left.eq(COUNTER_BYTES)]
        m.next = "RECORD_COUNTER"

    def datapath(self, m):
        m.d.comb += self.x.records.kept.reader.ready.eq(self.fire)
        with m.If(self.fire):
            m.d.sync += self.kept_left.eq(self.kept_left - 1)

    def states(self, m):
        x, layer, left = self.x, self.x.records, self.counter_left
        with m.State("RECORD_COUNTER"):
            m.d.comb += x.payload.ready.eq(left != 0)
            with m.If(x.payload.valid & x.payload.ready):
                m.d.sync += [layer.counter.eq(Cat(x.payload.payload, layer.counter[:-8])),
                             left.eq(left - 1)]
            with m.If(left == 0):
                # (``opening``, a register, is high exactly while in RECORD_OPEN.)
                m.d.sync += layer.opening.eq(1)
                m.next = "RECORD_OPEN"
        with m.State("RECORD_OPEN"):
            with m.If(layer.cipher.start.ready):
                m.d.sync += layer.opening.eq(0)
                m.next = "RECORD_CHECK"
        with m.State("RECORD_CHECK"):
            # (After the reply of the record before is sealed and kept: records act one
            # after another, see RecordLayer's seal.)
            with m.If(layer.settled):
                m.d.sync += layer.check()
                m.next = "RECORD_VERDICT"
        with m.State("RECORD_VERDICT"):
            layer.verdict(m, x)
        kept = layer.kept
        with m.State("RECORD_KEPT_WAIT"):
            # Once the reply builder has taken the descriptor, ``data`` is this reply's.
            with m.If(x.rep_free):
                m.d.sync += [self.kept_active.eq(1),
                             self.kept_left.eq(kept.length - 1)]
                m.next = "RECORD_KEPT"
        with m.State("RECORD_KEPT"):
            with m.If(self.fire & (self.kept_left == 1)):
                m.d.sync += [self.kept_active.eq(0), x.release.eq(1)]
                m.next = "IDLE"


#: The handlers a device with a secret adds to the executor's.
SESSION_HANDLERS = (OpenSession, Authenticate, SealedClose, Record)
