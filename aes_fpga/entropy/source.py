"""The entropy source: noise source, health tests, start-up, conditioning, status."""

from amaranth.hdl import Module, Signal
from amaranth.lib import enum, stream, wiring
from amaranth.lib.wiring import Out

from .conditioning import DEFAULT_KEY, CbcMacConditioner
from .cutoffs import (
    APT_WINDOW,
    BLOCK_BITS,
    STARTUP_SAMPLES,
    apt_cutoff,
    check_alpha,
    check_min_entropy,
    conditioning_blocks,
    rct_cutoff,
)
from .health import HEALTH_LATENCY, AdaptiveProportionTest, RepetitionCountTest
from .noise import DEFAULT_LENGTHS, NoiseSource

__all__ = ["EntropyState", "EntropySource", "COUNTER_BITS"]

#: Width of the failure counters (they stop at their maximum).
COUNTER_BITS = 16


class EntropyState(enum.Enum, shape=2):
    """The source's health: ``STARTUP`` until the start-up samples have passed, then ``OK``;
    ``FAILED`` from the first health-test failure until reset."""

    STARTUP = 0
    OK = 1
    FAILED = 2


class EntropySource(wiring.Component):
    """A stream of full-entropy 128-bit words (at the claimed ``min_entropy``) and the health
    of the source they come from.

    - The :class:`~aes_fpga.entropy.noise.NoiseSource` gives a raw bit every cycle; one in
      ``sample_period`` is a raw sample (``sample``/``sample_valid`` show each: the tap from
      which a diagnostic build reads raw samples for assessment).
    - Every raw sample goes through the repetition count and adaptive proportion tests
      (:mod:`~aes_fpga.entropy.health`, cutoffs from ``min_entropy`` and ``alpha``).
    - Start-up: the first :data:`~aes_fpga.entropy.cutoffs.STARTUP_SAMPLES` samples (1024:
      one whole APT window) are tested and thrown away; ``state`` is ``STARTUP`` until they
      have passed, then ``OK`` (the cycle after the tests' verdict on the last of them,
      :data:`~aes_fpga.entropy.health.HEALTH_LATENCY` cycles after it: a sample that comes
      in between is tested, not used).
    - From ``OK`` on, the samples go into the :class:`~aes_fpga.entropy.conditioning.
      CbcMacConditioner` (``sample_used`` marks each; a sample arriving while the conditioner
      is full is tested but not used), whose words leave on ``o``.
    - A failure of either test (at start-up or later) sets ``state`` to ``FAILED`` until
      reset: ``o`` then never becomes valid again, and a word that was waiting on ``o`` is
      withdrawn (``valid`` falls without a transfer: its samples may be the failing ones).
      ``rct_failures`` and ``apt_failures`` count every failure event since reset (the tests
      keep running), stopping at ``2**COUNTER_BITS - 1``.

    Throughput: a word needs ``blocks * 128`` used samples (``blocks`` =
    :func:`~aes_fpga.entropy.cutoffs.conditioning_blocks` of ``min_entropy``: 3 at 0.5) and
    ``blocks`` chained AES calls, so ``blocks * max(128 * sample_period, c)`` cycles, ``c``
    the core's cycles per chained call (compact8: 192, its 162-cycle latency and the wait for
    its round slot). Measured in simulation: 576 cycles per word at the defaults, 384 at
    ``min_entropy=1``, 768 with ``sample_period=2`` (the samples then set the pace), from
    ``python -c "import sys; sys.path.insert(0, 'tests'); from test_entropy import run_source;
    from aes_fpga.entropy import EntropySource as E; _, w = run_source(E(), 4000);
    print({b[0] - a[0] for a, b in zip(w, w[1:])})"`` (``E(min_entropy=1)``,
    ``E(sample_period=2)``; ``tests/test_entropy.py`` checks the bounds and the exact 768).
    Latency from reset to the first word: the start-up's 1024 samples, then one word's.

    Area (Yosys, out of context, ``python -c "from aes_fpga.entropy import EntropySource;
    from aes_fpga.flow.synth import synthesize; print(synthesize(EntropySource(),
    'xc7a35tcsg324-1').total)"``, and ``'LFE5U-85F-6BG381'``): xc7a35t 487 LUT, 952 FF, 2
    RAMB18; LFE5U-85F 643 LUT4, 952 FF, 2 DP16KD. Of that, the noise source is 37 LUT and 8 FF
    on either (36 ring stages, the XOR, the synchronisers), the rest mostly the compact8 core
    (AES-128 only) and the conditioner's three 128-bit registers. ``tests/test_entropy_synth.py``
    checks that the rings survive synthesis as closed loops of their lengths.

    Parameters
    ----------
    lengths : tuple of int
        Ring oscillator lengths (distinct odd numbers).
    min_entropy : float
        Claimed min-entropy per raw sample ``H`` (0 < H <= 1): sets the cutoffs and the
        conditioning length. A claim to be supported by assessing a board's raw samples.
    alpha : float
        False-positive probability of each health test, 2^-40 to 2^-20.
    sample_period : int
        Clock cycles per raw sample, 1 to 65536 (more lets each ring's jitter accumulate
        between samples).
    core : str
        The AES core of the conditioning (a name of :data:`aes_fpga.cores.CORES`).
    key : bytes
        The conditioning's fixed AES-128 key.
    model : NoiseModel, optional
        The noise source's simulation model (ignored on FPGA platforms).
    """

    def __init__(self, *, lengths=DEFAULT_LENGTHS, min_entropy=0.5, alpha=2.0 ** -30,
                 sample_period=1, core="compact8", key=DEFAULT_KEY, model=None):
        self._MustUse__used = True          # until the checks pass: a refusal does not warn
        self.min_entropy = check_min_entropy(min_entropy)
        self.alpha = check_alpha(alpha)
        if not isinstance(sample_period, int) or not 1 <= sample_period <= 65536:
            raise ValueError(f"sample_period: {sample_period!r} is out of range; allowed 1 "
                             "to 65536")
        self.sample_period = sample_period
        self.rct_cutoff = rct_cutoff(min_entropy, alpha)
        self.apt_cutoff = apt_cutoff(min_entropy, alpha)
        self.blocks = conditioning_blocks(min_entropy)
        self.noise = NoiseSource(lengths, model=model)
        self.conditioner = CbcMacConditioner(self.blocks, key=key, core=core)
        self._MustUse__used = False
        super().__init__({
            "o": Out(stream.Signature(BLOCK_BITS)),
            "state": Out(EntropyState),
            "rct_failures": Out(COUNTER_BITS),
            "apt_failures": Out(COUNTER_BITS),
            "sample": Out(1),
            "sample_valid": Out(1),
            "sample_used": Out(1),
        })

    @property
    def samples_per_word(self):
        """Raw samples conditioned into each output word."""
        return self.blocks * BLOCK_BITS

    def __repr__(self):
        return (f"EntropySource(min_entropy={getattr(self, 'min_entropy', None)}, "
                f"alpha={getattr(self, 'alpha', None)!r}, blocks={getattr(self, 'blocks', None)})")

    def elaborate(self, platform):
        m = Module()
        m.submodules.noise = noise = self.noise
        m.submodules.rct = rct = RepetitionCountTest(cutoff=self.rct_cutoff)
        m.submodules.apt = apt = AdaptiveProportionTest(window=APT_WINDOW,
                                                        cutoff=self.apt_cutoff)
        m.submodules.conditioner = cond = self.conditioner
        m.d.comb += noise.en.eq(1)

        tick = Signal()
        if self.sample_period == 1:
            m.d.comb += tick.eq(1)
        else:
            div = Signal(range(self.sample_period))
            m.d.sync += div.eq(div + 1)
            with m.If(div == self.sample_period - 1):
                m.d.sync += div.eq(0)
            m.d.comb += tick.eq(div == 0)
        for test in (rct, apt):
            m.d.comb += [test.sample.eq(noise.sample), test.valid.eq(tick)]

        ok = self.state == EntropyState.OK
        m.d.comb += [self.sample.eq(noise.sample), self.sample_valid.eq(tick),
                     cond.i.payload.eq(noise.sample), cond.i.valid.eq(tick & ok),
                     self.sample_used.eq(cond.i.valid & cond.i.ready),
                     self.o.payload.eq(cond.o.payload), self.o.valid.eq(cond.o.valid & ok),
                     cond.o.ready.eq(self.o.ready & ok)]

        tested = Signal(range(STARTUP_SAMPLES + 1))
        with m.If(tick & (tested != STARTUP_SAMPLES)):
            m.d.sync += tested.eq(tested + 1)
        top = (1 << COUNTER_BITS) - 1
        for test, counter in ((rct, self.rct_failures), (apt, self.apt_failures)):
            with m.If(test.fail & (counter != top)):
                m.d.sync += counter.eq(counter + 1)
        # The tests' verdict on a sample comes HEALTH_LATENCY cycles after it: the start-up
        # ends in the cycle that shows the verdict on its last sample (``settled``: the count
        # complete, delayed to that cycle).
        settled = Signal()
        m.d.sync += settled.eq(tested == STARTUP_SAMPLES)
        for _ in range(HEALTH_LATENCY - 2):
            later = Signal()
            m.d.sync += later.eq(settled)
            settled = later
        with m.If(rct.fail | apt.fail):
            m.d.sync += self.state.eq(EntropyState.FAILED)
        with m.Elif((self.state == EntropyState.STARTUP) & settled):
            m.d.sync += self.state.eq(EntropyState.OK)
        return m
