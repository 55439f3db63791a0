"""PHY interfaces: MII (4 bits a clock, clocks from the PHY) to and from byte streams in the
appliance's clock domain."""

from amaranth.hdl import ClockDomain, ClockSignal, Module, ResetSignal, Signal
from amaranth.lib import cdc, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from .common import BYTES

__all__ = ["MII", "IFG_BYTES"]

#: The inter-frame gap, in byte times.
IFG_BYTES = 12


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

    def __init__(self, *, rx_domain="eth_rx", tx_domain="eth_tx", fifo_depth=16):
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
        m.domains += ClockDomain(rxd_)
        m.domains += ClockDomain(txd_)
        m.d.comb += [ClockSignal(rxd_).eq(self.rx_clk), ClockSignal(txd_).eq(self.tx_clk)]
        m.submodules.rx_reset = cdc.ResetSynchronizer(ResetSignal("sync"), domain=rxd_)
        m.submodules.tx_reset = cdc.ResetSynchronizer(ResetSignal("sync"), domain=txd_)

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
