"""What every core of :data:`aes_fpga.cores.CORES` promises, tested on each one: a core added to the
table is tested here without a new test.

A core says what it supports: ``key_sizes`` (key lengths in bits) and ``ops`` (the
:class:`~aes_fpga.params.Op` values it implements; both directions when it has no ``ops``), and
its figures, ``latency(key_bits)`` and ``blocks_per_cycle(key_bits)``, which are checked against
simulation cycle for cycle.

Cores without a ``key`` stream are left out: ``drab-locus-datapath`` takes precomputed round keys
on its ``rk`` stream, and its own tests (test_core_drab_locus.py) cover it through that stream.
"""

import math
import random
from fractions import Fraction

import pytest
from amaranth.hdl import Const
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shared_dut import shared
from test_model import ECB_38A, PT_38A  # SP 800-38A F.1 vectors, checked there

from aes_fpga import model
from aes_fpga.cores import CORES, make_core
from aes_fpga.params import KeySize, Op
from aes_fpga.sim.cxxsim import mark_used
from aes_fpga.sim.traffic import run_core

PT = model.to_int(model.FIPS197_EXAMPLES[128][1])


#: Key slots of the cores the behavioural tests build: one per key length.
KEY_SLOTS = 3


def _core(name):
    """The core ``name`` as the behavioural tests build it: ``KEY_SLOTS`` key slots and its
    table entry's quick options (``ttable-unrolled`` with 2 round stages, its blocks looping;
    the full unroll has its own slow tests in ``test_core_ttable.py``). One instance per name,
    so all the tests share its simulation (``run_core`` resets it to its initial state each
    time)."""
    return shared(make_core, name, **CORES[name].quick_options, key_slots=KEY_SLOTS)


def _made(name):
    core = _core(name)
    mark_used(core)   # made to read its attributes, not to be simulated
    return core


def _keyed(name):
    return hasattr(_made(name), "key")


NAMES = [name for name in CORES if _keyed(name)]
cores = pytest.mark.parametrize("name", NAMES)


def key_sizes(name):
    return tuple(_made(name).key_sizes)


def ops(name):
    return tuple(getattr(_made(name), "ops", (Op.ENCRYPT, Op.DECRYPT)))


def core_and_size():
    """(core, key bits) for every key length each core supports."""
    return pytest.mark.parametrize(("name", "bits"), [(n, b) for n in NAMES for b in key_sizes(n)],
                                   ids=[f"{n}-{b}" for n in NAMES for b in key_sizes(n)])


def load(key, slot=0):
    """A run_core item loading ``key`` (bytes) into ``slot`` through the key stream."""
    return {"key": {"key": int.from_bytes(key.ljust(32, b"\0"), "big"),
                    "key_bits": KeySize.from_bits(8 * len(key)), "slot": slot}}


def reference(req, keys):
    f = model.encrypt_block if req["op"] == Op.ENCRYPT else model.decrypt_block
    return f(keys[req["slot"]], req["block"])


@pytest.mark.parametrize(("name", "bits"), [
    pytest.param(n, b, id=f"{n}-{b}", marks=() if b == min(key_sizes(n)) else pytest.mark.slow)
    for n in NAMES for b in key_sizes(n)])
def test_fips197_and_latency(name, bits):
    """FIPS-197 Appendix C in every direction the core implements; each result comes exactly
    ``core.latency(bits)`` cycles after its request was accepted.

    The default run takes each core's shortest key; the other key lengths are under ``-m slow``:
    their values in both directions and their latency are checked in the default run by
    ``test_sp800_38a_ecb_in_slots_then_reload`` (a slot per key length)."""
    key, pt, ct = model.FIPS197_EXAMPLES[bits]
    pt, ct = model.to_int(pt), model.to_int(ct)
    reqs = [{"block": (pt, ct)[op], "op": op, "slot": 0, "tag": n}
            for n, op in enumerate(ops(name))]
    core = _core(name)
    acc, res = run_core(core, requests=[load(key)] + reqs)
    assert [(b, t) for _, b, t in res] == [((ct, pt)[r["op"]], r["tag"]) for r in reqs]
    assert [c for c, _, _ in res] == [a + core.latency(bits) for a, _ in acc]


@cores
def test_sp800_38a_ecb_in_slots_then_reload(name):
    """SP 800-38A F.1 ECB, one supported key length per slot, its four blocks in turn in each
    direction the core has; then slot 0 is reloaded with a key of another length (where the
    core has one) and used again. Each result comes ``core.latency(bits)`` cycles after its
    request, ``bits`` the length of its slot's key."""
    sizes = key_sizes(name)
    vectors = [(key, cts) for key, cts in ECB_38A if 8 * len(key) in sizes]
    assert len(vectors) <= KEY_SLOTS
    items, expected = [load(key, slot) for slot, (key, _) in enumerate(vectors)], []
    for slot, (_, cts) in enumerate(vectors):
        for k, (pt, ct) in enumerate(zip(PT_38A, cts, strict=True)):
            op = ops(name)[k % len(ops(name))]
            src, dst = (pt, ct) if op == Op.ENCRYPT else (ct, pt)
            items.append({"block": int.from_bytes(src, "big"), "op": op, "slot": slot,
                          "tag": len(expected)})
            expected.append(int.from_bytes(dst, "big"))
    new_key, new_cts = vectors[-1] if len(vectors) > 1 else (bytes(range(len(vectors[0][0]))),
                                                              None)
    items.append(load(new_key, 0))
    pt = int.from_bytes(PT_38A[0], "big")
    items.append({"block": pt, "op": Op.ENCRYPT, "slot": 0, "tag": len(expected)})
    expected.append(model.encrypt_block(new_key, pt))
    core = _core(name)
    acc, res = run_core(core, requests=items)
    got = {t: b for _, b, t in res}
    assert [got.get(t) for t in range(len(expected))] == expected
    # each result exactly core.latency(bits) after its request, bits those of its slot's key
    # (the reloaded slot 0 holds the last vector's key)
    bits = [8 * len(key) for key, _ in vectors]
    done = {t: c for c, _, t in res}
    assert [done[r["tag"]] - c for c, r in acc] == [
        core.latency(8 * len(new_key) if r["tag"] == len(expected) - 1 else bits[r["slot"]])
        for _, r in acc]


@cores
def test_backpressure_loses_nothing(name):
    """``o`` ready one cycle in three, at random: every result arrives, once, and right."""
    key = bytes(range(16, 16 + min(key_sizes(name)) // 8))
    rng = random.Random(3)
    reqs = [{"block": rng.getrandbits(128), "op": rng.choice(ops(name)), "slot": 0, "tag": n}
            for n in range(16)]
    pattern = [rng.random() < 0.3 for _ in range(4000)]
    _, res = run_core(_core(name), requests=[load(key)] + reqs,
                      o_ready=lambda c: pattern[c % len(pattern)])
    assert sorted(t for _, _, t in res) == list(range(len(reqs)))
    assert all(b == reference(reqs[t], [key]) for _, b, t in res)


def _periodic(cycles, per, span):
    """Whether ``cycles[n + per] - cycles[n] == span`` for every ``n`` of ``cycles``, which hold
    at least two periods."""
    return len(cycles) >= 2 * per and all(
        b - a == span for a, b in zip(cycles, cycles[per:], strict=False))


def _throughput(name, bits):
    """Saturating traffic (requests back to back, ``o`` always ready): after the first result,
    requests are accepted and results leave at exactly ``core.blocks_per_cycle(bits)``: ``p``
    blocks every ``q`` cycles, or ``m p`` every ``m q`` for a core that works in bursts of ``m p``
    (``m p`` up to the blocks in flight, ``latency * blocks_per_cycle`` by Little's law, rounded
    up: DRAB-LOCUS fills its 12 ring slots, ttable-unrolled with 2 round stages its 16, an
    iterative core works on 1)."""
    core = _core(name)
    rate = Fraction(core.blocks_per_cycle(bits))
    p, q = rate.numerator, rate.denominator
    lat = core.latency(bits)
    rng = random.Random(bits)
    key = rng.randbytes(bits // 8)
    # enough blocks for two whole periods of the longest burst after the pipeline filled (the
    # first result)
    longest = max(1, math.ceil(lat * rate / p))
    n = int(lat * rate) + 2 * longest * p + 2
    reqs = [{"block": rng.getrandbits(128), "op": ops(name)[k % len(ops(name))], "slot": 0,
             "tag": k % (1 << len(core.i.payload.tag))} for k in range(n)]
    # (a bound only: the key load, up to a few hundred cycles, comes first)
    acc, res = run_core(core, requests=[load(key)] + reqs, max_cycles=2000 + lat + 2 * n * q)
    assert len(res) == n
    assert [b for _, b, _ in res] == [reference(r, [key]) for r in reqs]
    first_out = res[0][0]
    steady_acc = [c for c, _ in acc if c >= first_out]
    steady_res = [c for c, _, _ in res]
    burst = next((m for m in range(1, longest + 1)
                  if _periodic(steady_acc, m * p, m * q) and _periodic(steady_res, m * p, m * q)),
                 None)
    assert burst is not None, (f"accepted at {steady_acc[:40]}, results at {steady_res[:40]}: "
                               f"not {p} blocks every {q} cycles")


@cores
def test_sustained_throughput(name):
    _throughput(name, min(key_sizes(name)))


@pytest.mark.slow
@core_and_size()
def test_sustained_throughput_every_key_size(name, bits):
    _throughput(name, bits)


def _random_traffic(name, data):
    """Random ops (of those the core has), key slots and supported key lengths, input gaps,
    output stalls, and a reload of one slot in the middle."""
    key_slots = KEY_SLOTS
    sizes, directions = key_sizes(name), ops(name)
    key_of = st.sampled_from(sizes).flatmap(lambda b: st.binary(min_size=b // 8,
                                                                max_size=b // 8))
    keys = [data.draw(key_of) for _ in range(key_slots)]
    n = data.draw(st.integers(1, 8))
    reqs = [{"block": data.draw(st.integers(0, (1 << 128) - 1)),
             "op": data.draw(st.sampled_from(directions)),
             "slot": data.draw(st.integers(0, key_slots - 1)),
             "tag": i,
             "wait": data.draw(st.sampled_from([0, 0, 0, 1, 5]))} for i in range(n)]
    stall = data.draw(st.lists(st.booleans(), min_size=1, max_size=50))
    new_key = data.draw(key_of)
    at = data.draw(st.integers(0, n))
    reload_slot = data.draw(st.integers(0, key_slots - 1))
    items = ([load(k, s) for s, k in enumerate(keys)] + reqs[:at] + [load(new_key, reload_slot)]
             + reqs[at:])
    _, res = run_core(_core(name), requests=items,
                      o_ready=lambda c: stall[c % len(stall)] or c % 7 == 0)
    assert sorted(t for _, _, t in res) == list(range(n))
    after = list(keys)
    after[reload_slot] = new_key
    for _, block, tag in res:
        assert block == reference(reqs[tag], keys if tag < at else after)


@cores
@settings(max_examples=1, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_traffic(name, data):
    _random_traffic(name, data)


@pytest.mark.slow
@cores
@settings(max_examples=300, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_traffic_exhaustive(name, data):
    """The same, 300 examples per core (python -m pytest -m slow)."""
    _random_traffic(name, data)


@pytest.mark.slow
@cores
def test_xilinx_netlist_matches_portable(name, tmp_path):
    """The core, key schedule included, synthesized for a Xilinx part (synth_xilinx) and
    simulated with the cell models: a key loaded through the key stream, then FIPS-197 C.1 in
    every direction the core has, cycle for cycle as the portable elaboration."""
    from aes_fpga.flow.postsynth import find_iverilog, simulate_netlist, simulate_portable
    from aes_fpga.flow.synth import synthesize

    bits = min(key_sizes(name))
    key, pt, ct = model.FIPS197_EXAMPLES[bits]
    pt, ct = model.to_int(pt), model.to_int(ct)
    dut = make_core(name, key_sizes=(bits,), tag_width=2)
    res = synthesize(dut, workdir=tmp_path)
    if find_iverilog() is None:
        pytest.skip("Icarus Verilog (iverilog, vvp) is not installed: synthesized only")

    def bits_of(layout, value):
        return Const.cast(layout.const(value)).value

    # The stimulus is fixed in advance: each transfer is held valid until the portable model
    # takes it (found by simulating the stimulus so far), then dropped.
    def offer(stim, port, payload):
        held = stim + [{f"{port}__valid": 1, f"{port}__payload": payload}] + [{}] * 400
        fresh = make_core(name, key_sizes=(bits,), tag_width=2)
        taken = next(k for k, r in enumerate(simulate_portable(fresh, held))
                     if k >= len(stim) and r[f"{port}__ready"])
        return held[:taken + 1] + [{f"{port}__valid": 0}]

    stim = offer([{"o__ready": 1, "i__valid": 0}], "key", bits_of(
        dut.key.payload.shape(), {"key": int.from_bytes(key.ljust(32, b"\0"), "big"),
                                  "key_bits": KeySize.from_bits(bits), "slot": 0}))
    reqs = [((pt, ct)[op], op, (ct, pt)[op]) for op in ops(name)]
    for tag, (block, op, _) in enumerate(reqs):
        stim = offer(stim, "i", bits_of(dut.i.payload.shape(),
                                        {"block": block, "op": op, "slot": 0, "tag": tag}))
    stim += [{}] * (dut.latency(bits) + 4)
    portable = simulate_portable(dut, stim)
    netlist = simulate_netlist(dut, stim, synth=res)
    for cycle, (got, want) in enumerate(zip(netlist, portable, strict=True)):
        assert got == want, f"cycle {cycle}: netlist {got} != portable {want}"
    outputs = [r["o__payload"] for r in portable if r["o__valid"]]
    assert sorted(outputs) == sorted((tag << 128) | want for tag, (_, _, want) in enumerate(reqs))
