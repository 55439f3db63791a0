"""EBAZ4205 (Zynq xc7z010): 33.333 MHz PL clock, 2 LEDs, UART header."""

from amaranth_boards.ebaz4205 import EBAZ4205Platform

from ._base import Board

BOARDS = [
    Board("ebaz4205", "EBAZ4205 (xc7z010)", EBAZ4205Platform, frontends=("uart",),
          notes="2 LEDs: heartbeat, passed; no RGB LED, so failure shows as passed off"),
]
