"""The SP 800-90B §4.4 health tests on one-bit raw samples, as gateware: the repetition count
test and the adaptive proportion test. Their cutoffs come from :mod:`.cutoffs`."""

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .cutoffs import APT_WINDOW, apt_cutoff, rct_cutoff

__all__ = ["RepetitionCountTest", "AdaptiveProportionTest"]


def _health_members():
    return {"sample": In(1), "valid": In(1), "fail": Out(1)}


class RepetitionCountTest(wiring.Component):
    """SP 800-90B §4.4.1 on the samples with ``valid`` high.

    The test keeps the last sample ``A`` and the length ``B`` of the run of samples equal to
    it; a sample equal to ``A`` makes ``B + 1``, another starts a new run (``A`` the sample,
    ``B = 1``). When ``B`` reaches the cutoff ``C`` (see
    :func:`~aes_fpga.entropy.cutoffs.rct_cutoff`) the test fails: ``fail`` is high for one
    cycle, the cycle after the ``C``-th identical sample was presented, and the run starts
    again from that sample (``B = 1``), so a source that stays stuck fails again every
    ``C - 1`` samples (each failure is an event the source counts). One sample per cycle at
    most; no back-pressure.

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

    def elaborate(self, platform):
        m = Module()
        last = Signal()
        run = Signal(range(self.cutoff + 1))       # 0: no sample yet
        m.d.sync += self.fail.eq(0)
        with m.If(self.valid):
            with m.If((run != 0) & (self.sample == last)):
                with m.If(run + 1 >= self.cutoff):
                    m.d.sync += [self.fail.eq(1), run.eq(1)]
                with m.Else():
                    m.d.sync += run.eq(run + 1)
            with m.Else():
                m.d.sync += [last.eq(self.sample), run.eq(1)]
        return m


class AdaptiveProportionTest(wiring.Component):
    """SP 800-90B §4.4.2 on the samples with ``valid`` high, in consecutive windows of
    ``window`` samples.

    The first sample of a window is ``A`` (count ``B = 1``); each of the other ``window - 1``
    samples equal to ``A`` makes ``B + 1``. When ``B`` reaches the cutoff ``C`` (see
    :func:`~aes_fpga.entropy.cutoffs.apt_cutoff`) the test fails: ``fail`` is high for one
    cycle, the cycle after that sample, once per window at most (the window runs on to its
    end, then the next starts). One sample per cycle at most; no back-pressure.

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

    def elaborate(self, platform):
        m = Module()
        first = Signal()
        count = Signal(range(self.window + 1))
        index = Signal(range(self.window))        # the sample's place in its window
        failed = Signal()                         # this window has failed already
        m.d.sync += self.fail.eq(0)
        with m.If(self.valid):
            m.d.sync += index.eq(index + 1)
            with m.If(index == 0):
                m.d.sync += [first.eq(self.sample), count.eq(1), failed.eq(0)]
            with m.Elif(self.sample == first):
                m.d.sync += count.eq(count + 1)
                with m.If((count + 1 >= self.cutoff) & ~failed):
                    m.d.sync += [self.fail.eq(1), failed.eq(1)]
            with m.If(index == self.window - 1):
                m.d.sync += index.eq(0)
        return m
