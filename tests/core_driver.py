"""The stream driver the core tests use; it lives in the library as :mod:`aes_fpga.traffic`."""

from aes_fpga.sim.traffic import run_core

__all__ = ["run_core"]
