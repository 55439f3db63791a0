"""The registered stream stages: nothing lost or reordered under random gaps and back-pressure,
full rate when never stalled, and a flush that empties it."""

import random

import pytest
from amaranth.sim import Simulator
from small_batch import small_batch
from stream_drivers import run_streams_with_gaps

from aes_fpga.stage import HoldStage, PipeStage, SkidBuffer

STAGES = pytest.mark.parametrize("stage", [SkidBuffer, PipeStage], ids=lambda c: c.__name__)


@pytest.mark.parametrize("stage", [SkidBuffer, PipeStage, HoldStage], ids=lambda c: c.__name__)
def test_stage_keeps_every_beat_in_order(stage):
    rng = random.Random(3)
    beats = [rng.getrandbits(8) for _ in range(400)]
    dut = stage(8)
    (got,) = run_streams_with_gaps(dut, [(dut.i, beats)], [(dut.o, len(beats), None)],
                                   rng=rng, ready_prob=0.6)
    assert got == beats


@STAGES
def test_stage_runs_at_one_beat_per_cycle(stage):
    """Always valid, always ready: a beat per cycle after the one-cycle latency, and
    ``i.ready`` never falls."""
    dut = stage(8)
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

    run_bench(dut, bench)
    assert seen == list(range(19))


def test_hold_stage_takes_a_beat_every_other_cycle():
    """Always valid, always ready: a beat every 2 cycles; ``i.ready`` is low exactly while a
    beat is held, whatever ``o.ready`` does in that cycle (it is a flip-flop's)."""
    dut = HoldStage(8)
    seen = []

    async def bench(ctx):
        ctx.set(dut.i.valid, 1)
        for n in range(20):
            ctx.set(dut.i.payload, n)
            for ready in (0, 1):
                ctx.set(dut.o.ready, ready)
                assert ctx.get(dut.i.ready) == (not ctx.get(dut.o.valid))
            if ctx.get(dut.i.ready):
                taken = ctx.get(dut.i.payload)
            else:
                seen.append(ctx.get(dut.o.payload))
            await ctx.tick()
        assert taken == 18

    run_bench(dut, bench)
    assert seen == list(range(0, 19, 2))


def test_hold_stage_flush_discards_the_beat_held():
    dut = HoldStage(8, flush=True)

    async def bench(ctx):
        ctx.set(dut.i.valid, 1)
        ctx.set(dut.i.payload, 1)
        await ctx.tick()
        ctx.set(dut.i.valid, 0)
        assert ctx.get(dut.o.valid) and not ctx.get(dut.i.ready)
        await flush_then_take_one_beat(ctx, dut)

    run_bench(dut, bench)


def run_bench(dut, bench):
    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()


async def flush_then_take_one_beat(ctx, dut):
    """A cycle of ``flush`` empties the stage (input ready, nothing out); then, with
    ``o.ready`` high, a new beat goes in, comes out a cycle later, and nothing else."""
    ctx.set(dut.flush, 1)
    await ctx.tick()
    ctx.set(dut.flush, 0)
    assert not ctx.get(dut.o.valid) and ctx.get(dut.i.ready)
    ctx.set(dut.o.ready, 1)
    await take_one_beat(ctx, dut)


async def take_one_beat(ctx, dut):
    """With ``o.ready`` high: a new beat goes in, comes out a cycle later, and nothing else."""
    ctx.set(dut.i.valid, 1)
    ctx.set(dut.i.payload, 7)
    await ctx.tick()
    ctx.set(dut.i.valid, 0)
    assert ctx.get(dut.o.valid) and ctx.get(dut.o.payload) == 7
    await ctx.tick()
    assert not ctx.get(dut.o.valid)


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
        await flush_then_take_one_beat(ctx, dut)

    run_bench(dut, bench)


def test_pipe_stage_flush_discards_the_beat_held_and_one_taken():
    dut = PipeStage(8, flush=True)

    async def bench(ctx):
        ctx.set(dut.i.valid, 1)
        ctx.set(dut.i.payload, 1)
        await ctx.tick()
        assert ctx.get(dut.o.valid) and ctx.get(dut.o.payload) == 1
        # flush in the cycle the held beat leaves and a second one is taken: both go
        ctx.set(dut.i.payload, 2)
        ctx.set(dut.o.ready, 1)
        ctx.set(dut.flush, 1)
        assert ctx.get(dut.i.ready)
        await ctx.tick()
        ctx.set(dut.flush, 0)
        ctx.set(dut.i.valid, 0)
        assert not ctx.get(dut.o.valid)
        await take_one_beat(ctx, dut)

    run_bench(dut, bench)


@pytest.fixture(scope="module")
def both_stages_report(tmp_path_factory):
    return small_batch(tmp_path_factory)["both_stages"]


@pytest.mark.parametrize(("name", "levels"), [("pipe", 0), ("skid", 1)])
def test_block_ram_read_into_the_stage(both_stages_report, name, levels):
    """Nothing but wire between the FIFO's block RAM read and the pipe stage's registers' data
    inputs (a load is the flip-flops' enable); the skid buffer has its input mux there. On xc7,
    as ``aes-fpga timing`` counts."""
    # The stage's registers: its own names, or its output port's where that names them.
    stage = (f"{name}.stage.", f"{name}.o__")
    to_data = [p for p in both_stages_report.paths
               if p.end.name.startswith(stage) and p.end.pin == "D"]
    assert any(p.start.kind == "BRAM" for p in to_data)
    assert max(p.levels for p in to_data) == levels
