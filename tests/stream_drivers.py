"""Testbench drivers for valid/ready streams with random gaps on both sides, shared by the
appliance's gateware tests (unlike :func:`aes_fpga.sim.traffic.run_streams`, which offers one
payload at a time across streams, these feed several streams at once)."""

from amaranth.sim import Simulator

__all__ = ["gap_sender", "run_streams_with_gaps"]


def gap_sender(stream, beats, rng, *, gap=0.3):
    """A testbench feeding ``beats`` into ``stream``, idle before each beat for as many cycles
    as ``rng.random() < gap`` keeps coming true, each beat held valid until taken."""
    async def send(ctx):
        for beat in beats:
            while rng.random() < gap:
                await ctx.tick()
            ctx.set(stream.payload, beat)
            ctx.set(stream.valid, 1)
            await ctx.tick().until(stream.ready)
            ctx.set(stream.valid, 0)
    return send


def run_streams_with_gaps(dut, sends, receives, *, rng, ready_prob=0.7, max_cycles=200_000):
    """Simulate ``dut``: each of ``sends`` is ``(stream, beats)`` fed by :func:`gap_sender`;
    each of ``receives`` is ``(stream, count, fields)`` taken with random ``ready``
    (probability ``ready_prob``) until ``count`` beats have arrived (``fields``: payload fields
    to record, or None for the whole payload). Returns the beats received on each; fails if
    they are not all there within ``max_cycles``."""
    got = [[] for _ in receives]

    def receiver(n, stream, count, fields):
        async def receive(ctx):
            for _ in range(max_cycles):
                if len(got[n]) == count:
                    return
                ready = rng.random() < ready_prob
                ctx.set(stream.ready, ready)
                valid, payload = ctx.get(stream.valid), ctx.get(stream.payload)
                await ctx.tick()
                if ready and valid:
                    got[n].append(payload if fields is None
                                  else tuple(getattr(payload, f) for f in fields))
            raise AssertionError(f"stream {n}: {len(got[n])} of {count} beats in time")
        return receive

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    for stream, beats in sends:
        sim.add_testbench(gap_sender(stream, beats, rng), background=True)
    for n, (stream, count, fields) in enumerate(receives):
        sim.add_testbench(receiver(n, stream, count, fields))
    sim.run()
    return got
