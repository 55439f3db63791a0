"""What only the T-table cores have: the T-table itself, their declared figures, their
parameters; and, ``slow``, the full ten-round unroll (FIPS-197 at the declared latency, one
block a cycle), three slots with reloads, long random runs (with
one and five unrolled stages) and the synthesis targets. FIPS-197, latency, throughput and
back-pressure of every core in its quick configuration are the conformance suite's
(``tests/test_core_conformance.py``)."""

import random
import subprocess
import sys
from fractions import Fraction

import pytest
from test_model import ECB_38A, PT_38A  # SP 800-38A F.1 vectors, checked there

from aes_fpga import model
from aes_fpga.cores import CORES, make_core
from aes_fpga.cores.ttable.construct import t_table
from aes_fpga.sim.cxxsim import mark_used
from aes_fpga.sim.traffic import run_core

FIPS = {bits: (bytes(k), model.to_int(pt), model.to_int(ct))
        for bits, (k, pt, ct) in model.FIPS197_EXAMPLES.items()}

TTABLE_CORES = [name for name in CORES if name.startswith("ttable-")]
cores = pytest.mark.parametrize("name", TTABLE_CORES)
# Small enough to simulate in a second: the unrolled core with one stage (blocks loop).
SMALL = {"ttable-unrolled": {"unroll": 1}}


def make(name, **options):
    return make_core(name, **{**SMALL.get(name, {}), **options})


def load(key, slot=0):
    return [{"key": {"key": int.from_bytes(key.ljust(32, b"\0"), "big"),
                     "key_bits": {16: 0, 24: 1, 32: 2}[len(key)], "slot": slot}}]


def reference(req, keys):
    f = model.encrypt_block if req["op"] == 0 else model.decrypt_block
    return f(keys[req["slot"]], req["block"])


def test_t_table_is_the_round_function():
    """Row k of a column is T0 rotated by k bytes: the XOR of the four rotated lookups plus the
    key is the model's round (and the last-round table gives SubBytes alone)."""
    table = t_table()
    rng = random.Random(1)
    for op, (sbox, mix) in enumerate(((model.SBOX, model.mix_column),
                                      (model.INV_SBOX, model.inv_mix_column))):
        for _ in range(20):
            col = rng.randbytes(4)
            for last in (0, 1):
                acc = 0
                for k in range(4):
                    w = table[(op << 9) | (last << 8) | col[k]]
                    acc ^= ((w >> 8 * k) | (w << (32 - 8 * k))) & 0xFFFFFFFF
                expected = int.from_bytes(bytes(sbox[b] for b in col), "big")
                if not last:
                    expected = mix(expected)
                assert acc == expected


def test_package_loads_its_modules_when_asked():
    """Importing the T-table package loads no HDL; each name it offers comes from its own
    module, the one the table of cores names."""
    code = ("import sys, aes_fpga.cores.ttable; print(sorted(m for m in sys.modules "
            "if m.startswith(('amaranth', 'aes_fpga.cores.'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['aes_fpga.cores.ttable']"
    import aes_fpga.cores.ttable as package
    for name in package.__all__:
        assert getattr(package, name) is not None, name
    for entry in (CORES[name] for name in TTABLE_CORES):
        cls = getattr(package, entry.cls)
        assert cls.__module__ == f"aes_fpga.cores.{entry.module}"


def fips_run(core):
    """FIPS-197 C.1-C.3 keys in slots 0-2, each block encrypted and decrypted: the latency of
    each request, and its key length."""
    items, reqs, expected, bits = [], [], [], []
    for slot, (b, (key, pt, ct)) in enumerate(FIPS.items()):
        items += load(key, slot)
        for op, src, dst in ((0, pt, ct), (1, ct, pt)):
            reqs.append({"block": src, "op": op, "slot": slot, "tag": len(reqs)})
            expected.append(dst)
            bits.append(b)
    acc, res = run_core(core, requests=items + reqs)
    got = {t: (c, b) for c, b, t in res}
    accepted = {r["tag"]: c for c, r in acc}
    assert [got[t][1] for t in range(len(reqs))] == expected
    return [got[t][0] - accepted[t] for t in range(len(reqs))], bits


@pytest.mark.slow
def test_full_unroll_fips197_at_declared_latency():
    core = make_core("ttable-unrolled", key_slots=3)
    latencies, bits = fips_run(core)
    assert latencies == [core.latency(b) for b in bits]


def throughput(core, bits):
    """Saturating traffic: the acceptance cycles repeat with the declared period, and every
    result comes at the declared latency."""
    key = bytes(range(bits // 8))
    rate = core.blocks_per_cycle(bits)
    k = core.blocks_in_flight
    count = 2 * k + 2
    rng = random.Random(bits)
    reqs = [{"block": rng.getrandbits(128), "op": n % 2, "slot": 0, "tag": n % 256}
            for n in range(count)]
    acc, res = run_core(core, requests=load(key) + reqs)
    cycles = [c for c, _ in acc]
    # The pipeline fills, then takes one block for each that leaves: K blocks every K / rate
    # cycles.
    assert cycles[k - 1] - cycles[0] < k / rate
    assert all(cycles[n + k] - cycles[n] == k / rate for n in range(count - k))
    assert [c for c, _, _ in res] == [c + core.latency(bits) for c in cycles]
    assert all(b == reference(reqs[n], [key]) for n, (_, b, _) in enumerate(res))


@pytest.mark.slow
def test_full_unroll_one_block_per_cycle():
    core = make_core("ttable-unrolled", key_sizes=(128,))
    assert core.blocks_per_cycle(128) == 1 and core.unroll == 10
    throughput(core, 128)


def test_declared_figures():
    cores = [make_core(n, **o) for n, o in (("ttable-round", {}), ("ttable-basic", {}),
                                             ("ttable-unrolled", {}),
                                             ("ttable-unrolled", {"unroll": 5}))]
    mark_used(cores)
    rnd, basic, full, half = cores
    assert [rnd.latency(b) for b in (128, 192, 256)] == [82, 98, 114]
    assert rnd.blocks_per_cycle(128) == Fraction(8, 80)
    assert [basic.latency(b) for b in (128, 192, 256)] == [86, 102, 118]
    assert basic.blocks_per_cycle(128) == Fraction(2, 80)
    assert full.unroll == 14 and [full.blocks_per_cycle(b) for b in (128, 192, 256)] == [1] * 3
    # 5 stages: AES-128 enters at stage 0 (2 passes), AES-192 at 3 (3), AES-256 at 1 (3)
    assert [half.blocks_per_cycle(b) for b in (128, 192, 256)] == [Fraction(1, 2),
                                                                   Fraction(1, 3),
                                                                   Fraction(1, 3)]


@pytest.mark.slow
@cores
def test_three_slots_three_key_sizes_and_reload(name):
    """SP 800-38A keys of 128/192/256 bits in three slots, both directions interleaved; then
    slot 0 reloaded while blocks are in flight: the earlier blocks keep the old key."""
    keys = [key for key, _ in ECB_38A]
    items = [item for slot, key in enumerate(keys) for item in load(key, slot)]
    reqs, expected = [], []
    for slot, (_, cts) in enumerate(ECB_38A):
        for pt, ct in list(zip(PT_38A, cts, strict=True))[:2]:
            for op, src, dst in ((0, pt, ct), (1, ct, pt)):
                reqs.append({"block": int.from_bytes(src, "big"), "op": op, "slot": slot,
                             "tag": len(reqs)})
                expected.append(int.from_bytes(dst, "big"))
    new_key = bytes(range(100, 116))
    after = [{"block": 0x1234 * n, "op": n % 2, "slot": 0, "tag": 100 + n} for n in range(3)]
    _, res = run_core(make(name, key_slots=3),
                      requests=items + reqs + load(new_key, 0) + after)
    got = {t: b for _, b, t in res}
    assert [got[t] for t in range(len(reqs))] == expected
    assert all(got[r["tag"]] == reference(r, [new_key]) for r in after)


@cores
def test_bad_parameters_fail_before_anything_is_built(name):
    bads = [{"key_slots": 0}, {"tag_width": 65}, {"fifo_depth": 0}, {"key_sizes": (100,)}]
    if name == "ttable-unrolled":
        bads += [{"unroll": 0}, {"unroll": 11, "key_sizes": (128,)}]
    for bad in bads:
        with pytest.raises(ValueError):
            make_core(name, **bad)


# The paper's modules (Table 2) have neither key schedule nor key storage nor output FIFO: the
# targets bound the datapath and its control. (core, options, part, LUT, FF, BRAM36, DSP)
SYNTH_TARGETS = [
    ("ttable-round", {"key_sizes": (128,)}, "xc7a35tcsg324-1", 250, 650, 8, 16),
    # 80 block RAMs and 160 DSP48E1 exceed the xc7a35t (50 / 90)
    ("ttable-unrolled", {"key_sizes": (128,)}, "xc7a200tsbg484-1", 800, None, 80, 160),
]


def datapath_figures(name, options, part):
    from aes_fpga.flow.synth import Utilization, group_modules, synthesize

    core = make_core(name, **options)
    result = synthesize(core, part, hierarchy=True)
    groups = group_modules(result.modules, type(core).RESOURCE_GROUPS)
    parts = [groups["datapath"], groups.get("control", Utilization())]
    return {"lut_total": sum(g.lut_total for g in parts), "ff": sum(g.ff for g in parts),
            "bram36_equiv": sum(g.bram36_equiv for g in parts), "dsp": sum(g.dsp for g in parts)}


@pytest.mark.slow
@pytest.mark.parametrize(("name", "options", "part", "lut", "ff", "bram", "dsp"), SYNTH_TARGETS,
                         ids=[t[0] for t in SYNTH_TARGETS])
def test_synthesis_within_targets(name, options, part, lut, ff, bram, dsp):
    figures = datapath_figures(name, options, part)
    assert figures["lut_total"] <= lut, figures
    assert ff is None or figures["ff"] <= ff, figures
    assert figures["bram36_equiv"] == bram and figures["dsp"] == dsp, figures


RANDOM_CASES = [(name, SMALL.get(name, {})) for name in TTABLE_CORES] + [
    # five stages: AES-128 enters at stage 0, AES-192 at 3, AES-256 at 1
    ("ttable-unrolled", {"unroll": 5})]


@pytest.mark.slow
@pytest.mark.parametrize(("name", "options"), RANDOM_CASES,
                         ids=[f"{n}-{o}" for n, o in RANDOM_CASES])
@pytest.mark.parametrize("seed", range(3))
def test_random_traffic_long(name, options, seed):
    """Random ops, slots, key lengths, input gaps and output stalls; every result right, none
    lost, each slot's results in request order."""
    rng = random.Random(seed)
    keys = [rng.randbytes(rng.choice([16, 24, 32])) for _ in range(3)]
    items = [item for slot, key in enumerate(keys) for item in load(key, slot)]
    reqs = [{"block": rng.getrandbits(128), "op": rng.randrange(2), "slot": rng.randrange(3),
             "tag": n, "wait": rng.choice([0, 0, 0, 1, 5])} for n in range(60)]
    pattern = [rng.random() < 0.6 for _ in range(997)]
    _, res = run_core(make_core(name, key_slots=3, tag_width=8, **options),
                      requests=items + reqs,
                      o_ready=lambda c: pattern[c % len(pattern)], max_cycles=40000)
    assert sorted(t for _, _, t in res) == list(range(60))
    assert all(b == reference(reqs[t], keys) for _, b, t in res)
    for slot in range(3):
        tags = [t for _, _, t in res if reqs[t]["slot"] == slot]
        assert tags == sorted(tags)
