"""LambdaConcept ECPIX-5 85 (Lattice ECP5 LFE5UM5G-85F, CABGA554): 100 MHz oscillator, reset
button, 4 RGB LEDs, USB-UART through the FT2232H's second channel."""

from amaranth_boards.ecpix5 import ECPIX585Platform

from ._base import Board

BOARDS = [
    Board("ecpix5-85", "LambdaConcept ECPIX-5 85 (LFE5UM5G-85F)", ECPIX585Platform,
          frontends=("uart",), programmer="ecpix5",
          notes="no single LEDs: heartbeat, passed, failed on the first RGB LED's blue, green, "
                "red"),
]
