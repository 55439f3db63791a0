"""``aes-fpga build``: a design of the table of designs built for a board: build tree,
bitstream when the tools are installed, report."""

import sys

from .common import fail, prepare_tools, print_json
from .options import (
    add_baud,
    add_board,
    add_build_dir,
    add_clock_mhz,
    add_core_options,
    add_design,
    add_device_key_file,
    add_entropy,
    add_ghash,
    add_json,
    ghash_of,
    int_literal,
)

__all__ = ["add_arguments", "run", "board_designs"]


def board_designs():
    """The names of the designs a board can host (those of the table of designs with board
    glue), sorted."""
    from ..designs.table import DESIGN_TABLE
    return tuple(sorted(name for name, e in DESIGN_TABLE.items() if e.on_board))


def add_arguments(p):
    from ..flow.build import TOOLCHAINS

    add_board(p)
    add_design(p, board_designs(), None, "selftest")
    add_core_options(p, "build")
    add_json(p)
    p.add_argument("--toolchain", default=None, choices=TOOLCHAINS,
                   help="openxc7: Yosys, nextpnr-xilinx, prjxray (default on 7-series); "
                        "vivado; trellis: Yosys, nextpnr-ecp5, ecppack from PyPI (default and "
                        "only choice on ECP5)")
    add_clock_mhz(p, "core clock made by the MMCM or PLL; default 100, or for a build with "
                     "--device-key-file the clock its board declares for one", default=None)
    add_baud(p, "UART rate of the uart design")
    add_ghash(p, "--design uart|ethernet: GCM in the appliance's engine, with this GHASH "
                 "(the appliances' lut GHASH takes 8 bits a cycle)", "none")
    add_entropy(p, "include", raw=True)
    add_device_key_file(p, "--design uart|ethernet: built into the appliance, which then takes "
                           "only INFO and the session handshake in the clear (implies --entropy; "
                           "the core gets two key slots per session beyond --key-slots). The "
                           "file must be its owner's only (chmod 600); the build folder and its "
                           "files are made so, and the report shows a fingerprint only. No "
                           "environment variable: a build without this option is an open "
                           "device")
    p.add_argument("--ip", default=None,
                   help="--design ethernet: the appliance's IPv4 address (default 192.168.1.50)")
    p.add_argument("--udp-port", type=int_literal, default=None,
                   help="--design ethernet: the UDP port it serves, 1..65535 (default 7001)")
    p.add_argument("--mac", default=None,
                   help="--design ethernet: its MAC address, unicast (default 02:00 and the "
                        "four bytes of --ip, a locally administered address)")
    p.add_argument("--dry-run", action="store_true",
                   help="write the complete build tree without running the tools")
    add_build_dir(p)


def run(args):
    from ..boards import BOARDS
    from ..flow.build import build

    secret = None
    if args.device_key_file is not None:
        from ..appliance.device_key import KeyFileError, load_key_file
        try:
            secret = load_key_file(args.device_key_file)
        except KeyFileError as e:
            return fail("build", e)
    board = BOARDS.get(args.board)
    if board is not None:
        # The open tools' first start on this machine is announced: an ECP5 build runs
        # nextpnr-ecp5 from PyPI, the 7-series Verilog export runs Yosys.
        prepare_tools(nextpnr=board.family == "ecp5" and not args.dry_run)
    try:
        result = build(args.board, design=args.design, core=args.core,
                       toolchain=args.toolchain, clock_mhz=args.clock_mhz, baud=args.baud,
                       dry_run=args.dry_run, build_root=args.build_dir,
                       core_options={"key_slots": args.key_slots, "tag_width": args.tag_width,
                                     "key_sizes": args.key_sizes},
                       ip=args.ip, udp_port=args.udp_port, mac=args.mac,
                       ghash=ghash_of(args), entropy=args.entropy,
                       entropy_raw=args.entropy_raw, device_secret=secret)
    except ValueError as e:
        return fail("build", e)
    r = result.report
    if args.json:
        print_json(r)
    else:
        print((result.build_dir / "report.md").read_text())
    if r["status"] == "dry-run":
        print(f"build tree written to {result.build_dir} ({len(r['files'])} files; dry run: no "
              f"tools run)", file=sys.stderr)
    if r["status"] == "incomplete":
        done = [s["name"] for s in r["stages"] if s["status"] == "done"]
        print(f"aes-fpga build: stopped: {r['missing_tool']} is missing. Ran: {', '.join(done)}. "
              f"Build tree and report in {result.build_dir}", file=sys.stderr)
        return 3
    if r["status"] == "failed":
        print(f"aes-fpga build: a tool failed; see the logs in {result.build_dir}",
              file=sys.stderr)
        return 1
    return 0
