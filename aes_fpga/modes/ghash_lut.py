"""GHASH with a LUT-only digit-serial GF(2^128) multiplier (the ``"lut"`` variant of
:class:`aes_fpga.modes.ghash.GHash`)."""

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import wiring

from ..params import GHASH_DIGITS
from ..primitives.lut_rom import LutRom
from .gf128 import mul_x_pow_terms, xor_all
from .ghash_signature import ghash_signature

__all__ = ["LutGHash", "DIGITS", "packed_xor"]

#: Digit widths the multiplier takes: bits of the multiplier operand consumed per cycle
#: (declared with the library's parameters).
DIGITS = GHASH_DIGITS


def packed_xor(m, name, terms, signals):
    """The XOR of ``terms``, each ``(gate, bits)``: ``gate & XOR(bits)`` (or ``XOR(bits)`` when
    ``gate`` is None), an input named ``(signal, index)`` of ``signals`` (a dict, which gets the
    intermediate signals too). Built from 6-input functions, each a
    :class:`~aes_fpga.primitives.lut_rom.LutRom` of 64 entries (one LUT6 on 7-series parts):
    the largest terms are packed first-fit into as few functions as leave room, in the function
    that XORs their outputs, for the remaining terms; repeated until one function is left.
    Returns the 1-bit result."""
    work = []
    for n, (gate, bits) in enumerate(terms):
        keys = ([gate] if gate else []) + list(bits)
        if len(set(keys)) > 6:          # a wide XOR of bits: left to the mapper, then gated
            key = (f"{name}_x{n}", 0)
            signals[key[0]] = xor_all(signals[s][i] for s, i in bits)
            bits = (key,)
        work.append((gate, tuple(bits)))
    level = 0
    while True:
        work.sort(key=lambda t: -len(_keys(t)))
        if len(_union(work)) <= 6:
            if level == 0:
                return _lut(m, f"{name}_l0", work, signals)
            # The XOR of partial sums: a plain expression the mapper fits in one LUT.
            return xor_all(_value(term, signals) for term in work)
        # The fewest functions that leave room in the XOR of their outputs for the other
        # terms; when five do not, every term goes into a function.
        for g in (*range(1, 6), len(work)):
            groups, rest = _first_fit(work, g)
            if len(_union(rest)) + len(groups) <= 6 or not rest:
                break
        work = rest
        for n, group in enumerate(groups):
            key = (f"{name}_l{level}_{n}", 0)
            # Only the AND-XOR sums are given as LUT6 contents; XORs of partial sums are
            # left to the mapper (given as LUT6s they came out larger).
            signals[key[0]] = (_lut(m, key[0], group, signals) if level == 0
                               else xor_all(_value(term, signals) for term in group))
            work.append((None, (key,)))
        level += 1


def _first_fit(terms, most):
    """``terms`` packed first-fit into at most ``most`` groups of 6 inputs: (groups, rest)."""
    groups, rest = [], []
    for term in terms:
        for group in groups:
            if len(_union(group + [term])) <= 6:
                group.append(term)
                break
        else:
            (groups.append([term]) if len(groups) < most else rest.append(term))
    return groups, rest


def _value(term, signals):
    gate, bits = term
    x = xor_all(signals[s][i] for s, i in bits)
    return x if gate is None else signals[gate[0]][gate[1]] & x


def _keys(term):
    gate, bits = term
    return ([gate] if gate else []) + list(bits)


def _union(terms):
    return list(dict.fromkeys(k for t in terms for k in _keys(t)))


def _lut(m, name, terms, signals):
    """One LutRom computing the XOR of ``terms`` (at most 6 inputs in all)."""
    keys = _union(terms)
    table = []
    for addr in range(64):
        bit = {k: (addr >> p) & 1 for p, k in enumerate(keys)}
        value = 0
        for gate, bits in terms:
            x = 0
            for k in bits:
                x ^= bit[k]
            value ^= x & (bit[gate] if gate else 1)
        table.append(value)
    rom = LutRom(table, 1)
    m.submodules[name] = rom
    m.d.comb += rom.addr.eq(Cat(*(signals[s][i] for s, i in keys)))
    return rom.data


class LutGHash(wiring.Component):
    """GHASH_H with a digit-serial multiplier in LUTs: ``digit`` bits of ``Y ⊕ X`` per cycle.

    Horner over digits, highest power of x first: with ``A = Y ⊕ X`` split into digits
    ``D_k`` (``digit`` coefficients each, ``D_0`` holding x^127 .. x^(128 - digit)), the product
    is ``Z = (...((D_0·H)·x^d ⊕ D_1·H)·x^d ⊕ ...)``. Each cycle ``Z ← Z·x^d ⊕ D·H`` where
    ``D·H`` is the XOR of ``H·x^k`` selected by the digit's bits; ``H·x^k`` and ``Z·x^d`` are
    fixed linear maps (wiring and a few XORs, from :mod:`aes_fpga.modes.gf128`). ``A`` shifts
    ``digit`` bits per cycle; ``Z`` holds ``Y`` between blocks, so a new block loads
    ``A ← X ⊕ Y`` (``X`` alone on ``first``) and clears ``Z``.

    Timing: a block accepted in cycle t is multiplied in cycles t+1 .. t+128/digit; the next
    block is accepted from cycle t + 128/digit + 1 (``cycles_per_block = 128/digit + 1``), and
    after a ``last`` block ``o.valid`` rises in that same cycle (``latency = cycles_per_block``).
    ``o.payload`` is ``Z`` itself: while ``o`` waits, ``i.ready`` stays low; a new block may be
    accepted in the cycle ``o`` is taken. ``h`` loads the ``H`` register: ``fill_cycles = 0``
    (a block accepted in the same cycle as ``h`` already uses the new ``H``).

    Area and depth (measured, the command is in :mod:`aes_fpga.modes.ghash`): about 390 FF
    whatever the digit (H, A, Z and the counter); 275 LUT for digits 1 and 2, 407 for 4, 667
    for 8, 1120 for 16, 2214 for 32, 5259 for 64; 2 LUT levels up to digit 8, 3 for 16 and 32,
    4 for 64. Each bit of ``Z`` XORs ``digit`` AND terms (a bit of A and a bit, or for the top
    bits a few bits, of ``H·x^k``) and the bits of ``Z·x^digit``; they are packed three to a
    LUT6 by :func:`packed_xor` (the mapper alone made 20 to 40% more LUTs of the same sums
    from digit 8 on: 802 for 8, 1575 for 16, 3229 for 32). Loading ``A`` (``X ⊕ Y`` or the
    shift) is a LUT a bit.
    """

    def __init__(self, digit):
        if digit not in DIGITS:
            raise ValueError(f"digit: {digit!r} is not allowed; allowed "
                             f"{', '.join(map(str, DIGITS))}")
        self.digit = digit
        self.steps = 128 // digit
        self.cycles_per_block = self.steps + 1
        self.latency = self.steps + 1
        self.fill_cycles = 0
        super().__init__(ghash_signature())

    def elaborate(self, platform):
        m = Module()
        d = self.digit
        h = Signal(128)
        a = Signal(128)
        z = Signal(128)
        steps_left = Signal(range(self.steps + 1))
        busy = Signal()
        out_valid = Signal()
        last = Signal()
        in_msg = Signal()

        # D·H: the XOR of H·x^k for the digit's set bits (bit d-1-k of A weighs x^k in the
        # digit), plus Z·x^d. Each bit's terms are packed into LUT6s by hand (packed_xor):
        # left to the mapper, the AND-XOR sums took about 60% more LUTs.
        h_terms = [mul_x_pow_terms(k) for k in range(d)]
        z_terms = mul_x_pow_terms(d) if self.steps > 1 else [[] for _ in range(128)]
        signals = {"a": a, "h": h, "z": z}
        step = []
        for b in range(128):
            terms = [(("a", d - 1 - k), tuple(("h", i) for i in h_terms[k][b]))
                     for k in range(d) if h_terms[k][b]]
            terms += [(None, (("z", i),)) for i in z_terms[b]]
            step.append(packed_xor(m, f"z{b}", terms, signals))
        z_next = Cat(*step)

        blk = self.i.payload
        accept = Signal()
        taken = Signal()
        m.d.comb += [
            self.h.ready.eq(~in_msg),
            self.i.ready.eq(~busy & (~out_valid | self.o.ready)),
            accept.eq(self.i.valid & self.i.ready),
            self.o.valid.eq(out_valid),
            self.o.payload.eq(z),
            taken.eq(out_valid & self.o.ready),
        ]
        with m.If(self.h.valid & self.h.ready):
            m.d.sync += h.eq(self.h.payload)
        with m.If(taken):
            m.d.sync += [out_valid.eq(0), in_msg.eq(0)]
        with m.If(accept):
            m.d.sync += [
                a.eq(blk.data ^ (z & ~blk.first.replicate(128))),
                z.eq(0),
                steps_left.eq(self.steps),
                busy.eq(1),
                last.eq(blk.last),
                in_msg.eq(1),
            ]
        with m.Elif(busy):
            m.d.sync += [a.eq(a >> d), z.eq(z_next), steps_left.eq(steps_left - 1)]
            with m.If(steps_left == 1):
                m.d.sync += [busy.eq(0), out_valid.eq(last)]
        return m
