"""The T-table unrolled module (§4.2 of the paper): round stages of four basic constructs one
after the other, a new block every cycle; :class:`TTableUnrolled` is it behind the key
schedule."""

from fractions import Fraction
from types import SimpleNamespace

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib.memory import Memory

from ... import model
from ...params import KeySize
from ...primitives import DualPortBRAM
from ..key_schedule import WithKeySchedule
from ..ring import RingControl
from .common import TTableDatapath
from .construct import ROUND_STAGES, basic_construct, row_byte, t_table

__all__ = ["TTableUnrolledDatapath", "TTableUnrolled"]


def _unrolled_plan(key_sizes, unroll):
    """Per round count: (stage a block enters at, passes through the stages)."""
    plan = {}
    for bits in key_sizes:
        nr = model.num_rounds(bits)
        enter = (-nr) % unroll
        plan[nr] = (enter, (nr + enter) // unroll)
    return plan


class TTableUnrolledDatapath(TTableDatapath):
    """The T-table unrolled module (§4.2 of the paper): ``unroll`` round stages, each four
    basic constructs with their tables fixed, one after the other.

    A stage takes a new block every cycle: with ``unroll`` equal to the round count the core
    sustains one block per cycle. With fewer stages a block passes the stages several times;
    a block with ``Nr`` rounds enters at stage ``-Nr mod unroll``, so that its last round is
    always the last stage's (with several key lengths the full unroll is the longest key's
    round count, and shorter keys enter further down). Each stage holds its round key per
    key slot and op (and pass) in LUT RAM: the keys are fixed per slot, written through
    ``rk`` like the other cores'. As in
    :class:`~aes_fpga.cores.ttable.basic.TTableBasicDatapath`, the inverse cipher keeps the
    cipher's routing by holding its columns in reverse order (a 2:1 switch of columns 1 and
    3 on the way in and out).

    Each stage keeps the eight pipeline stages of the round module: the paper's unrolled
    variant drops the fabric register between block RAM and DSP (70 cycles for AES-128), but
    here that register is the lane's second input register, inside the DSP48E1, so dropping
    it would save no flip-flop.

    Latency ``8 Nr + 2`` cycles. Throughput: a block enters when its entry stage's input is
    free; ``1 / passes`` blocks per cycle (1 for a full unroll), given an output FIFO that holds
    every block in flight (the default ``fifo_depth``, ``8 unroll + 4``; a smaller one caps
    the blocks in flight at about its depth). Locking and back-pressure as in
    :class:`~aes_fpga.cores.ttable.round.TTableRoundDatapath`, but round-key writes hold off
    no request (they go to LUT RAM write ports of their own), ``rk`` is ready one cycle after
    the last block of its slot has left the stages, and a stage's round key lands in its
    memory one cycle after the transfer. Results of equal key lengths leave in order.

    Every register-to-register path is at most two LUTs deep in the 7-series netlist with one
    key length and slot (``tests/test_core_depth.py``): the terms of ``i.ready`` are
    flip-flops, and the round-key writes are decoded into registers.

    Parameters
    ----------
    unroll : int or None
        Round stages (1 to 14); None: the longest supported key's round count (a full unroll).
    key_slots, tag_width, fifo_depth, key_sizes
        As for :class:`~aes_fpga.cores.ttable.round.TTableRoundDatapath`.
    """

    RESOURCE_GROUPS = {"": "control", "stages": "datapath", "round_keys": "round keys",
                       "ofifo": "output fifo"}

    def __init__(self, *, key_slots=1, tag_width=8, fifo_depth=None, key_sizes=(128, 192, 256),
                 unroll=None):
        super().__init__(key_slots=key_slots, tag_width=tag_width, fifo_depth=fifo_depth,
                         key_sizes=key_sizes)
        longest = model.num_rounds(self.key_sizes[-1])
        if unroll is None:
            unroll = longest
        if not isinstance(unroll, int) or not 1 <= unroll <= longest:
            self._MustUse__used = True
            raise ValueError(f"unroll: {unroll!r} is out of range; allowed 1 to {longest}")
        self.unroll = unroll
        self.plan = _unrolled_plan(self.key_sizes, unroll)
        # A block is accepted only when its result has room: the FIFO must hold every block
        # in flight, and the few on their way out, for one block per cycle.
        self.fifo_depth = ROUND_STAGES * unroll + 4 if fifo_depth is None else fifo_depth

    @property
    def blocks_in_flight(self):
        return ROUND_STAGES * self.unroll

    def latency(self, key_bits):
        """Cycles from a request accepted to its result: ``8 Nr + 2``."""
        return ROUND_STAGES * KeySize.from_bits(key_bits).rounds + 2

    def blocks_per_cycle(self, key_bits):
        """Sustained throughput: one block per cycle per pass, ``1 / passes``."""
        _, passes = self.plan[KeySize.from_bits(key_bits).rounds]
        return Fraction(1, passes)

    @property
    def pass_bits(self):
        """Width of a block's pass counter."""
        return max(1, (max(p for _, p in self.plan.values()) - 1).bit_length())

    def elaborate(self, platform):
        m = Module()
        u, n = self.unroll, ROUND_STAGES
        ring = RingControl(self, self.plan, counter=("pass_", self.pass_bits))
        taps = self._records(m, ring)
        # The block at the end of the last stage leaves after its last pass.
        last_out = taps[u - 1][n - 1]
        leaving = Signal()
        m.d.comb += leaving.eq(last_out.valid & self._final_pass(ring, last_out))
        ofifo = self.output_fifo(m)
        entry = self._admission(m, ring, taps)
        self._enter(m, ring, taps, leaving, entry)
        m.submodules.round_keys = rkm = Module()
        m.submodules.stages = sm = Module()
        write = self._key_writes(m, ring, entry)
        self._first_keys(rkm, entry, write)
        mems = self._stage_keys(rkm, taps, write)
        ring.track_nr(m, entry.rk_write)
        outs = self._stages(sm, ring, taps, entry, mems)
        self._results(m, ofifo, last_out, leaving, entry, outs)
        return m

    def _final_pass(self, ring, rec):
        """The block of record ``rec`` is in its last pass through the stages."""
        nr = ring.nr_of(rec)
        return Cat(*[(nr == r) & (rec.pass_ == p - 1) for r, (_, p) in self.plan.items()]
                   ).any()

    def _records(self, m, ring):
        """The blocks' records: ``taps[s][k]`` is the record that entered stage ``s`` (as
        ``taps[s][0]``) ``k`` cycles ago."""
        rec_in = [Signal(ring.layout, name=f"rec_in{s}") for s in range(self.unroll)]
        taps = []
        for s in range(self.unroll):
            line = [rec_in[s]]
            for k in range(1, ROUND_STAGES):
                r = Signal(ring.layout, name=f"rec{s}_{k}")
                m.d.sync += r.eq(line[-1])
                line.append(r)
            taps.append(line)
        return taps

    def _admission(self, m, ring, taps):
        """Whether the request on ``i`` is taken: its entry stage's input is free (no block
        arrives at it next, or the one arriving leaves), its key slot is not locked and its
        result will have room in the output FIFO. Every term of ``i.ready`` is a flip-flop
        (or, with several key lengths or slots, a lookup by the request), so ``accept`` is
        one LUT and what it drives at most one more.

        Returns
        -------
        SimpleNamespace
            ``accept``, ``req_nr`` and ``req_stage`` (the request's round count and entry
            stage), and, to be driven, ``rk_write`` (a round-key write is accepted now),
            ``exit_now`` (a result goes into the output FIFO now).
        """
        u, n = self.unroll, ROUND_STAGES
        req = self.i.payload
        accept = Signal()
        exit_now = Signal()
        rk_write = Signal()
        slot_locked = Signal()
        req_nr = Signal(4)
        req_stage = Signal(range(u))
        enter_stage = Array(Const(self.plan.get(r, (0, 1))[0], range(u)) for r in range(16))
        m.d.comb += [req_nr.eq(ring.nr_of_slot(req.slot)),
                     req_stage.eq(enter_stage[req_nr])]
        # free[s]: stage s's input is free in this cycle (no block arrives at it, or the one
        # arriving leaves), registered from the record one cycle before it arrives.
        free = Signal(u, init=(1 << u) - 1)
        for s in range(u):
            pre = taps[s - 1][n - 2] if s else taps[u - 1][n - 2]
            m.d.sync += free[s].eq(~pre.valid | (self._final_pass(ring, pre) if s == 0 else 0))
        full = ring.output_full(m, accept)
        m.d.comb += [
            slot_locked.eq(ring.locked()),
            self.i.ready.eq(free.bit_select(req_stage, 1) & ~slot_locked & ~full),
            accept.eq(self.i.valid & self.i.ready),
        ]
        return SimpleNamespace(accept=accept, req_nr=req_nr, req_stage=req_stage,
                               rk_write=rk_write, exit_now=exit_now)

    def _enter(self, m, ring, taps, leaving, entry):
        """A stage's input record: an accepted block's (at its entry stage), else what the
        stage before (the last, for stage 0) passes on, with stage 0 counting the passes and
        emptying the place of a block that leaves. The entering block XOR its initial key
        (``first_key``, read as the request is accepted) is registered (``ent_blk``): the
        entry stages take it through their input switch alone (``entering``, one bit a
        stage). A key slot is busy (``slot_busy``) while a block of it is in the stages
        (accepted, its result, of key slot ``exit_kslot``, not yet in the FIFO). These are
        added to ``entry``."""
        u, n = self.unroll, ROUND_STAGES
        req = self.i.payload
        accept, req_stage = entry.accept, entry.req_stage
        rec_in = [taps[s][0] for s in range(u)]
        # What reaches each stage's input next cycle (taps[s-1][7] is at c+7).
        arriving = [taps[s - 1][n - 1] if s else taps[u - 1][n - 1] for s in range(u)]
        entering = Signal(u)
        ent_blk = Signal(128)
        first_key = Signal(128)
        with m.If(accept):
            m.d.sync += [ent_blk.eq(Mux(req.op, Cat(req.block.word_select(2, 32),
                                                    req.block.word_select(1, 32),
                                                    req.block.word_select(0, 32),
                                                    req.block.word_select(3, 32)),
                                        req.block) ^ first_key)]
        for s in range(u):
            m.d.sync += entering[s].eq(accept & (req_stage == s))
            arr = arriving[s]
            with m.If(accept & (req_stage == s)):
                m.d.sync += [rec_in[s].valid.eq(1), rec_in[s].op.eq(req.op),
                             rec_in[s].pass_.eq(0), rec_in[s].kslot.eq(req.slot),
                             rec_in[s].tag.eq(req.tag)]
                if ring.fixed_nr is None:
                    m.d.sync += rec_in[s].nr.eq(entry.req_nr)
            with m.Else():
                m.d.sync += rec_in[s].eq(arr)
                if s == 0:
                    with m.If(leaving):
                        m.d.sync += rec_in[s].valid.eq(0)
                    with m.Else():
                        m.d.sync += rec_in[s].pass_.eq(arr.pass_ + 1)
        exit_kslot = Signal(self.slot_bits)
        slot_busy = ring.slots_busy(m, accept, entry.exit_now, exit_kslot)
        entry.entering, entry.ent_blk, entry.first_key = entering, ent_blk, first_key
        entry.exit_kslot, entry.slot_busy = exit_kslot, slot_busy

    def _key_writes(self, m, ring, entry):
        """Round-key writes, registered. Round key ``i >= 1`` is added by stage ``(i + e - 1)
        mod unroll`` in pass ``(i + e - 1) // unroll``: a table of ``{nr, index}`` (of the
        index alone for one round count), not a division, and the write is registered
        (decoded place, address and word), so no LUT RAM write pin is more than one LUT from
        a flip-flop. A write lands one cycle after its transfer; no block of its slot reads
        the stage keys before then (the slot is locked while ``rk`` is valid for it, and a
        block's first stage-key read is cycles after its acceptance).

        Returns
        -------
        SimpleNamespace
            ``place`` (the column the word is added to, now) and the registered write:
            ``main`` (a round key of index >= 1), ``stage`` (one-hot), ``pass_``,
            ``place``, ``op``, ``slot``, ``key``.
        """
        u, pbits, fixed_nr = self.unroll, self.pass_bits, ring.fixed_nr
        rk, rk_write = self.rk.payload, entry.rk_write
        m.d.comb += rk_write.eq(self.rk.valid & self.rk.ready)
        m.d.comb += self.rk.ready.eq(~entry.slot_busy.bit_select(rk.slot, 1))
        keys = ([(i, fixed_nr) for i in range(16)] if fixed_nr is not None
                else [(i, nr) for nr in range(16) for i in range(16)])
        index_nr = rk.index if fixed_nr is not None else Cat(rk.index, rk.nr)
        places = [max(i + self.plan.get(nr, (0, 1))[0] - 1, 0) for i, nr in keys]
        w_place = Mux(rk.op, -rk.word, rk.word)[:2]
        wr_main = Signal()          # a round key of index >= 1 for the stage(s) in wr_stage
        wr_stage = Signal(u)        # one-hot
        wr_pass = Signal(pbits)
        wr_place = Signal(2)        # the column the word is added to
        wr_op = Signal()
        wr_slot = Signal.like(rk.slot)
        wr_key = Signal(32)
        m.d.sync += [
            wr_main.eq(rk_write & (rk.index != 0)),
            wr_stage.eq(Array(Const(1 << (p % u), u) for p in places)[index_nr]),
            wr_pass.eq(Array(Const((p // u) % (1 << pbits), pbits) for p in places)[index_nr]),
            wr_place.eq(w_place),
            wr_op.eq(rk.op), wr_slot.eq(rk.slot), wr_key.eq(rk.key),
        ]
        return SimpleNamespace(w_place=w_place, main=wr_main, stage=wr_stage, pass_=wr_pass,
                               place=wr_place, op=wr_op, slot=wr_slot, key=wr_key)

    def _first_keys(self, rkm, entry, write):
        """The initial key, per column ``{slot, op}`` in LUT RAM: read at the request
        (asynchronous read) into ``first_key``, and written straight from ``rk`` (a request
        for the slot is locked out while the write is on ``rk``)."""
        rk, req = self.rk.payload, self.i.payload
        first = [Memory(shape=unsigned(32), depth=self.key_slots * 2, init=[])
                 for _ in range(4)]
        first_words = []
        for j in range(4):
            rkm.submodules[f"first{j}"] = first[j]
            wp = first[j].write_port()
            rp = first[j].read_port(domain="comb")
            rkm.d.comb += [wp.addr.eq(Cat(rk.op, rk.slot)), wp.data.eq(rk.key),
                           wp.en.eq(entry.rk_write & (rk.index == 0) & (write.w_place == j)),
                           rp.addr.eq(Cat(req.op, req.slot))]
            first_words.append(rp.data)
        rkm.d.comb += entry.first_key.eq(Cat(*reversed(first_words)))

    def _stage_keys(self, rkm, taps, write):
        """The round keys of each stage and column, ``{slot, op, pass}`` in LUT RAM, read for
        the first lane (address with the record 2 cycles after the stage's input) and
        written from the registered write. Returns them as ``mems[stage][column]``."""
        depth = self.key_slots * 2 * (1 << self.pass_bits)
        mems = [[DualPortBRAM(width=32, depth=depth, out_reg=False, writable=(False, True),
                              style="distributed") for _ in range(4)]
                for _ in range(self.unroll)]
        for j in range(4):
            for s in range(self.unroll):
                mem = mems[s][j]
                rkm.submodules[f"s{s}_rk{j}"] = mem
                tap = taps[s][2]
                rkm.d.comb += [mem.addr_a.eq(Cat(tap.pass_, tap.op, tap.kslot)),
                               mem.addr_b.eq(Cat(write.pass_, write.op, write.slot)),
                               mem.wdata_b.eq(write.key),
                               mem.we_b.eq(write.main & write.stage[s] & (write.place == j))]
        return mems

    def _stages(self, sm, ring, taps, entry, mems):
        """The round stages, four basic constructs each: a stage's input is the stage
        before's output (the last's, for stage 0), or at an entry stage the entering block;
        only the last stage looks up the last-round table. Returns their outputs,
        ``outs[stage][column]``."""
        u = self.unroll
        table = t_table()
        entry_stages = sorted({e for e, _ in self.plan.values()})
        outs = [[Signal(32, name=f"s{s}_col{j}_out") for j in range(4)] for s in range(u)]
        for s in range(u):
            feedback = []
            for j in range(4):
                prev = outs[s - 1][j] if s else outs[u - 1][j]
                f = Signal(32, name=f"s{s}_col{j}_in")
                feedback.append(f)
                if s in entry_stages:
                    sm.d.comb += f.eq(Mux(entry.entering[s],
                                          entry.ent_blk.word_select(3 - j, 32), prev))
                else:
                    sm.d.comb += f.eq(prev)
            for j in range(4):
                addresses = []
                for k in range(4):
                    byte = row_byte(feedback[(j + k) % 4], k)
                    for d in range(k):
                        r = Signal(8, name=f"s{s}_col{j}_row{k}_d{d}")
                        sm.d.sync += r.eq(byte)
                        byte = r
                    tap = taps[s][k]
                    last = self._final_pass(ring, tap) if s == u - 1 else Const(0, 1)
                    addresses.append(Cat(byte, last, tap.op))
                sm.d.comb += outs[s][j].eq(
                    basic_construct(sm, f"s{s}_col{j}_", table, addresses, mems[s][j].rdata_a))
        return outs

    def _results(self, m, ofifo, last_out, leaving, entry, outs):
        """The leaving block, its columns put back in order for the inverse cipher, into the
        output FIFO one cycle after ``leaving``."""
        exit_tag = Signal(self.tag_width)
        exit_op = Signal()
        m.d.sync += [entry.exit_now.eq(leaving), exit_tag.eq(last_out.tag),
                     entry.exit_kslot.eq(last_out.kslot), exit_op.eq(last_out.op)]
        res = outs[self.unroll - 1]
        block = Mux(exit_op, Cat(res[1], res[2], res[3], res[0]), Cat(res[3], res[2], res[1],
                                                                       res[0]))
        self.write_results(m, ofifo, block, exit_tag, entry.exit_now)


class TTableUnrolled(WithKeySchedule):
    """The T-table unrolled core: :class:`~aes_fpga.cores.key_schedule.KeySchedule` in front
    of :class:`TTableUnrolledDatapath`, behind the common core interface (``key``, ``i``,
    ``o``).

    Latency ``8 Nr + 2`` cycles; with ``unroll`` = the round count (the default for one key
    length, e.g. ``key_sizes=(128,)``: 10 stages, 80 T-table block RAMs, 160 XOR lanes) one
    block per cycle. Fewer stages: ``1 / passes`` blocks per cycle.

    Parameters
    ----------
    unroll : int or None
        Round stages; None for the longest supported key's round count.
    key_slots, key_sizes, tag_width, fifo_depth
        As for :class:`~aes_fpga.cores.ttable.round.TTableRound`.
    """

    DATAPATH = TTableUnrolledDatapath

    def __init__(self, *, unroll=None, fifo_depth=None, **options):
        super().__init__(unroll=unroll, fifo_depth=fifo_depth, **options)
        try:
            self._dp_figures = TTableUnrolledDatapath(
                key_slots=self.key_slots, tag_width=self.tag_width, fifo_depth=fifo_depth,
                key_sizes=self.key_sizes, unroll=unroll)
        except ValueError:
            self._MustUse__used = True
            raise
        self._dp_figures._MustUse__used = True     # only asked for its figures
        self.fifo_depth = self._dp_figures.fifo_depth
        self.unroll = self._dp_figures.unroll
        self.blocks_in_flight = self._dp_figures.blocks_in_flight

    def latency(self, key_bits):
        return self._dp_figures.latency(key_bits)

    def blocks_per_cycle(self, key_bits):
        return self._dp_figures.blocks_per_cycle(key_bits)
