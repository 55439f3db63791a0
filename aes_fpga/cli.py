"""The ``aes-fpga`` command line."""

import argparse
import json
import sys
import time

from . import __version__

__all__ = ["main"]


def _primitive_cases():
    from .cores.drab_locus import mix_columns_products
    from .model import INV_SBOX, SBOX
    from .primitives import DualPortBRAM, XorLane

    products = mix_columns_products()
    return [
        ("S-box ROM 512x8, 2 ports, output reg",
         lambda: DualPortBRAM(width=8, depth=512, init=list(SBOX) + list(INV_SBOX)),
         lambda d: d.latency("a")),
        ("GF product ROM 512x32, 2 ports, output reg",
         lambda: DualPortBRAM(width=32, depth=512, init=products), lambda d: d.latency("a")),
        ("XOR lane 48b, A/C/P regs",
         lambda: XorLane(48, a_regs=1, c_regs=1), lambda d: d.latency_a),
        ("XOR lane 48b, 2 A regs, cascade in",
         lambda: XorLane(48, a_regs=2, cascade_in=True), lambda d: d.latency_a),
        ("XOR lane 32b, 2 A regs, C/P regs",
         lambda: XorLane(32, a_regs=2, c_regs=1), lambda d: d.latency_a),
    ]


def _cmd_primitives(args):
    from .synth import synthesize

    rows = []
    cases = _primitive_cases()
    for i, (name, make, latency) in enumerate(cases, 1):
        start = time.monotonic()
        print(f"[{i}/{len(cases)}] synth_xilinx {args.part}: {name} ...", end="", flush=True,
              file=sys.stderr)
        dut = make()
        u = synthesize(dut, args.part).total
        print(f" {time.monotonic() - start:.1f} s", file=sys.stderr)
        rows.append({"primitive": name, "latency_cycles": latency(dut), "lut": u.lut, "ff": u.ff,
                     "ramb18": u.ramb18, "ramb36": u.ramb36, "dsp": u.dsp})
    if args.json:
        json.dump({"part": args.part, "primitives": rows}, sys.stdout, indent=2)
        print()
        return 0
    cols = ["latency_cycles", "lut", "ff", "ramb18", "ramb36", "dsp"]
    heads = ["latency", "LUT", "FF", "RAMB18", "RAMB36", "DSP48E1"]
    width = max(len(r["primitive"]) for r in rows)
    print(f"Yosys synth_xilinx on {args.part} (out of context, no I/O buffers)")
    print(f"{'primitive':<{width}}  " + "  ".join(f"{h:>7}" for h in heads))
    for r in rows:
        print(f"{r['primitive']:<{width}}  " + "  ".join(f"{r[c]:>7}" for c in cols))
    return 0


CORES = {
    "drab-locus": "DRAB-LOCUS datapath (12-stage BRAM/DSP48E1 ring; round keys via its rk stream)",
}


def _make_core(name, args):
    from .cores import DrabLocusDatapath
    if name == "drab-locus":
        return DrabLocusDatapath(key_slots=args.key_slots, tag_width=args.tag_width)
    raise ValueError(f"core: {name!r} is not known; choose from {', '.join(CORES)}")


def _cmd_synth(args):
    from .synth import synthesize

    start = time.monotonic()
    print(f"synth_xilinx {args.part}: {args.core} (key_slots={args.key_slots}) ...", end="",
          flush=True, file=sys.stderr)
    try:
        core = _make_core(args.core, args)
    except ValueError as e:
        print(file=sys.stderr)
        print(f"aes-fpga synth: error: {e}", file=sys.stderr)
        return 2
    u = synthesize(core, args.part).total
    print(f" {time.monotonic() - start:.1f} s", file=sys.stderr)
    report = {"core": args.core, "part": args.part, "key_slots": args.key_slots,
              "tag_width": args.tag_width, "lut": u.lut, "ff": u.ff, "ramb18": u.ramb18,
              "ramb36": u.ramb36, "bram36_equiv": u.bram36_equiv, "dsp": u.dsp,
              "carry4": u.carry4, "srl": u.srl, "lutram": u.lutram, "muxf": u.muxf,
              "cells": u.cells}
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        print()
        return 0
    print(f"{args.core} on {args.part}: Yosys synth_xilinx, out of context (no I/O buffers)")
    for key, label in (("lut", "LUT"), ("ff", "FF"), ("lutram", "LUTRAM (RAM32M etc.)"),
                       ("srl", "SRL"), ("carry4", "CARRY4"), ("muxf", "MUXF7/8"),
                       ("ramb18", "RAMB18E1"), ("ramb36", "RAMB36E1"),
                       ("bram36_equiv", "BRAM (36 Kb tiles)"), ("dsp", "DSP48E1")):
        print(f"  {label:<22}{report[key]:>8}")
    return 0


def build_parser():
    from .synth import DEFAULT_PART

    parser = argparse.ArgumentParser(
        prog="aes-fpga",
        description="Area-efficient AES cores for FPGAs: synthesis reports, simulation, builds.")
    parser.add_argument("--version", action="version", version=f"aes-fpga {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("primitives", help="synthesize the BRAM/DSP primitives and print their "
                       "utilisation and latency")
    p.add_argument("--part", default=DEFAULT_PART,
                   help=f"Xilinx 7-series part (default {DEFAULT_PART})")
    p.add_argument("--json", action="store_true", help="print a JSON object instead of a table")
    p.set_defaults(func=_cmd_primitives)

    p = sub.add_parser("synth", help="synthesize a core with Yosys synth_xilinx and print its "
                       "utilisation")
    p.add_argument("--core", default="drab-locus", choices=sorted(CORES),
                   help="core to synthesize (default drab-locus)")
    p.add_argument("--part", default=DEFAULT_PART,
                   help=f"Xilinx 7-series part (default {DEFAULT_PART})")
    p.add_argument("--key-slots", type=int, default=1, help="key slots (1 to 64, default 1)")
    p.add_argument("--tag-width", type=int, default=8, help="request tag bits (0 to 64, default 8)")
    p.add_argument("--json", action="store_true", help="print a JSON object instead of a table")
    p.set_defaults(func=_cmd_synth)
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    if hasattr(args, "part"):
        from .platform import parse_part
        try:
            parse_part(args.part)
        except ValueError as e:
            parser.error(str(e))
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
