"""DRAB-LOCUS: NIST vectors, cycle-level behaviour, random traffic with back-pressure.

What every core promises (NIST vectors, latency, throughput, random traffic, key reloads) is
tested on the full core, behind its ``key`` stream, by test_core_conformance.py; here the same
for the datapath loaded with precomputed round keys through ``rk`` ("datapath"), and what is
particular to DRAB-LOCUS on both entry points ("core" too).
"""

import random

import pytest
from amaranth.sim import Simulator
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shared_dut import shared
from test_model import ECB_38A, PT_38A  # SP 800-38A F.1 vectors, checked there

from aes_fpga import model
from aes_fpga.cores.drab_locus import (
    DrabLocus,
    DrabLocusDatapath,
    ResultFIFO,
    key_load_cycles,
    latency,
    round_key_writes,
)
from aes_fpga.cores.drab_locus_keys import RCON_COLUMN, TableLayout
from aes_fpga.sim.traffic import run_core

# FIPS-197 Appendix C: (key bytes, ciphertext); plaintext 00112233..ff, keys 000102..
FIPS_C = [(len(k), model.to_int(ct)) for k, _, ct in model.FIPS197_EXAMPLES.values()]
PT = model.to_int(model.FIPS197_EXAMPLES[128][1])

KINDS = ["datapath", "core"]
kinds = pytest.mark.parametrize("kind", KINDS)
# the full core's run of these is in test_core_conformance.py
datapath_only = pytest.mark.parametrize("kind", ["datapath"])


def all_keys(key, slot=0):
    return round_key_writes(key, 0, slot) + round_key_writes(key, 1, slot)


def make(kind, **kwargs):
    """The datapath or the core, one instance per arguments (their simulations are reset)."""
    return shared(DrabLocusDatapath if kind == "datapath" else DrabLocus, **kwargs)


def load(kind, key, slot=0):
    """Items for run_core that load ``key`` into ``slot`` through the kind's entry point."""
    if kind == "datapath":
        return [{"rk": all_keys(key, slot)}]
    return [{"key": {"key": int.from_bytes(key.ljust(32, b"\0"), "big"),
                     "key_bits": {16: 0, 24: 1, 32: 2}[len(key)], "slot": slot}}]


def reference(req, keys):
    key = keys[req["slot"]]
    f = model.encrypt_block if req["op"] == 0 else model.decrypt_block
    return f(key, req["block"])


@datapath_only
@pytest.mark.parametrize(("nbytes", "ct"), FIPS_C, ids=["128", "192", "256"])
def test_fips197_both_directions(kind, nbytes, ct):
    key = bytes(range(nbytes))
    reqs = [{"block": PT, "op": 0, "slot": 0, "tag": 1},
            {"block": ct, "op": 1, "slot": 0, "tag": 2}]
    acc, res = run_core(make(kind), requests=load(kind, key) + reqs)
    assert [(b, t) for _, b, t in res] == [(ct, 1), (PT, 2)]
    nr = model.num_rounds(nbytes * 8)
    assert [c for c, _, _ in res] == [acc[0][0] + latency(nr), acc[1][0] + latency(nr)]


@datapath_only
def test_sp800_38a_ecb_all_key_sizes_in_three_slots(kind):
    loads = [item for slot, (key, _) in enumerate(ECB_38A) for item in load(kind, key, slot)]
    reqs, expected = [], []
    for slot, (_, cts) in enumerate(ECB_38A):
        for pt, ct in zip(PT_38A, cts, strict=True):
            reqs.append({"block": int.from_bytes(pt, "big"), "op": 0, "slot": slot,
                         "tag": len(reqs)})
            expected.append(int.from_bytes(ct, "big"))
            reqs.append({"block": int.from_bytes(ct, "big"), "op": 1, "slot": slot,
                         "tag": len(reqs)})
            expected.append(int.from_bytes(pt, "big"))
    _, res = run_core(make(kind, key_slots=3), requests=loads + reqs)
    got = {t: b for _, b, t in res}
    assert [got[t] for t in range(len(reqs))] == expected


@kinds
@pytest.mark.parametrize("nbytes", [16, 32])
def test_twelve_in_flight_then_slot_reuse(kind, nbytes):
    """12 requests are accepted in 12 consecutive cycles, each completes after exactly the
    documented latency, and the 13th waits for a free ring slot (12 Nr cycles after the first)."""
    key = bytes(range(nbytes))
    nr = model.num_rounds(nbytes * 8)
    rng = random.Random(nbytes)
    reqs = [{"block": rng.getrandbits(128), "op": n % 2, "slot": 0, "tag": n} for n in range(14)]
    acc, res = run_core(make(kind), requests=load(kind, key) + reqs)
    cycles = [c for c, _ in acc]
    assert cycles[:12] == list(range(cycles[0], cycles[0] + 12))
    assert cycles[12] == cycles[0] + 12 * nr
    done = {t: c for c, _, t in res}
    for (c, req), (_, block, tag) in zip(acc, res, strict=True):
        assert done[req["tag"]] - c == latency(nr)
        assert block == reference(reqs[tag], [key])
    assert latency(nr) == {10: 115, 14: 163}[nr]


@kinds
def test_unloaded_slot_uses_zero_key(kind):
    """Before any key is loaded every slot holds the all-zero AES-128 key: no garbage, no hang."""
    reqs = [{"block": PT, "op": 0, "slot": 1, "tag": 3}]
    _, res = run_core(make(kind, key_slots=2), requests=reqs)
    assert res[0][1:] == (model.encrypt_block(bytes(16), PT), 3)


@datapath_only
def test_backpressure_loses_nothing(kind):
    key = bytes(range(16))
    rng = random.Random(3)
    reqs = [{"block": rng.getrandbits(128), "op": rng.randrange(2), "slot": 0, "tag": n}
            for n in range(40)]
    pattern = [rng.random() < 0.3 for _ in range(4000)]
    _, res = run_core(make(kind), requests=load(kind, key) + reqs,
                      o_ready=lambda c: pattern[c % len(pattern)])
    # equal key lengths: results come out in request order
    assert [t for _, _, t in res] == list(range(40))
    assert all(b == reference(reqs[t], [key]) for _, b, t in res)


@datapath_only
def test_key_reload_waits_for_blocks_in_flight(kind):
    k1, k2 = bytes(range(16)), bytes(range(100, 132))
    first = [{"block": n * 0x1111, "op": n % 2, "slot": 0, "tag": n} for n in range(6)]
    second = [{"block": n * 0x2222, "op": n % 2, "slot": 0, "tag": 6 + n} for n in range(6)]
    _, res = run_core(make(kind), requests=load(kind, k1) + first + load(kind, k2) + second)
    got = {t: b for _, b, t in res}
    for r in first:
        assert got[r["tag"]] == reference(r, [k1])
    for r in second:
        assert got[r["tag"]] == reference(r, [k2])


def _random_traffic(kind, data):
    """Random interleavings of ops, key slots and key lengths, input gaps and output stalls."""
    key_slots = 3
    keys = [data.draw(st.sampled_from([16, 24, 32]).flatmap(
        lambda n: st.binary(min_size=n, max_size=n))) for _ in range(key_slots)]
    n = data.draw(st.integers(1, 30))
    reqs = [{"block": data.draw(st.integers(0, (1 << 128) - 1)),
             "op": data.draw(st.integers(0, 1)),
             "slot": data.draw(st.integers(0, key_slots - 1)),
             "tag": i,
             "wait": data.draw(st.sampled_from([0, 0, 0, 1, 5]))} for i in range(n)]
    stall = data.draw(st.lists(st.booleans(), min_size=1, max_size=50))
    loads = [item for slot, key in enumerate(keys) for item in load(kind, key, slot)]
    # a reload of one slot in the middle of the traffic
    new_key = data.draw(st.binary(min_size=16, max_size=16))
    at = data.draw(st.integers(0, n))
    reload_slot = data.draw(st.integers(0, key_slots - 1))
    items = reqs[:at] + load(kind, new_key, reload_slot) + reqs[at:]
    _, res = run_core(make(kind, key_slots=key_slots), requests=loads + items,
                      o_ready=lambda c: stall[c % len(stall)] or c % 7 == 0)
    assert sorted(t for _, _, t in res) == list(range(n))
    after = list(keys)
    after[reload_slot] = new_key
    for _, block, tag in res:
        assert block == reference(reqs[tag], keys if tag < at else after)


@datapath_only
@settings(max_examples=3, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_traffic(kind, data):
    _random_traffic(kind, data)


@pytest.mark.slow
@datapath_only
@settings(max_examples=300, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_traffic_exhaustive(kind, data):
    """The same, 300 examples per entry point (python -m pytest -m slow)."""
    _random_traffic(kind, data)


def test_reload_of_one_slot_does_not_stall_another():
    """While slot 1 is reloaded, slot 0 requests keep being accepted back to back; the next
    slot 1 request waits for the whole new schedule (key_load_cycles)."""
    k0, k1, k1_new = bytes(range(16)), bytes(range(16, 32)), bytes(range(32, 64))
    slot0 = [{"block": n, "op": n % 2, "slot": 0, "tag": n} for n in range(8)]
    probe = {"block": 99, "op": 0, "slot": 1, "tag": 9}
    items = load("core", k0, 0) + load("core", k1, 1) + load("core", k1_new, 1) + slot0 + [probe]
    acc, res = run_core(make("core", key_slots=2), requests=items)
    cycles = [c for c, _ in acc]
    assert cycles[:8] == list(range(cycles[0], cycles[0] + 8))
    # The slot 1 reload began no later than the first slot 0 request, which follows the key
    # transfer (its last word is taken 1 + 9 (Nk - 1) = 64 cycles in); the probe waits for it.
    assert cycles[8] - cycles[0] >= key_load_cycles(256) - 64 - 1
    got = {t: b for _, b, t in res}
    assert got[9] == model.encrypt_block(k1_new, 99)
    assert all(got[r["tag"]] == reference(r, [k0]) for r in slot0)


def test_zeroize_leaves_zero_round_keys():
    """After a zeroize transfer the slot computes AES rounds with all-zero round keys: the
    round-key memory holds zeros, not the old key's schedule (nor the zero key's)."""
    key = bytes(range(16))
    zeroize = [{"key": {"key": 0, "key_bits": 0, "slot": 0, "zeroize": 1}}]
    reqs = [{"block": PT, "op": 0, "slot": 0, "tag": 1}]
    _, res = run_core(make("core"), requests=load("core", key) + zeroize + reqs)
    state = PT
    for r in range(1, 11):
        state = model.shift_rows(model.sub_bytes(state))
        if r < 10:
            state = model.mix_columns(state)
    assert res[0][1] == state
    assert state != model.encrypt_block(bytes(16), PT)


def _sub_word(w):
    return int.from_bytes(bytes(model.SBOX[b] for b in w.to_bytes(4, "big")), "big")


@pytest.mark.parametrize("key_slots", [1, 5])
def test_tables_turn_a_word_into_its_function(key_slots):
    """For a word a whose byte j addresses column j, the XOR of the four columns' entries is
    f(a) ^ a for SubWord(RotWord(a)), SubWord(a) and InvMixColumns(a); and the tables do not
    reach into the round keys."""
    lay = TableLayout(key_slots, (128, 192, 256))
    cols = [lay.tables(j) for j in range(4)]
    assert min(min(c) for c in cols) >= lay.key_words == 32 * key_slots
    assert max(max(c) for c in cols) < lay.depth

    def lookup(base, a):
        x = 0
        for j, col in enumerate(cols):
            x ^= col[base + ((a >> (24 - 8 * j)) & 0xFF)]
        return x ^ a

    rng = random.Random(key_slots)
    for a in [0, 0xFFFFFFFF, 0x01020304] + [rng.getrandbits(32) for _ in range(200)]:
        rot = ((a << 8) | (a >> 24)) & 0xFFFFFFFF
        assert lookup(lay.srot, a) == _sub_word(rot)
        assert lookup(lay.snorot, a) == _sub_word(a)
        assert lookup(lay.imc, a) == model.inv_mix_column(a)


@pytest.mark.parametrize("bits", [128, 192, 256])
def test_round_constants_where_the_word_reads_them(bits):
    """Word i = q Nk takes Rcon[q] from column RCON_COLUMN at the index of w[i - Nk]; every
    other misc word of every column reads zero."""
    lay = TableLayout(1, (bits,))
    nk = bits // 32
    nksel = {128: 0, 192: 1, 256: 2}[bits]
    rc, want = 1, {}
    for i in range(nk, 4 * (model.num_rounds(bits) + 1), nk):
        want[lay.misc + (nksel << 5) + 16 + (i - nk) // 4] = rc << 24
        rc = model.xtime(rc)
    for j in range(4):
        misc = {a: v for a, v in lay.tables(j).items() if a < lay.misc + 128 and v}
        assert misc == (want if j == RCON_COLUMN else {})


@pytest.mark.parametrize("bits", [128, 192, 256])
def test_key_load_cycles(bits):
    """A key offered to an idle core in cycle 0: a request for its slot offered with it is
    accepted exactly key_load_cycles(bits) cycles later, and uses the new key."""
    key = bytes(range(bits // 8))
    req = {"block": PT, "op": 1, "slot": 0, "tag": 1}
    acc, res = run_core(make("core"), requests=load("core", key) + [req])
    assert acc[0][0] == key_load_cycles(bits)
    assert res[0][1] == model.decrypt_block(key, PT)
    assert [key_load_cycles(b) for b in (128, 192, 256)] == [387, 447, 528]


@pytest.mark.parametrize("depth", [1, 5, 16])
def test_result_fifo_matches_a_queue_cycle_by_cycle(depth):
    """The output FIFO against a Python queue, every cycle: ``r_rdy`` and ``r_data`` show the
    oldest word from the cycle after its write, writes (while there is room, as the datapath
    guarantees, or with a read when full) and reads at random, simultaneous ones included,
    full and empty reached."""
    rng = random.Random(depth)
    dut = ResultFIFO(width=8, depth=depth)
    queue, seen = [], {"full": 0, "both": 0}

    async def bench(ctx):
        for _ in range(600):
            assert ctx.get(dut.r_rdy) == bool(queue)
            if queue:
                assert ctx.get(dut.r_data) == queue[0]
            read = rng.random() < 0.5
            write = (len(queue) < depth or read) and rng.random() < 0.55
            word = rng.getrandbits(8)
            ctx.set(dut.w_en, write)
            ctx.set(dut.w_data, word)
            ctx.set(dut.r_en, read)
            await ctx.tick()
            seen["both"] += write and read and bool(queue)
            if read and queue:
                queue.pop(0)
            if write:
                queue.append(word)
            seen["full"] += len(queue) == depth

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert seen["full"] and seen["both"]
