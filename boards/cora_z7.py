"""Digilent Cora Z7-10 (xc7z010): 125 MHz PL clock, two RGB LEDs, no PL UART."""

from amaranth_boards.cora_z7 import CoraZ7_10Platform

from ._base import Board

BOARDS = [
    Board("cora-z7-10", "Digilent Cora Z7-10 (xc7z010)", CoraZ7_10Platform,
          notes="RGB LED 0: green passed, red failed, blue heartbeat"),
]
