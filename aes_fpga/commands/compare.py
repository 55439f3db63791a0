"""``aes-fpga compare``: every core side by side (AES-128, 1 key slot): utilisation, cycles,
logic depth and, with ``--route``, routed Fmax and throughput; as a table, JSON or a picture."""

from .common import cannot_write, fail, note, prepare_tools, print_json
from .options import add_clock_mhz, add_json, add_part, add_route_options

__all__ = ["add_arguments", "run", "table_lines"]


def _names(text):
    return [c for c in text.split(",") if c]


def add_arguments(p):
    p.add_argument("--cores", type=_names, default=None,
                   help="comma-separated cores to compare (default: every core with a key "
                        "port)")
    add_part(p, "; a core that does not fit is given the smallest part of the family that "
                "does, and the table says so")
    add_json(p)
    p.add_argument("--plot", metavar="FILE", default=None,
                   help="also draw area against throughput (log axes) into FILE.svg or FILE.png "
                        "(needs pip install aes-fpga[plot])")
    add_clock_mhz(p, "the clock of the Gbit/s figures of cores not routed")
    p.add_argument("--route", nargs="?", const=True, default=False, metavar="CORES",
                   type=_names,
                   help="also place and route the cores (all, or a comma-separated few) on an "
                        "ECP5 part with nextpnr-ecp5 (every port registered) and give Gbit/s at "
                        "the routed Fmax (minutes per core)")
    add_route_options(p, 150.0, "default 150")


def run(args):
    from ..flow.compare import PLOT_FORMATS, compare, plot

    if args.plot is not None:       # a bad picture name fails before any synthesis
        from pathlib import PurePath
        if PurePath(args.plot).suffix.lower() not in PLOT_FORMATS:
            return fail("compare", f"--plot: {args.plot!r} has no known picture suffix; "
                                   f"allowed {', '.join(PLOT_FORMATS)}")
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            return fail("compare", "--plot needs matplotlib; install the plot extra: pip "
                                   "install aes-fpga[plot]")
        why = cannot_write(args.plot)
        if why:
            return fail("compare", f"--plot: cannot write {args.plot}: {why}")
    route_part = None
    if args.route:
        from ..flow.route import DEFAULT_ECP5_PART
        route_part = args.route_part or DEFAULT_ECP5_PART
    from ..flow.route import ToolMissing
    prepare_tools(nextpnr=bool(args.route))
    try:
        report = compare(args.cores, args.part, route=args.route, route_part=route_part,
                         route_mhz=args.route_mhz, seed=args.seed, clock_mhz=args.clock_mhz,
                         progress=note)
    except (ValueError, ToolMissing) as e:
        return fail("compare", e)
    if args.plot is not None:
        plot(report, args.plot)
        note(f"picture written to {args.plot}")
    if args.json:
        print_json(report)
    else:
        print("\n".join(table_lines(report)))
    return 0


def table_lines(report):
    """The lines of ``compare``'s table for ``report`` (its JSON)."""
    opts = report["options"]
    lines = [f"AES-{report['key_bits']}, every core with key_sizes="
             f"{','.join(map(str, opts['key_sizes']))}, key_slots={opts['key_slots']}, "
             f"tag_width={opts['tag_width']}; Yosys synth_xilinx on {report['part']} (out of "
             f"context, flattened)"]
    routed = report["route"]
    if routed:
        lines.append(f"routed: {routed['part']}, nextpnr-ecp5 seed {routed['seed']}, "
                     f"{routed['freq_mhz']:g} MHz asked, every port registered")
    heads = ("core", "LUT", "LUT-RAM", "FF", "BRAM36", "DSP", "latency", "blk/cyc", "levels",
             "cells ns", "Fmax MHz", "Gbit/s", "Mbit/s/LUT", "GCM")
    rows = []
    for r in report["cores"]:
        rows.append((r["core"], r["lut"], r["lut_as_memory"], r["ff"], f"{r['bram36']:g}",
                     r["dsp"], r["latency_cycles"], r["blocks_per_cycle_fraction"],
                     r["lut_levels"], f"{r['cell_delay_ns']:.3f}",
                     "-" if r["fmax_mhz"] is None else f"{r['fmax_mhz']:.1f}",
                     f"{r['gbps']:.3f}" + ("" if r["gbps_clock"] == "routed Fmax" else "*"),
                     f"{r['mbps_per_lut']:.3f}", "yes" if r["gcm"] else "no"))
    width = [max(len(str(x)) for x in col) for col in zip(heads, *rows, strict=True)]
    for row in (heads, *rows):
        cells = zip(row[1:], width[1:], strict=True)
        lines.append(f"{row[0]:<{width[0]}}" + "".join(f"  {x!s:>{w}}" for x, w in cells))
    lines.append("LUT: logic LUTs; LUT-RAM: LUTs used as memory (Mbit/s per LUT counts both); "
                 "levels: LUT levels between registers; cells ns: Yosys sta, cell delays only "
                 "(a lower bound, not an Fmax); GCM: the mode engine takes the core "
                 "(ModeEngine(core, gcm=...): it has a key stream)")
    for r in report["not_compared"]:
        lines.append(f"not compared: {r['core']} (no key port: it takes round keys; GCM: "
                     f"{'yes' if r['gcm'] else 'no'})")
    if any(r["gbps_clock"] != "routed Fmax" for r in report["cores"]):
        lines.append(f"* at an assumed {report['clock_mhz']:g} MHz (--clock-mhz), not a "
                     f"routed Fmax; --route measures it")
    for r in report["cores"]:
        if r["part_note"]:
            lines.append(f"{r['core']}: {r['part_note']}")
        if r["route"] and r["route"].get("error"):
            lines.append(f"{r['core']}: not routed: {r['route']['error']}")
    return lines
