"""Digilent Cora Z7-10 (xc7z010): 125 MHz PL clock, two RGB LEDs. Its USB-UART is wired to the
Zynq processor, so the programmable-logic appliance uses a Digilent Pmod USB-UART on JA."""

from amaranth_boards.cora_z7 import CoraZ7_10Platform

from ._base import Board, pmod_usbuart


class CoraZ7_10PmodUartPlatform(CoraZ7_10Platform):
    """Cora Z7-10 with a Pmod USB-UART (Digilent 410-212) on JA (see :func:`pmod_usbuart`)."""
    resources = [*CoraZ7_10Platform.resources, pmod_usbuart()]


BOARDS = [
    Board("cora-z7-10", "Digilent Cora Z7-10 (xc7z010), UART on a Pmod USB-UART on JA",
          CoraZ7_10PmodUartPlatform, frontends=("uart",),
          notes="RGB LED 0: green passed, red failed, blue heartbeat"),
]
