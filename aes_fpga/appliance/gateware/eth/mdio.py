"""PHY management: the link status read over MDIO (IEEE 802.3 clause 22), and what the PHY
advertises written once where a board fixes the link speed."""

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import cdc, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["MdioLinkStatus", "mdc_half_period", "advertise_only", "MDC_MAX_HZ", "BMSR",
           "BMSR_LINK_BIT", "BMCR", "ANAR", "GBCR", "BMCR_RESTART_AN"]

#: The fastest management clock clause 22 allows.
MDC_MAX_HZ = 2.5e6
#: The basic mode status register and the number of its link status bit (latched low: a link
#: that went down reads 0 once even if it is up again).
BMSR = 1
BMSR_LINK_BIT = 2
#: The registers written to choose what the PHY advertises: basic mode control, the
#: auto-negotiation advertisement and the 1000BASE-T control register (clause 40's
#: MASTER-SLAVE control register, the same number on every Gigabit PHY).
BMCR, ANAR, GBCR = 0, 4, 9
#: BMCR: auto-negotiation enabled (bit 12) and restarted (bit 9), so a new advertisement is
#: negotiated at once.
BMCR_RESTART_AN = 0x1200
#: ANAR's technology bits (half and full duplex) of each speed it can advertise, and its
#: selector field (IEEE 802.3).
_ANAR_SPEED = {100: 0x0180, 10: 0x0060}
_ANAR_802_3 = 0x0001
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


def advertise_only(speed):
    """The writes, ``(register, value)`` in order, that make a clause 22 PHY advertise
    ``speed`` (100 or 10 Mbit/s) only, half and full duplex, and negotiate again: the
    advertisement (:data:`ANAR`, no pause), the 1000BASE-T control register (:data:`GBCR`: no
    1000BASE-T, automatic master/slave), then :data:`BMCR` restarting auto-negotiation. A
    Gigabit peer then agrees on ``speed``."""
    if speed not in _ANAR_SPEED:
        raise ValueError(f"speed: {speed!r} is not a speed to advertise alone; allowed "
                         f"{', '.join(map(str, _ANAR_SPEED))}")
    return ((ANAR, _ANAR_SPEED[speed] | _ANAR_802_3), (GBCR, 0x0000), (BMCR, BMCR_RESTART_AN))


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

    With ``setup``, writes (``(register, value)`` pairs, e.g. :func:`advertise_only`) go to
    the PHY once, one in place of each of the next reads, from the poll after the first read
    a PHY answered (so they reach a PHY out of its reset); the reads go on after them. A write
    frame is 32 ones, start ``01``, write ``01``, the addresses, turnaround ``10`` and the 16
    data bits, all driven by the station.

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
    setup : tuple of (int, int)
        Registers (0..31) written once and the values (16 bits) written to them, in order;
        empty (the default) for none.
    """

    def __init__(self, *, clk_freq, phy_address=1, mdc_hz=1.25e6, poll_hz=100, setup=()):
        #: sync cycles of each MDC half period (the rising edge in the middle of a bit).
        self.half = mdc_half_period(clk_freq, phy_address, mdc_hz)
        self.phy_address = phy_address
        setup = tuple(setup)
        for write in setup:
            if (not isinstance(write, tuple) or len(write) != 2
                    or not all(isinstance(v, int) for v in write)
                    or not 0 <= write[0] <= 31 or not 0 <= write[1] <= 0xFFFF):
                raise ValueError(f"setup: {write!r} is not a (register 0..31, 16-bit value) "
                                 f"write")
        self.setup = setup
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
        sent = _frame_bits((0b01 << 12) | (0b10 << 10) | (self.phy_address << 5) | BMSR,
                           _COMMAND)
        # With setup writes: the frame being sent, the read (len(setup)) or a write; the next
        # write's index (len(setup): none due); whether the writes were started. (Made only
        # with writes: without, the netlist is the reader's alone.)
        n_writes = len(self.setup)
        if n_writes:
            frame = Signal(range(n_writes + 1), init=n_writes)
            due = Signal(range(n_writes + 1), init=n_writes)
            started = Signal()
            is_read = frame == n_writes
        mdio_in = Signal()
        m.submodules.sync_in = cdc.FFSynchronizer(self.mdio_i, mdio_in)

        wait = Signal(range(self.period), init=self.period - 1)
        tick = Signal(range(self.half))     # sync cycles into the current MDC half
        high = Signal()                     # MDC's level
        bit = Signal(range(_FRAME + 1), init=_FRAME)  # the frame's bit; _FRAME: idle
        shift = Signal(16)
        turnaround_low = Signal()
        m.d.comb += self.mdc.eq(high)
        if n_writes:
            frames = Array([self._write_frame(reg, value) for reg, value in self.setup]
                           + [sent])
            m.d.comb += [self.mdio_o.eq(frames[frame].bit_select(bit, 1)),
                         self.mdio_oe.eq(Mux(is_read, bit < _PREAMBLE + _COMMAND,
                                             bit < _FRAME))]
        else:
            m.d.comb += [self.mdio_o.eq(sent.bit_select(bit, 1)),
                         self.mdio_oe.eq(bit < _PREAMBLE + _COMMAND)]

        with m.If(bit == _FRAME):
            m.d.sync += wait.eq(wait - 1)
            with m.If(wait == 0):
                m.d.sync += [wait.eq(self.period - 1), bit.eq(0), tick.eq(0), high.eq(0)]
                if n_writes:
                    m.d.sync += frame.eq(due)
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
                read_end = bit == _FRAME - 1
                if n_writes:
                    read_end &= is_read
                with m.If(read_end):
                    up = turnaround_low & shift[BMSR_LINK_BIT]
                    m.d.sync += [self.present.eq(turnaround_low), self.status.eq(shift),
                                 self.link_up.eq(up)]
                    with m.If(self.link_up & ~up):
                        m.d.sync += self.link_losses.eq(self.link_losses + 1)
                    if n_writes:
                        with m.If(turnaround_low & ~started):
                            m.d.sync += [due.eq(0), started.eq(1)]
                if n_writes:
                    with m.If((bit == _FRAME - 1) & ~is_read):
                        m.d.sync += due.eq(due + 1)
        with m.Else():
            m.d.sync += tick.eq(tick + 1)
        return m

    def _write_frame(self, register, value):
        """The write frame to ``register`` of ``value``, bit k of the frame in bit k."""
        return _frame_bits((0b01 << 30) | (0b01 << 28) | (self.phy_address << 23)
                           | (register << 18) | (0b10 << 16) | value, _FRAME - _PREAMBLE)


def _frame_bits(command, width):
    """The station's bits of a frame: the preamble's ones, then the ``width``-bit ``command``
    from its top bit on; the bit sent k-th in bit k."""
    bits = [1] * _PREAMBLE + [command >> (width - 1 - k) & 1 for k in range(width)]
    return Const(sum(b << k for k, b in enumerate(bits)), _PREAMBLE + width)
