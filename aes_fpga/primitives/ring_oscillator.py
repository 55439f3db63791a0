"""A free-running ring oscillator: an odd number of inverting LUTs in a loop, and its
simulation model (seeded pseudo-random bits, with failures to inject)."""

from dataclasses import dataclass

from amaranth.hdl import Const, Instance, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..platform import is_lattice_ecp5, is_xilinx_7series

__all__ = ["RingOscillator", "NoiseModel", "NOISE_KINDS", "ring_luts", "ring_stage_inits",
           "lut_init"]

#: The kinds of :class:`NoiseModel`: a healthy source, and three failures.
NOISE_KINDS = ("healthy", "stuck", "biased", "periodic")

# What the loop's nets and cells carry so that synthesis keeps them: Yosys's ``keep`` (no
# pass removes or merges the cell or net), Vivado's DONT_TOUCH (the same for Vivado's
# optimisation) and ALLOW_COMBINATORIAL_LOOPS (Vivado's DRC LUTLP-1 otherwise refuses a
# combinational loop at write_bitstream).
_NET_ATTRS = {"keep": 1, "DONT_TOUCH": "TRUE", "ALLOW_COMBINATORIAL_LOOPS": "TRUE"}
_CELL_ATTRS = {"a_keep": 1, "a_DONT_TOUCH": "TRUE"}

_XORSHIFT_MASK = (1 << 64) - 1


@dataclass(frozen=True)
class NoiseModel:
    """What a :class:`RingOscillator` reads in simulation, one bit per clock cycle.

    ``healthy``: independent bits, P(1) = 1/2, from a 64-bit xorshift generator seeded with
    ``seed`` (a simulation stand-in: it says nothing about a real ring's entropy).
    ``stuck``: ``value`` on every cycle. ``biased``: independent bits with P(1) = ``p``
    (resolution 2^-16). ``periodic``: a square wave, ``period`` cycles long, its first half 0.
    With ``onset``, a failure sets in only after ``onset`` healthy bits (a source dying in
    service).

    Parameters
    ----------
    kind : str
        One of :data:`NOISE_KINDS`.
    seed : int
        The generator's seed, 1 to 2^64 - 1 (``healthy`` and ``biased``).
    p : float
        P(1) of a ``biased`` source, 0 to 1.
    value : int
        The bit a ``stuck`` source reads.
    period : int
        Cycles of a ``periodic`` source's pattern, 2 or more.
    onset : int
        Healthy bits before the failure starts (0: from the first bit).
    """

    kind: str = "healthy"
    seed: int = 1
    p: float = 0.5
    value: int = 0
    period: int = 2
    onset: int = 0

    def __post_init__(self):
        if self.kind not in NOISE_KINDS:
            raise ValueError(f"kind: {self.kind!r} is not known; choose from "
                             f"{', '.join(NOISE_KINDS)}")
        if not isinstance(self.seed, int) or not 1 <= self.seed <= _XORSHIFT_MASK:
            raise ValueError(f"seed: {self.seed!r} is out of range; allowed 1 to 2**64 - 1")
        if not 0 <= self.p <= 1:
            raise ValueError(f"p: {self.p!r} is out of range; allowed 0 to 1")
        if self.value not in (0, 1):
            raise ValueError(f"value: {self.value!r}; allowed 0 or 1")
        if not isinstance(self.period, int) or self.period < 2:
            raise ValueError(f"period: {self.period!r} is out of range; allowed 2 or more")
        if not isinstance(self.onset, int) or not 0 <= self.onset < 1 << 32:
            raise ValueError(f"onset: {self.onset!r} is out of range; allowed 0 to 2**32 - 1")

    @property
    def threshold(self):
        """A ``biased`` or ``healthy`` source reads 1 when 16 bits of the generator are below
        this (of 65536)."""
        return 32768 if self.kind == "healthy" else round(self.p * 65536)

    def bits(self, count):
        """The first ``count`` bits the model reads after reset: ``o`` from the second cycle
        with ``en`` high on (``o`` is a register, 0 after reset)."""
        out = []
        x = self.seed
        for n in range(count):
            if n < self.onset or self.kind == "healthy":
                out.append(int((x & 0xFFFF) < 32768))
            elif self.kind == "stuck":
                out.append(self.value)
            elif self.kind == "periodic":
                out.append(int((n - self.onset) % self.period >= self.period // 2))
            else:
                out.append(int((x & 0xFFFF) < self.threshold))
            x = xorshift64(x)
        return out


def xorshift64(x):
    """One step of Marsaglia's xorshift64 (shifts 13, 7, 17), the model's generator."""
    x ^= (x << 13) & _XORSHIFT_MASK
    x ^= x >> 7
    x ^= (x << 17) & _XORSHIFT_MASK
    return x


def lut_init(function, inputs):
    """A LUT's INIT from its function: bit ``i`` is ``function`` of the inputs whose bits make
    ``i``, the first input least significant (Xilinx LUTn: I0 first; ECP5 LUT4: A first)."""
    return sum(int(bool(function(*((i >> n) & 1 for n in range(inputs))))) << i
               for i in range(1 << inputs))


def ring_stage_inits(family):
    """The INITs of a ring's stages on ``family``, each with its LUT's input count: ``((init,
    inputs) of the first stage, a NAND of the last stage's output and ``en``; (init, inputs)
    of the others, inverters)``."""
    if family == "xc7":      # LUT2 (I0: the ring, I1: en), then LUT1
        return ((lut_init(lambda i0, i1: not (i0 and i1), 2), 2),
                (lut_init(lambda i0: not i0, 1), 1))
    if family == "ecp5":     # LUT4 (A: the ring, B: en; C, D tied low)
        return ((lut_init(lambda a, b, c, d: not (a and b), 4), 4),
                (lut_init(lambda a, b, c, d: not a, 4), 4))
    raise ValueError(f"family: {family!r}; allowed 'xc7' or 'ecp5'")


def ring_luts(length, family):
    """The cells one ring of ``length`` stages costs on ``family`` (``"xc7"`` or ``"ecp5"``):
    ``{cell type: count}``, what a netlist that kept the loop holds."""
    if family == "xc7":
        return {"LUT2": 1, "LUT1": length - 1}
    if family == "ecp5":
        return {"LUT4": length}
    raise ValueError(f"family: {family!r}; allowed 'xc7' or 'ecp5'")


class RingOscillator(wiring.Component):
    """A ring of ``length`` inverting stages (odd), free-running while ``en`` is high.

    ``o`` is asynchronous to every clock: pass it through a synchroniser before use (the
    noise source does). The first stage is a NAND with ``en`` (the ring rests with ``en``
    low), the others are inverters: on a Xilinx 7-series platform one LUT2 and ``length - 1``
    LUT1, on a Lattice ECP5 platform ``length`` LUT4, each an instance marked ``keep`` and
    ``DONT_TOUCH`` on nets marked ``keep``, ``DONT_TOUCH`` and ``ALLOW_COMBINATORIAL_LOOPS``,
    so no optimisation folds the loop away (what ``tests/test_entropy_synth.py`` checks by
    counting the cells in the netlist). Where neoTRNG builds its rings from latches, to keep
    any vendor's synthesis from trimming them without vendor attributes, this library already
    has a vendor layer: the rings are plain LUTs named for each vendor here.

    Elsewhere (and in simulation, which cannot oscillate) ``o`` is a register following
    ``model`` (:class:`NoiseModel`), one new bit per clock cycle while ``en`` is high, held
    while it is low.

    Parameters
    ----------
    length : int
        Stages of the ring, odd, 3 to 63.
    model : NoiseModel, optional
        The simulation model (default: healthy, seed 1). Ignored on FPGA platforms.
    """

    def __init__(self, length, *, model=None):
        self._MustUse__used = True          # until the checks pass: a refusal does not warn
        if not isinstance(length, int) or length % 2 == 0 or not 3 <= length <= 63:
            raise ValueError(f"length: {length!r} is not allowed; an odd number 3 to 63")
        if model is not None and not isinstance(model, NoiseModel):
            raise TypeError(f"model: {model!r} is not a NoiseModel")
        self._MustUse__used = False
        self.length = length
        self.model = NoiseModel() if model is None else model
        super().__init__({"en": In(1), "o": Out(1)})

    def elaborate(self, platform):
        if is_xilinx_7series(platform):
            return self._elaborate_ring("xc7")
        if is_lattice_ecp5(platform):
            return self._elaborate_ring("ecp5")
        return self._elaborate_model()

    def _elaborate_ring(self, family):
        m = Module()
        stages = ring_stage_inits(family)
        nets = [Signal(name=f"stage{k}", attrs=_NET_ATTRS) for k in range(self.length)]
        for k in range(self.length):
            prev = nets[k - 1]      # stage 0 closes the loop from the last stage
            init, inputs = stages[k != 0]
            if family == "xc7":
                cell = f"LUT{inputs}"
                ports = {"i_I0": prev, "o_O": nets[k], **({"i_I1": self.en} if k == 0 else {})}
            else:
                cell = "LUT4"
                ports = {"i_A": prev, "i_B": self.en if k == 0 else Const(0),
                         "i_C": Const(0), "i_D": Const(0), "o_Z": nets[k]}
            m.submodules[f"lut{k}"] = Instance(cell, p_INIT=Const(init, 1 << inputs), **ports,
                                               **_CELL_ATTRS)
        m.d.comb += self.o.eq(nets[-1])
        return m

    def _elaborate_model(self):
        m = Module()
        model = self.model
        state = Signal(64, init=model.seed)
        phase = Signal(range(model.period))
        bit_out = Signal()
        bit = Signal()
        if model.kind == "stuck":
            m.d.comb += bit.eq(model.value)
        elif model.kind == "periodic":
            m.d.comb += bit.eq(phase >= model.period // 2)
        else:
            m.d.comb += bit.eq(state[:16] < model.threshold)
        healthy = Signal()
        if model.onset:
            age = Signal(range(model.onset + 1))
            m.d.comb += healthy.eq(age != model.onset)
            with m.If(self.en & healthy):
                m.d.sync += age.eq(age + 1)
        m.d.comb += bit_out.eq(Mux(healthy, state[:16] < 32768, bit))
        x1 = state ^ (state << 13)[:64]
        x2 = x1 ^ (x1 >> 7)
        x3 = x2 ^ (x2 << 17)[:64]
        with m.If(self.en):
            m.d.sync += [self.o.eq(bit_out), state.eq(x3)]
            with m.If(~healthy):             # the pattern starts with the failure
                m.d.sync += phase.eq(Mux(phase == model.period - 1, 0, phase + 1))
        return m
