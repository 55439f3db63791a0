"""The ECP5 implementations of the primitives: synth_ecp5 maps DualPortBRAM to DP16KD with the
output register inside the block (REGMODE "OUTREG") and no fabric flip-flop, XorLane to fabric
logic; the netlists, simulated with Yosys's ECP5 cell models (and the DP16KD model of
aes_fpga.flow.postsynth), give the portable model's outputs at the same cycles."""

# amaranth: UnusedElaboratable=no

import random
import re

import pytest
from primitive_refs import bram_case, run_bram_ref, run_xor_ref
from synth_batch import assert_batch_equals_single_runs, synthesize_batch
from test_primitives import bram_stimulus
from test_primitives_xilinx import (
    bram_name,
    check_netlist,
    inferred_case,
    needs_iverilog,
    xor_name,
)

from aes_fpga.primitives import XorLane
from aes_fpga.primitives.bram import ecp5_bram_plan

PART = "LFE5U-85F-6BG381"


def test_plan_picks_fewest_blocks():
    assert ecp5_bram_plan(8, 512) == (9, 1)
    assert ecp5_bram_plan(32, 512) == (18, 2)
    assert ecp5_bram_plan(128, 64) == (18, 8)
    assert ecp5_bram_plan(8, 4096) == (4, 2)
    assert ecp5_bram_plan(1, 16384) == (1, 1)
    with pytest.raises(ValueError, match="depth: 16385 words do not fit one column of DP16KD"):
        ecp5_bram_plan(1, 16385)


BRAM_CASES = [
    # width, depth, out_reg, writable, DP16KD count
    (8, 512, (True, True), (False, False), 1),
    (8, 512, (True, False), (False, False), 1),
    (32, 512, (True, True), (False, False), 2),
    (13, 100, (True, True), (True, True), 1),
    (18, 1024, (False, True), (True, False), 1),
    (4, 4096, (True, True), (True, False), 1),
    (3, 2000, (False, False), (False, True), 1),
]


INFERRED_CASES = [(8, 512), (18, 1024), (4, 4096), (2, 8192)]

XOR_CASES = [
    (48, dict(a_regs=1, c_regs=1, p_reg=True)),
    (32, dict(a_regs=2, c_regs=0, p_reg=True)),
    (48, dict(a_regs=0, c_regs=0, p_reg=False)),
]


def designs():
    """Every design of this file's mapping checks, by case name."""
    out = {}
    for width, depth, out_reg, writable, _ in BRAM_CASES:
        out[bram_name(width, depth, out_reg, writable)] = bram_case(
            width, depth, out_reg, writable)[2]
    for width, depth in INFERRED_CASES:
        out[f"inferred{width}x{depth}"] = inferred_case(width, depth)[2]
    for width, cfg in XOR_CASES:
        out[xor_name(width, cfg)] = XorLane(width, **cfg)
    return out


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    """``{case name: SynthResult}`` of every design of :func:`designs`, one Yosys run."""
    return synthesize_batch(designs(), tmp_path_factory.mktemp("ecp5-batch"), PART)


@pytest.mark.parametrize(("width", "depth", "out_reg", "writable", "blocks"), BRAM_CASES,
                         ids=lambda c: str(c))
def test_bram_maps_to_dp16kd(batch, width, depth, out_reg, writable, blocks):
    rng, init, dut = bram_case(width, depth, out_reg, writable)
    name = bram_name(width, depth, out_reg, writable)
    res = batch[name]
    # The output register is the block's own (OUTREG): no fabric flip-flop, no LUT.
    assert (res.total.ramb18, res.total.ff, res.total.lut) == (blocks, 0, 0), res.total.cells
    netlist = res.netlist.read_text()
    for x, reg in zip("AB", out_reg, strict=True):
        modes = set(re.findall(rf'\.REGMODE_{x}\("(\w+)"\)', netlist))
        assert modes == {"OUTREG" if reg else "NOREG"}
    stim = bram_stimulus(rng, depth, width, 150, writable)
    check_netlist(dut, stim, run_bram_ref(width, depth, init, out_reg, writable, stim), res,
                  name)


@needs_iverilog
@pytest.mark.parametrize(("width", "depth"), INFERRED_CASES)
def test_dp16kd_model_agrees_with_yosys_inference(batch, width, depth):
    """Checks the DP16KD simulation model (INITVAL layout, port widths, address wiring) against
    Yosys's own DP16KD mapping, independently of DualPortBRAM's ECP5 implementation."""
    rng, init, dut = inferred_case(width, depth)
    name = f"inferred{width}x{depth}"
    res = batch[name]
    # Yosys gives the read-only port b a block of its own (two blocks, same contents).
    assert res.total.ramb18 >= 1, res.total.cells
    stim = bram_stimulus(rng, depth, width, 200, (True, False), gaps=False)
    check_netlist(dut, stim, run_bram_ref(width, depth, init, (False, False), (True, False), stim),
                  res, name, skip_cycles=1)


@pytest.mark.parametrize(("width", "cfg"), XOR_CASES,
                         ids=lambda c: str(c) if isinstance(c, int) else
                         "a{a_regs}c{c_regs}p{p_reg:d}".format(**c))
def test_xor_lane_is_fabric_with_the_same_latency(batch, width, cfg):
    dut = XorLane(width, **cfg)
    name = xor_name(width, cfg)
    res = batch[name]
    assert res.total.dsp == 0 and res.total.ramb18 == 0
    # One flip-flop per bit and register stage: the same registers as the DSP48E1's.
    assert res.total.ff == width * (cfg["a_regs"] + cfg["c_regs"] + cfg["p_reg"]), \
        res.total.cells
    rng = random.Random(width + cfg["a_regs"])
    stim = [{"a": rng.getrandbits(width), "c": rng.getrandbits(width),
             "rst_p": int(rng.random() < 0.15)} for _ in range(60)]
    check_netlist(dut, stim, run_xor_ref(width, cfg["a_regs"], cfg["c_regs"], cfg["p_reg"],
                                         False, stim), res, name)


@pytest.mark.slow
def test_batch_cells_equal_flattened_runs(batch, tmp_path):
    """The batch measures what one flattened ``synthesize()`` per design measures: the same
    cells, case by case."""
    assert_batch_equals_single_runs(designs(), batch, tmp_path, PART)
