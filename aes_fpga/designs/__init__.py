"""Complete designs built from the cores (the appliance is in :mod:`aes_fpga.appliance`):
portable :class:`amaranth.lib.wiring.Component` tops
that run in the ``sync`` domain a board module provides (no clocks, resets or vendor primitives
of their own), and :mod:`~aes_fpga.designs.table`, the table of every design the commands
build (core, selftest, uart, ethernet).

Importing this package loads no HDL: each name loads its module when first asked for.
"""

from .._lazy import lazy_namespace

__all__ = ["SelfTest", "KNOWN_ANSWERS", "DESIGN_TABLE", "DesignOptions"]

__getattr__, __dir__ = lazy_namespace(__name__, {
    "SelfTest": ".selftest", "KNOWN_ANSWERS": ".selftest", "DESIGN_TABLE": ".table",
    "DesignOptions": ".table"})
