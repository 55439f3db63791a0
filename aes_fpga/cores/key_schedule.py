"""Sequential AES key schedule producing the round keys of both ops as ``rk`` transfers.

One 32-bit word at a time, keeping the last 8 words in a small LUT RAM:

- forward, words ``w[0] .. w[4 Nr + 3]`` (FIPS-197 §5.2); word ``i`` is written as word
  ``i % 4`` of encryption round key ``index = i // 4``;
- backward from the last ``Nk`` words, using ``w[m - Nk] = w[m] ^ T(w[m - 1], m)`` (the expansion
  is invertible), words ``w[4 Nr + 3] .. w[0]``; every 4 words give ``K_r`` for ``r = Nr .. 0``,
  which is exactly the equivalent inverse cipher's order of use, so decryption key ``index =
  Nr - r`` is ``InvMixColumns(K_r)`` (columnwise, one word at a time) or ``K_r`` itself for the
  first and last. No memory of the encryption keys is needed.

Both directions do the same thing for word index ``idx``: read ``x = w[idx - 1]`` and ``y``
(``w[idx - Nk]`` forward, ``w[idx]`` backward), compute ``y ^ T(x, idx)`` and write it to the
buffer. The schedule is pipelined for logic depth rather than speed, since it runs once per key:
every register's next state takes at most 2 LUT levels in the 7-series netlist, alone and
inside the core (``tests/test_core_depth.py``). Each word takes a fixed micro-sequence:

- READ: the LUT RAM is read at registered addresses (kept as counters, never subtracted) into
  ``x`` and ``y``; flags for the word (SubWord, Rcon, last word, ...) are registered;
- SUB (5 cycles, only for a word that needs SubWord): one byte a cycle through the S-box's
  registered read port, whose address comes from the ``x`` register, shifted into a register;
- CALC: ``y ^ T`` is registered, and so are partial XORs of ``InvMixColumns(y)``;
- WRITE: the word goes into the buffer and into the ``rk`` output register, once it is empty.

The key words are read from the ``key`` payload while it is held valid; the transfer completes
(``key.ready``) when the last key word has been taken, so no key register is spent.
"""

from types import SimpleNamespace

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import Out

from .. import model
from ..hw import xor_all
from .interface import (
    KeyBits,
    check_core_options,
    check_key_sizes,
    core_members,
    key_schedule_members,
    round_key_write_layout,
)

__all__ = ["KeySchedule", "key_load_cycles", "WithKeySchedule"]

_NK = {KeyBits.AES128: 4, KeyBits.AES192: 6, KeyBits.AES256: 8}
_BITS = {128: KeyBits.AES128, 192: KeyBits.AES192, 256: KeyBits.AES256}

#: Cycles of one word without SubWord (READ, CALC, WRITE), and the extra cycles of SubWord.
_WORD_CYCLES = 3
_SUB_CYCLES = 5


def key_load_cycles(key_bits):
    """Cycles from the key transfer's start to its last ``rk`` write when ``rk`` never waits:
    the first cycle takes the key, then 3 cycles per word forward and backward, 5 more for each
    word that needs SubWord (in each direction), and the last word's cycle in the ``rk``
    output register."""
    if key_bits not in _BITS:
        raise ValueError(f"key_bits: {key_bits!r} is not allowed; choose 128, 192 or 256")
    nr = model.num_rounds(key_bits)
    nk = key_bits // 32
    subwords = sum(1 for j in range(nk, 4 * nr + 4) if j % nk == 0 or (nk == 8 and j % 8 == 4))
    return 1 + 2 * (_WORD_CYCLES * 4 * (nr + 1) + _SUB_CYCLES * subwords) + 1


def _inv_mix_column_terms():
    """For each bit of InvMixColumns(w) (bit 0 first), the bits of w it is the XOR of."""
    terms = []
    for bit in range(32):
        row, k = 3 - bit // 8, bit % 8
        terms.append([8 * (3 - (row + n) % 4) + j
                      for n, c in enumerate((14, 11, 13, 9))
                      for j in range(8) if (model.gf_mul(1 << j, c) >> k) & 1])
    return terms


def _step(value, down=0, carry=1):
    """``value + carry`` (``value - carry`` when ``down``), wrapping, as explicit XOR/AND
    terms: Yosys would give an adder a CARRY4 chain, whose delay ABC then treats as the depth
    budget for the LUT logic around it."""
    bits = []
    for k in range(len(value)):
        bits.append(value[k] ^ carry)
        carry = carry & (value[k] ^ down)
    return Cat(*bits)


def _rcon_table():
    table, rc = [0], 1
    for _ in range(10):
        table.append(rc)
        rc = model.xtime(rc)
    return table + [0] * (16 - len(table))


class KeySchedule(wiring.Component):
    """Expands keys from the ``key`` stream into ``rk`` writes for a core's round-key memory.

    A transfer with ``zeroize`` set writes zero to all 128 round-key words of its slot (both
    ops, indices 0 to 15) instead, one word every other cycle: 256 cycles when ``rk`` never
    waits.

    ``lock``/``lock_slot`` are high from the start of a key transfer until its last ``rk`` write,
    so the core can hold back requests for that key slot. A key whose length is not in
    ``key_sizes`` is consumed and dropped, with a one-cycle pulse on ``rejected``.

    Load time: :func:`key_load_cycles` (366 / 394 / 492 cycles for AES-128/192/256), plus any
    cycles ``rk`` is not ready (the core waits for blocks of the slot to drain).

    ``rk`` comes from an output register (payload and ``valid``), reloaded only once it is
    empty; ``rk.ready`` only empties it, so nothing is lost under back-pressure and no path
    leads from ``rk.ready`` to ``rk.valid`` or the payload in the same cycle.

    Stages, one method each in this order: the word buffer, the registers (counters, state
    bits, per-word flags, data words), InvMixColumns, the S-box, the key input, the ``rk``
    output register; then the states: idle, ZEROIZE, and a word's READ, SUB, CALC and WRITE.

    Parameters
    ----------
    key_slots : int
        Key slots (1 to 64).
    key_sizes : tuple of int
        Key lengths to support, from 128, 192 and 256.
    """

    def __init__(self, *, key_slots=1, key_sizes=(128, 192, 256)):
        key_sizes = check_key_sizes(key_sizes)
        self.key_slots = key_slots
        self.key_sizes = key_sizes
        super().__init__(key_schedule_members(
            key_slots, {"rk": Out(stream.Signature(round_key_write_layout(key_slots)))}))

    def elaborate(self, platform):
        # One method per stage (see the class docstring). Each adds its logic to m and its
        # signals to s for the stages after it; their order is the statements' order in the
        # netlist.
        m = Module()
        s = SimpleNamespace()
        self._word_buffer(m, s)
        self._registers(m, s)
        self._inv_mix_columns(m, s)
        self._sbox(m, s)
        self._key_input(m, s)
        self._rk_output(m, s)
        self._idle(m, s)
        self._zeroize(m, s)
        self._read(m, s)
        self._sub(m, s)
        self._calc(m, s)
        self._write(m, s)
        return m

    def _word_buffer(self, m, s):
        """The last 8 words, in an 8-entry LUT RAM used as a circular buffer (word i at i % 8).

        Forward: read w[i-1] and w[i-Nk], write w[i]. Backward: read w[m-1] and w[m], write
        w[m-Nk]. The addresses are registers stepped with idx, so no subtraction or mux sits in
        front of the RAM: p_prev = (idx-1) % 8; p_other and p_write are (idx-Nk) % 8 and idx % 8
        forward, and swap roles when the direction turns."""
        m.submodules.words = words = Memory(shape=unsigned(32), depth=8, init=[])
        s.rd_prev = words.read_port(domain="comb")
        s.rd_other = words.read_port(domain="comb")
        s.wr = words.write_port(domain="sync")
        s.p_prev = Signal(3)
        s.p_other = Signal(3)
        s.p_write = Signal(3)
        m.d.comb += [s.rd_prev.addr.eq(s.p_prev), s.rd_other.addr.eq(s.p_other),
                     s.wr.addr.eq(s.p_write)]

    def _registers(self, m, s):
        """Control: the key length, the word counters, the state bits and the per-word flags;
        and the data words of the step."""
        s.nk8 = Signal()          # Nk = 8
        s.nk_m1 = Signal(3)       # Nk - 1
        s.nr = Signal(4)
        s.end_idx = Signal(6)     # idx of the direction's last word: 4 Nr + 3, then 0
        s.slot = Signal.like(self.lock_slot)
        s.idx = Signal(6)         # word index: i forward, m backward
        s.imod = Signal(3)        # idx % Nk
        s.iq = Signal(4)          # idx // Nk
        s.iq_zero = Signal()      # idx < Nk
        s.backward = Signal()
        s.dec_index = Signal(4)   # backward: Nr - idx // 4, the decryption key index
        s.key_phase = Signal()    # forward and idx < Nk: the word is a key word

        # lock is the busy flag: low, the schedule is idle and takes the next transfer. The
        # other states are one-hot bits (all low while idle or while the last word waits in
        # rk), so no path spends a level decoding a state number.
        s.lock = Signal()
        s.s_zero = Signal()       # zeroize: zero words into rk
        s.s_read = Signal()       # read the buffer, register the word's flags
        s.s_sub = Signal()        # SubWord, 5 cycles
        s.s_calc = Signal()       # y ^ T and the first half of InvMixColumns(y)
        s.s_write = Signal()      # into the buffer and rk, once rk's register is empty

        s.at_multiple = s.imod == 0
        s.needs_sub = Signal()
        m.d.comb += s.needs_sub.eq((s.at_multiple | (s.nk8 & (s.imod == 4))) & ~s.iq_zero)

        # Per-word flags, registered in READ from the counters.
        s.f_sub = Signal()        # T needs SubWord
        s.f_rot = Signal()        # ... of RotWord(x), with Rcon: idx a multiple of Nk
        s.f_use_x = Signal()      # T = x (a computed word that needs no SubWord)
        s.f_wrap = Signal()       # idx % Nk wraps at this step
        s.f_iq1 = Signal()        # idx // Nk = 1
        s.f_turn = Signal()       # the last forward word: the direction turns after it
        s.f_end = Signal()        # the last backward word
        s.f_key_last = Signal()   # the last key word: the key transfer completes
        s.f_bypass = Signal()     # first or last decryption key: no InvMixColumns
        s.f_dec_step = Signal()   # backward: the step leaves decryption key dec_index
        s.rcon = Signal(8)        # Rcon for T, or 0

        s.x = Signal(32)          # w[idx - 1], rotated a byte per SubWord cycle
        s.y = Signal(32)          # w[idx - Nk] forward (or the key word), w[idx] backward
        s.sub = Signal(32)        # SubWord(x), shifted in a byte per cycle
        s.new = Signal(32)        # y ^ T(x, idx)

    def _inv_mix_columns(self, m, s):
        """InvMixColumns(y) over two registered stages: each of its output bits is the XOR of
        11 to 19 bits of y, split into parts of at most 4 (registered in CALC; one LUT each,
        with the choice of y itself for the first and last decryption key); the rk register's
        input XORs the 3 to 5 parts of its bit (2 levels)."""
        imc_parts = []
        for bit, terms in enumerate(_inv_mix_column_terms()):
            parts = []
            for g in range(0, len(terms), 4):
                part = Signal(name=f"imc{bit}_{len(parts)}")
                m.d.sync += part.eq(Mux(s.f_bypass, s.y[bit] if g == 0 else 0,
                                        xor_all([s.y[t] for t in terms[g:g + 4]])))
                parts.append(part)
            imc_parts.append(parts)
        s.imc = Cat(*[xor_all(parts) for parts in imc_parts])

    def _sbox(self, m, s):
        """SubWord's S-box, read through a registered port (a 256-entry LUT ROM, one level)
        with its address straight from x: one byte a cycle, each result a cycle later. SubWord
        commutes with RotWord, so RotWord is applied to the result in CALC."""
        m.submodules.sbox = sbox = Memory(shape=unsigned(8), depth=256, init=model.SBOX)
        s.sbox_rd = sbox.read_port(domain="sync")
        m.d.comb += s.sbox_rd.addr.eq(s.x[24:32])
        s.sub_step = Signal(3)
        s.sub_end = Signal()
        m.d.comb += s.sub_end.eq(s.s_sub & (s.sub_step == _SUB_CYCLES - 1))

    def _key_input(self, m, s):
        """The key transfer's words, read while it is held valid, and whether its length is
        one of ``key_sizes``."""
        kp = self.key.payload
        s.key_words = Array(kp.key.word_select(7 - j, 32) for j in range(8))
        s.supported = Signal()
        m.d.comb += s.supported.eq(Cat(*[kp.key_bits == _BITS[k] for k in self.key_sizes]).any())

    def _rk_output(self, m, s):
        """The rk output register, loaded only when empty: rk.ready (which the core computes
        from its own state) then reaches nothing but rk.valid and lock, never the wide enables
        of the schedule. Words come at most every third cycle, so this costs the schedule
        nothing; a zeroize runs at half rate."""
        rk = self.rk.payload
        s.rk_op = Signal()
        s.rk_index = Signal(4)
        s.rk_word = Signal(2)
        s.rk_key = Signal(32)
        s.rk_last = Signal()      # the transfer's last word: lock falls once it is taken
        m.d.comb += [
            rk.slot.eq(s.slot), rk.nr.eq(s.nr), rk.op.eq(s.rk_op), rk.index.eq(s.rk_index),
            rk.word.eq(s.rk_word), rk.key.eq(s.rk_key),
            self.lock_slot.eq(s.slot), self.lock.eq(s.lock),
        ]
        s.zero_load = Signal()    # a zero word goes into rk
        s.write = Signal()        # WRITE goes into the buffer and rk
        m.d.comb += [s.zero_load.eq(s.s_zero & ~self.rk.valid),
                     s.write.eq(s.s_write & ~self.rk.valid)]
        with m.If(s.zero_load | s.write):
            m.d.sync += self.rk.valid.eq(1)
        with m.Elif(self.rk.ready):
            m.d.sync += self.rk.valid.eq(0)

        # ZEROIZE: every word of every round key of the slot, both ops, all 16 indices.
        s.zero_count = Signal(7)
        s.zero_last = Signal()    # zero_count = 127

    def _idle(self, m, s):
        """Idle: set up for a key while waiting; none of this depends on key.valid."""
        kp = self.key.payload
        smallest_nr = model.num_rounds(self.key_sizes[0])
        go = Signal()
        m.d.comb += go.eq(~s.lock & self.key.valid & (kp.zeroize | s.supported))
        with m.If(~s.lock):
            is128 = kp.key_bits == KeyBits.AES128
            is192 = kp.key_bits == KeyBits.AES192
            m.d.sync += [
                s.slot.eq(kp.slot), s.idx.eq(0), s.imod.eq(0), s.iq.eq(0), s.iq_zero.eq(1),
                s.backward.eq(0), s.key_phase.eq(1), s.zero_count.eq(0), s.zero_last.eq(0),
                s.rk_key.eq(0), s.p_prev.eq(7), s.p_write.eq(0),
                s.p_other.eq(Mux(is128, 4, Mux(is192, 2, 0))),
                s.nk8.eq(~is128 & ~is192), s.nk_m1.eq(Mux(is128, 3, Mux(is192, 5, 7))),
                s.nr.eq(Mux(kp.zeroize, smallest_nr, Mux(is128, 10, Mux(is192, 12, 14)))),
                s.end_idx.eq(Mux(is128, 43, Mux(is192, 51, 59))),
                s.lock.eq(go), s.s_zero.eq(go & kp.zeroize), s.s_read.eq(go & ~kp.zeroize),
            ]
            m.d.comb += [
                # a zeroize transfer or a rejected key completes at once
                self.key.ready.eq(self.key.valid & (kp.zeroize | ~s.supported)),
                self.rejected.eq(self.key.valid & ~kp.zeroize & ~s.supported),
            ]
        with m.Elif(self.rk.valid & self.rk.ready & s.rk_last):
            m.d.sync += s.lock.eq(0)

    def _zeroize(self, m, s):
        """ZEROIZE: a zero word into rk every other cycle, counted by zero_count."""
        with m.If(s.zero_load):
            m.d.sync += [s.rk_op.eq(s.zero_count[6]), s.rk_index.eq(s.zero_count[2:6]),
                         s.rk_word.eq(s.zero_count[:2]), s.rk_last.eq(s.zero_last),
                         s.zero_count.eq(_step(s.zero_count)),
                         s.zero_last.eq(s.zero_count == 126)]
            with m.If(s.zero_last):
                m.d.sync += s.s_zero.eq(0)

    def _read(self, m, s):
        """READ: the buffer's words into x and y (or the key word into y), the word's flags
        from the counters."""
        rcon_table = Array(Const(v, 8) for v in _rcon_table())
        with m.If(s.s_read):
            m.d.sync += [
                s.x.eq(s.rd_prev.data),
                s.y.eq(Mux(s.key_phase, s.key_words[s.idx[:3]], s.rd_other.data)),
                s.f_sub.eq(s.needs_sub), s.f_rot.eq(s.at_multiple),
                s.f_use_x.eq(~s.key_phase & ~s.needs_sub),
                s.f_wrap.eq(Mux(s.backward, s.at_multiple, s.imod == s.nk_m1)),
                s.f_iq1.eq(s.iq == 1),
                s.rcon.eq(Mux(s.at_multiple, rcon_table[s.iq], 0)),
                s.f_turn.eq(~s.backward & (s.idx == s.end_idx)),
                s.f_end.eq(s.backward & (s.idx == 0)),
                s.f_key_last.eq(s.key_phase & (s.imod == s.nk_m1)),
                s.f_bypass.eq(s.backward & ((s.idx[2:] == 0) | (s.idx[2:] == s.nr))),
                s.f_dec_step.eq(s.idx[:2] == 0),
                s.sub_step.eq(0),
                s.s_read.eq(0), s.s_sub.eq(s.needs_sub), s.s_calc.eq(~s.needs_sub),
            ]

    def _sub(self, m, s):
        """SUB: cycle k reads the S-box at byte k of x; the byte arrives in cycle k + 1, so
        five shifts leave SubWord(x) in sub (the first shifts in nothing of use)."""
        with m.If(s.s_sub):
            m.d.sync += [s.sub.eq(Cat(s.sbox_rd.data, s.sub[:24])),
                         s.x.eq(Cat(s.x[24:], s.x[:24])),
                         s.sub_step.eq(_step(s.sub_step))]
            with m.If(s.sub_end):
                m.d.sync += [s.s_sub.eq(0), s.s_calc.eq(1)]

    def _calc(self, m, s):
        """CALC: ``y ^ T(x, idx)`` into new (and the first half of InvMixColumns(y), see
        :meth:`_inv_mix_columns`)."""
        with m.If(s.s_calc):
            # the key transfer completes once its last word is in y
            m.d.comb += self.key.ready.eq(s.f_key_last)
            sub_word = (Mux(s.f_rot, Cat(s.sub[24:], s.sub[:24]), s.sub)
                        ^ Cat(Const(0, 24), s.rcon))
            m.d.sync += [s.new.eq(s.y ^ Mux(s.f_sub, sub_word, Mux(s.f_use_x, s.x, 0))),
                         s.s_calc.eq(0), s.s_write.eq(1)]

    def _write(self, m, s):
        """WRITE: the word into the buffer and the rk register, then the counters and buffer
        addresses step to the next word (or turn round after the last forward word)."""
        with m.If(s.write):
            # Word idx % 4 of encryption key idx // 4, or of decryption key Nr - idx // 4
            # (through InvMixColumns except for the first and last, see imc).
            m.d.comb += [s.wr.data.eq(s.new), s.wr.en.eq(1)]
            m.d.sync += [
                s.rk_op.eq(s.backward), s.rk_index.eq(Mux(s.backward, s.dec_index, s.idx[2:])),
                s.rk_word.eq(s.idx[:2]), s.rk_last.eq(s.f_end),
                s.rk_key.eq(Mux(s.backward, s.imc, s.new)),
                s.s_write.eq(0), s.s_read.eq(~s.f_end),
            ]
            with m.If(s.f_key_last):
                m.d.sync += s.key_phase.eq(0)
            with m.If(s.f_turn):
                # idx, idx % Nk and idx // Nk describe the last word: go back from there,
                # reading w[m] where w[i - Nk] was read and writing the other way.
                m.d.sync += [s.backward.eq(1), s.dec_index.eq(0),
                             s.p_other.eq(s.p_write), s.p_write.eq(s.p_other)]
            with m.Elif(s.backward):
                m.d.sync += [s.idx.eq(_step(s.idx, down=1)),
                             s.imod.eq(Mux(s.f_wrap, s.nk_m1, _step(s.imod, down=1))),
                             s.iq.eq(_step(s.iq, down=1, carry=s.f_wrap)),
                             s.iq_zero.eq(s.iq_zero | (s.f_wrap & s.f_iq1)),
                             s.dec_index.eq(_step(s.dec_index, carry=s.f_dec_step)),
                             s.p_prev.eq(_step(s.p_prev, down=1)),
                             s.p_other.eq(_step(s.p_other, down=1)),
                             s.p_write.eq(_step(s.p_write, down=1))]
            with m.Else():
                m.d.sync += [s.idx.eq(_step(s.idx)),
                             s.imod.eq(Mux(s.f_wrap, 0, _step(s.imod))),
                             s.iq.eq(_step(s.iq, carry=s.f_wrap)),
                             s.iq_zero.eq(s.iq_zero & ~s.f_wrap),
                             s.p_prev.eq(_step(s.p_prev)), s.p_other.eq(_step(s.p_other)),
                             s.p_write.eq(_step(s.p_write))]


class WithKeySchedule(wiring.Component):
    """A core made of a datapath (the subclass's :attr:`DATAPATH`) behind :class:`KeySchedule`,
    with the common core interface (:func:`~aes_fpga.cores.interface.core_members`): the key
    schedule writes the datapath's round keys and locks a slot while it rewrites it. Other
    keyword options go to the datapath. A subclass's ``RESOURCE_GROUPS`` is derived from its
    datapath's: the core's own control, the key schedule, and the datapath's groups under
    ``datapath``."""

    #: The datapath class, set by each core.
    DATAPATH = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.DATAPATH is not None:
            cls.RESOURCE_GROUPS = {
                "": "control", "key_schedule": "key schedule",
                **{f"datapath.{p}" if p else "datapath": g
                   for p, g in cls.DATAPATH.RESOURCE_GROUPS.items()}}

    def __init__(self, *, key_slots=1, key_sizes=(128, 192, 256), tag_width=8, fifo_depth=16,
                 **options):
        self.key_sizes = check_core_options(self, key_slots, tag_width,
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
        m.submodules.datapath = dp = self.DATAPATH(
            key_slots=self.key_slots, tag_width=self.tag_width, fifo_depth=self.fifo_depth,
            key_sizes=self.key_sizes, **self.options)
        wiring.connect(m, wiring.flipped(self.key), ks.key)
        wiring.connect(m, ks.rk, dp.rk)
        wiring.connect(m, wiring.flipped(self.i), dp.i)
        wiring.connect(m, dp.o, wiring.flipped(self.o))
        m.d.comb += [dp.lock.eq(ks.lock), dp.lock_slot.eq(ks.lock_slot),
                     self.key_rejected.eq(ks.rejected)]
        return m
