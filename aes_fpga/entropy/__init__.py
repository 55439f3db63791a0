"""An on-chip entropy source: ring oscillators, SP 800-90B health tests, conditioned output.

- :mod:`.cutoffs`: the standard's numbers in Python (health-test cutoffs from the claimed
  min-entropy per sample and the false-positive rate; the conditioning's input length) and
  golden models of the tests.
- :mod:`.noise`: the ring oscillators, sampled and combined
  (:class:`~aes_fpga.primitives.RingOscillator` holds the vendor cells and the simulation
  model).
- :mod:`.health`: the repetition count and adaptive proportion tests in gateware.
- :mod:`.conditioning`: AES-CBC-MAC through a library core, and its Python model.
- :mod:`.source`: :class:`EntropySource`, the whole: random words and a health status.
"""

from .conditioning import CbcMacConditioner
from .health import AdaptiveProportionTest, RepetitionCountTest
from .noise import NoiseSource
from .source import EntropySource, EntropyState

__all__ = ["EntropySource", "EntropyState", "NoiseSource", "RepetitionCountTest",
           "AdaptiveProportionTest", "CbcMacConditioner"]
