"""The RGMII PHY interface (1000, 100 and 10 Mbit/s): DDR nibbles to and from byte streams in
the appliance's clock domain."""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import cdc, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from ....primitives import DDRInput, DDROutput, InputDelay
from .common import BYTES
from .crossing import ReadRegisteredAsyncFIFO
from .phy import IFG_BYTES, phy_clock_domains

__all__ = ["RGMII", "SPEED_CODES", "RGMII_SPEEDS"]

#: The in-band status speed codes (RXD[2:1] between frames) of each speed in Mbit/s.
SPEED_CODES = {10: 0, 100: 1, 1000: 2}
#: The ``speed`` values :class:`RGMII` takes: fixed speeds, or ``"auto"``.
RGMII_SPEEDS = ("auto", 1000, 100, 10)
#: 125 MHz clocks a nibble lasts at 100 and 10 Mbit/s.
_NIBBLE_CLOCKS = {100: 5, 10: 50}


class RGMII(wiring.Component):
    """An RGMII PHY port: 4 data bits and a control bit on each edge of a 125 MHz clock at
    1000 Mbit/s, a nibble a clock (on the rising edge, repeated on the falling one) of 25 or
    2.5 MHz at 100 and 10 Mbit/s, low nibble first.

    The pins go through the DDR registers of :mod:`aes_fpga.primitives` (the pins' own I/O
    registers on ECP5 and 7-series). ``rx_ctl`` carries RX_DV on the rising edge and
    RX_DV xor RX_ER on the falling one, ``tx_ctl`` the same of TX_EN (TX_ER is never sent).

    Receive (clocked by the PHY's ``rx_clk``; RXD and RX_CTL delayed by ``rx_delay_ps`` when
    the PHY does not delay the clock itself): from the SFD on, bytes cross into ``sync``
    through an :class:`~amaranth.lib.fifo.AsyncFIFO` and leave on ``rx`` as
    :class:`~.phy.MII` gives them (``last`` on the final byte, one byte time late; not
    back-pressured: ``sync`` must take a byte each cycle, so at 1000 Mbit/s it must run at
    125 MHz or faster; bytes that find the FIFO full are lost, and the frame fails its FCS
    check but for a 2**-32 chance). A frame with RX_ER has its first errored byte inverted,
    which no CRC-32 misses, so the MAC drops it. Between frames (RX_DV and RX_ER low) the
    PHY's in-band status is read from RXD: link (bit 0), speed (bits 2:1,
    :data:`SPEED_CODES`) and full duplex (bit 3); it comes out, synchronised to ``sync``, on
    ``link_up``, ``link_speed`` and ``full_duplex``.

    Transmit (clocked by ``clk125``, 125 MHz): bytes from ``tx`` (preamble to FCS, as
    :class:`~.mac.MACTx` makes them) go out a byte a clock at 1000 Mbit/s, a nibble each 5 or
    50 clocks at 100 or 10, followed by :data:`~.phy.IFG_BYTES` idle byte times; ``tx`` is
    back-pressured by the transmit FIFO (a :class:`~.crossing.ReadRegisteredAsyncFIFO`). A
    frame starts when all of it, or ``tx_start_level`` bytes of it, have crossed into the
    transmit domain: once started it must keep coming at
    the line rate on average, the FIFO covering stalls of up to ``tx_start_level`` byte times
    in all (a frame that runs dry is cut short, and the peer sees a bad FCS). ``tx_clk`` is
    made from ``clk125`` by a DDR output register like the data's: 125 MHz, or 25 or 2.5 MHz
    with a 50 % duty cycle; its rising edges come with the data's changes (edge-aligned, as the
    RGMII specification has it: the PHY's internal transmit clock delay, or the board, puts the
    edge in the middle of the data).

    The speed is followed at run time from the in-band status with ``speed="auto"`` (a speed
    change applies from the next frame; one in flight is lost), or fixed for a PHY that gives
    no in-band status. The receive and transmit clock domains are made here from ``rx_clk``
    and ``clk125``; their resets are ``sync``'s, synchronised to each clock.

    Parameters
    ----------
    speed : str or int
        ``"auto"`` (from the in-band status), or 1000, 100 or 10 (Mbit/s).
    rx_delay_ps : int
        A fixed delay on RXD and RX_CTL (:class:`~aes_fpga.primitives.InputDelay`), for a PHY
        without an internal receive clock delay; 0 (the default) for none.
    rx_domain, tx_domain : str
        Names of the receive and transmit clock domains.
    fifo_depth : int
        Entries of the receive clock domain crossing FIFO.
    tx_buffer : int
        Bytes of the transmit clock domain crossing FIFO (a power of 2, 16 or more).
    tx_start_level : int
        Bytes in the transmit FIFO before a frame starts (unless all of it is in already).
    """

    def __init__(self, *, speed="auto", rx_delay_ps=0, rx_domain="eth_rx", tx_domain="eth_tx",
                 fifo_depth=16, tx_buffer=64, tx_start_level=48):
        if speed not in RGMII_SPEEDS:
            raise ValueError(f"speed: {speed!r} is not an RGMII speed; allowed "
                             f"{', '.join(map(repr, RGMII_SPEEDS))}")
        for name, value in (("rx_domain", rx_domain), ("tx_domain", tx_domain)):
            if not isinstance(value, str) or not value.isidentifier() or value == "sync":
                raise ValueError(f"{name}: {value!r} is not a clock domain name other than "
                                 f"'sync'")
        if rx_domain == tx_domain:
            raise ValueError(f"tx_domain: {tx_domain!r} is also the receive domain")
        self.speed = speed
        self.rx_delay_ps = rx_delay_ps
        InputDelay.check_delay(rx_delay_ps)
        self.rx_domain = rx_domain
        self.tx_domain = tx_domain
        self.fifo_depth = fifo_depth
        if not isinstance(tx_buffer, int) or tx_buffer < 16 or tx_buffer & (tx_buffer - 1):
            raise ValueError(f"tx_buffer: {tx_buffer!r} is not a power of 2 from 16")
        if not isinstance(tx_start_level, int) or not 1 <= tx_start_level <= tx_buffer - 1:
            raise ValueError(f"tx_start_level: {tx_start_level!r} is out of range; allowed 1 "
                             f"to {tx_buffer - 1}")
        self.tx_buffer = tx_buffer
        self.tx_start_level = tx_start_level
        super().__init__({
            "rx_clk": In(1), "rxd": In(4), "rx_ctl": In(1),
            "clk125": In(1), "tx_clk": Out(1), "txd": Out(4), "tx_ctl": Out(1),
            "rx": Out(stream.Signature(BYTES)),
            "tx": In(stream.Signature(BYTES)),
            "link_up": Out(1), "link_speed": Out(2), "full_duplex": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        rxd_, txd_ = self.rx_domain, self.tx_domain
        phy_clock_domains(m, rxd_, self.rx_clk, txd_, self.clk125)

        pins = Signal(5)
        if self.rx_delay_ps:
            m.submodules.rx_delay = delay = InputDelay(5, delay_ps=self.rx_delay_ps)
            m.d.comb += [delay.a.eq(Cat(self.rxd, self.rx_ctl)), pins.eq(delay.z)]
        else:
            m.d.comb += pins.eq(Cat(self.rxd, self.rx_ctl))
        m.submodules.rx_ddr = rx_ddr = DDRInput(5, domain=rxd_)
        m.d.comb += rx_ddr.d.eq(pins)

        status = self._status(m, rx_ddr)
        self._receive(m, rx_ddr, status)
        self._transmit(m, status)
        return m

    def _status(self, m, rx_ddr):
        """The in-band status, kept in the receive domain and synchronised to ``sync``; the
        speed code the receive path uses."""
        rx = m.d[self.rx_domain]
        lo, dv, dv_er = rx_ddr.q0[:4], rx_ddr.q0[4], rx_ddr.q1[4]
        link = Signal()
        code = Signal(2)
        duplex = Signal()
        with m.If(~dv & ~dv_er):
            rx += [link.eq(lo[0]), code.eq(lo[1:3]), duplex.eq(lo[3])]
        for name, src, out in (("link", link, self.link_up), ("code", code, self.link_speed),
                               ("duplex", duplex, self.full_duplex)):
            m.submodules[f"{name}_sync"] = cdc.FFSynchronizer(src, out)
        if self.speed == "auto":
            return code
        return Const(SPEED_CODES[self.speed], 2)

    def _receive(self, m, rx_ddr, code):
        rx = m.d[self.rx_domain]
        m.submodules.rx_fifo = rx_fifo = fifo.AsyncFIFO(
            width=9, depth=self.fifo_depth, w_domain=self.rx_domain, r_domain="sync")
        lo, hi = rx_ddr.q0[:4], rx_ddr.q1[:4]
        dv = rx_ddr.q0[4]
        err = dv & (rx_ddr.q1[4] == 0)       # RX_DV xor RX_ER low while RX_DV is high
        gig = code == SPEED_CODES[1000]
        prev = Signal(4)
        aligned = Signal()
        half = Signal()         # nibble mode: the low nibble of the byte being built has come
        low = Signal(4)
        held = Signal(8)        # the previous byte, sent when the next one or the end shows
        has_held = Signal()
        poisoned = Signal()     # a byte of this frame was inverted for RX_ER
        push = Signal()
        push_last = Signal()
        m.d.comb += [rx_fifo.w_en.eq(push), rx_fifo.w_data.eq(held | (push_last << 8))]

        def take(byte):
            flip = err & ~poisoned
            d = m.d[self.rx_domain]
            d += [held.eq(byte ^ Mux(flip, 0xFF, 0)), has_held.eq(1)]
            with m.If(flip):
                d += poisoned.eq(1)
            m.d.comb += push.eq(has_held)

        with m.If(dv):
            rx += prev.eq(lo)
            with m.If(gig):
                with m.If(~aligned):
                    with m.If(Cat(lo, hi) == 0xD5):
                        rx += [aligned.eq(1), held.eq(0xD5), has_held.eq(1)]
                with m.Else():
                    take(Cat(lo, hi))
            with m.Elif(~aligned):
                with m.If((prev == 0x5) & (lo == 0xD)):
                    rx += [aligned.eq(1), half.eq(0), held.eq(0xD5), has_held.eq(1)]
            with m.Elif(~half):
                rx += [low.eq(lo), half.eq(1)]
            with m.Else():
                rx += half.eq(0)
                take(Cat(low, lo))
        with m.Else():
            rx += [aligned.eq(0), half.eq(0), has_held.eq(0), prev.eq(0), poisoned.eq(0)]
            m.d.comb += [push.eq(has_held), push_last.eq(1)]
        m.d.comb += [self.rx.valid.eq(rx_fifo.r_rdy), rx_fifo.r_en.eq(self.rx.ready),
                     self.rx.payload.eq(rx_fifo.r_data)]

    def _transmit(self, m, code):
        txd_ = self.tx_domain
        tx = m.d[txd_]
        # Read side from registers (empty flag, read pointer into the LUT RAM's asynchronous
        # read): the 125 MHz transmit logic's read enable and byte then start at flip-flops.
        m.submodules.tx_fifo = tx_fifo = ReadRegisteredAsyncFIFO(
            width=9, depth=self.tx_buffer, w_domain="sync", r_domain=txd_)
        m.d.comb += [tx_fifo.w_en.eq(self.tx.valid), tx_fifo.w_data.eq(self.tx.payload),
                     self.tx.ready.eq(tx_fifo.w_rdy)]
        ready = self._frame_ready(m, tx_fifo)
        if isinstance(code, Const):
            speed = code
        else:
            speed = Signal(2)
            m.submodules.speed_sync = cdc.FFSynchronizer(code, speed, o_domain=txd_)
        gig = speed == SPEED_CODES[1000]
        # The nibble time's constants, chosen by a registered flag (the speed changes seldom):
        # no arithmetic on a run-time period on the 125 MHz paths.
        fast = Signal()
        tx += fast.eq(speed == SPEED_CODES[100])

        def per_speed(f):
            return Mux(fast, f(_NIBBLE_CLOCKS[100]), f(_NIBBLE_CLOCKS[10]))

        # What the DDR output registers send this clock: data, TX_EN, clock, on each edge.
        data = [Signal(4, name="txd_rise"), Signal(4, name="txd_fall")]
        en = Signal()
        clk = [Signal(name="txc_rise"), Signal(name="txc_fall")]
        m.submodules.tx_ddr = tx_ddr = DDROutput(6, domain=txd_)
        m.d.comb += [tx_ddr.d0.eq(Cat(data[0], en, clk[0])),
                     tx_ddr.d1.eq(Cat(data[1], en, clk[1])),
                     Cat(self.txd, self.tx_ctl, self.tx_clk).eq(tx_ddr.q)]

        byte = tx_fifo.r_data[:8]
        end = tx_fifo.r_data[8]
        sending = Signal()      # a frame has started and its last byte has not been read
        go = tx_fifo.r_rdy & (sending | ready)
        gap = Signal(range(2 * IFG_BYTES + 1))
        gap_done = Signal(init=1)   # gap == 0, registered with it
        high = Signal()
        phase = Signal(range(max(_NIBBLE_CLOCKS.values())))
        at_end = Signal()           # phase >= n - 1, registered with phase

        def set_gap(value):
            m.d[txd_] += [gap.eq(value), gap_done.eq(value == 0)]

        nxt = Mux(at_end, 0, phase + 1)
        # The FIFO's read enable moves its read pointer: r_rdy (a register) and'ed with flags
        # that are all registers, so it is a LUT or two from flip-flops.
        m.d.comb += tx_fifo.r_en.eq(tx_fifo.r_rdy & gap_done & Mux(
            gig, sending | ready, at_end & high))
        with m.If(gig):
            tx += [clk[0].eq(1), clk[1].eq(0), phase.eq(0), at_end.eq(0), high.eq(0)]
            tx += [en.eq(0), data[0].eq(0), data[1].eq(0)]
            with m.If(~gap_done):
                set_gap(gap - 1)
            with m.Elif(go):
                tx += [en.eq(1), data[0].eq(byte[:4]), data[1].eq(byte[4:]), sending.eq(~end)]
                with m.If(end):
                    set_gap(IFG_BYTES)
        with m.Else():
            # The clock's level on each edge of the next clock period: high for the first
            # half of the nibble time (rising edge: 2 * nxt < n; falling: 2 * nxt + 1 < n).
            # at_end with >=: a speed change mid-count ends the nibble time at once.
            tx += [phase.eq(nxt), at_end.eq(per_speed(lambda n: nxt >= n - 1)),
                   clk[0].eq(per_speed(lambda n: nxt < (n + 1) // 2)),
                   clk[1].eq(per_speed(lambda n: nxt < n // 2))]
            with m.If(at_end):
                tx += [en.eq(0), data[0].eq(0), data[1].eq(0)]
                with m.If(~gap_done):
                    set_gap(gap - 1)
                with m.Elif(go | (high & tx_fifo.r_rdy)):
                    nibble = byte.word_select(high, 4)
                    tx += [en.eq(1), data[0].eq(nibble), data[1].eq(nibble), high.eq(~high)]
                    with m.If(high):
                        tx += sending.eq(~end)
                        with m.If(end):
                            set_gap(2 * IFG_BYTES)

    def _frame_ready(self, m, tx_fifo):
        """Whether a frame may start: its last byte is in the transmit FIFO, or
        ``tx_start_level`` bytes are (so the FIFO covers the stalls of a frame arriving at
        about the line rate). Frames ended are counted in ``sync`` in Gray code, which crosses
        safely (one bit changes per frame, and frames are dozens of cycles apart)."""
        frames = 1 + (self.tx_buffer // 64 + 2).bit_length()
        written = Signal(frames)
        with m.If(tx_fifo.w_en & tx_fifo.w_rdy & tx_fifo.w_data[8]):
            m.d.sync += written.eq(written + 1)
        written_gray = Signal(frames)
        m.d.sync += written_gray.eq(written ^ (written >> 1))
        seen = Signal(frames)
        m.submodules.frames_sync = cdc.FFSynchronizer(written_gray, seen, o_domain=self.tx_domain)
        read = Signal(frames)
        with m.If(tx_fifo.r_en & tx_fifo.r_rdy & tx_fifo.r_data[8]):
            m.d[self.tx_domain] += read.eq(read + 1)
        # Registered, off the 125 MHz paths: a cycle late is safe, as the level only grows
        # while no frame is being read, and a frame's end is followed by the gap.
        ready = Signal()
        m.d[self.tx_domain] += ready.eq((seen != (read ^ (read >> 1)))
                                        | (tx_fifo.r_level >= self.tx_start_level))
        return ready
