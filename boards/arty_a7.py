"""Digilent Arty A7-35T and A7-100T: 100 MHz oscillator, 4 LEDs, USB-UART, RMII/MII Ethernet."""

from amaranth_boards.arty_a7 import ArtyA7_35Platform, ArtyA7_100Platform

from ._base import Board, EthernetPhy

#: The TI DP83848J on MII (the board straps it so; amaranth-boards' ``eth_mii`` pulls ``rx_dv``
#: down for the strap): the FPGA drives its 25 MHz crystal input on ``eth_clk25`` and its
#: active-low reset (``rst``, declared inverted); ``tx_clk``/``rx_clk`` come from the PHY.
DP83848 = EthernetPhy(
    phy="mii", chip="TI DP83848J", resource="eth_mii",
    pins={"rx_clk": "rx_clk", "rxd": "rx_data", "rx_dv": "rx_dv",
          "tx_clk": "tx_clk", "txd": "tx_data", "tx_en": "tx_en"},
    reset="rst", ref_clock=("eth_clk25", None), ref_mhz=25.0, reset_hold_s=10e-3,
    reset_note="DP83848: RESET_N low for 1 us or more; 10 ms covers its power-up")

BOARDS = [
    Board("arty-a7-35", "Digilent Arty A7-35T (xc7a35t)", ArtyA7_35Platform,
          frontends=("uart", "ethernet"), programmer="arty_a7_35t", ethernet=DP83848),
    Board("arty-a7-100", "Digilent Arty A7-100T (xc7a100t)", ArtyA7_100Platform,
          frontends=("uart", "ethernet"), programmer="arty_a7_100t", ethernet=DP83848),
]
