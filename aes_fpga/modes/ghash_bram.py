"""GHASH with tables of multiples of H in block RAM (the ``"bram"`` variant of
:class:`aes_fpga.modes.ghash.GHash`).

The product ``A·H`` is the XOR over the 32 nibbles of ``A`` of ``M_j[nibble_j(A)]``, where
``M_j[v] = v·H·x^(4j)`` (``v`` a 4-bit polynomial: its bit 3 the coefficient of x^0). These 32
position-specific tables (512 words of 128 bits) need no reduction step and no shift: a multiply
is 32 table reads and their XOR. Four banks of dual-port block RAM, each a full copy of the 512
words, give 8 reads per cycle, so a multiply reads for 4 cycles.

Datapath (every register-to-register path at most 2 LUT levels)::

    acc ──▶ A ──nibble mux (by read cycle)──▶ address registers ──▶ 8 block-RAM ports
     ▲ (both load acc ⊕ …)                     (one set a port)       (2 per bank)
     │                                                                 │ (DO_REG)
     └── acc ⊕ P0 ⊕ P1 ⊕ P2 ⊕ P3 ⊕ Px  (one LUT6 a bit) ◀── P_b = port a ⊕ port b of bank b
                                                              (XorLane: 3 DSP48E1 per bank)
                                                           Px = X ⊕ H·x^-1 injection (3 DSP48E1)

``acc`` is a 6-input XOR per bit: itself, the four bank pairs and ``Px``; a block's ``X`` enters
through ``Px`` while the previous product is still being accumulated, so ``acc`` ends holding
``Y ⊕ X_next``: no separate XOR stage. ``A`` loads the same XOR in the same edge as ``acc``
(flip-flops with a clock enable on the accumulator's LUT outputs), and is cleared after the
reads, so idle reads fetch the zero words ``M_j[0]``.

Every block-RAM address pin is driven by a flip-flop, not by logic: each of the 8 ports has its own
nibble register (A's nibble of the table it reads next) and its own read-cycle counter (the table
bits of its address). Yosys merges flip-flops whose inputs are the same, but not these counters:
each feeds back on itself. (Port b's table bits also take the fill's addresses, which banks 2 and 3
share, so two of those flip-flops serve both banks.) On an ECP5 a 128-bit bank is 8 DP16KD that the
placer spreads across the die next to the bits they produce, so a bank's address nets are long:
with the read-cycle counter and the nibble multiplexers in front of them they set the routed clock
of the whole GCM engine, far below the core's own; with a register in front they leave a whole
cycle to the wire (the routed figure, ``aes-fpga timing --design modes --ghash bram --route``, is
in the README's timing table). A needs no copy stage for this: loaded in the edge that completes
the product, it gives the address registers their cycle, and a multiply still takes 8 cycles.

Why this layout: the read bandwidth is the cost. A true-dual-port RAMB36E1 reads at most 2 × 36
bits a cycle (a RAMB18E1 2 × 18), so 8 words of 128 bits a cycle take 16 RAMB36 (4 a bank)
whatever the depth; a 512-word copy fits those columns with room to spare, so full copies cost
nothing more and let the fill read any table from any bank. 8-bit windows halve the reads but
their 4096-word tables need 15+ RAMB36 for one copy; 4 reads a cycle (8 RAMB36) would make a
multiply 8 read cycles, 12 cycles a block; 6 reads a cycle (12 RAMB36) 10 cycles a block, or
8 cycles with windows of 6 and 5 bits (8 + 16 windows, 1024 words a copy: not built, its fill
would be irregular and twice as long).
Pairing the words in DSP48E1 XORs keeps the accumulator at one LUT a bit, and every other
128-bit operation is a register load (clock enable or synchronous reset), so the LUTs go to the
accumulator (128), the nibble multiplexers (one LUT6 an address bit) and the fill's address
multiplexers.

Resources and depth (the command is in :mod:`aes_fpga.modes.ghash`): 279 LUT, 920 FF, 16
RAMB36E1, 15 DSP48E1, at most 2 LUT levels; 8 cycles a block, latency 11, fill 1002 cycles.

Table fill (when ``h`` is accepted; ``H`` never leaves the device): with only the XOR datapath
and one shifted write path (port b of every bank writes a word times x), every entry is
``M_j[v] = (M_{j-1}[v >> 3] ⊕ M_j[(v << 1) & 15])·x`` (two reads, from banks 0 and 1 over
port b), with ``M_{-1}[1] = H·x^-1`` injected through ``Px``. An op takes 2 cycles (read; write
of an earlier op), all banks being written with the same word; 15 op slots a table in the order
of :data:`FILL_SLOTS` keep every source written :data:`FILL_READ_DISTANCE` ops before it is read.
Port b's address registers take the sequencer's addresses, so the whole fill (reads, writes,
injection, clearing) runs one cycle behind the sequencer.
"""

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring

from ..primitives.bram import DualPortBRAM
from ..primitives.xor_lane import XorLane
from .gf128 import mul_x_inv_expr, mul_x_pow_expr
from .ghash_signature import ghash_signature

__all__ = ["BramGHash", "FILL_SLOTS", "FILL_READ_DISTANCE", "fill_ops", "table_of", "nibble"]

BANKS = 4
TABLES = 32
#: Cycles of 8 reads a multiply takes.
READ_CYCLES = 4
#: (chain, v) of each op slot of a fill period: the chain ops (v = 8, 4, 2, 1: the single-bit
#: entries, each the previous one times x) of table p, the other 11 entries of table p - 1.
FILL_SLOTS = ((1, 8), (0, 12), (0, 10), (1, 4), (0, 9), (0, 14), (1, 2), (0, 6), (0, 5),
              (1, 1), (0, 13), (0, 3), (0, 7), (0, 11), (0, 15))
#: An op's word can be read by the op this many slots after it, not earlier.
FILL_READ_DISTANCE = 3
#: Fill periods: tables 0..31 of the chain ops, tables 0..31 of the others one period later.
FILL_PERIODS = TABLES + 1
#: Op slots the fill runs: the periods, two for the last write, two for its echo on the write
#: port to reach a clearing of the accumulator (see :meth:`BramGHash._fill_sequencer`).
FILL_OPS = FILL_PERIODS * len(FILL_SLOTS) + 4
_LANES = ((0, 48), (48, 96), (96, 128))


def table_of(bank, port, cycle):
    """The table read by ``port`` (0: a, 1: b) of ``bank`` in read cycle ``cycle``."""
    return port + 2 * bank + 8 * cycle


def nibble(value, j):
    """Nibble ``j`` of the 128-bit Value ``value``: the coefficients of x^(4j) .. x^(4j+3),
    x^(4j) as its top bit (the index of ``M_j``)."""
    return value[124 - 4 * j:128 - 4 * j]


def fill_ops():
    """The fill's op slots in order: ``None`` for an idle slot, else ``(j, v, src1, src2)``
    with ``M_j[v] = (src1 ⊕ src2)·x``, each source ``(table, v)``, ``"H/x"`` (the injected
    H·x^-1) or ``None`` (zero)."""
    ops = []
    for p in range(FILL_PERIODS + 1):
        for chain, v in FILL_SLOTS:
            j = p if chain else p - 1
            if not 0 <= j < TABLES or p == FILL_PERIODS:
                ops.append(None)
                continue
            if v >> 3:
                src1 = "H/x" if j == 0 else (j - 1, 1)
            else:
                src1 = None
            ops.append((j, v, src1, (j, (v << 1) & 15) if (v << 1) & 15 else None))
    return ops[:FILL_OPS]


class BramGHash(wiring.Component):
    """GHASH_H with the tables ``M_j`` in block RAM: see the module's docstring.

    Timing: a block accepted in cycle t is added to the accumulator at the end of cycle t+2,
    where A takes the same value; the address registers take A's first nibbles at the end of
    t+3 (``C``), the ports read in C+1 .. C+4 and
    accumulates at the ends of C+4 .. C+7, so the product is there at C+8: ``latency = 11``.
    The next block of the message is accepted at C+5 (its X joins the last accumulations), so
    ``cycles_per_block = 8``. After a ``last`` block nothing is accepted until the result has
    been taken; a ``first`` block is accepted only when no multiply is under way (it clears the
    accumulator), so a message costs a few cycles more than its blocks.

    ``h`` is accepted when no message is in progress; the fill then runs ``fill_cycles`` cycles
    (``i.ready`` low), and ``h`` wins over a block offered in the same cycle.
    """

    cycles_per_block = 8
    latency = 11
    #: The accept cycle, one pre-slot cycle, 2 cycles an op, the cycle the fill's late half
    #: (see :meth:`BramGHash._fill_sequencer`) runs behind it, and the 2 cycles the readiness
    #: of ``i`` takes to be registered.
    fill_cycles = 1 + 2 * FILL_OPS + 1 + 2

    def __init__(self):
        super().__init__(ghash_signature())

    def elaborate(self, platform):
        m = Module()
        acc = Signal(128)
        a = Signal(128)
        filling = Signal()

        banks = []
        for b in range(BANKS):
            bank = DualPortBRAM(width=128, depth=TABLES * 16, out_reg=True,
                                writable=(False, True))
            m.submodules[f"bank{b}"] = bank
            banks.append(bank)

        # The bank pairs and the injection of X (or of H·x^-1 during the fill), in DSP XORs.
        pairs = [Signal(128, name=f"pair{b}") for b in range(BANKS)]
        x_in = Signal(128)
        x_reg = Signal(128)
        hx_reg = Signal(128)
        x_clear = Signal()      # the injection lanes' output is cleared: nothing was injected
        for name, out, left, right in ([(f"pair{b}", pairs[b], banks[b].rdata_a, banks[b].rdata_b)
                                        for b in range(BANKS)]
                                       + [("inject", x_in, x_reg, hx_reg)]):
            for n, (lo, hi) in enumerate(_LANES):
                lane = XorLane(hi - lo, a_regs=0, c_regs=0, p_reg=True)
                m.submodules[f"{name}_lane{n}"] = lane
                m.d.comb += [lane.a.eq(left[lo:hi]), lane.c.eq(right[lo:hi]),
                             out[lo:hi].eq(lane.p)]
                if name == "inject":
                    m.d.comb += lane.rst_p.eq(x_clear)

        fill = self._fill_sequencer(m, filling, acc)
        ctl = self._control(m, filling, fill)

        # acc's next value, also loaded into A: A takes the product in the same edge as acc.
        acc_sum = Signal(128)
        m.d.comb += acc_sum.eq(acc ^ pairs[0] ^ pairs[1] ^ pairs[2] ^ pairs[3] ^ x_in)
        with m.If(ctl["acc_clear"]):
            m.d.sync += acc.eq(0)
        with m.Else():
            m.d.sync += acc.eq(acc_sum)
        with m.If(ctl["a_clear"]):
            m.d.sync += a.eq(0)
        with m.Elif(ctl["load"]):
            m.d.sync += a.eq(acc_sum)

        # Addresses: every port's address comes straight from flip-flops of its own (see the
        # module docstring). ``cyc`` is the port's read cycle, the table bits of its address: a
        # counter of its own, which Yosys cannot merge with another port's; the nibble register
        # takes A's nibble of the table read next. During the fill port b's
        # registers take the sequencer's address, one cycle late (the fill runs one cycle late).
        for b, bank in enumerate(banks):
            for port, x in enumerate("ab"):
                cyc = Signal(2, name=f"cyc{b}{x}")
                nib = Signal(4, name=f"nib{b}{x}")
                upcoming = Array(nibble(a, table_of(b, port, (c + 1) % READ_CYCLES))
                                 for c in range(READ_CYCLES))[cyc]
                normal = [nib.eq(upcoming), cyc.eq(Mux(ctl["load"], READ_CYCLES - 1, cyc + 1))]
                if x == "a":
                    m.d.sync += normal
                    m.d.comb += bank.addr_a.eq(Cat(nib, Const(port, 1), Const(b, 2), cyc))
                    continue
                rest = Signal(3, name=f"rest{b}{x}", init=port + 2 * b)
                with m.If(filling):
                    m.d.sync += Cat(nib, rest, cyc).eq(fill["addr"][b])
                with m.Else():
                    m.d.sync += [*normal, rest.eq(port + 2 * b)]
                m.d.comb += [bank.addr_b.eq(Cat(nib, rest, cyc)),
                             bank.wdata_b.eq(fill["wdata"]), bank.we_b.eq(fill["we"])]

        # X enters the injection register whatever ``i`` offers (the fill's H·x^-1 alone while
        # it is injected), and the lanes' output register is cleared unless a block was
        # accepted, or H·x^-1 injected, the cycle before: the acceptance, a decision on the
        # handshake, reaches two flip-flops' worth of logic, not the 128 bits' multiplexers.
        injected = Signal()
        m.d.sync += [
            x_reg.eq(Mux(fill["inject"], 0, self.i.payload.data)),
            hx_reg.eq(Mux(fill["inject"], mul_x_inv_expr(ctl["h"]), 0)),
            injected.eq(fill["inject"]),
        ]
        m.d.comb += x_clear.eq(~ctl["accepted"] & ~injected)
        m.d.comb += self.o.payload.eq(acc)
        return m

    def _control(self, m, filling, fill):
        """Handshakes and the multiply's schedule; returns the control signals."""
        ev = Signal(11)           # ev[k]: a block was accepted k + 1 cycles ago
        pend_first = Signal()
        pend_last = Signal()
        round_last = Signal()
        out_valid = Signal()
        in_msg = Signal()
        h_ok = Signal(init=1)     # no message, no fill: h may be taken (unless ev[0])
        open_idle = Signal(init=1)
        open_window = Signal()
        h = Signal(128)

        h_ready = Signal()
        h_take = Signal()
        accept = Signal()
        o_taken = Signal()
        blk = self.i.payload
        m.d.comb += [
            h_ready.eq(h_ok & ~ev[0]),
            self.h.ready.eq(h_ready),
            h_take.eq(self.h.valid & h_ready),
            self.i.ready.eq((open_idle | (open_window & ~blk.first)) & ~ev[0]
                            & ~(self.h.valid & h_ok)),
            accept.eq(self.i.valid & self.i.ready),
            self.o.valid.eq(out_valid),
            o_taken.eq(out_valid & self.o.ready),
        ]
        m.d.sync += ev.eq(Cat(accept, ev[:-1]))
        with m.If(accept):
            m.d.sync += [pend_first.eq(blk.first), pend_last.eq(blk.last)]
        # (H is loaded whenever one is offered while no message or fill runs, taken or not:
        # a stream holds its payload until taken, and until a fill H is not read, so the
        # 128 bits' enable is one LUT of flip-flops, not the acceptance.)
        with m.If(self.h.valid & h_ok):
            m.d.sync += h.eq(self.h.payload)
        copy = ev[2]
        with m.If(copy):
            m.d.sync += round_last.eq(pend_last)
        with m.If(ev[9] & round_last):
            m.d.sync += out_valid.eq(1)
        with m.Elif(o_taken):
            m.d.sync += out_valid.eq(0)
        with m.If(ev[0]):
            m.d.sync += in_msg.eq(1)
        with m.Elif(o_taken):
            m.d.sync += in_msg.eq(0)
        busy = filling | fill["late"] | h_take | out_valid | ev[:10].any()
        m.d.sync += [
            open_idle.eq(~busy),
            open_window.eq(ev[6] & ~round_last),
            h_ok.eq(~in_msg & ~ev[0] & ~filling & ~h_take),
        ]
        return {
            "accept": accept, "accepted": ev[0], "h": h, "h_take": h_take,
            # A takes acc's next value in the edge that adds the block's X (see "Timing").
            "load": ev[1],
            "a_clear": ev[5] | filling,
            # Before the first accumulation of a multiply; a first block's X starts from 0;
            # the fill clears after each op.
            "acc_clear": ev[5] | (ev[0] & pend_first) | fill["clear"],
        }

    def _fill_sequencer(self, m, filling, acc):
        """The table fill: :func:`fill_ops` decoded from a slot and a period counter. An op
        slot is 2 cycles: ph0 reads on port b of banks 0 and 1 (their pair reaches the
        accumulator 3 cycles later, and the end of the next ph0 clears it again), ph1 writes the
        word of the op two slots back (held one cycle in ``w``) into every bank and decodes the
        next op. A write's old word, which port b returns (read-first), reaches the
        accumulator at the end of a ph0, where it is cleared. (These are the sequencer's
        cycles; the block RAM sees each one a cycle later, through port b's address registers,
        and ``late`` delays the rest to match.) Returns the fill's signals; ``late`` is also
        the one cycle the fill's effects outlast ``filling``."""
        ph = Signal()                       # 0: ph0, 1: ph1
        slot = Signal(range(len(FILL_SLOTS)))
        period = Signal(range(FILL_PERIODS + 2))
        pj = Signal(5)                      # period mod 32, and period - 1, period - 2
        pm1 = Signal(5)
        pm2 = Signal(5)
        rd1 = Signal(9)
        rd2 = Signal(9)
        inject_cur = Signal()
        cur = Signal(10)                    # write address and valid of the op being read
        prev = Signal(10)
        wr = Signal(10)                     # ... of the op two slots back, written now
        w = Signal(128)

        h_take = self.h.valid & self.h.ready
        chain = Array(Const(c, 1) for c, _ in FILL_SLOTS)[slot]
        v = Array(Const(v, 4) for _, v in FILL_SLOTS)[slot]
        j = Mux(chain, pj, pm1)
        j_prev = Mux(chain, pm1, pm2)
        j_zero = Mux(chain, period == 0, period == 1)
        valid = Mux(chain, period < TABLES, (period >= 1) & (period <= TABLES))
        top = v[3]
        m.d.sync += w.eq(acc)
        with m.If(h_take):
            m.d.sync += [filling.eq(1), ph.eq(1), slot.eq(0), period.eq(0),
                         pj.eq(0), pm1.eq(-1), pm2.eq(-2), cur.eq(0), prev.eq(0)]
        with m.Elif(filling):
            m.d.sync += ph.eq(~ph)
            with m.If(ph):
                m.d.sync += [
                    rd1.eq(Cat(Mux(top & ~j_zero, Const(1, 4), 0), j_prev)),
                    rd2.eq(Cat((v << 1)[:4], j)),
                    inject_cur.eq(valid & top & j_zero),
                    cur.eq(Cat(v, j, valid)),
                    prev.eq(cur),
                    wr.eq(prev),
                ]
                with m.If(slot == len(FILL_SLOTS) - 1):
                    m.d.sync += [slot.eq(0), period.eq(period + 1), pj.eq(pj + 1),
                                 pm1.eq(pm1 + 1), pm2.eq(pm2 + 1)]
                with m.Else():
                    m.d.sync += slot.eq(slot + 1)
                last = FILL_OPS - FILL_PERIODS * len(FILL_SLOTS)
                with m.If((period == FILL_PERIODS) & (slot == last)):
                    m.d.sync += filling.eq(0)
        zero_nib = Cat(Const(0, 4), wr[4:9])
        addr = []
        for b in range(BANKS):
            rd = {0: rd1, 1: rd2}.get(b, zero_nib)
            addr.append(Mux(ph, wr[:9], rd))
        # Port b's address registers present ``addr`` one cycle late, so the writes, the
        # injection and the clearing follow one cycle late too (``late``); the written word is
        # then ``w`` as it is (the accumulator's contents are all one cycle late). H·x^-1
        # enters the injection register at the end of the op's (late) ph1, so it meets the op's
        # reads in the accumulator.
        late = Signal(4)
        m.d.sync += late.eq(Cat(filling, filling & ph & wr[9], filling & ph & inject_cur,
                                filling & ~ph))
        return {"addr": addr, "we": late[1], "wdata": mul_x_pow_expr(w, 1),
                "inject": late[2], "clear": late[3], "late": late[0]}
