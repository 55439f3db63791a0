"""Complete designs built from the cores: portable :class:`amaranth.lib.wiring.Component` tops
that run in the ``sync`` domain a board module provides (no clocks, resets or vendor primitives
of their own)."""

from .selftest import KNOWN_ANSWERS, SelfTest
from .uart_appliance import UartAppliance

__all__ = ["SelfTest", "KNOWN_ANSWERS", "UartAppliance"]
