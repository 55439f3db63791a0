"""Portable primitives with Xilinx 7-series and Lattice ECP5 implementations of identical
latency.

This package is the one place that instantiates vendor primitives (RAMB18E1, RAMB36E1, DSP48E1,
LUT6 and MUXF7/F8 for LUT ROMs and wide multiplexers, BUFGCE for a gated clock, LUT1/LUT2 ring
oscillators, IDDR/ODDR/IDELAYE2 for DDR I/O; DP16KD, LUT4 ring oscillators, IDDRX1F/ODDRX1F
and DELAYG). Each component elaborates to its vendor implementation when given a 7-series or
ECP5 platform (:func:`aes_fpga.platform.is_xilinx_7series`,
:func:`aes_fpga.platform.is_lattice_ecp5`) and to a portable Amaranth model otherwise; they have
the same ports and the same cycle latency, which the post-synthesis tests check (for the DDR
registers and delays, which Yosys has no simulation model of, by their cells and parameters).
(XorLane, LutRom, LutMux and GatedRegister have no ECP5 block to use: there they are the
portable fabric logic.) RingOscillator is the exception: its portable twin cannot be logic (a
loop does not simulate), so it is a seeded noise model with failures to inject, the simulation
stand-in of the vendor rings.
"""

from .bram import DualPortBRAM
from .clock_gate import GatedRegister
from .ddr import DDRInput, DDROutput, InputDelay, OutputDelay
from .lut_mux import LutMux
from .lut_rom import LutRom
from .ring_oscillator import NoiseModel, RingOscillator
from .xor_lane import XorLane

__all__ = ["DDRInput", "DDROutput", "DualPortBRAM", "GatedRegister", "InputDelay", "LutMux",
           "LutRom", "NoiseModel", "OutputDelay", "RingOscillator", "XorLane"]
