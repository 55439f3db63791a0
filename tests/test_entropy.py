"""The entropy source in simulation: the noise model, the conditioning against its Python model
and OpenSSL, start-up, failures caught and latched, cycles per output word."""

import math
import random

import pytest
from amaranth.sim import Simulator
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from stream_drivers import run_streams_with_gaps

from aes_fpga import model as aes_model
from aes_fpga.cores.compact8 import key_load_cycles
from aes_fpga.entropy import CbcMacConditioner, EntropySource, EntropyState
from aes_fpga.entropy.conditioning import DEFAULT_KEY, cbc_mac, condition, pack_bits
from aes_fpga.entropy.cutoffs import STARTUP_SAMPLES, apt_failures, rct_failures
from aes_fpga.entropy.health import HEALTH_LATENCY
from aes_fpga.primitives import NoiseModel, RingOscillator


@pytest.mark.parametrize("model", [
    NoiseModel(), NoiseModel("stuck", value=1, onset=5), NoiseModel("biased", p=0.8, seed=7),
    NoiseModel("periodic", period=5, onset=3)], ids=lambda m: m.kind)
def test_noise_model_gateware_matches_its_bits(model):
    dut = RingOscillator(5, model=model)
    got = []

    async def bench(ctx):
        ctx.set(dut.en, 1)
        for _ in range(300):
            await ctx.tick()
            got.append(ctx.get(dut.o))

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert got == model.bits(300)


def test_noise_model_statistics():
    assert sum(NoiseModel(seed=5).bits(20000)) == pytest.approx(10000, abs=5 * 71)
    assert sum(NoiseModel("biased", p=0.8, seed=5).bits(20000)) == pytest.approx(16000,
                                                                                 abs=5 * 57)
    assert NoiseModel("periodic", period=4).bits(8) == [0, 0, 1, 1, 0, 0, 1, 1]
    assert NoiseModel("stuck", value=1, onset=3).bits(6)[3:] == [1, 1, 1]


def test_noise_parameters_refused_with_their_names():
    for kwargs, name in [({"kind": "noisy"}, "kind"), ({"seed": 0}, "seed"), ({"p": 1.5}, "p"),
                         ({"value": 2}, "value"), ({"period": 1}, "period"),
                         ({"onset": -1}, "onset")]:
        with pytest.raises(ValueError, match=f"^{name}: "):
            NoiseModel(**kwargs)
    for length in (4, 1, 65):
        with pytest.raises(ValueError, match="^length: "):
            RingOscillator(length)
    with pytest.raises(ValueError, match="^sample_period: "):
        EntropySource(sample_period=0)
    with pytest.raises(ValueError, match="^alpha: "):
        EntropySource(alpha=2 ** -10)


def test_cbc_mac_model_is_openssl_cbc():
    rng = random.Random(4)
    key = rng.randbytes(16)
    blocks = [rng.getrandbits(128) for _ in range(3)]
    data = b"".join(b.to_bytes(16, "big") for b in blocks)
    enc = Cipher(algorithms.AES(key), modes.CBC(bytes(16))).encryptor()
    last = (enc.update(data) + enc.finalize())[-16:]
    assert cbc_mac(key, blocks) == int.from_bytes(last, "big")
    # The default key: AES-128 of the block 1 under the zero key.
    enc = Cipher(algorithms.AES(bytes(16)), modes.ECB()).encryptor()
    assert DEFAULT_KEY == enc.update((1).to_bytes(16, "big")) + enc.finalize()


def test_bits_pack_first_bit_most_significant():
    bits = [1] + [0] * 126 + [1] + [1] * 5
    assert pack_bits(bits) == [(1 << 127) | 1]
    assert condition(bits, 1) == [cbc_mac(DEFAULT_KEY, [(1 << 127) | 1])]


def test_conditioner_matches_model_bit_for_bit():
    """Bits with random gaps in, words with random back-pressure out: every word is the
    model's CBC-MAC of its 2 x 128 bits."""
    rng = random.Random(7)
    bits = [rng.getrandbits(1) for _ in range(3 * 256)]
    dut = CbcMacConditioner(2)
    got, = run_streams_with_gaps(dut, [(dut.i, bits)], [(dut.o, 3, None)], rng=rng,
                                 max_cycles=6000)
    assert got == condition(bits, 2)


def verdict_cycle(sample, period=1):
    """The cycle from which ``state`` shows the verdict on raw sample number ``sample``: the
    sample is presented in cycle ``sample * period``, the tests' ``fail`` shows the verdict
    :data:`~aes_fpga.entropy.health.HEALTH_LATENCY` cycles later, and the state is registered."""
    return sample * period + HEALTH_LATENCY + 1


def run_source(dut, cycles, *, ready=lambda cycle: True):
    """Simulate ``dut`` for ``cycles``; per cycle what it showed (a dict of lists), with the
    words taken from ``o`` and the cycles they were taken in."""
    trace = {k: [] for k in ("state", "valid", "sample", "sample_valid", "used", "rct", "apt")}
    words = []

    async def bench(ctx):
        for cycle in range(cycles):
            ctx.set(dut.o.ready, ready(cycle))
            for key, sig in (("state", dut.state), ("valid", dut.o.valid),
                             ("sample", dut.sample), ("sample_valid", dut.sample_valid),
                             ("used", dut.sample_used), ("rct", dut.rct_failures),
                             ("apt", dut.apt_failures)):
                trace[key].append(ctx.get(sig))
            if ctx.get(dut.o.valid) and ready(cycle):
                words.append((cycle, ctx.get(dut.o.payload)))
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    trace["samples"] = [s for s, v in zip(trace["sample"], trace["sample_valid"], strict=True) if v]
    trace["used_bits"] = [s for s, u in zip(trace["sample"], trace["used"], strict=True) if u]
    return trace, words


def test_healthy_source_starts_up_then_streams_conditioned_words():
    dut = EntropySource()
    assert (dut.blocks, dut.samples_per_word) == (3, 384)
    trace, words = run_source(dut, 3100)
    ok_at = trace["state"].index(EntropyState.OK)
    # Start-up: 1024 samples tested (one a cycle), the verdict on the last HEALTH_LATENCY
    # cycles later, the state a cycle after that; nothing offered or used before.
    assert ok_at == verdict_cycle(STARTUP_SAMPLES - 1)
    assert set(trace["state"][:ok_at]) == {EntropyState.STARTUP}
    assert not any(trace["valid"][:ok_at]) and not any(trace["used"][:ok_at])
    assert set(trace["state"][ok_at:]) == {EntropyState.OK}
    assert trace["rct"][-1] == trace["apt"][-1] == 0
    # Bit for bit: each word is the CBC-MAC of the samples used, in order.
    assert len(words) >= 2
    assert [w for _, w in words] == condition(trace["used_bits"], 3)[:len(words)]
    # Cycles: one sample a cycle is faster than the core, which sets the pace, one block at a
    # time (one AES call in flight, each waiting for the core's 16-cycle round slot): a word
    # every 3 calls, the same every time; samples arriving while both registers are full are
    # tested and dropped.
    latency = dut.conditioner.core.latency(128)
    gaps = {c1 - c0 for (c0, _), (c1, _) in zip(words, words[1:], strict=False)}
    assert len(gaps) == 1 and 3 * latency <= gaps.pop() <= 3 * (latency + 2 * 16)
    assert sum(trace["used"][words[0][0]:words[1][0]]) == 384
    assert words[0][0] > ok_at + 384


def test_cycles_per_word_follow_the_sample_period():
    """A raw sample every 2 cycles: 256 cycles collect a block, more than the core needs for
    the one before, so a word leaves every 3 x 256 cycles exactly, every sample from ``OK`` on
    used (one comes between the last start-up sample and its verdict: tested, not used)."""
    dut = EntropySource(sample_period=2)
    trace, words = run_source(dut, 2 * STARTUP_SAMPLES + 3 * 768 + 400)     # three words
    ok_at = trace["state"].index(EntropyState.OK)
    assert ok_at == verdict_cycle(STARTUP_SAMPLES - 1, 2)
    gaps = [c1 - c0 for (c0, _), (c1, _) in zip(words, words[1:], strict=False)]
    assert len(gaps) >= 2 and set(gaps) == {3 * 128 * 2}
    assert sum(trace["used"]) == sum(trace["sample_valid"][ok_at:])
    assert sum(trace["sample_valid"][:ok_at]) == STARTUP_SAMPLES + 1
    assert [w for _, w in words] == condition(trace["used_bits"], 3)[:len(words)]


def test_stuck_source_caught_by_rct_within_its_cutoff():
    dut = EntropySource(model=NoiseModel("stuck", value=1))
    trace, words = run_source(dut, 400)
    samples = trace["samples"]
    first_one = samples.index(1)
    fails = rct_failures(samples, dut.rct_cutoff)
    assert fails[0] == first_one + dut.rct_cutoff - 1
    failed_at = trace["state"].index(EntropyState.FAILED)
    assert failed_at == verdict_cycle(fails[0])
    assert EntropyState.OK not in trace["state"] and words == []
    assert trace["rct"][-1] == len(fails) >= 2 and trace["apt"][-1] == 0


def test_biased_source_caught_by_apt_within_its_window():
    """P(1) = 0.15: min-entropy 0.23 per sample against a claimed 0.5. The first window
    (starting with a 0, as the synchronisers read after reset) counts about 870 zeros against
    a cutoff of 810 and fails within it, during start-up; no run reaches the RCT's 61."""
    dut = EntropySource(model=NoiseModel("biased", p=0.15, seed=3))
    trace, words = run_source(dut, 1024 + 10)
    samples = trace["samples"]
    fails = apt_failures(samples, dut.apt_cutoff)
    assert samples[0] == 0 and rct_failures(samples, dut.rct_cutoff) == [] and fails
    assert fails[0] < 1024
    assert trace["state"].index(EntropyState.FAILED) == verdict_cycle(fails[0])
    assert EntropyState.OK not in trace["state"] and words == []
    assert trace["apt"][-1] == len(fails) and trace["rct"][-1] == 0


def test_periodic_failures_and_what_the_tests_cannot_see():
    """A square wave with runs as long as the RCT's cutoff is caught; a period of 2 (0101...)
    has no runs and exact proportions: it passes both tests, and the source reports OK. The
    health tests catch gross failures of the source, not every loss of entropy."""
    dut = EntropySource(model=NoiseModel("periodic", period=2 * 61))
    trace, _ = run_source(dut, 200)
    assert trace["state"][-1] == EntropyState.FAILED and trace["rct"][-1] >= 1
    dut = EntropySource(model=NoiseModel("periodic", period=2))
    trace, _ = run_source(dut, STARTUP_SAMPLES + 10)
    assert trace["state"][-1] == EntropyState.OK


def test_failure_in_service_latches_and_withdraws_the_waiting_word():
    """The source goes stuck after 2400 healthy bits, while a word waits on ``o`` (ready held
    low from cycle 1900): the word is withdrawn, ``o`` stays quiet, ``FAILED`` holds to the
    end, and the counter counts every failure event the tests go on seeing."""
    dut = EntropySource(model=NoiseModel("stuck", value=0, onset=2400))
    trace, words = run_source(dut, 3400, ready=lambda c: c < 1900)
    failed_at = trace["state"].index(EntropyState.FAILED)
    assert words and all(c < 1900 for c, _ in words)
    assert trace["valid"][failed_at - 1] == 1      # a word was waiting...
    assert not any(trace["valid"][failed_at:])     # ...and is gone for good
    assert set(trace["state"][failed_at:]) == {EntropyState.FAILED}
    fails = rct_failures(trace["samples"], dut.rct_cutoff)
    assert failed_at == verdict_cycle(fails[0])
    assert trace["rct"][-1] == len(fails) >= 10


def test_startup_with_key_load_and_counters_from_reset():
    dut = EntropySource()
    trace, _ = run_source(dut, 8)
    assert trace["state"] == [EntropyState.STARTUP] * 8
    assert trace["rct"] == trace["apt"] == [0] * 8
    # The conditioner's key is loaded during start-up, long before it is needed.
    assert key_load_cycles(128) < STARTUP_SAMPLES


def monobit_and_runs_ok(bits, sigmas=4.0):
    """Frequency (monobit) and Wald-Wolfowitz runs checks: both within ``sigmas`` of what
    independent fair bits give."""
    n = len(bits)
    ones = sum(bits)
    if abs(ones - n / 2) > sigmas * math.sqrt(n) / 2:
        return False
    p = ones / n
    runs = 1 + sum(a != b for a, b in zip(bits, bits[1:], strict=False))
    mean = 2 * n * p * (1 - p) + 1
    sd = math.sqrt(max(2 * n * p * (1 - p) * (2 * n * p * (1 - p) - 1) / (n - 1), 1e-9))
    return abs(runs - mean) <= sigmas * sd


@pytest.mark.slow
def test_conditioned_output_passes_sanity_checks():
    """Not a claim of entropy (the simulated source is a PRNG): a check of the wiring. The
    conditioned words pass; the raw bits of a biased source, or a periodic stream, do not.
    (``-m slow``: by default the words are checked bit for bit against the conditioning's
    model, test_healthy_source_starts_up_then_streams_conditioned_words, and two blocks a word
    as here by test_conditioner_matches_model_bit_for_bit; the model against OpenSSL.)"""
    dut = EntropySource(min_entropy=1)      # 2 blocks per word: more words per cycle
    trace, words = run_source(dut, STARTUP_SAMPLES + 12 * 420)
    bits = [int(b) for _, w in words for b in f"{w:0128b}"]
    assert len(bits) >= 10 * 128
    assert monobit_and_runs_ok(bits)
    assert not monobit_and_runs_ok(NoiseModel("biased", p=0.6, seed=1).bits(len(bits)))
    assert not monobit_and_runs_ok([0, 1] * (len(bits) // 2))

def test_conditioning_core_writes_round_keys_through_a_register():
    """The conditioning's compact8 (``registered_key_write``, :data:`CORE_OPTIONS`) against
    the core writing its round keys straight from the logic: the same results in the same
    cycles, with a request right after each key load (two slots, AES-128 and AES-256, both
    ways): the round-key byte written a cycle late is there before anything reads it."""
    from aes_fpga.cores.compact8 import Compact8
    from aes_fpga.entropy.conditioning import CORE_OPTIONS
    from aes_fpga.sim.cxxsim import mark_used
    from aes_fpga.sim.traffic import run_core

    conditioner = CbcMacConditioner()
    mark_used(conditioner)                  # (made to be read)
    assert conditioner.core.registered_key_write
    assert CORE_OPTIONS == {"compact8": {"registered_key_write": True}}
    rng = random.Random(5)
    keys = [rng.randbytes(16), rng.randbytes(32)]
    items = []
    for slot, key in enumerate(keys):
        items.append({"key": {"key": int.from_bytes(key.ljust(32, b"\0"), "big"),
                              "key_bits": 0 if len(key) == 16 else 2, "slot": slot,
                              "zeroize": 0}})
        items += [{"block": rng.getrandbits(128), "op": op, "slot": slot, "tag": 2 * slot + op}
                  for op in (1, 0)]
    runs = [run_core(Compact8(key_slots=2, key_sizes=(128, 256), tag_width=2, **kw),
                     requests=items, max_cycles=2500)
            for kw in ({"registered_key_write": False}, {"registered_key_write": True})]
    assert runs[0] == runs[1]
    reqs = [r for r in items if "block" in r]
    assert [block for _, block, _ in runs[1][1]] == [
        (aes_model.decrypt_block if r["op"] else aes_model.encrypt_block)(keys[r["slot"]],
                                                                           r["block"])
        for r in reqs]
