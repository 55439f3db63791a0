"""``aes-fpga synth``: a design of the table (:mod:`aes_fpga.designs.table`) synthesized with
Yosys ``synth_xilinx``, its utilisation in total and by group of modules.

The design helpers here (:func:`design_options`, :func:`synth_top`, :func:`describe`,
:func:`resource_groups`) serve ``timing`` too.
"""

from .common import announced, core_text, fail, make_core, prepare_tools, print_json
from .options import (
    add_baud,
    add_clock_mhz,
    add_core_options,
    add_design,
    add_entropy,
    add_ghash,
    add_json,
    add_part,
    add_phy,
    ghash_of,
)

__all__ = ["add_arguments", "run", "add_design_arguments", "design_options", "synth_top",
           "describe", "resource_groups", "stack_total", "util_fields", "SYNTH_DESIGNS"]

#: The designs ``synth`` and ``timing`` report (a name of the table of designs).
SYNTH_DESIGNS = ("core", "modes", "selftest", "uart", "ethernet")


def add_design_arguments(p, help):
    """``--design`` of :data:`SYNTH_DESIGNS` and what the designs are made with: ``--phy``,
    ``--clock-mhz``, ``--baud``, ``--ghash``, ``--entropy``."""
    add_design(p, SYNTH_DESIGNS, help, "core")
    add_ghash(p, "--design modes, uart, ethernet: GCM in the mode engine, with this GHASH "
                 "(--ghash-digit: modes only; the appliances' lut GHASH takes 8)", "none")
    add_entropy(p, "with")
    add_phy(p, "the PHY interface")
    add_clock_mhz(p, "--design uart: the clock its UART divider is built for")
    add_baud(p, "--design uart: line rate")


def add_arguments(p):
    add_core_options(p, "synthesize")
    add_json(p)
    add_design_arguments(p, "core: the core alone (default); modes: the core in the mode "
                            "engine (ECB, CBC, CTR, and GCM with --ghash), grouped as engine, "
                            "GHASH and core; selftest: the self-test design "
                            "around it (known answers, checker, LEDs); uart: the UART "
                            "appliance around it (transport, protocol engine, modes, core), "
                            "grouped by layer; "
                            "ethernet: the Ethernet appliance (PHY, MAC, Ethernet and ARP, "
                            "IPv4 and ICMP, UDP, datagram engine, core), grouped by layer, "
                            "with the stack's sum")
    add_part(p)


def design_options(args):
    """The :class:`~aes_fpga.designs.table.DesignOptions` of ``args``: out of context, the
    Ethernet design with the build's default identity."""
    from ..designs.table import DesignOptions
    identity = None
    if args.design == "ethernet":
        from ..flow.build import ethernet_identity
        identity = ethernet_identity()
    return DesignOptions(clock_mhz=args.clock_mhz, baud=args.baud, phy=args.phy,
                         identity=identity, gcm=ghash_of(args), ghash_digit=args.ghash_digit,
                         entropy=getattr(args, "entropy", False))


def synth_top(args, core):
    """The component ``synth`` and ``timing`` synthesize: ``args.design`` of the table of
    designs around ``core``, out of context."""
    from ..designs.table import DESIGN_TABLE
    return DESIGN_TABLE[args.design].make(core, design_options(args))


def describe(args):
    """How the progress lines and the reports name what :func:`synth_top` makes."""
    from ..designs.table import DESIGN_TABLE, DesignOptions
    options = DesignOptions(clock_mhz=args.clock_mhz, baud=args.baud, phy=args.phy,
                            gcm=ghash_of(args), ghash_digit=args.ghash_digit)
    return DESIGN_TABLE[args.design].what(core_text(args), options)


def resource_groups(args, top):
    """How the modules of ``top`` (from :func:`synth_top`) fold into the report's groups."""
    from ..designs.table import DESIGN_TABLE
    from ..flow.synth import component_paths
    return DESIGN_TABLE[args.design].resource_groups(top, lambda: component_paths(top))


def stack_total(modules):
    """The Ethernet stack's groups of ``modules`` (grouped by :func:`resource_groups`) summed:
    PHY, MAC, Ethernet, ARP, IPv4, ICMP and UDP, the design without the engine and core."""
    from ..appliance.gateware.eth_appliance import EthernetAppliance
    from ..flow.synth import sum_utilization
    return sum_utilization(modules[g] for g in EthernetAppliance.STACK_GROUPS if g in modules)


def util_fields(u):
    """The utilisation fields every report gives."""
    return {"lut": u.lut, "lut_as_memory": u.lut_as_memory, "lut_total": u.lut_total,
            "ff": u.ff, "ramb18": u.ramb18, "ramb36": u.ramb36,
            "bram36_equiv": u.bram36_equiv, "dsp": u.dsp}


def run(args):
    from ..flow.synth import group_modules, synthesize

    try:
        core = make_core(args)      # a bad option fails before any synthesis
    except ValueError as e:
        return fail("synth", e)
    what = describe(args)
    prepare_tools()
    runs = {}
    for n, (label, hierarchy) in enumerate((("flattened", False), ("by module", True)), 1):
        with announced(f"[{n}/2] synth_xilinx {args.part}, {label}: {what}"):
            top = synth_top(args, core if n == 1 else make_core(args))
            runs[label] = synthesize(top, args.part, hierarchy=hierarchy)
    u = runs["flattened"].total
    from ..flow.timing import analyse_netlist
    depth = analyse_netlist(runs["flattened"].netlist_json, worst=1)
    # The groups of the by-module run's design (the last one made).
    groups = resource_groups(args, top)
    modules = group_modules(runs["by module"].modules, groups)
    report = {"design": args.design, "core": args.core, "part": args.part,
              "key_sizes": list(args.key_sizes),
              "key_slots": args.key_slots, "tag_width": args.tag_width,
              **({"phy": args.phy} if args.design == "ethernet" else {}),
              **({"ghash": args.ghash} if args.ghash != "none" else {}),
              **util_fields(u), "carry4": u.carry4, "srl": u.srl, "lutram": u.lutram,
              "muxf": u.muxf, "cells": u.cells,
              # In the order the groups are declared (layer by layer for a design).
              "modules": {g: util_fields(modules[g]) for g in dict.fromkeys(groups.values())
                          if g in modules},
              # Logic depth of the flattened netlist (aes-fpga timing has the whole report).
              "timing": {"worst_levels": depth.worst_levels,
                         "worst_carry4": depth.paths[0].carry4 if depth.paths else 0}}
    if args.design == "ethernet":
        # The network stack alone (PHY to UDP), from the by-module run like the groups.
        report["stack"] = util_fields(stack_total(modules))
    if args.json:
        print_json(report)
        return 0
    print("\n".join(report_lines(report, what)))
    return 0


def report_lines(report, what):
    """The lines of ``synth``'s table for ``report`` (its JSON)."""
    lines = [f"{what} on {report['part']}: Yosys synth_xilinx, out of context (no I/O buffers)"]
    for key, label in (("lut", "LUT (logic)"), ("lutram", "LUT RAM cells"),
                       ("lut_as_memory", "LUT (as memory)"), ("lut_total", "LUT (total)"),
                       ("ff", "FF"),
                       ("srl", "SRL"), ("carry4", "CARRY4"), ("muxf", "MUXF7/8"),
                       ("ramb18", "RAMB18E1"), ("ramb36", "RAMB36E1"),
                       ("bram36_equiv", "BRAM (36 Kb tiles)"), ("dsp", "DSP48E1")):
        lines.append(f"  {label:<22}{report[key]:>8}")
    lines.append("\nby module (hierarchy kept, so the sum can differ slightly from the totals "
                 "above)")
    cols = (("lut", "LUT"), ("lut_as_memory", "LUT mem"), ("ff", "FF"),
            ("bram36_equiv", "BRAM36"), ("dsp", "DSP"))
    rows = list(report["modules"].items())
    if "stack" in report:
        rows.append(("stack (PHY to UDP, sum of its rows)", report["stack"]))
    width = max(16, *(len(g) + 1 for g, _ in rows))
    lines.append(f"  {'module':<{width}}" + "".join(f"{h:>9}" for _, h in cols))
    for group, fields in rows:
        lines.append(f"  {group:<{width}}" + "".join(f"{fields[k]:>9}" for k, _ in cols))
    return lines
