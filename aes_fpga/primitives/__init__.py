"""Portable primitives with Xilinx 7-series implementations of identical latency.

This package is the one place that instantiates vendor primitives (RAMB18E1, RAMB36E1, DSP48E1).
Each component elaborates to its Xilinx implementation when given a 7-series platform
(:func:`aes_fpga.platform.is_xilinx_7series`) and to a portable Amaranth model otherwise; the two
have the same ports and the same cycle latency, which the post-synthesis tests check.
"""

from .bram import DualPortBRAM
from .xor_lane import XorLane

__all__ = ["DualPortBRAM", "XorLane"]
