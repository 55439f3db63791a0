"""The parameters of one AES operation, defined once for the model, the cores and the host.

:class:`Op`, :class:`Mode` and :class:`KeySize` are plain :class:`enum.IntEnum` classes: the
pure-Python model and the host tools use them without Amaranth, and Amaranth takes them as
shapes (``Signal(Mode)``, a ``data.StructLayout`` field) with the same values, so nothing
translates between two sets of codes. Their values are the appliance protocol's wire codes.
"""

import enum

__all__ = ["Op", "Mode", "KeySize", "GHASH_VARIANTS", "GHASH_DIGITS"]


class Op(enum.IntEnum):
    """Direction of a block operation (also the ``op`` byte of a ``PROCESS`` request)."""

    ENCRYPT = 0
    DECRYPT = 1


class Mode(enum.IntEnum):
    """Block-cipher mode of operation (SP 800-38A; also the ``mode`` byte of ``PROCESS``)."""

    ECB = 0
    CBC = 1
    CTR = 2
    GCM = 3


class KeySize(enum.IntEnum):
    """Key length code: the cores' ``key_bits`` field, the ``LOAD_KEY`` size byte, and the bit
    number in the ``INFO`` key sizes bitmask."""

    AES128 = 0
    AES192 = 1
    AES256 = 2

    @property
    def bits(self):
        """Key length in bits (128, 192 or 256)."""
        return 128 + 64 * self.value

    @property
    def nbytes(self):
        """Key length in bytes (16, 24 or 32)."""
        return self.bits // 8

    @property
    def rounds(self):
        """Number of rounds Nr (10, 12 or 14)."""
        return 10 + 2 * self.value

    @classmethod
    def from_bits(cls, bits):
        """Return the code for a key length in bits; ``ValueError`` for anything but 128/192/256."""
        for size in cls:
            if size.bits == bits and not isinstance(bits, bool):
                return size
        raise ValueError(f"key size must be 128, 192 or 256 bits, got {bits!r}")


#: The GHASH multipliers a GCM build can use (``ModeEngine(gcm=...)``, ``GHash(variant=...)``,
#: ``aes-fpga bench --ghash``): tables of multiples of H in block RAM, or LUT-only digit-serial.
GHASH_VARIANTS = ("bram", "lut")
#: Digit widths of the LUT-only GHASH: bits of the multiplier operand consumed per cycle.
GHASH_DIGITS = (1, 2, 4, 8, 16, 32, 64, 128)
