"""PHY management: the link status read over MDIO (IEEE 802.3 clause 22)."""

from amaranth.hdl import Cat, Const, Module, Signal
from amaranth.lib import cdc, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["MdioLinkStatus", "mdc_half_period", "MDC_MAX_HZ", "BMSR", "BMSR_LINK_BIT"]

#: The fastest management clock clause 22 allows.
MDC_MAX_HZ = 2.5e6
#: The basic mode status register and the number of its link status bit (latched low: a link
#: that went down reads 0 once even if it is up again).
BMSR = 1
BMSR_LINK_BIT = 2
#: Bits of a read frame: preamble (32), start (2), opcode (2), PHY address (5), register
#: address (5), turnaround (2), data (16).
_PREAMBLE, _COMMAND, _FRAME = 32, 14, 64


def mdc_half_period(clk_freq, phy_address=1, mdc_hz=1.25e6):
    """``sync`` cycles of each MDC half period, after checking the parameters of
    :class:`MdioLinkStatus` (a ValueError names the one that is wrong)."""
    if not isinstance(phy_address, int) or not 0 <= phy_address <= 31:
        raise ValueError(f"phy_address: {phy_address!r} is not an MDIO address; allowed 0..31")
    if not 0 < mdc_hz <= MDC_MAX_HZ:
        raise ValueError(f"mdc_hz: {mdc_hz!r} is out of range; allowed above 0 up to "
                         f"{MDC_MAX_HZ:g}")
    half = -(-int(clk_freq) // int(2 * mdc_hz))
    if half < 4:
        raise ValueError(f"clk_freq: {clk_freq!r} Hz is too slow for MDC at {mdc_hz:g} Hz "
                         f"(4 clocks a half period needed for the input synchroniser)")
    return half


class MdioLinkStatus(wiring.Component):
    """Reads the PHY's basic mode status register over MDIO again and again, and keeps its
    link status.

    Each read is a clause 22 frame: 32 ones, start ``01``, read ``10``, the PHY address, the
    register (:data:`BMSR`), then the turnaround, in which the PHY drives ``0``, and 16 data
    bits, most significant first. The station drives ``mdio`` (``mdio_oe``) up to the
    turnaround, changing it on MDC's falling edge; the PHY's bits are sampled just before
    MDC's rising edge (through a two-flip-flop synchroniser; the PHY may take 300 ns after a
    rising edge to change its output, well within the half period at ``mdc_hz``).

    Outputs: ``present`` (the last frame's turnaround bit was driven low: a PHY answers at
    that address), ``link_up`` (the last read's link bit, with a PHY present) and
    ``link_losses`` (16 bits, wrapping: how often ``link_up`` fell). ``status`` is the last
    register value read.

    Parameters
    ----------
    clk_freq : float
        The ``sync`` clock in Hz.
    phy_address : int
        The PHY's MDIO address, 0..31 (set by its straps).
    mdc_hz : float
        MDC's frequency at most (default 1.25 MHz; clause 22 allows 2.5 MHz).
    poll_hz : float
        Reads a second at most (default 100).
    """

    def __init__(self, *, clk_freq, phy_address=1, mdc_hz=1.25e6, poll_hz=100):
        #: sync cycles of each MDC half period (the rising edge in the middle of a bit).
        self.half = mdc_half_period(clk_freq, phy_address, mdc_hz)
        self.phy_address = phy_address
        #: sync cycles between the starts of two reads.
        self.period = max(int(clk_freq / poll_hz), 2 * self.half * (_FRAME + 1))
        super().__init__({
            "mdc": Out(1), "mdio_o": Out(1), "mdio_oe": Out(1), "mdio_i": In(1),
            "present": Out(1), "link_up": Out(1), "link_losses": Out(16), "status": Out(16),
        })

    def elaborate(self, platform):
        m = Module()
        # What the station drives, bit k of the frame in bit k: the preamble, then the command
        # (start, read, addresses) most significant bit first.
        command = (0b01 << 12) | (0b10 << 10) | (self.phy_address << 5) | BMSR
        bits = [1] * _PREAMBLE + [command >> (_COMMAND - 1 - k) & 1 for k in range(_COMMAND)]
        sent = Const(sum(b << k for k, b in enumerate(bits)), _PREAMBLE + _COMMAND)
        mdio_in = Signal()
        m.submodules.sync_in = cdc.FFSynchronizer(self.mdio_i, mdio_in)

        wait = Signal(range(self.period), init=self.period - 1)
        tick = Signal(range(self.half))     # sync cycles into the current MDC half
        high = Signal()                     # MDC's level
        bit = Signal(range(_FRAME + 1), init=_FRAME)  # the frame's bit; _FRAME: idle
        shift = Signal(16)
        turnaround_low = Signal()
        m.d.comb += [self.mdc.eq(high),
                     self.mdio_o.eq(sent.bit_select(bit, 1)),
                     self.mdio_oe.eq(bit < _PREAMBLE + _COMMAND)]

        with m.If(bit == _FRAME):
            m.d.sync += wait.eq(wait - 1)
            with m.If(wait == 0):
                m.d.sync += [wait.eq(self.period - 1), bit.eq(0), tick.eq(0), high.eq(0)]
        with m.Elif(tick == self.half - 1):
            m.d.sync += [tick.eq(0), high.eq(~high)]
            with m.If(~high):
                # The rising edge: what the PHY drives for this bit has been stable since the
                # previous rising edge, and is sampled now.
                with m.If(bit == _PREAMBLE + _COMMAND + 1):
                    m.d.sync += turnaround_low.eq(~mdio_in)
                m.d.sync += shift.eq(Cat(mdio_in, shift[:-1]))
            with m.Else():
                m.d.sync += bit.eq(bit + 1)
                with m.If(bit == _FRAME - 1):
                    up = turnaround_low & shift[BMSR_LINK_BIT]
                    m.d.sync += [self.present.eq(turnaround_low), self.status.eq(shift),
                                 self.link_up.eq(up)]
                    with m.If(self.link_up & ~up):
                        m.d.sync += self.link_losses.eq(self.link_losses + 1)
        with m.Else():
            m.d.sync += tick.eq(tick + 1)
        return m
