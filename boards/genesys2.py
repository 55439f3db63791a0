"""Digilent Genesys 2 (Xilinx Kintex-7 xc7k325t-2ffg900; amaranth-boards' ``genesys2``):
200 MHz differential oscillator, reset button, 8 LEDs, a Realtek RTL8211E-VL Gigabit PHY on
RGMII (``eth_rgmii``, LVCMOS15 on a 1.5 V bank). amaranth-boards gives it no serial line,
so it carries the ``selftest`` and ``ethernet`` designs.

RGMII timing. The working LiteX target for this board (litex-boards'
``digilent_genesys2``) builds LiteEth's 7-series RGMII PHY with its default delays, 2 ns on
transmit and 2 ns on receive, both made in the FPGA: the board straps the PHY without its
internal clock delays, and both directions arrive edge-aligned (RGMII 1.3). Here:

- receive: an IDELAYE2 (``IDELAY_TYPE="FIXED"``) on each of RXD and RX_CTL in front of the
  IDDR registers delays the data by 26 taps of 78.125 ps (2.03 ns, ``rx_delay_ps=2000``),
  putting ``rx_clk``'s edges about a quarter period (of 8 ns at 1000 Mbit/s) inside the
  data. Its IDELAYCTRL takes the board's 200 MHz oscillator, on a BUFG, as its reference;
- transmit: a 7-series output has no fixed delay behind its ODDR, so the forwarded
  ``tx_clk`` comes from a DDR register of its own on a copy of the MMCM's exact 125 MHz
  transmit clock shifted by 90 degrees (2 ns; CLKOUT2), while the data leave from ODDRs on
  the unshifted clock. That forwarded clock is 125 MHz whatever the link speed, so the
  design runs at 1000 Mbit/s fixed (``speed=1000``): a link that negotiates 100 or
  10 Mbit/s does not carry traffic on this board.

Constraints: ``rx_clk`` is constrained at 125 MHz on its pin; the MMCM's outputs are
derived from the board clock by the tools. No set_input_delay/set_output_delay is written:
the window rests on the I/O registers and the fixed delays above, as on the ECP5 boards.

MDIO: the PHY is assumed at address 1 (amaranth-boards does not give its straps); a PHY at
another address reads as link unknown.
"""

from amaranth.vendor import XilinxPlatform
from amaranth_boards.genesys2 import Genesys2Platform

from ._base import Board, EthernetPhy


class Genesys2(Genesys2Platform):
    """amaranth-boards' platform, taking the ``toolchain`` every platform takes (its own
    ``__init__`` takes the JP6 bank voltage only)."""

    def __init__(self, *, JP6="2V5", toolchain="Vivado"):    # noqa: N803 (the jumper's name)
        XilinxPlatform.__init__(self, toolchain=toolchain)
        if JP6 not in ("1V2", "1V8", "2V5", "3V3"):
            raise ValueError(f"JP6: {JP6!r} is not a bank voltage; allowed '1V2', '1V8', "
                             f"'2V5', '3V3'")
        self._JP6 = JP6

    @property
    def _xray_family(self):
        # Amaranth's open-flow template knows the Artix-7 and Zynq databases only; prjxray's
        # Kintex-7 one is ``kintex7`` (openXC7 builds the xc7k325t from it).
        return "kintex7"

#: The RTL8211E-VL: its own 25 MHz crystal, an active-low reset (``rst``, declared inverted,
#: on a 3.3 V bank); MDIO on ``mdc``/``mdio``.
RTL8211E = EthernetPhy(
    phy="rgmii", chip="Realtek RTL8211E-VL", resource="eth_rgmii",
    pins={"rx_clk": "rx_clk", "rxd": "rx_data", "rx_ctl": "rx_ctl",
          "tx_clk": "tx_clk", "txd": "tx_data", "tx_ctl": "tx_ctl"},
    reset="rst", ref_clock=None, ref_mhz=125.0, reset_hold_s=10e-3,
    reset_note="RTL8211E: PHYRSTB low for 10 ms or more",
    mdio_address=1, rx_delay_ps=2000, tx_clock_delay_ps=2000, speed=1000)

BOARDS = [
    Board("genesys2", "Digilent Genesys 2 (xc7k325t)", Genesys2,
          frontends=("ethernet",), programmer="genesys2", ethernet=RTL8211E,
          notes="Ethernet at 1000 Mbit/s only (the transmit clock delay is a 90-degree "
                "125 MHz clock)"),
]
