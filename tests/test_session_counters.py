"""The records' replay rule in gateware (aes_fpga.appliance.gateware.session_counters) against
the reference device's SessionState, over random counters near the highest taken."""

import random

import pytest
from amaranth.sim import Simulator

from aes_fpga.appliance.gateware.session_counters import RecordCounters
from aes_fpga.appliance.session_spec import derive_session
from aes_fpga.appliance.sessions import SessionState

KEYS = derive_session(bytes(32), bytes(16), bytes(16), bytes(4))


def check_against_the_model(window, steps, seed, max_records=1000, pipelined=False):
    dut = RecordCounters(held=2, window=window, max_records=max_records, pipelined=pipelined)
    rng = random.Random(seed)
    models = [SessionState(KEYS, window) for _ in range(2)]
    taken = [0, 0]

    async def bench(ctx):
        for _ in range(steps):
            place = rng.randrange(2)
            model = models[place]
            if rng.random() < 0.01:         # a new session in the place
                models[place] = SessionState(KEYS, window)
                ctx.set(dut.start, 1)
                ctx.set(dut.start_place, place)
                await ctx.tick()
                ctx.set(dut.start, 0)
                continue
            counter = max(0, model.last + rng.randint(-window - 2, 3))
            if rng.random() < 0.02:
                counter = rng.choice((0, model.last + window + 50, max_records + 1))
            datagram = rng.random() < 0.8
            ctx.set(dut.place, place)
            ctx.set(dut.counter, counter)
            ctx.set(dut.datagram, datagram)
            for _ in range(dut.latency):          # (pipelined: the answers come later)
                await ctx.tick()
            ok = model.acceptable(counter, datagram)
            assert ctx.get(dut.acceptable) == bool(ok), (counter, model.last, model.seen)
            assert ctx.get(dut.expired) == (counter > max_records)
            # (The counters whose replies are kept: the highest taken and W - 1 below.)
            assert ctx.get(dut.in_window) == (model.last - window < counter <= model.last)
            if ok:
                model.accept(counter, 0, b"", b"")
                taken[place] += 1
                ctx.set(dut.accept, 1)
            await ctx.tick()
            ctx.set(dut.accept, 0)

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert min(taken) > steps // 10        # the walk takes records in both places


@pytest.mark.parametrize("window", [1, 4])
def test_the_replay_rule_against_the_model(window):
    check_against_the_model(window, 600, seed=window)


@pytest.mark.parametrize("window", [1, 8])
def test_the_pipelined_replay_rule_against_the_model(window):
    check_against_the_model(window, 400, seed=10 + window, pipelined=True)


@pytest.mark.slow
def test_the_replay_rule_many_walks():
    for window in (1, 2, 3, 4, 8):
        check_against_the_model(window, 20_000, seed=100 + window)


def test_parameters_are_checked():
    for options in ({"held": 5}, {"window": 0}, {"max_records": 1 << 64}):
        with pytest.raises(ValueError):
            RecordCounters(**options)
