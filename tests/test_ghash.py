# amaranth: UnusedElaboratable=no
"""GHASH in gateware (both variants) against aes_fpga.gcm_model: values, cycles per block,
latency, table fill, back-pressure, the refusal of a new H during a GHASH, bad parameters."""

import random

import pytest
from shared_dut import shared
from sim_again import simulate
from test_core_depth import RULE_CARRY4, RULE_LEVELS

from aes_fpga import gcm_model
from aes_fpga.flow.synth import synthesize
from aes_fpga.flow.timing import analyse_netlist
from aes_fpga.modes.gf128 import mul_x_inv
from aes_fpga.modes.ghash import GHash
from aes_fpga.modes.ghash_bram import FILL_READ_DISTANCE, fill_ops

#: (variant, digit) pairs of the default run (the wide digits make big expressions that the
#: simulator takes seconds to compile); every other digit runs the value test under -m slow
#: (the LUT variant's steps are one loop whatever the digit: the default run has digit 8's).
FAST = [("lut", 8), ("bram", 8)]
CASES = [*FAST] + [pytest.param("lut", d, marks=pytest.mark.slow)
                   for d in (1, 2, 4, 16, 32, 64, 128)]


def ghash(variant, digit):
    """The GHASH of ``variant`` and ``digit`` (shared: see shared_dut; each test simulates it
    again from reset, see sim_again)."""
    return shared(GHash, variant=variant, digit=digit)


def script_of(rng, messages, *, new_h_every=2):
    """A list of ("h", H) and ("i", (X, first, last)): a new H before the first message and
    then before every ``new_h_every``-th, each message of the given number of blocks."""
    script = []
    for n, length in enumerate(messages):
        if n % new_h_every == 0:
            script.append(("h", rng.getrandbits(128)))
        for k in range(length):
            script.append(("i", (rng.getrandbits(128), k == 0, k == length - 1)))
    return script


def expected(script):
    """The results gcm_model gives for ``script``, one per ``last`` block."""
    out, h, blocks = [], None, []
    for kind, value in script:
        if kind == "h":
            h = value
            continue
        x, first, last = value
        if first:
            blocks = []
        blocks.append(x)
        if last:
            out.append(gcm_model.ghash_blocks(h, blocks))
    return out


def run(dut, script, *, rng=None, gap=0.0, ready_prob=1.0, max_cycles=20_000):
    """Drive ``script`` into ``dut`` in order (each item held valid until taken, idle cycles
    before it while ``rng.random() < gap``), take ``o`` with ready at ``ready_prob``. Returns
    (results, accept cycles of the script's items, cycles of the results)."""
    rng = rng or random.Random(0)
    count = sum(1 for kind, v in script if kind == "i" and v[2])
    results, accepted, out_cycles = [], [], []

    async def bench(ctx):
        pos, cycle, offered = 0, 0, set()
        while len(results) < count:
            assert cycle < max_cycles, (f"{len(results)} of {count} results and {pos} of "
                                        f"{len(script)} items taken in time")
            o_ready = rng.random() < ready_prob
            ctx.set(dut.o.ready, o_ready)
            # One h and one block at most per cycle, in the script's order: a block goes with
            # the h before it only once that h is being taken (an h offered with a block is
            # taken first). ``offered``: what is still held valid from an earlier cycle.
            used = set()
            while pos < len(script):
                kind, value = script[pos]
                if kind in used or "i" in used:
                    break
                if kind not in offered:
                    if not used and rng.random() < gap:
                        break
                    if kind == "h":
                        ctx.set(dut.h.payload, value)
                        ctx.set(dut.h.valid, 1)
                    else:
                        x, first, last = value
                        ctx.set(dut.i.payload, {"data": x, "first": first, "last": last})
                        ctx.set(dut.i.valid, 1)
                    offered.add(kind)
                used.add(kind)
                if not ctx.get((dut.h if kind == "h" else dut.i).ready):
                    break
                accepted.append(cycle)
                offered.discard(kind)
                pos += 1
            if o_ready and ctx.get(dut.o.valid):
                results.append(ctx.get(dut.o.payload))
                out_cycles.append(cycle)
            await ctx.tick()
            ctx.set(dut.h.valid, "h" in offered)
            ctx.set(dut.i.valid, "i" in offered)
            cycle += 1

    simulate(dut, bench, max_cycles=max_cycles + 1)
    return results, accepted, out_cycles


@pytest.mark.parametrize(("variant", "digit"), CASES, ids=lambda v: str(v))
def test_values_and_cycles_saturated(variant, digit):
    """Messages of 1, 2, 3 and 7 blocks back to back, a new H between some of them, input
    always offered and output always taken: the values are the model's, blocks of a message
    are accepted every ``cycles_per_block`` cycles, the result comes ``latency`` cycles after
    its last block, a block follows ``h`` after ``fill_cycles``."""
    rng = random.Random(f"{variant}{digit}")
    dut = ghash(variant, digit)
    # (a new H before the first message and, for "lut", the fourth: each costs the BRAM
    # variant a fill, and its new H is test_new_h_is_refused_during_a_ghash's and
    # test_h_offered_with_a_block_goes_first's)
    script = script_of(rng, [1, 2, 3, 7, 1, 3], new_h_every=6 if variant == "bram" else 3)
    results, accepted, out_cycles = run(dut, script)
    assert results == expected(script)
    lasts = []
    for n, (kind, value) in enumerate(script):
        if kind == "h":
            assert accepted[n + 1] - accepted[n] == dut.fill_cycles
        elif not value[1]:
            # A block within a message: one block per cycles_per_block.
            assert accepted[n] - accepted[n - 1] == dut.cycles_per_block
        if kind == "i" and value[2]:
            lasts.append(accepted[n])
    assert [o - a for o, a in zip(out_cycles, lasts, strict=True)] == [dut.latency] * len(lasts)


@pytest.mark.parametrize(("variant", "digit"), FAST, ids=lambda v: str(v))
def test_gaps_and_backpressure_change_only_timing(variant, digit):
    """(One H: the BRAM variant's fill costs a thousand cycles; test_new_h_is_refused_during_a_ghash
    offers an H while the output is held back.)"""
    rng = random.Random(7)
    dut = ghash(variant, digit)
    script = script_of(rng, [2, 1, 3, 7, 1], new_h_every=5)
    results, _, _ = run(dut, script, rng=rng, gap=0.4, ready_prob=0.4, max_cycles=60_000)
    assert results == expected(script)


@pytest.mark.parametrize(("variant", "digit"), FAST, ids=lambda v: str(v))
def test_first_block_restarts_and_continuing_after_last(variant, digit):
    """A first block without a last before it starts over (the unfinished GHASH is dropped);
    a block that is not first after a last one goes on from the result, Y = (Y ⊕ X)·H."""
    rng = random.Random(17)
    h = rng.getrandbits(128)
    x = [rng.getrandbits(128) for _ in range(6)]
    script = [("h", h), ("i", (x[0], 1, 0)), ("i", (x[1], 0, 0)), ("i", (x[2], 1, 1)),
              ("i", (x[3], 0, 1)), ("i", (x[4], 1, 0)), ("i", (x[5], 1, 1))]
    dut = ghash(variant, digit)
    results, _, _ = run(dut, script, rng=rng, gap=0.3, ready_prob=0.6)
    y = gcm_model.mul(x[2], h)
    assert results == [y, gcm_model.mul(y ^ x[3], h), gcm_model.mul(x[5], h)]


@pytest.mark.parametrize(("variant", "digit"), FAST, ids=lambda v: str(v))
def test_new_h_is_refused_during_a_ghash(variant, digit):
    """A new H offered all through a 3-block message is taken only after the result has been
    taken (and then changes the next message, not this one)."""
    rng = random.Random(3)
    dut = ghash(variant, digit)
    h0, h1 = rng.getrandbits(128), rng.getrandbits(128)
    blocks = [rng.getrandbits(128) for _ in range(3)]
    events = {}

    async def bench(ctx):
        ctx.set(dut.o.ready, 0)
        ctx.set(dut.h.payload, h0)
        ctx.set(dut.h.valid, 1)
        await ctx.tick().until(dut.h.ready)
        ctx.set(dut.h.valid, 0)
        for _ in range(dut.fill_cycles):
            await ctx.tick()
        for k, x in enumerate(blocks):
            ctx.set(dut.i.payload, {"data": x, "first": k == 0, "last": k == 2})
            ctx.set(dut.i.valid, 1)
            for _ in range(100):
                ready = ctx.get(dut.i.ready)
                assert k == 0 or not ctx.get(dut.h.ready), "h taken within a message"
                await ctx.tick()
                if ready:
                    break
            if k == 0:
                # From here on a new H waits.
                ctx.set(dut.h.payload, h1)
                ctx.set(dut.h.valid, 1)
        ctx.set(dut.i.valid, 0)
        for cycle in range(dut.latency + 20):
            assert not ctx.get(dut.h.ready), f"h taken {cycle} cycles after the last block"
            await ctx.tick()
        assert ctx.get(dut.o.valid)
        events["result"] = ctx.get(dut.o.payload)
        ctx.set(dut.o.ready, 1)
        await ctx.tick()
        ctx.set(dut.o.ready, 0)
        # Free again once the result has been taken (a registered flag may take a cycle).
        for _ in range(3):
            if ctx.get(dut.h.ready):
                break
            await ctx.tick()
        assert ctx.get(dut.h.ready)
        await ctx.tick()
        ctx.set(dut.h.valid, 0)
        for _ in range(dut.fill_cycles):
            await ctx.tick()
        ctx.set(dut.i.payload, {"data": blocks[0], "first": 1, "last": 1})
        ctx.set(dut.i.valid, 1)
        await ctx.tick().until(dut.i.ready)
        ctx.set(dut.i.valid, 0)
        ctx.set(dut.o.ready, 1)
        *_, payload = await ctx.tick().sample(dut.o.payload).until(dut.o.valid)
        events["after"] = payload

    simulate(dut, bench, max_cycles=5000)
    assert events["result"] == gcm_model.ghash_blocks(h0, blocks)
    assert events["after"] == gcm_model.mul(blocks[0], h1)


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"variant": "dsp"}, "variant"), ({"variant": None}, "variant"),
    ({"variant": "lut", "digit": 3}, "digit"), ({"variant": "lut", "digit": 256}, "digit"),
    ({"variant": "lut", "digit": True}, "digit"), ({"digit": 0}, "digit"),
])
def test_bad_parameters_are_refused(kwargs, name):
    with pytest.raises(ValueError, match=rf"^{name}: .* allowed .*"):
        GHash(**kwargs)


def test_bram_variant_keeps_the_depth_rule():
    """At most 2 LUT levels between registers (block RAM and DSP outputs and ports counting as
    registers), carry chains of at most 4 CARRY4, as tests/test_core_depth.py asks of the
    cores: the accumulator, the nibble multiplexers, the fill sequencer and the handshakes."""
    report = analyse_netlist(synthesize(GHash(variant="bram")).netlist_json, worst=1000)
    assert report.end_points > 0 and report.paths
    deep = [f"{p.levels} levels: {p.start} -> {p.end}" for p in report.paths
            if p.levels > RULE_LEVELS]
    long = [f"{c['length']} CARRY4 ({c['net'] or c['source']})" for c in report.carry_chains
            if c["length"] > RULE_CARRY4]
    assert deep + long == []


def test_bram_fill_schedule_builds_every_table_entry():
    """The fill's op order (what the sequencer decodes), run in Python with the hardware's
    timing rule: an op may read a word only once it is FILL_READ_DISTANCE ops old. Every
    nonzero entry of every table is written once, with the model's value."""
    h = random.Random(5).getrandbits(128)
    written = {}
    for k, op in enumerate(fill_ops()):
        if op is None:
            continue
        j, v, *sources = op
        word = 0
        for src in sources:
            if src == "H/x":
                word ^= mul_x_inv(h)
            elif src is not None:
                assert k - written[src][0] >= FILL_READ_DISTANCE, (op, src)
                word ^= written[src][1]
        assert (j, v) not in written
        written[j, v] = (k, gcm_model.mul_x(word))
    assert len(written) == 32 * 15
    for (j, v), (_, word) in written.items():
        assert word == gcm_model.mul(v << (124 - 4 * j), h), (j, v)


@pytest.mark.parametrize(("variant", "digit"), FAST, ids=lambda v: str(v))
def test_h_offered_with_a_block_goes_first(variant, digit):
    """A block offered in the same cycle as a new H is multiplied by the new H (for "bram" it
    waits for the fill; for "lut" both may be taken at once)."""
    rng = random.Random(11)
    dut = ghash(variant, digit)
    h0, h1, x = (rng.getrandbits(128) for _ in range(3))
    taken = {}

    async def bench(ctx):
        ctx.set(dut.o.ready, 1)
        ctx.set(dut.h.payload, h0)
        ctx.set(dut.h.valid, 1)
        await ctx.tick().until(dut.h.ready)
        ctx.set(dut.h.payload, h1)
        ctx.set(dut.i.payload, {"data": x, "first": 1, "last": 1})
        ctx.set(dut.i.valid, 1)
        for cycle in range(2 * dut.fill_cycles + 100):
            for name, stream in (("h", dut.h), ("i", dut.i)):
                if name not in taken and ctx.get(stream.valid) and ctx.get(stream.ready):
                    taken[name] = cycle
            await ctx.tick()
            for name, stream in (("h", dut.h), ("i", dut.i)):
                if name in taken:
                    ctx.set(stream.valid, 0)
            if ctx.get(dut.o.valid):
                taken["result"] = ctx.get(dut.o.payload)
                return

    simulate(dut, bench, max_cycles=3 * dut.fill_cycles + 200)
    assert taken["h"] <= taken["i"]
    assert taken["result"] == gcm_model.mul(x, h1)


def _open_loop_stimulus(dut, h, blocks):
    """A stimulus fixed in advance (the cycles are known): H at cycle 0, the blocks (data,
    first, last) from the end of the fill, one every cycles_per_block within a message and a
    message after the previous result, output always taken."""
    stim = [{"h__valid": 1, "h__payload": h, "o__ready": 1}, {"h__valid": 0}]
    stim += [{}] * (dut.fill_cycles - len(stim))
    for x, first, last in blocks:
        stim.append({"i__valid": 1, "i__payload": x | first << 128 | last << 129})
        gap = dut.latency + 2 if last else dut.cycles_per_block
        stim += [{"i__valid": 0}] + [{}] * (gap - 2)
    return stim + [{}] * 4


@pytest.mark.slow
@pytest.mark.parametrize(("variant", "digit"), FAST, ids=lambda v: str(v))
def test_xilinx_netlist_matches_portable(variant, digit, tmp_path):
    """The component synthesized for the default part ("bram": RAMB36E1 with DOB_REG and a
    read-first port b, DSP48E1 XORs; "lut": the hand-packed LUT6s) and simulated with the cell
    models: H, then two messages, cycle for cycle as the portable elaboration, and the model's
    results."""
    from aes_fpga.flow.postsynth import find_iverilog, simulate_netlist, simulate_portable

    rng = random.Random(13)
    h = rng.getrandbits(128)
    blocks = [(rng.getrandbits(128), k == 0, k == 2) for k in range(3)]
    blocks += [(rng.getrandbits(128), 1, 1)]
    dut = GHash(variant=variant, digit=digit)
    res = synthesize(dut, workdir=tmp_path)
    if find_iverilog() is None:
        pytest.skip("Icarus Verilog (iverilog, vvp) is not installed: synthesized only")
    stim = _open_loop_stimulus(dut, h, blocks)
    portable = simulate_portable(dut, stim)
    results = [r["o__payload"] for r in portable if r["o__valid"]]
    assert results == [gcm_model.ghash_blocks(h, [x for x, _, _ in blocks[:3]]),
                       gcm_model.mul(blocks[3][0], h)]
    netlist = simulate_netlist(dut, stim, synth=res)
    for cycle, (got, want) in enumerate(zip(netlist, portable, strict=True)):
        assert got == want, f"cycle {cycle}: netlist {got} != portable {want}"
