# amaranth: UnusedElaboratable=no
"""Portable primitives in Amaranth's simulator against their Python reference behaviour."""

import random

import pytest
from amaranth.hdl import MemoryData, Module
from amaranth.sim import Simulator
from primitive_refs import run_bram_ref, run_xor_ref

from aes_fpga.flow.postsynth import simulate_portable
from aes_fpga.model import INV_SBOX, SBOX
from aes_fpga.primitives import DualPortBRAM, LutMux, LutRom, XorLane
from aes_fpga.primitives.bram import xilinx_bram_plan


def bram_stimulus(rng, depth, width, n, writable, gaps=True):
    stim = []
    for _ in range(n):
        vec = {}
        for i, x in enumerate("ab"):
            vec[f"addr_{x}"] = rng.randrange(depth)
            vec[f"en_{x}"] = int(rng.random() < 0.8) if gaps else 1
            if writable[i]:
                vec[f"we_{x}"] = int(rng.random() < 0.3)
                vec[f"wdata_{x}"] = rng.getrandbits(width)
        # Both ports writing one address in one cycle is undefined: keep port b off port a's word.
        if writable[0] and writable[1] and vec["addr_a"] == vec["addr_b"]:
            vec["we_b"] = 0
        stim.append(vec)
    return stim


@pytest.mark.parametrize("out_reg", [(False, False), (True, True), (True, False)])
@pytest.mark.parametrize("writable", [(False, False), (True, False), (True, True)])
def test_bram_matches_reference(out_reg, writable):
    rng = random.Random(hash((out_reg, writable)) & 0xFFFF)
    width, depth = 13, 100
    init = [rng.getrandbits(width) for _ in range(depth)]
    stim = bram_stimulus(rng, depth, width, 300, writable)
    dut = DualPortBRAM(width=width, depth=depth, init=init, out_reg=out_reg, writable=writable)
    assert simulate_portable(dut, stim) == run_bram_ref(width, depth, init, out_reg, writable,
                                                        stim)


@pytest.mark.parametrize("out_reg", [False, True])
def test_sbox_rom_latency(out_reg):
    """The S-box ROM of the ciphers: 512 x 8, mode bit as the high address bit."""
    dut = DualPortBRAM(width=8, depth=512, init=list(SBOX) + list(INV_SBOX), out_reg=out_reg)
    stim = [{"addr_a": a, "addr_b": 256 + a} for a in range(256)] + [{}] * 3
    out = simulate_portable(dut, stim)
    lat = dut.latency("a")
    assert lat == 1 + out_reg
    for k in range(256):
        assert out[k + lat]["rdata_a"] == SBOX[k]
        assert out[k + lat]["rdata_b"] == INV_SBOX[k]


def test_bram_enable_holds_output():
    dut = DualPortBRAM(width=8, depth=4, init=[1, 2, 3, 4], out_reg=True)
    stim = [{"addr_a": 2}, {"addr_a": 3}, {"addr_a": 0, "en_a": 0}, {"addr_a": 0, "en_a": 0},
            {"addr_a": 0, "en_a": 1}, {}, {}]
    out = [o["rdata_a"] for o in simulate_portable(dut, stim)]
    assert out == [0, 0, 3, 3, 3, 4, 1]


def test_bram_parameter_errors():
    with pytest.raises(ValueError, match="width"):
        DualPortBRAM(width=0, depth=4)
    with pytest.raises(ValueError, match="depth"):
        DualPortBRAM(width=8, depth=0)
    with pytest.raises(ValueError, match="init: word 1"):
        DualPortBRAM(width=4, depth=4, init=[0, 16])
    with pytest.raises(ValueError, match="init: 5 words"):
        DualPortBRAM(width=4, depth=4, init=[0] * 5)


def test_bram_keeps_its_words_in_the_given_memory_data():
    """With ``data`` the portable build's words are that MemoryData's (its contents the
    initial ones), so that a simulation reads what a write left there."""
    data = MemoryData(shape=8, depth=4, init=[7, 0, 0, 9])
    dut = DualPortBRAM(width=8, depth=4, data=data, out_reg=(False, True),
                       writable=(True, False))
    assert dut.init == [7, 0, 0, 9]
    seen = []

    async def bench(ctx):
        ctx.set(dut.addr_a, 1)
        ctx.set(dut.wdata_a, 0x5A)
        ctx.set(dut.we_a, 1)
        await ctx.tick()
        ctx.set(dut.we_a, 0)
        seen.append([ctx.get(data[n]) for n in range(4)])
        ctx.set(dut.addr_b, 3)
        await ctx.tick().repeat(2)
        seen.append(ctx.get(dut.rdata_b))

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert seen == [[7, 0x5A, 0, 9], 9]
    with pytest.raises(ValueError, match="init: not with data"):
        DualPortBRAM(width=8, depth=4, data=data, init=[1])
    with pytest.raises(ValueError, match="data: 4 words"):
        DualPortBRAM(width=16, depth=4, data=data)


@pytest.mark.parametrize(("width", "depth", "plan"), [
    (8, 512, ("RAMB18E1", 9, 1)),
    (8, 256, ("RAMB18E1", 9, 1)),
    (32, 512, ("RAMB36E1", 36, 1)),
    (16, 1024, ("RAMB18E1", 18, 1)),
    (128, 512, ("RAMB36E1", 36, 4)),
    (8, 4096, ("RAMB36E1", 9, 1)),
    (1, 16384, ("RAMB18E1", 1, 1)),
])
def test_bram_plan(width, depth, plan):
    assert xilinx_bram_plan(width, depth) == plan


def test_bram_plan_too_deep():
    with pytest.raises(ValueError, match="depth: 40000"):
        xilinx_bram_plan(1, 40000)


XOR_CONFIGS = [
    dict(a_regs=a, c_regs=c, p_reg=p)
    for a in (0, 1, 2) for c in (0, 1) for p in (False, True)
]


@pytest.mark.parametrize("cfg", XOR_CONFIGS,
                         ids=lambda c: "a{a_regs}c{c_regs}p{p_reg:d}".format(**c))
def test_xor_lane_matches_reference(cfg):
    rng = random.Random(7)
    width = 48
    stim = [{"a": rng.getrandbits(48), "c": rng.getrandbits(48),
             "rst_p": int(rng.random() < 0.15)} for _ in range(120)]
    dut = XorLane(width, **cfg)
    assert dut.latency_a == cfg["a_regs"] + cfg["p_reg"]
    assert simulate_portable(dut, stim) == run_xor_ref(width, cfg["a_regs"], cfg["c_regs"],
                                                       cfg["p_reg"], False, stim)


def test_xor_lane_narrow_and_cascade_in():
    rng = random.Random(11)
    stim = [{"a": rng.getrandbits(32), "pcin": rng.getrandbits(48),
             "rst_p": int(rng.random() < 0.1)} for _ in range(100)]
    dut = XorLane(32, a_regs=2, cascade_in=True)
    assert simulate_portable(dut, stim) == run_xor_ref(32, 2, 0, True, True, stim)


def pcin_select_stimulus(rng, width, cycles):
    """Random operands, with ``sel_pcin`` high about a third of the time."""
    return [{"a": rng.getrandbits(width), "c": rng.getrandbits(width),
             "pcin": rng.getrandbits(48), "sel_pcin": int(rng.random() < 0.35),
             "rst_p": int(rng.random() < 0.1)} for _ in range(cycles)]


@pytest.mark.parametrize("cfg", [dict(a_regs=2, c_regs=1), dict(a_regs=0, c_regs=0),
                                 dict(a_regs=1, c_regs=0, p_reg=False)],
                         ids=lambda c: "-".join(f"{k}{v:d}" for k, v in c.items()))
def test_xor_lane_pcin_select_matches_reference(cfg):
    """``sel_pcin`` chooses ``pcin`` or ``a ^ c`` in the cycle it is high; the registers on a
    and c advance regardless."""
    rng = random.Random(13)
    stim = pcin_select_stimulus(rng, 40, 150)
    dut = XorLane(40, pcin_select=True, **cfg)
    got = simulate_portable(dut, stim)
    assert got == run_xor_ref(40, cfg["a_regs"], cfg["c_regs"], cfg.get("p_reg", True), False,
                              stim, pcin_select=True)
    # The reference follows the select: a lane that ignored it would differ.
    assert got != run_xor_ref(40, cfg["a_regs"], cfg["c_regs"], cfg.get("p_reg", True), False,
                              stim)


class XorChain(XorLane):
    """Three lanes as a MixColumns cascade: d0^d1 (regs 1/1), ^d2 (regs 2, pcin), ^d3 (regs 2 +
    one outside register, pcin); all four operands arrive in the same cycle."""

    def __init__(self):
        from amaranth.lib import wiring
        from amaranth.lib.wiring import In, Out
        wiring.Component.__init__(self, {"d0": In(48), "d1": In(48), "d2": In(48), "d3": In(48),
                                         "p": Out(48)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.l0 = l0 = XorLane(48, a_regs=1, c_regs=1)
        m.submodules.l1 = l1 = XorLane(48, a_regs=2, cascade_in=True)
        m.submodules.l2 = l2 = XorLane(48, a_regs=2, cascade_in=True)
        from amaranth.hdl import Signal
        d3_r = Signal(48)
        m.d.sync += d3_r.eq(self.d3)
        m.d.comb += [l0.a.eq(self.d0), l0.c.eq(self.d1),
                     l1.a.eq(self.d2), l1.pcin.eq(l0.pcout),
                     l2.a.eq(d3_r), l2.pcin.eq(l1.pcout),
                     self.p.eq(l2.p)]
        return m


def test_xor_cascade_latency_four():
    rng = random.Random(5)
    stim = [{f"d{i}": rng.getrandbits(48) for i in range(4)} for _ in range(40)]
    out = simulate_portable(XorChain(), stim)
    for k in range(len(stim) - 4):
        v = stim[k]
        assert out[k + 4]["p"] == v["d0"] ^ v["d1"] ^ v["d2"] ^ v["d3"]


def test_xor_lane_parameter_errors():
    with pytest.raises(ValueError, match="width: 49"):
        XorLane(49)
    with pytest.raises(ValueError, match="a_regs: 3"):
        XorLane(48, a_regs=3)
    with pytest.raises(ValueError, match="c_regs: 2"):
        XorLane(48, c_regs=2)
    with pytest.raises(ValueError, match="pcin_select"):
        XorLane(48, cascade_in=True, pcin_select=True)


def test_simulator_silences_nothing():
    """The harness reads real values: a lane with no registers is combinational."""
    dut = XorLane(8, a_regs=0, c_regs=0, p_reg=False)
    sim = Simulator(dut)
    seen = []

    async def tb(ctx):
        ctx.set(dut.a, 0x0F)
        ctx.set(dut.c, 0xF1)
        seen.append(ctx.get(dut.p))

    sim.add_testbench(tb)
    sim.run()
    assert seen == [0xFE]


@pytest.mark.parametrize("out_reg", [(False, True), (True, True)])
def test_distributed_style_same_latency_as_block(out_reg):
    """Without same-word write/read overlap the distributed style reads exactly like block RAM."""
    rng = random.Random(4)
    width, depth = 20, 16
    init = [rng.getrandbits(width) for _ in range(depth)]
    stim = ([{"addr_a": 1, "addr_b": 2}] * 3
            + bram_stimulus(rng, depth, width, 200, (False, False)))
    dut = DualPortBRAM(width=width, depth=depth, init=init, out_reg=out_reg, style="distributed")
    got = simulate_portable(dut, stim)
    want = run_bram_ref(width, depth, init, out_reg, (False, False), stim)
    # Power-up output differs by design (word 0 instead of zero) until the first reads land.
    assert got[2:] == want[2:]


def test_distributed_style_write_then_read():
    dut = DualPortBRAM(width=8, depth=4, out_reg=(False, True), writable=(False, True),
                       style="distributed")
    stim = [{"addr_b": 2, "wdata_b": 0x5A, "we_b": 1}, {"addr_b": 3, "we_b": 0},
            {"addr_a": 2}, {"addr_b": 2}, {}, {}]
    out = simulate_portable(dut, stim)
    assert out[3]["rdata_a"] == 0x5A          # port a: one cycle
    assert out[5]["rdata_b"] == 0x5A          # port b: two cycles


def test_bram_style_error():
    with pytest.raises(ValueError, match="style: 'lut'"):
        DualPortBRAM(width=8, depth=4, style="lut")


def test_lut_mux_selects_each_input():
    rng = random.Random(5)
    for count in (4, 8, 16, 32):
        inputs = [rng.getrandbits(8) for _ in range(count)]
        packed = sum(v << (8 * n) for n, v in enumerate(inputs))
        stim = [{"i": packed, "sel": n} for n in range(count)]
        assert [r["o"] for r in simulate_portable(LutMux(count, 8), stim)] == inputs
    with pytest.raises(ValueError, match="count"):
        LutMux(24, 8)
    with pytest.raises(ValueError, match="width"):
        LutMux(16, 0)


def test_lut_rom_reads_its_table():
    table = list(SBOX) + list(INV_SBOX)
    stim = [{"addr": a} for a in range(512)]
    assert [r["data"] for r in simulate_portable(LutRom(table, 8), stim)] == table
    with pytest.raises(ValueError, match="table"):
        LutRom(list(range(100)), 8)
    with pytest.raises(ValueError, match="width"):
        LutRom(list(range(256)), 4)
