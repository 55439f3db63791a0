"""Every core of the table side by side: area, cycles, logic depth and (optionally) routed Fmax.

:func:`compare` builds each keyed core of :data:`aes_fpga.cores.CORES` (the cores with a
``key`` port: a core that takes its round keys on ``rk`` is a part of another core, not a
choice of its own) in one configuration, :data:`COMPARE_OPTIONS` (AES-128 only, one key slot),
and measures it with the project's own tools:

- utilisation: :func:`aes_fpga.flow.synth.synthesize` (Yosys ``synth_xilinx``, flattened);
- latency and blocks per cycle: the core's own ``latency(128)`` and ``blocks_per_cycle(128)``;
- logic depth: :func:`aes_fpga.flow.timing.analyse_netlist` (LUT levels) and
  :func:`aes_fpga.flow.timing.cell_delay_estimate` (cell delays only, a lower bound);
- with ``route=True`` (or the names of the cores to route):
  :func:`aes_fpga.flow.route.route`, the routed Fmax on an ECP5 part (every
  port registered), from which the Gbit/s and Mbit/s per LUT figures are taken. Without it they
  are given at a stated clock (``clock_mhz``), which is an assumption, not a measurement.

Part needs. Yosys's 7-series mapping does not depend on the size of the device, only on the
family, so the counts are those of the part asked for; each core is then checked against the
capacities of :data:`XC7_PARTS`, and when it does not fit the asked part the smallest part of
the same family and of the ladder that holds it is named, with the resource that did not fit
(the fully unrolled T-table core needs more block RAM than an xc7a35t has).
"""

import time
from dataclasses import dataclass
from fractions import Fraction

from ..cores import CORES, make_core
from ..modes import ModeEngine
from .synth import DEFAULT_PART

__all__ = ["COMPARE_OPTIONS", "KEY_BITS", "PartCapacity", "XC7_PARTS", "part_capacity",
           "overflows", "fitting_part", "keyed_cores", "compare", "gcm_offered", "plot",
           "plot_figure", "PLOT_FORMATS", "PAPER_FIGURES"]

#: The one configuration every core is compared in (each core class's keyword arguments).
COMPARE_OPTIONS = {"key_sizes": (128,), "key_slots": 1, "tag_width": 8}
#: The key length the figures are for.
KEY_BITS = 128


@dataclass(frozen=True)
class PartCapacity:
    """What one 7-series device holds (Xilinx DS180/DS190 "device-feature summary"): LUTs
    (slices x 4), the LUTs of its SLICEMs that can be memory (distributed RAM Kb x 1024 / 64),
    flip-flops, 36 Kb block RAM tiles and DSP48E1 slices. ``part`` is a full part name of the
    device (one package, speed grade 1) for a suggestion."""
    device: str
    part: str
    lut: int
    lut_as_memory: int
    ff: int
    bram36: int
    dsp: int


#: Devices by family, smallest first: the ladder :func:`fitting_part` climbs.
XC7_PARTS = (
    PartCapacity("xc7a35t", "xc7a35tcsg324-1", 20_800, 6_400, 41_600, 50, 90),
    PartCapacity("xc7a50t", "xc7a50tcsg324-1", 32_600, 9_600, 65_200, 75, 120),
    PartCapacity("xc7a75t", "xc7a75tfgg484-1", 47_200, 14_272, 94_400, 105, 180),
    PartCapacity("xc7a100t", "xc7a100tcsg324-1", 63_400, 19_008, 126_800, 135, 240),
    PartCapacity("xc7a200t", "xc7a200tfbg484-1", 134_600, 46_208, 269_200, 365, 740),
    PartCapacity("xc7z010", "xc7z010clg400-1", 17_600, 6_000, 35_200, 60, 80),
    PartCapacity("xc7z020", "xc7z020clg400-1", 53_200, 17_400, 106_400, 140, 220),
)


def part_capacity(part):
    """The :class:`PartCapacity` of ``part``'s device, or ``None`` when it is not in
    :data:`XC7_PARTS`."""
    from ..platform import parse_part
    device = parse_part(part)[0]
    return next((c for c in XC7_PARTS if c.device == device), None)


def overflows(util, capacity):
    """What of ``util`` (a :class:`~aes_fpga.flow.synth.Utilization`) exceeds ``capacity``:
    a list of ``"BRAM 80 > 50"``-like texts, empty when it fits."""
    need = {"LUT": (util.lut_total, capacity.lut),
            "LUT as memory": (util.lut_as_memory, capacity.lut_as_memory),
            "FF": (util.ff, capacity.ff), "BRAM36": (util.bram36_equiv, capacity.bram36),
            "DSP": (util.dsp, capacity.dsp)}
    return [f"{what} {n:g} > {have}" for what, (n, have) in need.items() if n > have]


def fitting_part(util, part):
    """``(part, note)``: ``part`` itself when ``util`` fits it (or its device is not in
    :data:`XC7_PARTS`: then the note says the fit was not checked), else the smallest part of
    the ladder of the same family (``xc7a``, ``xc7z``) that holds it, the note naming what did
    not fit. Raises ``ValueError`` when no part of the ladder holds it."""
    capacity = part_capacity(part)
    if capacity is None:
        return part, f"fit not checked: {part} is not in the capacity table"
    over = overflows(util, capacity)
    if not over:
        return part, None
    family = capacity.device[:4]
    for bigger in XC7_PARTS:
        if bigger.device.startswith(family) and not overflows(util, bigger):
            return bigger.part, (f"needs a larger part than {capacity.device} "
                                 f"({', '.join(over)}); smallest {family} that fits: "
                                 f"{bigger.device}")
    raise ValueError(f"no {family} part of the capacity table holds it ({', '.join(over)} on "
                     f"{capacity.device})")


def keyed_cores():
    """Names of the cores of :data:`CORES` that load their own keys (a ``key`` port), in table
    order."""
    names = []
    for name in CORES:
        core = make_core(name, **COMPARE_OPTIONS)
        if "key" in core.signature.members:
            names.append(name)
        # Only its signature was wanted: marked as used, or Amaranth warns (at garbage
        # collection) that an elaboratable was made and never elaborated.
        core._MustUse__used = True
    return names


def _fraction(value):
    value = Fraction(value)
    return f"{value.numerator}/{value.denominator}" if value.denominator != 1 else \
        f"{value.numerator}"


def compare(cores=None, part=DEFAULT_PART, *, route=False, route_part=None, route_mhz=150.0,
            seed=1, clock_mhz=100.0, progress=None):
    """Measure ``cores`` (names of :func:`keyed_cores`; all of them if ``None``) in
    :data:`COMPARE_OPTIONS` on the 7-series ``part``; see the module docstring.

    Returns a dict: ``part`` asked, ``options``, ``key_bits``, ``clock_mhz`` (the clock of the
    throughput figures of cores not routed), ``route`` (the place-and-route settings or
    ``None``), and ``cores``: one dict per core with its utilisation (``lut`` logic,
    ``lut_as_memory``, ``lut_total``, ``ff``, ``ramb18``, ``ramb36``, ``bram36``, ``dsp``),
    ``part`` (where it fits) and ``part_note``, ``latency_cycles``, ``blocks_per_cycle`` (and
    its fraction as text), ``lut_levels``, ``cell_delay_ns``, ``fmax_mhz`` (routed, else
    ``None``), ``gbps`` at ``gbps_clock_mhz`` (``gbps_clock`` says which clock that is) and
    ``mbps_per_lut``, and ``gcm``: whether it offers GCM (:meth:`ModeEngine.accepts
    <aes_fpga.modes.ModeEngine.accepts>` it). ``not_compared``: the cores of the table without
    a key port, each with its ``gcm`` (the same test). ``progress`` is called with a line
    before and after each long step.

    ``route``: ``True`` routes every core, a collection of names only those (the fully unrolled
    T-table core alone takes over half an hour on two cores).

    Raises ``ValueError`` for a name that is not a keyed core, before any synthesis.
    """
    from .synth import synthesize
    from .timing import analyse_netlist, cell_delay_estimate

    keyed = keyed_cores()
    names = keyed if cores is None else list(dict.fromkeys(cores))
    unknown = [n for n in names if n not in keyed]
    if unknown or not names:
        raise ValueError(f"cores: {', '.join(map(repr, unknown)) or 'none given'} "
                         f"{'is' if len(unknown) == 1 else 'are'} not a keyed core; choose "
                         f"from {', '.join(keyed)}")
    if route is True:
        routed_names = set(names)
    else:
        routed_names = set(route or ())
        stray = sorted(routed_names - set(names))
        if stray:
            raise ValueError(f"route: {', '.join(map(repr, stray))} not among the cores "
                             f"compared ({', '.join(names)})")
    route = bool(routed_names)
    if not 0 < clock_mhz < float("inf"):
        raise ValueError(f"clock_mhz: {clock_mhz!r} is out of range; allowed a finite frequency "
                         f"above 0 MHz")
    if route:
        from .route import DEFAULT_ECP5_PART, ToolMissing
        from .route import route as place_and_route
        route_part = route_part or DEFAULT_ECP5_PART
    say = progress or (lambda line: None)
    steps = 2 * len(names) + len(routed_names)
    step = 0

    def announce(text):
        nonlocal step
        step += 1
        say(f"[{step}/{steps}] {text}")
        return time.monotonic()

    rows = []
    for name in names:
        core = make_core(name, **COMPARE_OPTIONS)
        start = announce(f"{name}: synth_xilinx {part}, flattened")
        result = synthesize(core, part)
        u = result.total
        say(f"  {time.monotonic() - start:.1f} s{' (cached)' if result.from_cache else ''}: "
            f"{u.lut_total} LUT, {u.ff} FF, {u.bram36_equiv:g} BRAM36, {u.dsp} DSP")
        start = announce(f"{name}: LUT levels and Yosys sta (cell delays)")
        depth = analyse_netlist(result.netlist_json, worst=1)
        estimate = cell_delay_estimate(result.workdir)
        say(f"  {time.monotonic() - start:.1f} s: {depth.worst_levels} LUT levels, "
            f"{estimate['ns']:.3f} ns of cells")
        fits, note = fitting_part(u, part)
        bpc = Fraction(core.blocks_per_cycle(KEY_BITS))
        row = {"core": name, "description": CORES[name].description, "part": fits,
               "part_note": note, "lut": u.lut, "lut_as_memory": u.lut_as_memory,
               "lut_total": u.lut_total, "ff": u.ff, "ramb18": u.ramb18, "ramb36": u.ramb36,
               "bram36": u.bram36_equiv, "dsp": u.dsp,
               "latency_cycles": core.latency(KEY_BITS),
               "blocks_per_cycle": float(bpc), "blocks_per_cycle_fraction": _fraction(bpc),
               "lut_levels": depth.worst_levels, "cell_delay_ns": estimate["ns"],
               "fmax_mhz": None, "route": None, "gcm": ModeEngine.accepts(core)}
        if name in routed_names:
            announce(f"{name}: place and route on {route_part} (nextpnr-ecp5, {route_mhz:g} "
                     f"MHz asked, seed {seed})")
            try:
                routed = place_and_route(make_core(name, **COMPARE_OPTIONS), route_part,
                                         freq_mhz=route_mhz, seed=seed, progress=say)
            except ToolMissing:
                raise
            except RuntimeError as e:       # nextpnr failed (the core does not fit, ...)
                say(f"  not routed: {str(e).splitlines()[0]}")
                row["route"] = {"part": route_part, "seed": seed, "freq_mhz": route_mhz,
                                "fmax_mhz": None, "error": str(e).splitlines()[0]}
            else:
                row["fmax_mhz"] = routed.fmax_mhz
                row["route"] = {"part": routed.part, "seed": routed.seed,
                                "freq_mhz": routed.freq_mhz, "fmax_mhz": routed.fmax_mhz,
                                "met": routed.met, "utilization": routed.utilization}
        if row["fmax_mhz"] is not None:
            row["gbps_clock_mhz"], row["gbps_clock"] = row["fmax_mhz"], "routed Fmax"
        else:
            row["gbps_clock_mhz"], row["gbps_clock"] = clock_mhz, "assumed clock"
        row["gbps"] = row["blocks_per_cycle"] * 128 * row["gbps_clock_mhz"] / 1000
        row["mbps_per_lut"] = row["gbps"] * 1000 / u.lut_total if u.lut_total else None
        rows.append(row)
    return {"part": part, "key_bits": KEY_BITS,
            "options": {k: list(v) if isinstance(v, tuple) else v
                        for k, v in COMPARE_OPTIONS.items()},
            "clock_mhz": clock_mhz,
            "route": ({"part": route_part, "freq_mhz": route_mhz, "seed": seed,
                       "tool": "nextpnr-ecp5, every port registered"} if route else None),
            "cores": rows,
            "not_compared": [{"core": name, "gcm": gcm_offered(name)}
                             for name in CORES if name not in keyed]}


def gcm_offered(name):
    """Whether core ``name`` of :data:`~aes_fpga.cores.CORES` offers GCM: whether the mode
    engine takes it (:meth:`ModeEngine.accepts <aes_fpga.modes.ModeEngine.accepts>`)."""
    core = make_core(name, **COMPARE_OPTIONS)
    core._MustUse__used = True          # (only its signature is wanted)
    return ModeEngine.accepts(core)


#: Each core's source paper as it reports itself: device and tool, resources (LUTs as the paper
#: counts them, LUT RAM included), clock and throughput, and what it leaves out that the core
#: here has. ``None``: the paper gives no such figure. :func:`plot` draws them beside the cores.
PAPER_FIGURES = {
    "drab-locus": {
        "paper": "Grycel & Walls, DRAB-LOCUS", "device": "xc7z030sbg485-3 (Zynq-7000)",
        "tool": "Xilinx implementation (post place and route)", "lut": 909, "ff": 593,
        "bram36": 16, "dsp": 18, "mhz": 528, "gbps": 7.055,
        "left_out": "nothing of the cipher: enc/dec interleaved, key schedule included",
        "why": "the paper's 528 MHz is a routed Zynq-7000 -3 figure limited by the block RAM; "
               "the routed figure here is on an ECP5 -6 with the open router; the LUT count here "
               "is Yosys's depth-first mapping (it spends LUTs for fewer levels) of a core with "
               "stream handshakes and an output FIFO around it, whose key schedule keeps its "
               "tables in the round-key block RAMs"},
    "compact8": {
        "paper": "Ibrahim, compact 8-bit core", "device": "Spartan-3", "tool": "Xilinx ISE",
        "lut": None, "ff": None, "bram36": None, "dsp": 0, "mhz": 90, "gbps": 128 * 90 / 160e3,
        "left_out": "LUT and FF counts (150 slices + 2 BRAM), decryption, 192/256-bit keys",
        "why": "the paper counts Spartan-3 slices of 4-input LUTs and encrypts only; the core "
               "here also decrypts and keeps every round key in block RAM"},
    "ttable-basic": {
        "paper": "Drimer, Güneysu & Paar, basic", "device": "Virtex-5 LX30 -3",
        "tool": "XST + ISE 9.2i, I/O timing ignored", "lut": 245, "ff": 274, "bram36": 2,
        "dsp": 4, "mhz": 550, "gbps": 1.76,
        "left_out": "the key schedule (round keys precomputed), decryption",
        "why": "the paper's module has no key expansion and its I/Os are out of the timing; the "
               "core here has a key schedule and decrypts, and is routed on ECP5 with every "
               "port registered"},
    "ttable-round": {
        "paper": "Drimer, Güneysu & Paar, round", "device": "Virtex-5 SX95T -3",
        "tool": "XST + ISE 9.2i, I/O timing ignored", "lut": 204, "ff": 601, "bram36": 8,
        "dsp": 16, "mhz": 485, "gbps": 6.21,
        "left_out": "the key schedule (round keys precomputed), decryption",
        "why": "as for the basic module: the key schedule and decryption are added here, and "
               "the clock is an ECP5 open-flow figure, not a Virtex-5 -3 one"},
    "ttable-unrolled": {
        "paper": "Drimer, Güneysu & Paar, unrolled", "device": "Virtex-5 SX95T -3",
        "tool": "XST + ISE 9.2i, I/O timing ignored", "lut": 672, "ff": 992, "bram36": 80,
        "dsp": 160, "mhz": 430, "gbps": 55.0,
        "left_out": "the key schedule (round keys precomputed)",
        "why": "the paper removes the register between block RAM and DSP (70 cycles); the core "
               "here keeps it, adds the key schedule and round-key stores, and needs a larger "
               "part than the others for its block RAM"},
    "lut-round": {
        "paper": "Daoud, Hussein & Rafla, Vivado HLS", "device": "xc7z020-1 (Zynq-7000)",
        "tool": "Vivado HLS + Vivado 2017.4", "lut": 1417, "ff": 830, "bram36": 0, "dsp": 0,
        "mhz": 192, "gbps": 1.29,
        "left_out": "decryption, 192/256-bit keys",
        "why": "the paper's HLS design encrypts only, with the key expanded on the fly; the core "
               "here decrypts too, which needs the inverse S-boxes and MixColumns in LUTs"},
}


#: What ``plot`` accepts, by file suffix.
PLOT_FORMATS = {".svg": "svg", ".png": "png"}


def plot(report, path):
    """Draw ``report`` (from :func:`compare`) with :func:`plot_figure` and write it to ``path``
    (``.svg`` or ``.png``).

    Needs matplotlib (``pip install aes-fpga[plot]``); raises ``ImportError`` saying so when it
    is missing, and ``ValueError`` for another suffix.
    """
    from pathlib import Path
    path = Path(path)
    fmt = PLOT_FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise ValueError(f"plot: {str(path)!r} has no known picture suffix; allowed "
                         f"{', '.join(PLOT_FORMATS)}")
    plt = _pyplot()
    fig, _labels = plot_figure(report)
    fig.savefig(path, format=fmt, metadata={"Date": None} if fmt == "svg" else None)
    plt.close(fig)
    return path


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise ImportError("plot: matplotlib is not installed; install the plot extra: "
                          "pip install aes-fpga[plot]") from None
    matplotlib.use("Agg")           # files only: no display needed
    import matplotlib.pyplot as plt

    # Deterministic SVG output (the README's picture is checked into the repository).
    matplotlib.rcParams["svg.hashsalt"] = "aes-fpga"
    matplotlib.rcParams["svg.fonttype"] = "none"
    return plt


#: Where a label may sit against its point, in order of preference: offset in points and
#: alignment.
_LABEL_PLACES = ((6, 4, "left", "bottom"), (6, -6, "left", "top"), (-6, 4, "right", "bottom"),
                 (-6, -6, "right", "top"), (0, 9, "center", "bottom"), (0, -9, "center", "top"),
                 (10, 0, "left", "center"), (-10, 0, "right", "center"))


def plot_figure(report):
    """The picture of ``report``: area against throughput, both axes logarithmic, one filled
    point per core and, hollow in the same colour and joined to it by a dotted line, the
    figure of the paper the core implements (:data:`PAPER_FIGURES`; the paper's device in the
    legend). Labels are placed so that none overlaps another, a point or the legend.

    Returns the matplotlib figure and the core labels (Text artists).
    """
    plt = _pyplot()
    import matplotlib.ticker

    fig, ax = plt.subplots(figsize=(7.5, 5.2))
    rows = report["cores"]
    points = []
    for n, r in enumerate(rows):
        color = f"C{n % 10}"
        ax.scatter(r["lut_total"], r["gbps"], s=40, color=color, zorder=3)
        points.append((r["lut_total"], r["gbps"]))
        p = PAPER_FIGURES.get(r["core"])
        if p is not None and p["lut"] is not None and p["gbps"] is not None:
            ax.plot([r["lut_total"], p["lut"]], [r["gbps"], p["gbps"]], linestyle=":",
                    linewidth=0.8, color=color, zorder=2)
            ax.scatter(p["lut"], p["gbps"], s=40, facecolors="none", edgecolors=color,
                       zorder=3, label=f"{r['core']}'s paper: {p['device']}")
            points.append((p["lut"], p["gbps"]))
    ax.set_xscale("log")
    ax.set_yscale("log")
    # Decades only: the minor tick labels of a log axis run into each other.
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xlabel(f"LUT (logic + memory), Yosys synth_xilinx, {report.get('part', '')}")
    clocks = {r["gbps_clock"] for r in rows}
    if clocks == {"routed Fmax"}:
        clock = f"at the routed Fmax on {report['route']['part']}"
    elif clocks == {"assumed clock"}:
        clock = f"at an assumed {report['clock_mhz']:g} MHz"
    else:
        clock = f"at the routed Fmax, else {report.get('clock_mhz', 0):g} MHz"
    ax.set_ylabel(f"AES-{report.get('key_bits', 128)} Gbit/s {clock}")
    ax.set_title("aes-fpga cores (filled) and their papers' own figures (hollow, on the "
                 "papers' devices)", fontsize=9)
    ax.grid(True, which="both", linewidth=0.3)
    ax.margins(0.3)
    legend = ax.legend(loc="lower right", fontsize=6.5, title_fontsize=7,
                       title="paper (hollow), its device") if len(points) > len(rows) else None
    fig.tight_layout()
    labels = _place_labels(fig, ax, rows, points, legend)
    return fig, labels


def _place_labels(fig, ax, rows, points, legend):
    """Each core's label at the first of :data:`_LABEL_PLACES` where it overlaps no label
    placed before it, no point, not the legend, and stays inside the axes."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    from matplotlib.transforms import Bbox
    taken = []
    for x, y in points:
        cx, cy = ax.transData.transform((x, y))
        taken.append(Bbox.from_extents(cx - 5, cy - 5, cx + 5, cy + 5))
    if legend is not None:
        taken.append(legend.get_window_extent(renderer))
    frame = ax.get_window_extent(renderer)
    labels = []
    for r in rows:
        extra = ", ".join(t for t in (f"{r['bram36']:g} BRAM36" if r["bram36"] else "",
                                      f"{r['dsp']} DSP" if r["dsp"] else "") if t)
        text = f"{r['core']}" + (f"\n({extra})" if extra else "")
        chosen = None
        for dx, dy, ha, va in _LABEL_PLACES:
            label = ax.annotate(text, (r["lut_total"], r["gbps"]), textcoords="offset points",
                                xytext=(dx, dy), ha=ha, va=va, fontsize=8)
            box = label.get_window_extent(renderer)
            inside = (frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0
                      and box.y1 <= frame.y1)
            if inside and not any(box.overlaps(b) for b in taken):
                chosen = (label, box)
                break
            label.remove()
        if chosen is None:      # nowhere free: the first place
            dx, dy, ha, va = _LABEL_PLACES[0]
            label = ax.annotate(text, (r["lut_total"], r["gbps"]), textcoords="offset points",
                                xytext=(dx, dy), ha=ha, va=va, fontsize=8)
            chosen = (label, label.get_window_extent(renderer))
        taken.append(chosen[1])
        labels.append(chosen[0])
    return labels
