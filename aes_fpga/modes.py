"""Block-cipher modes of operation around any core: ECB, CBC and CTR (SP 800-38A).

:class:`ModeEngine` sits between a producer of message blocks and a core with the common stream
interface (:mod:`aes_fpga.cores.interface`). Each block sent to the core is paired with the value
its result must be XORed with, kept in order in a FIFO:

======================  ==============================  ====================================
mode, op                block sent to the core          result XOR
======================  ==============================  ====================================
ECB, either             the data block                  0
CTR, either             the counter (ENCRYPT)           the data block
CBC, decrypt            the data block (DECRYPT)        the previous ciphertext (IV first)
CBC, encrypt            data XOR the chaining value     0; the result is the next chaining value
======================  ==============================  ====================================

So ECB, CTR and CBC decryption keep the core's pipeline full; CBC encryption is serial by
definition (each block needs the previous result) and has one block in flight. The CTR counter
is the full 128-bit block, incremented big-endian per block (SP 800-38A, B.1 with m = 128).
"""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from .params import Mode, Op

__all__ = ["Mode", "ModeEngine", "mode_request_layout"]


def mode_request_layout(key_slots, tag_width=0):
    """One beat of a message. A message is a packet: its ``first`` beat starts it and carries
    ``mode``, ``op`` and ``slot`` and, in ``data``, its IV (the CBC IV or the initial CTR
    counter block; ignored for ECB); each later beat is one block (``data``) of it, whose
    ``mode``, ``op`` and ``slot`` are ignored, with a ``tag`` that comes back with its
    result."""
    if not isinstance(tag_width, int) or not 0 <= tag_width <= 64:
        raise ValueError(f"tag_width: {tag_width!r} is out of range; allowed 0 to 64")
    return data.StructLayout({"data": 128, "first": 1, "mode": Mode, "op": Op,
                              "slot": range(key_slots), "tag": tag_width})


class ModeEngine(wiring.Component):
    """ECB/CBC/CTR around ``core`` (which it makes a submodule; its ``key`` stream is passed
    through as ``key``).

    Streams: ``i`` takes messages (:func:`mode_request_layout`: a ``first`` beat with the
    parameters and IV, then the blocks), ``o`` gives the processed blocks (``data``) in order,
    one per block (the ``first`` beat gives none). Messages are processed one after another: a
    ``first`` beat waits until every block of the previous message has left the core, so
    results never overtake each other even when messages use keys of different lengths; a
    message without blocks only sets the parameters and the chaining value.

    Throughput: the core's for ECB, CTR and CBC decryption (DRAB-LOCUS AES-128: one block per
    10 cycles sustained); one block per core latency for CBC encryption. Latency: the core's,
    plus nothing (the output XOR is combinational from the core's output).

    Back-pressure on ``o`` propagates into the core; nothing is lost.

    Parameters
    ----------
    core : a core with the common interface
    depth : int
        Blocks in flight at most (the FIFO of values the results are XORed with).
    tag_width : int
        Bits of ``tag`` each block carries to its result (kept beside the XOR values, so a
        few bits cost nothing where that FIFO's LUT-RAM has spare width).
    """

    def __init__(self, core, *, depth=16, tag_width=0):
        self.core = core
        self.depth = depth
        self.tag_width = tag_width
        key_slots = core.key_slots
        super().__init__({
            "key": In(stream.Signature(core.key.payload.shape())),
            "i": In(stream.Signature(mode_request_layout(key_slots, tag_width))),
            "o": Out(stream.Signature(data.StructLayout({"data": 128, "tag": tag_width}))),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.core = core = self.core
        wiring.connect(m, wiring.flipped(self.key), core.key)

        # What each block's result is XORed with, in the order the core returns results.
        m.submodules.pending = pending = fifo.SyncFIFO(width=128 + self.tag_width,
                                                        depth=self.depth)
        in_flight = Signal(range(self.depth + 1))

        # The message in progress, from its first beat.
        mode = Signal(Mode)
        op = Signal(Op)
        slot = Signal.like(core.i.payload.slot)
        chain = Signal(128)      # CBC: the chaining value; CTR: the next counter block

        req = self.i.payload
        is_ctr = mode == Mode.CTR
        is_cbc = mode == Mode.CBC
        cbc_enc = is_cbc & (op == Op.ENCRYPT)
        cbc_dec = is_cbc & (op == Op.DECRYPT)

        to_core = Mux(is_ctr, chain, Mux(cbc_enc, req.data ^ chain, req.data))
        xor_with = Mux(is_ctr, req.data, Mux(cbc_dec, chain, 0))

        # A first beat waits for the previous message to drain; a CBC-encrypt block waits for
        # the previous block's result; no block goes in without room for its XOR value.
        drained = in_flight == 0
        may_send = pending.w_rdy & (~cbc_enc | drained)
        starts = Signal()
        sent = Signal()
        m.d.comb += [
            core.i.payload.block.eq(to_core),
            core.i.payload.op.eq(Mux(is_ctr, Op.ENCRYPT, op)),
            core.i.payload.slot.eq(slot),
            core.i.valid.eq(self.i.valid & ~req.first & may_send),
            self.i.ready.eq(Mux(req.first, drained, core.i.ready & may_send)),
            starts.eq(self.i.valid & self.i.ready & req.first),
            sent.eq(core.i.valid & core.i.ready),
            pending.w_data.eq(Cat(xor_with, req.tag)),
            pending.w_en.eq(sent),
        ]
        with m.If(starts):
            m.d.sync += [mode.eq(req.mode), op.eq(req.op), slot.eq(req.slot),
                         chain.eq(req.data)]
        with m.If(sent & is_ctr):
            m.d.sync += chain.eq(chain + 1)
        with m.If(sent & cbc_dec):
            m.d.sync += chain.eq(req.data)

        result = core.o.payload.block ^ pending.r_data[:128]
        taken = Signal()
        m.d.comb += [
            self.o.payload.data.eq(result),
            self.o.payload.tag.eq(pending.r_data[128:]),
            self.o.valid.eq(core.o.valid),
            core.o.ready.eq(self.o.ready),
            taken.eq(core.o.valid & self.o.ready),
            pending.r_en.eq(taken),
        ]
        # CBC encryption: the ciphertext just produced chains into the next block.
        with m.If(taken & cbc_enc):
            m.d.sync += chain.eq(result)
        m.d.sync += in_flight.eq(in_flight + sent - taken)
        return m
