"""Out-of-context synthesis with Yosys ``synth_xilinx`` and a utilisation report.

The numbers are Yosys's, on the named 7-series part, without I/O buffers (``-noiopad``): what the
component itself costs inside a larger design. An ECP5 part name (``LFE5U-85F-6BG381``) runs
``synth_ecp5`` instead; its cells fold into the same columns (see :func:`count_cells`).

Results are cached (:func:`synth_cache_dir`), keyed by a digest of everything Yosys is given:
the design's RTLIL, the Yosys script, the part and the Yosys package and version. A design
synthesized before comes back at once with the same statistics and netlist; a changed design,
script or Yosys misses. ``$AES_FPGA_NO_SYNTH_CACHE=1`` (or ``synthesize(..., cache=False)``)
always runs Yosys.
"""

import contextlib
import hashlib
import json
import os
import re
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..cache import cache_root
from .yosys import exclusive, run_yosys, yosys_release

__all__ = ["Utilization", "SynthResult", "synthesize", "synth_script", "count_cells",
           "group_modules", "sum_utilization", "synth_cache_dir", "cached_yosys_outputs",
           "DEFAULT_PART"]

DEFAULT_PART = "xc7a35tcsg324-1"

_FF = re.compile(r"^(FD[RSCP]E(_1)?|FDRE|LD[CP]E)$")
_LUT = re.compile(r"^(LUT[1-6]|INV)$")
_SRL = re.compile(r"^(SRL16E|SRLC16E|SRLC32E)$")
_LUTRAM = re.compile(r"^RAM(32|64|128|256)(X1[SD]|M)$")
# LUTs each LUT-RAM cell occupies (UG474): a RAM32M/RAM64M is a whole SLICEM (4 LUTs).
_LUTRAM_LUTS = {"RAM32M": 4, "RAM64M": 4, "RAM32X1D": 2, "RAM64X1D": 2, "RAM128X1D": 4,
                "RAM32X1S": 1, "RAM64X1S": 1, "RAM128X1S": 2, "RAM256X1S": 4}


@dataclass
class Utilization:
    """Resource counts of one module (or a whole design) after ``synth_xilinx``."""
    lut: int = 0
    ff: int = 0
    ramb18: int = 0
    ramb36: int = 0
    dsp: int = 0
    carry4: int = 0
    srl: int = 0
    lutram: int = 0
    lut_as_memory: int = 0
    muxf: int = 0
    cells: dict = field(default_factory=dict)

    @property
    def lut_total(self):
        """All LUTs, as Vivado's "Slice LUTs" counts them: logic, LUT RAM and shift registers."""
        return self.lut + self.lut_as_memory + self.srl

    @property
    def bram36_equiv(self):
        """Block RAM in 36 Kb tiles: RAMB36E1 + RAMB18E1 / 2."""
        return self.ramb36 + self.ramb18 / 2

    def as_dict(self):
        d = asdict(self)
        d["bram36_equiv"] = self.bram36_equiv
        d["lut_total"] = self.lut_total
        return d


# ECP5 cells (synth_ecp5), folded into the same columns: a LUT4 or half a CCU2C is a LUT, a
# TRELLIS_FF a flip-flop, a DP16KD (18 Kb) counts as a RAMB18, a MULT18X18D as a DSP, a
# TRELLIS_DPR16X4 (LUT RAM: one slice's four LUT4s) as LUT RAM, PFUMX/L6MUX21 as wide muxes.
_ECP5_CELLS = {"LUT4": ("lut", 1), "CCU2C": ("lut", 2), "TRELLIS_FF": ("ff", 1),
               "DP16KD": ("ramb18", 1), "MULT18X18D": ("dsp", 1), "PFUMX": ("muxf", 1),
               "L6MUX21": ("muxf", 1)}


def count_cells(cells_by_type):
    """Fold Yosys's ``num_cells_by_type`` into a :class:`Utilization` (Xilinx 7-series or ECP5
    cells)."""
    u = Utilization(cells={k: v for k, v in sorted(cells_by_type.items())
                           if not k.startswith("$scopeinfo")})
    for cell, n in cells_by_type.items():
        cell = cell.lstrip("\\")
        if cell.startswith("$scopeinfo"):
            continue
        if _LUT.match(cell):
            u.lut += n
        elif _FF.match(cell):
            u.ff += n
        elif _SRL.match(cell):
            u.srl += n
        elif _LUTRAM.match(cell):
            u.lutram += n
            u.lut_as_memory += n * _LUTRAM_LUTS.get(cell, 4)
        elif cell == "RAMB18E1":
            u.ramb18 += n
        elif cell == "RAMB36E1":
            u.ramb36 += n
        elif cell == "DSP48E1":
            u.dsp += n
        elif cell == "CARRY4":
            u.carry4 += n
        elif cell in ("MUXF7", "MUXF8"):
            u.muxf += n
        elif cell in _ECP5_CELLS:
            column, per_cell = _ECP5_CELLS[cell]
            setattr(u, column, getattr(u, column) + n * per_cell)
        elif cell == "TRELLIS_DPR16X4":
            u.lutram += n
            u.lut_as_memory += n * 4
    return u


def _add(a, b):
    """Sum of two :class:`Utilization` (cell dictionaries merged)."""
    cells = dict(a.cells)
    for k, v in b.cells.items():
        cells[k] = cells.get(k, 0) + v
    return Utilization(**{f: getattr(a, f) + getattr(b, f) for f in
                          ("lut", "ff", "ramb18", "ramb36", "dsp", "carry4", "srl", "lutram",
                           "lut_as_memory", "muxf")}, cells=cells)


def sum_utilization(utils, start=None):
    """The sum of the :class:`Utilization` ``utils`` (cell dictionaries merged)."""
    total = Utilization() if start is None else start
    for u in utils:
        total = _add(total, u)
    return total


def group_modules(modules, groups, *, top="top"):
    """Fold per-module utilisation into named groups.

    ``modules`` maps Yosys module names (``top.datapath.sub_bytes.sbox0``) to their own cells;
    ``groups`` maps a hierarchy path below ``top`` (``"datapath.sub_bytes"``; ``""`` is the top
    itself) to a group name. Each module goes to the group of its longest matching path.
    """
    out = {}
    for name, util in modules.items():
        path = name[len(top) + 1:] if name.startswith(top + ".") else ""
        best = max((p for p in groups
                    if p == "" or path == p or path.startswith(p + ".")), key=len, default=None)
        if best is None:
            raise ValueError(f"module {name} belongs to no group of {sorted(groups)}")
        group = groups[best]
        out[group] = _add(out.get(group, Utilization()), util)
    return out


def component_paths(top, platform=None):
    """Where each elaboratable of ``top``'s design sits in its hierarchy, as
    :func:`group_modules` names paths (``"engine.modes.core"``; ``""`` is ``top``): a dict
    from ``id(elaboratable)`` to its path. Elaborates the design once."""
    from amaranth.hdl import Fragment

    paths = {}

    def walk(fragment, path):
        for origin in fragment.origins or ():
            paths.setdefault(id(origin), ".".join(path))
        for sub, name, *_ in fragment.subfragments:
            walk(sub, [*path, str(name)])

    walk(Fragment.get(top, platform), [])
    return paths


@dataclass
class SynthResult:
    """What :func:`synthesize` produced: totals, the folder holding the netlist and logs, and
    with ``hierarchy=True`` each module's own cells (``modules``). ``from_cache``: the result
    came from the synthesis cache (Yosys did not run)."""
    part: str
    total: Utilization
    workdir: Path
    modules: dict = field(default_factory=dict)
    from_cache: bool = False

    @property
    def netlist(self):
        """The synthesized Verilog netlist (Xilinx cells, no I/O buffers)."""
        return self.workdir / "netlist.v"

    @property
    def netlist_json(self):
        """The same netlist as Yosys JSON (``write_json``): what :mod:`aes_fpga.flow.timing`
        reads."""
        return self.workdir / "netlist.json"


def synth_cache_dir():
    """Where synthesis results are kept: ``synth`` in :func:`aes_fpga.cache.cache_root`
    (``$AES_FPGA_CACHE`` or ``$XDG_CACHE_HOME/aes-fpga``, ``~/.cache/aes-fpga``)."""
    return cache_root() / "synth"


# Bumped when the layout of a cache entry changes.
_CACHE_FORMAT = 1


def _cache_enabled(cache):
    if cache is not None:
        return cache
    return os.environ.get("AES_FPGA_NO_SYNTH_CACHE", "") in ("", "0")


def _yosys_digest(*items):
    """A digest of ``items`` (texts) with the cache format and the Yosys that runs here (which
    package, which version)."""
    h = hashlib.sha256()
    for item in (f"format={_CACHE_FORMAT}", yosys_release(), *items):
        h.update(item.encode() + b"\0")
    return h.hexdigest()


def _write_atomic(path, text):
    """Write ``text`` to ``path`` through a temporary file in the same folder: a reader (another
    process) sees the old file, no file, or the whole new one."""
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb" if isinstance(text, bytes) else "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _cache_lock(digest):
    """An exclusive lock on one cache entry (nothing to hold when its folder cannot be
    made)."""
    folder = synth_cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        return exclusive(folder / f"{digest}.lock")
    except OSError:
        return contextlib.nullcontext()


def cached_yosys_outputs(inputs, names, folder, run, *, cache=None):
    """Run Yosys through ``run()`` in ``folder`` unless its output files ``names`` for these
    ``inputs`` (texts: the script and everything it reads) are in the synthesis cache; either
    way ``folder`` then holds them. Returns whether they came from the cache. Used by
    :func:`synthesize` and by :mod:`aes_fpga.flow.build` for its own Yosys script."""
    if not _cache_enabled(cache):
        run()
        return False
    digest = _yosys_digest("files", *inputs)
    cache_folder = synth_cache_dir()
    entry_path = cache_folder / f"{digest}.files.json"

    def load():
        try:
            entry = json.loads(entry_path.read_text())
            data = {n: (cache_folder / f"{digest}.{n}").read_bytes() for n in names}
        except (OSError, ValueError):
            return None
        if entry.get("format") != _CACHE_FORMAT or entry.get("files") != {
                n: hashlib.sha256(b).hexdigest() for n, b in data.items()}:
            return None
        return data

    data = load()
    if data is None:
        with _cache_lock(digest):
            data = load()
            if data is None:
                run()
                try:
                    files = {}
                    for n in names:
                        blob = (folder / n).read_bytes()
                        _write_atomic(cache_folder / f"{digest}.{n}", blob)
                        files[n] = hashlib.sha256(blob).hexdigest()
                    _write_atomic(entry_path, json.dumps({"format": _CACHE_FORMAT,
                                                          "files": files}))
                except OSError:
                    pass
                return False
    for n, blob in data.items():
        (folder / n).write_bytes(blob)
    return True


#: LUT costs of the 7-series mapping, as ``synth_xilinx`` gives them to ABC: 1-2 inputs cost 2,
#: 3-6 inputs 5, and (with wide LUTs) 7 and 8 inputs, made of LUT6 + MUXF7/MUXF8, 10 and 20.
_XC7_LUT_COSTS = "2:2,3,6:5"


def xc7_synth_commands(top, *, flatten=True, widelut=True, options=()):
    """The Yosys commands of every 7-series synthesis of this project: ``synth_xilinx`` with its
    LUT mapping done by ``abc`` (depth first) instead of ``abc9``.

    ``abc9`` maps for area wherever its timing model sees slack, and that model gives every
    block RAM read its slowest clock-to-out (2.45 ns, as without the ``DO_REG`` output register
    this library always uses), so every path that starts at a flip-flop looks 2 ns short of
    critical: ABC9 then builds it as a chain of 3 to 4 small LUTs where 1 or 2 would do (the
    pipelined key schedule's 4-input XORs came out 3 levels deep). ``abc`` maps each register-
    to-register cone for the fewest levels and recovers area only within the deepest cone's
    depth, which is what a design held to a logic-level budget needs; it costs some LUTs (the
    DRAB-LOCUS core: about 9 % more than ``abc9``). The other steps are ``synth_xilinx``'s own,
    run in its order (``-run :map_luts``, then its ``map_luts`` step with ``abc``, then
    ``-run finalize:``).
    """
    opts = " ".join(["-family xc7", *(["-flatten"] if flatten else []),
                     *([] if widelut else ["-nowidelut"]), *options, f"-top {top}"])
    return [
        f"synth_xilinx {opts} -run :map_luts",
        "opt_expr -mux_undef -noclkinv",
        f"abc -luts {_XC7_LUT_COSTS}{',10,20' if widelut else ''}",
        "clean",
        "xilinx_srl -fixed -minlen 3",
        "techmap -map +/xilinx/lut_map.v -map +/xilinx/cells_map.v -D LUT_WIDTH=6",
        "xilinx_dffopt",
        "opt_lut_ins -tech xilinx",
        f"synth_xilinx {opts} -run finalize:",
    ]


def synth_script(part, top, *, hierarchy=False, setup=()):
    """The Yosys script of :func:`synthesize`: read ``top.il``, run ``setup`` (Yosys commands),
    synthesize for ``part`` with ``top`` as the top module, and write ``stat.json``,
    ``netlist.v`` and ``netlist.json``. ``hierarchy``: keep the design's hierarchy (no
    ``-flatten``)."""
    from ..platform import is_lattice_ecp5, part_platform

    if is_lattice_ecp5(part_platform(part)):
        # The ECP5 script has nothing to turn off: synth_ecp5 inserts no I/O buffers unless
        # asked (-iopad), and nothing here instantiates a DSP block.
        synth_cmd = f"synth_ecp5 {'-noflatten ' if hierarchy else ''}-top {top}"
    else:
        # -nodsp: every DSP48E1 here is instantiated on purpose. Yosys's DSP packing pass would
        # otherwise rewrite those instances (seen: AREG=2 turned into AREG=1 while pulling a
        # fabric register in), changing their latency.
        synth_cmd = "\n".join(xc7_synth_commands(
            top, flatten=not hierarchy, options=("-noiopad", "-noclkbuf", "-nodsp")))
    return "\n".join([
        "read_rtlil top.il",
        *setup,
        synth_cmd,
        # Yosys's stdout after ABC can be lost in the sandbox; files are reliable.
        "tee -q -o stat.json stat -json",
        "write_verilog -noattr netlist.v",
        # The same netlist for programs (aes_fpga.flow.timing): cells, their parameters and
        # connections as bit numbers, and the design's wire names, without a Verilog parser.
        "write_json -selected -noscopeinfo netlist.json",
    ])


def synthesize(component, part=DEFAULT_PART, *, name="top", workdir=None, hierarchy=False,
               cache=None):
    """Elaborate ``component`` for ``part`` and run ``synth_xilinx`` on it.

    Parameters
    ----------
    component : wiring.Component
        The design; its signature gives the top-level ports.
    part : str
        A 7-series part such as ``xc7a35tcsg324-1``, or an ECP5 part (``LFE5U-85F-6BG381``).
    workdir : path, optional
        Where the RTLIL, netlist, statistics and log go; a new temporary folder if omitted.
    hierarchy : bool
        Keep the design's hierarchy (no ``-flatten``) and report each module's own cells in
        ``modules``. Optimisation then stops at module boundaries, so totals can differ a little
        from the flattened run's.
    cache : bool, optional
        Use the result cache (see the module docstring); by default it is used unless
        ``$AES_FPGA_NO_SYNTH_CACHE`` is set to something other than ``0``.
    """
    # Imported here: the CLI reads DEFAULT_PART at start-up, which must not load Amaranth.
    from amaranth.back import rtlil

    from ..platform import part_platform

    platform = part_platform(part)
    workdir = Path(workdir) if workdir is not None else Path(tempfile.mkdtemp(prefix="aes-synth-"))
    workdir.mkdir(parents=True, exist_ok=True)
    rtlil_text = rtlil.convert(component, name=name, platform=platform)
    (workdir / "top.il").write_text(rtlil_text)
    script = synth_script(part, name, hierarchy=hierarchy)
    (workdir / "synth.ys").write_text(script + "\n")
    # Processes synthesizing the same design at once (test workers) run Yosys once: the first
    # takes the entry's lock, the others wait and then find its result.
    from_cache = cached_yosys_outputs(
        (f"part={part}", script, rtlil_text), ("stat.json", "netlist.v", "netlist.json"), workdir,
        lambda: run_yosys(["-s", "synth.ys"], cwd=workdir), cache=cache)
    if from_cache:
        (workdir / "yosys.log").write_text(
            f"Yosys not run: statistics and netlist from the synthesis cache "
            f"({synth_cache_dir()})\n")
    stat = json.loads((workdir / "stat.json").read_text())
    modules = {mod.lstrip("\\"): count_cells(info.get("num_cells_by_type", {}))
               for mod, info in stat["modules"].items()}
    if hierarchy:
        total = sum_utilization(modules.values())
    else:
        total = count_cells(stat["design"].get("num_cells_by_type", {}))
        modules = {}
    return SynthResult(part=part, total=total, workdir=workdir, modules=modules,
                       from_cache=from_cache)
