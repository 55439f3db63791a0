"""``aes-fpga export``: a core as one self-contained Verilog file, with AXI4-Stream ports
(``--interface axis``, the default) or its own, and a JSON description of every port
(:mod:`aes_fpga.export.verilog`)."""

import shlex
from pathlib import Path

from .common import cannot_write, fail, make_core, prepare_tools, print_json, write_atomically
from .options import add_core_options, add_design, add_ghash, add_json, ghash_of

__all__ = ["add_arguments", "run", "export_command"]


def add_arguments(p):
    add_core_options(p, "export")
    p.add_argument("--interface", choices=("axis", "native"), default="axis",
                   help="axis: aclk, aresetn and AXI4-Stream key, request (or message) and "
                        "result streams (default); native: the core's (or engine's) own "
                        "streams, clk and rst")
    add_design(p, ("core", "modes"), "core: the core alone (default); modes: the core in the "
                                     "mode engine (ECB, CBC, CTR, GCM with --ghash; its "
                                     "message streams)", "core")
    add_ghash(p, "--design modes: GCM in the mode engine, with this GHASH multiplier", "none")
    p.add_argument("--vendor", choices=("portable", "xilinx", "lattice"), default="portable",
                   help="whose block RAM/DSP primitives the Verilog instantiates: portable "
                        "(none, inferred; default), xilinx (7-series RAMB18E1/RAMB36E1/"
                        "DSP48E1), lattice (ECP5 DP16KD)")
    p.add_argument("-o", "--output-dir", required=True, metavar="DIR",
                   help="folder the Verilog file and its JSON are written to (made if missing)")
    add_json(p, "print the JSON description of the ports instead of the paths written")


def export_command(args):
    """The command that makes this export, every option spelled out."""
    words = ["aes-fpga", "export", "--core", args.core,
             "--key-sizes", ",".join(map(str, args.key_sizes)),
             "--key-slots", str(args.key_slots), "--tag-width", str(args.tag_width)]
    for name, value in getattr(args, "option", None) or ():
        words += ["--option", f"{name}={value!r}"]
    words += ["--design", args.design] if args.design != "core" else []
    if getattr(args, "ghash", "none") != "none":
        words += ["--ghash", args.ghash]
        words += ["--ghash-digit", str(args.ghash_digit)] if args.ghash == "lut" else []
    words += ["--interface", args.interface, "--vendor", args.vendor, "-o", "DIR"]
    return shlex.join(words)


def run(args):
    import json

    from .. import __version__
    from ..cores import CORES
    from ..export.verilog import describe, export_top, header_comment, top_name, verilog_text

    try:
        core = make_core(args)
        top = export_top(core, args.interface, args.design, gcm=ghash_of(args),
                         ghash_digit=args.ghash_digit)
    except ValueError as e:
        return fail("export", e)
    options = sorted(getattr(args, "option", None) or ())
    # (the mode engine's exports have no tag: the top's width, not the core's)
    name = top_name(args.core, core.key_sizes, core.key_slots,
                    getattr(top, "tag_width", core.tag_width), options,
                    interface=args.interface, vendor=args.vendor, design=args.design,
                    gcm=ghash_of(args), ghash_digit=args.ghash_digit)
    out = Path(args.output_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        return fail("export", f"{out}: {e.strerror}")
    paths = out / f"{name}.v", out / f"{name}.json"
    for path in paths:
        if (why := cannot_write(path)) is not None:
            return fail("export", f"{path}: {why}")
    info = describe(top, core, core_name=args.core, name=name, interface=args.interface,
                    vendor=args.vendor, command=export_command(args), version=__version__,
                    design=args.design)
    prepare_tools()     # Yosys writes the Verilog: say so if its first start is slow
    text = header_comment(info, CORES[args.core].description) + verilog_text(
        top, name, args.vendor)
    write_atomically(paths[0], text.encode())
    write_atomically(paths[1], (json.dumps(info, indent=2) + "\n").encode())
    if args.json:
        print_json(info)
        return 0
    for path in paths:
        print(path)
    return 0
