"""The T-table round module (§4.2 of the paper): four basic constructs make a 128-bit round,
eight blocks interleaved in its eight pipeline stages; :class:`TTableRound` is it behind the
key schedule."""

from fractions import Fraction

from amaranth.hdl import Cat, Const, Module, Mux, Signal

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

__all__ = ["TTableRoundDatapath", "TTableRound"]


class _RoundMetrics:
    """What the round core reports about itself."""

    #: Blocks the pipeline holds at once.
    blocks_in_flight = ROUND_STAGES

    def latency(self, key_bits):
        """Cycles from a request accepted to its result: ``8 Nr + 2`` (82 / 98 / 114)."""
        return ROUND_STAGES * KeySize.from_bits(key_bits).rounds + 2

    def blocks_per_cycle(self, key_bits):
        """Sustained throughput: 8 ring slots, each busy ``8 Nr`` cycles per block."""
        return Fraction(ROUND_STAGES, ROUND_STAGES * KeySize.from_bits(key_bits).rounds)


class TTableRoundDatapath(_RoundMetrics, TTableDatapath):
    """The T-table round module (§4.2 of the paper): four basic constructs make a 128-bit
    round, eight blocks interleaved in its eight pipeline stages.

    Round keys are written through ``rk`` (see
    :func:`aes_fpga.cores.interface.round_key_write_layout`). While ``lock`` is high no request
    for ``lock_slot`` is accepted (nor while ``rk`` is valid for that slot); ``rk`` is accepted
    only once no block of its key slot is in flight, and no request is accepted in a cycle that
    writes a round key (the write port also reads the initial key).

    Latency: ``8 Nr + 2`` cycles from acceptance to the result on ``o`` (82 / 98 / 114) when
    ``o`` is ready. Throughput: a block enters a ring slot that is empty or whose block leaves
    in the same cycle; a slot is busy for ``8 Nr`` cycles, so saturated traffic sustains 8
    blocks per ``8 Nr`` cycles (8 per 80 for AES-128). Results leave in completion order (in
    order for equal key lengths). Back-pressure: ``o`` is fed from a FIFO of ``fifo_depth``
    entries and a block is accepted only when its result has room, so nothing is lost.

    Parameters
    ----------
    key_slots : int
        Independent keys (1 to 64).
    tag_width : int
        Width of the opaque request tag (0 to 64).
    fifo_depth : int
        Output FIFO depth, at least 8 for full throughput.
    key_sizes : tuple of int
        Key lengths the round-key writes may carry; with one the round count is a constant.
    """

    RESOURCE_GROUPS = {"": "control", "columns": "datapath", "round_keys": "round keys",
                       "ofifo": "output fifo"}

    def elaborate(self, platform):
        m = Module()
        # The ring: stage[k] is the block whose row-0 address was k cycles ago.
        ring = RingControl(self, map(model.num_rounds, self.key_sizes))
        stage = ring.records(ROUND_STAGES)
        tail, leaving, free = shift_ring(m, ring, stage)
        ofifo = self.output_fifo(m)
        entry = admit(m, self, ring, stage, tail, leaving, free)
        m.submodules.round_keys = rkm = Module()
        m.submodules.columns = cm = Module()
        rk_mem = self._round_keys(m, rkm, ring, stage, entry)
        feedback, last_p = self._feedback(m, cm, entry, rk_mem)
        self._constructs(cm, ring, stage, feedback, last_p, rk_mem)
        self._results(m, ofifo, tail, leaving, entry, last_p)
        return m

    def _round_keys(self, m, rkm, ring, stage, entry):
        """The round-key memories, one per column, address ``{key slot, op, index}``: port a
        (with output register) reads the round key for the first lane; port b (no output
        register) reads the initial key of an entering block and takes the writes."""
        req, rk = self.i.payload, self.rk.payload
        key_init = [[0] * (self.key_slots * 32) for _ in range(4)]
        for slot, op, w in zero_key_writes(self.key_slots, self.key_sizes[0]):
            key_init[w["word"]][(slot << 5) | (op << 4) | w["index"]] = w["key"]
        rk_mem = [DualPortBRAM(width=32, depth=self.key_slots * 32, init=key_init[j],
                               out_reg=(True, False), writable=(False, True))
                  for j in range(4)]
        for j in range(4):
            rkm.submodules[f"rk{j}"] = rk_mem[j]
        # Lane 0's key register takes the key at c+3: address at c+1.
        s1 = stage[1]
        rk_write = entry.rk_write
        m.d.comb += rk_write.eq(self.rk.valid & self.rk.ready)
        for j in range(4):
            rkm.d.comb += [
                rk_mem[j].addr_a.eq(Cat(s1.rnd, s1.op, s1.kslot)),
                rk_mem[j].addr_b.eq(Mux(rk_write, Cat(rk.index, rk.op, rk.slot),
                                        Cat(Const(0, 4), req.op, req.slot))),
                rk_mem[j].wdata_b.eq(rk.key),
                rk_mem[j].we_b.eq(rk_write & (rk.word == j)),
            ]
        m.d.comb += self.rk.ready.eq(~entry.slot_busy.bit_select(rk.slot, 1))
        ring.track_nr(m, rk_write)
        return rk_mem

    def _feedback(self, m, cm, entry, rk_mem):
        """Each column's input to the next round at c: its last lane's output (``last_p``, to
        be driven), or for an entering block the block XOR the initial key (registered
        block, key read from port b)."""
        entering = Signal()
        blk = Signal(128)
        m.d.sync += entering.eq(entry.accept)
        with m.If(entry.accept):
            m.d.sync += blk.eq(self.i.payload.block)
        last_p = [Signal(32, name=f"col{j}_out") for j in range(4)]
        feedback = [Signal(32, name=f"col{j}_in") for j in range(4)]
        for j in range(4):
            col_in = blk.word_select(3 - j, 32)
            cm.d.comb += feedback[j].eq(Mux(entering, col_in ^ rk_mem[j].rdata_b, last_p[j]))
        return feedback, last_p

    def _constructs(self, cm, ring, stage, feedback, last_p, rk_mem):
        """The four basic constructs, column ``j`` driving ``last_p[j]``."""
        table = t_table()
        # Row k's byte of every column, delayed k cycles (the paper's 8/16/24-bit input
        # registers): delayed[k][m] is column m's row-k byte of the feedback k cycles ago.
        delayed = [[None] * 4 for _ in range(4)]
        for col in range(4):
            for k in range(4):
                byte = row_byte(feedback[col], k)
                for d in range(k):
                    r = Signal(8, name=f"col{col}_row{k}_d{d}")
                    cm.d.sync += r.eq(byte)
                    byte = r
                delayed[k][col] = byte
        for j in range(4):
            # Row k's address byte at c+k: from column j+k (cipher) or j-k (inverse cipher),
            # chosen after the delay registers so the switch is the one LUT before the address.
            addresses = []
            for k in range(4):
                fwd, inv = delayed[k][(j + k) % 4], delayed[k][(j - k) % 4]
                sk = stage[k]
                addresses.append(Cat(fwd if fwd is inv else Mux(sk.op, inv, fwd),
                                     sk.rnd == ring.nr_of(sk), sk.op))
            cm.d.comb += last_p[j].eq(
                basic_construct(cm, f"col{j}_", table, addresses, rk_mem[j].rdata_a))

    def _results(self, m, ofifo, tail, leaving, entry, last_p):
        """The leaving block's columns, at c (one cycle after ``leaving``), into the FIFO."""
        exit_tag = Signal(self.tag_width)
        m.d.sync += [entry.exit_now.eq(leaving), exit_tag.eq(tail.tag),
                     entry.exit_kslot.eq(tail.kslot)]
        self.write_results(m, ofifo, Cat(*reversed(last_p)), exit_tag, entry.exit_now)


class TTableRound(_RoundMetrics, WithKeySchedule):
    """The T-table round core: :class:`~aes_fpga.cores.key_schedule.KeySchedule` in front of
    :class:`TTableRoundDatapath`, behind the common core interface (``key``, ``i``, ``o``).

    Latency ``8 Nr + 2`` cycles (82 / 98 / 114); 8 blocks in flight, so saturated traffic
    sustains 8 blocks per ``8 Nr`` cycles. AES-128/192/256, encrypt and decrypt, key slots
    interleave block by block. Key load: :func:`~aes_fpga.cores.key_schedule.key_load_cycles`
    after the slot's blocks have drained; no request is accepted in a cycle writing a round
    key. Results are matched by ``tag``; equal key lengths leave in request order.

    Parameters
    ----------
    key_slots : int
        Independent keys, 1 to 64.
    key_sizes : tuple of int
        Supported key lengths.
    tag_width : int
        Bits of the opaque request tag (0 to 64).
    fifo_depth : int
        Output FIFO depth (at least 8 for full throughput).
    """

    DATAPATH = TTableRoundDatapath
