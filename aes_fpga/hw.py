"""Builders of Amaranth expressions for AES round functions, named like their twins in
:mod:`aes_fpga.model` and generated from it (each GF(2^8) constant multiplication is the linear
map the model's ``gf_mul`` defines, so no table is written by hand).

Byte order as everywhere: byte 0 of a 128-bit state, s0,0, is the most significant; a 32-bit
column/word has row 0 in bits 31:24.

Also here, because every design needs it: :class:`Heartbeat`, the blinking "clocked and out of
reset" LED.
"""

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import Out

from . import model

__all__ = ["state_byte", "state_from_bytes", "shift_rows", "inv_shift_rows", "gf_mul_const",
           "mix_column", "inv_mix_column", "rot_word", "rot_bytes_right", "xor_all", "Heartbeat"]


def state_byte(value, i):
    """Byte ``i`` (0 = most significant) of a 128-bit value."""
    return value.word_select(15 - i, 8)


def state_from_bytes(bytes_):
    """A 128-bit value from 16 byte expressions, byte 0 most significant."""
    return Cat(*reversed(list(bytes_)))


def _shift(value, inverse):
    out = []
    for i in range(16):
        r, c = i % 4, i // 4
        src = (c - r) % 4 if inverse else (c + r) % 4
        out.append(state_byte(value, r + 4 * src))
    return state_from_bytes(out)


def shift_rows(value):
    """ShiftRows of a 128-bit state: row r rotates left by r."""
    return _shift(value, False)


def inv_shift_rows(value):
    """InvShiftRows of a 128-bit state: row r rotates right by r."""
    return _shift(value, True)


def xor_all(values):
    """The XOR of a non-empty sequence of expressions, taken left to right."""
    acc = values[0]
    for v in values[1:]:
        acc = acc ^ v
    return acc


def gf_mul_const(byte, c):
    """``byte * c`` in GF(2^8) for a constant ``c``: output bit k is the XOR of the input bits j
    for which ``gf_mul(1 << j, c)`` has bit k set."""
    bits = []
    for k in range(8):
        bits.append(xor_all([byte[j] for j in range(8) if (model.gf_mul(1 << j, c) >> k) & 1]))
    return Cat(*bits)


def _column(word, coeffs):
    b = [word.word_select(3 - i, 8) for i in range(4)]  # b[0] = row 0 = bits 31:24
    out = []
    for i in range(4):
        out.append(xor_all([gf_mul_const(b[(i + n) % 4], coeffs[n]) for n in range(4)]))
    return Cat(*reversed(out))


def mix_column(word):
    """MixColumns of one 32-bit column."""
    return _column(word, (2, 3, 1, 1))


def inv_mix_column(word):
    """InvMixColumns of one 32-bit column."""
    return _column(word, (14, 11, 13, 9))


def rot_bytes_right(word, n):
    """Rotate a 32-bit word right by ``n`` bytes (byte 0 = bits 31:24); in a T-table core this
    makes ``T_n`` from ``T0``."""
    n %= 4
    return word if n == 0 else Cat(word[8 * n:], word[:8 * n])


def rot_word(word):
    """RotWord: [a0, a1, a2, a3] -> [a1, a2, a3, a0] (a0 in bits 31:24)."""
    return Cat(word[24:32], word[0:24])


class Heartbeat(wiring.Component):
    """A square wave showing that a design is clocked and out of reset, for an LED.

    ``o`` is low after reset and toggles every ``cycles`` cycles: it changes at the clock edges
    that end cycles ``cycles - 1``, ``2 * cycles - 1``, ... (counting from 0 after reset), so
    ``cycles = f_clk / 2`` blinks at 1 Hz. ``o`` is a register; no inputs, no back-pressure.

    Parameters
    ----------
    cycles : int
        Cycles between toggles, 1 or more.

    Raises
    ------
    ValueError
        If ``cycles`` is not an integer of 1 or more.
    """

    o: Out(1)

    def __init__(self, cycles):
        if not isinstance(cycles, int) or isinstance(cycles, bool) or cycles < 1:
            raise ValueError(f"cycles: {cycles!r} must be an integer of 1 or more")
        self.cycles = cycles
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        # A down-counter from ``cycles - 2`` whose wrap below zero (its top bit) is the toggle:
        # no wide comparison between the counter and its register.
        width = max(1, (self.cycles - 1).bit_length()) + 1
        reload = (self.cycles - 2) % (1 << width)
        count = Signal(width, init=reload)
        with m.If(count[-1]):
            m.d.sync += [count.eq(reload), self.o.eq(~self.o)]
        with m.Else():
            m.d.sync += count.eq(count - 1)
        return m
