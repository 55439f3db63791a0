"""Digilent Arty A7-35T and A7-100T: 100 MHz oscillator, 4 LEDs, USB-UART, RMII/MII Ethernet."""

from amaranth_boards.arty_a7 import ArtyA7_35Platform, ArtyA7_100Platform

from ._base import Board

BOARDS = [
    Board("arty-a7-35", "Digilent Arty A7-35T (xc7a35t)", ArtyA7_35Platform,
          frontends=("uart", "ethernet"), programmer="arty_a7_35t"),
    Board("arty-a7-100", "Digilent Arty A7-100T (xc7a100t)", ArtyA7_100Platform,
          frontends=("uart", "ethernet"), programmer="arty_a7_100t"),
]
