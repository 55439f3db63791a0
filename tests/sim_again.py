"""One simulation of a component for every testbench run on it, reset between runs.

Building a simulation (elaborating the design and compiling it for Amaranth's simulator) costs
from a tenth of a second for a GHASH to over a second for a protocol engine. Tests that run
several testbenches on one design (made once through :func:`shared_dut.shared`) run them with
:func:`simulate`, which resets the design's simulation to its initial state (every signal and
memory, the time) instead of building it again, as the stream drivers of
:mod:`aes_fpga.sim.traffic` do.
"""

from amaranth.sim import Simulator

__all__ = ["simulate"]


class Simulation:
    """A simulation of one component whose testbench runs the current ``bench``, and a
    background watchdog that fails the run past ``max_cycles`` cycles of 1 µs."""

    def __init__(self, dut):
        self.bench, self.max_cycles, self.used = None, 0, False
        self.sim = Simulator(dut)
        self.sim.add_clock(1e-6)
        self.sim.add_testbench(self.testbench)
        self.sim.add_testbench(self.watchdog, background=True)

    async def testbench(self, ctx):
        await self.bench(ctx)

    async def watchdog(self, ctx):
        await ctx.delay(self.max_cycles * 1e-6)
        raise AssertionError(f"the testbench was still running after {self.max_cycles} cycles")

    def run(self, bench, max_cycles):
        self.bench, self.max_cycles = bench, max_cycles
        if self.used:           # (a reset before the first run would drop the testbenches'
            self.sim.reset()    # coroutines unstarted, which Python reports as never awaited)
        self.used = True
        self.sim.run()


def simulate(dut, bench, *, max_cycles):
    """Run the testbench ``bench`` (an async function of the simulator context) on ``dut``
    from its initial state, with a 1 MHz clock, until it returns; an :class:`AssertionError`
    if it runs past ``max_cycles`` cycles. The simulation is kept on ``dut`` for the next
    call."""
    state = dut.__dict__
    if "sim_again" not in state:
        state["sim_again"] = Simulation(dut)
    state["sim_again"].run(bench, max_cycles)
