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

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from .. import model
from .interface import KeyBits, check_key_sizes, key_layout, round_key_write_layout

__all__ = ["KeySchedule", "key_load_cycles"]

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


def _xor_all(values):
    acc = values[0]
    for v in values[1:]:
        acc = acc ^ v
    return acc


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
        super().__init__({
            "key": In(stream.Signature(key_layout(key_slots))),
            "rk": Out(stream.Signature(round_key_write_layout(key_slots))),
            "lock": Out(1),
            "lock_slot": Out(range(key_slots)),
            "rejected": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        kp = self.key.payload

        # The last 8 words live in an 8-entry LUT RAM used as a circular buffer (word i at
        # i % 8). Forward: read w[i-1] and w[i-Nk], write w[i]. Backward: read w[m-1] and w[m],
        # write w[m-Nk]. The addresses are registers stepped with idx, so no subtraction or
        # mux sits in front of the RAM: p_prev = (idx-1) % 8; p_other and p_write are
        # (idx-Nk) % 8 and idx % 8 forward, and swap roles when the direction turns.
        m.submodules.words = words = Memory(shape=unsigned(32), depth=8, init=[])
        rd_prev = words.read_port(domain="comb")
        rd_other = words.read_port(domain="comb")
        wr = words.write_port(domain="sync")
        p_prev = Signal(3)
        p_other = Signal(3)
        p_write = Signal(3)
        m.d.comb += [rd_prev.addr.eq(p_prev), rd_other.addr.eq(p_other), wr.addr.eq(p_write)]

        nk8 = Signal()            # Nk = 8
        nk_m1 = Signal(3)         # Nk - 1
        nr = Signal(4)
        end_idx = Signal(6)       # idx of the direction's last word: 4 Nr + 3, then 0
        slot = Signal.like(self.lock_slot)
        idx = Signal(6)           # word index: i forward, m backward
        imod = Signal(3)          # idx % Nk
        iq = Signal(4)            # idx // Nk
        iq_zero = Signal()        # idx < Nk
        backward = Signal()
        dec_index = Signal(4)     # backward: Nr - idx // 4, the decryption key index
        key_phase = Signal()      # forward and idx < Nk: the word is a key word

        # lock is the busy flag: low, the schedule is idle and takes the next transfer. The
        # other states are one-hot bits (all low while idle or while the last word waits in
        # rk), so no path spends a level decoding a state number.
        lock = Signal()
        s_zero = Signal()         # zeroize: zero words into rk
        s_read = Signal()         # read the buffer, register the word's flags
        s_sub = Signal()          # SubWord, 5 cycles
        s_calc = Signal()         # y ^ T and the first half of InvMixColumns(y)
        s_write = Signal()        # into the buffer and rk, once rk's register is empty

        at_multiple = imod == 0
        needs_sub = Signal()
        m.d.comb += needs_sub.eq((at_multiple | (nk8 & (imod == 4))) & ~iq_zero)

        # Per-word flags, registered in READ from the counters.
        f_sub = Signal()          # T needs SubWord
        f_rot = Signal()          # ... of RotWord(x), with Rcon: idx a multiple of Nk
        f_use_x = Signal()        # T = x (a computed word that needs no SubWord)
        f_wrap = Signal()         # idx % Nk wraps at this step
        f_iq1 = Signal()          # idx // Nk = 1
        f_turn = Signal()         # the last forward word: the direction turns after it
        f_end = Signal()          # the last backward word
        f_key_last = Signal()     # the last key word: the key transfer completes
        f_bypass = Signal()       # first or last decryption key: no InvMixColumns
        f_dec_step = Signal()     # backward: the step leaves decryption key dec_index
        rcon = Signal(8)          # Rcon for T, or 0

        x = Signal(32)            # w[idx - 1], rotated a byte per SubWord cycle
        y = Signal(32)            # w[idx - Nk] forward (or the key word), w[idx] backward
        sub = Signal(32)          # SubWord(x), shifted in a byte per cycle
        new = Signal(32)          # y ^ T(x, idx)

        # InvMixColumns(y) over two registered stages: each of its output bits is the XOR of
        # 11 to 19 bits of y, split into parts of at most 4 (registered in CALC; one LUT
        # each, with the choice of y itself for the first and last decryption key); the rk
        # register's input XORs the 3 to 5 parts of its bit (2 levels).
        imc_parts = []
        for bit, terms in enumerate(_inv_mix_column_terms()):
            parts = []
            for g in range(0, len(terms), 4):
                part = Signal(name=f"imc{bit}_{len(parts)}")
                m.d.sync += part.eq(Mux(f_bypass, y[bit] if g == 0 else 0,
                                        _xor_all([y[t] for t in terms[g:g + 4]])))
                parts.append(part)
            imc_parts.append(parts)
        imc = Cat(*[_xor_all(parts) for parts in imc_parts])

        # The S-box is read through a registered port (a 256-entry LUT ROM, one level) with its
        # address straight from x: one byte a cycle, each result a cycle later. SubWord commutes
        # with RotWord, so RotWord is applied to the result in CALC.
        m.submodules.sbox = sbox = Memory(shape=unsigned(8), depth=256, init=model.SBOX)
        sbox_rd = sbox.read_port(domain="sync")
        m.d.comb += sbox_rd.addr.eq(x[24:32])
        sub_step = Signal(3)
        sub_end = Signal()
        m.d.comb += sub_end.eq(s_sub & (sub_step == _SUB_CYCLES - 1))

        key_words = Array(kp.key.word_select(7 - j, 32) for j in range(8))
        rcon_table = Array(Const(v, 8) for v in _rcon_table())
        supported = Signal()
        m.d.comb += supported.eq(Cat(*[kp.key_bits == _BITS[k] for k in self.key_sizes]).any())

        # The rk output register, loaded only when empty: rk.ready (which the core computes
        # from its own state) then reaches nothing but rk.valid and lock, never the wide
        # enables of the schedule. Words come at most every third cycle, so this costs the
        # schedule nothing; a zeroize runs at half rate.
        rk = self.rk.payload
        rk_op = Signal()
        rk_index = Signal(4)
        rk_word = Signal(2)
        rk_key = Signal(32)
        rk_last = Signal()        # the transfer's last word: lock falls once it is taken
        m.d.comb += [
            rk.slot.eq(slot), rk.nr.eq(nr), rk.op.eq(rk_op), rk.index.eq(rk_index),
            rk.word.eq(rk_word), rk.key.eq(rk_key),
            self.lock_slot.eq(slot), self.lock.eq(lock),
        ]
        zero_load = Signal()      # a zero word goes into rk
        write = Signal()          # WRITE goes into the buffer and rk
        m.d.comb += [zero_load.eq(s_zero & ~self.rk.valid), write.eq(s_write & ~self.rk.valid)]
        with m.If(zero_load | write):
            m.d.sync += self.rk.valid.eq(1)
        with m.Elif(self.rk.ready):
            m.d.sync += self.rk.valid.eq(0)

        # ZEROIZE: every word of every round key of the slot, both ops, all 16 indices.
        zero_count = Signal(7)
        zero_last = Signal()      # zero_count = 127
        smallest_nr = model.num_rounds(self.key_sizes[0])

        # ---- idle: set up for a key while waiting; none of this depends on key.valid --------
        go = Signal()
        m.d.comb += go.eq(~lock & self.key.valid & (kp.zeroize | supported))
        with m.If(~lock):
            is128 = kp.key_bits == KeyBits.AES128
            is192 = kp.key_bits == KeyBits.AES192
            m.d.sync += [
                slot.eq(kp.slot), idx.eq(0), imod.eq(0), iq.eq(0), iq_zero.eq(1),
                backward.eq(0), key_phase.eq(1), zero_count.eq(0), zero_last.eq(0),
                rk_key.eq(0), p_prev.eq(7), p_write.eq(0),
                p_other.eq(Mux(is128, 4, Mux(is192, 2, 0))),
                nk8.eq(~is128 & ~is192), nk_m1.eq(Mux(is128, 3, Mux(is192, 5, 7))),
                nr.eq(Mux(kp.zeroize, smallest_nr, Mux(is128, 10, Mux(is192, 12, 14)))),
                end_idx.eq(Mux(is128, 43, Mux(is192, 51, 59))),
                lock.eq(go), s_zero.eq(go & kp.zeroize), s_read.eq(go & ~kp.zeroize),
            ]
            m.d.comb += [
                # a zeroize transfer or a rejected key completes at once
                self.key.ready.eq(self.key.valid & (kp.zeroize | ~supported)),
                self.rejected.eq(self.key.valid & ~kp.zeroize & ~supported),
            ]
        with m.Elif(self.rk.valid & self.rk.ready & rk_last):
            m.d.sync += lock.eq(0)

        # ---- zeroize -------------------------------------------------------------------------
        with m.If(zero_load):
            m.d.sync += [rk_op.eq(zero_count[6]), rk_index.eq(zero_count[2:6]),
                         rk_word.eq(zero_count[:2]), rk_last.eq(zero_last),
                         zero_count.eq(_step(zero_count)), zero_last.eq(zero_count == 126)]
            with m.If(zero_last):
                m.d.sync += s_zero.eq(0)

        # ---- READ ----------------------------------------------------------------------------
        with m.If(s_read):
            m.d.sync += [
                x.eq(rd_prev.data),
                y.eq(Mux(key_phase, key_words[idx[:3]], rd_other.data)),
                f_sub.eq(needs_sub), f_rot.eq(at_multiple),
                f_use_x.eq(~key_phase & ~needs_sub),
                f_wrap.eq(Mux(backward, at_multiple, imod == nk_m1)),
                f_iq1.eq(iq == 1),
                rcon.eq(Mux(at_multiple, rcon_table[iq], 0)),
                f_turn.eq(~backward & (idx == end_idx)),
                f_end.eq(backward & (idx == 0)),
                f_key_last.eq(key_phase & (imod == nk_m1)),
                f_bypass.eq(backward & ((idx[2:] == 0) | (idx[2:] == nr))),
                f_dec_step.eq(idx[:2] == 0),
                sub_step.eq(0),
                s_read.eq(0), s_sub.eq(needs_sub), s_calc.eq(~needs_sub),
            ]

        # ---- SUB -----------------------------------------------------------------------------
        with m.If(s_sub):
            # Cycle k reads the S-box at byte k of x; the byte arrives in cycle k + 1, so five
            # shifts leave SubWord(x) in sub (the first shifts in nothing of use).
            m.d.sync += [sub.eq(Cat(sbox_rd.data, sub[:24])), x.eq(Cat(x[24:], x[:24])),
                         sub_step.eq(_step(sub_step))]
            with m.If(sub_end):
                m.d.sync += [s_sub.eq(0), s_calc.eq(1)]

        # ---- CALC ----------------------------------------------------------------------------
        with m.If(s_calc):
            # the key transfer completes once its last word is in y
            m.d.comb += self.key.ready.eq(f_key_last)
            sub_word = Mux(f_rot, Cat(sub[24:], sub[:24]), sub) ^ Cat(Const(0, 24), rcon)
            m.d.sync += [new.eq(y ^ Mux(f_sub, sub_word, Mux(f_use_x, x, 0))),
                         s_calc.eq(0), s_write.eq(1)]

        # ---- WRITE ---------------------------------------------------------------------------
        with m.If(write):
            # Word idx % 4 of encryption key idx // 4, or of decryption key Nr - idx // 4
            # (through InvMixColumns except for the first and last, see imc).
            m.d.comb += [wr.data.eq(new), wr.en.eq(1)]
            m.d.sync += [
                rk_op.eq(backward), rk_index.eq(Mux(backward, dec_index, idx[2:])),
                rk_word.eq(idx[:2]), rk_last.eq(f_end),
                rk_key.eq(Mux(backward, imc, new)),
                s_write.eq(0), s_read.eq(~f_end),
            ]
            with m.If(f_key_last):
                m.d.sync += key_phase.eq(0)
            with m.If(f_turn):
                # idx, idx % Nk and idx // Nk describe the last word: go back from there,
                # reading w[m] where w[i - Nk] was read and writing the other way.
                m.d.sync += [backward.eq(1), dec_index.eq(0),
                             p_other.eq(p_write), p_write.eq(p_other)]
            with m.Elif(backward):
                m.d.sync += [idx.eq(_step(idx, down=1)),
                             imod.eq(Mux(f_wrap, nk_m1, _step(imod, down=1))),
                             iq.eq(_step(iq, down=1, carry=f_wrap)),
                             iq_zero.eq(iq_zero | (f_wrap & f_iq1)),
                             dec_index.eq(_step(dec_index, carry=f_dec_step)),
                             p_prev.eq(_step(p_prev, down=1)), p_other.eq(_step(p_other, down=1)),
                             p_write.eq(_step(p_write, down=1))]
            with m.Else():
                m.d.sync += [idx.eq(_step(idx)), imod.eq(Mux(f_wrap, 0, _step(imod))),
                             iq.eq(_step(iq, carry=f_wrap)), iq_zero.eq(iq_zero & ~f_wrap),
                             p_prev.eq(_step(p_prev)), p_other.eq(_step(p_other)),
                             p_write.eq(_step(p_write))]
        return m
