"""A simulation built once per component and run again from its initial state.

Building a simulation (elaborating the design and compiling it for Amaranth's simulator) costs
from a tenth of a second for a small block to over a second for a protocol engine, about as much
as a thousand simulated cycles of a core. A component simulated again is therefore
:meth:`~amaranth.sim.Simulator.reset` to its initial state (every signal and memory, the time)
instead of being built again; its testbenches read what to do from the caller each run.
"""

from amaranth.sim import Simulator

__all__ = ["Rerunnable", "kept"]


class Rerunnable:
    """A simulation of ``dut`` with a 1 MHz ``sync`` clock and ``testbenches`` (async
    functions of the simulator context; those in ``background`` do not keep it running), run
    from its initial state by each :meth:`run`."""

    def __init__(self, dut, testbenches, background=()):
        self.sim = Simulator(dut)
        self.sim.add_clock(1e-6)
        for bench in testbenches:
            self.sim.add_testbench(bench)
        for bench in background:
            self.sim.add_testbench(bench, background=True)
        self.used = False

    def run(self):
        if self.used:           # (a reset before the first run would drop the testbenches'
            self.sim.reset()    # coroutines unstarted, which Python reports as never awaited)
        self.used = True
        self.sim.run()


def kept(dut, key, make):
    """What ``make()`` builds for ``dut`` under ``key``, made once and kept on the component
    itself, so that it lives as long as the component and no longer (made each time for an
    object that has nowhere to keep it)."""
    state = getattr(dut, "__dict__", None)
    if state is None:
        return make()
    made = state.setdefault("_kept_simulations", {})
    if key not in made:
        made[key] = make()
    return made[key]
