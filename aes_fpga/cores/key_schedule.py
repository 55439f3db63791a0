"""Sequential AES key schedule producing the round keys of both ops as ``rk`` transfers.

One 32-bit word per cycle, keeping the last 8 words in a small LUT RAM:

- forward, words ``w[0] .. w[4 Nr + 3]`` (FIPS-197 §5.2); word ``i`` is written as word
  ``i % 4`` of encryption round key ``index = i // 4``;
- backward from the last ``Nk`` words, using ``w[m - Nk] = w[m] ^ T(w[m - 1], m)`` (the expansion
  is invertible), words ``w[4 Nr + 3] .. w[0]``; every 4 words give ``K_r`` for ``r = Nr .. 0``,
  which is exactly the equivalent inverse cipher's order of use, so decryption key ``index =
  Nr - r`` is ``InvMixColumns(K_r)`` (columnwise, one word per cycle) or ``K_r`` itself for the
  first and last. No memory of the encryption keys, and no round-key register, is needed: each
  word goes to ``rk`` the cycle it is made, and the schedule waits while ``rk`` is not ready.

The key words are read from the ``key`` payload while it is held valid; the transfer completes
(``key.ready``) when the last key word has been taken, so no key register is spent.
"""

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from .. import model
from ..hw import inv_mix_column, rot_word
from .interface import KeyBits, key_layout, round_key_write_layout

__all__ = ["KeySchedule", "key_load_cycles"]

_NK = {KeyBits.AES128: 4, KeyBits.AES192: 6, KeyBits.AES256: 8}
_BITS = {128: KeyBits.AES128, 192: KeyBits.AES192, 256: KeyBits.AES256}


def key_load_cycles(key_bits):
    """Cycles from the key transfer's start to its last ``rk`` write when ``rk`` never waits:
    the first cycle takes the key, then one word per cycle forward and backward, plus 3 cycles
    for each word that needs SubWord (in each direction)."""
    nr = model.num_rounds(key_bits)
    nk = key_bits // 32
    subwords = sum(1 for j in range(nk, 4 * nr + 4) if j % nk == 0 or (nk == 8 and j % 8 == 4))
    return 1 + 2 * 4 * (nr + 1) + 2 * 3 * subwords


def _rcon_table():
    table, rc = [0], 1
    for _ in range(10):
        table.append(rc)
        rc = model.xtime(rc)
    return table


class KeySchedule(wiring.Component):
    """Expands keys from the ``key`` stream into ``rk`` writes for a core's round-key memory.

    A transfer with ``zeroize`` set writes zero to all 128 round-key words of its slot (both
    ops, indices 0 to 15) instead: 129 cycles when ``rk`` never waits.

    ``lock``/``lock_slot`` are high from the start of a key transfer until its last ``rk`` write,
    so the core can hold back requests for that key slot. A key whose length is not in
    ``key_sizes`` is consumed and dropped, with a one-cycle pulse on ``rejected``.

    Load time: :func:`key_load_cycles` (149 / 153 / 199 cycles for AES-128/192/256), plus any
    cycles ``rk`` is not ready (the core waits for blocks of the slot to drain).

    Parameters
    ----------
    key_slots : int
        Key slots (1 to 64).
    key_sizes : tuple of int
        Key lengths to support, from 128, 192 and 256.
    """

    def __init__(self, *, key_slots=1, key_sizes=(128, 192, 256)):
        key_sizes = tuple(sorted(set(key_sizes)))
        if not key_sizes or any(k not in _BITS for k in key_sizes):
            raise ValueError(f"key_sizes: {key_sizes!r} is not allowed; choose a non-empty subset "
                             "of (128, 192, 256)")
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
        # write w[m-Nk]. The same two read ports and one write port serve both directions.
        m.submodules.words = words = Memory(shape=unsigned(32), depth=8, init=[])
        rd_prev = words.read_port(domain="comb")
        rd_other = words.read_port(domain="comb")
        wr = words.write_port(domain="sync")

        nk = Signal(4)
        nr = Signal(4)
        slot = Signal.like(self.lock_slot)
        idx = Signal(6)           # word index: i forward, m backward
        imod = Signal(3)          # idx % nk
        iq = Signal(4)            # idx // nk
        backward = Signal()

        m.d.comb += [
            rd_prev.addr.eq(idx - 1),
            rd_other.addr.eq(Mux(backward, idx, idx - nk)),
            wr.addr.eq(Mux(backward, idx - nk, idx)),
        ]

        # T(x, idx) with x = w[idx - 1]: SubWord(RotWord(x)) ^ Rcon on a multiple of Nk;
        # SubWord(x) at 4 mod 8 for AES-256; x otherwise. One combinational S-box ROM (LUTs)
        # makes SubWord a byte per cycle: three bytes go to a register, the fourth is used
        # directly, so a word that needs SubWord takes 4 cycles instead of 1.
        x = rd_prev.data
        at_multiple = imod == 0
        needs_sub = (at_multiple | ((nk == 8) & (imod == 4))) & (idx >= nk)
        sub_in = Mux(at_multiple, rot_word(x), x)
        sub_step = Signal(2)
        sub_done = Signal(24)
        m.submodules.sbox = sbox = Memory(shape=unsigned(8), depth=256, init=model.SBOX)
        sbox_rd = sbox.read_port(domain="comb")
        m.d.comb += sbox_rd.addr.eq(sub_in.word_select(sub_step, 8))
        sub_word = Cat(sub_done, sbox_rd.data)
        rcon = Array(Const(v, 8) for v in _rcon_table())[iq]
        temp = Mux(at_multiple, sub_word ^ Cat(Const(0, 24), rcon),
                   Mux((nk == 8) & (imod == 4), sub_word, x))
        # A step may be taken when its word is ready: at once, or on the last SubWord cycle.
        word_ready = ~needs_sub | (sub_step == 3)

        key_words = Array(kp.key.word_select(7 - j, 32) for j in range(8))
        supported = Signal()
        m.d.comb += supported.eq(Cat(*[kp.key_bits == _BITS[k] for k in self.key_sizes]).any())

        def count_up():
            wrap = imod == nk - 1
            m.d.sync += [idx.eq(idx + 1), imod.eq(Mux(wrap, 0, imod + 1)),
                         iq.eq(iq + wrap)]

        def count_down():
            wrap = imod == 0
            m.d.sync += [idx.eq(idx - 1), imod.eq(Mux(wrap, nk - 1, imod - 1)),
                         iq.eq(iq - wrap)]

        rk = self.rk.payload
        m.d.comb += [rk.slot.eq(slot), rk.nr.eq(nr), self.lock_slot.eq(slot)]
        last_word = 4 * nr + 3
        # ZEROIZE: every word of every round key of the slot, both ops, all 16 indices.
        zero_count = Signal(7)
        smallest_nr = model.num_rounds(self.key_sizes[0])

        with m.FSM():
            with m.State("IDLE"):
                with m.If(self.key.valid):
                    with m.If(kp.zeroize):
                        m.d.comb += self.key.ready.eq(1)
                        m.d.sync += [slot.eq(kp.slot), zero_count.eq(0), nr.eq(smallest_nr)]
                        m.next = "ZEROIZE"
                    with m.Elif(supported):
                        m.d.sync += [
                            slot.eq(kp.slot), idx.eq(0), imod.eq(0), iq.eq(0),
                            backward.eq(0),
                            nk.eq(Mux(kp.key_bits == KeyBits.AES128, 4,
                                      Mux(kp.key_bits == KeyBits.AES192, 6, 8))),
                            nr.eq(Mux(kp.key_bits == KeyBits.AES128, 10,
                                      Mux(kp.key_bits == KeyBits.AES192, 12, 14))),
                        ]
                        m.next = "FORWARD"
                    with m.Else():
                        m.d.comb += [self.key.ready.eq(1), self.rejected.eq(1)]
            with m.State("ZEROIZE"):
                m.d.comb += [self.lock.eq(1), self.rk.valid.eq(1), rk.op.eq(zero_count[6]),
                             rk.index.eq(zero_count[2:6]), rk.word.eq(zero_count[:2]),
                             rk.key.eq(0)]
                with m.If(self.rk.ready):
                    m.d.sync += zero_count.eq(zero_count + 1)
                    with m.If(zero_count == 127):
                        m.next = "IDLE"
            with m.State("FORWARD"):
                m.d.comb += self.lock.eq(1)
                with m.If(~word_ready):
                    m.d.sync += [sub_done.word_select(sub_step, 8).eq(sbox_rd.data),
                                 sub_step.eq(sub_step + 1)]
                # Word idx of the expansion: a key word while idx < Nk, computed after that. It
                # is word idx % 4 of encryption round key idx // 4; the buffer advances only
                # when the word is written to rk.
                new = Mux(idx < nk, key_words[idx[:3]], rd_other.data ^ temp)
                step = Signal()
                m.d.comb += [self.rk.valid.eq(word_ready), rk.op.eq(0),
                             rk.index.eq(idx[2:]), rk.word.eq(idx[:2]), rk.key.eq(new),
                             step.eq(word_ready & self.rk.ready),
                             wr.data.eq(new), wr.en.eq(step),
                             # the key transfer completes with its last word
                             self.key.ready.eq(step & (idx == nk - 1))]
                with m.If(step):
                    m.d.sync += sub_step.eq(0)
                    with m.If(idx == last_word):
                        # idx, idx % Nk and idx // Nk now describe the last word: start there.
                        m.d.sync += backward.eq(1)
                        m.next = "BACKWARD"
                    with m.Else():
                        count_up()
            with m.State("BACKWARD"):
                m.d.comb += self.lock.eq(1)
                with m.If(~word_ready):
                    m.d.sync += [sub_done.word_select(sub_step, 8).eq(sbox_rd.data),
                                 sub_step.eq(sub_step + 1)]
                # Word m = idx is word m % 4 of K_(m // 4): decryption key nr - m // 4, through
                # InvMixColumns except for the first and last. w[m - Nk] is recovered into the
                # buffer as the step is taken.
                word = rd_other.data
                r = idx[2:]
                step = Signal()
                m.d.comb += [self.rk.valid.eq(word_ready), rk.op.eq(1),
                             rk.index.eq(nr - r), rk.word.eq(idx[:2]),
                             rk.key.eq(Mux((r == 0) | (r == nr), word, inv_mix_column(word))),
                             step.eq(word_ready & self.rk.ready),
                             wr.data.eq(word ^ temp), wr.en.eq(step)]
                with m.If(step):
                    m.d.sync += sub_step.eq(0)
                    count_down()
                    with m.If(idx == 0):
                        m.next = "IDLE"
        return m
