"""Double-data-rate I/O registers (one bit on each clock edge) and a fixed input delay, for
source-synchronous interfaces such as RGMII."""

from amaranth.hdl import ClockDomain, ClockSignal, Const, Instance, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..platform import is_lattice_ecp5, is_xilinx_7series

__all__ = ["DDRInput", "DDROutput", "InputDelay", "OutputDelay", "DDR_OUTPUT_STAGES"]

#: Clock cycles an :class:`DDROutput` holds its data before the pin shows it. ECP5's ODDRX1F
#: has two register stages in front of its output multiplexer (the reason Amaranth's own ECP5
#: DDR buffer delays its output enable by two cycles); the 7-series and portable versions add
#: two fabric stages in front of a same-edge ODDR to match.
DDR_OUTPUT_STAGES = 2


def _check_width(width):
    if not isinstance(width, int) or width < 1:
        raise ValueError(f"width: {width!r} is out of range; allowed an integer from 1")


def _check_domain(domain):
    if not isinstance(domain, str) or not domain.isidentifier():
        raise ValueError(f"domain: {domain!r} is not a clock domain name")


def _falling_domain(m, domain):
    """A local domain clocked on the falling edge of ``domain``'s clock (portable models)."""
    neg = ClockDomain(f"{domain}_fall", clk_edge="neg", reset_less=True, local=True)
    m.domains += neg
    m.d.comb += neg.clk.eq(ClockSignal(domain))
    return neg.name


class DDRInput(wiring.Component):
    """``width`` input pins sampled on both edges of ``domain``'s clock.

    The bit sampled at a rising edge *k* comes out on ``q0`` and the bit sampled at the falling
    edge that follows it (*k* + ½) on ``q1``; both change together at rising edge *k* + 1 and
    hold for that cycle (latency 1 for ``q0``, a half cycle for ``q1``), whatever the vendor.

    On a Xilinx 7-series platform this is one IDDR a bit (``DDR_CLK_EDGE="SAME_EDGE_PIPELINED"``),
    on ECP5 one IDDRX1F a bit (its Q0 and Q1 are the rising- and falling-edge samples, presented
    together on the next rising edge): the pins' own I/O registers, so ``d`` must come straight
    from an input buffer (or an :class:`InputDelay`). Elsewhere, and in simulation, it is a
    rising-edge and a falling-edge register followed by an output register.
    """

    def __init__(self, width=1, *, domain="sync"):
        _check_width(width)
        _check_domain(domain)
        self.width = width
        self.domain = domain
        super().__init__({"d": In(width), "q0": Out(width), "q1": Out(width)})

    def elaborate(self, platform):
        m = Module()
        clk = ClockSignal(self.domain)
        if is_xilinx_7series(platform):
            for bit in range(self.width):
                m.submodules[f"iddr{bit}"] = Instance(
                    "IDDR", p_DDR_CLK_EDGE="SAME_EDGE_PIPELINED", p_SRTYPE="SYNC",
                    p_INIT_Q1=0, p_INIT_Q2=0,
                    i_C=clk, i_CE=Const(1), i_R=Const(0), i_S=Const(0), i_D=self.d[bit],
                    o_Q1=self.q0[bit], o_Q2=self.q1[bit])
        elif is_lattice_ecp5(platform):
            for bit in range(self.width):
                m.submodules[f"iddr{bit}"] = Instance(
                    "IDDRX1F", i_SCLK=clk, i_RST=Const(0), i_D=self.d[bit],
                    o_Q0=self.q0[bit], o_Q1=self.q1[bit])
        else:
            fall = _falling_domain(m, self.domain)
            rise_r = Signal(self.width)
            fall_r = Signal(self.width)
            m.d[self.domain] += rise_r.eq(self.d)
            m.d[fall] += fall_r.eq(self.d)
            m.d[self.domain] += [self.q0.eq(rise_r), self.q1.eq(fall_r)]
        return m


class DDROutput(wiring.Component):
    """``width`` output pins driven on both edges of ``domain``'s clock.

    ``d0`` and ``d1``, taken at rising edge *k*, leave on ``q`` after
    :data:`DDR_OUTPUT_STAGES` more rising edges: ``d0`` from edge *k* + 2 to the falling edge
    *k* + 2½, ``d1`` from there to edge *k* + 3. A pin fed ``d0=1, d1=0`` every cycle carries
    the clock itself, with the data's latency: the way to forward a clock with its data.

    On a Xilinx 7-series platform: two fabric register stages and one ODDR a bit
    (``DDR_CLK_EDGE="SAME_EDGE"``); on ECP5 one ODDRX1F a bit, whose own two stages give the
    latency; elsewhere, and in simulation, the two stages and a rising- and a falling-edge
    register whose XOR is the pin (a model, not logic to put on an FPGA). ``q`` must go
    straight to an output buffer.
    """

    def __init__(self, width=1, *, domain="sync"):
        _check_width(width)
        _check_domain(domain)
        self.width = width
        self.domain = domain
        super().__init__({"d0": In(width), "d1": In(width), "q": Out(width)})

    def _stages(self, m):
        d0, d1 = self.d0, self.d1
        for stage in range(DDR_OUTPUT_STAGES):
            r0 = Signal(self.width, name=f"d0_stage{stage}")
            r1 = Signal(self.width, name=f"d1_stage{stage}")
            m.d[self.domain] += [r0.eq(d0), r1.eq(d1)]
            d0, d1 = r0, r1
        return d0, d1

    def elaborate(self, platform):
        m = Module()
        clk = ClockSignal(self.domain)
        if is_lattice_ecp5(platform):
            for bit in range(self.width):
                m.submodules[f"oddr{bit}"] = Instance(
                    "ODDRX1F", i_SCLK=clk, i_RST=Const(0), i_D0=self.d0[bit],
                    i_D1=self.d1[bit], o_Q=self.q[bit])
            return m
        d0, d1 = self._stages(m)
        if is_xilinx_7series(platform):
            for bit in range(self.width):
                m.submodules[f"oddr{bit}"] = Instance(
                    "ODDR", p_DDR_CLK_EDGE="SAME_EDGE", p_SRTYPE="SYNC", p_INIT=0,
                    i_C=clk, i_CE=Const(1), i_R=Const(0), i_S=Const(0),
                    i_D1=d0[bit], i_D2=d1[bit], o_Q=self.q[bit])
            return m
        # The pin is the XOR of a rising- and a falling-edge register, each set so that the
        # XOR shows d0 from the rising edge and d1 from the falling one: unlike a multiplexer
        # on the clock, no register anywhere samples it at an edge where it changes, so every
        # simulator (event-driven or compiled) sees the same values.
        fall = _falling_domain(m, self.domain)
        rise_r = Signal(self.width)
        late_r = Signal(self.width)
        fall_r = Signal(self.width)
        m.d[self.domain] += [rise_r.eq(d0 ^ fall_r), late_r.eq(d1)]
        m.d[fall] += fall_r.eq(late_r ^ rise_r)
        m.d.comb += self.q.eq(rise_r ^ fall_r)
        return m


class InputDelay(wiring.Component):
    """A fixed delay of ``delay_ps`` picoseconds on ``width`` input pins, ``z`` = ``a`` later.

    For a source-synchronous input whose clock and data arrive edge-aligned (an RGMII PHY
    without its internal clock delay) the data is delayed, or the clock, so the sampling edge
    falls inside the data eye. On ECP5 one DELAYG a bit (``DEL_MODE="USER_DEFINED"``, about
    25 ps a tap, 0-127 taps); on a Xilinx 7-series platform one IDELAYE2 a bit
    (``IDELAY_TYPE="FIXED"``, 78 ps a tap with a 200 MHz reference, 0-31 taps) and an
    IDELAYCTRL clocked by the ``ref_domain`` clock, which must run at 200 MHz. Elsewhere, and in
    simulation, ``z`` is ``a`` (a cycle-based simulation has no picoseconds to model).
    ``a`` must come straight from an input buffer.
    """

    #: Picoseconds a tap, per family (7-series at a 200 MHz reference: 1 / (64 x 200 MHz)).
    TAP_PS = {"ecp5": 25, "xc7": 78.125}
    #: The most taps a family's delay has.
    MAX_TAPS = {"ecp5": 127, "xc7": 31}

    def __init__(self, width=1, *, delay_ps=2000, ref_domain="idelay_ref"):
        _check_width(width)
        _check_domain(ref_domain)
        self.check_delay(delay_ps)
        self.width = width
        self.delay_ps = delay_ps
        self.ref_domain = ref_domain
        super().__init__({"a": In(width), "z": Out(width)})

    @classmethod
    def check_delay(cls, delay_ps):
        """Raise a ValueError unless every family's delay can give ``delay_ps``."""
        if not isinstance(delay_ps, (int, float)) or delay_ps < 0:
            raise ValueError(f"delay_ps: {delay_ps!r} is out of range; allowed from 0")
        for family, tap in cls.TAP_PS.items():
            if round(delay_ps / tap) > cls.MAX_TAPS[family]:
                raise ValueError(f"delay_ps: {delay_ps!r} is beyond the {family} delay's "
                                 f"{cls.MAX_TAPS[family] * tap:g} ps")

    def taps(self, family):
        """The taps that give ``delay_ps`` on ``family`` (``"ecp5"`` or ``"xc7"``)."""
        return round(self.delay_ps / self.TAP_PS[family])

    def elaborate(self, platform):
        m = Module()
        if is_lattice_ecp5(platform):
            for bit in range(self.width):
                m.submodules[f"delay{bit}"] = Instance(
                    "DELAYG", p_DEL_MODE="USER_DEFINED", p_DEL_VALUE=self.taps("ecp5"),
                    i_A=self.a[bit], o_Z=self.z[bit])
        elif is_xilinx_7series(platform):
            m.submodules.idelayctrl = Instance(
                "IDELAYCTRL", i_REFCLK=ClockSignal(self.ref_domain), i_RST=Const(0))
            for bit in range(self.width):
                m.submodules[f"delay{bit}"] = Instance(
                    "IDELAYE2", p_IDELAY_TYPE="FIXED", p_DELAY_SRC="IDATAIN",
                    p_IDELAY_VALUE=self.taps("xc7"), p_REFCLK_FREQUENCY=200.0,
                    p_HIGH_PERFORMANCE_MODE="TRUE", p_SIGNAL_PATTERN="DATA",
                    p_CINVCTRL_SEL="FALSE", p_PIPE_SEL="FALSE",
                    i_IDATAIN=self.a[bit], i_C=Const(0), i_CE=Const(0), i_INC=Const(0),
                    i_LD=Const(0), i_LDPIPEEN=Const(0), i_REGRST=Const(0),
                    i_CINVCTRL=Const(0), i_CNTVALUEIN=Const(0, 5), i_DATAIN=Const(0),
                    o_DATAOUT=self.z[bit])
        else:
            m.d.comb += self.z.eq(self.a)
        return m


class OutputDelay(wiring.Component):
    """A fixed delay of ``delay_ps`` picoseconds between a DDR output register and its pin,
    ``z`` = ``a`` later: on ECP5 one DELAYG a bit (25 ps a tap, 0-127 taps), in the pin's I/O
    logic after the ODDRX1F. The way to delay a forwarded clock, such as an RGMII transmit
    clock for a PHY that does not delay it itself, by about 2 ns. A 7-series HR bank has no
    output delay: there a 90-degree clock from the MMCM does it, so elaborating this for
    7-series raises. Elsewhere, and in simulation, ``z`` is ``a``.
    """

    TAP_PS = 25
    MAX_TAPS = 127

    def __init__(self, width=1, *, delay_ps=2000):
        _check_width(width)
        if not isinstance(delay_ps, (int, float)) or not (
                0 <= round(delay_ps / self.TAP_PS) <= self.MAX_TAPS):
            raise ValueError(f"delay_ps: {delay_ps!r} is out of range; allowed 0 to "
                             f"{self.MAX_TAPS * self.TAP_PS} ps")
        self.width = width
        self.delay_ps = delay_ps
        super().__init__({"a": In(width), "z": Out(width)})

    def elaborate(self, platform):
        if is_xilinx_7series(platform):
            raise NotImplementedError("OutputDelay: a 7-series HR bank has no output delay; "
                                      "clock the output register from a phase-shifted clock")
        m = Module()
        if is_lattice_ecp5(platform):
            for bit in range(self.width):
                m.submodules[f"delay{bit}"] = Instance(
                    "DELAYG", p_DEL_MODE="USER_DEFINED",
                    p_DEL_VALUE=round(self.delay_ps / self.TAP_PS),
                    i_A=self.a[bit], o_Z=self.z[bit])
        else:
            m.d.comb += self.z.eq(self.a)
        return m
