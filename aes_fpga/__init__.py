"""aes-fpga: area-efficient AES cores for FPGAs, written in Amaranth HDL.

Subpackages and modules:

- :mod:`aes_fpga.model` -- pure-Python AES reference model (no Amaranth import);
- :mod:`aes_fpga.primitives` -- portable block RAM and wide-XOR components with Xilinx 7-series
  implementations (RAMB18E1/RAMB36E1, DSP48E1) of identical latency;
- :mod:`aes_fpga.synth` -- Yosys ``synth_xilinx`` utilisation reports;
- :mod:`aes_fpga.postsynth` -- simulation of synthesized netlists against the portable models.
"""

from ._yosys import configure_amaranth as _configure_amaranth

__version__ = "0.1.0"

# Importing the package is enough for Amaranth to find the Yosys that pip installed with it.
_configure_amaranth()
