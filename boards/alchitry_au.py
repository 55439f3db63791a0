"""Alchitry Au (xc7a35t, FTG256): 100 MHz, 8 LEDs, USB-UART (amaranth-boards' ``usb``)."""

from amaranth_boards.alchitry_au import AlchitryAuPlatform

from ._base import Board


class AlchitryAuLowerPlatform(AlchitryAuPlatform):
    """amaranth-boards spells the part in capitals; the open flow's tools expect lower case."""
    device = AlchitryAuPlatform.device.lower()
    package = AlchitryAuPlatform.package.lower()


BOARDS = [
    Board("alchitry-au", "Alchitry Au (xc7a35t)", AlchitryAuLowerPlatform, frontends=("uart",),
          notes="the USB-UART is the 'usb' resource", extra={"uart_resource": "usb"}),
]
