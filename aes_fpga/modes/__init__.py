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
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ..params import Mode, Op

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
        Blocks in flight at most (the FIFO of values the results are XORed with); a power of
        two.
    tag_width : int
        Bits of ``tag`` each block carries to its result (kept beside the XOR values, so a
        few bits cost nothing where that FIFO's LUT-RAM has spare width).
    """

    def __init__(self, core, *, depth=16, tag_width=0):
        self.core = core
        if not isinstance(depth, int) or depth < 2 or depth & (depth - 1):
            raise ValueError(f"depth: {depth!r} is not a power of two of at least 2")
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
        depth = self.depth

        # What each block's result is XORed with, in the order the core returns results: a
        # LUT-RAM queue with bare pointers. ``in_flight`` counts its entries (the blocks in the
        # core); ``room`` and ``drained`` are registered comparisons of it, updated from the
        # current value and the increments, so no counter compare sits on a valid/ready path.
        width = 128 + self.tag_width
        m.submodules.pending = pending = Memory(shape=width, depth=depth, init=[])
        p_w = pending.write_port()
        p_r = pending.read_port(domain="comb")
        p_wp = Signal(range(depth))
        p_rp = Signal(range(depth))
        in_flight = Signal(range(depth + 1))
        room = Signal(init=1)       # in_flight < depth
        drained = Signal(init=1)    # in_flight == 0

        # The message in progress, from its first beat.
        op = Signal(Op)
        slot = Signal.like(core.i.payload.slot)
        # CBC: the chaining value; CTR: the next counter block, as four 32-bit words with a
        # registered carry between them (a 128-bit increment is too long a carry chain for one
        # cycle). A carry still moving up holds the next block back; it moves one word per
        # cycle, so a block waits at most 3 cycles, once every 2**32 blocks.
        chain = Signal(128)
        carry = Signal(3)           # carry[n]: word n + 1 is still to be incremented

        req = self.i.payload
        is_ctr = Signal()
        cbc_enc = Signal()
        cbc_dec = Signal()

        to_core = Mux(is_ctr, chain, Mux(cbc_enc, req.data ^ chain, req.data))
        xor_with = Mux(is_ctr, req.data, Mux(cbc_dec, chain, 0))

        # A first beat waits for the previous message to drain; a CBC-encrypt block waits for
        # the previous block's result; no block goes in without room for its XOR value.
        may_send = Signal()
        m.d.comb += may_send.eq(room & (~cbc_enc | drained) & (carry == 0))
        starts = Signal()
        sent = Signal()
        m.d.comb += [
            core.i.payload.block.eq(to_core),
            core.i.payload.op.eq(Mux(is_ctr, Op.ENCRYPT, op)),
            core.i.payload.slot.eq(slot),
            core.i.valid.eq(self.i.valid & ~req.first & may_send),
            self.i.ready.eq(Mux(req.first, drained & (carry == 0), core.i.ready & may_send)),
            starts.eq(self.i.valid & self.i.ready & req.first),
            sent.eq(core.i.valid & core.i.ready),
            p_w.addr.eq(p_wp),
            p_w.data.eq(Cat(xor_with, req.tag)),
            p_w.en.eq(sent),
            p_r.addr.eq(p_rp),
        ]
        with m.If(starts):
            m.d.sync += [op.eq(req.op), slot.eq(req.slot),
                         is_ctr.eq(req.mode == Mode.CTR),
                         cbc_enc.eq((req.mode == Mode.CBC) & (req.op == Op.ENCRYPT)),
                         cbc_dec.eq((req.mode == Mode.CBC) & (req.op == Op.DECRYPT)),
                         chain.eq(req.data), carry.eq(0)]
        words = [chain[32 * n:32 * (n + 1)] for n in range(4)]
        with m.If(sent & is_ctr):
            low = Cat(words[0], 0) + 1
            m.d.sync += [words[0].eq(low[:32]), carry[0].eq(low[32])]
        for n in range(1, 4):
            with m.If(carry[n - 1]):
                up = Cat(words[n], 0) + 1
                m.d.sync += words[n].eq(up[:32])
                if n < 3:
                    m.d.sync += carry[n].eq(up[32])
                m.d.sync += carry[n - 1].eq(0)
        with m.If(sent & cbc_dec):
            m.d.sync += chain.eq(req.data)

        result = core.o.payload.block ^ p_r.data[:128]
        taken = Signal()
        m.d.comb += [
            self.o.payload.data.eq(result),
            self.o.payload.tag.eq(p_r.data[128:]),
            self.o.valid.eq(core.o.valid),
            core.o.ready.eq(self.o.ready),
            taken.eq(core.o.valid & self.o.ready),
        ]
        # CBC encryption: the ciphertext just produced chains into the next block.
        with m.If(taken & cbc_enc):
            m.d.sync += chain.eq(result)
        with m.If(sent):
            m.d.sync += p_wp.eq(p_wp + 1)
        with m.If(taken):
            m.d.sync += p_rp.eq(p_rp + 1)
        with m.If(sent & ~taken):
            m.d.sync += [in_flight.eq(in_flight + 1), room.eq(in_flight != depth - 1),
                         drained.eq(0)]
        with m.Elif(taken & ~sent):
            m.d.sync += [in_flight.eq(in_flight - 1), room.eq(1), drained.eq(in_flight == 1)]
        return m
