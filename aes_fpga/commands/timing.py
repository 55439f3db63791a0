"""``aes-fpga timing``: a design synthesized and its logic levels counted between registers
(worst levels, a histogram, the worst paths, carry chains, Yosys's cell-delay figure); with
``--route``, placed and routed on ECP5 for a routed Fmax."""

from .common import announced, fail, make_core, note, prepare_tools, print_json
from .options import add_core_options, add_json, add_part, add_route_options, int_in
from .synth import add_design_arguments, describe, synth_top

__all__ = ["add_arguments", "run", "report_lines"]


def add_arguments(p):
    add_core_options(p, "analyse")
    add_json(p)
    add_design_arguments(p, "core: the core alone (default); modes: the core in the mode "
                            "engine (GCM with --ghash); selftest: the self-test design "
                            "around it; uart: the UART appliance around it; ethernet: the "
                            "Ethernet appliance around it")
    add_part(p)
    p.add_argument("--worst", type=int_in(0, 1000), default=10,
                   help="worst paths to list, one per end signal (0 to 1000, default 10)")
    p.add_argument("--no-estimate", dest="estimate", action="store_false",
                   help="skip the Yosys sta cell-delay figure")
    p.add_argument("--route", action="store_true",
                   help="also place and route the design, every port registered, on an ECP5 "
                        "part with nextpnr-ecp5 and report its routed Fmax (minutes)")
    add_route_options(p, None, "default 150 for a core, 110 for --design uart")


def run(args):
    from ..flow.synth import synthesize
    from ..flow.timing import analyse_netlist, cell_delay_estimate

    try:
        core = make_core(args)      # a bad option fails before any synthesis
    except ValueError as e:
        return fail("timing", e)
    what = describe(args)
    if args.route and args.design == "ethernet":
        return fail("timing", "--route: not with --design ethernet (the route flow registers "
                              "every port in one clock domain; the PHY has its own)")
    if args.route:
        from ..flow.route import DEFAULT_ECP5_PART
        route_part = args.route_part or DEFAULT_ECP5_PART
        route_mhz = args.route_mhz or (150.0 if args.design == "core" else 110.0)
    prepare_tools(nextpnr=args.route)
    steps = 1 + bool(args.estimate) + bool(args.route)
    with announced(f"[1/{steps}] synth_xilinx {args.part}, flattened: {what}"):
        result = synthesize(synth_top(args, core), args.part)
        depth = analyse_netlist(result.netlist_json, worst=args.worst)
    estimate = None
    if args.estimate:
        with announced(f"[2/{steps}] Yosys sta (cell delays)"):
            estimate = cell_delay_estimate(result.workdir)
    routed = None
    if args.route:
        from ..flow.route import ToolMissing, route
        note(f"[{steps}/{steps}] place and route on {route_part}: {what}")
        try:
            routed = route(synth_top(args, make_core(args)), route_part, freq_mhz=route_mhz,
                           seed=args.seed, progress=note)
        except (ToolMissing, ValueError) as e:
            return fail("timing", f"{e} (the logic-level report above ran)")
    report = {"design": args.design, "core": args.core, "part": args.part,
              "key_sizes": list(args.key_sizes), "key_slots": args.key_slots,
              "tag_width": args.tag_width, **depth.as_dict(), "estimate": estimate,
              "routed": routed.as_dict() if routed is not None else None}
    if args.json:
        print_json(report)
        return 0
    print("\n".join(report_lines(what, args.part, depth, estimate, routed)))
    return 0


def report_lines(what, part, depth, estimate, routed):
    """The lines of ``timing``'s report: the logic levels of ``depth``
    (:func:`aes_fpga.flow.timing.analyse_netlist`), the cell-delay ``estimate`` and the
    ``routed`` result when there are."""
    from ..flow.timing import END_KINDS

    lines = [f"{what} on {part}: logic levels of the flattened synth_xilinx netlist",
             "(a level: LUT1-6/INV or a LUT RAM read; MUXF7/8 and CARRY4 count 0 and are shown "
             "beside it)"]
    worst = depth.paths[0] if depth.paths else None
    lines.append(f"  worst: {depth.worst_levels} levels"
                 + (f" ({worst.carry4} CARRY4, {worst.muxf} MUXF7/8 on that path)" if worst
                    else ""))
    kinds = [k for k in END_KINDS if k in depth.histogram]
    lines.append("\nend points by levels")
    lines.append(f"  {'levels':>6}" + "".join(f"{k:>15}" for k in kinds))
    top = max((lv for h in depth.histogram.values() for lv in h), default=-1)
    for lv in range(top + 1):
        lines.append(f"  {lv:>6}" + "".join(f"{depth.histogram[k].get(lv, 0):>15}"
                                            for k in kinds))
    if depth.paths:
        lines.append(f"\nworst paths (one per end signal; {len(depth.paths)} shown)")
        lines.append(f"  {'levels':>6} {'CARRY4':>6} {'MUXF':>4}  start -> end")
        for p in depth.paths:
            lines.append(f"  {p.levels:>6} {p.carry4:>6} {p.muxf:>4}  {p.start} -> {p.end}")
        lines.append(f"  cells on the worst path: "
                     f"{' '.join(t for t, _ in depth.paths[0].cells)}")
    if depth.carry_chains:
        chains = ", ".join(f"{c['length']} ({c['source']})" for c in depth.carry_chains[:5])
        lines.append(f"\nlongest carry chains (CARRY4 cells): {chains}")
    if depth.unknown_cells:
        lines.append(f"\ncells taken as sequential boundaries (not known to the count): "
                     f"{', '.join(f'{n} {t}' for t, n in depth.unknown_cells.items())}")
    if estimate is not None:
        lines.append(f"\ncell delays only (Yosys sta): {estimate['ns']:.3f} ns to "
                     f"{estimate['end']} -- {estimate['label']}")
        lines.extend(f"  note: {n}" for n in estimate["notes"])
    if routed is not None:
        lines.append(f"\nplaced and routed on {routed.part} (nextpnr-ecp5, seed {routed.seed}, "
                     f"every port registered): Fmax {routed.fmax_mhz} MHz, "
                     f"{routed.freq_mhz:g} MHz asked ({'met' if routed.met else 'NOT met'})")
        clocked = [cp for cp in routed.critical_paths if "<async>" not in (cp["from"], cp["to"])]
        if clocked:
            cp = clocked[0]
            lines.append(f"  critical path: {cp['start']} -> {cp['end']}, {cp['delay_ns']} ns "
                         f"({cp['logic_ns']} logic, {cp['routing_ns']} routing)")
    return lines
