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
125 MHz (its 1000 Mbit/s rate, above the 25 MHz it runs at here), the 125 MHz transmit clock
is the PLL's exact CLKOS, and the RGMII window rests on the I/O registers and the delays
above.

The link runs at 100 Mbit/s (``speed=100``): at 1000 Mbit/s the stack and the datagram
engine must take a byte every cycle of a 125 MHz ``sync``, and on this -6 LFE5U-25F they do
not close timing there (``aes-fpga build --board colorlight-5a75b --design ethernet --core
compact8 --key-sizes 128``, seed 1, at commit cbb49b7, before this choice: ``sync`` 95.82 MHz
of 125, hundreds of endpoints failing, the stack's LUTs at their budget). Nor would Gigabit
buy this build much: compact8 takes 160 cycles an AES-128 block, 80 Mbit/s of AES at its
100 MHz core clock, below even 100 Mbit/s of payload. So the PHY is told over MDIO to
advertise 100 Mbit/s only (:func:`~aes_fpga.appliance.gateware.eth.mdio.advertise_only`;
a Gigabit switch then negotiates 100), the RGMII interface is fixed at 100 Mbit/s (a nibble
each 5 cycles of the 125 MHz transmit clock), and ``sync`` runs at ``stack_mhz``, 62.5 MHz
on the PLL's CLKOS2: the line's 12.5 MB/s is a byte every 5 cycles of it, margin for the
stack's per-frame stalls, and a clock it closes with room on this part. The core keeps a
domain of its own at the build's clock (CLKOP, 100 MHz by default).

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
    mdio_address=0, rx_delay_ps=2000, speed=100, stack_mhz=62.5)

BOARDS = [
    Board("colorlight-5a75b", "Colorlight 5A-75B v7.0 (LFE5U-25F)",
          Colorlight_5A75B_R70Platform, frontends=("ethernet",), programmer="colorlight",
          ethernet=B50612D,
          notes="one LED (the heartbeat); no serial line: its J19 pins are the LED and the "
                "button"),
]
