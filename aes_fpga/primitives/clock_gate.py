"""A register whose clock is gated: loads ``d`` on the cycles ``en`` is high, holds otherwise."""

from amaranth.hdl import ClockDomain, ClockSignal, Instance, Module, ResetSignal, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..platform import is_xilinx_7series

__all__ = ["GatedRegister"]


class GatedRegister(wiring.Component):
    """``q <= d`` on every rising edge of ``sync`` at which ``en`` is high (latency 1); ``q``
    holds otherwise and starts at ``init``.

    On a Xilinx 7-series platform the register's clock is the ``sync`` clock through a BUFGCE
    whose CE is ``en``: the flip-flops see no clock edge at all while ``en`` is low, which is
    what saves the clock power. BUFGCE's CE is synchronous (set up before the edge it lets
    through, glitch-free), so the register loads exactly on the edges where ``en`` was high:
    the behaviour of the portable model. A device has 32 global buffers, so gate wide registers
    rather than many small ones. Elsewhere (and in simulation) it is the portable model: the
    same flip-flops with a clock enable, whose clock keeps toggling.

    Parameters
    ----------
    width : int
        Bits of ``d`` and ``q``.
    init : int
        ``q`` after reset.
    """

    def __init__(self, width, *, init=0):
        if not isinstance(width, int) or width < 1:
            raise ValueError(f"width: {width!r} is out of range; allowed an integer from 1")
        self.width = width
        self.init = init
        super().__init__({"en": In(1), "d": In(width), "q": Out(width, init=init)})

    @staticmethod
    def gate_kind(platform):
        """The clock gate used on ``platform``: ``"BUFGCE"`` or ``"clock enable"``."""
        return "BUFGCE" if is_xilinx_7series(platform) else "clock enable"

    def elaborate(self, platform):
        m = Module()
        if not is_xilinx_7series(platform):
            with m.If(self.en):
                m.d.sync += self.q.eq(self.d)
            return m
        # The gated clock drives only this register: a local domain, reset with sync.
        m.domains.gated = gated = ClockDomain("gated", local=True)
        gclk = Signal()
        # An edge is also let through during reset: the portable model's synchronous reset
        # clears q whatever en is, so the gated one must see that edge too.
        m.submodules.bufgce = Instance("BUFGCE", i_I=ClockSignal("sync"),
                                       i_CE=self.en | ResetSignal("sync"), o_O=gclk)
        m.d.comb += [gated.clk.eq(gclk), gated.rst.eq(ResetSignal("sync"))]
        m.d.gated += self.q.eq(self.d)
        return m
