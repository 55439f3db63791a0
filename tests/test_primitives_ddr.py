# amaranth: UnusedElaboratable=no
"""DDR input and output registers and the input delay: the portable models give the latency
the docstrings state, edge by edge; synthesis for ECP5 and 7-series keeps one vendor cell a pin
(IDDRX1F/ODDRX1F/DELAYG, IDDR/ODDR/IDELAYE2) with the parameters that give that latency.

Yosys ships no simulation model of these cells (they are black boxes in its ECP5 and Xilinx
libraries), so the vendor netlists are checked by their cells and parameters only."""

import random
import re

import pytest
from amaranth.hdl import ClockDomain, Fragment, Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from aes_fpga.flow.synth import synthesize
from aes_fpga.platform import part_platform
from aes_fpga.primitives import DDRInput, DDROutput, InputDelay, OutputDelay
from aes_fpga.primitives.ddr import DDR_OUTPUT_STAGES

HALF = 5e-9
STEP = HALF / 2


def edge_sim(dut, bench):
    """Simulate ``dut`` (in domain ``io``) under ``bench(ctx, clk)``, which drives the clock."""
    m = Module()
    m.domains.io = io = ClockDomain("io")
    m.submodules.dut = dut
    sim = Simulator(m)

    async def run(ctx):
        await bench(ctx, io.clk)

    sim.add_testbench(run)
    sim.run()


def test_ddr_input_latency():
    rng = random.Random(1)
    dut = DDRInput(3, domain="io")
    rise = [rng.getrandbits(3) for _ in range(40)]
    fall = [rng.getrandbits(3) for _ in range(40)]
    seen = []

    async def bench(ctx, clk):
        for k in range(len(rise)):
            ctx.set(dut.d, rise[k])
            await ctx.delay(STEP)
            ctx.set(clk, 1)
            await ctx.delay(STEP)
            seen.append((ctx.get(dut.q0), ctx.get(dut.q1)))
            ctx.set(dut.d, fall[k])
            await ctx.delay(STEP)
            ctx.set(clk, 0)
            await ctx.delay(STEP)

    edge_sim(dut, bench)
    # After rising edge k + 1: the samples of edge k and of the falling edge after it.
    assert seen[1:] == list(zip(rise, fall, strict=True))[:-1]


def test_ddr_output_latency_and_forwarded_clock():
    rng = random.Random(2)
    dut = DDROutput(3, domain="io")
    d0 = [rng.getrandbits(3) for _ in range(40)]
    d1 = [rng.getrandbits(3) for _ in range(40)]
    high, low = [], []

    async def bench(ctx, clk):
        for k in range(len(d0)):
            ctx.set(dut.d0, d0[k])
            ctx.set(dut.d1, d1[k])
            await ctx.delay(STEP)
            ctx.set(clk, 1)
            await ctx.delay(HALF)
            high.append(ctx.get(dut.q))
            ctx.set(clk, 0)
            await ctx.delay(HALF - STEP)
            low.append(ctx.get(dut.q))

    edge_sim(dut, bench)
    lat = DDR_OUTPUT_STAGES
    assert high[lat:] == d0[:-lat]
    assert low[lat:] == d1[:-lat]
    # The first cycles show the registers' reset value, not data from nowhere.
    assert high[:lat] == low[:lat] == [0] * lat


def test_input_delay_is_a_wire_in_simulation():
    dut = InputDelay(2, delay_ps=1800)
    assert dut.taps("ecp5") == 72 and dut.taps("xc7") == 23

    async def bench(ctx, clk):
        for value in range(4):
            ctx.set(dut.a, value)
            await ctx.delay(STEP)
            assert ctx.get(dut.z) == value

    edge_sim(dut, bench)


def test_output_delay_is_a_wire_in_simulation_and_refused_on_7series():
    dut = OutputDelay(2, delay_ps=2000)

    async def bench(ctx, clk):
        for value in range(4):
            ctx.set(dut.a, value)
            await ctx.delay(STEP)
            assert ctx.get(dut.z) == value

    edge_sim(dut, bench)
    with pytest.raises(NotImplementedError, match="7-series HR bank has no output delay"):
        Fragment.get(OutputDelay(1), part_platform("xc7a35tcsg324-1"))
    with pytest.raises(ValueError, match="delay_ps: 4000 is out of range; allowed 0 to 3175"):
        OutputDelay(1, delay_ps=4000)


def test_parameters_are_checked():
    with pytest.raises(ValueError, match="width: 0 is out of range"):
        DDRInput(0)
    with pytest.raises(ValueError, match="domain: 'a b' is not a clock domain name"):
        DDROutput(1, domain="a b")
    with pytest.raises(ValueError, match="delay_ps: 3000 is beyond the xc7 delay's"):
        InputDelay(1, delay_ps=3000)
    with pytest.raises(ValueError, match="delay_ps: -1 is out of range"):
        InputDelay(1, delay_ps=-1)


class DDRBundle(wiring.Component):
    """The three primitives side by side, one synthesis run per vendor."""

    def __init__(self, width, *, output_delay=False):
        self.width = width
        self.output_delay = output_delay
        super().__init__({"pin_in": In(width), "q0": Out(width), "q1": Out(width),
                          "d0": In(width), "d1": In(width), "pin_out": Out(width),
                          "raw": In(width), "delayed": Out(width)})

    def elaborate(self, platform):
        m = Module()
        m.domains.idelay_ref = ClockDomain()
        m.submodules.iddr = iddr = DDRInput(self.width)
        m.submodules.oddr = oddr = DDROutput(self.width)
        m.submodules.delay = delay = InputDelay(self.width, delay_ps=1500)
        m.d.comb += [iddr.d.eq(self.pin_in), self.q0.eq(iddr.q0), self.q1.eq(iddr.q1),
                     oddr.d0.eq(self.d0), oddr.d1.eq(self.d1),
                     delay.a.eq(self.raw), self.delayed.eq(delay.z)]
        if self.output_delay:
            m.submodules.out_delay = out_delay = OutputDelay(self.width, delay_ps=2000)
            m.d.comb += [out_delay.a.eq(oddr.q), self.pin_out.eq(out_delay.z)]
        else:
            m.d.comb += self.pin_out.eq(oddr.q)
        return m


@pytest.mark.slow
def test_ecp5_keeps_one_cell_a_pin(tmp_path):
    res = synthesize(DDRBundle(5, output_delay=True), "LFE5U-85F-6BG381", workdir=tmp_path)
    cells = res.total.cells
    # DELAYG: five on the inputs, five after the ODDRX1Fs.
    assert (cells.get("IDDRX1F"), cells.get("ODDRX1F"), cells.get("DELAYG")) == (5, 5, 10), cells
    # ODDRX1F's own stages give the latency: no fabric register, no LUT.
    assert (res.total.ff, res.total.lut) == (0, 0), cells
    assert set(re.findall(r"\.DEL_VALUE\((?:32'd)?(\d+)\)", res.netlist.read_text())) == {
        "60", "80"}


@pytest.mark.slow
def test_xilinx_keeps_one_cell_a_pin(tmp_path):
    res = synthesize(DDRBundle(5), "xc7a35tcsg324-1", workdir=tmp_path)
    cells = res.total.cells
    assert (cells.get("IDDR"), cells.get("ODDR"), cells.get("IDELAYE2"),
            cells.get("IDELAYCTRL")) == (5, 5, 5, 1), cells
    # Two fabric stages of d0 and d1 in front of the same-edge ODDR match ODDRX1F's latency.
    assert res.total.ff == 2 * 5 * DDR_OUTPUT_STAGES and res.total.lut == 0, cells
    netlist = res.netlist.read_text()
    assert set(re.findall(r'\.DDR_CLK_EDGE\("(\w+)"\)', netlist)) == {"SAME_EDGE",
                                                                      "SAME_EDGE_PIPELINED"}
    assert set(re.findall(r"\.IDELAY_VALUE\((?:32'd)?(\d+)\)", netlist)) == {"19"}
