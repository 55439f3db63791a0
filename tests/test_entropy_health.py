"""The SP 800-90B numbers of the entropy source (health-test cutoffs, conditioning length) and
its health tests in gateware against their golden models on crafted sample streams."""

import math
import random
from fractions import Fraction

import pytest
from amaranth.sim import Simulator

from aes_fpga.entropy import AdaptiveProportionTest, RepetitionCountTest
from aes_fpga.entropy.cutoffs import (
    APT_WINDOW,
    apt_cutoff,
    apt_failures,
    binomial_tail,
    check_alpha,
    conditioning_blocks,
    output_entropy_deficit,
    rct_cutoff,
    rct_failures,
)
from aes_fpga.primitives import NoiseModel


def test_rct_cutoff_is_the_standards_formula():
    # C = 1 + ceil(-log2(alpha) / H), exactly (0.1 is one tenth, not a float above it).
    assert rct_cutoff(1, 2 ** -20) == 21
    assert rct_cutoff(0.5, 2 ** -30) == 61
    assert rct_cutoff(0.1, 2 ** -20) == 201
    assert rct_cutoff(0.3, 2 ** -40) == 1 + math.ceil(Fraction(40) / Fraction(3, 10))


def test_apt_cutoff_at_full_entropy_exact():
    """At H = 1 the binomial is exact in integers: C is the smallest count whose tail
    P(Binomial(1024, 1/2) >= C) is at most alpha, and C - 1's is above it."""
    for e in (20, 30, 40):
        c = apt_cutoff(1, 2.0 ** -e)
        tail = [sum(math.comb(APT_WINDOW, k) for k in range(x, APT_WINDOW + 1))
                for x in (c, c - 1)]
        assert tail[0] * 2 ** e <= 2 ** APT_WINDOW < tail[1] * 2 ** e, e


@pytest.mark.parametrize("h", [0.9, 0.5, 0.25, 0.1])
def test_apt_cutoff_is_the_binomial_quantile(h):
    for alpha in (2.0 ** -20, 2.0 ** -40):
        c = apt_cutoff(h, alpha)
        p = 2.0 ** -h
        assert binomial_tail(APT_WINDOW, p, c) <= alpha < binomial_tail(APT_WINDOW, p, c - 1)
    # Lower claimed entropy, looser cutoff; a stricter alpha, looser too.
    assert apt_cutoff(h, 2.0 ** -40) >= apt_cutoff(h, 2.0 ** -20)


def test_parameters_refused_with_their_names():
    for alpha in (2.0 ** -19, 2.0 ** -41, 0.5, "1e-9", True):
        with pytest.raises(ValueError, match=r"alpha: .* out of range; allowed 2\*\*-40 to"):
            check_alpha(alpha)
    for h in (0, -0.5, 1.5):
        with pytest.raises(ValueError, match="min_entropy: .* out of range"):
            rct_cutoff(h, 2 ** -20)
    # So little entropy that a whole window of one value is likely: the test could not fail.
    with pytest.raises(ValueError, match="min_entropy: .* too low .* could never fail"):
        apt_cutoff(0.01, 2 ** -40)
    with pytest.raises(ValueError, match="cutoff"):
        RepetitionCountTest(cutoff=1)
    with pytest.raises(ValueError, match="cutoff"):
        AdaptiveProportionTest(window=16, cutoff=17)


def test_conditioning_length_for_full_entropy():
    """128 k H >= 128 + 64 with the fewest k, and the §3.1.5.1.2 output then short of 128
    bits by less than 128 * 2^-32."""
    assert [conditioning_blocks(h) for h in (1, 0.75, 0.5, 0.25, 0.1)] == [2, 2, 3, 6, 15]
    for h in (1, 0.5, 0.25):
        k = conditioning_blocks(h)
        assert output_entropy_deficit(128 * k, 128 * k * h) < 128 * 2.0 ** -32
    # The formula itself: full-entropy input of one block loses about 3.84 bits (the omega
    # term); input entropy of exactly the output size loses a whole bit.
    assert 3.8 < output_entropy_deficit(128, 128) < 3.9
    assert output_entropy_deficit(256, 128) == pytest.approx(1.0, abs=1e-9)


def run_test(dut, samples, *, seed=0, gap=0.3):
    """Feed ``samples`` into a health test with random idle cycles; the indices of the
    samples on which ``fail`` gave a verdict: a ``fail`` seen ``dut.latency`` cycles after the
    cycle a sample was presented in is that sample's (one seen after an idle cycle, or with
    any other delay, is in the wrong place and names no sample)."""
    rng = random.Random(seed)
    fails = []
    presented = []                     # per cycle: the sample's index, or None (idle)

    async def bench(ctx):
        def cycle(index):
            presented.append(index)
            if ctx.get(dut.fail):
                # The cycle just ended is len(presented) - 1; fail shows in the one after it.
                fails.append(presented[len(presented) - dut.latency])

        for n, s in enumerate(samples):
            while rng.random() < gap:
                ctx.set(dut.valid, 0)
                await ctx.tick()
                cycle(None)
            ctx.set(dut.sample, s)
            ctx.set(dut.valid, 1)
            await ctx.tick()
            cycle(n)
        ctx.set(dut.valid, 0)
        for _ in range(dut.latency + 1):
            await ctx.tick()
            cycle(None)

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    # A verdict after an idle cycle would be in the wrong place.
    assert None not in fails
    return fails


def crafted_stream(rng, n):
    """Random bits with long runs and lopsided stretches mixed in."""
    out = []
    while len(out) < n:
        kind = rng.random()
        if kind < 0.3:
            out += [rng.getrandbits(1)] * rng.randrange(1, 12)
        elif kind < 0.6:
            out += [int(rng.random() < 0.9) for _ in range(rng.randrange(8, 40))]
        else:
            out += [rng.getrandbits(1) for _ in range(rng.randrange(1, 30))]
    return out[:n]


def test_rct_gateware_matches_model():
    rng = random.Random(1)
    samples = crafted_stream(rng, 1500)
    expected = rct_failures(samples, 6)
    assert len(expected) > 10
    assert run_test(RepetitionCountTest(cutoff=6), samples) == expected


def test_apt_gateware_matches_model():
    rng = random.Random(2)
    samples = crafted_stream(rng, 1500)
    expected = apt_failures(samples, 24, 32)
    assert 5 < len(expected) < 1500 // 32
    assert run_test(AdaptiveProportionTest(window=32, cutoff=24), samples) == expected


def test_stuck_source_fails_rct_at_its_cutoff():
    # The real cutoff (H = 0.5, alpha = 2^-30: 61): the 61st identical sample fails.
    dut = RepetitionCountTest(0.5, 2 ** -30)
    assert dut.cutoff == 61
    assert run_test(dut, [0, 1] + [1] * 130, gap=0) == [61, 121]


def test_biased_source_fails_apt_within_its_window():
    """P(1) = 0.85 (min-entropy 0.23 against a claimed 0.5): a window starting with a 1
    counts about 870 ones of 1024 against a cutoff of 810; the RCT (61) sees no run."""
    dut = AdaptiveProportionTest(0.5, 2 ** -30)
    assert dut.cutoff == 810
    samples = NoiseModel("biased", p=0.85, seed=3).bits(2 * APT_WINDOW)
    expected = apt_failures(samples, dut.cutoff)
    assert rct_failures(samples, 61) == []
    assert expected and expected[0] < APT_WINDOW * (1 + (samples[0] == 0))
    assert run_test(dut, samples, gap=0) == expected


def rct_rate(c):
    """Stationary failure rate per sample of the RCT with cutoff ``c`` on fair coin flips
    (the run restarting after a failure): run lengths r = 1..c-1 have weights 2^-(r-1)."""
    return 2.0 ** -(c - 1) / (2 - 2.0 ** -(c - 2))


def test_false_alarm_rates_as_expected():
    """On the healthy model (H = 1 in truth), small cutoffs make false alarms frequent enough
    to count: the RCT's rate and the APT's per-window probability within 5 sigma."""
    n = 1 << 17
    bits = NoiseModel(seed=12345).bits(n)
    c = 8
    mean = n * rct_rate(c)
    assert abs(len(rct_failures(bits, c)) - mean) < 5 * math.sqrt(mean)
    window, cutoff = 64, 42
    windows = n // window
    p = binomial_tail(window - 1, 0.5, cutoff - 1)   # the first sample counts itself
    mean = windows * p
    assert 10 < mean
    assert abs(len(apt_failures(bits, cutoff, window)) - mean) < 5 * math.sqrt(mean)


@pytest.mark.slow
def test_false_alarms_at_the_real_cutoffs():
    """H = 1, alpha = 2^-20 over 2^24 healthy samples: the RCT (cutoff 21) fails about
    2^24 * 2^-21 = 8 times (Poisson); the APT (589) about 2^14 windows * its tail."""
    n = 1 << 24
    bits = NoiseModel(seed=99).bits(n)
    mean = n * rct_rate(21)
    assert abs(len(rct_failures(bits, 21)) - mean) < 5 * math.sqrt(mean) + 1
    mean = (n // APT_WINDOW) * binomial_tail(APT_WINDOW - 1, 0.5, 588)
    assert len(apt_failures(bits, 589)) < mean + 5 * math.sqrt(mean) + 1
