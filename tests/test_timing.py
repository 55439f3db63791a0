"""aes_fpga.flow.timing: logic levels counted on synthesized netlists whose depth is known by
construction, and on hand-made netlists for the counting rules themselves."""

import functools
import json
import operator

import pytest
from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from synth_batch import assert_batch_depths_equal_single_runs, depth_reports

from aes_fpga.flow.timing import analyse_netlist


class Depths(wiring.Component):
    """Register-to-register cones of known depth, side by side (one synthesis for all). Every
    source register loads from the input port, so nothing is constant."""

    feed: In(64)
    out: Out(1)

    def elaborate(self, platform):
        m = Module()
        regs = []

        def load(width):
            # A register bank whose every bit depends on the input port and on itself.
            reg = Signal(width, name=f"src{len(regs)}")
            regs.append(reg)
            m.d.sync += reg.eq(Cat(self.feed, self.feed)[:width] ^ reg.rotate_left(1))
            return reg

        # One LUT: a 2-input AND.
        a2 = load(2)
        and2 = Signal(name="and2_q")
        m.d.sync += and2.eq(a2[0] & a2[1])

        # 32-bit adder: 8 CARRY4 in a chain.
        a, b = load(32), load(32)
        total = Signal(32, name="sum_q")
        m.d.sync += total.eq(a + b)

        # Block RAM read address from registers through one LUT (an XOR).
        ra, rb = load(9), load(9)
        mem = m.submodules.bram = Memory(shape=8, depth=512, init=[])
        wr, rd = mem.write_port(), mem.read_port()
        m.d.comb += [wr.addr.eq(self.feed[:9]), wr.data.eq(self.feed[9:17]),
                     wr.en.eq(self.feed[17]), rd.addr.eq(ra ^ rb)]
        bram_q = Signal(8, name="bram_q")
        m.d.sync += bram_q.eq(rd.data)

        # LUT RAM (asynchronous read) addressed straight from a register: the read is 1 level.
        la = load(4)
        lmem = m.submodules.lutram = Memory(shape=4, depth=16, init=[])
        lwr, lrd = lmem.write_port(), lmem.read_port(domain="comb")
        m.d.comb += [lwr.addr.eq(self.feed[20:24]), lwr.data.eq(self.feed[24:28]),
                     lwr.en.eq(self.feed[28]), lrd.addr.eq(la)]
        lut_q = Signal(4, name="lutram_q")
        m.d.sync += lut_q.eq(lrd.data)

        # Everything visible at the output, so nothing is optimised away.
        m.d.comb += self.out.eq(functools.reduce(operator.xor, [
            and2, total.xor(), bram_q.xor(), lut_q.xor()]))
        return m


class WideXor(wiring.Component):
    """A register holding the XOR of ``width`` register bits. With LUT6, and LUT6+MUXF7/8 as
    Yosys maps its LUT7/LUT8 cells, one level sees at most 8 inputs, so ``width`` above
    ``8 ** (n - 1)`` needs at least ``n`` levels, and ``width`` up to ``6 ** n`` fits in ``n``
    levels of a LUT6 tree. ABC maps the critical path for depth (other cones it maps for area,
    which can make them deeper), so the XOR is alone in its design."""

    feed: In(64)
    out: Out(1)

    def __init__(self, width):
        self.width = width
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        src = Signal(self.width, name="src")
        m.d.sync += src.eq(Cat(*[self.feed] * (self.width // 64 + 1))[:self.width]
                           ^ src.rotate_left(1))
        xor_q = Signal(name="xor_q")
        m.d.sync += xor_q.eq(functools.reduce(operator.xor, src))
        # Not the register itself: a net with two names is shown by the shorter.
        m.d.comb += self.out.eq(xor_q & self.feed[0])
        return m


class DepthTop(wiring.Component):
    """:class:`Depths` one level down, so its names carry the hierarchy (``depths.sum_q``)."""

    feed: In(64)
    out: Out(1)

    def __init__(self, inner):
        self.inner = inner
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        depths = m.submodules.depths = self.inner
        m.d.comb += [depths.feed.eq(self.feed), self.out.eq(depths.out)]
        return m


def designs():
    """The designs of the depth tests, each under :class:`DepthTop`."""
    return {"depths": DepthTop(Depths()), "xor12": DepthTop(WideXor(12)),
            "xor65": DepthTop(WideXor(65))}


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """Each design's depth report, from one Yosys run (tests/synth_batch.py: each design is a
    module of its own there, flattened inside and mapped by ABC alone, as its own run would
    be; ``test_batch_depths_equal_single_runs`` holds that)."""
    return depth_reports(designs(), tmp_path_factory.mktemp("timing-batch"))


@pytest.fixture(scope="module")
def depths(reports):
    return reports["depths"]


def path_to(report, name, kind="FF"):
    """The worst path to the end signal ``name``."""
    for p in report.paths:
        if p.end.kind == kind and p.end.name.split("[")[0] == name:
            return p
    raise AssertionError(f"no path to {name}: {[str(p.end) for p in report.paths]}")


def test_one_lut_between_registers(depths):
    p = path_to(depths, "depths.and2_q")
    assert (p.levels, p.carry4, p.muxf) == (1, 0, 0)
    assert p.start.name in ("depths.src0[0]", "depths.src0[1]") and p.start.pin == "Q"
    assert p.end.pin == "D" and [t for t, _ in p.cells] == ["LUT2"]


def test_adder_crosses_eight_carry4(depths):
    p = path_to(depths, "depths.sum_q")
    # The operands' XOR (S inputs) is the only LUT; the carry ripples through 8 CARRY4.
    assert (p.levels, p.carry4) == (1, 8)
    assert p.start.name.split("[")[0] in ("depths.src1", "depths.src2")
    assert [c["length"] for c in depths.carry_chains] == [8]
    assert depths.carry_chains[0]["source"].startswith("test_timing.py:")


def test_block_ram_address_through_one_lut(depths):
    p = path_to(depths, "depths.bram.0.0", kind="BRAM")
    assert p.levels == 1 and p.end.pin.startswith("ADDR")
    assert p.start.name.split("[")[0] in ("depths.src3", "depths.src4")
    # The block RAM's output is a start point: straight into bram_q, 0 levels.
    q = path_to(depths, "depths.bram_q")
    assert q.levels == 0 and q.start.kind == "BRAM"


def test_lut_ram_read_counts_one_level(depths):
    p = path_to(depths, "depths.lutram_q")
    assert (p.levels, p.carry4) == (1, 0)
    assert [t for t, _ in p.cells] == ["RAM32M"]
    # The read address register (Yosys keeps the name of the read port's address).
    assert p.start.kind == "FF"


def test_histogram_counts_every_end_point(depths):
    assert depths.worst_levels == max(p.levels for p in depths.paths)
    assert sum(n for h in depths.histogram.values() for n in h.values()) == depths.end_points
    # The LUT RAM's write pins (address, data, enable) come straight from the input port.
    assert depths.histogram["LUT-RAM write"] == {0: 9}


def test_twelve_input_xor_is_two_levels(reports):
    report = reports["xor12"]
    p = path_to(report, "depths.xor_q")
    assert (p.levels, p.carry4) == (2, 0)
    assert p.start.name.startswith("depths.src[") and p.start.kind == "FF"
    assert report.worst_levels == 2


def test_65_input_xor_needs_three_levels(reports):
    # ABC maps by its cell delays, not by levels, so only the lower bound is certain.
    p = path_to(reports["xor65"], "depths.xor_q")
    assert 3 <= p.levels <= 4


@pytest.mark.slow
def test_batch_depths_equal_single_runs(reports):
    """The batch measures what one ``synthesize()`` per design measures."""
    assert_batch_depths_equal_single_runs(designs(), reports)


# --- The counting rules on hand-made netlists (no Yosys) ---------------------------------------

def cell(ctype, **pins):
    dirs = {p: ("output" if p in ("O", "Q", "CO", "DOA", "DOADO") else "input") for p in pins}
    return {"type": ctype, "hide_name": 1, "port_directions": dirs,
            "connections": {p: (b if isinstance(b, list) else [b]) for p, b in pins.items()}}


def netlist(cells, netnames, ports=None):
    return {"modules": {"top": {"ports": ports or {}, "cells": cells, "netnames": {
        n: {"hide_name": 0, "bits": b} for n, b in netnames.items()}}}}


def test_carry4_and_muxf_count_zero_levels():
    # a (FF) -> LUT1 -> CARRY4 S[0] -> O[0] -> MUXF7 -> LUT2 -> b (FF)
    cells = {"fa": cell("FDRE", C=1, D=2, CE="1", R="0", Q=3),
             "l1": cell("LUT1", I0=3, O=4),
             "c4": cell("CARRY4", CI="0", CYINIT="0", DI=["0"] * 4, S=[4, "0", "0", "0"],
                        O=[5, 20, 21, 22], CO=[23, 24, 25, 26]),
             "m7": cell("MUXF7", I0=5, I1=3, S=3, O=6),
             "l2": cell("LUT2", I0=6, I1=3, O=7),
             "fb": cell("FDRE", C=1, D=7, CE="1", R="0", Q=8)}
    r = analyse_netlist(netlist(cells, {"a": [3], "b": [8], "clk": [1]}))
    p = path_to(r, "b")
    assert (p.levels, p.carry4, p.muxf) == (2, 1, 1)
    assert str(p.start) == "a (Q)" and str(p.end) == "b (D)"
    assert [t for t, _ in p.cells] == ["LUT1", "CARRY4", "MUXF7", "LUT2"]


def test_combinational_loop_is_an_error():
    cells = {"l1": cell("LUT1", I0=3, O=4), "l2": cell("LUT1", I0=4, O=3),
             "f": cell("FDRE", C=1, D=4, CE="1", R="0", Q=5)}
    with pytest.raises(ValueError, match="combinational loop"):
        analyse_netlist(netlist(cells, {"x": [3], "q": [5]}))


def test_bad_arguments_name_the_parameter():
    with pytest.raises(ValueError, match=r"worst: -1 is out of range; allowed an integer 0 "
                                         r"to 1000"):
        analyse_netlist(netlist({}, {}), worst=-1)
    with pytest.raises(ValueError, match="top: the netlist has no module 'core'"):
        analyse_netlist(netlist({}, {}), top="core")


def test_cli_timing_report_of_the_core(capsys):
    """`aes-fpga timing --json`: the worst path is the deepest end point of the histogram, the
    paths asked for are listed deepest first, and the cell-delay figure says what it is."""

    from aes_fpga.cli import main
    assert main(["timing", "--core", "drab-locus", "--key-sizes", "128", "--worst", "3",
                 "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    deepest = max(int(level) for h in r["histogram"].values() for level in h)
    assert r["worst_levels"] == deepest
    assert len(r["paths"]) == 3 and r["paths"][0]["levels"] == deepest
    assert [p["levels"] for p in r["paths"]] == sorted((p["levels"] for p in r["paths"]),
                                                       reverse=True)
    assert r["estimate"]["label"] == "pre-route lower bound, not an Fmax"
    assert r["estimate"]["ns"] > 0


def test_cli_timing_refuses_a_bad_worst(capsys):
    from aes_fpga.cli import main
    with pytest.raises(SystemExit):
        main(["timing", "--worst", "1001"])
    assert "--worst" in capsys.readouterr().err
