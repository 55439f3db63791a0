"""GHASH (NIST SP 800-38D §6.4) in gateware: :class:`GHash`, in two variants.

``"bram"``
    Tables of multiples of H in block RAM, filled from H by a small sequencer when ``h`` is
    accepted, read several per cycle and XORed (:mod:`aes_fpga.modes.ghash_bram`): spends block
    RAM, not LUTs, and keeps every register-to-register path within 2 LUT levels, like the
    block-RAM cores it serves.
``"lut"``
    A digit-serial GF(2^128) multiplier in LUTs, ``digit`` bits per cycle
    (:mod:`aes_fpga.modes.ghash_lut`): for cores and parts without spare block RAM.

Both have the same members, the same behaviour and the golden model
:func:`aes_fpga.gcm_model.ghash_blocks`; they differ in timing (the attributes
``cycles_per_block``, ``latency``, ``fill_cycles``) and in area.
"""

from amaranth.hdl import Module
from amaranth.lib import wiring

from .ghash_lut import DIGITS, LutGHash
from .ghash_signature import ghash_block_layout, ghash_signature

__all__ = ["GHash", "VARIANTS", "DIGITS", "ghash_block_layout"]

#: The variants :class:`GHash` offers.
VARIANTS = ("bram", "lut")


class GHash(wiring.Component):
    """GHASH_H over a stream of 128-bit blocks.

    Members
    -------
    h : In(stream.Signature(128))
        A new hash subkey H (a block in the library's convention: its 16 bytes read
        big-endian; GCM's bit order as :mod:`aes_fpga.gcm_model` describes). Accepting it
        (re)prepares the multiplier: for ``"bram"`` the tables are filled, ``fill_cycles``
        cycles during which ``i.ready`` is low. ``h.ready`` is low while a GHASH is in progress:
        from the acceptance of a block until the result of a ``last`` block has been taken on
        ``o``.
    i : In(stream.Signature(StructLayout({"data": 128, "first": 1, "last": 1})))
        One block X. ``first``: Y starts from 0 with it (Y = X·H); otherwise Y = (Y ⊕ X)·H.
        ``last``: after this block Y goes out on ``o``. A block may be both.
    o : Out(stream.Signature(128))
        Y after each ``last`` block. Back-pressure holds the multiplier (no block is accepted
        while a result waits, nothing is lost); a block may be accepted in the cycle the result
        is taken.

    Attributes
    ----------
    cycles_per_block : int
        Sustained rate while ``i`` is fed: one block accepted every ``cycles_per_block`` cycles.
    latency : int
        Cycles from the acceptance of a ``last`` block to ``o.valid``.
    fill_cycles : int
        Cycles from the acceptance of ``h`` to the first cycle a block can be accepted (0: a
        block may be accepted in the same cycle as ``h`` and already uses the new H).

    Parameters
    ----------
    variant : str
        ``"bram"`` or ``"lut"`` (see the module's docstring).
    digit : int
        For ``"lut"``: bits of the multiplier operand consumed per cycle, one of 1, 2, 4, 8, 16,
        32, 64, 128 (``cycles_per_block = 128/digit + 1``). Checked for ``"bram"`` too, unused.
    """

    def __init__(self, *, variant="bram", digit=8):
        if variant not in VARIANTS:
            raise ValueError(f"variant: {variant!r} is not allowed; allowed "
                             f"{', '.join(map(repr, VARIANTS))}")
        if isinstance(digit, bool) or digit not in DIGITS:
            raise ValueError(f"digit: {digit!r} is not allowed; allowed "
                             f"{', '.join(map(str, DIGITS))}")
        self.variant = variant
        self.digit = digit
        if variant == "lut":
            self.impl = LutGHash(digit)
        else:
            raise NotImplementedError("variant: 'bram' is not there yet; use 'lut'")
        self.cycles_per_block = self.impl.cycles_per_block
        self.latency = self.impl.latency
        self.fill_cycles = self.impl.fill_cycles
        super().__init__(ghash_signature())

    def elaborate(self, platform):
        m = Module()
        m.submodules.impl = impl = self.impl
        wiring.connect(m, wiring.flipped(self.h), impl.h)
        wiring.connect(m, wiring.flipped(self.i), impl.i)
        wiring.connect(m, impl.o, wiring.flipped(self.o))
        return m
