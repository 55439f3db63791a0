"""Complete designs built from the cores (the appliance is in :mod:`aes_fpga.appliance`):
portable :class:`amaranth.lib.wiring.Component` tops
that run in the ``sync`` domain a board module provides (no clocks, resets or vendor primitives
of their own)."""

from .selftest import KNOWN_ANSWERS, SelfTest

__all__ = ["SelfTest", "KNOWN_ANSWERS"]
