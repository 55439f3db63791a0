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

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from .params import Mode, Op

__all__ = ["Mode", "ModeEngine", "mode_request_layout"]


def mode_request_layout(key_slots):
    """One block of a message: ``first`` marks a message's first block and carries its ``iv``
    (the CBC IV or the initial CTR counter block); ``mode``, ``op`` and ``slot`` are taken from
    the first block and hold for the whole message."""
    return data.StructLayout({"data": 128, "first": 1, "iv": 128, "mode": Mode, "op": Op,
                              "slot": range(key_slots)})


class ModeEngine(wiring.Component):
    """ECB/CBC/CTR around ``core`` (which it makes a submodule; its ``key`` stream is passed
    through as ``key``).

    Streams: ``i`` takes message blocks (:func:`mode_request_layout`), ``o`` gives the
    processed blocks (``data``) in order. Messages are processed one after another: a first
    block waits until every block of the previous message has left the core, so results never
    overtake each other even when messages use keys of different lengths.

    Throughput: the core's for ECB, CTR and CBC decryption (DRAB-LOCUS AES-128: one block per
    10 cycles sustained); one block per core latency for CBC encryption. Latency: the core's,
    plus nothing (the output XOR is combinational from the core's output).

    Back-pressure on ``o`` propagates into the core; nothing is lost.
    """

    def __init__(self, core, *, depth=16):
        self.core = core
        self.depth = depth
        key_slots = core.key_slots
        super().__init__({
            "key": In(stream.Signature(core.key.payload.shape())),
            "i": In(stream.Signature(mode_request_layout(key_slots))),
            "o": Out(stream.Signature(data.StructLayout({"data": 128}))),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.core = core = self.core
        wiring.connect(m, wiring.flipped(self.key), core.key)

        # What each block's result is XORed with, in the order the core returns results.
        m.submodules.pending = pending = fifo.SyncFIFO(width=128, depth=self.depth)
        in_flight = Signal(range(self.depth + 1))

        mode = Signal(Mode)
        op = Signal(Op)
        slot = Signal.like(core.i.payload.slot)
        chain = Signal(128)      # CBC: the chaining value; CTR: the next counter block

        req = self.i.payload
        # The first block of a message brings its own parameters and IV.
        cur_mode = Mux(req.first, req.mode, mode)
        cur_op = Mux(req.first, req.op, op)
        cur_chain = Mux(req.first, req.iv, chain)

        is_ctr = cur_mode == Mode.CTR
        is_cbc = cur_mode == Mode.CBC
        cbc_enc = is_cbc & (cur_op == Op.ENCRYPT)
        cbc_dec = is_cbc & (cur_op == Op.DECRYPT)

        to_core = Mux(is_ctr, cur_chain, Mux(cbc_enc, req.data ^ cur_chain, req.data))
        xor_with = Mux(is_ctr, req.data, Mux(cbc_dec, cur_chain, 0))

        # A first block waits for the previous message to drain; a CBC-encrypt block waits for
        # the previous block's result; no block goes in without room for its XOR value.
        may_send = (pending.w_rdy
                    & ((~req.first & ~cbc_enc) | (in_flight == 0)))
        m.d.comb += [
            core.i.payload.block.eq(to_core),
            core.i.payload.op.eq(Mux(is_ctr, Op.ENCRYPT, cur_op)),
            core.i.payload.slot.eq(Mux(req.first, req.slot, slot)),
            core.i.valid.eq(self.i.valid & may_send),
            self.i.ready.eq(core.i.ready & may_send),
            pending.w_data.eq(xor_with),
            pending.w_en.eq(self.i.valid & self.i.ready),
        ]
        sent = Signal()
        m.d.comb += sent.eq(self.i.valid & self.i.ready)
        with m.If(sent):
            m.d.sync += [mode.eq(cur_mode), op.eq(cur_op),
                         slot.eq(Mux(req.first, req.slot, slot))]
            with m.If(is_ctr):
                m.d.sync += chain.eq(cur_chain + 1)
            with m.Elif(cbc_dec):
                m.d.sync += chain.eq(req.data)
            with m.Elif(req.first):
                m.d.sync += chain.eq(cur_chain)

        result = core.o.payload.block ^ pending.r_data
        taken = Signal()
        m.d.comb += [
            self.o.payload.data.eq(result),
            self.o.valid.eq(core.o.valid),
            core.o.ready.eq(self.o.ready),
            taken.eq(core.o.valid & self.o.ready),
            pending.r_en.eq(taken),
        ]
        # CBC encryption: the ciphertext just produced chains into the next block.
        with m.If(taken & (mode == Mode.CBC) & (op == Op.ENCRYPT)):
            m.d.sync += chain.eq(result)
        m.d.sync += in_flight.eq(in_flight + sent - taken)
        return m
