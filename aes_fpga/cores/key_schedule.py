"""Sequential AES key schedule producing the round keys of both ops as ``rk`` transfers.

One 32-bit word per cycle, through a sliding window of the last 8 words:

- forward, words ``w[0] .. w[4 Nr + 3]`` (FIPS-197 §5.2); word ``i`` is written as word
  ``i % 4`` of encryption round key ``index = i // 4``;
- backward from the last ``Nk`` words, using ``w[m - Nk] = w[m] ^ T(w[m - 1], m)`` (the expansion
  is invertible), words ``w[4 Nr + 3] .. w[0]``; every 4 words give ``K_r`` for ``r = Nr .. 0``,
  which is exactly the equivalent inverse cipher's order of use, so decryption key ``index =
  Nr - r`` is ``InvMixColumns(K_r)`` (columnwise, one word per cycle) or ``K_r`` itself for the
  first and last. No memory of the encryption keys, and no round-key register, is needed: each
  word goes to ``rk`` the cycle it is made, and the window waits while ``rk`` is not ready.

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
    the first cycle takes the key, then one word per cycle forward and backward."""
    nr = model.num_rounds(key_bits)
    return 1 + 2 * 4 * (nr + 1)


def _rcon_table():
    table, rc = [0], 1
    for _ in range(10):
        table.append(rc)
        rc = model.xtime(rc)
    return table


class KeySchedule(wiring.Component):
    """Expands keys from the ``key`` stream into ``rk`` writes for a core's round-key memory.

    ``lock``/``lock_slot`` are high from the start of a key transfer until its last ``rk`` write,
    so the core can hold back requests for that key slot. A key whose length is not in
    ``key_sizes`` is consumed and dropped, with a one-cycle pulse on ``rejected``.

    Load time: :func:`key_load_cycles` (89 / 105 / 121 cycles for AES-128/192/256), plus any
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

        win = Array(Signal(32, name=f"win{j}") for j in range(8))
        nk = Signal(4)
        nr = Signal(4)
        slot = Signal.like(self.lock_slot)
        idx = Signal(6)           # word index: i forward, m backward
        imod = Signal(3)          # idx % nk
        iq = Signal(4)            # idx // nk
        backward = Signal()

        # T(x, idx): SubWord(RotWord(x)) ^ Rcon on a multiple of Nk; SubWord(x) at 4 mod 8 for
        # AES-256; x otherwise. Four combinational S-box ROMs (LUTs).
        x = Mux(backward, win[6], win[7])
        at_multiple = imod == 0
        sub_in = Mux(at_multiple, rot_word(x), x)
        m.submodules.sbox = sbox = Memory(shape=unsigned(8), depth=256, init=model.SBOX)
        sub = []
        for b in range(4):
            port = sbox.read_port(domain="comb")
            m.d.comb += port.addr.eq(sub_in.word_select(b, 8))
            sub.append(port.data)
        sub_word = Cat(*sub)
        rcon = Array(Const(v, 8) for v in _rcon_table())[iq]
        temp = Mux(at_multiple, sub_word ^ Cat(Const(0, 24), rcon),
                   Mux((nk == 8) & (imod == 4), sub_word, x))

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

        with m.FSM():
            with m.State("IDLE"):
                with m.If(self.key.valid):
                    with m.If(supported):
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
            with m.State("FORWARD"):
                # Word idx of the expansion: a key word while idx < Nk, computed after that. It
                # is word idx % 4 of encryption round key idx // 4; the window advances only
                # when the word is written.
                new = Mux(idx < nk, key_words[idx[:3]], win[8 - nk] ^ temp)
                m.d.comb += [self.lock.eq(1), self.rk.valid.eq(1), rk.op.eq(0),
                             rk.index.eq(idx[2:]), rk.word.eq(idx[:2]), rk.key.eq(new),
                             # the key transfer completes with its last word
                             self.key.ready.eq(self.rk.ready & (idx == nk - 1))]
                with m.If(self.rk.ready):
                    for j in range(7):
                        m.d.sync += win[j].eq(win[j + 1])
                    m.d.sync += win[7].eq(new)
                    with m.If(idx == last_word):
                        # idx, idx % Nk and idx // Nk now describe the last word: start there.
                        m.d.sync += backward.eq(1)
                        m.next = "BACKWARD"
                    with m.Else():
                        count_up()
            with m.State("BACKWARD"):
                # Word m = idx, read from the top of the window, is word m % 4 of K_(m // 4):
                # decryption key nr - m // 4, through InvMixColumns except for the first and
                # last. The window then steps back, taking in w[m - Nk].
                word = win[7]
                r = idx[2:]
                m.d.comb += [self.lock.eq(1), self.rk.valid.eq(1), rk.op.eq(1),
                             rk.index.eq(nr - r), rk.word.eq(idx[:2]),
                             rk.key.eq(Mux((r == 0) | (r == nr), word, inv_mix_column(word)))]
                with m.If(self.rk.ready):
                    for j in range(1, 8):
                        m.d.sync += win[j].eq(win[j - 1])
                    m.d.sync += win[8 - nk].eq(word ^ temp)
                    count_down()
                    with m.If(idx == 0):
                        m.next = "IDLE"
        return m
