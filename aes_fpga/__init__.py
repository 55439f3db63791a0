"""aes-fpga: area-efficient AES cores for FPGAs, written in Amaranth HDL.

The package, read bottom up:

- :mod:`aes_fpga.model` -- pure-Python AES reference model; :mod:`aes_fpga.params` -- ``Op``,
  ``Mode``, ``KeySize``, defined once for model, gateware and host;
- :mod:`aes_fpga.hw`, :mod:`aes_fpga.platform` -- gateware helpers and vendor detection;
- :mod:`aes_fpga.primitives` -- portable block RAM and wide-XOR components with Xilinx 7-series
  implementations (RAMB18E1/RAMB36E1, DSP48E1) of identical latency;
- :mod:`aes_fpga.cores` -- the AES cores, their common stream interface and their registry;
- :mod:`aes_fpga.modes` -- ECB/CBC/CTR around any core;
- :mod:`aes_fpga.appliance` -- the encryption appliance: protocol, host driver, gateware;
- :mod:`aes_fpga.designs` -- complete designs (the self-test) and the table of buildable designs;
- :mod:`aes_fpga.boards` -- board modules (clocks, pins, LEDs) hosting a design;
- :mod:`aes_fpga.flow` -- synthesis reports, netlist simulation, clocking, bitstream builds;
- :mod:`aes_fpga.sim` -- compiled simulation, the simulated appliance link, benches;
- :mod:`aes_fpga.commands` -- the ``aes-fpga`` commands, each with its options, run and report;
- :mod:`aes_fpga.cli` -- the ``aes-fpga`` entry point assembling them.

Importing the package does nothing else: Yosys is located when a flow first runs it.
"""

__version__ = "0.1.0"
