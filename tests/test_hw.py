"""Hardware round-function builders against their model twins."""

import random

import pytest
from amaranth.hdl import Elaboratable, Module, Signal
from amaranth.sim import Simulator

from aes_fpga import hw, model


def evaluate(builder, width_in, values):
    """Evaluate ``builder(signal)`` for each input value in Amaranth's simulator."""
    sig = Signal(width_in)
    expr = builder(sig)
    out = []

    async def tb(ctx):
        for v in values:
            ctx.set(sig, v)
            out.append(ctx.get(expr))

    sim = Simulator(_Holder(sig, expr))
    sim.add_testbench(tb)
    sim.run()
    return out


class _Holder(Elaboratable):
    """A design holding nothing but the expression under test."""

    def __init__(self, sig, expr):
        self.m = Module()
        self.out = Signal(len(expr))
        self.m.d.comb += self.out.eq(expr)

    def elaborate(self, platform):
        return self.m


RNG = random.Random(20)
STATES = [RNG.getrandbits(128) for _ in range(64)]
WORDS = [RNG.getrandbits(32) for _ in range(64)] + [0xDB135345]


@pytest.mark.parametrize(("builder", "twin"), [
    (hw.shift_rows, model.shift_rows), (hw.inv_shift_rows, model.inv_shift_rows)])
def test_state_functions(builder, twin):
    assert evaluate(builder, 128, STATES) == [twin(s) for s in STATES]


@pytest.mark.parametrize(("builder", "twin"), [
    (hw.mix_column, model.mix_column), (hw.inv_mix_column, model.inv_mix_column)])
def test_column_functions(builder, twin):
    assert evaluate(builder, 32, WORDS) == [twin(w) for w in WORDS]


@pytest.mark.parametrize("c", [1, 2, 3, 9, 11, 13, 14, 0x53])
def test_gf_mul_const(c):
    values = list(range(256))
    assert evaluate(lambda s: hw.gf_mul_const(s, c), 8, values) == [model.gf_mul(v, c)
                                                                   for v in values]


def test_rot_word():
    assert evaluate(hw.rot_word, 32, [0x09CF4F3C]) == [0xCF4F3C09]
