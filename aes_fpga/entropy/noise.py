"""The noise source: free-running ring oscillators of different lengths, each sampled by the
system clock through a synchroniser, XOR-combined into one raw bit per cycle."""

from functools import reduce
from operator import xor

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.cdc import FFSynchronizer
from amaranth.lib.wiring import In, Out

from ..primitives import NoiseModel, RingOscillator

__all__ = ["NoiseSource", "DEFAULT_LENGTHS"]

#: Ring lengths: odd, distinct and prime, so that no ring's period is a small multiple of
#: another's and their phases drift apart.
DEFAULT_LENGTHS = (5, 7, 11, 13)


class NoiseSource(wiring.Component):
    """``len(lengths)`` :class:`~aes_fpga.primitives.RingOscillator` rings, each through a
    two-flip-flop synchroniser (the platform's, where it has one), XORed: ``sample`` is a new
    raw bit every cycle, two cycles after the rings' outputs (the synchronisers).

    The XOR keeps whatever jitter each ring's sample carries: a ring that locks to the clock
    or to another ring does not cancel the others. The source's entropy can only be measured
    on a board (see the README's "Entropy source").

    In simulation the rings are their model: ring 0 follows ``model`` and the others read 0,
    so ``sample`` is exactly ``model``'s bit stream, two cycles later (failures injected
    there reach the health tests unchanged).

    Parameters
    ----------
    lengths : tuple of int
        Stages per ring: distinct odd numbers, 3 to 63 each, 1 to 16 rings.
    model : NoiseModel, optional
        The simulation model of the combined sample (default: healthy, seed 1).
    """

    def __init__(self, lengths=DEFAULT_LENGTHS, *, model=None):
        lengths = tuple(lengths)
        if not 1 <= len(lengths) <= 16 or len(set(lengths)) != len(lengths):
            self._MustUse__used = True      # refused: no warning that it was never elaborated
            raise ValueError(f"lengths: {lengths!r}; allowed 1 to 16 distinct odd lengths")
        model = NoiseModel() if model is None else model
        quiet = NoiseModel("stuck", value=0)
        self.lengths = lengths
        self.rings = [RingOscillator(n, model=model if k == 0 else quiet)
                      for k, n in enumerate(lengths)]
        super().__init__({"en": In(1), "sample": Out(1)})

    def elaborate(self, platform):
        m = Module()
        synced = []
        for k, ring in enumerate(self.rings):
            m.submodules[f"ring{k}"] = ring
            m.d.comb += ring.en.eq(self.en)
            s = Signal(name=f"sampled{k}")
            m.submodules[f"sync{k}"] = FFSynchronizer(ring.o, s, stages=2)
            synced.append(s)
        m.d.comb += self.sample.eq(reduce(xor, synced))
        return m
