"""T-table AES cores after Drimer, Güneysu & Paar (block RAM T-tables + DSP48E1 XOR cascades).

Three cores, as the paper's three modules: :class:`TTableBasic` (§4.1, one column per cycle, two
blocks interleaved), :class:`TTableRound` (§4.2, four basic constructs, eight blocks) and
:class:`TTableUnrolled` (§4.2, round stages in a row, one block per cycle). All three do
AES-128/192/256, encryption and decryption, with key slots, tags and back-pressure.

Every round column is ``e_j = T0[a(0,j)] ^ T1[a(1,j+1)] ^ T2[a(2,j+2)] ^ T3[a(3,j+3)] ^ K_j``,
``T_k`` being ``T0`` rotated right by ``k`` bytes, so one block RAM holding ``T0`` serves every row:
the rotation is routing. A basic construct (one output column) is two dual-port block RAMs
(four lookups) whose outputs feed four cascaded XOR lanes (DSP48E1 on Xilinx), the round key
entering the first lane:

====  ==================================================================================
c+k   row ``k`` lookup address (``k`` = 0..3): ``{op, last round, byte}``, the byte delayed
      ``k`` cycles (the paper's 8/16/24-bit input registers)
c+k+2 block RAM read + its output register
c+k+4 the lane's two input registers (A1/A2; the paper's T and D stages)
c+k+5 XOR with the previous lane (``k`` > 0) or with the round key (``k`` = 0)
c+8   column result = next round's row-0 address
====  ==================================================================================

One block RAM (1024 x 32: encryption ``T0`` and last-round ``T0'`` = S-box byte in row 0, and
the same for decryption, equivalent inverse cipher, FIPS-197 §5.3.5) holds every table a column
needs, so decryption costs no extra block RAM: the paper's variant switches tables by
reconfiguration, here the op is an address bit. The inverse cipher reads row ``k`` from column
``j - k`` instead of ``j + k``: for rows 1 and 3 a byte-wide 2:1 switch after the delay
registers, which every column's row byte passes once whichever column reads it (row 2 is the
same column both ways). Placed after the registers, the switch stays one LUT a bit of its own;
before them, Yosys merged it with the entry switch below into eight-input functions of several
LUTs and wide multiplexers a bit.

The paper leaves the key schedule out (§5.1 only sketches one); here
:class:`~aes_fpga.cores.key_schedule.KeySchedule` (the DRAB-LOCUS one: one word per cycle,
decryption keys with InvMixColumns applied) writes the round keys through the ``rk`` stream into
a block-RAM round-key memory, and the initial AddRoundKey is fabric logic folded into the
2:1 input switch (the paper's "regular logic" option), so the datapath has 16 lanes, not 20.
"""

from fractions import Fraction

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import fifo, wiring
from amaranth.lib.memory import Memory

from .. import model
from ..hw import rot_bytes_right
from ..params import KeySize
from ..primitives import DualPortBRAM, XorLane
from .interface import check_key_sizes, core_members, datapath_members, request_layout
from .key_schedule import KeySchedule
from .ring import RingControl

__all__ = ["TTableBasic", "TTableBasicDatapath", "TTableRound", "TTableRoundDatapath",
           "TTableUnrolled", "TTableUnrolledDatapath", "t_table", "ROUND_STAGES"]

#: Pipeline stages of one round: lookup, BRAM register, two lane input registers, four XORs.
ROUND_STAGES = 8


def t_table():
    """The 1024 x 32 table of every T-table core: address ``{op, last, a}``.

    Words are row 0 in bits 31:24: ``op`` 0: ``[2s, s, s, 3s]`` (``s = S[a]``), or ``[s, 0, 0,
    0]`` in the last round; ``op`` 1: ``[14v, 9v, 13v, 11v]`` (``v = InvS[a]``), or ``[v, 0, 0,
    0]`` in the last round."""
    table = []
    for sbox, coeffs in ((model.SBOX, (2, 1, 1, 3)), (model.INV_SBOX, (14, 9, 13, 11))):
        for last in (False, True):
            for a in range(256):
                s = sbox[a]
                if last:
                    table.append(s << 24)
                else:
                    word = 0
                    for c in coeffs:
                        word = (word << 8) | model.gf_mul(s, c)
                    table.append(word)
    return table



def _row_byte(word, k):
    """Row ``k`` (0 = bits 31:24) of a 32-bit column."""
    return word[24 - 8 * k:32 - 8 * k]



def _zero_key_contents(key_slots, key_bits):
    """Per column: round-key memory contents holding the all-zero key's schedule in every
    slot, address ``{slot, op, index}``."""
    from .drab_locus import round_key_writes
    cols = [[0] * (key_slots * 32) for _ in range(4)]
    for slot in range(key_slots):
        for op in (0, 1):
            for w in round_key_writes(bytes(key_bits // 8), op, slot):
                cols[w["word"]][(slot << 5) | (op << 4) | w["index"]] = w["key"]
    return cols


def _check_options(component, key_slots, tag_width, fifo_depth, key_sizes):
    """Check a core's common options; a rejected component is marked used, so it does not
    also warn that it was never elaborated."""
    try:
        if not isinstance(fifo_depth, int) or fifo_depth < 1:
            raise ValueError(f"fifo_depth: {fifo_depth!r} must be an integer of 1 or more")
        request_layout(key_slots, tag_width)
        return check_key_sizes(key_sizes)
    except ValueError:
        component._MustUse__used = True
        raise


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


class TTableRoundDatapath(_RoundMetrics, wiring.Component):
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

    def __init__(self, *, key_slots=1, tag_width=8, fifo_depth=16, key_sizes=(128, 192, 256)):
        self.key_sizes = _check_options(self, key_slots, tag_width, fifo_depth, key_sizes)
        self.key_slots = key_slots
        self.tag_width = tag_width
        self.fifo_depth = fifo_depth
        super().__init__(datapath_members(key_slots, tag_width))

    def elaborate(self, platform):
        m = Module()
        n = ROUND_STAGES
        kbits = max(1, (self.key_slots - 1).bit_length())

        # ---- ring state: stage[k] is the block whose row-0 address was k cycles ago ---------
        ring = RingControl(self, map(model.num_rounds, self.key_sizes))
        stage = ring.records(n)
        nr_of = ring.nr_of

        for k in range(n - 1):
            m.d.sync += stage[k + 1].eq(stage[k])

        # The block at stage 7 finishes its round at the next cycle; after its last round it
        # leaves, and its slot may take a new block in that same cycle. ``free`` says so from a
        # flip-flop, registered from stage 6 (stage 7 next cycle).
        tail = stage[n - 1]
        leaving = Signal()
        m.d.comb += leaving.eq(tail.valid & (tail.rnd == nr_of(tail)))
        free = Signal(init=1)
        pre = stage[n - 2]
        m.d.sync += free.eq(~pre.valid | (pre.rnd == nr_of(pre)))

        # ---- entry: every term of ``i.ready`` is a flip-flop (or a lookup by the request's key
        # slot), so ``accept`` is one LUT and what it drives at most one more ------------------
        m.submodules.ofifo = ofifo = fifo.SyncFIFO(
            width=len(self.o.payload.as_value()), depth=self.fifo_depth)
        req = self.i.payload
        rk = self.rk.payload
        accept = Signal()
        exit_now = Signal()
        exit_kslot = Signal(kbits)
        rk_write = Signal()
        slot_locked = Signal()
        full = ring.output_full(m, accept)
        slot_busy = ring.slots_busy(m, accept, exit_now, exit_kslot)
        m.d.comb += [
            slot_locked.eq(ring.locked()),
            self.i.ready.eq(free & ~slot_locked & ~rk_write & ~full),
            accept.eq(self.i.valid & self.i.ready),
        ]
        entry = ring.entry(req, rnd=1)
        with m.If(accept):
            m.d.sync += [getattr(stage[0], f).eq(v) for f, v in entry.items()]
        with m.Elif(leaving):
            m.d.sync += [stage[0].eq(tail), stage[0].valid.eq(0)]
        with m.Else():
            m.d.sync += [stage[0].eq(tail), stage[0].rnd.eq(tail.rnd + 1)]

        m.submodules.round_keys = rkm = Module()
        m.submodules.columns = cm = Module()

        # ---- round-key memories, one per column: {key slot, op, index} ---------------------
        # Port a (with output register) reads the round key for the first lane; port b (no
        # output register) reads the initial key of an entering block and takes the writes.
        key_init = _zero_key_contents(self.key_slots, self.key_sizes[0])
        rk_mem = [DualPortBRAM(width=32, depth=self.key_slots * 32, init=key_init[j],
                               out_reg=(True, False), writable=(False, True))
                  for j in range(4)]
        for j in range(4):
            rkm.submodules[f"rk{j}"] = rk_mem[j]
        # Lane 0's key register takes the key at c+3: address at c+1.
        s1 = stage[1]
        m.d.comb += rk_write.eq(self.rk.valid & self.rk.ready)
        for j in range(4):
            rkm.d.comb += [
                rk_mem[j].addr_a.eq(Cat(s1.rnd, s1.op, s1.kslot)),
                rk_mem[j].addr_b.eq(Mux(rk_write, Cat(rk.index, rk.op, rk.slot),
                                        Cat(Const(0, 4), req.op, req.slot))),
                rk_mem[j].wdata_b.eq(rk.key),
                rk_mem[j].we_b.eq(rk_write & (rk.word == j)),
            ]
        m.d.comb += self.rk.ready.eq(~slot_busy.bit_select(rk.slot, 1))
        ring.track_nr(m, rk_write)

        # ---- the four basic constructs ------------------------------------------------------
        # feedback[j]: column j's input to the next round at c = its last lane's output, or
        # for an entering block the block XOR the initial key (registered block, key read
        # from port b).
        entering = Signal()
        blk = Signal(128)
        m.d.sync += entering.eq(accept)
        with m.If(accept):
            m.d.sync += blk.eq(req.block)
        last_p = [Signal(32, name=f"col{j}_out") for j in range(4)]
        feedback = [Signal(32, name=f"col{j}_in") for j in range(4)]
        for j in range(4):
            col_in = blk.word_select(3 - j, 32)
            cm.d.comb += feedback[j].eq(Mux(entering, col_in ^ rk_mem[j].rdata_b, last_p[j]))

        table = t_table()
        # Row k's byte of every column, delayed k cycles (the paper's 8/16/24-bit input
        # registers): delayed[k][m] is column m's row-k byte of the feedback k cycles ago.
        delayed = [[None] * 4 for _ in range(4)]
        for col in range(4):
            for k in range(4):
                byte = _row_byte(feedback[col], k)
                for d in range(k):
                    r = Signal(8, name=f"col{col}_row{k}_d{d}")
                    cm.d.sync += r.eq(byte)
                    byte = r
                delayed[k][col] = byte
        for j in range(4):
            # Row k's address byte at c+k: from column j+k (cipher) or j-k (inverse cipher),
            # chosen after the delay registers so the switch is the one LUT before the address.
            addr_bytes = []
            for k in range(4):
                fwd, inv = delayed[k][(j + k) % 4], delayed[k][(j - k) % 4]
                addr_bytes.append(fwd if fwd is inv else Mux(stage[k].op, inv, fwd))
            lookups = []
            for h in range(2):
                rom = DualPortBRAM(width=32, depth=1024, init=table)
                cm.submodules[f"col{j}_t{h}"] = rom
                for x, k in (("a", 2 * h), ("b", 2 * h + 1)):
                    sk = stage[k]
                    cm.d.comb += getattr(rom, f"addr_{x}").eq(
                        Cat(addr_bytes[k], sk.rnd == nr_of(sk), sk.op))
                    lookups.append(rot_bytes_right(getattr(rom, f"rdata_{x}"), k))
            prev = None
            for k in range(4):
                lane = XorLane(32, a_regs=2, c_regs=1, cascade_in=k > 0)
                cm.submodules[f"col{j}_x{k}"] = lane
                cm.d.comb += lane.a.eq(lookups[k])
                if k == 0:
                    cm.d.comb += lane.c.eq(rk_mem[j].rdata_a)
                else:
                    cm.d.comb += lane.pcin.eq(prev.pcout)
                prev = lane
            cm.d.comb += last_p[j].eq(prev.p)

        # ---- results: the leaving block's columns at c (one cycle after ``leaving``) ----------
        exit_tag = Signal(self.tag_width)
        m.d.sync += [exit_now.eq(leaving), exit_tag.eq(tail.tag), exit_kslot.eq(tail.kslot)]
        m.d.comb += [
            ofifo.w_data.eq(Cat(Cat(*reversed(last_p)), exit_tag)),
            ofifo.w_en.eq(exit_now),
            self.o.valid.eq(ofifo.r_rdy),
            self.o.payload.eq(ofifo.r_data),
            ofifo.r_en.eq(self.o.ready),
        ]
        return m


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


class TTableBasicDatapath(_BasicMetrics, wiring.Component):
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
    :class:`TTableRoundDatapath` (the round-key memory is one 32-bit block RAM word per
    column, address ``{slot, op, index, word}``).
    """

    RESOURCE_GROUPS = {"": "control", "column": "datapath", "round_keys": "round keys",
                       "ofifo": "output fifo"}

    def __init__(self, *, key_slots=1, tag_width=8, fifo_depth=16, key_sizes=(128, 192, 256)):
        self.key_sizes = _check_options(self, key_slots, tag_width, fifo_depth, key_sizes)
        self.key_slots = key_slots
        self.tag_width = tag_width
        self.fifo_depth = fifo_depth
        super().__init__(datapath_members(key_slots, tag_width))

    def elaborate(self, platform):
        m = Module()
        n = ROUND_STAGES
        kbits = max(1, (self.key_slots - 1).bit_length())

        # ---- ring: stage[k] is the block whose column 0 was at row 0 k cycles ago; only the
        # places met at phase 0 (two of the eight) ever hold a block --------------------------
        ring = RingControl(self, map(model.num_rounds, self.key_sizes))
        stage = ring.records(n)
        nr_of = ring.nr_of

        phase = Signal(2)          # the column at row 0 now
        m.d.sync += phase.eq(phase + 1)
        for k in range(n - 1):
            m.d.sync += stage[k + 1].eq(stage[k])
        tail = stage[n - 1]
        leaving = Signal()
        m.d.comb += leaving.eq(tail.valid & (tail.rnd == nr_of(tail)))
        free = Signal(init=1)      # as ``leaving | ~tail.valid``, from a flip-flop
        pre = stage[n - 2]
        m.d.sync += free.eq(~pre.valid | (pre.rnd == nr_of(pre)))

        # ---- entry (at phase 3, so the block's column 0 is at row 0 at phase 0); the terms
        # of ``i.ready`` are flip-flops, as in the round module ---------------------------------
        m.submodules.ofifo = ofifo = fifo.SyncFIFO(
            width=len(self.o.payload.as_value()), depth=self.fifo_depth)
        req = self.i.payload
        rk = self.rk.payload
        accept = Signal()
        exit_now = Signal()
        exit_kslot = Signal(kbits)
        rk_write = Signal()
        slot_locked = Signal()
        entering = Signal(4)       # entering[j]: column j of a new block enters now
        full = ring.output_full(m, accept)
        slot_busy = ring.slots_busy(m, accept, exit_now, exit_kslot)
        m.d.comb += [
            slot_locked.eq(ring.locked()),
            self.i.ready.eq((phase == 3) & free & ~slot_locked & ~rk_write & ~full),
            accept.eq(self.i.valid & self.i.ready),
        ]
        entry = ring.entry(req, rnd=1)
        with m.If(accept):
            m.d.sync += [getattr(stage[0], f).eq(v) for f, v in entry.items()]
        with m.Elif(leaving):
            m.d.sync += [stage[0].eq(tail), stage[0].valid.eq(0)]
        with m.Else():
            m.d.sync += [stage[0].eq(tail), stage[0].rnd.eq(tail.rnd + 1)]
        m.d.sync += entering.eq(Cat(accept, entering[:3]))

        m.submodules.round_keys = rkm = Module()
        m.submodules.column = cm = Module()

        # ---- round keys: {slot, op, index, word}; decryption words stored reversed -----------
        init = [0] * (self.key_slots * 128)
        from .drab_locus import round_key_writes
        for slot in range(self.key_slots):
            for op in (0, 1):
                for w in round_key_writes(bytes(self.key_sizes[0] // 8), op, slot):
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
        ent_slot = Signal(kbits)
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
        m.d.comb += [self.rk.ready.eq(~slot_busy.bit_select(rk.slot, 1) & ~entering[:3].any()),
                     rk_write.eq(self.rk.valid & self.rk.ready)]
        ring.track_nr(m, rk_write)

        # ---- the construct --------------------------------------------------------------------
        blk = Signal(128)
        with m.If(accept):
            m.d.sync += blk.eq(req.block)
        last_p = Signal(32)
        feedback = Signal(32)
        # Column place j of an entering block holds its column j (cipher) or -j (inverse).
        in_col = Mux(ent_op, -phase, phase)[:2]
        cm.d.comb += feedback.eq(Mux(entering.any(),
                                     blk.word_select(~in_col, 32) ^ mem.rdata_b, last_p))
        # Control of the column at row 0 now: op and last-round bit, delayed k for row k.
        ctl = Signal(2)
        m.d.comb += ctl.eq(Cat(row0.rnd == nr_of(row0), row0.op))
        table = t_table()
        lookups = []
        for h in range(2):
            rom = DualPortBRAM(width=32, depth=1024, init=table)
            cm.submodules[f"t{h}"] = rom
            lookups += [rom.rdata_a, rom.rdata_b]
        for k in range(4):
            byte = _row_byte(feedback, k)
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
            rom = cm.submodules[f"t{k // 2}"]
            cm.d.comb += getattr(rom, "addr_" + "ab"[k % 2]).eq(Cat(byte, c))
        prev = None
        for k in range(4):
            lane = XorLane(32, a_regs=2, c_regs=1, cascade_in=k > 0)
            cm.submodules[f"x{k}"] = lane
            cm.d.comb += lane.a.eq(rot_bytes_right(lookups[k], k))
            if k == 0:
                cm.d.comb += lane.c.eq(mem.rdata_a)
            else:
                cm.d.comb += lane.pcin.eq(prev.pcout)
            prev = lane
        cm.d.comb += last_p.eq(prev.p)

        # ---- results: the leaving block's columns leave the last lane at phases 0..3 ---------
        exiting = Signal(4)
        ex_op = Signal()
        ex_tag = Signal(self.tag_width)
        ex_kslot = Signal(kbits)
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
        m.d.sync += [exit_now.eq(exiting[3]), exit_kslot.eq(ex_kslot)]
        out_tag = Signal(self.tag_width)
        m.d.sync += out_tag.eq(ex_tag)
        m.d.comb += [
            ofifo.w_data.eq(Cat(Cat(*reversed(out)), out_tag)),
            ofifo.w_en.eq(exit_now),
            self.o.valid.eq(ofifo.r_rdy),
            self.o.payload.eq(ofifo.r_data),
            ofifo.r_en.eq(self.o.ready),
        ]
        return m


def _unrolled_plan(key_sizes, unroll):
    """Per round count: (stage a block enters at, passes through the stages)."""
    plan = {}
    for bits in key_sizes:
        nr = model.num_rounds(bits)
        enter = (-nr) % unroll
        plan[nr] = (enter, (nr + enter) // unroll)
    return plan


class TTableUnrolledDatapath(wiring.Component):
    """The T-table unrolled module (§4.2 of the paper): ``unroll`` round stages, each four
    basic constructs with their tables fixed, one after the other.

    A stage takes a new block every cycle: with ``unroll`` equal to the round count the core
    sustains one block per cycle. With fewer stages a block passes the stages several times;
    a block with ``Nr`` rounds enters at stage ``-Nr mod unroll``, so that its last round is
    always the last stage's (with several key lengths the full unroll is the longest key's
    round count, and shorter keys enter further down). Each stage holds its round key per
    key slot and op (and pass) in LUT RAM: the keys are fixed per slot, written through
    ``rk`` like the other cores'. As in :class:`TTableBasicDatapath`, the inverse cipher keeps
    the cipher's routing by holding its columns in reverse order (a 2:1 switch of columns 1 and
    3 on the way in and out).

    Each stage keeps the eight pipeline stages of the round module: the paper's unrolled
    variant drops the fabric register between block RAM and DSP (70 cycles for AES-128), but
    here that register is the lane's second input register, inside the DSP48E1, so dropping
    it would save no flip-flop.

    Latency ``8 Nr + 2`` cycles. Throughput: a block enters when its entry stage's input is
    free; ``1 / passes`` blocks per cycle (1 for a full unroll), given an output FIFO that holds
    every block in flight (the default ``fifo_depth``, ``8 unroll + 4``; a smaller one caps
    the blocks in flight at about its depth). Locking and back-pressure as in
    :class:`TTableRoundDatapath`, but round-key writes hold off no request (they go to LUT RAM
    write ports of their own), ``rk`` is ready one cycle after the last block of its slot has
    left the stages, and a stage's round key lands in its memory one cycle after the transfer.
    Results of equal key lengths leave in order.

    Every register-to-register path is at most two LUTs deep in the 7-series netlist with one
    key length and slot (``tests/test_core_depth.py``): the terms of ``i.ready`` are
    flip-flops, and the round-key writes are decoded into registers.

    Parameters
    ----------
    unroll : int or None
        Round stages (1 to 14); None: the longest supported key's round count (a full unroll).
    key_slots, tag_width, fifo_depth, key_sizes
        As for :class:`TTableRoundDatapath`.
    """

    RESOURCE_GROUPS = {"": "control", "stages": "datapath", "round_keys": "round keys",
                       "ofifo": "output fifo"}

    def __init__(self, *, key_slots=1, tag_width=8, fifo_depth=None, key_sizes=(128, 192, 256),
                 unroll=None):
        self.key_sizes = _check_options(self, key_slots, tag_width,
                                        1 if fifo_depth is None else fifo_depth, key_sizes)
        longest = model.num_rounds(self.key_sizes[-1])
        if unroll is None:
            unroll = longest
        if not isinstance(unroll, int) or not 1 <= unroll <= longest:
            self._MustUse__used = True
            raise ValueError(f"unroll: {unroll!r} is out of range; allowed 1 to {longest}")
        self.unroll = unroll
        self.plan = _unrolled_plan(self.key_sizes, unroll)
        self.key_slots = key_slots
        self.tag_width = tag_width
        # A block is accepted only when its result has room: the FIFO must hold every block
        # in flight, and the few on their way out, for one block per cycle.
        self.fifo_depth = ROUND_STAGES * unroll + 4 if fifo_depth is None else fifo_depth
        super().__init__(datapath_members(key_slots, tag_width))

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

    def elaborate(self, platform):
        m = Module()
        u = self.unroll
        n = ROUND_STAGES
        kbits = max(1, (self.key_slots - 1).bit_length())
        max_pass = max(p for _, p in self.plan.values())
        pbits = max(1, (max_pass - 1).bit_length())
        ring = RingControl(self, self.plan, counter=("pass_", pbits))
        fixed_nr, layout, nr_of = ring.fixed_nr, ring.layout, ring.nr_of

        def final_pass(rec):
            nr = nr_of(rec)
            return Cat(*[(nr == r) & (rec.pass_ == p - 1) for r, (_, p) in self.plan.items()]
                       ).any()

        def enter_stage(nr):
            return Array(Const(self.plan.get(r, (0, 1))[0], range(u)) for r in range(16))[nr]

        # ---- records: rec_in[s] enters stage s at c; taps[s][k] is it k cycles later --------
        rec_in = [Signal(layout, name=f"rec_in{s}") for s in range(u)]
        taps = []
        for s in range(u):
            line = [rec_in[s]]
            for k in range(1, n):
                r = Signal(layout, name=f"rec{s}_{k}")
                m.d.sync += r.eq(line[-1])
                line.append(r)
            taps.append(line)
        # What reaches each stage's input next cycle (taps[s-1][7] is at c+7).
        arriving = [taps[s - 1][n - 1] if s else taps[u - 1][n - 1] for s in range(u)]
        last_out = taps[u - 1][n - 1]
        leaving = Signal()
        m.d.comb += leaving.eq(last_out.valid & final_pass(last_out))

        # ---- entry ----------------------------------------------------------------------------
        m.submodules.ofifo = ofifo = fifo.SyncFIFO(
            width=len(self.o.payload.as_value()), depth=self.fifo_depth)
        req = self.i.payload
        rk = self.rk.payload
        accept = Signal()
        exit_now = Signal()
        rk_write = Signal()
        slot_locked = Signal()
        req_nr = Signal(4)
        req_stage = Signal(range(u))
        m.d.comb += [req_nr.eq(ring.nr_of_slot(req.slot)),
                     req_stage.eq(enter_stage(req_nr))]
        entry_stages = sorted({e for e, _ in self.plan.values()})
        # Every term of ``i.ready`` is a flip-flop (or, with several key lengths or slots, a
        # lookup by the request), so ``accept`` is one LUT and what it drives at most one more.
        # free[s]: stage s's input is free in this cycle (no block arrives at it, or the one
        # arriving leaves), registered from the record one cycle before it arrives.
        free = Signal(u, init=(1 << u) - 1)
        for s in range(u):
            pre = taps[s - 1][n - 2] if s else taps[u - 1][n - 2]
            m.d.sync += free[s].eq(~pre.valid | (final_pass(pre) if s == 0 else 0))
        full = ring.output_full(m, accept)
        m.d.comb += [
            slot_locked.eq(ring.locked()),
            self.i.ready.eq(free.bit_select(req_stage, 1) & ~slot_locked & ~full),
            accept.eq(self.i.valid & self.i.ready),
        ]
        # The entering block XOR its initial key (read as the request is accepted), registered:
        # the entry stages take it through their input switch alone.
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
                if fixed_nr is None:
                    m.d.sync += rec_in[s].nr.eq(req_nr)
            with m.Else():
                m.d.sync += rec_in[s].eq(arr)
                if s == 0:
                    with m.If(leaving):
                        m.d.sync += rec_in[s].valid.eq(0)
                    with m.Else():
                        m.d.sync += rec_in[s].pass_.eq(arr.pass_ + 1)
        # A key slot is busy while a block of it is in the stages (accepted, its result not
        # yet in the FIFO).
        exit_kslot = Signal(kbits)
        slot_busy = ring.slots_busy(m, accept, exit_now, exit_kslot)

        m.submodules.round_keys = rkm = Module()
        m.submodules.stages = sm = Module()

        # ---- round keys: per stage and column {slot, op, pass}; the initial key {slot, op} ----
        depth = self.key_slots * 2 * (1 << pbits)
        mems = [[DualPortBRAM(width=32, depth=depth, out_reg=False, writable=(False, True),
                              style="distributed") for _ in range(4)] for _ in range(u)]
        # The initial key is read at the request (LUT RAM, asynchronous read), and written
        # straight from ``rk``: a request for the slot is locked out while the write is on rk.
        first = [Memory(shape=unsigned(32), depth=self.key_slots * 2, init=[])
                 for _ in range(4)]
        m.d.comb += rk_write.eq(self.rk.valid & self.rk.ready)
        m.d.comb += self.rk.ready.eq(~slot_busy.bit_select(rk.slot, 1))
        # Round key i >= 1 is added by stage (i + e - 1) mod unroll in pass (i + e - 1) // it: a
        # table of {nr, index} (of the index alone for one round count), not a division, and
        # the write is registered (decoded place, address and word), so no LUT RAM write pin is
        # more than one LUT from a flip-flop. A write lands one cycle after its transfer; no
        # block of its slot reads the stage keys before then (the slot is locked while rk is
        # valid for it, and a block's first stage-key read is cycles after its acceptance).
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
        first_words = []
        for j in range(4):
            rkm.submodules[f"first{j}"] = first[j]
            wp = first[j].write_port()
            rp = first[j].read_port(domain="comb")
            rkm.d.comb += [wp.addr.eq(Cat(rk.op, rk.slot)), wp.data.eq(rk.key),
                           wp.en.eq(rk_write & (rk.index == 0) & (w_place == j)),
                           rp.addr.eq(Cat(req.op, req.slot))]
            first_words.append(rp.data)
        rkm.d.comb += first_key.eq(Cat(*reversed(first_words)))
        for j in range(4):
            for s in range(u):
                mem = mems[s][j]
                rkm.submodules[f"s{s}_rk{j}"] = mem
                tap = taps[s][2]
                rkm.d.comb += [mem.addr_a.eq(Cat(tap.pass_, tap.op, tap.kslot)),
                               mem.addr_b.eq(Cat(wr_pass, wr_op, wr_slot)),
                               mem.wdata_b.eq(wr_key),
                               mem.we_b.eq(wr_main & wr_stage[s] & (wr_place == j))]
        ring.track_nr(m, rk_write)

        # ---- stages ---------------------------------------------------------------------------
        table = t_table()
        outs = [[Signal(32, name=f"s{s}_col{j}_out") for j in range(4)] for s in range(u)]
        for s in range(u):
            feedback = []
            for j in range(4):
                prev = outs[s - 1][j] if s else outs[u - 1][j]
                f = Signal(32, name=f"s{s}_col{j}_in")
                feedback.append(f)
                if s in entry_stages:
                    sm.d.comb += f.eq(Mux(entering[s], ent_blk.word_select(3 - j, 32), prev))
                else:
                    sm.d.comb += f.eq(prev)
            for j in range(4):
                lookups = []
                roms = []
                for h in range(2):
                    rom = DualPortBRAM(width=32, depth=1024, init=table)
                    sm.submodules[f"s{s}_col{j}_t{h}"] = rom
                    roms += [(rom, "a"), (rom, "b")]
                for k in range(4):
                    byte = _row_byte(feedback[(j + k) % 4], k)
                    for d in range(k):
                        r = Signal(8, name=f"s{s}_col{j}_row{k}_d{d}")
                        sm.d.sync += r.eq(byte)
                        byte = r
                    tap = taps[s][k]
                    last = final_pass(tap) if s == u - 1 else Const(0, 1)
                    rom, x = roms[k]
                    sm.d.comb += getattr(rom, f"addr_{x}").eq(Cat(byte, last, tap.op))
                    lookups.append(rot_bytes_right(getattr(rom, f"rdata_{x}"), k))
                prev_lane = None
                for k in range(4):
                    lane = XorLane(32, a_regs=2, c_regs=1, cascade_in=k > 0)
                    sm.submodules[f"s{s}_col{j}_x{k}"] = lane
                    sm.d.comb += lane.a.eq(lookups[k])
                    if k == 0:
                        sm.d.comb += lane.c.eq(mems[s][j].rdata_a)
                    else:
                        sm.d.comb += lane.pcin.eq(prev_lane.pcout)
                    prev_lane = lane
                sm.d.comb += outs[s][j].eq(prev_lane.p)

        # ---- results --------------------------------------------------------------------------
        exit_tag = Signal(self.tag_width)
        exit_op = Signal()
        m.d.sync += [exit_now.eq(leaving), exit_tag.eq(last_out.tag),
                     exit_kslot.eq(last_out.kslot), exit_op.eq(last_out.op)]
        res = outs[u - 1]
        block = Mux(exit_op, Cat(res[1], res[2], res[3], res[0]), Cat(res[3], res[2], res[1],
                                                                       res[0]))
        m.d.comb += [
            ofifo.w_data.eq(Cat(block, exit_tag)),
            ofifo.w_en.eq(exit_now),
            self.o.valid.eq(ofifo.r_rdy),
            self.o.payload.eq(ofifo.r_data),
            ofifo.r_en.eq(self.o.ready),
        ]
        return m


class _WithKeySchedule(wiring.Component):
    """A T-table datapath behind :class:`KeySchedule`, with the common core interface."""

    _DATAPATH = None

    def __init__(self, *, key_slots=1, key_sizes=(128, 192, 256), tag_width=8, fifo_depth=16,
                 **options):
        self.key_sizes = _check_options(self, key_slots, tag_width,
                                        1 if fifo_depth is None else fifo_depth, key_sizes)
        self.key_slots = key_slots
        self.tag_width = tag_width
        self.fifo_depth = fifo_depth
        self.options = options
        super().__init__(core_members(key_slots, tag_width))

    def elaborate(self, platform):
        m = Module()
        m.submodules.key_schedule = ks = KeySchedule(key_slots=self.key_slots,
                                                      key_sizes=self.key_sizes)
        m.submodules.datapath = dp = self._DATAPATH(
            key_slots=self.key_slots, tag_width=self.tag_width, fifo_depth=self.fifo_depth,
            key_sizes=self.key_sizes, **self.options)
        wiring.connect(m, wiring.flipped(self.key), ks.key)
        wiring.connect(m, ks.rk, dp.rk)
        wiring.connect(m, wiring.flipped(self.i), dp.i)
        wiring.connect(m, dp.o, wiring.flipped(self.o))
        m.d.comb += [dp.lock.eq(ks.lock), dp.lock_slot.eq(ks.lock_slot),
                     self.key_rejected.eq(ks.rejected)]
        return m


class TTableRound(_RoundMetrics, _WithKeySchedule):
    """The T-table round core: :class:`KeySchedule` in front of :class:`TTableRoundDatapath`,
    behind the common core interface (``key``, ``i``, ``o``).

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

    _DATAPATH = TTableRoundDatapath
    RESOURCE_GROUPS = {"": "control", "key_schedule": "key schedule",
                       **{f"datapath.{p}" if p else "datapath": g
                          for p, g in TTableRoundDatapath.RESOURCE_GROUPS.items()}}


class TTableBasic(_BasicMetrics, _WithKeySchedule):
    """The T-table basic core: :class:`KeySchedule` in front of :class:`TTableBasicDatapath`,
    behind the common core interface (``key``, ``i``, ``o``).

    Latency ``8 Nr + 6`` cycles (86 / 102 / 118); two blocks in flight, so saturated traffic
    sustains 2 blocks per ``8 Nr`` cycles. AES-128/192/256, encrypt and decrypt, key slots
    interleave block by block; key loading as in :class:`TTableRound`.

    Parameters
    ----------
    key_slots, key_sizes, tag_width, fifo_depth
        As for :class:`TTableRound` (``fifo_depth`` at least 2 for full throughput).
    """

    _DATAPATH = TTableBasicDatapath
    RESOURCE_GROUPS = {"": "control", "key_schedule": "key schedule",
                       **{f"datapath.{p}" if p else "datapath": g
                          for p, g in TTableBasicDatapath.RESOURCE_GROUPS.items()}}


class TTableUnrolled(_WithKeySchedule):
    """The T-table unrolled core: :class:`KeySchedule` in front of
    :class:`TTableUnrolledDatapath`, behind the common core interface (``key``, ``i``, ``o``).

    Latency ``8 Nr + 2`` cycles; with ``unroll`` = the round count (the default for one key
    length, e.g. ``key_sizes=(128,)``: 10 stages, 80 T-table block RAMs, 160 XOR lanes) one
    block per cycle. Fewer stages: ``1 / passes`` blocks per cycle.

    Parameters
    ----------
    unroll : int or None
        Round stages; None for the longest supported key's round count.
    key_slots, key_sizes, tag_width, fifo_depth
        As for :class:`TTableRound`.
    """

    _DATAPATH = TTableUnrolledDatapath
    RESOURCE_GROUPS = {"": "control", "key_schedule": "key schedule",
                       **{f"datapath.{p}" if p else "datapath": g
                          for p, g in TTableUnrolledDatapath.RESOURCE_GROUPS.items()}}

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
