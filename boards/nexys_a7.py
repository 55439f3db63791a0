"""Digilent Nexys A7-100T (amaranth-boards' nexys4ddr): 100 MHz, 16 LEDs, USB-UART, RMII."""

from amaranth_boards.nexys4ddr import Nexys4DDRPlatform

from ._base import Board

BOARDS = [
    Board("nexys-a7-100", "Digilent Nexys A7-100T (xc7a100t)", Nexys4DDRPlatform,
          frontends=("uart", "ethernet"), programmer="nexys_a7_100"),
]
