"""The DRAB-LOCUS key schedule: a word-serial sequencer whose tables live in the round-key block
RAMs.

The round keys sit in four 32-bit column memories (word ``j`` of every round key in column
``j``), which the datapath reads through port a; a key slot needs 32 of their words, and a
RAMB36E1 holds 1024. Their spare words hold what a key schedule would otherwise build from LUTs
(:class:`TableLayout`): per column, an S-box table for SubWord (with and without RotWord), an
InvMixColumns product table and the round constants. Each table entry has the column's own
input byte XORed in, so for a 32-bit word ``a`` whose byte ``j`` addresses column ``j``, the
XOR of the four column outputs is ``f(a) ^ a``: one read of all four columns turns the
accumulator ``a`` into ``f(a)`` by ``acc ^= X`` with no multiplexer.

So the whole schedule is one 32-bit accumulator ``acc`` and a counter-driven sequence of
port-b operations: issue the four column addresses (t0), wait (t1), take ``X`` from the block
RAMs' output registers into the register ``wbuf`` (t2), and, for an operation that writes,
write ``acc ^ wbuf`` to one column (t3); in the cycle after t2 (a *fold*) ``acc ^ wbuf``
becomes ``acc`` in SUB and NEW. So a block RAM's read reaches a flip-flop through one LUT (the
XOR of the four columns) and the wires from four blocks placed apart; ``acc ^ X`` in one cycle
was the routed critical path of the GCM mode engine, and a write register after it the one
before (the route from the block RAMs' outputs back to their inputs). For word ``i`` of the
expansion (FIPS-197 §5.2):

- a key word: LOAD (``acc`` = the key's word ``i``, one cycle), then NEW reading zeros, which
  writes it as word ``i % 4`` of encryption round key ``i // 4``;
- otherwise: SUB when the word needs SubWord (``acc`` = SubWord(RotWord(acc)) or
  SubWord(acc)), then NEW, which reads ``w[i - Nk]`` in its column (and the round constant in
  column 1, whose other entries read zero) and writes ``acc ^ X = w[i]``;
- then DEC, which writes decryption round key ``Nr - i // 4`` (the equivalent inverse cipher's
  order): ``InvMixColumns(acc)`` through the table, or ``acc`` itself (a read of zeros) for the
  first and last; ``acc`` keeps ``w[i]``.

Port b is shared with the datapath's final AddRoundKey, which reads it in the cycles the
datapath flags; the datapath also tells three cycles ahead (``free3``), so an operation starts
only when both its t0 and its t3 are free, and none ever has to be repeated. Writes wait for
the key slot to drain (``drained``).
"""

from types import SimpleNamespace

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .. import model
from .interface import KeyBits, check_key_sizes, key_schedule_members

__all__ = ["KeySequencer", "TableLayout", "table_port_signature", "key_load_cycles"]

_NK = {128: 4, 192: 6, 256: 8}
_NKSEL = {128: 0, 192: 1, 256: 2}
_BITS = {128: KeyBits.AES128, 192: KeyBits.AES192, 256: KeyBits.AES256}
_IMC = (14, 11, 13, 9)      # InvMixColumns: out[r] = sum_c _IMC[(c - r) % 4] * in[c]
#: The rcon column: never the column of w[i - Nk] when word i takes the round constant.
RCON_COLUMN = 1


def key_load_cycles(key_bits):
    """Cycles from the key transfer's first cycle to its last round-key write when port b is
    never busy and the slot has drained: one cycle to take the key, then per word LOAD (1) or
    SUB (3, for a word that needs SubWord), NEW (4) and DEC (4)."""
    if key_bits not in _NK:
        raise ValueError(f"key_bits: {key_bits!r} is not allowed; choose 128, 192 or 256")
    nk, nr = _NK[key_bits], model.num_rounds(key_bits)
    words = 4 * (nr + 1)
    subs = sum(1 for i in range(nk, words) if i % nk == 0 or (nk == 8 and i % 8 == 4))
    return 1 + nk + 8 * words + 3 * subs


def _at(value, byte):
    """``value`` (a byte) as byte ``byte`` of a 32-bit word, byte 0 most significant."""
    return value << (8 * (3 - byte))


def _rcon(q):
    rc = 1
    for _ in range(q - 1):
        rc = model.xtime(rc)
    return rc


class TableLayout:
    """The address map of each round-key column memory.

    Round keys at ``{slot, op, index}`` from 0 (``key_slots * 32`` words); the round constants
    (column :data:`RCON_COLUMN`; zero in the others) at ``misc + {nksel, 1, index}``, where
    ``index`` is that of ``w[i - Nk]`` for the word ``i`` taking the constant, and zeros at
    ``misc + {nksel, 0, index}``; then 256-word tables at ``srot`` (RotWord and SubWord),
    ``imc`` (InvMixColumns) and, with 256-bit keys, ``snorot`` (SubWord alone).
    """

    def __init__(self, key_slots, key_sizes):
        self.key_sizes = check_key_sizes(key_sizes)
        self.key_words = key_slots * 32
        self.misc = -(-self.key_words // 128) * 128
        base = -(-(self.misc + 128) // 256) * 256
        self.srot, self.imc = base, base + 256
        self.snorot = base + 512 if 256 in self.key_sizes else None
        self.depth = base + (768 if self.snorot is not None else 512)
        self.abits = (self.depth - 1).bit_length()

    def tables(self, column):
        """Column ``column``'s words outside the round keys: a dict address -> word."""
        j = column
        out = {}
        for a in range(256):
            out[self.srot + a] = _at(model.SBOX[a], (j - 1) % 4) ^ _at(a, j)
            out[self.imc + a] = _at(a, j)
            for r in range(4):
                out[self.imc + a] ^= _at(model.gf_mul(_IMC[(j - r) % 4], a), r)
            if self.snorot is not None:
                out[self.snorot + a] = _at(model.SBOX[a] ^ a, j)
        if j == RCON_COLUMN:
            for bits in self.key_sizes:
                nk, words = _NK[bits], 4 * (model.num_rounds(bits) + 1)
                for i in range(nk, words, nk):
                    if (i - nk) % 4 == RCON_COLUMN:
                        raise AssertionError("the rcon column is read for w[i - Nk]")
                    addr = self.misc + (_NKSEL[bits] << 5) + 16 + (i - nk) // 4
                    if addr in out:
                        raise AssertionError("two round constants at one address")
                    out[addr] = _at(_rcon(i // nk), 0)
        return out


def table_port_signature(abits):
    """Port b of the four round-key column memories, as the key schedule drives it: column
    ``j``'s address in ``addr[abits j : abits (j + 1)]`` (which the memories take a cycle
    later: the datapath registers it), its write enable ``we[j]``, one write word for all,
    ``first`` (the write is of index 0), the key's ``op`` and ``nr``; back come the four
    columns' read data (column 0 most significant), ``free`` (port b is the schedule's this
    cycle), ``free3`` (and three cycles from now) and ``drained`` (no block of the locked key
    slot is in flight)."""
    return wiring.Signature({
        "addr": Out(4 * abits), "we": Out(4), "wdata": Out(32), "first": Out(1), "op": Out(1),
        "nr": Out(4), "rdata": In(128), "free": In(1), "free3": In(1), "drained": In(1),
    })


def _inc(value, down=0, carry=1):
    """``value + carry`` (``- carry`` when ``down``), wrapping, as explicit XOR/AND terms (an
    adder would become a CARRY4 chain, which ABC then takes as the depth budget)."""
    bits = []
    for k in range(len(value)):
        bits.append(value[k] ^ carry)
        carry = carry & (value[k] ^ down)
    return Cat(*bits)


class KeySequencer(wiring.Component):
    """Expands keys from the ``key`` stream into the DRAB-LOCUS round-key memories through
    their port b (``port``, :func:`table_port_signature`); see the module docstring.

    ``lock``/``lock_slot`` are high from the start of a key transfer until its last write. A
    key whose length is not in ``key_sizes`` is consumed and dropped, with a one-cycle pulse on
    ``rejected``. A transfer with ``zeroize`` set writes zero to all 32 round-key addresses of
    its slot (all four columns at once, one every 4 cycles). Load time:
    :func:`key_load_cycles`, plus any cycles port b is busy or the slot's blocks drain.

    Stages, one method each: the registers, the port, idle, LOAD, the cycles of an operation,
    the word's end, and ZEROIZE.
    """

    def __init__(self, *, key_slots=1, key_sizes=(128, 192, 256)):
        self.key_sizes = check_key_sizes(key_sizes)
        self.key_slots = key_slots
        self.layout = TableLayout(key_slots, self.key_sizes)
        super().__init__(key_schedule_members(
            key_slots, {"port": Out(table_port_signature(self.layout.abits))}))

    def elaborate(self, platform):
        m = Module()
        s = SimpleNamespace()
        self._registers(m, s)
        self._port(m, s)
        self._idle(m, s)
        self._load(m, s)
        self._operation(m, s)
        self._next_word(m, s)
        self._zeroize(m, s)
        return m

    def _registers(self, m, s):
        """The accumulator, the key's constants, the word counters, the per-word flags, the
        phase and operation-cycle bits (one-hot), and the address fields of port b."""
        s.acc = Signal(32)
        s.lock = Signal()
        s.nksel = Signal(2)
        s.nk8 = Signal()
        s.nk_m1 = Signal(3)       # Nk - 1
        s.nr = Signal(4)
        s.i = Signal(6)           # word index
        s.jb = Signal(6)          # i - Nk (wrapping): the column and index of w[i - Nk]
        s.imod = Signal(3)        # i % Nk
        s.di = Signal(4)          # Nr - i // 4: the decryption key index of word i
        # word i's flags, and word i + 1's (registered in DEC's t1)
        # (f_rot and f_imc, no longer needed once DEC has begun, take word i + 1's there)
        s.f_rot, s.f_imc, s.f_last = Signal(), Signal(), Signal()
        s.n_key, s.n_sub, s.n_last = Signal(), Signal(), Signal()
        s.ph_load, s.ph_sub, s.ph_new = Signal(), Signal(), Signal()
        s.ph_dec, s.ph_zero = Signal(), Signal()
        s.t0, s.t1, s.t2, s.t3 = Signal(), Signal(), Signal(), Signal()
        s.wbuf = Signal(32)       # X, taken in t2; acc ^ wbuf is written in t3
        s.fold = Signal()         # acc ^ wbuf becomes acc (the cycle after SUB's or NEW's t2)
        s.acc_d = Signal(32)      # acc's next value in LOAD and a fold
        s.sum = Signal(32)        # acc ^ wbuf: the write data, and acc after a fold
        # port b: column j reads {thi, acc byte j} when look, else {slot, kop, kidx} when
        # ksel[j], else misc + {nksel, rc, kidx} (zero unless rc, in column RCON_COLUMN),
        # which the datapath registers (:meth:`_port`)
        s.look = Signal()
        s.thi = Signal(self.layout.abits - 8)
        s.ksel = Signal(4)
        s.kop = Signal()
        s.kidx = Signal(4)
        s.rc = Signal()
        s.zc = s.i[:5]            # ZEROIZE: {op, index}
        # a write's enables, first flag and op, registered in t2 from its fields
        s.we = Signal(4)
        s.w_first, s.w_op = Signal(), Signal()
        s.writes = Signal()
        m.d.comb += s.writes.eq(s.ph_new | s.ph_dec | s.ph_zero)

    def _port(self, m, s):
        """Port b's addresses, the write data and the write enables (t3).

        The datapath registers the addresses (:func:`table_port_signature`), so that a block
        RAM's address is a flip-flop, not these fields through three LUT levels and the wires
        to four block RAMs placed apart: the block RAMs see them a cycle after the fields. So
        an operation's fields are set two cycles before its t3 writes (in t1) and a cycle
        before its t0 reads: in the previous operation's t2 (t1 for SUB, which does not
        write), whose t3 still sees its own in the register. ``acc`` is last changed in the
        fold after that t2, a cycle late for DEC's table address, taken in NEW's t3: the
        address takes ``acc ^ wbuf`` during a fold. The write enables, ``first`` and ``op``
        of a write are registered in its t2 for the same reason.

        The write data are ``acc ^ wbuf``, one LUT after two flip-flops (not the accumulator's
        next value, which is the same outside LOAD: its LOAD multiplexer would put the key
        word's select in front of the block RAMs' data inputs, which the router made the
        longest path); the accumulator's reset to zero while idle is its flip-flops'
        synchronous reset.
        """
        port, lay = self.port, self.layout
        s.x = Signal(32)
        m.d.comb += s.x.eq(port.rdata[0:32] ^ port.rdata[32:64] ^ port.rdata[64:96]
                           ^ port.rdata[96:128])
        misc = Cat(s.kidx, s.rc, s.nksel, Const(lay.misc >> 7, lay.abits - 7))
        key_addr = Cat(s.kidx, s.kop, self.lock_slot)
        # (the accumulator as it is after a pending fold: DEC's table address in NEW's t3)
        acc_now = Mux(s.fold, s.sum, s.acc)
        for j in range(4):
            look = Cat(acc_now.word_select(3 - j, 8), s.thi)
            m.d.comb += port.addr.word_select(j, lay.abits).eq(
                Mux(s.look, look, Mux(s.ksel[j], key_addr, misc)))
        m.d.sync += [s.we.eq(Mux(s.t2 & s.writes, s.ksel, 0)), s.w_first.eq(s.kidx == 0),
                     s.w_op.eq(s.kop)]
        m.d.comb += [
            port.we.eq(s.we), port.wdata.eq(s.sum), port.first.eq(s.w_first),
            port.op.eq(s.w_op), port.nr.eq(s.nr), self.lock.eq(s.lock),
        ]

    def _idle(self, m, s):
        """Idle: set up for the key on offer while waiting; none of this depends on
        key.valid. The accumulator is held at zero."""
        kp = self.key.payload
        supported = Cat(*[kp.key_bits == _BITS[k] for k in self.key_sizes]).any()
        go = Signal()
        m.d.comb += go.eq(~s.lock & self.key.valid & (kp.zeroize | supported))
        is128, is192 = kp.key_bits == KeyBits.AES128, kp.key_bits == KeyBits.AES192

        def per_length(f):
            # with one key length, a constant (its flip-flops vanish)
            if len(self.key_sizes) == 1:
                return Const(f(self.key_sizes[0]))
            return Mux(is128, f(128), Mux(is192, f(192), f(256)))

        with m.If(~s.lock):
            nr = per_length(model.num_rounds)
            if len(self.key_sizes) > 1:     # zeroize: the shortest length's
                nr = Mux(kp.zeroize, model.num_rounds(self.key_sizes[0]), nr)
            m.d.sync += [
                self.lock_slot.eq(kp.slot), s.nr.eq(nr), s.di.eq(nr),
                s.nksel.eq(per_length(_NKSEL.get)), s.nk8.eq(per_length(lambda b: b == 256)),
                s.nk_m1.eq(per_length(lambda b: _NK[b] - 1)),
                s.jb.eq(per_length(lambda b: 64 - _NK[b])),
                s.i.eq(0), s.imod.eq(0),
                s.f_rot.eq(0), s.f_imc.eq(0), s.f_last.eq(0),
                s.look.eq(0), s.ksel.eq(0), s.rc.eq(0),
                s.lock.eq(go), s.t0.eq(go),
                s.ph_load.eq(go & ~kp.zeroize), s.ph_zero.eq(go & kp.zeroize),
            ]
            m.d.comb += [
                # a zeroize transfer or a rejected key completes at once
                self.key.ready.eq(self.key.valid & (kp.zeroize | ~supported)),
                self.rejected.eq(self.key.valid & ~kp.zeroize & ~supported),
            ]

    def _load(self, m, s):
        """LOAD: the key word into the accumulator; the transfer completes with its last word
        (i = Nk - 1, so i - Nk is -1). NEW follows, reading zeros."""
        nk_max = max(_NK[k] for k in self.key_sizes)
        words = Array(self.key.payload.key.word_select(7 - j, 32) for j in range(nk_max))
        # (outside LOAD, acc ^ wbuf: the write data of every t3, shared with the fold)
        m.d.comb += [s.sum.eq(s.acc ^ s.wbuf), s.acc_d.eq(Mux(
            s.ph_load, words[s.i[:3]] if nk_max > 4 else words[s.i[:2]], s.sum))]
        with m.If(s.ph_load):
            m.d.comb += self.key.ready.eq(s.jb == 63)
            m.d.sync += [s.acc.eq(s.acc_d), s.ph_load.eq(0), s.ph_new.eq(1)]

    def _operation(self, m, s):
        """An operation: t0 issues the read once port b is free now (and, for a write, two
        cycles on and the slot has drained); t1 sets the write address (SUB, the next NEW's
        read address; in DEC, it steps the counters to the next word and registers its
        flags); t2 takes ``X`` into ``wbuf`` and sets the next operation's read address; the
        cycle after it (t3, or the next NEW's t0 after SUB) folds ``wbuf`` into ``acc`` in SUB
        and NEW; t3 writes ``acc ^ wbuf``."""
        port = self.port
        with m.If(s.t0 & ~s.ph_load & port.free & (~s.writes | (port.free3 & port.drained))):
            m.d.sync += [s.t0.eq(0), s.t1.eq(1)]
        with m.If(s.t1):
            m.d.sync += [s.t1.eq(0), s.t2.eq(1), s.look.eq(0), s.kop.eq(s.ph_dec),
                         s.kidx.eq(Mux(s.ph_dec, s.di, s.i[2:])),
                         s.ksel.eq(Const(1, 4) << s.i[:2])]
            with m.If(s.ph_sub):
                # NEW: w[i - Nk] in its column, the round constant after RotWord
                m.d.sync += [s.rc.eq(s.f_rot), s.ksel.eq(Const(1, 4) << s.jb[:2]),
                             s.kidx.eq(s.jb[2:]), s.kop.eq(0)]
            with m.If(s.ph_zero):
                m.d.sync += [s.kop.eq(s.zc[4]), s.kidx.eq(s.zc[:4]), s.ksel.eq(0b1111)]
            with m.If(s.ph_dec):
                self._step_counters(m, s)
        with m.If(s.t2):
            m.d.sync += [s.t2.eq(0), s.t3.eq(s.writes), s.t0.eq(s.ph_sub), s.wbuf.eq(s.x)]
            with m.If(s.ph_sub):
                m.d.sync += [s.ph_sub.eq(0), s.ph_new.eq(1)]
            with m.If(s.ph_new):
                # DEC: InvMixColumns through the table, or zeros
                m.d.sync += [s.look.eq(s.f_imc), s.thi.eq(self.layout.imc >> 8),
                             s.ksel.eq(0), s.rc.eq(0)]
        m.d.sync += s.fold.eq(s.t2 & (s.ph_sub | s.ph_new))
        with m.If(s.fold):
            m.d.sync += s.acc.eq(s.acc_d)
        # (idle: zero, over any other update, so that it is the flip-flops' synchronous reset)
        with m.If(~s.lock):
            m.d.sync += s.acc.eq(0)
        with m.If(s.t3):
            m.d.sync += [s.t3.eq(0), s.t0.eq(1)]
            with m.If(s.ph_new):
                m.d.sync += [s.ph_new.eq(0), s.ph_dec.eq(1)]

    def _step_counters(self, m, s):
        """DEC's t1: word i + 1's counters, and its flags from word i's counters."""
        wrap = s.imod == s.nk_m1
        row_end = s.i[:2] == 3
        key_next = (s.jb[3:] == 7) & (s.jb[:3] != 7)       # i + 1 < Nk
        m.d.sync += [
            s.i.eq(_inc(s.i)), s.jb.eq(_inc(s.jb)),
            s.imod.eq(Mux(wrap, 0, _inc(s.imod))),
            s.di.eq(_inc(s.di, down=1, carry=row_end)),
            s.n_key.eq(key_next),
            s.f_rot.eq(wrap & ~key_next),
            s.n_sub.eq((wrap | (s.nk8 & (s.imod == 3))) & ~key_next),
            s.f_imc.eq(((s.i[2:] != 0) | row_end)
                       & (s.di != 0) & ~((s.di == 1) & row_end)),
            s.n_last.eq((s.i[:2] == 2) & (s.di == 0)),
        ]

    def _next_word(self, m, s):
        """DEC's t3: the last word ends the load; otherwise the next word's first operation,
        whose read address DEC's t2 sets."""
        lay = self.layout
        with m.If(s.t2 & s.ph_dec):
            m.d.sync += [s.look.eq(0), s.rc.eq(0), s.ksel.eq(0)]
            with m.If(~s.f_last & ~s.n_key & s.n_sub):
                snorot = lay.srot if lay.snorot is None else lay.snorot
                m.d.sync += [s.look.eq(1), s.thi.eq(Mux(s.f_rot, lay.srot >> 8, snorot >> 8))]
            with m.Elif(~s.f_last & ~s.n_key):
                m.d.sync += [s.ksel.eq(Const(1, 4) << s.jb[:2]), s.kidx.eq(s.jb[2:]),
                             s.kop.eq(0)]
        with m.If(s.t3 & s.ph_dec):
            m.d.sync += [s.ph_dec.eq(0), s.f_last.eq(s.n_last)]
            with m.If(s.f_last):
                m.d.sync += [s.lock.eq(0), s.t0.eq(0)]
            with m.Elif(s.n_key):
                m.d.sync += s.ph_load.eq(1)
            with m.Elif(s.n_sub):
                m.d.sync += s.ph_sub.eq(1)
            with m.Else():
                m.d.sync += s.ph_new.eq(1)

    def _zeroize(self, m, s):
        """ZEROIZE: zeros (a read of zeros XOR the cleared accumulator) to all four columns
        at {op, index} = zc, for all 32."""
        with m.If(s.t2 & s.ph_zero):
            m.d.sync += s.ksel.eq(0)        # the next read: zeros
        with m.If(s.t3 & s.ph_zero):
            m.d.sync += s.zc.eq(_inc(s.zc))
            with m.If(s.zc == 31):
                m.d.sync += [s.ph_zero.eq(0), s.lock.eq(0), s.t0.eq(0)]
