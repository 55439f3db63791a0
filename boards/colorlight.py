"""Colorlight 5A-75B v7.0 (Lattice ECP5 LFE5U-25F, CABGA256; amaranth-boards'
``colorlight_5a75b_r7_0``): a LED-panel receiver card with a 25 MHz oscillator, one LED, one
button and two Broadcom B50612D Gigabit PHYs on RGMII (``eth_rgmii`` 0 and 1); the design
uses the first.

What it carries: the ``selftest`` and ``ethernet`` designs. It has no serial line of its
own: amaranth-boards' ``uart`` is the J19 header's two pins, which are the board's only LED
(DATA_LED-) and only button (KEY+), not present as a header on every revision; so the
``uart`` design is not offered here, and the LED shows the design's heartbeat.

RGMII timing, as the board wires its PHYs (the working LiteX target for this board,
litex-boards' ``colorlight_5a_75x``, builds LiteEth's ECP5 RGMII PHY with ``tx_delay=0``
and its default receive delay of 2 ns; that is the source of both figures below):

- transmit: the B50612D delays the transmit clock itself (its internal TXC delay, on as the
  board straps it), so the forwarded ``tx_clk`` leaves edge-aligned with its data from the
  same ODDRX1F clock, with no delay element (``tx_clock_delay_ps=0``);
- receive: the PHY sends ``rx_clk`` edge-aligned with RXD/RX_CTL (no internal RX clock
  delay), so the glue puts a DELAYG of 2 ns (80 taps of 25 ps) on each of RXD and RX_CTL
  in front of the IDDRX1F registers (``rx_delay_ps``), placing ``rx_clk``'s edges about a
  quarter period (of 8 ns at 1000 Mbit/s) inside the data.

As on the ECPIX-5, nextpnr has no I/O delay constraints: ``rx_clk`` is constrained at
125 MHz, the 125 MHz transmit clock is the PLL's exact CLKOS, and the RGMII window rests on
the I/O registers and the delays above. As on the ECPIX-5 the design's ``sync`` runs at the
125 MHz transmit clock (the stack takes a byte a cycle at 1000 Mbit/s), a slower core in a
clock domain of its own (``gigabit_sync``).

The two PHYs share their reset pin and their MDIO bus: the first is assumed at MDIO
address 0 (amaranth-boards does not give the straps); a PHY at another address reads as
link unknown, and the in-band status still gives the link and its speed.
"""

from amaranth_boards.colorlight_5a75b_r7_0 import Colorlight_5A75B_R70Platform

from ._base import Board, EthernetPhy

#: The first B50612D: its own 25 MHz crystal, an active-low reset (``rst``, declared
#: inverted, shared with the second PHY); MDIO on ``mdc``/``mdio``.
B50612D = EthernetPhy(
    phy="rgmii", chip="Broadcom B50612D", resource="eth_rgmii",
    pins={"rx_clk": "rx_clk", "rxd": "rx_data", "rx_ctl": "rx_ctl",
          "tx_clk": "tx_clk", "txd": "tx_data", "tx_ctl": "tx_ctl"},
    reset="rst", ref_clock=None, ref_mhz=125.0, reset_hold_s=10e-3,
    reset_note="10 ms, the longest reset common Gigabit PHYs ask for",
    mdio_address=0, rx_delay_ps=2000, gigabit_sync=True)

BOARDS = [
    Board("colorlight-5a75b", "Colorlight 5A-75B v7.0 (LFE5U-25F)",
          Colorlight_5A75B_R70Platform, frontends=("ethernet",), programmer="colorlight",
          ethernet=B50612D,
          notes="one LED (the heartbeat); no serial line: its J19 pins are the LED and the "
                "button"),
]
