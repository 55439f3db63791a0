"""The vetted conditioning of SP 800-90B §3.1.5.1.1: AES-CBC-MAC over a fixed number of whole
128-bit blocks of raw samples, under a fixed key, through any core of the library.

Why CBC-MAC and not CMAC: both are on the standard's list of vetted conditioning functions
with AES. CBC-MAC is secure as a MAC only for inputs of one fixed length, and here the length
is fixed by construction (``blocks`` whole blocks, no padding), which is exactly the case the
standard admits it for (its Appendix F); CMAC's extra steps (the subkey ``AES_K(0)``, the
doubling, the subkey XOR into the last block) exist for variable and partial lengths and would
cost one more AES call at start and a 128-bit register for nothing here.

The key is fixed and public: what a conditioning function needs of its key is that it is
chosen independently of the raw samples, not that it is secret (fixed keys are the usual
choice in hardware entropy sources). The default is a nothing-up-my-sleeve value,
``AES_0(1)``: the block 1 encrypted under the all-zero AES-128 key, computed at elaboration.

How many blocks: :func:`~aes_fpga.entropy.cutoffs.conditioning_blocks` gives, for the claimed
min-entropy ``H`` per raw bit, the fewest ``k`` with ``128 k H >= 128 + 64``: at ``H = 0.5``,
3 blocks (384 raw bits) per 128-bit output.
"""

from amaranth.hdl import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .. import model
from ..cores import make_core
from ..params import KeySize, Op
from .cutoffs import BLOCK_BITS

__all__ = ["DEFAULT_KEY", "CORE_OPTIONS", "cbc_mac", "condition", "pack_bits", "CbcMacConditioner"]

#: The conditioning key: AES-128 of the block 1 under the all-zero key (nothing up the sleeve).
DEFAULT_KEY = model.to_bytes(model.encrypt_block(bytes(16), 1))

#: Options of the conditioning's core, by core name: compact8 writes its round keys through a
#: register, so that its S-box ROM's read does not run into its round-key RAM in one cycle (the
#: path that set the UART appliance's clock on ECP5 below 100 MHz with the source in).
CORE_OPTIONS = {"compact8": {"registered_key_write": True}}


def pack_bits(bits):
    """128-bit blocks (ints) from raw bits in order, the first bit of each block its most
    significant (FIPS-197's byte order: the first bit is the top bit of byte 0); a partial
    last block is dropped."""
    bits = list(bits)
    return [int("".join(str(b) for b in bits[n:n + BLOCK_BITS]), 2)
            for n in range(0, len(bits) - BLOCK_BITS + 1, BLOCK_BITS)]


def cbc_mac(key, blocks):
    """AES-CBC-MAC of ``blocks`` (ints) under ``key`` (16 bytes): ``C_0 = 0``,
    ``C_i = AES_K(C_(i-1) xor X_i)``; the MAC is the last ``C``."""
    chain = 0
    for block in blocks:
        chain = model.encrypt_block(key, chain ^ block)
    return chain


def condition(bits, blocks, key=DEFAULT_KEY):
    """The conditioned outputs of the raw ``bits``: one :func:`cbc_mac` per ``blocks``
    consecutive 128-bit blocks (:func:`pack_bits`); leftover bits give nothing."""
    packed = pack_bits(bits)
    return [cbc_mac(key, packed[n:n + blocks])
            for n in range(0, len(packed) - blocks + 1, blocks)]


class CbcMacConditioner(wiring.Component):
    """AES-CBC-MAC over ``blocks`` blocks of raw bits per output word.

    ``i`` takes raw bits, one per transfer (``ready`` while the 128-bit collecting register has
    room); ``o`` gives the 128-bit MAC of each ``blocks * 128`` consecutive bits taken
    (:func:`condition` is its model, bit for bit). The core (one key slot, AES-128 only)
    gets the key once after reset; then each collected block moves to a second register and
    goes in as ``chain xor block`` while the next one collects. The core's ``o`` is always
    taken: a block is sent only when the previous result has come back and the last word has
    left ``o`` (one AES call in flight: CBC is a chain).

    Cycles per output word: ``blocks`` times the larger of the cycles 128 bits take to arrive
    and the core's cycles per chained call (compact8: its latency of 162 cycles plus the wait
    for its 16-cycle round slot), after the key load at start (compact8: 177 cycles).
    ``tests/test_entropy.py`` checks both cases.

    Parameters
    ----------
    blocks : int
        128-bit blocks per output, 1 to 64.
    key : bytes
        The 16-byte AES-128 key (default :data:`DEFAULT_KEY`).
    core : str
        A core of :data:`aes_fpga.cores.CORES` (default ``compact8``, the smallest), made with
        its :data:`CORE_OPTIONS`.
    """

    def __init__(self, blocks=3, *, key=DEFAULT_KEY, core="compact8"):
        self._MustUse__used = True          # until the checks pass: a refusal does not warn
        if not isinstance(blocks, int) or not 1 <= blocks <= 64:
            raise ValueError(f"blocks: {blocks!r} is out of range; allowed 1 to 64")
        if not isinstance(key, (bytes, bytearray)) or len(key) != 16:
            raise ValueError("key: an AES-128 key of 16 bytes is required")
        self._MustUse__used = False
        self.blocks = blocks
        self._key = bytes(key)
        self.core = make_core(core, key_slots=1, key_sizes=(128,), tag_width=0,
                              **CORE_OPTIONS.get(core, {}))
        super().__init__({"i": In(stream.Signature(1)),
                          "o": Out(stream.Signature(BLOCK_BITS))})

    def __repr__(self):
        # The key is public, but a component's repr is no place for key material anyway.
        return f"CbcMacConditioner(blocks={getattr(self, 'blocks', None)})"

    def elaborate(self, platform):
        m = Module()
        m.submodules.core = core = self.core
        keyed = Signal()
        m.d.comb += [core.key.valid.eq(~keyed),
                     core.key.payload.key.eq(int.from_bytes(self._key, "big") << 128),
                     core.key.payload.key_bits.eq(KeySize.from_bits(128)),
                     core.key.payload.slot.eq(0), core.key.payload.zeroize.eq(0)]
        with m.If(core.key.valid & core.key.ready):
            m.d.sync += keyed.eq(1)

        # Bits collect in one register while the block before waits for the core in another,
        # so no bit is turned away while the core keeps up.
        collect = Signal(BLOCK_BITS)
        fill = Signal(range(BLOCK_BITS + 1))
        block = Signal(BLOCK_BITS)
        full = Signal()                            # block holds a block not yet sent
        chain = Signal(BLOCK_BITS)
        done = Signal(range(self.blocks))          # blocks of this word sent and returned
        busy = Signal()                            # a block is in the core
        out_valid = Signal()
        m.d.comb += [self.i.ready.eq(fill != BLOCK_BITS),
                     self.o.valid.eq(out_valid), self.o.payload.eq(chain)]
        send = keyed & full & ~busy & ~out_valid
        m.d.comb += [core.i.valid.eq(send), core.i.payload.block.eq(chain ^ block),
                     core.i.payload.op.eq(Op.ENCRYPT), core.i.payload.slot.eq(0),
                     core.o.ready.eq(1)]
        with m.If(self.i.valid & self.i.ready):
            m.d.sync += [collect.eq((collect << 1) | self.i.payload), fill.eq(fill + 1)]
        with m.If(send & core.i.ready):
            m.d.sync += [full.eq(0), busy.eq(1)]
        with m.If((fill == BLOCK_BITS) & (~full | (send & core.i.ready))):
            m.d.sync += [block.eq(collect), full.eq(1), fill.eq(0)]
        with m.If(core.o.valid):
            m.d.sync += [chain.eq(core.o.payload.block), busy.eq(0)]
            with m.If(done == self.blocks - 1):
                m.d.sync += [done.eq(0), out_valid.eq(1)]
            with m.Else():
                m.d.sync += done.eq(done + 1)
        with m.If(self.o.valid & self.o.ready):
            m.d.sync += [out_valid.eq(0), chain.eq(0)]
        return m
