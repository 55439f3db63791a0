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

import aes_fpga.flow.build
from aes_fpga.cli import main
from aes_fpga.flow.build import (
    DESIGN_NEEDS,
    DESIGNS,
    build,
    find_tool,
    parse_nextpnr_fmax,
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
