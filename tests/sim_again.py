"""One simulation of a component for every testbench run on it, reset between runs.

Tests that run several testbenches on one design (made once through :func:`shared_dut.shared`)
run them with :func:`simulate`: a :class:`~aes_fpga.sim.rerun.Rerunnable` kept on the design,
as the stream drivers of :mod:`aes_fpga.sim.traffic` keep theirs, reset to its initial state
(every signal and memory, the time) instead of being built again.
"""

from aes_fpga.sim.rerun import Rerunnable, kept

__all__ = ["simulate"]


class Simulation:
    """A simulation of one component whose testbench runs the current ``bench``, and a
    background watchdog that fails the run past ``max_cycles`` cycles of 1 µs."""

    def __init__(self, dut):
        self.bench, self.max_cycles = None, 0
        self.sim = Rerunnable(dut, [self.testbench], background=[self.watchdog])

    async def testbench(self, ctx):
        await self.bench(ctx)

    async def watchdog(self, ctx):
        await ctx.delay(self.max_cycles * 1e-6)
        raise AssertionError(f"the testbench was still running after {self.max_cycles} cycles")

    def run(self, bench, max_cycles):
        self.bench, self.max_cycles = bench, max_cycles
        self.sim.run()


def simulate(dut, bench, *, max_cycles):
    """Run the testbench ``bench`` (an async function of the simulator context) on ``dut``
    from its initial state, with a 1 MHz clock, until it returns; an :class:`AssertionError`
    if it runs past ``max_cycles`` cycles. The simulation is kept on ``dut`` for the next
    call."""
    kept(dut, "sim_again", lambda: Simulation(dut)).run(bench, max_cycles)
