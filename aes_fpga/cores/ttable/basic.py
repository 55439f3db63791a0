"""The T-table basic module (§4.1 of the paper): one basic construct computes one 32-bit column
per cycle, two blocks interleaved; :class:`TTableBasic` is it behind the key schedule."""

from fractions import Fraction

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal

from ... import model
from ...params import KeySize
from ...primitives import DualPortBRAM
from ..key_schedule import WithKeySchedule
from ..ring import RingControl
from .common import (
    TTableDatapath,
    admit,
    shift_ring,
    zero_key_writes,
)
from .construct import ROUND_STAGES, basic_construct, row_byte, t_table

__all__ = ["TTableBasicDatapath", "TTableBasic"]


class _BasicMetrics:
    """What the basic core reports about itself."""

    #: Blocks the pipeline holds at once.
    blocks_in_flight = 2

    def latency(self, key_bits):
        """Cycles from a request accepted to its result: ``8 Nr + 6`` (86 / 102 / 118)."""
        return ROUND_STAGES * KeySize.from_bits(key_bits).rounds + 6

    def blocks_per_cycle(self, key_bits):
        """Sustained throughput: two blocks interleaved, each ``8 Nr`` cycles."""
        return Fraction(2, ROUND_STAGES * KeySize.from_bits(key_bits).rounds)


class TTableBasicDatapath(_BasicMetrics, TTableDatapath):
    """The T-table basic module (§4.1 of the paper): one basic construct computes one 32-bit
    column per cycle, two blocks interleaved in its eight pipeline stages.

    A block's columns enter the construct on four consecutive cycles; row ``k``'s lookup of
    column ``j`` happens ``k`` cycles after row 0's, so its byte comes from column ``j + k``
    either as it leaves the last lane (``j + k < 4``) or four cycles after (the same block's
    column wrapped round): per row an 8-bit 2:1 switch and a 4-cycle delay line. Every
    block RAM port serves one row, so ``T_k`` is ``T0`` rotated by routing: the paper's 2:1
    rotation multiplexer and its ``T2`` copy are not needed. The inverse cipher keeps the
    cipher's routing by holding its state with the columns in reverse order (column ``-j``
    in place ``j``): the input and output words are taken and placed in that order, and the
    decryption round keys are stored with their words reversed.

    Latency ``8 Nr + 6`` cycles (86 / 102 / 118): the output register collects the last
    round's four columns. Throughput: two ring slots, each busy ``8 Nr`` cycles, so 2 blocks
    per ``8 Nr`` cycles. Round keys, locking and back-pressure as in
    :class:`~aes_fpga.cores.ttable.round.TTableRoundDatapath` (the round-key memory is one
    32-bit block RAM word per column, address ``{slot, op, index, word}``).
    """

    RESOURCE_GROUPS = {"": "control", "column": "datapath", "round_keys": "round keys",
                       "ofifo": "output fifo"}

    def elaborate(self, platform):
        m = Module()
        # The ring: stage[k] is the block whose column 0 was at row 0 k cycles ago; only the
        # places met at phase 0 (two of the eight) ever hold a block.
        ring = RingControl(self, map(model.num_rounds, self.key_sizes))
        stage = ring.records(ROUND_STAGES)
        phase = Signal(2)          # the column at row 0 now
        m.d.sync += phase.eq(phase + 1)
        tail, leaving, free = shift_ring(m, ring, stage)
        ofifo = self.output_fifo(m)
        # Entry at phase 3, so the block's column 0 is at row 0 at phase 0.
        entry = admit(m, self, ring, stage, tail, leaving, (phase == 3) & free)
        entering = Signal(4)       # entering[j]: column j of a new block enters now
        m.d.sync += entering.eq(Cat(entry.accept, entering[:3]))
        m.submodules.round_keys = rkm = Module()
        m.submodules.column = cm = Module()
        mem, row0, ent_op = self._round_keys(m, rkm, ring, stage, phase, entry, entering)
        last_p = self._construct(m, cm, ring, phase, entry, entering, mem, row0, ent_op)
        self._results(m, ofifo, tail, leaving, entry, last_p)
        return m

    def _round_keys(self, m, rkm, ring, stage, phase, entry, entering):
        """The round-key memory, address ``{slot, op, index, word}``, decryption words stored
        reversed: port a (with output register) reads the key of the column at row 0 for the
        first lane; port b (no output register) reads the initial key of an entering block's
        column (one cycle ahead) and takes the writes, which wait while a block enters.

        Returns the memory, the record of the block at row 0 now, and the entering block's
        op."""
        req, rk = self.i.payload, self.rk.payload
        init = [0] * (self.key_slots * 128)
        for slot, op, w in zero_key_writes(self.key_slots, self.key_sizes[0]):
            place = (-w["word"]) % 4 if op else w["word"]
            init[(slot << 7) | (op << 6) | (w["index"] << 2) | place] = w["key"]
        mem = DualPortBRAM(width=32, depth=self.key_slots * 128, init=init,
                           out_reg=(True, False), writable=(False, True))
        rkm.submodules.mem = mem
        # The block at row 0 now, and its column; lane 0's key register takes the key 3 cycles
        # later, so the address goes out one cycle later (port a: 2 cycles).
        layout = ring.layout
        row0 = Signal(layout)
        m.d.comb += row0.eq(Array(stage[:4])[phase])
        key_rec = Signal(layout)
        key_word = Signal(2)
        m.d.sync += [key_rec.eq(row0), key_word.eq(phase)]
        # Port b: the initial key of an entering block's column (one cycle ahead), or a write.
        ent_op = Signal()
        ent_slot = Signal(self.slot_bits)
        accept, rk_write = entry.accept, entry.rk_write
        with m.If(accept):
            m.d.sync += [ent_op.eq(req.op), ent_slot.eq(req.slot)]
        wplace = Mux(rk.op, -rk.word, rk.word)[:2]
        k0_addr = Mux(accept, Cat(Const(0, 2), Const(0, 4), req.op, req.slot),
                      Cat((phase + 1)[:2], Const(0, 4), ent_op, ent_slot))
        rkm.d.comb += [
            mem.addr_a.eq(Cat(key_word, key_rec.rnd, key_rec.op, key_rec.kslot)),
            mem.addr_b.eq(Mux(rk_write, Cat(wplace, rk.index, rk.op, rk.slot), k0_addr)),
            mem.wdata_b.eq(rk.key),
            mem.we_b.eq(rk_write),
        ]
        m.d.comb += [self.rk.ready.eq(~entry.slot_busy.bit_select(rk.slot, 1)
                                      & ~entering[:3].any()),
                     rk_write.eq(self.rk.valid & self.rk.ready)]
        ring.track_nr(m, rk_write)
        return mem, row0, ent_op

    def _construct(self, m, cm, ring, phase, entry, entering, mem, row0, ent_op):
        """The basic construct: its input is the last lane's output, or an entering block's
        column XOR its initial key; row ``k``'s byte comes from the column ``k`` places on,
        straight from the input or, wrapped round, four cycles later. Returns the column
        leaving the last lane."""
        blk = Signal(128)
        with m.If(entry.accept):
            m.d.sync += blk.eq(self.i.payload.block)
        last_p = Signal(32)
        feedback = Signal(32)
        # Column place j of an entering block holds its column j (cipher) or -j (inverse).
        in_col = Mux(ent_op, -phase, phase)[:2]
        cm.d.comb += feedback.eq(Mux(entering.any(),
                                     blk.word_select(~in_col, 32) ^ mem.rdata_b, last_p))
        # Control of the column at row 0 now: op and last-round bit, delayed k for row k.
        ctl = Signal(2)
        m.d.comb += ctl.eq(Cat(row0.rnd == ring.nr_of(row0), row0.op))
        addresses = []
        for k in range(4):
            byte = row_byte(feedback, k)
            if k:
                delayed = byte
                for d in range(4):
                    r = Signal(8, name=f"row{k}_d{d}")
                    cm.d.sync += r.eq(delayed)
                    delayed = r
                byte = Mux(phase < k, delayed, byte)
            c = ctl
            for d in range(k):
                r = Signal(2, name=f"row{k}_ctl{d}")
                m.d.sync += r.eq(c)
                c = r
            addresses.append(Cat(byte, c))
        cm.d.comb += last_p.eq(basic_construct(cm, "", t_table(), addresses, mem.rdata_a))
        return last_p

    def _results(self, m, ofifo, tail, leaving, entry, last_p):
        """The leaving block's columns leave the last lane at phases 0..3 into the output
        register, in reverse order for the inverse cipher, and then into the FIFO."""
        exiting = Signal(4)
        ex_op = Signal()
        ex_tag = Signal(self.tag_width)
        ex_kslot = Signal(self.slot_bits)
        m.d.sync += exiting.eq(Cat(leaving, exiting[:3]))
        with m.If(leaving):
            m.d.sync += [ex_op.eq(tail.op), ex_tag.eq(tail.tag), ex_kslot.eq(tail.kslot)]
        out = [Signal(32, name=f"out{j}") for j in range(4)]
        for j in range(4):
            inv_j = (-j) % 4
            with m.If(exiting[j]):
                with m.If(ex_op):
                    m.d.sync += out[inv_j].eq(last_p)
                with m.Else():
                    m.d.sync += out[j].eq(last_p)
        m.d.sync += [entry.exit_now.eq(exiting[3]), entry.exit_kslot.eq(ex_kslot)]
        out_tag = Signal(self.tag_width)
        m.d.sync += out_tag.eq(ex_tag)
        self.write_results(m, ofifo, Cat(*reversed(out)), out_tag, entry.exit_now)


class TTableBasic(_BasicMetrics, WithKeySchedule):
    """The T-table basic core: :class:`~aes_fpga.cores.key_schedule.KeySchedule` in front of
    :class:`TTableBasicDatapath`, behind the common core interface (``key``, ``i``, ``o``).

    Latency ``8 Nr + 6`` cycles (86 / 102 / 118); two blocks in flight, so saturated traffic
    sustains 2 blocks per ``8 Nr`` cycles. AES-128/192/256, encrypt and decrypt, key slots
    interleave block by block; key loading as in
    :class:`~aes_fpga.cores.ttable.round.TTableRound`.

    Parameters
    ----------
    key_slots, key_sizes, tag_width, fifo_depth
        As for :class:`~aes_fpga.cores.ttable.round.TTableRound` (``fifo_depth`` at least 2
        for full throughput).
    """

    DATAPATH = TTableBasicDatapath
