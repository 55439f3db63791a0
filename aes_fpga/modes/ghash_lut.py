"""GHASH with a LUT-only digit-serial GF(2^128) multiplier (the ``"lut"`` variant of
:class:`aes_fpga.modes.ghash.GHash`)."""

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import wiring

from .gf128 import mul_x_pow_expr, mul_x_pow_terms, xor_all
from .ghash_signature import ghash_signature

__all__ = ["LutGHash", "DIGITS"]

#: Digit widths the multiplier takes: bits of the multiplier operand consumed per cycle.
DIGITS = (1, 2, 4, 8, 16, 32, 64, 128)


class LutGHash(wiring.Component):
    """GHASH_H with a digit-serial multiplier in LUTs: ``digit`` bits of ``Y ⊕ X`` per cycle.

    Horner over digits, highest power of x first: with ``A = Y ⊕ X`` split into digits
    ``D_k`` (``digit`` coefficients each, ``D_0`` holding x^127 .. x^(128 - digit)), the product
    is ``Z = (...((D_0·H)·x^d ⊕ D_1·H)·x^d ⊕ ...)``. Each cycle ``Z ← Z·x^d ⊕ D·H`` where
    ``D·H`` is the XOR of ``H·x^k`` selected by the digit's bits; ``H·x^k`` and ``Z·x^d`` are
    fixed linear maps (wiring and a few XORs, from :mod:`aes_fpga.modes.gf128`). ``A`` shifts
    ``digit`` bits per cycle; ``Z`` holds ``Y`` between blocks, so a new block loads
    ``A ← X ⊕ Y`` (``X`` alone on ``first``) and clears ``Z``.

    Timing: a block accepted in cycle t is multiplied in cycles t+1 .. t+128/digit; the next
    block is accepted from cycle t + 128/digit + 1 (``cycles_per_block = 128/digit + 1``), and
    after a ``last`` block ``o.valid`` rises in that same cycle (``latency = cycles_per_block``).
    ``o.payload`` is ``Z`` itself: while ``o`` waits, ``i.ready`` stays low; a new block may be
    accepted in the cycle ``o`` is taken. ``h`` loads the ``H`` register: ``fill_cycles = 0``
    (a block accepted in the same cycle as ``h`` already uses the new ``H``).

    Area and depth (measured, the command is in :mod:`aes_fpga.modes.ghash`): about 390 FF
    whatever the digit (H, A, Z and the counter); 275 LUT for digits 1 and 2, 408 for 4, then
    about 100 LUT per digit bit (802 for 8, 1575 for 16, 3229 for 32, 5962 for 64); 2 LUT
    levels up to digit 8, 3 for 16 and 32, 4 for 64. Each bit of ``Z`` XORs ``digit`` AND
    terms of A's bits and ``H·x^k`` bits plus the bits of ``Z·x^digit``; the loading of ``A``
    (``X ⊕ Y`` or the shift) is a LUT a bit.
    """

    def __init__(self, digit):
        if digit not in DIGITS:
            raise ValueError(f"digit: {digit!r} is not allowed; allowed "
                             f"{', '.join(map(str, DIGITS))}")
        self.digit = digit
        self.steps = 128 // digit
        self.cycles_per_block = self.steps + 1
        self.latency = self.steps + 1
        self.fill_cycles = 0
        super().__init__(ghash_signature())

    def elaborate(self, platform):
        m = Module()
        d = self.digit
        h = Signal(128)
        a = Signal(128)
        z = Signal(128)
        steps_left = Signal(range(self.steps + 1))
        busy = Signal()
        out_valid = Signal()
        last = Signal()
        in_msg = Signal()

        # D·H: the XOR of H·x^k for the digit's set bits; bit d-1-k of A is the coefficient of
        # x^(127-(d-1-k)) ... whose weight within the digit is x^k.
        h_terms = [mul_x_pow_terms(k) for k in range(d)]
        step = []
        feedback = mul_x_pow_expr(z, d) if self.steps > 1 else None
        for b in range(128):
            bits = [a[d - 1 - k] & xor_all(h[i] for i in h_terms[k][b]) for k in range(d)]
            if feedback is not None:
                bits.append(feedback[b])
            step.append(xor_all(bits))
        z_next = Cat(*step)

        blk = self.i.payload
        accept = Signal()
        taken = Signal()
        m.d.comb += [
            self.h.ready.eq(~in_msg),
            self.i.ready.eq(~busy & (~out_valid | self.o.ready)),
            accept.eq(self.i.valid & self.i.ready),
            self.o.valid.eq(out_valid),
            self.o.payload.eq(z),
            taken.eq(out_valid & self.o.ready),
        ]
        with m.If(self.h.valid & self.h.ready):
            m.d.sync += h.eq(self.h.payload)
        with m.If(taken):
            m.d.sync += [out_valid.eq(0), in_msg.eq(0)]
        with m.If(accept):
            m.d.sync += [
                a.eq(blk.data ^ (z & ~blk.first.replicate(128))),
                z.eq(0),
                steps_left.eq(self.steps),
                busy.eq(1),
                last.eq(blk.last),
                in_msg.eq(1),
            ]
        with m.Elif(busy):
            m.d.sync += [a.eq(a >> d), z.eq(z_next), steps_left.eq(steps_left - 1)]
            with m.If(steps_left == 1):
                m.d.sync += [busy.eq(0), out_valid.eq(last)]
        return m
