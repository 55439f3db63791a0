"""AES cores. All share the stream interface of :mod:`aes_fpga.cores.interface`."""

from .drab_locus import DrabLocusDatapath
from .interface import KeyBits, Op

__all__ = ["DrabLocusDatapath", "Op", "KeyBits"]
