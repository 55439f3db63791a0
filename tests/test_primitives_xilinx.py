"""The Xilinx implementations of the primitives: Yosys synth_xilinx maps them to exactly the
intended cells, and the synthesized netlists, simulated with the Xilinx cell models, give the
portable model's outputs at the same cycles.

Every design of this file is synthesized in one Yosys run (:mod:`synth_batch`), made once per
test process by the ``batch`` fixture; the slow ``test_batch_cells_equal_flattened_runs``
checks that run against one ``synthesize()`` per design."""

# amaranth: UnusedElaboratable=no

import random

import pytest
from primitive_refs import bram_case, inferred_bram, run_bram_ref, run_xor_ref
from synth_batch import assert_batch_equals_single_runs, synthesize_batch
from test_primitives import XorChain, bram_stimulus, pcin_select_stimulus

from aes_fpga.flow.postsynth import find_iverilog, simulate_netlist, simulate_portable
from aes_fpga.model import INV_SBOX, SBOX
from aes_fpga.primitives import DualPortBRAM, LutMux, LutRom, XorLane

needs_iverilog = pytest.mark.skipif(find_iverilog() is None,
                                    reason="Icarus Verilog (iverilog, vvp) is not installed")


def check_netlist(dut, stim, expected, synth, name="top", *, skip_cycles=0):
    """Netlist outputs equal the portable model's and the reference, cycle for cycle (from
    ``skip_cycles`` on, for netlists whose power-up output is undefined)."""
    if find_iverilog() is None:
        pytest.skip("Icarus Verilog (iverilog, vvp) is not installed: counts checked only")
    portable = simulate_portable(dut, stim)
    assert portable == expected
    netlist = simulate_netlist(dut, stim, synth=synth, name=name,
                               undefined="none" if skip_cycles else "raise")
    assert len(netlist) == len(portable)
    for cycle, (got, want) in enumerate(zip(netlist, portable, strict=True)):
        if cycle >= skip_cycles:
            assert got == want, f"cycle {cycle}: netlist {got} != portable {want}"


XOR_CASES = [
    (48, dict(a_regs=1, c_regs=1, p_reg=True)),
    (48, dict(a_regs=2, c_regs=1, p_reg=True)),
    (48, dict(a_regs=2, c_regs=0, p_reg=True)),
    (32, dict(a_regs=0, c_regs=0, p_reg=True)),
    (48, dict(a_regs=1, c_regs=0, p_reg=False)),
    (48, dict(a_regs=0, c_regs=0, p_reg=False)),
]

BRAM_CASES = [
    # width, depth, out_reg, writable, expected (ramb18, ramb36)
    (8, 512, (True, True), (False, False), (1, 0)),
    (8, 512, (True, False), (False, False), (1, 0)),
    (32, 512, (True, True), (False, False), (0, 1)),
    (13, 100, (True, True), (True, True), (1, 0)),
    (18, 1024, (False, True), (True, False), (1, 0)),
    (128, 64, (True, True), (True, False), (0, 4)),
]

INFERRED_CASES = [(8, 512), (18, 1024), (32, 512)]

LUT_ROM_ENTRIES = [256, 512]


def xor_name(width, cfg):
    return "xor{}_a{a_regs}c{c_regs}p{p_reg:d}".format(width, **cfg)


def bram_name(width, depth, out_reg, writable):
    flags = "".join(str(int(b)) for b in (*out_reg, *writable))
    return f"bram{width}x{depth}_r{flags[:2]}w{flags[2:]}"


def inferred_case(width, depth):
    """Yosys's own block RAM inference of a write-on-a, read-on-b memory, its contents and the
    test's random source."""
    rng = random.Random(width)
    init = [rng.getrandbits(width) for _ in range(depth)]
    return rng, init, inferred_bram(width=width, depth=depth, init=init, out_reg=False,
                                    writable=(True, False))


def lutram():
    """The edge-key memory shape: 16 x 128, port a 1 cycle, port b 2 cycles and writable."""
    return DualPortBRAM(width=128, depth=16, out_reg=(False, True), writable=(False, True),
                        style="distributed")


LUT_MUX_COUNTS = (8, 32)


def lut_rom_table(entries):
    return (list(SBOX) + list(INV_SBOX))[:entries]


def designs():
    """``{case name: design}``: every design this file synthesizes, each made afresh."""
    out = {xor_name(width, cfg): XorLane(width, **cfg) for width, cfg in XOR_CASES}
    out["xor_chain"] = XorChain()
    out["xor_pcin_select"] = XorLane(48, a_regs=2, c_regs=1, pcin_select=True)
    for width, depth, out_reg, writable, _ in BRAM_CASES:
        out[bram_name(width, depth, out_reg, writable)] = bram_case(
            width, depth, out_reg, writable)[2]
    for width, depth in INFERRED_CASES:
        out[f"inferred{width}x{depth}"] = inferred_case(width, depth)[2]
    out["lutram"] = lutram()
    for entries in LUT_ROM_ENTRIES:
        out[f"lut_rom{entries}"] = LutRom(lut_rom_table(entries), 8)
    for count in LUT_MUX_COUNTS:
        out[f"lut_mux{count}"] = LutMux(count, 8)
    return out


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    """``{case name: SynthResult}`` of every design of :func:`designs`, one Yosys run."""
    return synthesize_batch(designs(), tmp_path_factory.mktemp("primitives-batch"))


@pytest.mark.parametrize(("width", "cfg"), XOR_CASES,
                         ids=lambda c: str(c) if isinstance(c, int) else
                         "a{a_regs}c{c_regs}p{p_reg:d}".format(**c))
def test_xor_lane_is_one_dsp(batch, width, cfg):
    dut = XorLane(width, **cfg)
    name = xor_name(width, cfg)
    res = batch[name]
    assert (res.total.dsp, res.total.lut, res.total.ff) == (1, 0, 0), res.total.cells
    rng = random.Random(width + cfg["a_regs"] * 3 + cfg["c_regs"])
    stim = [{"a": rng.getrandbits(width), "c": rng.getrandbits(width),
             "rst_p": int(rng.random() < 0.15)} for _ in range(80)]
    check_netlist(dut, stim, run_xor_ref(width, cfg["a_regs"], cfg["c_regs"], cfg["p_reg"],
                                         False, stim), res, name)


def test_xor_cascade_chain(batch):
    """The MixColumns tree: three cascaded DSP48E1 and 48 fabric flip-flops for the third delay."""
    dut = XorChain()
    res = batch["xor_chain"]
    assert (res.total.dsp, res.total.ff, res.total.lut) == (3, 48, 0), res.total.cells
    rng = random.Random(9)
    stim = [{f"d{i}": rng.getrandbits(48) for i in range(4)} for _ in range(60)]
    expected = simulate_portable(dut, stim)
    for k in range(len(stim) - 4):
        assert expected[k + 4]["p"] == (stim[k]["d0"] ^ stim[k]["d1"] ^ stim[k]["d2"]
                                        ^ stim[k]["d3"])
    check_netlist(dut, stim, expected, res, "xor_chain")


def test_xor_lane_pcin_select_is_one_dsp(batch):
    """The select is the DSP48E1's unregistered OPMODE: one DSP48E1 and one LUT, the inverter
    giving the OPMODE bits that fall when the select rises."""
    dut = XorLane(48, a_regs=2, c_regs=1, pcin_select=True)
    res = batch["xor_pcin_select"]
    assert (res.total.dsp, res.total.lut, res.total.ff) == (1, 1, 0), res.total.cells
    stim = pcin_select_stimulus(random.Random(17), 48, 100)
    check_netlist(dut, stim, run_xor_ref(48, 2, 1, True, False, stim, pcin_select=True), res,
                  "xor_pcin_select")


@pytest.mark.parametrize(("width", "depth", "out_reg", "writable", "prims"), BRAM_CASES,
                         ids=lambda c: str(c))
def test_bram_maps_to_ramb(batch, width, depth, out_reg, writable, prims):
    rng, init, dut = bram_case(width, depth, out_reg, writable)
    name = bram_name(width, depth, out_reg, writable)
    res = batch[name]
    # The output register is the primitive's own DOA_REG/DOB_REG: no fabric flip-flop.
    assert (res.total.ramb18, res.total.ramb36, res.total.ff, res.total.lut) == (*prims, 0, 0), \
        res.total.cells
    stim = bram_stimulus(rng, depth, width, 150, writable)
    check_netlist(dut, stim, run_bram_ref(width, depth, init, out_reg, writable, stim), res,
                  name)


@needs_iverilog
@pytest.mark.parametrize(("width", "depth"), INFERRED_CASES)
def test_bram_model_agrees_with_yosys_inference(batch, width, depth):
    """Checks the behavioural RAMB model against Yosys's own RAMB mapping (its INIT layout,
    port widths and address wiring), independently of DualPortBRAM's Xilinx implementation."""
    rng, init, dut = inferred_case(width, depth)
    name = f"inferred{width}x{depth}"
    res = batch[name]
    assert res.total.ramb18 + res.total.ramb36 == 1, res.total.cells
    stim = bram_stimulus(rng, depth, width, 200, (True, False), gaps=False)
    # Yosys leaves the inferred RAMB's power-up output (INIT_A/INIT_B) undefined.
    check_netlist(dut, stim, run_bram_ref(width, depth, init, (False, False), (True, False), stim),
                  res, name, skip_cycles=1)


def test_distributed_style_maps_to_lutram(batch):
    """The edge-key memory shape: 16 x 128, port a 1 cycle, port b 2 cycles and writable."""
    dut = lutram()
    res = batch["lutram"]
    assert res.total.ramb18 + res.total.ramb36 == 0
    assert res.total.lutram > 0
    assert res.total.ff <= 12, res.total.cells   # address registers only
    rng = random.Random(12)
    stim = [{"addr_a": rng.randrange(16), "addr_b": rng.randrange(16)} for _ in range(60)]
    check_netlist(dut, stim, run_bram_ref(128, 16, [0] * 16, (False, True), (False, True), stim),
                  res, "lutram")


@pytest.mark.parametrize("entries", LUT_ROM_ENTRIES)
def test_lut_rom_is_lut6_and_wide_muxes(batch, entries):
    """A 8-bit ROM: per output bit 4 LUT6, 2 MUXF7, 1 MUXF8 (a 9-bit one twice that and a LUT3);
    the netlist reads every entry as the portable model does."""
    table = lut_rom_table(entries)
    dut = LutRom(table, 8)
    name = f"lut_rom{entries}"
    res = batch[name]
    per_bit = {256: {"LUT6": 4, "MUXF7": 2, "MUXF8": 1},
               512: {"LUT6": 8, "MUXF7": 4, "MUXF8": 2, "LUT3": 1}}[entries]
    assert res.total.cells == {c: 8 * n for c, n in per_bit.items()}
    stim = [{"addr": a} for a in range(entries)]
    check_netlist(dut, stim, [{"data": v} for v in table], res, name)


@pytest.mark.parametrize("count", LUT_MUX_COUNTS)
def test_lut_mux_is_lut6_and_wide_muxes(batch, count):
    """A multiplexer of 8-bit inputs: per output bit a LUT6 per four inputs, then MUXF7,
    MUXF8 and (32 inputs) a LUT3; the netlist selects every input as the portable model does."""
    rng = random.Random(count)
    dut = LutMux(count, 8)
    name = f"lut_mux{count}"
    res = batch[name]
    per_bit = {8: {"LUT6": 2, "MUXF7": 1},
               32: {"LUT6": 8, "MUXF7": 4, "MUXF8": 2, "LUT3": 1}}[count]
    assert res.total.cells == {c: 8 * n for c, n in per_bit.items()}
    stim = []
    for _ in range(3):
        inputs = [rng.getrandbits(8) for _ in range(count)]
        packed = sum(v << (8 * n) for n, v in enumerate(inputs))
        stim += [{"i": packed, "sel": n} for n in range(count)]
    expected = [{"o": (r["i"] >> (8 * r["sel"])) & 0xFF} for r in stim]
    check_netlist(dut, stim, expected, res, name)


@pytest.mark.slow
def test_batch_cells_equal_flattened_runs(batch, tmp_path):
    """The batch measures what one flattened ``synthesize()`` per design measures: the same
    cells, case by case."""
    assert_batch_equals_single_runs(designs(), batch, tmp_path)
