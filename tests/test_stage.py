"""The registered stream stage: nothing lost or reordered under random gaps and back-pressure,
full rate when never stalled, and a flush that empties it."""

import random

from amaranth.sim import Simulator
from stream_drivers import run_streams_with_gaps

from aes_fpga.stage import SkidBuffer


def test_skid_buffer_keeps_every_beat_in_order():
    rng = random.Random(3)
    beats = [rng.getrandbits(8) for _ in range(400)]
    dut = SkidBuffer(8)
    (got,) = run_streams_with_gaps(dut, [(dut.i, beats)], [(dut.o, len(beats), None)],
                                   rng=rng, ready_prob=0.6)
    assert got == beats


def test_skid_buffer_runs_at_one_beat_per_cycle():
    """Always valid, always ready: a beat per cycle after the one-cycle latency, and
    ``i.ready`` never falls."""
    dut = SkidBuffer(8)
    seen = []

    async def bench(ctx):
        ctx.set(dut.o.ready, 1)
        for n in range(20):
            ctx.set(dut.i.valid, 1)
            ctx.set(dut.i.payload, n)
            assert ctx.get(dut.i.ready)
            if ctx.get(dut.o.valid):
                seen.append(ctx.get(dut.o.payload))
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert seen == list(range(19))


def test_skid_buffer_flush_empties_it():
    dut = SkidBuffer(8, flush=True)

    async def bench(ctx):
        # Two beats in while the output is stalled: both registers full, input not ready.
        for n in (1, 2):
            ctx.set(dut.i.valid, 1)
            ctx.set(dut.i.payload, n)
            await ctx.tick()
        ctx.set(dut.i.valid, 0)
        assert ctx.get(dut.o.valid) and not ctx.get(dut.i.ready)
        ctx.set(dut.flush, 1)
        await ctx.tick()
        ctx.set(dut.flush, 0)
        assert not ctx.get(dut.o.valid) and ctx.get(dut.i.ready)
        ctx.set(dut.i.valid, 1)
        ctx.set(dut.i.payload, 7)
        await ctx.tick()
        ctx.set(dut.i.valid, 0)
        ctx.set(dut.o.ready, 1)
        assert ctx.get(dut.o.valid) and ctx.get(dut.o.payload) == 7
        await ctx.tick()
        assert not ctx.get(dut.o.valid)

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
