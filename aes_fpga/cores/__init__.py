"""AES cores. All share the stream interface of :mod:`aes_fpga.cores.interface`."""

from .drab_locus import DrabLocus, DrabLocusDatapath
from .interface import KeyBits, Op
from .key_schedule import KeySchedule

__all__ = ["DrabLocus", "DrabLocusDatapath", "KeySchedule", "Op", "KeyBits"]
