"""Board modules: one per board, glue only (clocks, resets, I/O); the designs inside are
portable. :data:`BOARDS` maps the names ``aes-fpga build --board`` takes to :class:`Board`."""

from . import (
    alchitry_au,
    arty_a7,
    arty_z7,
    cmod_a7,
    colorlight,
    cora_z7,
    ebaz4205,
    ecpix5,
    genesys2,
    nexys_a7,
    ulx3s,
)
from ._base import Board, BoardTop

BOARDS = {b.name: b for mod in (arty_a7, nexys_a7, cmod_a7, arty_z7, cora_z7, ebaz4205,
                                alchitry_au, ulx3s, ecpix5, colorlight, genesys2)
          for b in mod.BOARDS}

__all__ = ["BOARDS", "Board", "BoardTop"]
