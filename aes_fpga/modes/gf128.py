"""GF(2^128) in gateware, GCM's bit order: linear maps built from :mod:`aes_fpga.gcm_model`.

Multiplying by a fixed power of x is linear over GF(2): each bit of ``v · x^n`` is the XOR of
some bits of ``v``. The maps here are found by running the golden model on each single-bit
block (``gcm_model.mul_x_pow(1 << i, n)``), the way Amaranth's CRC hardware is found from its
software model, so the reduction constant is never written out a second time.
"""

from functools import reduce
from operator import xor

from amaranth.hdl import Cat, Const

from .. import gcm_model

__all__ = ["mul_x_pow_terms", "mul_x_pow_expr", "mul_x_inv", "mul_x_inv_expr", "xor_all"]


def mul_x_pow_terms(n):
    """For each output bit ``b`` of ``v · x^n``, the input bits of ``v`` it is the XOR of."""
    terms = [[] for _ in range(128)]
    for i in range(128):
        column = gcm_model.mul_x_pow(1 << i, n)
        for b in range(128):
            if (column >> b) & 1:
                terms[b].append(i)
    return terms


def xor_all(bits):
    """The XOR of the 1-bit values ``bits`` (0 when there are none)."""
    bits = list(bits)
    return reduce(xor, bits) if bits else Const(0, 1)


def mul_x_pow_expr(value, n):
    """An expression for the 128-bit ``value`` times x^n (``n`` >= 0)."""
    return Cat(*(xor_all(value[i] for i in row) for row in mul_x_pow_terms(n)))


def mul_x_inv(v):
    """``v`` times x^-1: the block ``w`` with ``gcm_model.mul_x(w) == v``. ``mul_x`` shifts
    right and XORs :data:`gcm_model.R` (whose top bit is set) when the bit shifted out was
    set, so that bit is the top bit of ``v``."""
    low = v >> 127
    return (((v ^ (gcm_model.R if low else 0)) << 1) & ((1 << 128) - 1)) | low


def mul_x_inv_expr(value):
    """An expression for the 128-bit ``value`` times x^-1."""
    rows = [[] for _ in range(128)]
    for i in range(128):
        column = mul_x_inv(1 << i)
        for b in range(128):
            if (column >> b) & 1:
                rows[b].append(i)
    return Cat(*(xor_all(value[i] for i in row) for row in rows))
