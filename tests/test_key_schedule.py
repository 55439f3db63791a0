# amaranth: UnusedElaboratable=no
"""The sequential key schedule against the model: every rk word, load time, lock, rejection."""

import random

import pytest
from amaranth.sim import Simulator

from aes_fpga.cores.drab_locus import round_key_writes
from aes_fpga.cores.key_schedule import KeySchedule, key_load_cycles

KEY_BITS = {16: 0, 24: 1, 32: 2}


def run_schedule(dut, key, slot, rk_ready=lambda c: True, cycles=600, zeroize=False):
    """Offer one key (or a zeroize of ``slot``); return (writes by (op, index, word), lock
    trace, rejected pulses)."""
    writes, lock, rejected = {}, [], []

    async def tb(ctx):
        ctx.set(dut.key.payload, {"key": int.from_bytes(key.ljust(32, b"\0"), "big"),
                                  "key_bits": KEY_BITS.get(len(key), 3), "slot": slot,
                                  "zeroize": int(zeroize)})
        ctx.set(dut.key.valid, 1)
        for c in range(cycles):
            ready = bool(rk_ready(c))
            ctx.set(dut.rk.ready, ready)
            taken = ctx.get(dut.key.ready)
            lock.append(ctx.get(dut.lock))
            rejected.append(ctx.get(dut.rejected))
            if ctx.get(dut.rk.valid) and ready:
                p = ctx.get(dut.rk.payload)
                assert p.slot == slot and ctx.get(dut.lock_slot) == slot
                addr = (p.op, p.index, p.word)
                assert addr not in writes, f"{addr} written twice"
                writes[addr] = (p.nr, p.key)
            await ctx.tick()
            if taken:
                ctx.set(dut.key.valid, 0)

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(tb)
    sim.run()
    return writes, lock, rejected


def expected_writes(key, slot):
    return {(w["op"], w["index"], w["word"]): (w["nr"], w["key"])
            for op in (0, 1) for w in round_key_writes(key, op, slot)}


@pytest.mark.parametrize("nbytes", [16, 24, 32])
def test_every_round_key_word_and_load_time(nbytes):
    key = bytes(random.Random(nbytes).getrandbits(8) for _ in range(nbytes))
    writes, lock, _ = run_schedule(KeySchedule(key_slots=3), key, 2)
    assert writes == expected_writes(key, 2)
    # lock rises the cycle after the key is offered and falls when the last word is written
    assert lock[0] == 0
    assert sum(lock) == key_load_cycles(nbytes * 8) - 1
    assert lock[1:key_load_cycles(nbytes * 8)] == [1] * (key_load_cycles(nbytes * 8) - 1)
    assert key_load_cycles(nbytes * 8) == {16: 366, 24: 394, 32: 492}[nbytes]


def test_rk_backpressure_stalls_without_loss():
    key = bytes(range(32))
    rng = random.Random(1)
    pattern = [rng.random() < 0.4 for _ in range(997)]
    writes, lock, _ = run_schedule(KeySchedule(), key, 0, rk_ready=lambda c: pattern[c % 997],
                                   cycles=2000)
    assert writes == expected_writes(key, 0)
    assert sum(lock) > key_load_cycles(256)


def test_unsupported_key_size_is_rejected():
    dut = KeySchedule(key_sizes=(128,))
    writes, lock, rejected = run_schedule(dut, bytes(32), 0, cycles=20)
    assert writes == {} and sum(lock) == 0
    assert rejected[0] == 1 and sum(rejected) == 1


def test_key_sizes_parameter_checked():
    with pytest.raises(ValueError, match="key_sizes"):
        KeySchedule(key_sizes=(64,))
    with pytest.raises(ValueError, match="key_sizes"):
        KeySchedule(key_sizes=())


def test_zeroize_writes_zero_to_every_round_key_word():
    writes, lock, _ = run_schedule(KeySchedule(key_slots=2), b"\xff" * 32, 1, zeroize=True)
    assert writes == {(op, i, w): (10, 0) for op in (0, 1) for i in range(16) for w in range(4)}
    # one word every other cycle from cycle 2: the last is written in cycle 256
    assert sum(lock) == 256
