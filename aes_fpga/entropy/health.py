"""The SP 800-90B §4.4 health tests on one-bit raw samples, as gateware: the repetition count
test and the adaptive proportion test. Their cutoffs come from :mod:`.cutoffs`.

Both are two register stages deep, so that each stays within the appliance's bound of 4 LUT
levels between registers (``tests/test_appliance_depth.py``): the first registers the sample's
comparison with the value it is tested against (and, for the adaptive proportion test, whether
it opens a window), the second counts; each count carries a registered flag that says whether
the next step reaches the cutoff, computed a step ahead from the count itself, so no path
compares a counter with the cutoff and then updates the counter in one cycle. The verdict on a
sample is therefore :data:`HEALTH_LATENCY` cycles after it.
"""

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .cutoffs import APT_WINDOW, apt_cutoff, rct_cutoff

__all__ = ["RepetitionCountTest", "AdaptiveProportionTest", "HEALTH_LATENCY"]

#: Cycles from a sample (``valid`` high) to ``fail`` showing the verdict on it, both tests.
HEALTH_LATENCY = 2


def _health_members():
    return {"sample": In(1), "valid": In(1), "fail": Out(1)}


class RepetitionCountTest(wiring.Component):
    """SP 800-90B §4.4.1 on the samples with ``valid`` high.

    The test keeps the last sample ``A`` and the length ``B`` of the run of samples equal to
    it; a sample equal to ``A`` makes ``B + 1``, another starts a new run (``A`` the sample,
    ``B = 1``). When ``B`` reaches the cutoff ``C`` (see
    :func:`~aes_fpga.entropy.cutoffs.rct_cutoff`) the test fails: ``fail`` is high for one
    cycle, :data:`HEALTH_LATENCY` (2) cycles after the cycle in which the ``C``-th identical
    sample was presented, and the run starts again from that sample (``B = 1``), so a source
    that stays stuck fails again every ``C - 1`` samples (each failure is an event the source
    counts). One sample per cycle at most; no back-pressure.

    Parameters
    ----------
    min_entropy : float
        The claimed min-entropy per sample ``H`` (0 < H <= 1).
    alpha : float
        False-positive probability, 2^-40 to 2^-20.
    cutoff : int, optional
        The cutoff itself, instead of computing it from ``min_entropy`` and ``alpha`` (2 or
        more; for tests of the gateware at small sizes).
    """

    def __init__(self, min_entropy=0.5, alpha=2.0 ** -30, *, cutoff=None):
        self._MustUse__used = True          # until the checks pass: a refusal does not warn
        if cutoff is None:
            cutoff = rct_cutoff(min_entropy, alpha)
        elif not isinstance(cutoff, int) or cutoff < 2:
            raise ValueError(f"cutoff: {cutoff!r} is out of range; allowed 2 or more")
        self._MustUse__used = False
        self.cutoff = cutoff
        super().__init__(_health_members())

    #: Cycles from a sample to the verdict on it in ``fail``.
    latency = HEALTH_LATENCY

    def elaborate(self, platform):
        m = Module()
        # Stage 1: the sample against the one before it.
        last = Signal()
        seen = Signal()                            # a sample has come since reset
        step = Signal()                            # stage 1 holds a sample
        same = Signal()                            # ... equal to the one before it
        m.d.sync += step.eq(self.valid)
        with m.If(self.valid):
            m.d.sync += [last.eq(self.sample), seen.eq(1),
                         same.eq(seen & (self.sample == last))]
        # Stage 2: the run's length B (1 to C - 1), and whether B is C - 1, so that one more
        # equal sample fails.
        run = Signal(range(self.cutoff))
        full = Signal()
        m.d.sync += self.fail.eq(0)
        with m.If(step):
            with m.If(same & full):
                m.d.sync += [self.fail.eq(1), run.eq(1), full.eq(self.cutoff == 2)]
            with m.Elif(same):
                m.d.sync += [run.eq(run + 1), full.eq(run == self.cutoff - 2)]
            with m.Else():
                m.d.sync += [run.eq(1), full.eq(self.cutoff == 2)]
        return m


class AdaptiveProportionTest(wiring.Component):
    """SP 800-90B §4.4.2 on the samples with ``valid`` high, in consecutive windows of
    ``window`` samples.

    The first sample of a window is ``A`` (count ``B = 1``); each of the other ``window - 1``
    samples equal to ``A`` makes ``B + 1``. When ``B`` reaches the cutoff ``C`` (see
    :func:`~aes_fpga.entropy.cutoffs.apt_cutoff`) the test fails: ``fail`` is high for one
    cycle, :data:`HEALTH_LATENCY` (2) cycles after that sample's, once per window at most (the
    window runs on to its end, then the next starts). One sample per cycle at most; no
    back-pressure.

    Parameters
    ----------
    min_entropy : float
        The claimed min-entropy per sample ``H`` (0 < H <= 1).
    alpha : float
        False-positive probability, 2^-40 to 2^-20.
    window : int
        Samples per window (1024 for binary samples in the standard).
    cutoff : int, optional
        The cutoff itself (2 to ``window``), instead of computing it.
    """

    def __init__(self, min_entropy=0.5, alpha=2.0 ** -30, *, window=APT_WINDOW, cutoff=None):
        self._MustUse__used = True          # until the checks pass: a refusal does not warn
        if not isinstance(window, int) or window < 2:
            raise ValueError(f"window: {window!r} is out of range; allowed 2 or more")
        if cutoff is None:
            cutoff = apt_cutoff(min_entropy, alpha, window)
        elif not isinstance(cutoff, int) or not 2 <= cutoff <= window:
            raise ValueError(f"cutoff: {cutoff!r} is out of range; allowed 2 to {window}")
        self._MustUse__used = False
        self.window = window
        self.cutoff = cutoff
        super().__init__(_health_members())

    #: Cycles from a sample to the verdict on it in ``fail``.
    latency = HEALTH_LATENCY

    def elaborate(self, platform):
        m = Module()
        # Stage 1: the sample's place in its window, and the sample against the window's first.
        first = Signal()                          # A
        index = Signal(range(self.window))        # the next sample's place in its window
        at_start = Signal(init=1)                 # index == 0
        at_end = Signal()                         # index == window - 1
        step = Signal()                           # stage 1 holds a sample
        opens = Signal()                          # ... the first of a window
        match = Signal()                          # ... equal to A (when it does not open one)
        m.d.sync += step.eq(self.valid)
        with m.If(self.valid):
            m.d.sync += [opens.eq(at_start), match.eq(self.sample == first)]
            with m.If(at_start):
                m.d.sync += first.eq(self.sample)
            with m.If(at_end):
                m.d.sync += [index.eq(0), at_start.eq(1), at_end.eq(0)]
            with m.Else():
                m.d.sync += [index.eq(index + 1), at_start.eq(0),
                             at_end.eq(index == self.window - 2)]
        # Stage 2: the count B, whether B is C - 1 (one more match fails), and whether this
        # window has failed already.
        count = Signal(range(self.window + 1))
        full = Signal()
        failed = Signal()
        m.d.sync += self.fail.eq(0)
        with m.If(step):
            with m.If(opens):
                m.d.sync += [count.eq(1), full.eq(self.cutoff == 2), failed.eq(0)]
            with m.Elif(match):
                m.d.sync += [count.eq(count + 1), full.eq(count == self.cutoff - 2)]
                with m.If(full & ~failed):
                    m.d.sync += [self.fail.eq(1), failed.eq(1)]
        return m
