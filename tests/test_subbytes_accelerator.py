"""The SubBytes accelerator for a soft CPU (LP-SB), its gated register, and the toggle-count
power proxy of `aes-fpga power`."""

import json

import pytest
from amaranth.back import rtlil
from amaranth.sim import Simulator
from small_batch import small_batch
from synth_batch import assert_batch_equals_single_runs, synthesize_batch

from aes_fpga import model
from aes_fpga.cli import main
from aes_fpga.cores.subbytes_accelerator import SubBytesAccelerator, sub_word
from aes_fpga.flow.postsynth import find_iverilog, simulate_netlist, simulate_portable
from aes_fpga.platform import part_platform
from aes_fpga.primitives import GatedRegister
from aes_fpga.sim.power import subbytes_toggles, vcd_toggles


def test_sub_word_is_the_model_sbox_per_byte():
    assert sub_word(0x00_01_53_FF, 4) == (model.SBOX[0] << 24 | model.SBOX[1] << 16
                                          | model.SBOX[0x53] << 8 | model.SBOX[0xFF])


@pytest.mark.parametrize("lanes", [1, 4, 16])
def test_both_variants_give_the_same_checked_results(lanes):
    """Seeded CPU traffic with back-pressure on resp: every result is the S-box of its request
    (checked inside), and the two variants take and return words on the same cycles."""
    runs = [subbytes_toggles(low_power=lp, lanes=lanes, cycles=300, seed=7)
            for lp in (False, True)]
    assert runs[0]["words"] == runs[1]["words"] > 30
    assert runs[0]["checked"] == runs[1]["checked"] >= runs[0]["words"] - 1


def test_low_power_switches_less():
    base, low = (subbytes_toggles(low_power=lp, cycles=600, seed=3) for lp in (False, True))
    assert low["sbox_input_toggles"] < 0.7 * base["sbox_input_toggles"]
    assert low["sbox_output_toggles"] < 0.7 * base["sbox_output_toggles"]
    assert low["data_toggles"] < base["data_toggles"]
    # Gated: clocked only for the words taken; the baseline register on every cycle.
    assert low["register_clock_edges"] == 32 * low["words"]
    assert base["register_clock_edges"] == 32 * 600
    # The CPU's bus itself is the same stimulus for both.
    assert low["toggles"]["top.req__payload"] == base["toggles"]["top.req__payload"]


def test_idle_low_power_unit_is_silent():
    """No request at all: the isolated S-boxes and the gated register do not move."""
    low = subbytes_toggles(low_power=True, cycles=200, duty=0.0)
    assert low["words"] == 0
    assert low["sbox_input_toggles"] == low["sbox_output_toggles"] == 0
    assert low["register_clock_edges"] == 0
    base = subbytes_toggles(low_power=False, cycles=200, duty=0.0)
    assert base["sbox_input_toggles"] > 0


def test_lanes_out_of_range():
    with pytest.raises(ValueError, match="lanes: 17 is out of range"):
        SubBytesAccelerator(lanes=17)


def test_gated_register_portable_model():
    dut = GatedRegister(8, init=0x5A)
    seen = []

    async def bench(ctx):
        assert ctx.get(dut.q) == 0x5A
        for en, d in [(0, 1), (1, 2), (0, 3), (1, 4), (1, 5), (0, 6)]:
            ctx.set(dut.en, en)
            ctx.set(dut.d, d)
            await ctx.tick()
            seen.append(ctx.get(dut.q))

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert seen == [0x5A, 2, 2, 4, 5, 5]


def test_gated_register_on_7_series_is_a_bufgce():
    """On 7-series the clock goes through a BUFGCE enabled by en (or reset); elsewhere there is
    no clock primitive."""
    text = rtlil.convert(GatedRegister(8), platform=part_platform("xc7a35tcsg324-1"))
    assert "BUFGCE" in text
    assert "BUFGCE" not in rtlil.convert(GatedRegister(8))
    assert GatedRegister.gate_kind(part_platform("xc7a35tcsg324-1")) == "BUFGCE"
    assert GatedRegister.gate_kind(None) == "clock enable"
    # The accelerator's result register is one gated register (one global buffer).
    text = rtlil.convert(SubBytesAccelerator(low_power=True),
                         platform=part_platform("xc7a35tcsg324-1"))
    assert text.count("cell \\BUFGCE ") == 1


def test_vcd_toggles_counts_bits_once_per_code():
    vcd = "\n".join([
        "$scope module top $end", "$var wire 4 ! a $end", "$var wire 1 \" b $end",
        "$scope module sub $end", "$var wire 4 ! a_alias $end", "$upscope $end",
        "$upscope $end", "$enddefinitions $end", "#0", "b0000 !", "0\"", "#1", "b0011 !",
        "1\"", "#2", "b0101 !", "#3", "0\""])
    assert vcd_toggles(vcd) == {"top.a": 2 + 2, "top.b": 2}


def test_power_command(capsys):
    assert main(["power", "--cycles", "300", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["core"] == "subbytes-accelerator" and "not of the mapped netlist" in r["method"]
    assert r["runs"]["baseline"]["words"] == r["runs"]["low-power"]["words"]
    assert r["reduction_percent"]["sbox_input_toggles"] > 20
    assert r["reduction_percent"]["register_clock_edges"] > 50


@pytest.mark.parametrize("args, option", [
    (["--lanes", "17"], "--lanes"), (["--duty", "1.5"], "--duty"),
    (["--cycles", "0"], "--cycles"), (["--core", "drab-locus"], "--core"),
])
def test_power_command_refuses_bad_options(args, option, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["power", *args])
    assert exc.value.code == 2
    assert option in capsys.readouterr().err


def netlist_designs():
    """``{case name: design}``: both variants, as the netlist tests synthesize them."""
    return {_netlist_case(lp): SubBytesAccelerator(low_power=lp) for lp in (False, True)}


def _netlist_case(low_power):
    return "subbytes_low_power" if low_power else "subbytes"


@pytest.fixture(scope="module")
def netlists(tmp_path_factory):
    """Both variants synthesized in one Yosys run (:mod:`synth_batch`)."""
    return synthesize_batch(netlist_designs(), tmp_path_factory.mktemp("subbytes-batch"))


@pytest.fixture(scope="module")
def low_power_netlist(tmp_path_factory):
    """The low-power variant, synthesized in one Yosys run with test_stage.py's design."""
    return {_netlist_case(True): small_batch(tmp_path_factory)["subbytes_low_power"]}


@pytest.mark.skipif(find_iverilog() is None, reason="Icarus Verilog is not installed")
@pytest.mark.parametrize("low_power", [
    # The baseline's S-boxes are the low-power variant's (its [True] case, in the default run,
    # checks them in a netlist); only its plain result register differs.
    pytest.param(False, marks=pytest.mark.slow), True])
def test_netlist_matches_portable(low_power, request):
    """The synth_xilinx netlist (LUT6/MUXF S-boxes; the result register behind a BUFGCE in
    the low-power variant), simulated in Icarus Verilog with Yosys's cell models, gives the
    portable model's outputs cycle for cycle under random traffic and back-pressure."""
    import random

    netlists = request.getfixturevalue("low_power_netlist" if low_power else "netlists")

    rng = random.Random(5)
    stim = [{"req__valid": int(rng.random() < 0.4), "req__payload": rng.getrandbits(32),
             "resp__ready": int(rng.random() < 0.7)} for _ in range(120)]
    dut = SubBytesAccelerator(low_power=low_power)
    ref = simulate_portable(dut, stim)
    name = _netlist_case(low_power)
    got = simulate_netlist(dut, stim, synth=netlists[name], name=name, undefined="none")
    # resp.payload is only meaningful while resp.valid (the baseline register holds anything).
    for cycle, (a, b) in enumerate(zip(ref, got, strict=True)):
        assert a["resp__valid"] == b["resp__valid"] and a["req__ready"] == b["req__ready"], cycle
        if a["resp__valid"]:
            assert a["resp__payload"] == b["resp__payload"], cycle


@pytest.mark.slow
def test_batch_cells_equal_flattened_runs(netlists, tmp_path):
    """The batched run measures what one flattened ``synthesize()`` per variant measures."""
    assert_batch_equals_single_runs(netlist_designs(), netlists, tmp_path)
