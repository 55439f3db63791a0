"""The records' AES-256-GCM in gateware (spec :mod:`aes_fpga.appliance.session_spec`,
"Records"): :class:`RecordCipher` opens request records and seals replies, byte by byte, on a
GCM :class:`~aes_fpga.modes.ModeEngine` of its own.

Why an engine of its own: the executor's mode engine holds the chaining value (and, in a GCM
build, the GHASH state) of the host's message in progress, which goes on over several
``PROCESS`` chunks, so over several records; opening the next record on it would end that
message. The records' engine holds the sessions' keys (two slots per session place: the
request key at ``2 p``, the reply key at ``2 p + 1``), which no command of the host can name,
on a :class:`~aes_fpga.cores.LutRound` (AES-256, encryption only: GCM never decrypts a block),
a round a cycle, so that the records keep up with the bytes (a byte a cycle; see
:class:`RecordCipher` for the figures). Over UDP the record layer has two, one opening the
requests and one sealing the replies, so that a record is opened while the reply before it is
sealed (:mod:`.session_records`).

Area (xc7a35t, :func:`aes_fpga.flow.synth.synthesize`, flattened, native Yosys)::

    python -c "from aes_fpga.appliance.gateware.session_record import RecordCipher as R; \
    from aes_fpga.flow.synth import synthesize as s; [print(c, d, s(R(max_bytes=1465, core=c, \
    ghash_digit=d)).total) for c, d in (('compact8', 8), ('lut-round', 8), ('lut-round', 16))]"

gives (2026-11-26) 2688 LUT, 2429 FF, 2 RAMB18 on the compact8 with the digit-8 GHASH (224
cycles a block: what the records had before), 3639 LUT, 2453 FF on the LutRound with it (15
cycles a block, the GHASH 17) and 3978 LUT, 2452 FF, no block RAM as built (15 and 9): 1290
LUT more than the compact8 (and two RAMB18 less) for a cipher 15 times as fast.

Checked byte for byte against :func:`~aes_fpga.appliance.session_spec.open_request` and
:func:`~aes_fpga.appliance.session_spec.seal_reply` in simulation
(``tests/test_session_record.py``).
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ...cores import Compact8, LutRound
from ...modes import ModeEngine
from ...params import Mode, Op
from ...stage import skid
from ..session_spec import COUNTER_BYTES, SESSION_ID_BYTES, SESSIONS_HELD

__all__ = ["RecordCipher", "record_start_layout", "RECORD_AAD_BYTES", "NONCE_BYTES"]

#: The most bytes of additional authenticated data a record has (a reply's: the 5-byte frame
#: header, the status, the session id and the counter).
RECORD_AAD_BYTES = 5 + 1 + SESSION_ID_BYTES + COUNTER_BYTES
#: A record nonce: session id || counter.
NONCE_BYTES = SESSION_ID_BYTES + COUNTER_BYTES

_B = 16
# The tag a block carries through the engine: its bytes to send (bits 0..4), whether its
# result is a decryption's verdict (bit 5), and whether it is the record's last (bit 6).
_TAG_WIDTH = 7
_VERDICT = 5
_FINAL = 6


def record_start_layout(held, max_bytes):
    """One record for :class:`RecordCipher`: ``decrypt`` (open a request record, else seal a
    reply), the session ``place``, the ``nonce`` (12 bytes, first most significant), the
    ``aad`` (:data:`RECORD_AAD_BYTES` bytes, first most significant, left-aligned: a shorter
    AAD leaves its low bytes unread), ``aad_len`` (17 to :data:`RECORD_AAD_BYTES`) and
    ``length``, the bytes to encrypt or decrypt (0 to ``max_bytes``)."""
    return data.StructLayout({
        "decrypt": 1, "place": range(held), "nonce": 8 * NONCE_BYTES,
        "aad": 8 * RECORD_AAD_BYTES, "aad_len": range(_B + 1, RECORD_AAD_BYTES + 1),
        "length": range(max_bytes + 1)})


class RecordCipher(wiring.Component):
    """AES-256-GCM of records, one at a time, bytes in and out.

    A record starts on ``start`` (:func:`record_start_layout`); its ``length`` bytes then come
    on ``i`` (a decryption's followed by the 16-byte tag to check) and the processed bytes
    leave on ``o`` (an encryption's followed by its 16-byte tag). A decryption ends with one
    beat on ``verdict``: ``ok`` when the tag matched (the engine compares all 16 bytes at once,
    XOR and OR-reduce: the time does not depend on them). ``start`` is taken when the record
    is done (its last byte or verdict out), so the next waits.

    The sessions' keys come in on ``key`` (slot ``2 p`` the request key of place ``p``,
    ``2 p + 1`` its reply key; AES-256).

    Latency: a cycle into the engine's input stage, the core's per block (LutRound, AES-256:
    15 cycles, one block at a time), then the bytes one per cycle through a registered stage
    (a cycle; ``o.ready`` ends at its flip-flops). Throughput: the bytes come
    in one per cycle while the engine's queue has room; the core takes a block every 15
    cycles and the LUT GHASH (8 bits a cycle) every 16, so a record's data go through at
    about a byte a cycle. Back-pressure on ``o`` or ``verdict`` holds the results (and in
    time the bytes in); nothing is lost.

    Parameters
    ----------
    held : int
        Session places (2 to 4).
    max_bytes : int
        The most bytes a record carries.
    gcm : str
        The GHASH variant of the engine (:class:`~aes_fpga.modes.ModeEngine`'s ``gcm``).
    core : str
        The AES-256 core: ``"lut-round"`` (the default, see above) or ``"compact8"`` (a
        :class:`~aes_fpga.cores.Compact8`: 224 cycles a block; for a device whose records
        need not keep up with a fast line).
    ghash_digit : int
        The LUT GHASH's digit (:class:`~aes_fpga.modes.ghash.GHash`): 16, a block every 9
        cycles, so that the core sets the pace; 8 takes 17 cycles a block (slower than the
        bytes) for about 450 LUT less. Beside the compact8 (224 cycles a block) a digit of 2
        (65 cycles) keeps up and is the smallest GHASH but for 1.
    """

    #: The cores a record cipher may be built on, by name.
    CORES = ("lut-round", "compact8")

    def __init__(self, *, held=SESSIONS_HELD, max_bytes=2048, gcm="lut", core="lut-round",
                 ghash_digit=16):
        if core not in self.CORES:
            raise ValueError(f"core: {core!r} is not allowed; choose from "
                             f"{', '.join(self.CORES)}")
        self.held, self.max_bytes = held, max_bytes
        options = {"key_slots": 2 * held, "key_sizes": (256,), "tag_width": 0}
        made = LutRound(decrypt=False, **options) if core == "lut-round" \
            else Compact8(registered_key_write=True, **options)
        self.engine = ModeEngine(made, tag_width=_TAG_WIDTH, gcm=gcm, ghash_digit=ghash_digit)
        super().__init__({
            "key": In(stream.Signature(self.engine.key.payload.shape())),
            "start": In(stream.Signature(record_start_layout(held, max_bytes))),
            "i": In(stream.Signature(8)),
            "o": Out(stream.Signature(8)),
            "verdict": Out(stream.Signature(data.StructLayout({"ok": 1}))),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.engine = me = self.engine
        wiring.connect(m, wiring.flipped(self.key), me.key)
        st = self.start.payload
        # The beats go to the engine through a registered stage, so that the start's and the
        # gathering's multiplexers end at flip-flops, not in the engine and its core.
        beats = stream.Signature(me.i.payload.shape()).create()
        skid(m, "engine_stage", beats, me.i)
        beat = beats.payload

        # ---- in: the first beat, the AAD, the bytes gathered into blocks, the final beat ----
        left = Signal(range(self.max_bytes + 1))     # data bytes still to come on ``i``
        tag_left = Signal(range(_B + 1))             # tag bytes (a decryption's) to come
        blk = Signal(8 * _B)
        nb = Signal(range(_B + 1))                   # bytes in ``blk``
        final_sent = Signal()
        final_due = Signal()                         # the final beat is to go
        full = Signal()                              # ``blk`` goes to the engine
        more = Signal()                              # data bytes still to come
        done = Signal()                              # the record's last result is out
        m.d.comb += [beat.mode.eq(Mode.GCM),
                     beat.op.eq(Mux(st.decrypt, Op.DECRYPT.value, Op.ENCRYPT.value)),
                     beat.slot.eq(Cat(~st.decrypt, st.place))]
        take = self.i.valid & self.i.ready
        with m.FSM():
            with m.State("IDLE"):
                with m.If(self.start.valid):
                    m.d.comb += [beats.valid.eq(1), beat.first.eq(1),
                                 beat.data.eq(Cat(Const(1, 32), st.nonce))]
                    with m.If(beats.ready):
                        m.d.sync += [left.eq(st.length), tag_left.eq(Mux(st.decrypt, _B, 0)),
                                     nb.eq(0), final_sent.eq(0), final_due.eq(0), full.eq(0),
                                     more.eq(st.length != 0)]
                        m.next = "AAD0"
            with m.State("AAD0"):
                aad_top = st.aad[-8 * _B:]
                m.d.comb += [beats.valid.eq(1), beat.aad.eq(1), beat.data.eq(aad_top),
                             beat.nbytes.eq(_B)]
                with m.If(beats.ready):
                    m.next = "AAD1"
            with m.State("AAD1"):
                rest = st.aad[:-8 * _B]
                m.d.comb += [beats.valid.eq(1), beat.aad.eq(1),
                             beat.data.eq(Cat(Const(0, 8 * _B - len(rest)), rest)),
                             beat.nbytes.eq(st.aad_len - _B)]
                with m.If(beats.ready):
                    m.next = "DATA"
            with m.State("DATA"):
                # A block goes to the engine when full, or with the last data byte (both
                # flags registers, set as the byte is taken: no counter compare on the
                # engine's valid or on ``i.ready``). The next block's first byte is taken in
                # the cycle a full one goes (the stage's ready is a flip-flop), so the bytes
                # come a byte a cycle.
                sent = full & beats.ready
                at = Mux(sent, 0, nb)
                m.d.comb += self.i.ready.eq((~full | beats.ready) & more)
                with m.If(full):
                    m.d.comb += [beats.valid.eq(1), beat.data.eq(blk), beat.nbytes.eq(nb),
                                 beat.tag.eq(nb)]
                    with m.If(beats.ready):
                        m.d.sync += [nb.eq(0), full.eq(0)]
                with m.If(take):
                    m.d.sync += [blk.word_select(~at[:4], 8).eq(self.i.payload),
                                 nb.eq(at + 1), left.eq(left - 1)]
                    with m.If((at == _B - 1) | (left == 1)):
                        m.d.sync += full.eq(1)
                    with m.If(left == 1):
                        m.d.sync += more.eq(0)
                with m.If(~full & ~more):
                    # (An encryption's final beat is due at once, a decryption's once its
                    # expected tag is in: a register, no count compare on the engine's valid.)
                    m.d.sync += final_due.eq(~st.decrypt)
                    m.next = "TAG"
            with m.State("TAG"):
                # A decryption's expected tag, gathered; then the final beat.
                m.d.comb += self.i.ready.eq(tag_left != 0)
                with m.If(take):
                    m.d.sync += [blk.word_select((tag_left - 1)[:4], 8).eq(self.i.payload),
                                 tag_left.eq(tag_left - 1)]
                    with m.If(tag_left == 1):
                        m.d.sync += final_due.eq(1)
                with m.If(final_due):
                    m.d.comb += [beats.valid.eq(1), beat.final.eq(1), beat.data.eq(blk),
                                 beat.nbytes.eq(_B),
                                 beat.tag.eq(Mux(st.decrypt, 1 << _VERDICT, _B) | 1 << _FINAL)]
                    with m.If(beats.ready):
                        m.d.sync += [final_sent.eq(1), final_due.eq(0)]
                with m.If(final_sent & done):
                    m.d.comb += self.start.ready.eq(1)
                    m.next = "IDLE"

        # ---- out: each result's bytes, the verdict --------------------------------------
        # The bytes leave through a registered stage: the consumer's ``ready`` (the seal's,
        # after its header count) ends at the stage's flip-flops instead of running on into
        # the result register's refill and the engine's output.
        out = stream.Signature(8).create()
        skid(m, "out_stage", out, wiring.flipped(self.o))
        res = Signal(8 * _B)
        res_left = Signal(range(_B + 1))
        res_final = Signal()
        ended = Signal()                             # the verdict or the last byte is out
        is_verdict = me.o.payload.tag[_VERDICT]
        fire = out.valid & out.ready
        m.d.comb += [out.valid.eq(res_left != 0), out.payload.eq(res[-8:]),
                     self.verdict.payload.ok.eq(me.o.payload.auth_ok)]
        with m.If(fire):
            m.d.sync += [res.eq(res << 8), res_left.eq(res_left - 1)]
        with m.If(is_verdict):
            m.d.comb += [self.verdict.valid.eq(me.o.valid), me.o.ready.eq(self.verdict.ready)]
        with m.Else():
            m.d.comb += me.o.ready.eq((res_left == 0) | (fire & (res_left == 1)))
            with m.If(me.o.valid & me.o.ready):
                m.d.sync += [res.eq(me.o.payload.data), res_left.eq(me.o.payload.tag[:5]),
                             res_final.eq(me.o.payload.tag[_FINAL])]
        # The record is done when its last result is out: the verdict taken, or the tag's
        # last byte sent, and every byte before it out of the result register and the stage
        # (whose valid, a flip-flop, is high from the cycle after a byte went in until the
        # last is taken).
        with m.If(self.verdict.valid & self.verdict.ready
                  | fire & (res_left == 1) & res_final):
            m.d.sync += ended.eq(1)
        with m.If(ended & (res_left == 0) & ~self.o.valid):
            m.d.sync += done.eq(1)
        with m.If(self.start.ready):
            m.d.sync += [done.eq(0), ended.eq(0)]
        return m
