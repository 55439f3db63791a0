"""Digilent Cmod A7-35T: 12 MHz oscillator, 2 LEDs + RGB LED, USB-UART."""

from amaranth_boards.cmod_a7 import CmodA7_35Platform

from ._base import Board

BOARDS = [
    Board("cmod-a7-35", "Digilent Cmod A7-35T (xc7a35t)", CmodA7_35Platform,
          frontends=("uart",), programmer="cmod_a7_35t",
          notes="2 LEDs: heartbeat, passed; failed on the RGB LED's red"),
]
