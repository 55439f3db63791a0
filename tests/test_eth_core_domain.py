# amaranth: UnusedElaboratable=no
"""A core in a clock domain of its own (CoreDomain), as the Gigabit appliance runs it beside its
125 MHz stack: results match cryptography in order under back-pressure, a rejected key's pulse
crosses, and the parameters are checked."""

import random

import pytest
from amaranth.sim import Simulator
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from aes_fpga.appliance.gateware.core_domain import CoreDomain
from aes_fpga.cores import make_core
from aes_fpga.params import KeySize, Op
from aes_fpga.sim.cxxsim import mark_used


def simulate(dut, key, blocks, *, stall_every=0, extra_keys=()):
    """Load ``key`` (slot 0), then encrypt ``blocks`` (ints), ``sync`` at 125 MHz and the
    core at 100 MHz; returns the results in order and the rejected pulses seen in ``sync``."""
    out, rejected = [], []

    async def source(ctx):
        for k, bits in ((key, KeySize.AES128), *extra_keys):
            ctx.set(dut.key.payload, {"key": k << (256 - 128), "key_bits": bits, "slot": 0})
            ctx.set(dut.key.valid, 1)
            await ctx.tick().until(dut.key.ready)
            ctx.set(dut.key.valid, 0)
        for block in blocks:
            ctx.set(dut.i.payload, {"block": block, "op": Op.ENCRYPT, "slot": 0})
            ctx.set(dut.i.valid, 1)
            await ctx.tick().until(dut.i.ready)
        ctx.set(dut.i.valid, 0)

    async def sink(ctx):
        cycle = 0
        while len(out) < len(blocks):
            ready = not stall_every or cycle % stall_every != 0
            ctx.set(dut.o.ready, ready)
            if ctx.get(dut.key_rejected):
                rejected.append(cycle)
            if ready and ctx.get(dut.o.valid):
                out.append(ctx.get(dut.o.payload.block))
            await ctx.tick()
            cycle += 1
            assert cycle < 20000, "the results did not come back"

    sim = Simulator(dut)
    sim.add_clock(8e-9)
    sim.add_clock(10e-9, domain="core")
    sim.add_testbench(source, background=True)
    sim.add_testbench(sink)
    sim.run()
    return out, rejected


@pytest.mark.parametrize("stall_every", [pytest.param(0, marks=pytest.mark.slow), 3])
def test_results_cross_in_order(stall_every):
    """Results in order under back-pressure (``o`` not ready every third cycle; with -m slow
    also never stalled, the same crossing without waits). With back-pressure an AES-256 key
    is offered too, after the good key: it is rejected, its pulse seen once in ``sync``, and
    the blocks still encrypt under the key loaded before (the refusal changed nothing)."""
    rng = random.Random(stall_every)
    key = rng.getrandbits(128)
    blocks = [rng.getrandbits(128) for _ in range(8)]
    core = make_core("lut-round", key_slots=1, key_sizes=(128,), tag_width=0)
    extra = [(rng.getrandbits(128), KeySize.AES256)] if stall_every else []
    out, rejected = simulate(CoreDomain(core), key, blocks, stall_every=stall_every,
                             extra_keys=extra)
    enc = Cipher(algorithms.AES(key.to_bytes(16, "big")), modes.ECB()).encryptor()
    expected = [int.from_bytes(enc.update(b.to_bytes(16, "big")), "big") for b in blocks]
    assert out == expected
    assert len(rejected) == len(extra)


@pytest.mark.slow
def test_a_rejected_key_pulses_once_in_sync():
    """With -m slow: test_results_cross_in_order[3] has a key rejected in the default run."""
    core = make_core("lut-round", key_slots=1, key_sizes=(128,), tag_width=0)
    _, rejected = simulate(CoreDomain(core), 1, [0], extra_keys=[(2, KeySize.AES256)])
    assert len(rejected) == 1


def test_parameters_are_checked():
    core = make_core("lut-round", key_slots=1, key_sizes=(128,), tag_width=0)
    with pytest.raises(ValueError, match="domain: 'sync' is not a clock domain name other"):
        CoreDomain(core, domain="sync")
    with pytest.raises(ValueError, match="depth: 12 is not a power of 2 from 4"):
        CoreDomain(core, depth=12)
    wrapped = CoreDomain(core, depth=8)
    mark_used(wrapped)          # made to read its attributes, not to be simulated
    mark_used(core)
    assert (wrapped.key_slots, wrapped.key_sizes, wrapped.tag_width) == (1, (128,), 0)
