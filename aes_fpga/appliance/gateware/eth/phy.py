"""PHY interfaces: MII (4 bits a clock, clocks from the PHY) to and from byte streams in the
appliance's clock domain."""

from amaranth.hdl import Cat, ClockDomain, ClockSignal, Module, Mux, ResetSignal, Signal
from amaranth.lib import cdc, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from .common import BYTES

__all__ = ["MII", "RMII", "IFG_BYTES", "phy_clock_domains"]

#: The inter-frame gap, in byte times.
IFG_BYTES = 12



def phy_clock_domains(m, rx_domain, rx_clk, tx_domain, tx_clk):
    """Add to ``m`` the PHY's receive and transmit clock domains, clocked by ``rx_clk`` and
    ``tx_clk``, each reset from ``sync``'s reset through a synchroniser (MII and RGMII)."""
    m.domains += ClockDomain(rx_domain)
    m.domains += ClockDomain(tx_domain)
    m.d.comb += [ClockSignal(rx_domain).eq(rx_clk), ClockSignal(tx_domain).eq(tx_clk)]
    m.submodules.rx_reset = cdc.ResetSynchronizer(ResetSignal("sync"), domain=rx_domain)
    m.submodules.tx_reset = cdc.ResetSynchronizer(ResetSignal("sync"), domain=tx_domain)

class MII(wiring.Component):
    """An MII PHY port (100 Mbit/s: 25 MHz ``rx_clk``/``tx_clk`` from the PHY, a nibble a
    clock, low nibble first).

    Receive: nibbles while ``rx_dv`` is high are paired into bytes from the SFD on (a
    preamble of any length is skipped, and a frame without an SFD yields nothing); each byte
    crosses into the ``sync`` domain through an :class:`~amaranth.lib.fifo.AsyncFIFO` and
    comes out on ``rx`` (``last`` on a frame's final byte, known when ``rx_dv`` falls, so the
    last byte leaves one byte time late). ``rx`` is not back-pressured: the consumer must take a
    byte a cycle (``sync`` runs faster than the byte rate, 12.5 MHz).

    Transmit: bytes from ``tx`` (preamble to FCS, as :class:`~.mac.MACTx` makes them) cross into
    the transmit domain and go out as nibbles with ``tx_en``; after a frame's ``last`` byte
    the line stays idle for :data:`IFG_BYTES` byte times. The frame must arrive at least at
    the line rate once started (a gap mid-frame ends it early, and the receiver sees a bad
    FCS).

    The PHY clock domains (``rx_domain``, ``tx_domain``) are made here from ``rx_clk`` and
    ``tx_clk``; their resets are ``sync``'s reset, synchronised to each clock.
    """

    def __init__(self, *, rx_domain="eth_rx", tx_domain="eth_tx", fifo_depth=8):
        for name, value in (("rx_domain", rx_domain), ("tx_domain", tx_domain)):
            if not isinstance(value, str) or not value.isidentifier() or value == "sync":
                raise ValueError(f"{name}: {value!r} is not a clock domain name other than "
                                 f"'sync'")
        self.rx_domain = rx_domain
        self.tx_domain = tx_domain
        self.fifo_depth = fifo_depth
        super().__init__({
            "rx_clk": In(1), "rxd": In(4), "rx_dv": In(1),
            "tx_clk": In(1), "txd": Out(4), "tx_en": Out(1),
            "rx": Out(stream.Signature(BYTES)),
            "tx": In(stream.Signature(BYTES)),
        })

    def elaborate(self, platform):
        m = Module()
        rxd_, txd_ = self.rx_domain, self.tx_domain
        phy_clock_domains(m, rxd_, self.rx_clk, txd_, self.tx_clk)

        # ---- receive ----------------------------------------------------------------------
        m.submodules.rx_fifo = rx_fifo = fifo.AsyncFIFO(
            width=9, depth=self.fifo_depth, w_domain=rxd_, r_domain="sync")
        rx = m.d[rxd_]
        dv = Signal()
        nibble = Signal(4)
        rx += [dv.eq(self.rx_dv), nibble.eq(self.rxd)]   # the PHY's outputs, registered
        prev = Signal(4)
        aligned = Signal()
        half = Signal()         # the low nibble of the byte being built has come
        low = Signal(4)
        held = Signal(8)        # the previous byte, sent when the next one or the end shows
        has_held = Signal()
        push = Signal()
        push_byte = Signal(8)
        push_last = Signal()
        m.d.comb += [rx_fifo.w_en.eq(push), rx_fifo.w_data.eq(push_byte | (push_last << 8))]
        with m.If(dv):
            rx += prev.eq(nibble)
            with m.If(~aligned):
                with m.If((prev == 0x5) & (nibble == 0xD)):
                    rx += [aligned.eq(1), half.eq(0), held.eq(0xD5), has_held.eq(1)]
            with m.Elif(~half):
                rx += [low.eq(nibble), half.eq(1)]
            with m.Else():
                rx += [half.eq(0), held.eq(nibble << 4 | low), has_held.eq(1)]
                m.d.comb += [push.eq(has_held), push_byte.eq(held)]
        with m.Else():
            rx += [aligned.eq(0), half.eq(0), has_held.eq(0), prev.eq(0)]
            m.d.comb += [push.eq(has_held), push_byte.eq(held), push_last.eq(1)]
        m.d.comb += [self.rx.valid.eq(rx_fifo.r_rdy), rx_fifo.r_en.eq(self.rx.ready),
                     self.rx.payload.eq(rx_fifo.r_data)]

        # ---- transmit ---------------------------------------------------------------------
        m.submodules.tx_fifo = tx_fifo = fifo.AsyncFIFO(
            width=9, depth=self.fifo_depth, w_domain="sync", r_domain=txd_)
        m.d.comb += [tx_fifo.w_en.eq(self.tx.valid), tx_fifo.w_data.eq(self.tx.payload),
                     self.tx.ready.eq(tx_fifo.w_rdy)]
        tx = m.d[txd_]
        high = Signal()
        gap = Signal(range(2 * IFG_BYTES + 1))
        byte = tx_fifo.r_data[:8]
        end = tx_fifo.r_data[8]
        tx += [self.tx_en.eq(0), self.txd.eq(0)]
        with m.If(gap != 0):
            tx += gap.eq(gap - 1)
        with m.Elif(tx_fifo.r_rdy):
            tx += [self.tx_en.eq(1), self.txd.eq(byte.word_select(high, 4)), high.eq(~high)]
            with m.If(high):
                m.d.comb += tx_fifo.r_en.eq(1)
                with m.If(end):
                    tx += gap.eq(2 * IFG_BYTES)
        return m


class RMII(wiring.Component):
    """An RMII PHY port: 2 bits a clock of the 50 MHz ``ref_clk``, at 100 Mbit/s or, with
    ``speed=10``, 10 Mbit/s (each dibit held for 10 clocks), low bits first.

    Receive: dibits are taken while ``crs_dv`` is high, paired into bytes from the SFD on.
    The frame ends at the second clock (sample, at 10 Mbit/s) of ``crs_dv`` low: ``crs_dv``
    toggles at nibble boundaries while the PHY drains its buffer after the carrier has gone,
    and the data stays valid then; a partial byte at the end is discarded. Bytes cross into
    ``sync`` and leave on ``rx`` as :class:`MII` gives them (not back-pressured).

    Transmit: bytes from ``tx`` (preamble to FCS) go out as dibits with ``tx_en``, with an
    inter-frame gap of :data:`IFG_BYTES` byte times after each frame's ``last`` byte; the
    frame must arrive at the line rate once started.

    The ``domain`` clock domain is made here from ``ref_clk``, its reset is ``sync``'s,
    synchronised.
    """

    def __init__(self, *, speed=100, domain="eth_rmii", fifo_depth=8):
        if speed not in (10, 100):
            raise ValueError(f"speed: {speed!r} is not an RMII speed; allowed 10, 100 (Mbit/s)")
        if not isinstance(domain, str) or not domain.isidentifier() or domain == "sync":
            raise ValueError(f"domain: {domain!r} is not a clock domain name other than 'sync'")
        self.speed = speed
        self.domain = domain
        self.fifo_depth = fifo_depth
        super().__init__({
            "ref_clk": In(1), "rxd": In(2), "crs_dv": In(1),
            "txd": Out(2), "tx_en": Out(1),
            "rx": Out(stream.Signature(BYTES)),
            "tx": In(stream.Signature(BYTES)),
        })

    def elaborate(self, platform):
        m = Module()
        dom = self.domain
        m.domains += ClockDomain(dom)
        m.d.comb += ClockSignal(dom).eq(self.ref_clk)
        m.submodules.reset = cdc.ResetSynchronizer(ResetSignal("sync"), domain=dom)
        d = m.d[dom]
        repeat = 100 // self.speed       # clocks a dibit lasts

        # ---- receive ----------------------------------------------------------------------
        m.submodules.rx_fifo = rx_fifo = fifo.AsyncFIFO(
            width=9, depth=self.fifo_depth, w_domain=dom, r_domain="sync")
        dv = Signal()
        dibit = Signal(2)
        d += [dv.eq(self.crs_dv), dibit.eq(self.rxd)]    # the PHY's outputs, registered
        # At 10 Mbit/s, a dibit is sampled in the middle of its 10 clocks, counted from the
        # first clock of carrier.
        phase = Signal(range(repeat))
        sample = Signal()
        idle = Signal(init=1)
        if repeat == 1:
            m.d.comb += sample.eq(1)
        else:
            with m.If(idle & ~dv):
                d += phase.eq(0)
            with m.Elif(phase == repeat - 1):
                d += phase.eq(0)
            with m.Else():
                d += phase.eq(phase + 1)
            m.d.comb += sample.eq(phase == repeat // 2)
        prev_dv = Signal()
        aligned = Signal()
        count = Signal(2)       # dibits of the byte being built
        shift = Signal(8)
        held = Signal(8)
        has_held = Signal()
        push = Signal()
        push_last = Signal()
        m.d.comb += [rx_fifo.w_en.eq(push), rx_fifo.w_data.eq(held | (push_last << 8))]
        with m.If(sample):
            d += prev_dv.eq(dv)
            with m.If(~dv & ~prev_dv):
                # Carrier gone (two low samples): the frame, if any, ends.
                d += [aligned.eq(0), has_held.eq(0), count.eq(0), idle.eq(1), shift.eq(0)]
                m.d.comb += [push.eq(has_held), push_last.eq(1)]
            with m.Elif(dv | aligned):
                d += idle.eq(0)
                new = Cat(shift[2:], dibit)
                d += shift.eq(new)
                with m.If(~aligned):
                    # The SFD's last dibit (binary 11) after preamble dibits (01).
                    with m.If(dv & (dibit == 0b11) & (shift[6:] == 0b01)):
                        d += [aligned.eq(1), count.eq(0), held.eq(0xD5), has_held.eq(1)]
                with m.Else():
                    d += count.eq(count + 1)
                    with m.If(count == 3):
                        d += [held.eq(new), has_held.eq(1)]
                        m.d.comb += push.eq(has_held)
        m.d.comb += [self.rx.valid.eq(rx_fifo.r_rdy), rx_fifo.r_en.eq(self.rx.ready),
                     self.rx.payload.eq(rx_fifo.r_data)]

        # ---- transmit ---------------------------------------------------------------------
        m.submodules.tx_fifo = tx_fifo = fifo.AsyncFIFO(
            width=9, depth=self.fifo_depth, w_domain="sync", r_domain=dom)
        m.d.comb += [tx_fifo.w_en.eq(self.tx.valid), tx_fifo.w_data.eq(self.tx.payload),
                     self.tx.ready.eq(tx_fifo.w_rdy)]
        tick = Signal(range(repeat))
        part = Signal(2)
        gap = Signal(range(4 * IFG_BYTES + 1))
        step = tick == repeat - 1
        if repeat > 1:
            d += tick.eq(Mux(step, 0, tick + 1))
        with m.If(step):
            d += [self.tx_en.eq(0), self.txd.eq(0)]
            with m.If(gap != 0):
                d += gap.eq(gap - 1)
            with m.Elif(tx_fifo.r_rdy):
                d += [self.tx_en.eq(1), self.txd.eq(tx_fifo.r_data[:8].word_select(part, 2)),
                      part.eq(part + 1)]
                with m.If(part == 3):
                    m.d.comb += tx_fifo.r_en.eq(1)
                    with m.If(tx_fifo.r_data[8]):
                        d += gap.eq(4 * IFG_BYTES)
        return m
