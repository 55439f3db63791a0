"""Digilent Arty Z7-20: 125 MHz PL oscillator, 4 LEDs. Its USB-UART is wired to the Zynq
processor, so the programmable-logic appliance uses a Digilent Pmod USB-UART on header JA."""

from amaranth_boards.arty_z7 import ArtyZ720Platform

from ._base import Board, pmod_usbuart


class ArtyZ720PmodUartPlatform(ArtyZ720Platform):
    """Arty Z7-20 with a Pmod USB-UART (Digilent 410-212) on JA (see :func:`pmod_usbuart`)."""
    resources = [*ArtyZ720Platform.resources, pmod_usbuart()]


BOARDS = [
    Board("arty-z7-20", "Digilent Arty Z7-20 (xc7z020), UART on a Pmod USB-UART on JA",
          ArtyZ720PmodUartPlatform, frontends=("uart",), programmer="arty_z7_20"),
]
