"""Wide XOR lane: ``p = a ^ c`` (or ``a ^ pcin``, or ``pcin``) up to 48 bits, with DSP48E1-style
registers."""

from amaranth.hdl import Cat, ClockSignal, Const, Instance, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..platform import is_xilinx_7series

__all__ = ["XorLane"]

# DSP48E1 control words for logic mode.
_ALUMODE_XOR = 0b0100          # P = X xor Z (with Y = 0)
_OPMODE_AB_C = 0b011_00_11     # Z = C,    Y = 0, X = A:B
_OPMODE_AB_PCIN = 0b001_00_11  # Z = PCIN, Y = 0, X = A:B


class XorLane(wiring.Component):
    """A 48-bit-wide XOR with input registers, an output register with synchronous reset, and a
    cascade, as one DSP48E1 slice in logic mode computes it.

    ``p = a ^ c``, or ``p = a ^ pcin`` when ``cascade_in`` is set; ``pcout`` is the full 48-bit
    result, to feed the ``pcin`` of the next lane of a chain. With ``pcin_select`` the lane has
    both ``c`` and ``pcin`` and a ``sel_pcin`` input choosing, cycle by cycle, ``p = a ^ c`` (low)
    or ``p = pcin`` (high): a 2:1 multiplexer in front of the output register built from the
    DSP48E1's own X and Z multiplexers, driven through an unregistered ``OPMODE``; it costs one
    LUT, the select's inverter, which lanes sharing a select share in a flattened netlist.

    Latency: from ``a`` to ``p``: ``a_regs + p_reg`` cycles; from ``c``: ``c_regs + p_reg``; from
    ``pcin``: ``p_reg``; ``sel_pcin`` acts with the operand it selects. ``rst_p`` (with ``p_reg``)
    clears the output register on the next clock edge and takes priority over new data, so a
    lane can hold its output at zero. There is no clock enable: every register advances every
    cycle.

    On a Xilinx 7-series platform this is one DSP48E1 (``USE_MULT="NONE"``, ``ALUMODE=0100``,
    ``OPMODE`` X=A:B, Z=C or PCIN) whose AREG/BREG, CREG and PREG are the registers, so the lane
    costs no LUT or flip-flop; elsewhere (Lattice ECP5 included, whose DSP blocks have no wide
    logic mode) it is fabric logic with the same timing.

    Parameters
    ----------
    width : int
        Width of ``a``, ``c`` and ``p``, 1 to 48.
    a_regs : int
        Registers on ``a``: 0, 1 or 2 (the DSP48E1's A1/A2 and B1/B2).
    c_regs : int
        Registers on ``c``: 0 or 1 (CREG). Ignored with ``cascade_in``.
    p_reg : bool
        Output register (PREG).
    cascade_in : bool
        Take the second operand from ``pcin`` instead of ``c``.
    pcin_select : bool
        Add ``pcin`` and ``sel_pcin`` beside ``c`` (``p = pcin`` while ``sel_pcin`` is high).
        Not with ``cascade_in``.
    """

    def __init__(self, width=48, *, a_regs=1, c_regs=1, p_reg=True, cascade_in=False,
                 pcin_select=False):
        if not isinstance(width, int) or not 1 <= width <= 48:
            raise ValueError(f"width: {width!r} is out of range; allowed 1 to 48")
        if a_regs not in (0, 1, 2):
            raise ValueError(f"a_regs: {a_regs!r} is out of range; allowed 0, 1 or 2")
        if c_regs not in (0, 1):
            raise ValueError(f"c_regs: {c_regs!r} is out of range; allowed 0 or 1")
        self.width = width
        self.a_regs = a_regs
        self.c_regs = 0 if cascade_in else c_regs
        self.p_reg = bool(p_reg)
        self.cascade_in = bool(cascade_in)
        if cascade_in and pcin_select:
            raise ValueError("pcin_select: a lane with cascade_in has no c to select from")
        self.pcin_select = bool(pcin_select)
        members = {"a": In(width), "rst_p": In(1), "p": Out(width), "pcout": Out(48)}
        if cascade_in or pcin_select:
            members["pcin"] = In(48)
        if not cascade_in:
            members["c"] = In(width)
        if pcin_select:
            members["sel_pcin"] = In(1)
        super().__init__(members)

    @property
    def latency_a(self):
        """Cycles from ``a`` to ``p``."""
        return self.a_regs + self.p_reg

    @property
    def latency_c(self):
        """Cycles from ``c`` (or ``pcin``) to ``p``."""
        return self.c_regs + self.p_reg

    def elaborate(self, platform):
        if is_xilinx_7series(platform):
            return self._elaborate_xilinx()
        return self._elaborate_portable()

    def _elaborate_portable(self):
        m = Module()
        x = Signal(48)
        m.d.comb += x.eq(self.a)
        for i in range(self.a_regs):
            x_r = Signal(48, name=f"a_reg{i}")
            m.d.sync += x_r.eq(x)
            x = x_r
        if self.cascade_in:
            z = self.pcin
        else:
            z = Signal(48)
            m.d.comb += z.eq(self.c)
            if self.c_regs:
                z_r = Signal(48, name="c_reg")
                m.d.sync += z_r.eq(z)
                z = z_r
        result = Signal(48)
        if self.pcin_select:
            with m.If(self.sel_pcin):
                m.d.comb += result.eq(self.pcin)
            with m.Else():
                m.d.comb += result.eq(x ^ z)
        else:
            m.d.comb += result.eq(x ^ z)
        p = Signal(48)
        if self.p_reg:
            with m.If(self.rst_p):
                m.d.sync += p.eq(0)
            with m.Else():
                m.d.sync += p.eq(result)
        else:
            m.d.comb += p.eq(result)
        m.d.comb += [self.p.eq(p[:self.width]), self.pcout.eq(p)]
        return m

    def _elaborate_xilinx(self):
        m = Module()
        a48 = Signal(48)
        c48 = Signal(48)
        p48 = Signal(48)
        m.d.comb += a48.eq(self.a)
        if not self.cascade_in:
            m.d.comb += c48.eq(self.c)
        m.d.comb += [self.p.eq(p48[:self.width])]
        one, zero = Const(1), Const(0)
        if self.pcin_select:
            # _OPMODE_AB_C, or 0b001_00_00 (X = 0, Z = PCIN: P = PCIN): bits 0, 1 and 5 follow
            # the select.
            xor_ac = Signal()
            m.d.comb += xor_ac.eq(~self.sel_pcin)
            opmode = Cat(xor_ac, xor_ac, Const(0, 2), one, xor_ac, zero)
        else:
            opmode = Const(_OPMODE_AB_PCIN if self.cascade_in else _OPMODE_AB_C, 7)
        m.submodules.dsp = Instance(
            "DSP48E1",
            p_USE_MULT="NONE", p_USE_SIMD="ONE48", p_USE_DPORT="FALSE",
            p_USE_PATTERN_DETECT="NO_PATDET",
            p_A_INPUT="DIRECT", p_B_INPUT="DIRECT",
            p_AREG=self.a_regs, p_BREG=self.a_regs,
            p_ACASCREG=self.a_regs, p_BCASCREG=self.a_regs,
            p_CREG=self.c_regs, p_PREG=int(self.p_reg),
            p_MREG=0, p_ADREG=0, p_DREG=0,
            p_OPMODEREG=0, p_ALUMODEREG=0, p_INMODEREG=0,
            p_CARRYINREG=0, p_CARRYINSELREG=0,
            i_CLK=ClockSignal(),
            i_A=a48[18:48], i_B=a48[0:18], i_C=c48,
            i_PCIN=self.pcin if self.cascade_in or self.pcin_select else Const(0, 48),
            i_ACIN=Const(0, 30), i_BCIN=Const(0, 18), i_D=Const(0, 25),
            i_OPMODE=opmode,
            i_ALUMODE=Const(_ALUMODE_XOR, 4),
            i_INMODE=Const(0, 5), i_CARRYINSEL=Const(0, 3),
            i_CARRYIN=zero, i_CARRYCASCIN=zero, i_MULTSIGNIN=zero,
            # A1/A2 and B1/B2 are loaded every cycle; with AREG=1 the register used is A2.
            i_CEA1=one, i_CEA2=one, i_CEB1=one, i_CEB2=one, i_CEC=one, i_CEP=one,
            i_CEAD=zero, i_CED=zero, i_CEM=zero,
            i_CEALUMODE=one, i_CECTRL=one, i_CEINMODE=one, i_CECARRYIN=one,
            i_RSTA=zero, i_RSTB=zero, i_RSTC=zero, i_RSTD=zero, i_RSTM=zero,
            i_RSTP=self.rst_p, i_RSTALLCARRYIN=zero, i_RSTALUMODE=zero,
            i_RSTCTRL=zero, i_RSTINMODE=zero,
            o_P=p48, o_PCOUT=self.pcout,
        )
        return m
