"""Digilent Arty Z7-20: 125 MHz PL oscillator, 4 LEDs. Its USB-UART is wired to the Zynq
processor, so the programmable-logic appliance uses a Digilent Pmod USB-UART on header JA."""

from amaranth.build import Attrs
from amaranth_boards.arty_z7 import ArtyZ720Platform
from amaranth_boards.resources import UARTResource

from ._base import Board


class ArtyZ720PmodUartPlatform(ArtyZ720Platform):
    """Arty Z7-20 with a Pmod USB-UART (Digilent 410-212) on JA: Pmod pin 2 carries data from
    the FPGA to the host, pin 3 from the host to the FPGA (the Pmod's RXD and TXD)."""
    resources = [
        *ArtyZ720Platform.resources,
        UARTResource(0, rx="3", tx="2", conn=("pmod", 0), attrs=Attrs(IOSTANDARD="LVCMOS33")),
    ]


BOARDS = [
    Board("arty-z7-20", "Digilent Arty Z7-20 (xc7z020), UART on a Pmod USB-UART on JA",
          ArtyZ720PmodUartPlatform, frontends=("uart",), programmer="arty_z7_20"),
]
