"""``aes-fpga program``: a built bitstream loaded onto its board with openFPGALoader."""

import subprocess
import sys
from pathlib import Path

from .build import board_designs
from .common import fail
from .options import add_board, add_build_dir, add_core, add_design

__all__ = ["add_arguments", "run"]


def add_arguments(p):
    add_board(p)
    add_design(p, board_designs(), None, "selftest")
    add_core(p, "load (the one built)")
    p.add_argument("--bitstream", help="bitstream file (default: the build tree's top.bit)")
    add_build_dir(p)


def run(args):
    from ..boards import BOARDS
    from ..flow.tools import find_tool

    if args.board not in BOARDS:
        return fail("program", f"board: {args.board!r} is not known; choose from "
                               f"{', '.join(sorted(BOARDS))}")
    bitstream = Path(args.bitstream or
                     Path(args.build_dir) / f"{args.board}-{args.design}-{args.core}" / "top.bit")
    if not bitstream.is_file():
        return fail("program", f"no bitstream at {bitstream}; run aes-fpga build --board "
                               f"{args.board} first (with the open tools or Vivado installed)")
    loader = find_tool("openFPGALoader")
    if loader is None:
        return fail("program", "openFPGALoader is not installed (Debian: apt-get install "
                               "openfpgaloader); nothing was programmed", 3)
    board = BOARDS[args.board]
    cmd = [loader, *(["-b", board.programmer] if board.programmer else []), str(bitstream)]
    print(" ".join(cmd), file=sys.stderr)
    return subprocess.run(cmd).returncode
