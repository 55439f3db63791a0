"""The build report: resources in each family's own names, throughput and the DRAB-LOCUS
paper's efficiency metrics, and the Markdown that ``aes-fpga build`` prints.

A 7-series build counts LUT, FF, RAMB36, RAMB18 and DSP48E1 (Yosys's cells, or Vivado's report
when Vivado ran); an ECP5 build counts LUT4, FF, DP16KD, MULT18X18D and TRELLIS_DPR16X4 (LUT
RAM), as ``synth_ecp5`` maps them. No text of the report says ``None``: a figure that is not
there reads ``n/a``.
"""

__all__ = ["OPEN_FLOW_PART_NOTE", "RESOURCES", "EFFICIENCY", "utilization_from_cells",
           "resource_summary", "add_metrics", "markdown"]

#: Why the open flow may build for another part than the board's (see Board.open_flow_part).
OPEN_FLOW_PART_NOTE = ("prjxray knows the commercial grades only, so the open flow builds for "
                       "the commercial part of the same die; the bitstream loads on the board's "
                       "FPGA")

#: A build report's resource columns, by family: (key in the report's ``utilization``, name).
#: ECP5's ``lut4`` counts every LUT4 the netlist occupies: logic, two per CCU2C carry cell and
#: four per TRELLIS_DPR16X4 (16x4 LUT RAM), whose number is the last column.
RESOURCES = {
    "xc7": (("lut", "LUT"), ("ff", "FF"), ("ramb36", "RAMB36"), ("ramb18", "RAMB18"),
            ("dsp", "DSP48E1")),
    "ecp5": (("lut4", "LUT4"), ("ff", "FF"), ("dp16kd", "DP16KD"), ("mult18x18d", "MULT18X18D"),
             ("trellis_dpr16x4", "TRELLIS_DPR16X4")),
}

#: The efficiency metrics (Mbps per resource), by family: (key in the report's
#: ``efficiency_mbps_per``, name, ``{utilization key: weight}`` of the resource divided by).
#: 7-series block RAM counts in 36 Kb tiles (a RAMB18 is half of one).
EFFICIENCY = {
    "xc7": (("lut", "LUT", {"lut": 1}), ("ff", "FF", {"ff": 1}),
            ("bram36", "BRAM", {"ramb36": 1, "ramb18": 0.5}), ("dsp", "DSP", {"dsp": 1})),
    "ecp5": (("lut4", "LUT4", {"lut4": 1}), ("ff", "FF", {"ff": 1}),
             ("dp16kd", "DP16KD", {"dp16kd": 1}), ("mult18x18d", "MULT18X18D", {"mult18x18d": 1})),
}


def _text(value):
    return "n/a" if value is None else str(value)


def utilization_from_cells(cells_by_type, family):
    """The report's ``utilization`` of a netlist from Yosys's ``num_cells_by_type``, keyed as
    :data:`RESOURCES` names the ``family``'s resources."""
    from .synth import count_cells

    u = count_cells(cells_by_type)
    if family == "ecp5":
        return {"lut4": u.lut_total, "ff": u.ff, "dp16kd": u.ramb18, "mult18x18d": u.dsp,
                "trellis_dpr16x4": u.lutram}
    return {"lut": u.lut_total, "ff": u.ff, "ramb18": u.ramb18, "ramb36": u.ramb36,
            "dsp": u.dsp}


def resource_summary(utilization, family):
    """``utilization`` as one line: ``"1234 LUT, 567 FF, ..."`` in the family's names."""
    return ", ".join(f"{_text(utilization.get(key))} {name}"
                     for key, name in RESOURCES[family])


def add_metrics(report, core):
    """Throughput at the core clock and the DRAB-LOCUS paper's efficiency metrics, from the
    core's own :meth:`blocks_per_cycle` (for its shortest key), into ``report``."""
    sizes = getattr(core, "key_sizes", (128,))
    blocks_per_cycle = float(core.blocks_per_cycle(min(sizes)))
    clock = report.get("clock_mhz")
    if clock is None:
        return
    fmax = report.get("fmax_mhz")
    usable = min(clock, fmax) if fmax else clock
    mbps = blocks_per_cycle * 128 * usable
    report["throughput"] = {"key_bits": min(sizes), "blocks_per_cycle": blocks_per_cycle,
                            "at_mhz": usable, "mbps": round(mbps, 2)}
    u = report.get("utilization")
    if u:
        efficiency = {}
        for key, _name, weights in EFFICIENCY[report.get("family", "xc7")]:
            amount = sum(u.get(k, 0) * w for k, w in weights.items())
            efficiency[key] = round(mbps / amount, 3) if amount else None
        report["efficiency_mbps_per"] = efficiency


def _summary_lines(r):
    lines = [f"# Build report: {r['board']} / {r['design']} / {r['core']}", "",
             f"- part: {r['part']}", f"- toolchain: {r['toolchain']}",
             f"- status: **{r['status']}**",
             f"- build tree: {r['build_dir']} ({len(r['files'])} files, this report included)"]
    if r.get("open_flow_part") not in (None, r["part"]):
        lines.insert(3, f"- open-flow part: {r['open_flow_part']} ({OPEN_FLOW_PART_NOTE})")
    if r.get("missing_tool"):
        lines.append(f"- stopped at: missing `{r['missing_tool']}`")
    lines.append(f"- core clock: requested {r['clock_mhz_requested']} MHz, "
                 f"{'PLL' if r.get('pll') else 'MMCM'} gives {_text(r.get('clock_mhz'))} MHz")
    if r.get("logic_levels"):
        ll = r["logic_levels"]
        worst = ll["paths"][0] if ll["paths"] else None
        lines.append(f"- logic levels of the synthesized netlist (`aes-fpga timing` counting): "
                     f"worst {ll['worst_levels']}"
                     + (f", `{worst['start']['name']}` -> `{worst['end']['name']}` "
                        f"({worst['end']['pin']})" if worst else ""))
    if r.get("fmax_mhz"):
        lines.append(f"- Fmax after place and route: {r['fmax_mhz']} MHz")
        for clk, mhz in (r.get("fmax_by_clock") or {}).items():
            want = (r.get("clock_constraints_mhz") or {}).get(clk)
            lines.append(f"  - clock `{clk}`: {mhz} MHz"
                         + (f" (constrained to {want} MHz)" if want else ""))
        for cp in r.get("critical_paths") or []:
            lines.append(f"- critical path {cp['from']} -> {cp['to']}: {cp['delay_ns']} ns "
                         f"({cp['logic_ns']} logic, {cp['routing_ns']} routing, "
                         f"{cp['steps']} steps) from `{_text(cp['start'])}` to "
                         f"`{_text(cp['end'])}`")
    if r.get("baud"):
        flow = ("RTS/CTS flow control (open the port with --rtscts)" if r.get("flow_control")
                else "no flow control (the host keeps to the INFO window)")
        lines.append(f"- serial line: {r['baud']} baud 8N1, {flow}")
    if r.get("ghash"):
        lines.append(f"- GCM in the engine, {r['ghash']} GHASH (`aes-fpga info` lists GCM)")
    if r.get("device") == "secured":
        lines.append(f"- device: **secured** by a device key, fingerprint "
                     f"`{r['device_key_fingerprint']}` (SHA-256 of a label and the key, first 8 "
                     f"bytes: `aes-fpga keygen --fingerprint FILE` gives a key file's); only "
                     f"INFO and the session handshake in the clear. The HDL, netlists and "
                     f"bitstream in this folder hold the key: keep them secret (they are "
                     f"readable by their owner only)")
    elif r.get("device") == "open":
        lines.append("- device: open (no device key: every command in the clear; "
                     "`aes-fpga info` says so)")
    if r.get("ethernet"):
        e = r["ethernet"]
        lines += [f"- identity: IPv4 {e['ip']}, UDP port {e['udp_port']}, MAC {e['mac']} "
                  f"(host: aes-fpga info --port udp://{e['ip']}:{e['udp_port']})",
                  (f"- Ethernet PHY: {e['chip']}, RGMII, "
                   + (f"{e['speed']} Mbit/s (fixed by the board); " if e.get("speed") else
                      "1000/100/10 Mbit/s (the speed from the PHY's in-band status); ")
                   + f"transmit clock {e['ref_clock_mhz']:g} MHz from "
                   f"the clock generator, forwarded by a DDR output register; "
                   if e["phy"] == "rgmii" else
                   f"- Ethernet PHY: {e['chip']}, {e['phy'].upper()}, 100 Mbit/s; reference "
                   f"clock {e['ref_clock_mhz']:g} MHz from the MMCM (CLKOUT1, BUFG, ODDR to the "
                   f"pin); ") +
                  f"reset held {e['reset_hold_ms']:g} ms after the FPGA's reset "
                  f"({_text(e.get('reset_cycles'))} core clock cycles; {e['reset_note']}); link "
                  f"status read over MDIO from PHY address {e['mdio_address']} (`phy_link` in "
                  f"`aes-fpga info`)"]
    for tool, version in r["tools"].items():
        lines.append(f"- {tool}: {_text(version)}")
    return lines


def _table_lines(r):
    family = r.get("family", "xc7")
    lines = ["", "## Stages", "", "| stage | status | seconds | detail |", "|---|---|---|---|"]
    for s in r["stages"]:
        detail = s["detail"].splitlines()[0] if s["detail"] else ""
        lines.append(f"| {s['name']} | {s['status']} | {s['seconds']} | {detail} |")
    if r.get("utilization"):
        u = r["utilization"]
        columns = RESOURCES[family]
        lines += ["", "## Utilisation", "",
                  "| " + " | ".join(name for _, name in columns) + " |",
                  "|" + "---|" * len(columns),
                  "| " + " | ".join(_text(u.get(key)) for key, _ in columns) + " |"]
    if r.get("utilization_pnr"):
        lines += ["", "## Utilisation after place and route (nextpnr)", "",
                  "| bel type | used | available |", "|---|---|---|"]
        for bel, u in r["utilization_pnr"].items():
            lines.append(f"| {bel} | {u['used']} | {u['available']} |")
    if r.get("throughput"):
        t = r["throughput"]
        lines += ["", "## Throughput", "",
                  f"AES-{t['key_bits']}, sustained: {t['blocks_per_cycle']:.4f} blocks/cycle at "
                  f"{t['at_mhz']} MHz = {t['mbps']} Mbps."]
        if r.get("efficiency_mbps_per"):
            e = r["efficiency_mbps_per"]
            figures = ", ".join(f"{name} {_text(e.get(key))}"
                                for key, name, _ in EFFICIENCY[family])
            lines += ["", "Efficiency (the DRAB-LOCUS paper's metrics, Mbps per resource): "
                      f"{figures}."]
    return lines


def markdown(report):
    """``report.md``: the build report as Markdown (what ``aes-fpga build`` prints)."""
    return "\n".join(_summary_lines(report) + _table_lines(report)) + "\n"
