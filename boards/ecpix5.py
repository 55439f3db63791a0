"""LambdaConcept ECPIX-5 85 (Lattice ECP5 LFE5UM5G-85F, CABGA554): 100 MHz oscillator, reset
button, 4 RGB LEDs, USB-UART through the FT2232H's second channel, a Gigabit Ethernet PHY on
RGMII (amaranth-boards' ``eth_rgmii``).

RGMII timing. The PHY and the FPGA exchange data edge-aligned with their clocks (RGMII 1.3);
something must move each clock about 2 ns (a quarter of the 8 ns period at 1000 Mbit/s) into
the middle of its data, so that the receiving register has about 1.5 ns of setup and of hold
once the 0.5 ns of skew RGMII allows each side is spent:

- receive: the PHY delays ``rx_clk`` itself (its internal RX clock delay, which the board
  straps on: the working LiteX target for this board gives its RGMII receiver no delay), so
  the FPGA samples ``rx_data``/``rx_ctrl`` directly on ``rx_clk``'s edges in its IDDRX1F
  registers, with no delay element (``rx_delay_ps=0``);
- transmit: the PHY does not delay ``tx_clk`` (the same target delays the forwarded clock by
  2 ns in the FPGA), so the glue puts a DELAYG of 2 ns (80 taps of 25 ps) between the clock's
  ODDRX1F and its pin (``tx_clock_delay_ps``); data and clock leave from ODDRX1F registers of
  the same clock, so their skew is the pins' and the board's only.

The constraints: ``rx_clk`` is a 125 MHz clock on its pin (its registers are the pins' own,
so no input-delay constraint is needed beyond the I/O registers' fixed setup and hold, which
the delayed clock meets); the 125 MHz transmit clock is the PLL's CLKOS, exact; the core
clock is CLKOP. nextpnr has no I/O timing constraints (no set_input_delay): the RGMII window
rests on the I/O registers and the delays above, not on the router.

At 1000 Mbit/s the receive path delivers a byte each 125 MHz cycle and the stack must take it,
so the design's ``sync`` runs at 125 MHz whatever the core clock (``gigabit_sync``): the
PLL's exact CLKOS clocks ``sync`` and the transmit logic alike, and a core clock below it
(``--clock-mhz``, CLKOP) clocks the core alone, in a domain of its own (``core``, behind
:class:`~aes_fpga.appliance.gateware.core_domain.CoreDomain`'s asynchronous FIFOs; both
resets come from one source). The link works at 1000, 100 and 10 Mbit/s (the speed follows
the PHY's in-band status).
"""

from amaranth_boards.ecpix5 import ECPIX585Platform

from ._base import Board, EthernetPhy

#: The RGMII PHY: its own 25 MHz crystal (no reference clock from the FPGA), an active-low
#: reset (``rst``, declared inverted); MDIO on ``mdc``/``mdio``. Its MDIO address (straps) is
#: not given by amaranth-boards: 0 here, and a PHY at another address reads as link unknown,
#: never as a wrong link state.
RGMII_PHY = EthernetPhy(
    phy="rgmii", chip="ECPIX-5 Gigabit PHY", resource="eth_rgmii",
    pins={"rx_clk": "rx_clk", "rxd": "rx_data", "rx_ctl": "rx_ctrl",
          "tx_clk": "tx_clk", "txd": "tx_data", "tx_ctl": "tx_ctrl"},
    reset="rst", ref_clock=None, ref_mhz=125.0, reset_hold_s=10e-3,
    reset_note="10 ms, the longest reset common Gigabit PHYs ask for",
    mdio_address=0, tx_clock_delay_ps=2000, gigabit_sync=True)

BOARDS = [
    Board("ecpix5-85", "LambdaConcept ECPIX-5 85 (LFE5UM5G-85F)", ECPIX585Platform,
          frontends=("uart", "ethernet"), programmer="ecpix5", ethernet=RGMII_PHY,
          notes="no single LEDs: heartbeat, passed, failed on the first RGB LED's blue, green, "
                "red"),
]
