"""The stream members every GHASH variant offers (see :class:`aes_fpga.modes.ghash.GHash`)."""

from amaranth.lib import data, stream
from amaranth.lib.wiring import In, Out

__all__ = ["ghash_block_layout", "ghash_signature"]


def ghash_block_layout():
    """One block of a GHASH input: ``data`` (128 bits, the library's block convention),
    ``first`` (Y starts from 0 with this block), ``last`` (Y goes out after this block)."""
    return data.StructLayout({"data": 128, "first": 1, "last": 1})


def ghash_signature():
    """The members ``h`` (a new hash subkey), ``i`` (blocks) and ``o`` (results)."""
    return {
        "h": In(stream.Signature(128)),
        "i": In(stream.Signature(ghash_block_layout())),
        "o": Out(stream.Signature(128)),
    }
