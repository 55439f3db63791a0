"""Drive a core's streams in Amaranth's simulator and record what happened at which cycle.

Every testbench counts its own clock edges from time 0, so cycle numbers agree across them: a
transfer "at cycle k" is one where valid and ready were both high between edges k and k+1.
"""

from amaranth.sim import Simulator


def run_core(dut, *, requests, rk_writes=(), o_ready=lambda cycle: True, max_cycles=20000):
    """Load ``rk_writes`` (round-key dicts), then offer ``requests`` on ``i``, with ``o.ready`` =
    ``o_ready(cycle)``. A request is a dict with block, op, slot, tag and an optional "wait" (idle
    cycles before offering it); an item ``{"rk": [...]}`` instead loads round keys at that point
    of the sequence (the core makes it wait for blocks in flight). Returns
    ``(accepted, results)``: ``accepted`` is a list of ``(cycle, request)``, ``results`` a list
    of ``(cycle, block, tag)`` in output order."""
    accepted, results = [], []
    items = ([{"rk": list(rk_writes)}] if rk_writes else []) + list(requests)
    n_blocks = sum(1 for r in items if "rk" not in r)

    async def transfer(ctx, port, payload, cycle):
        """Offer ``payload`` on stream ``port`` until taken; returns the cycle it was taken."""
        ctx.set(port.payload, payload)
        ctx.set(port.valid, 1)
        while True:
            ready = ctx.get(port.ready)
            await ctx.tick()
            if ready:
                return cycle
            cycle += 1

    async def send(ctx):
        cycle = 0
        for req in items:
            if "rk" in req:
                for w in req["rk"]:
                    cycle = await transfer(ctx, dut.rk, w, cycle) + 1
                ctx.set(dut.rk.valid, 0)
                continue
            for _ in range(req.get("wait", 0)):
                ctx.set(dut.i.valid, 0)
                await ctx.tick()
                cycle += 1
            taken = await transfer(ctx, dut.i, {k: v for k, v in req.items() if k != "wait"},
                                   cycle)
            accepted.append((taken, req))
            cycle = taken + 1
        ctx.set(dut.i.valid, 0)

    async def receive(ctx):
        cycle = 0
        while len(results) < n_blocks and cycle < max_cycles:
            ready = bool(o_ready(cycle))
            ctx.set(dut.o.ready, ready)
            valid = ctx.get(dut.o.valid)
            payload = ctx.get(dut.o.payload)
            if valid and ready:
                results.append((cycle, payload.block, payload.tag))
            await ctx.tick()
            cycle += 1

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(send)
    sim.add_testbench(receive, background=False)
    sim.run()
    return accepted, results
