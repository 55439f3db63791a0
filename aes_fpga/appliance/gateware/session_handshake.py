"""The sessions' handshake in gateware: ``OPEN_SESSION`` and ``AUTHENTICATE`` of
:mod:`aes_fpga.appliance.session_spec`, as the reference device's
:class:`~aes_fpga.appliance.sessions.SessionGate` answers them.

:class:`SessionHandshake` takes the two requests' payloads already parsed (by the frame check
that sits in front of the executor) and gives their replies' fields; the established sessions'
keys leave on ``session_key`` as key-stream beats for the core that seals and opens records,
into key slots above those ``LOAD_KEY`` reaches (slot ``first_slot + 2 i`` for the request key
of session place ``i``, ``+ 1`` for its reply key), so no command of the host can name them.

Not here (the record layer's): the records themselves, their counters and kept replies.
"""

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import data, enum, stream, wiring
from amaranth.lib.wiring import In, Out

from ...cores.interface import KeyBits, key_layout
from ...entropy.source import EntropyState
from ..session_spec import (
    CHALLENGE_BYTES,
    CRYPTOGRAM_BYTES,
    SESSION_ID_BYTES,
    SESSIONS_HELD,
    Derivation,
)
from ..spec import Status
from .session_kdf import SessionKdf

__all__ = ["SessionHandshake", "HandshakeOp", "handshake_request_layout",
           "handshake_reply_layout"]

_ID_BITS = 8 * SESSION_ID_BYTES
_CHALLENGE_BITS = 8 * CHALLENGE_BYTES
_CRYPTOGRAM_BITS = 8 * CRYPTOGRAM_BYTES


class HandshakeOp(enum.Enum, shape=1):
    """Which handshake request."""

    OPEN_SESSION = 0
    AUTHENTICATE = 1


def handshake_request_layout():
    """A handshake request: ``op``; ``challenge`` (``OPEN_SESSION``: the host challenge);
    ``session_id`` and ``cryptogram`` (``AUTHENTICATE``: the host cryptogram). Byte strings
    are numbers with their first byte most significant."""
    return data.StructLayout({"op": HandshakeOp, "challenge": _CHALLENGE_BITS,
                              "session_id": _ID_BITS, "cryptogram": _CRYPTOGRAM_BITS})


def handshake_reply_layout():
    """A handshake reply: its ``status``; with ``OK`` to ``OPEN_SESSION`` also the
    ``session_id``, the device ``challenge`` and the device ``cryptogram`` (the reply payload
    after the status, in that order; the pending handshake's registers, which stay until the
    next request is taken, so they may be read after the reply)."""
    return data.StructLayout({"status": 8, "session_id": _ID_BITS,
                              "challenge": _CHALLENGE_BITS, "cryptogram": _CRYPTOGRAM_BITS})


def _msb_first(*parts):
    """``parts`` joined, the first most significant (as the protocol writes bytes)."""
    return Cat(*reversed(parts))


# The derivations of a handshake, in the order they run, with their output blocks: the two
# cryptograms when OPEN_SESSION draws a challenge, the two keys when AUTHENTICATE establishes
# the session (each key straight into the register the record core loads it from).
_DERIVATIONS = ((Derivation.DEVICE_CRYPTOGRAM, 1), (Derivation.HOST_CRYPTOGRAM, 1),
                (Derivation.REQUEST_KEY, 2), (Derivation.REPLY_KEY, 2))
_FIRST_KEY_STEP = 2


def _look_ups(m, req, ids, valid, fresh, host_cg, next_id):
    """The combinational look-ups over the held places (at most four): ``AUTHENTICATE``
    again for a fresh one, ``next_id`` held, and the place a new session takes (a free one,
    else the lowest id's)."""
    held_n = len(ids)
    auth_fresh = Signal()
    for k in range(held_n):
        with m.If(valid[k] & fresh[k] & (ids[k] == req.session_id)
                  & (host_cg[k] == req.cryptogram)):
            m.d.comb += auth_fresh.eq(1)
    id_taken = Signal()
    for k in range(held_n):
        with m.If(valid[k] & (ids[k] == next_id)):
            m.d.comb += id_taken.eq(1)
    place = Signal(range(held_n))
    best = Const(0, range(held_n))
    for k in range(1, held_n):
        better = ~valid[k] & valid[best] | valid[k] & valid[best] & (ids[k] < ids[best])
        best = Mux(better, k, best)
    m.d.comb += place.eq(best)
    return auth_fresh, id_taken, place


def _kdf_request(kdf, step, p_host, p_device):
    """The statements (``comb``) that ask ``kdf`` for derivation ``step`` of
    :data:`_DERIVATIONS` from the pending challenges (its output always taken)."""
    table = [(int(c), b) for c, b in _DERIVATIONS]
    return [kdf.i.payload.constant.eq(Array(Const(c, 8) for c, _ in table)[step]),
            kdf.i.payload.blocks.eq(Array(Const(b, 2) for _, b in table)[step]),
            kdf.i.payload.context.eq(_msb_first(p_host, p_device)),
            kdf.o.ready.eq(1)]


class SessionHandshake(wiring.Component):
    """``OPEN_SESSION`` and ``AUTHENTICATE`` (spec :mod:`~aes_fpga.appliance.session_spec`,
    "Handshake"), one request at a time.

    ``OPEN_SESSION``: the pending handshake's reply again when the host challenge is the
    pending one's (a retransmission); else ``ENTROPY_FAILED`` unless ``entropy_state`` is
    ``OK`` (nothing changes); else a device challenge taken from ``entropy_words``, the next
    session id not held, both cryptograms derived (:class:`SessionKdf`, on a compact8 core of
    its own), held as the one pending handshake and answered.

    ``AUTHENTICATE``: ``OK`` again, changing nothing, for a held session that has taken no
    record (``fresh``) and its host cryptogram; ``UNKNOWN_SESSION`` unless the id is the
    pending handshake's; ``BAD_CRYPTOGRAM`` (a ``failure`` pulse) unless the cryptogram is its
    host cryptogram (all 128 bits compared at once: the time does not depend on them); else the
    session's two keys are derived (from the pending handshake's challenges) and sent on
    ``session_key`` one after the other, and it is established in a free place or the
    oldest's (the lowest id: ids only grow), and ``OK``.

    The keys are derived when the session is established, not with the cryptograms: the
    device then holds no key of a handshake that is never authenticated, and one 256-bit
    register (the ``session_key`` payload, cleared once its last beat is taken) instead of
    four 128-bit ones and a multiplexer between them.

    Sessions end on ``end`` (the place ``end_place``: ``CLOSE_SESSION``) and ``end_all``
    (``ZEROIZE`` of every slot: every place and the pending handshake). ``held``/``held_ids``
    tell the record layer which ids are held where; ``record_taken`` (with ``end_place``'s
    place in ``taken_place``) clears a place's ``fresh``.

    Latency: ``OPEN_SESSION`` with a new challenge: the entropy word, then 6 chained core
    encryptions (the KDF's, three per cryptogram); an ``AUTHENTICATE`` that establishes a
    session 12 more (three per key block) and the record core's two key loads; the rest a few
    cycles. Throughput: one request at a time. Back-pressure on ``rep`` or ``session_key``
    holds the request.

    Parameters
    ----------
    core : a core with the common interface, 256-bit keys
        The KDF's (made a submodule); its key (the device secret) comes on ``key``.
    held : int
        Session places (2 to 4).
    first_slot : int
        The key slot of place 0's request key in the record core.
    key_slots : int
        The record core's key slots (``first_slot + 2 held`` at least).
    """

    def __init__(self, core, *, held=SESSIONS_HELD, first_slot=0, key_slots=None):
        if not 2 <= held <= 4:
            self._MustUse__used = core._MustUse__used = True
            raise ValueError(f"held must be in range 2 .. 4, got {held!r}")
        key_slots = first_slot + 2 * held if key_slots is None else key_slots
        if key_slots < first_slot + 2 * held:
            self._MustUse__used = core._MustUse__used = True
            raise ValueError(f"key_slots: {key_slots} cannot hold {held} sessions' keys from "
                             f"slot {first_slot}")
        self.held_count, self.first_slot = held, first_slot
        self.kdf = SessionKdf(core)
        super().__init__({
            "key": In(stream.Signature(key_layout(core.key_slots))),
            "entropy_words": In(stream.Signature(128)),
            "entropy_state": In(EntropyState),
            "req": In(stream.Signature(handshake_request_layout())),
            "rep": Out(stream.Signature(handshake_reply_layout())),
            "session_key": Out(stream.Signature(key_layout(key_slots))),
            "failure": Out(1),
            "held": Out(held),
            "held_ids": Out(data.ArrayLayout(_ID_BITS, held)),
            "end": In(1),
            "end_place": In(range(held)),
            "end_all": In(1),
            "record_taken": In(1),
            "taken_place": In(range(held)),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.kdf = kdf = self.kdf
        wiring.connect(m, wiring.flipped(self.key), kdf.key)
        held_n = self.held_count
        req, rep = self.req.payload, self.rep.payload

        # The pending handshake.
        pending = Signal()
        p_id = Signal(_ID_BITS)
        p_host = Signal(_CHALLENGE_BITS)
        p_device = Signal(_CHALLENGE_BITS)
        # The pending handshake's cryptograms (device, host).
        outputs = Array(Signal(128, name=f"kdf_out{k}") for k in range(2))
        # The session key being sent: its blocks shift in from the bottom (the first ends
        # most significant); the ``session_key`` payload, from this register alone.
        key_reg = Signal(256, name="session_key_reg")
        keying = Signal()                         # the KDF is deriving a key
        # The established sessions.
        ids = Array(Signal(_ID_BITS, name=f"id{k}") for k in range(held_n))
        valid = Array(Signal(name=f"valid{k}") for k in range(held_n))
        fresh = Array(Signal(name=f"fresh{k}") for k in range(held_n))
        host_cg = Array(Signal(_CRYPTOGRAM_BITS, name=f"host_cg{k}") for k in range(held_n))
        next_id = Signal(_ID_BITS)
        m.d.comb += [self.held.eq(Cat(*valid))] + [
            self.held_ids[k].eq(ids[k]) for k in range(held_n)]

        auth_fresh, id_taken, place = _look_ups(m, req, ids, valid, fresh, host_cg, next_id)
        target = Signal(range(held_n))
        key_half = Signal()                       # 0: request key beat, 1: reply key beat

        step = Signal(range(len(_DERIVATIONS)))
        out_index = Signal(range(2))
        m.d.comb += _kdf_request(kdf, step, p_host, p_device)
        with m.If(kdf.o.valid & keying):
            m.d.sync += key_reg.eq(Cat(kdf.o.payload.block, key_reg[:128]))
        with m.Elif(kdf.o.valid):
            m.d.sync += [outputs[out_index].eq(kdf.o.payload.block), out_index.eq(out_index + 1)]

        status = Signal(8)
        m.d.comb += [
            # (The pending handshake's registers, held until the next request: read only with
            # ``OK`` to ``OPEN_SESSION``.)
            rep.status.eq(status),
            rep.session_id.eq(p_id),
            rep.challenge.eq(p_device),
            rep.cryptogram.eq(outputs[0]),
        ]

        # A request's comparisons (128-bit ones among them) are registered every cycle and
        # acted on in CHECK, the cycle after IDLE saw the request, so that no path runs from
        # the executor's valid (nor its state) through them into this FSM: their registers
        # have no enable. (The request is held until its reply is taken, and nothing they
        # compare changes in IDLE.)
        same_challenge, entropy_ok, known, cg_ok, again = (
            Signal(name=n) for n in ("same_challenge", "entropy_ok", "known", "cg_ok", "again"))
        m.d.sync += [same_challenge.eq(pending & (p_host == req.challenge)),
                     entropy_ok.eq(self.entropy_state == EntropyState.OK),
                     again.eq(auth_fresh),
                     known.eq(pending & (p_id == req.session_id)),
                     cg_ok.eq(outputs[1] == req.cryptogram)]
        with m.FSM():
            with m.State("IDLE"):
                with m.If(self.req.valid):
                    m.next = "CHECK"
            with m.State("CHECK"):
                with m.If(req.op == HandshakeOp.OPEN_SESSION):
                    with m.If(same_challenge):
                        m.d.sync += status.eq(Status.OK)
                        m.next = "REPLY"
                    with m.Elif(~entropy_ok):
                        m.d.sync += status.eq(Status.ENTROPY_FAILED)
                        m.next = "REPLY"
                    with m.Else():
                        m.next = "CHALLENGE"
                with m.Else():
                    with m.If(again):
                        m.d.sync += status.eq(Status.OK)
                        m.next = "REPLY"
                    with m.Elif(~known):
                        m.d.sync += status.eq(Status.UNKNOWN_SESSION)
                        m.next = "REPLY"
                    with m.Elif(~cg_ok):
                        m.d.comb += self.failure.eq(1)
                        m.d.sync += status.eq(Status.BAD_CRYPTOGRAM)
                        m.next = "REPLY"
                    with m.Else():
                        m.d.sync += [target.eq(place), key_half.eq(0), keying.eq(1),
                                     step.eq(_FIRST_KEY_STEP)]
                        m.next = "KEY_DERIVE"
            with m.State("CHALLENGE"):
                # The old pending handshake ends here: its values are overwritten.
                m.d.comb += self.entropy_words.ready.eq(1)
                with m.If(self.entropy_words.valid):
                    m.d.sync += [pending.eq(0), p_host.eq(req.challenge),
                                 p_device.eq(self.entropy_words.payload),
                                 next_id.eq(next_id + 1)]
                    m.next = "ID"
            with m.State("ID"):
                # Ids count up from 1 and skip those held (at most ``held`` steps).
                with m.If(id_taken):
                    m.d.sync += next_id.eq(next_id + 1)
                with m.Else():
                    m.d.sync += [p_id.eq(next_id), step.eq(0), out_index.eq(0)]
                    m.next = "DERIVE"
            with m.State("DERIVE"):
                m.d.comb += kdf.i.valid.eq(1)
                with m.If(kdf.i.ready):
                    m.d.sync += step.eq(step + 1)
                    with m.If(step == _FIRST_KEY_STEP - 1):
                        m.next = "DERIVED"
            with m.State("DERIVED"):
                m.d.sync += [pending.eq(1), status.eq(Status.OK)]
                m.next = "REPLY"
            with m.State("KEY_DERIVE"):
                m.d.comb += kdf.i.valid.eq(1)
                with m.If(kdf.i.ready):
                    m.d.sync += [step.eq(step + 1), keying.eq(0)]
                    m.next = "KEYS"
            with m.State("KEYS"):
                m.d.comb += [
                    self.session_key.valid.eq(1),
                    self.session_key.payload.key.eq(key_reg),
                    self.session_key.payload.key_bits.eq(KeyBits.AES256),
                    self.session_key.payload.slot.eq(self.first_slot + Cat(key_half, target)),
                ]
                with m.If(self.session_key.ready):
                    with m.If(key_half):
                        m.d.sync += [ids[target].eq(p_id), valid[target].eq(1),
                                     fresh[target].eq(1), host_cg[target].eq(outputs[1]),
                                     pending.eq(0), status.eq(Status.OK), key_reg.eq(0)]
                        m.next = "REPLY"
                    with m.Else():
                        m.d.sync += [key_half.eq(1), keying.eq(1)]
                        m.next = "KEY_DERIVE"
            with m.State("REPLY"):
                m.d.comb += self.rep.valid.eq(1)
                with m.If(self.rep.ready):
                    m.d.comb += self.req.ready.eq(1)
                    m.next = "IDLE"

        with m.If(self.record_taken):
            m.d.sync += fresh[self.taken_place].eq(0)
        with m.If(self.end):
            m.d.sync += valid[self.end_place].eq(0)
        with m.If(self.end_all):
            m.d.sync += [v.eq(0) for v in valid] + [pending.eq(0)]
        return m
