"""The executor's handlers of a device with a secret (:mod:`aes_fpga.appliance.session_spec`):
``OPEN_SESSION`` and ``AUTHENTICATE`` in the clear through a
:class:`~.session_handshake.SessionHandshake`, and the refusals every other request gets in the
clear.

:class:`SessionParts` is what the handlers share, made once per executor: the handshake (its
KDF on a compact8 of its own, the device secret loaded into it after reset), the request's
payload gathered into a register, the reply bytes shifted out of one, and ``session_failures``
(wrong host cryptograms; ``STATS`` reports it last). An established session's keys go into
the mode engine's core, in the slots above the ``info.key_slots`` that ``LOAD_KEY`` and
``ZEROIZE`` can name.

Area (xc7a35t): ``ProtocolEngine(key_slots=4, entropy=EntropySource())`` is 3147 LUT, 3533 FF,
12 RAMB18, 12 RAMB36, 18 DSP; with ``device_secret=`` 5964 LUT, 6005 FF, 14 RAMB18 (measured
with :func:`aes_fpga.flow.synth.synthesize` on each, flattened). Most of the difference is the
pending handshake's and the places' registers (about 1400 FF), the KDF's compact8 and CMAC,
and 256-bit key multiplexers; the entropy source's conditioner has an AES core of its own that
the KDF could share instead.

Records (``RECORD``, and ``CLOSE_SESSION`` inside one) are not built yet: in the clear
``CLOSE_SESSION`` is ``SESSION_REQUIRED`` as on the reference device, and a ``RECORD`` that is
long enough is answered ``UNKNOWN_SESSION``: this device opens sessions but carries no records.
"""

from amaranth.hdl import Cat, Const, Mux, Signal

from ...cores import Compact8
from ..session_spec import (
    AUTHENTICATE_REQUEST,
    CHALLENGE_BYTES,
    OPEN_REPLY,
    RECORD_MIN_PAYLOAD,
    SESSIONS_HELD,
    SessionCommand,
)
from ..spec import Status
from .check import HEAD_SIZE
from .handlers import CommandHandler
from .session_handshake import HandshakeOp, SessionHandshake

__all__ = ["SessionParts", "OpenSession", "Authenticate", "ClearClose", "ClearRecord",
           "SESSION_HANDLERS", "session_key_slots"]

_GATHER_BYTES = AUTHENTICATE_REQUEST.size        # the longest handshake payload


def session_key_slots(key_slots, held=SESSIONS_HELD):
    """The core's key slots of a device with ``key_slots`` for ``LOAD_KEY`` and ``held``
    sessions: two more per session (its request and reply keys)."""
    return key_slots + 2 * held


class SessionParts:
    """What the session handlers share (see the module docstring); ``x`` is the executor's
    :class:`~.executor.ExecutorParts`, ``secret`` the device secret (32 bytes)."""

    def __init__(self, x, m, secret, held=SESSIONS_HELD):
        self.x = x
        first_slot = x.key_slots
        self.hs = SessionHandshake(Compact8(key_sizes=(256,), tag_width=0), held=held,
                                   first_slot=first_slot,
                                   key_slots=x.me.core.key_slots)
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
        with m.If(hs.failure):
            m.d.sync += self.failures.eq(self.failures + 1)
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
            # (The gathered bytes sit at the bottom of the register.)
            raw = self.gathered[:8 * payload_bytes]
            req = hs.req.payload
            m.d.comb += [hs.req.valid.eq(1), req.op.eq(op), hs.rep.ready.eq(x.rep_free)]
            if op == HandshakeOp.OPEN_SESSION:
                m.d.comb += [req.challenge.eq(raw),
                             x.entropy_words.ready.eq(hs.entropy_words.ready),
                             hs.entropy_words.valid.eq(x.entropy_words.valid)]
            else:
                m.d.comb += [req.session_id.eq(raw[-32:]), req.cryptogram.eq(raw[:-32])]
                self.keys(m)
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

    def keys(self, m):
        """An established session's keys into the mode engine's core (``AUTHENTICATE``)."""
        x, hs = self.x, self.hs
        me_key, key = x.me.key, hs.session_key
        m.d.comb += [me_key.valid.eq(key.valid), me_key.payload.key.eq(key.payload.key),
                     me_key.payload.key_bits.eq(key.payload.key_bits),
                     me_key.payload.slot.eq(key.payload.slot), key.ready.eq(me_key.ready)]


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


class ClearClose(CommandHandler):
    """``CLOSE_SESSION`` in the clear: ``SESSION_REQUIRED`` (it is only ever sent sealed)."""

    command = SessionCommand.CLOSE_SESSION

    def checks(self, m):
        return [(Const(1), Status.SESSION_REQUIRED)]

    def decide(self, m):
        pass                            # (never reached: refused by its check)

    def states(self, m):
        pass


class ClearRecord(CommandHandler):
    """``RECORD`` before records are built: ``BAD_LENGTH`` when shorter than a record, else
    ``UNKNOWN_SESSION`` (no session carries records on this device)."""

    command = SessionCommand.RECORD

    def checks(self, m):
        return [(self.x.length < RECORD_MIN_PAYLOAD, Status.BAD_LENGTH),
                (Const(1), Status.UNKNOWN_SESSION)]

    def decide(self, m):
        pass                            # (never reached: refused by its checks)

    def states(self, m):
        pass


#: The handlers a device with a secret adds to the executor's.
SESSION_HANDLERS = (OpenSession, Authenticate, ClearClose, ClearRecord)
