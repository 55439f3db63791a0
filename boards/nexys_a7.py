"""Digilent Nexys A7-100T (amaranth-boards' nexys4ddr): 100 MHz, 16 LEDs, USB-UART, RMII."""

from amaranth_boards.nexys4ddr import Nexys4DDRPlatform

from ._base import Board, EthernetPhy

#: The Microchip LAN8720A on RMII: the FPGA drives its 50 MHz reference clock (``clk``, which
#: amaranth-boards constrains to 50 MHz) and its reset pin. amaranth-boards declares ``reset``
#: as the pin's level (``Pins``, not ``PinsN``): the pin is the PHY's ``nRST``, low in reset.
LAN8720A = EthernetPhy(
    phy="rmii", chip="Microchip LAN8720A", resource="eth",
    pins={"rxd": "rxd", "crs_dv": "crs_dv", "txd": "txd", "tx_en": "txen"},
    reset="reset", ref_clock=("eth", "clk"), ref_mhz=50.0, reset_hold_s=1e-3,
    reset_note="LAN8720A: nRST low for 100 us or more")

BOARDS = [
    Board("nexys-a7-100", "Digilent Nexys A7-100T (xc7a100t)", Nexys4DDRPlatform,
          frontends=("uart", "ethernet"), programmer="nexys_a7_100", ethernet=LAN8720A),
]
