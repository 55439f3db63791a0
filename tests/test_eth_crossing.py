# amaranth: UnusedElaboratable=no
"""The read-registered asynchronous FIFO (the RGMII transmitter's crossing): every entry
arrives once and in order across two unrelated clocks under random gaps on both sides, its
level settles at what is unread, an entry is readable a bounded number of read cycles after
its write, and the parameters are checked."""

import random

import pytest
from amaranth.hdl import ClockDomain, Module
from amaranth.sim import Simulator

from aes_fpga.appliance.gateware.eth.crossing import ReadRegisteredAsyncFIFO


def simulate(w_period, r_period, *, n=200, depth=16, seed=0, w_gap=0.3, r_gap=0.3):
    """Write ``n`` random 9-bit entries with gaps (probability ``w_gap`` a cycle), read them
    with gaps; returns what was written, what was read, the level seen once the writer stops
    with four entries unread, and the read cycles from the first write to ``r_rdy``."""
    dut = ReadRegisteredAsyncFIFO(width=9, depth=depth, w_domain="sync", r_domain="rd")
    top = Module()
    top.domains.sync = ClockDomain()
    top.domains.rd = ClockDomain()
    top.submodules.dut = dut
    rng = random.Random(seed)
    written = [rng.getrandbits(9) for _ in range(n)]
    read, seen = [], {}

    async def writer(ctx):
        for value in written:
            while rng.random() < w_gap:
                ctx.set(dut.w_en, 0)
                await ctx.tick("sync")
            ctx.set(dut.w_data, value)
            ctx.set(dut.w_en, 1)
            if "first" not in seen:
                seen["first"] = True
            await ctx.tick("sync").until(dut.w_rdy)
        ctx.set(dut.w_en, 0)

    async def reader(ctx):
        cycles = 0
        while len(read) < n - 4:
            take = rng.random() >= r_gap
            ctx.set(dut.r_en, take)
            if "first" in seen and "latency" not in seen:
                seen.setdefault("since", 0)
                seen["since"] += 1
                if ctx.get(dut.r_rdy):
                    seen["latency"] = seen["since"]
            if take and ctx.get(dut.r_rdy):
                read.append(ctx.get(dut.r_data))
            await ctx.tick("rd")
            cycles += 1
            assert cycles < 50 * n, "the entries did not come through"
        ctx.set(dut.r_en, 0)
        for _ in range(12):        # the writer's last pointer crosses
            await ctx.tick("rd")
        seen["level"] = ctx.get(dut.r_level)
        while len(read) < n:
            ctx.set(dut.r_en, 1)
            if ctx.get(dut.r_rdy):
                read.append(ctx.get(dut.r_data))
            await ctx.tick("rd")
        ctx.set(dut.r_en, 0)
        await ctx.tick("rd")
        seen["empty"] = not ctx.get(dut.r_rdy)

    sim = Simulator(top)
    sim.add_clock(w_period)
    sim.add_clock(r_period, domain="rd")
    sim.add_testbench(writer, background=True)
    sim.add_testbench(reader)
    sim.run()
    return written, read, seen


@pytest.mark.parametrize(("w_period", "r_period", "seed"),
                         [(8e-9, 8e-9, 1), (8e-9, 7e-9, 2), (8e-9, 13e-9, 3), (13e-9, 8e-9, 4)])
def test_every_entry_once_in_order(w_period, r_period, seed):
    written, read, seen = simulate(w_period, r_period, seed=seed)
    assert read == written
    assert seen["level"] == 4 and seen["empty"]
    # a write into the empty FIFO, counted in read cycles from the one in which the writer
    # offers it: the write's edge, two synchroniser stages, the registered flag, and a cycle
    # for the two clocks' phase
    assert 3 <= seen["latency"] <= 5, seen


def test_a_full_fifo_holds_the_writer():
    # The reader far slower than the writer: w_rdy falls and nothing is lost or repeated.
    written, read, _ = simulate(8e-9, 29e-9, n=60, depth=4, seed=5, w_gap=0, r_gap=0.5)
    assert read == written


def test_depth_is_checked():
    for depth in (0, 1, 3, 24):
        with pytest.raises(ValueError, match="depth"):
            ReadRegisteredAsyncFIFO(width=8, depth=depth, w_domain="sync", r_domain="rd")
