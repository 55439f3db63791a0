"""The ``aes-fpga`` command line."""

import argparse
import contextlib
import errno
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

from . import __version__
from .cores import CORES, DEFAULT_CORE

__all__ = ["main"]


@contextlib.contextmanager
def _announced(text):
    """Say ``text ...`` on standard error before the block, and the seconds it took after it
    (only the line break when it raises)."""
    start = time.monotonic()
    print(f"{text} ...", end="", flush=True, file=sys.stderr)
    try:
        yield
    except BaseException:
        print(file=sys.stderr)
        raise
    print(f" {time.monotonic() - start:.1f} s", file=sys.stderr)


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
    from .flow.synth import synthesize

    rows = []
    cases = _primitive_cases()
    for i, (name, make, latency) in enumerate(cases, 1):
        with _announced(f"[{i}/{len(cases)}] synth_xilinx {args.part}: {name}"):
            dut = make()
            u = synthesize(dut, args.part).total
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


def _make_core(name, args):
    from .cores import make_core
    options = dict(getattr(args, "option", None) or ())
    try:
        return make_core(name, key_slots=args.key_slots, tag_width=args.tag_width,
                         key_sizes=args.key_sizes, **options)
    except TypeError as e:      # an option the core class does not take
        raise ValueError(f"{name}: {e}") from None


def _core_option(text):
    """``NAME=VALUE`` for a core keyword argument: the value read as a Python literal
    (``decrypt=False``, ``unroll=2``), else kept as text."""
    import ast
    name, sep, value = text.partition("=")
    if not sep or not name.isidentifier():
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=VALUE")
    try:
        value = ast.literal_eval(value)
    except (ValueError, SyntaxError):
        pass
    return name, value


def _key_sizes(text):
    try:
        sizes = tuple(sorted({int(k) for k in text.split(",")}))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of key "
                                         "sizes") from None
    if not sizes or any(k not in (128, 192, 256) for k in sizes):
        raise argparse.ArgumentTypeError(f"{text} is out of range; allowed a comma-separated "
                                         "subset of 128,192,256")
    return sizes


def _add_core_options(p, verb):
    p.add_argument("--core", default=DEFAULT_CORE, choices=sorted(CORES),
                   help=f"core to {verb} (default drab-locus)")
    p.add_argument("--key-sizes", type=_key_sizes, default=(128, 192, 256),
                   help="key sizes the hardware supports, e.g. 128 or 128,256 "
                        "(default 128,192,256)")
    p.add_argument("--key-slots", type=int, default=1, help="key slots (1 to 64, default 1)")
    p.add_argument("--tag-width", type=int, default=8, help="request tag bits (0 to 64, default 8)")
    p.add_argument("--option", type=_core_option, action="append", metavar="NAME=VALUE",
                   help="another keyword argument of the core class, e.g. decrypt=False for "
                        "lut-round (repeatable)")
    p.add_argument("--json", action="store_true", help="print a JSON object instead of a table")


def _util_fields(u):
    return {"lut": u.lut, "lut_as_memory": u.lut_as_memory, "lut_total": u.lut_total,
            "ff": u.ff, "ramb18": u.ramb18, "ramb36": u.ramb36,
            "bram36_equiv": u.bram36_equiv, "dsp": u.dsp}


def _synth_top(args, core):
    """The component ``aes-fpga synth`` synthesizes: the core alone, or the whole UART or
    Ethernet appliance around it."""
    if args.design == "core":
        return core
    if args.design == "ethernet":
        from .appliance.gateware.eth_appliance import EthernetAppliance
        from .flow.build import ethernet_identity
        identity = ethernet_identity()
        return EthernetAppliance(mac=identity["mac"], ip=identity["ip"],
                                 udp_port=identity["udp_port"], phy=args.phy, core=core,
                                 key_slots=core.key_slots)
    from .appliance.gateware.uart import UartAppliance
    return UartAppliance(core, clk_freq=args.clock_mhz * 1e6, baud=args.baud)


def _synth_what(args):
    """How the progress lines and the table name what :func:`_synth_top` makes."""
    sizes = ",".join(map(str, args.key_sizes))
    extra = "".join(f", {k}={v!r}" for k, v in (getattr(args, "option", None) or ()))
    what = f"{args.core} (key_sizes={sizes}, key_slots={args.key_slots}{extra})"
    if args.design == "uart":
        what = f"uart appliance at {args.clock_mhz:g} MHz, {args.baud} baud, around {what}"
    elif args.design == "ethernet":
        what = f"ethernet appliance ({args.phy.upper()}) around {what}"
    return what


def _resource_groups(args, top):
    """How the modules of ``top`` (from :func:`_synth_top`) fold into the report's groups."""
    if args.design == "core":
        return type(top).RESOURCE_GROUPS
    from .flow.synth import component_paths
    paths = component_paths(top)
    if args.design == "ethernet":
        from .appliance.gateware.eth.stack import EthernetStack
        stack = paths[id(top.stack)]
        # Everything neither the stack's nor the core's is the datagram engine's (frame check,
        # executor, replies) or the appliance's own wiring (its counters; no LEDs here).
        return {**{".".join(filter(None, (stack, p))): g
                   for p, g in EthernetStack.RESOURCE_GROUPS.items()},
                "": "datagram engine", paths[id(top.core)]: "core"}
    return {"": "transport (UART, FIFO, LEDs)", paths[id(top.engine)]: "protocol engine",
            paths[id(top.core)]: "core"}


def _stack_total(modules):
    """The Ethernet stack's groups of ``modules`` (from :func:`_resource_groups`) summed: PHY,
    MAC, Ethernet, ARP, IPv4, ICMP and UDP, the design without the engine and core."""
    from .appliance.gateware.eth.stack import EthernetStack
    from .flow.synth import sum_utilization
    return sum_utilization(modules[g] for g in dict.fromkeys(
        EthernetStack.RESOURCE_GROUPS.values()) if g in modules)


def _cmd_synth(args):
    from .flow.synth import group_modules, synthesize

    try:
        core = _make_core(args.core, args)      # a bad option fails before any synthesis
    except ValueError as e:
        print(f"aes-fpga synth: error: {e}", file=sys.stderr)
        return 2
    what = _synth_what(args)
    runs = {}
    for n, (label, hierarchy) in enumerate((("flattened", False), ("by module", True)), 1):
        with _announced(f"[{n}/2] synth_xilinx {args.part}, {label}: {what}"):
            top = _synth_top(args, core if n == 1 else _make_core(args.core, args))
            runs[label] = synthesize(top, args.part, hierarchy=hierarchy)
    u = runs["flattened"].total
    from .flow.timing import analyse_netlist
    depth = analyse_netlist(runs["flattened"].netlist_json, worst=1)
    # The groups of the by-module run's design (the last one made).
    groups = _resource_groups(args, top)
    modules = group_modules(runs["by module"].modules, groups)
    report = {"design": args.design, "core": args.core, "part": args.part,
              "key_sizes": list(args.key_sizes),
              "key_slots": args.key_slots, "tag_width": args.tag_width,
              **({"phy": args.phy} if args.design == "ethernet" else {}),
              **_util_fields(u), "carry4": u.carry4, "srl": u.srl, "lutram": u.lutram,
              "muxf": u.muxf, "cells": u.cells,
              # In the order the groups are declared (layer by layer for a design).
              "modules": {g: _util_fields(modules[g]) for g in dict.fromkeys(groups.values())
                          if g in modules},
              # Logic depth of the flattened netlist (aes-fpga timing has the whole report).
              "timing": {"worst_levels": depth.worst_levels,
                         "worst_carry4": depth.paths[0].carry4 if depth.paths else 0}}
    if args.design == "ethernet":
        # The network stack alone (PHY to UDP), from the by-module run like the groups.
        report["stack"] = _util_fields(_stack_total(modules))
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        print()
        return 0
    print(f"{what} on {args.part}: Yosys synth_xilinx, out of context (no I/O buffers)")
    for key, label in (("lut", "LUT (logic)"), ("lutram", "LUT RAM cells"),
                       ("lut_as_memory", "LUT (as memory)"), ("lut_total", "LUT (total)"),
                       ("ff", "FF"),
                       ("srl", "SRL"), ("carry4", "CARRY4"), ("muxf", "MUXF7/8"),
                       ("ramb18", "RAMB18E1"), ("ramb36", "RAMB36E1"),
                       ("bram36_equiv", "BRAM (36 Kb tiles)"), ("dsp", "DSP48E1")):
        print(f"  {label:<22}{report[key]:>8}")
    print("\nby module (hierarchy kept, so the sum can differ slightly from the totals above)")
    cols = (("lut", "LUT"), ("lut_as_memory", "LUT mem"), ("ff", "FF"),
            ("bram36_equiv", "BRAM36"), ("dsp", "DSP"))
    rows = list(report["modules"].items())
    if "stack" in report:
        rows.append(("stack (PHY to UDP, sum of its rows)", report["stack"]))
    width = max(16, *(len(g) + 1 for g, _ in rows))
    print(f"  {'module':<{width}}" + "".join(f"{h:>9}" for _, h in cols))
    for group, fields in rows:
        print(f"  {group:<{width}}" + "".join(f"{fields[k]:>9}" for k, _ in cols))
    return 0


def _cmd_timing(args):
    from .flow.synth import synthesize
    from .flow.timing import END_KINDS, analyse_netlist, cell_delay_estimate

    try:
        core = _make_core(args.core, args)      # a bad option fails before any synthesis
    except ValueError as e:
        print(f"aes-fpga timing: error: {e}", file=sys.stderr)
        return 2
    what = _synth_what(args)
    if args.route and args.design == "ethernet":
        print("aes-fpga timing: error: --route: not with --design ethernet (the route flow "
              "registers every port in one clock domain; the PHY has its own)", file=sys.stderr)
        return 2
    if args.route:
        from .flow.route import DEFAULT_ECP5_PART
        route_part = args.route_part or DEFAULT_ECP5_PART
        route_mhz = args.route_mhz or (150.0 if args.design == "core" else 110.0)
    steps = 1 + bool(args.estimate) + bool(args.route)
    with _announced(f"[1/{steps}] synth_xilinx {args.part}, flattened: {what}"):
        result = synthesize(_synth_top(args, core), args.part)
        depth = analyse_netlist(result.netlist_json, worst=args.worst)
    estimate = None
    if args.estimate:
        with _announced(f"[2/{steps}] Yosys sta (cell delays)"):
            estimate = cell_delay_estimate(result.workdir)
    routed = None
    if args.route:
        from .flow.route import ToolMissing, route
        print(f"[{steps}/{steps}] place and route on {route_part}: {what}", file=sys.stderr)
        try:
            routed = route(_synth_top(args, _make_core(args.core, args)), route_part,
                           freq_mhz=route_mhz, seed=args.seed,
                           progress=lambda line: print(line, file=sys.stderr, flush=True))
        except (ToolMissing, ValueError) as e:
            print(f"aes-fpga timing: error: {e} (the logic-level report above ran)",
                  file=sys.stderr)
            return 2
    report = {"design": args.design, "core": args.core, "part": args.part,
              "key_sizes": list(args.key_sizes), "key_slots": args.key_slots,
              "tag_width": args.tag_width, **depth.as_dict(), "estimate": estimate,
              "routed": routed.as_dict() if routed is not None else None}
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        print()
        return 0
    print(f"{what} on {args.part}: logic levels of the flattened synth_xilinx netlist")
    print("(a level: LUT1-6/INV or a LUT RAM read; MUXF7/8 and CARRY4 count 0 and are shown "
          "beside it)")
    worst = depth.paths[0] if depth.paths else None
    print(f"  worst: {depth.worst_levels} levels"
          + (f" ({worst.carry4} CARRY4, {worst.muxf} MUXF7/8 on that path)" if worst else ""))
    kinds = [k for k in END_KINDS if k in depth.histogram]
    print("\nend points by levels")
    print(f"  {'levels':>6}" + "".join(f"{k:>15}" for k in kinds))
    top = max((lv for h in depth.histogram.values() for lv in h), default=-1)
    for lv in range(top + 1):
        print(f"  {lv:>6}" + "".join(f"{depth.histogram[k].get(lv, 0):>15}" for k in kinds))
    if depth.paths:
        print(f"\nworst paths (one per end signal; {len(depth.paths)} shown)")
        print(f"  {'levels':>6} {'CARRY4':>6} {'MUXF':>4}  start -> end")
        for p in depth.paths:
            print(f"  {p.levels:>6} {p.carry4:>6} {p.muxf:>4}  {p.start} -> {p.end}")
        print(f"  cells on the worst path: {' '.join(t for t, _ in depth.paths[0].cells)}")
    if depth.carry_chains:
        chains = ", ".join(f"{c['length']} ({c['source']})" for c in depth.carry_chains[:5])
        print(f"\nlongest carry chains (CARRY4 cells): {chains}")
    if depth.unknown_cells:
        print(f"\ncells taken as sequential boundaries (not known to the count): "
              f"{', '.join(f'{n} {t}' for t, n in depth.unknown_cells.items())}")
    if estimate is not None:
        print(f"\ncell delays only (Yosys sta): {estimate['ns']:.3f} ns to {estimate['end']}"
              f" -- {estimate['label']}")
        for note in estimate["notes"]:
            print(f"  note: {note}")
    if routed is not None:
        print(f"\nplaced and routed on {routed.part} (nextpnr-ecp5, seed {routed.seed}, every "
              f"port registered): Fmax {routed.fmax_mhz} MHz, {routed.freq_mhz:g} MHz asked "
              f"({'met' if routed.met else 'NOT met'})")
        clocked = [cp for cp in routed.critical_paths if "<async>" not in (cp["from"], cp["to"])]
        if clocked:
            cp = clocked[0]
            print(f"  critical path: {cp['start']} -> {cp['end']}, {cp['delay_ns']} ns "
                  f"({cp['logic_ns']} logic, {cp['routing_ns']} routing)")
    return 0


def _compare_table(report):
    """The lines of ``aes-fpga compare``'s table."""
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
             "cells ns", "Fmax MHz", "Gbit/s", "Mbit/s/LUT")
    rows = []
    for r in report["cores"]:
        rows.append((r["core"], r["lut"], r["lut_as_memory"], r["ff"], f"{r['bram36']:g}",
                     r["dsp"], r["latency_cycles"], r["blocks_per_cycle_fraction"],
                     r["lut_levels"], f"{r['cell_delay_ns']:.3f}",
                     "-" if r["fmax_mhz"] is None else f"{r['fmax_mhz']:.1f}",
                     f"{r['gbps']:.3f}" + ("" if r["gbps_clock"] == "routed Fmax" else "*"),
                     f"{r['mbps_per_lut']:.3f}"))
    width = [max(len(str(x)) for x in col) for col in zip(heads, *rows, strict=True)]
    for row in (heads, *rows):
        cells = zip(row[1:], width[1:], strict=True)
        lines.append(f"{row[0]:<{width[0]}}" + "".join(f"  {x!s:>{w}}" for x, w in cells))
    lines.append("LUT: logic LUTs; LUT-RAM: LUTs used as memory (Mbit/s per LUT counts both); "
                 "levels: LUT levels between registers; cells ns: Yosys sta, cell delays only "
                 "(a lower bound, not an Fmax)")
    if any(r["gbps_clock"] != "routed Fmax" for r in report["cores"]):
        lines.append(f"* at an assumed {report['clock_mhz']:g} MHz (--clock-mhz), not a "
                     f"routed Fmax; --route measures it")
    for r in report["cores"]:
        if r["part_note"]:
            lines.append(f"{r['core']}: {r['part_note']}")
        if r["route"] and r["route"].get("error"):
            lines.append(f"{r['core']}: not routed: {r['route']['error']}")
    return lines


def _cmd_compare(args):
    from .flow.compare import PLOT_FORMATS, compare, plot

    if args.plot is not None:       # a bad picture name fails before any synthesis
        from pathlib import PurePath
        if PurePath(args.plot).suffix.lower() not in PLOT_FORMATS:
            print(f"aes-fpga compare: error: --plot: {args.plot!r} has no known picture "
                  f"suffix; allowed {', '.join(PLOT_FORMATS)}", file=sys.stderr)
            return 2
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            print("aes-fpga compare: error: --plot needs matplotlib; install the plot extra: "
                  "pip install aes-fpga[plot]", file=sys.stderr)
            return 2
        why = _cannot_write(args.plot)
        if why:
            print(f"aes-fpga compare: error: --plot: cannot write {args.plot}: {why}",
                  file=sys.stderr)
            return 2
    route_part = None
    if args.route:
        from .flow.route import DEFAULT_ECP5_PART
        route_part = args.route_part or DEFAULT_ECP5_PART
    from .flow.route import ToolMissing
    try:
        report = compare(args.cores, args.part, route=args.route, route_part=route_part,
                         route_mhz=args.route_mhz, seed=args.seed, clock_mhz=args.clock_mhz,
                         progress=lambda line: print(line, file=sys.stderr, flush=True))
    except (ValueError, ToolMissing) as e:
        print(f"aes-fpga compare: error: {e}", file=sys.stderr)
        return 2
    if args.plot is not None:
        plot(report, args.plot)
        print(f"picture written to {args.plot}", file=sys.stderr)
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        print()
    else:
        print("\n".join(_compare_table(report)))
    return 0


def _cmd_power(args):
    from .sim.power import subbytes_toggles

    runs = {}
    try:
        for label, low_power in (("baseline", False), ("low-power", True)):
            with _announced(f"simulating {args.cycles} cycles of {args.core} ({label}: "
                            f"{'operand isolation + clock gating' if low_power else 'neither'}"
                            f", {args.lanes} lanes)"):
                runs[label] = subbytes_toggles(low_power=low_power, lanes=args.lanes,
                                               cycles=args.cycles, duty=args.duty,
                                               seed=args.seed)
    except ValueError as e:
        print(f"aes-fpga power: error: {e}", file=sys.stderr)
        return 2
    except RuntimeError as e:       # a wrong S-box result
        print(f"aes-fpga power: error: {e}", file=sys.stderr)
        return 1
    keys = (("data_toggles", "data toggles, all design signals"),
            ("sbox_input_toggles", "S-box input toggles"),
            ("sbox_output_toggles", "S-box output toggles"),
            ("register_clock_edges", "clock edges at the result register"))
    base, low = runs["baseline"], runs["low-power"]
    reduction = {k: (1 - low[k] / base[k]) * 100 if base[k] else 0.0 for k, _ in keys}
    report = {"core": args.core, "lanes": args.lanes, "cycles": args.cycles, "duty": args.duty,
              "seed": args.seed, "method": "bit toggles of the design's signals in Amaranth's "
              "simulator (zero delay), not of the mapped netlist", "runs": runs,
              "reduction_percent": reduction}
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        print()
        return 0
    print(f"{args.core}, {args.lanes} lanes: {args.cycles} cycles of soft-CPU traffic (a "
          f"request on {args.duty:.0%} of the idle cycles, seed {args.seed}); {base['words']} "
          f"words, every result checked against the S-box")
    print("toggle counts of the design's signals in simulation (a power proxy, not mW)")
    print(f"  {'':<38}{'baseline':>10}{'low-power':>11}{'change':>9}")
    for k, label in keys:
        print(f"  {label:<38}{base[k]:>10}{low[k]:>11}{-reduction[k]:>8.1f}%")
    return 0


def _cmd_bench_uart(args):
    from .appliance.gateware.uart import uart_divider
    from .sim.linkbench import bench_sim_wall_time, bench_uart

    if args.size is None:
        args.size = 65536

    try:
        for baud in args.baud:      # refuse an impossible rate before simulating anything
            uart_divider(args.clock_mhz * 1e6, baud)
    except ValueError as e:
        print(f"aes-fpga bench: error: {e}", file=sys.stderr)
        return 2

    def note(line):
        print(line, file=sys.stderr, flush=True)

    runs = []
    try:
        for baud in args.baud:
            note(f"simulating {args.size} bytes of CTR over the serial line at {baud} baud, "
                 f"{args.clock_mhz:g} MHz ...")
            r = bench_uart(baud=baud, clk_freq=args.clock_mhz * 1e6, size=args.size,
                           core=_make_core(args.core, args), flow_control=args.flow_control,
                           progress=note)
            note(f"  {r['wall_s']:.1f} s ({r['cycles_per_s'] / 1e6:.2f} M cycles/s, "
                 f"{r['simulator']})")
            runs.append(r)
        note(f"encrypting {args.size} bytes of CTR through --port sim ...")
        sim = bench_sim_wall_time(size=args.size, progress=note)
    except ValueError as e:         # a core option out of range
        print(f"aes-fpga bench: error: {e}", file=sys.stderr)
        return 2
    except RuntimeError as e:       # a wrong answer (traffic.WrongResult) or a stall
        print(f"aes-fpga bench: error: {e}", file=sys.stderr)
        return 1
    report = {"design": "uart", "core": args.core, "key_sizes": list(args.key_sizes),
              "key_slots": args.key_slots, "bytes": args.size, "mode": "ctr",
              "serial_line": runs, "sim_port": sim}
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        print()
        return 0
    print(f"uart appliance ({args.core}): {args.size} bytes, CTR, simulated with the UART PHYs "
          f"and the line in the loop, host pipelining up to the device's window")
    head = ("baud", "window", "cycles", "payload B/s", "baud/10", "efficiency")
    print("  " + "".join(f"{h:>14}" for h in head))
    for r in runs:
        print("  " + "".join(f"{v:>14}" for v in (
            f"{r['baud']:.0f}", r["window"], r["cycles"], f"{r['payload_bytes_per_s']:.0f}",
            f"{r['raw_bytes_per_s']:.0f}", f"{r['efficiency']:.4f}")))
    print(f"  results checked against {runs[0]['checked_with']}")
    print(f"--port sim ({sim['simulator']}): {args.size} bytes in {sim['wall_s']:.2f} s")
    return 0


def _cmd_bench_ethernet(args):
    from .sim.ethbench import bench_ethernet

    def note(line):
        print(line, file=sys.stderr, flush=True)

    size = args.size if args.size is not None else 1 << 20
    try:
        r = bench_ethernet(size, phy=args.phy, progress=note)
    except RuntimeError as e:       # a wrong answer, a missing reply, no compiler
        print(f"aes-fpga bench: error: {e}", file=sys.stderr)
        return 1
    if args.json:
        json.dump(r, sys.stdout, indent=2)
        print()
        return 0
    symbol = "a nibble" if r["phy"] == "mii" else "a dibit"
    print(f"ethernet appliance over {r['phy'].upper()} at 100 Mbit/s (simulated, {symbol} a "
          f"cycle): {size} bytes of CTR in {r['datagrams']} datagrams of {r['chunk']} bytes, "
          f"full duplex")
    print(f"  payload throughput {r['payload_fraction_of_line_rate']:.4f} of the line rate "
          f"(the wire format's ceiling with {r['chunk']}-byte chunks: "
          f"{r['ceiling_fraction']:.4f})")
    print(f"  round trip of a 16-byte request: {r['latency_cycles_16_bytes']} "
          f"{r['phy'].upper()} clock cycles ({r['latency_us']} us at {r['phy_clock_mhz']} MHz)")
    print(f"  results checked against {r['checked_with']}")
    return 0


def _cmd_bench(args):
    from .sim.traffic import bench

    if args.design == "uart":
        return _cmd_bench_uart(args)
    if args.design == "ethernet":
        return _cmd_bench_ethernet(args)
    if args.key_size not in args.key_sizes:
        print(f"aes-fpga bench: error: key_size: {args.key_size} is not among the core's "
              f"key sizes {','.join(map(str, args.key_sizes))}", file=sys.stderr)
        return 2
    try:
        core = _make_core(args.core, args)
    except ValueError as e:
        print(f"aes-fpga bench: error: {e}", file=sys.stderr)
        return 2
    # Cores without the key schedule take round keys on ``rk`` instead of a key on ``key``.
    load = "key" if hasattr(core, "key") else "rk"
    try:
        with _announced(f"simulating {args.blocks} blocks: {args.core}, AES-{args.key_size}, "
                        f"key loaded via {load}"):
            # An encryption-only core (its ``ops``) ignores the op field: send encryptions.
            ops = getattr(core, "ops", None)
            pattern = "encrypt" if ops is not None and len(ops) == 1 else "alternate"
            r = bench(core, key_bytes=args.key_size // 8, blocks=args.blocks, load=load,
                      op_pattern=pattern)
    except RuntimeError as e:
        # A benchmark that computed wrong answers (traffic.WrongResult, a RuntimeError) or
        # stalled has no figures to report.
        print(f"aes-fpga bench: error: {e}", file=sys.stderr)
        return 1
    report = {"core": args.core, "key_size": args.key_size, "key_slots": args.key_slots,
              "tag_width": args.tag_width, "load": r["load"], "op_pattern": r["op_pattern"],
              "latency_cycles": r["latency_cycles"], "latency_min": r["latency_min"],
              "latency_max": r["latency_max"], "blocks": r["blocks"], "cycles": r["cycles"],
              "blocks_per_cycle": r["blocks_per_cycle"], "clock_mhz": args.clock_mhz,
              "gbps_at_mhz": r["blocks_per_cycle"] * 128 * args.clock_mhz / 1000,
              "verified": r["verified"]}
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        print()
        return 0
    lat = report["latency_cycles"]
    lat = f"{lat}" if lat is not None else f"{report['latency_min']} to {report['latency_max']}"
    print(f"{args.core}, AES-{args.key_size}: {report['blocks']} blocks of saturating traffic "
          f"(encrypt/decrypt alternating), cycle-accurate simulation")
    for label, value in (
            ("latency (accepted -> result)", f"{lat} cycles"),
            ("cycles (first accept .. last result)", f"{report['cycles']}"),
            ("throughput", f"{report['blocks_per_cycle']:.4f} blocks/cycle"),
            (f"at {args.clock_mhz:g} MHz", f"{report['gbps_at_mhz']:.3f} Gbps"),
            ("results", f"{report['blocks']} of {report['blocks']} match the AES model")):
        print(f"  {label:<38}{value}")
    return 0


def _cmd_boards(args):
    from .boards import BOARDS
    from .flow.build import DESIGN_NEEDS, OPEN_FLOW_PART_NOTE, designs_for

    rows = []
    for b in BOARDS.values():
        p = b.platform()
        clk = p.lookup(p.default_clk)
        designs = designs_for(b)
        # Only frontends a design exists for: the ones `build --design` can build on the board.
        frontends = list(dict.fromkeys(DESIGN_NEEDS[d] for d in designs if d in DESIGN_NEEDS))
        rows.append({"board": b.name, "description": b.description, "family": b.family,
                     "part": b.part, "open_flow_part": b.open_flow_part,
                     "clock_mhz": clk.clock.frequency / 1e6, "designs": designs,
                     "frontends": frontends, "open_flow": b.open_flow, "notes": b.notes})
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        print()
        return 0
    print(f"{'board':<14}{'family':<8}{'part':<22}{'open-flow part':<20}{'clock':>7}  "
          f"designs (--design)")
    for r in rows:
        flow = ("none (Vivado only)" if r["open_flow_part"] is None else
                "same" if r["open_flow_part"] == r["part"] else f"{r['open_flow_part']} *")
        print(f"{r['board']:<14}{r['family']:<8}{r['part']:<22}{flow:<20}"
              f"{r['clock_mhz']:>6.2f}M  {','.join(r['designs'])}")
    if any(r["open_flow_part"] not in (None, r["part"]) for r in rows):
        print(f"* {OPEN_FLOW_PART_NOTE}")
    return 0


def _int_arg(text):
    """An integer as given (range checks, naming the option, are the build's)."""
    try:
        return int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None


def _cmd_build(args):
    from .flow.build import build

    try:
        result = build(args.board, design=args.design, core=args.core,
                       toolchain=args.toolchain, clock_mhz=args.clock_mhz, baud=args.baud,
                       dry_run=args.dry_run, build_root=args.build_dir,
                       core_options={"key_slots": args.key_slots, "tag_width": args.tag_width,
                                     "key_sizes": args.key_sizes},
                       ip=args.ip, udp_port=args.udp_port, mac=args.mac)
    except ValueError as e:
        print(f"aes-fpga build: error: {e}", file=sys.stderr)
        return 2
    r = result.report
    if args.json:
        json.dump(r, sys.stdout, indent=2)
        print()
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


def _cmd_program(args):
    from .boards import BOARDS
    from .flow.build import find_tool

    if args.board not in BOARDS:
        print(f"aes-fpga program: error: board: {args.board!r} is not known; choose from "
              f"{', '.join(sorted(BOARDS))}", file=sys.stderr)
        return 2
    bitstream = Path(args.bitstream or
                     Path(args.build_dir) / f"{args.board}-{args.design}-{args.core}" / "top.bit")
    if not bitstream.is_file():
        print(f"aes-fpga program: error: no bitstream at {bitstream}; run aes-fpga build "
              f"--board {args.board} first (with the open tools or Vivado installed)",
              file=sys.stderr)
        return 2
    loader = find_tool("openFPGALoader")
    if loader is None:
        print("aes-fpga program: error: openFPGALoader is not installed (Debian: apt-get install "
              "openfpgaloader); nothing was programmed", file=sys.stderr)
        return 3
    board = BOARDS[args.board]
    cmd = [loader, *(["-b", board.programmer] if board.programmer else []), str(bitstream)]
    print(" ".join(cmd), file=sys.stderr)
    return subprocess.run(cmd).returncode


def _hex_arg(name, lengths):
    def parse(text):
        try:
            value = bytes.fromhex(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name}: {text!r} is not hexadecimal") from None
        if len(value) not in lengths:
            raise argparse.ArgumentTypeError(
                f"{name}: {len(value)} bytes; allowed {' or '.join(map(str, lengths))} bytes")
        return value
    return parse


def _read_key_file(path):
    try:
        raw = Path(path).read_bytes()
    except OSError as e:
        raise ValueError(f"key-file: cannot read {path}: {e.strerror}") from None
    if len(raw) in (16, 24, 32):
        return raw
    try:
        key = bytes.fromhex(raw.decode("ascii").strip())
    except (UnicodeDecodeError, ValueError):
        key = b""
    if len(key) not in (16, 24, 32):
        raise ValueError(f"key-file: {path} holds neither a 16/24/32-byte key nor its hex form")
    return key


def _pkcs7_pad(data):
    n = 16 - len(data) % 16
    return data + bytes([n]) * n


def _pkcs7_unpad(data):
    if not data or len(data) % 16 or not 1 <= data[-1] <= 16 or \
            data[-data[-1]:] != bytes([data[-1]]) * data[-1]:
        raise ValueError("the decrypted data does not end in valid PKCS#7 padding (wrong key, "
                         "IV or mode, or the data was not padded: use --padding none)")
    return data[:-data[-1]]


def _open_device(args):
    from .appliance.client import Device
    from .sim.link import open_link
    link = open_link(args.port, baud=args.baud, rtscts=args.rtscts)
    if getattr(link, "datagrams", False):
        from .appliance.udp_client import UdpDevice
        # --timeout bounds the whole wait for a reply; within it a request is sent again
        # every 0.5 s (a datagram lost on the way is not answered at all).
        attempt = min(0.5, args.timeout)
        return UdpDevice(link, timeout=attempt,
                         retries=max(0, math.ceil(args.timeout / attempt) - 1))
    return Device(link, timeout=args.timeout)


def _device_errors():
    from .appliance.client import LinkError
    from .appliance.errors import ProtocolError
    return (LinkError, ProtocolError)


def _cannot_write(path):
    """Why ``path`` cannot be written as a file (an ``OSError``'s text), or ``None``. Nothing is
    created: a run that fails leaves no output file behind, and an existing one as it was."""
    p = Path(path)
    if p.is_dir():
        return os.strerror(errno.EISDIR)
    folder = p.parent
    if not folder.exists():
        return os.strerror(errno.ENOENT)
    if not folder.is_dir():
        return os.strerror(errno.ENOTDIR)
    if not (os.access(p, os.W_OK) if p.exists() else os.access(folder, os.W_OK | os.X_OK)):
        return os.strerror(errno.EACCES)
    return None


def _cmd_crypt(args):
    from .appliance.client import Progress
    from .appliance.spec import Mode, Op

    op = Op.ENCRYPT if args.command == "encrypt" else Op.DECRYPT
    mode = Mode[args.mode.upper()]
    padding = args.padding if mode is not Mode.CTR else "none"
    try:
        key = args.key if args.key is not None else _read_key_file(args.key_file)
        if mode is not Mode.ECB and args.iv is None:
            raise ValueError(f"iv: --iv is required for {args.mode.upper()} (16 bytes in hex)")
        try:
            data = Path(args.input).read_bytes()
        except OSError as e:
            raise ValueError(f"IN: cannot read {args.input}: {e.strerror}") from None
        if not data and op is Op.DECRYPT:
            raise ValueError(f"IN: {args.input} is empty: there is nothing to decrypt (an "
                             f"encrypted file is never empty)")
        if not data and padding == "none":
            # Refused rather than answered with an empty OUT, as decryption refuses it back.
            how = ("CTR" if mode is Mode.CTR else
                   f"{args.mode.upper()} with --padding none (PKCS#7 padding makes a block of it)")
            raise ValueError(f"IN: {args.input} is empty: there is nothing to encrypt in {how}")
        if op is Op.ENCRYPT and padding == "pkcs7":
            data = _pkcs7_pad(data)
        if mode is not Mode.CTR and len(data) % 16:
            raise ValueError(f"IN: {len(data)} bytes is not a whole number of 16-byte blocks, "
                             f"as {args.mode.upper()} needs; use --padding pkcs7")
        # Before any device work, so that a long run does not end in a path mistake.
        why = _cannot_write(args.output)
        if why:
            raise ValueError(f"OUT: cannot write {args.output}: {why}")
    except ValueError as e:
        print(f"aes-fpga {args.command}: error: {e}", file=sys.stderr)
        return 2
    try:
        with _open_device(args) as dev:
            dev.load_key(args.key_slot, key)
            bar = Progress(len(data), f"{args.command} {args.mode.upper()}")
            try:
                out = dev.process(args.key_slot, op, mode, data, iv=args.iv or bytes(16),
                                  progress=bar)
            finally:
                bar.close(summary=False)    # the summary once OUT is written
            dev.zeroize(args.key_slot)
    except _device_errors() as e:
        print(f"aes-fpga {args.command}: error: {e}", file=sys.stderr)
        return 1
    if op is Op.DECRYPT and padding == "pkcs7":
        try:
            out = _pkcs7_unpad(out)
        except ValueError as e:
            print(f"aes-fpga {args.command}: error: {e}", file=sys.stderr)
            return 1
    try:
        Path(args.output).write_bytes(out)
    except OSError as e:
        print(f"aes-fpga {args.command}: error: OUT: cannot write {args.output}: {e.strerror}",
              file=sys.stderr)
        return 2
    print(bar.summary(), file=sys.stderr)
    return 0


def _cmd_info(args):
    try:
        with _open_device(args) as dev:
            info = dev.info()
            # The Ethernet appliance's drop counters (STATS); a serial device has none.
            stats = dev.stats() if getattr(dev.link, "datagrams", False) else None
    except _device_errors() as e:
        print(f"aes-fpga info: error: {e}", file=sys.stderr)
        return 1
    fields = {"core": info.core_name, "build_id": f"{info.build_id:#010x}",
              "protocol_version": info.protocol_version, "key_sizes": list(info.key_sizes),
              "key_slots": info.key_slots, "modes": [m.name for m in info.modes],
              "max_payload": info.max_payload, "window": info.window}
    if stats is not None:
        from .appliance.spec import UDP_COUNTERS
        names = list(UDP_COUNTERS) + [f"counter{n}" for n in range(len(UDP_COUNTERS),
                                                                  len(stats))]
        fields["drops"] = dict(zip(names[:len(stats)], stats, strict=True))
    if args.json:
        json.dump(fields, sys.stdout, indent=2)
        print()
    else:
        for k, v in fields.items():
            if k == "drops":
                link = v.pop("phy_link", None)
                v = ", ".join(f"{name} {n}" for name, n in v.items() if n) or "none"
                if link is not None:
                    state = {0: "down", 1: "up"}.get(
                        link, "unknown (no MDIO answer, or no MDIO built in)")
                    print(f"{'phy_link':<18}{state}")
            print(f"{k:<18}{v}")
    return 0


def _cmd_device_selftest(args):
    try:
        with _open_device(args) as dev:
            results = dev.selftest(args.key_slot)
    except _device_errors() as e:
        print(f"aes-fpga selftest: error: {e}", file=sys.stderr)
        return 1
    for bits, ok in results:
        print(f"AES-{bits}: FIPS-197 C encrypt/decrypt {'pass' if ok else 'FAIL'}")
    return 0 if all(ok for _, ok in results) else 1


def _add_port_options(p):
    p.add_argument("--port", default="sim",
                   help="serial port of the board (e.g. /dev/ttyUSB1); udp://ADDR[:PORT] an "
                        "Ethernet appliance (port 7001 by default); 'sim' the simulated "
                        "appliance (default); 'model' the pure-Python reference device")
    p.add_argument("--baud", type=int, default=3_000_000, help="baud rate (default 3000000)")
    p.add_argument("--rtscts", action="store_true",
                   help="RTS/CTS hardware flow control on the serial port (for bitstreams "
                        "built with it: boards whose UART has the pins)")
    p.add_argument("--timeout", type=float, default=5.0,
                   help="seconds to wait for each reply (default 5; over UDP a request is "
                        "sent again every 0.5 s within it)")


def _add_phy_option(p, what):
    p.add_argument("--phy", choices=("mii", "rmii"), default="mii",
                   help=f"--design ethernet: {what} (default mii)")


def build_parser():
    from .flow.synth import DEFAULT_PART

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

    p = sub.add_parser("synth", help="synthesize a core (or an appliance around it) with "
                       "Yosys synth_xilinx and print its utilisation")
    _add_core_options(p, "synthesize")
    p.add_argument("--design", choices=("core", "uart", "ethernet"), default="core",
                   help="core: the core alone (default); uart: the UART appliance around it "
                        "(transport, protocol engine, modes, core), grouped by layer; "
                        "ethernet: the Ethernet appliance (PHY, MAC, Ethernet and ARP, IPv4 "
                        "and ICMP, UDP, datagram engine, core), grouped by layer, with the "
                        "stack's sum")
    _add_phy_option(p, "the PHY interface")
    p.add_argument("--clock-mhz", type=float, default=100.0,
                   help="--design uart: the clock its UART divider is built for (default 100)")
    p.add_argument("--baud", type=int, default=3_000_000,
                   help="--design uart: line rate (default 3000000)")
    p.add_argument("--part", default=DEFAULT_PART,
                   help=f"Xilinx 7-series part (default {DEFAULT_PART})")
    p.set_defaults(func=_cmd_synth)

    def int_in(lo, hi):
        def check(text):
            try:
                value = int(text)
            except ValueError:
                raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
            if not lo <= value <= hi:
                raise argparse.ArgumentTypeError(f"{value} is out of range; allowed {lo} to {hi}")
            return value
        return check

    def positive_mhz(text):
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        # Written as a chained "0 < value < inf" so that NaN, for which it is False, is refused.
        if not 0 < value < float("inf"):
            raise argparse.ArgumentTypeError(f"{text} is out of range; allowed a finite "
                                             f"frequency above 0 MHz")
        return value

    def fraction(text):
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not 0 <= value <= 1:
            raise argparse.ArgumentTypeError(f"{text} is out of range; allowed 0 to 1")
        return value

    p = sub.add_parser("bench", help="simulate a core cycle by cycle under saturating traffic, "
                       "check every result and print its latency and throughput; with "
                       "--design uart, the serial appliance's link efficiency")
    _add_core_options(p, "simulate")
    p.add_argument("--design", choices=("core", "uart", "ethernet"), default="core",
                   help="core: the core alone (default); uart: a CTR message through the "
                        "simulated serial appliance, UART PHYs and line included; ethernet: "
                        "a CTR message through the simulated Ethernet appliance at the MII "
                        "or RMII pins (payload throughput against the line rate, and the "
                        "latency of a 16-byte request)")
    _add_phy_option(p, "the PHY interface simulated")
    p.add_argument("--baud", type=int_in(1, 100_000_000), nargs="+",
                   default=[3_000_000, 12_000_000],
                   help="--design uart: line rates to measure (default 3000000 12000000)")
    p.add_argument("--size", type=int_in(1, 1 << 24), default=None,
                   help="--design uart|ethernet: message bytes (1 to 16777216, default 65536 "
                        "for uart, 1048576 for ethernet)")
    p.add_argument("--flow-control", action="store_true",
                   help="--design uart: RTS/CTS on the simulated line")
    p.add_argument("--key-size", type=int, default=128, choices=(128, 192, 256),
                   help="AES key size in bits (default 128)")
    p.add_argument("--blocks", type=int_in(1, 100000), default=240,
                   help="blocks to encrypt and decrypt, alternating (1 to 100000, default 240)")
    p.add_argument("--clock-mhz", type=positive_mhz, default=100.0,
                   help="clock frequency for the Gbps figure; with --design uart, the "
                        "simulated clock (above 0, default 100)")
    p.set_defaults(func=_cmd_bench)

    p = sub.add_parser("timing", help="synthesize a core (or an appliance around it) and "
                       "count the logic levels between registers: worst levels, a histogram, "
                       "the worst paths, carry chains, and Yosys's cell-delay figure")
    _add_core_options(p, "analyse")
    p.add_argument("--design", choices=("core", "uart", "ethernet"), default="core",
                   help="core: the core alone (default); uart: the UART appliance around it; "
                        "ethernet: the Ethernet appliance around it")
    _add_phy_option(p, "the PHY interface")
    p.add_argument("--clock-mhz", type=positive_mhz, default=100.0,
                   help="--design uart: the clock its UART divider is built for (default 100)")
    p.add_argument("--baud", type=int_in(1, 100_000_000), default=3_000_000,
                   help="--design uart: line rate (default 3000000)")
    p.add_argument("--part", default=DEFAULT_PART,
                   help=f"Xilinx 7-series part (default {DEFAULT_PART})")
    p.add_argument("--worst", type=int_in(0, 1000), default=10,
                   help="worst paths to list, one per end signal (0 to 1000, default 10)")
    p.add_argument("--no-estimate", dest="estimate", action="store_false",
                   help="skip the Yosys sta cell-delay figure")
    p.add_argument("--route", action="store_true",
                   help="also place and route the design, every port registered, on an ECP5 "
                        "part with nextpnr-ecp5 and report its routed Fmax (minutes)")
    p.add_argument("--route-part", default=None,
                   help="--route: the ECP5 part (default LFE5U-85F-6BG381, the ULX3S's)")
    p.add_argument("--route-mhz", type=positive_mhz, default=None,
                   help="--route: the clock asked of nextpnr (default 150 for a core, 110 for "
                        "--design uart)")
    p.add_argument("--seed", type=int_in(0, 2 ** 31 - 1), default=1,
                   help="--route: nextpnr's placer seed (default 1)")
    p.set_defaults(func=_cmd_timing)

    p = sub.add_parser("compare", help="every core side by side (AES-128, 1 key slot): "
                       "utilisation, cycles, logic depth and, with --route, routed Fmax and "
                       "throughput; as a table, JSON or a picture")
    p.add_argument("--cores", type=lambda t: [c for c in t.split(",") if c], default=None,
                   help="comma-separated cores to compare (default: every core with a key "
                        "port)")
    p.add_argument("--part", default=DEFAULT_PART,
                   help=f"Xilinx 7-series part (default {DEFAULT_PART}); a core that does not "
                        f"fit is given the smallest part of the family that does, and the "
                        f"table says so")
    p.add_argument("--json", action="store_true", help="print a JSON object instead of a table")
    p.add_argument("--plot", metavar="FILE", default=None,
                   help="also draw area against throughput (log axes) into FILE.svg or FILE.png "
                        "(needs pip install aes-fpga[plot])")
    p.add_argument("--clock-mhz", type=positive_mhz, default=100.0,
                   help="the clock of the Gbit/s figures of cores not routed (default 100)")
    p.add_argument("--route", nargs="?", const=True, default=False, metavar="CORES",
                   type=lambda t: [c for c in t.split(",") if c],
                   help="also place and route the cores (all, or a comma-separated few) on an "
                        "ECP5 part with nextpnr-ecp5 (every port registered) and give Gbit/s at "
                        "the routed Fmax (minutes per core)")
    p.add_argument("--route-part", default=None,
                   help="--route: the ECP5 part (default LFE5U-85F-6BG381, the ULX3S's)")
    p.add_argument("--route-mhz", type=positive_mhz, default=150.0,
                   help="--route: the clock asked of nextpnr (default 150)")
    p.add_argument("--seed", type=int_in(0, 2 ** 31 - 1), default=1,
                   help="--route: nextpnr's placer seed (default 1)")
    p.set_defaults(func=_cmd_compare)

    p = sub.add_parser("power", help="a toggle-count power proxy: switching activity in "
                       "simulation with and without the low-power techniques")
    p.add_argument("--core", default="subbytes-accelerator", choices=("subbytes-accelerator",),
                   help="the design (default subbytes-accelerator: SubBytes for a soft CPU, "
                        "with operand isolation and clock gating, against its baseline)")
    p.add_argument("--lanes", type=int_in(1, 16), default=4,
                   help="bytes per request (1 to 16, default 4)")
    p.add_argument("--cycles", type=int_in(1, 1_000_000), default=2000,
                   help="cycles to simulate (1 to 1000000, default 2000)")
    p.add_argument("--duty", type=fraction, default=0.22,
                   help="share of idle cycles on which the CPU makes a request (0 to 1, "
                        "default 0.22, the paper's SubBytes activity)")
    p.add_argument("--seed", type=int_in(0, 2 ** 31 - 1), default=1,
                   help="seed of the traffic (default 1)")
    p.add_argument("--json", action="store_true", help="print a JSON object instead of a table")
    p.set_defaults(func=_cmd_power)

    from .flow.build import DESIGNS, TOOLCHAINS

    p = sub.add_parser("boards", help="list the boards: part (and the open flow's), clock, "
                       "the designs the build offers")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=_cmd_boards)

    p = sub.add_parser("build", help="build a design for a board: build tree, bitstream (when the "
                       "tools are installed) and report")
    p.add_argument("--board", required=True, help="board name (see aes-fpga boards)")
    p.add_argument("--design", default="selftest", choices=sorted(DESIGNS),
                   help="design inside the board glue (default selftest)")
    _add_core_options(p, "build")
    p.add_argument("--toolchain", default=None, choices=TOOLCHAINS,
                   help="openxc7: Yosys, nextpnr-xilinx, prjxray (default on 7-series); "
                        "vivado; trellis: Yosys, nextpnr-ecp5, ecppack from PyPI (default and "
                        "only choice on ECP5)")
    p.add_argument("--clock-mhz", type=positive_mhz, default=100.0,
                   help="core clock made by the MMCM or PLL (default 100)")
    p.add_argument("--baud", type=int, default=3_000_000,
                   help="UART rate of the uart design (default 3000000)")
    p.add_argument("--ip", default=None,
                   help="--design ethernet: the appliance's IPv4 address (default 192.168.1.50)")
    p.add_argument("--udp-port", type=_int_arg, default=None,
                   help="--design ethernet: the UDP port it serves, 1..65535 (default 7001)")
    p.add_argument("--mac", default=None,
                   help="--design ethernet: its MAC address, unicast (default 02:00 and the "
                        "four bytes of --ip, a locally administered address)")
    p.add_argument("--dry-run", action="store_true",
                   help="write the complete build tree without running the tools")
    p.add_argument("--build-dir", default="build", help="root of the build trees (default build)")
    p.set_defaults(func=_cmd_build)

    for verb in ("encrypt", "decrypt"):
        p = sub.add_parser(verb, help=f"{verb} a file with the appliance")
        _add_port_options(p)
        key = p.add_mutually_exclusive_group(required=True)
        key.add_argument("--key", type=_hex_arg("key", (16, 24, 32)),
                         help="the key in hex (16, 24 or 32 bytes)")
        key.add_argument("--key-file", help="file holding the key (raw bytes or hex)")
        p.add_argument("--key-slot", type=int, default=0, help="device key slot (default 0)")
        p.add_argument("--mode", default="ctr", choices=("ecb", "cbc", "ctr"),
                       help="block-cipher mode (default ctr)")
        p.add_argument("--iv", type=_hex_arg("iv", (16,)),
                       help="CBC IV or initial CTR counter block, 16 bytes in hex")
        p.add_argument("--padding", default="pkcs7", choices=("pkcs7", "none"),
                       help="ECB/CBC: PKCS#7 padding added on encryption and removed on "
                            "decryption (default), or none (whole blocks only); CTR never pads")
        p.add_argument("input", metavar="IN", help="input file")
        p.add_argument("output", metavar="OUT", help="output file")
        p.set_defaults(func=_cmd_crypt)

    p = sub.add_parser("info", help="ask the appliance what it is")
    _add_port_options(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_cmd_info)

    p = sub.add_parser("selftest", help="run the FIPS-197 vectors on the appliance")
    _add_port_options(p)
    p.add_argument("--key-slot", type=int, default=0, help="key slot to use (default 0)")
    p.set_defaults(func=_cmd_device_selftest)

    p = sub.add_parser("program", help="load a built bitstream with openFPGALoader")
    p.add_argument("--board", required=True, help="board name (see aes-fpga boards)")
    p.add_argument("--design", default="selftest", choices=sorted(DESIGNS))
    p.add_argument("--core", default=DEFAULT_CORE, choices=sorted(CORES))
    p.add_argument("--bitstream", help="bitstream file (default: the build tree's top.bit)")
    p.add_argument("--build-dir", default="build", help="root of the build trees (default build)")
    p.set_defaults(func=_cmd_program)
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
    try:
        return args.func(args)
    except BrokenPipeError:
        # The reader went away (``aes-fpga boards --json | head``): nothing is wrong here. Point
        # stdout at /dev/null so that Python's own flush at exit does not complain again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
