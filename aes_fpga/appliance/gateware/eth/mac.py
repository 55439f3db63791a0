"""The Ethernet MAC: frame receive (SFD, FCS, size and address filters) and transmit
(preamble, padding, FCS), between a PHY's byte stream and whole frames."""

from amaranth.hdl import Module, Signal
from amaranth.lib import crc, stream, wiring
from amaranth.lib.wiring import In, Out

from ...addresses import check_mac
from .common import BYTES, PacketFIFO, count, mac_bytes, table

__all__ = ["MACRx", "MACTx", "MIN_FRAME", "MAX_FRAME"]

#: Frame sizes from the destination address to the FCS included.
MIN_FRAME = 64
MAX_FRAME = 1518
PREAMBLE = 0x55
SFD = 0xD5
BROADCAST = (1 << 48) - 1


class MACRx(wiring.Component):
    """Receives frames from a PHY's byte stream and delivers the good ones, FCS stripped.

    ``i`` carries a PHY's bytes (``last`` on a frame's final byte); a frame starts after its
    SFD (any number of preamble bytes before it, none included). A frame is delivered on ``o``
    (destination address first, FCS removed) only when it is whole and good: otherwise it is
    dropped and counted in the first of ``runts`` (fewer than 64 bytes with the FCS), ``giants``
    (more than ``max_frame``, 1518 by default: smaller only to test it), ``bad_fcs`` (CRC-32
    mismatch), ``not_ours`` (destination neither ``mac`` nor broadcast); ``overflows`` counts
    frames that did not fit the buffer (``lost`` is high for a cycle after each).

    Frames wait in a :class:`~.common.PacketFIFO` of ``buffer`` bytes: a full-size frame
    being read while the next comes in (the layers above take a byte a cycle, faster than the
    line with the gaps between frames, and hold a backlog in their own buffer).
    ``i`` is always ready (one byte a cycle at most); ``o`` honours back-pressure. A frame is
    readable three cycles after its last byte.
    """

    def __init__(self, mac, *, buffer=2048, max_frame=MAX_FRAME):
        self.mac = check_mac(mac)
        if isinstance(max_frame, bool) or not isinstance(max_frame, int) or not (
                MIN_FRAME <= max_frame <= buffer - 1):
            raise ValueError(f"max_frame: {max_frame!r} is not a frame size; allowed "
                             f"{MIN_FRAME}..{buffer - 1}")
        self.max_frame = max_frame
        self.buffer = buffer
        super().__init__({
            "i": In(stream.Signature(BYTES)),
            "o": Out(stream.Signature(BYTES)),
            "runts": Out(16), "giants": Out(16), "bad_fcs": Out(16), "not_ours": Out(16),
            "overflows": Out(16), "lost": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.fifo = buf = PacketFIFO(self.buffer)
        m.submodules.crc = fcs = crc.catalog.CRC32_ETHERNET(data_width=8).create()
        wiring.connect(m, buf.o, wiring.flipped(self.o))
        m.d.comb += [self.overflows.eq(buf.overflows), self.lost.eq(buf.lost)]

        byte, last = self.i.payload.data, self.i.payload.last
        m.d.comb += self.i.ready.eq(1)
        max_frame = self.max_frame
        seen = Signal(range(max_frame + 2))         # bytes after the SFD, saturating
        tail = [Signal(8, name=f"tail{k}") for k in range(5)]   # tail[0] newest
        ours = Signal()
        bcast = Signal()
        finish = Signal()
        w = buf.i.payload
        m.d.sync += finish.eq(0)

        with m.FSM():
            with m.State("SEEK"):
                with m.If(self.i.valid & ~last):
                    with m.If(byte == SFD):
                        m.d.comb += fcs.start.eq(1)
                        m.d.sync += [seen.eq(0), ours.eq(1), bcast.eq(1)]
                        m.next = "FRAME"
                    with m.Elif(byte != PREAMBLE):
                        m.next = "SKIP"
            with m.State("SKIP"):
                with m.If(self.i.valid & last):
                    m.next = "SEEK"
            with m.State("FRAME"):
                with m.If(self.i.valid):
                    m.d.comb += [fcs.valid.eq(1), fcs.data.eq(byte)]
                    with m.If(seen != max_frame + 1):
                        m.d.sync += seen.eq(seen + 1)
                    with m.If(seen < 6):
                        # Our address's bytes from a small ROM, compared one a cycle.
                        mine = table(mac_bytes(self.mac) + [0, 0], seen[:3])
                        m.d.sync += [ours.eq(ours & (byte == mine)),
                                     bcast.eq(bcast & (byte == 0xFF))]
                    m.d.sync += [tail[0].eq(byte)] + [tail[k].eq(tail[k - 1])
                                                      for k in range(1, 5)]
                    # Byte n goes into the buffer when byte n + 5 arrives: the last four are
                    # the FCS, and the fifth from the end waits until the FCS is checked.
                    with m.If(seen >= 5):
                        m.d.comb += buf.i.valid.eq(1)
                    with m.If(last):
                        m.d.sync += finish.eq(1)
                        m.next = "SEEK"

        # The cycle after the last byte the CRC register holds the whole frame's residue.
        size = seen     # the frame's bytes, FCS included (max_frame + 1: more)
        runt = size < MIN_FRAME
        giant = size > max_frame
        bad = ~fcs.match_detected
        foreign = ~ours & ~bcast
        # Unconditional: data gated by the conditions above would cost a LUT a bit.
        m.d.comb += w.data.eq(tail[4])
        with m.If(finish):
            m.d.comb += [buf.i.valid.eq(1), w.last.eq(1),
                         w.drop.eq(runt | giant | bad | foreign)]
            with m.If(runt):
                m.d.sync += count(self.runts)
            with m.Elif(giant):
                m.d.sync += count(self.giants)
            with m.Elif(bad):
                m.d.sync += count(self.bad_fcs)
            with m.Elif(foreign):
                m.d.sync += count(self.not_ours)
        return m


class MACTx(wiring.Component):
    """Turns frames into a PHY's byte stream: preamble and SFD, the frame, zero padding to
    60 bytes, the FCS.

    ``i`` takes frames from the destination address on; ``o`` gives the bytes to send,
    ``last`` on the FCS's final byte. The inter-frame gap is the PHY transmitter's, counted in
    its own byte times. One byte a cycle; back-pressure from ``o`` stalls ``i``.
    """

    def __init__(self):
        super().__init__({
            "i": In(stream.Signature(BYTES)),
            "o": Out(stream.Signature(BYTES)),
        })

    def elaborate(self, platform):
        m = Module()
        # The Ethernet CRC without its final complement (JAMCRC): the complement goes into the
        # output multiplexer below instead of 32 inverters at the CRC's output.
        m.submodules.crc = fcs = crc.catalog.CRC32_JAMCRC(data_width=8).create()
        n = Signal(range(64))
        o = self.o
        step = o.valid & o.ready
        with m.FSM():
            with m.State("IDLE"):
                m.d.comb += fcs.start.eq(1)
                with m.If(self.i.valid):
                    m.d.sync += n.eq(0)
                    m.next = "PREAMBLE"
            with m.State("PREAMBLE"):
                m.d.comb += [o.valid.eq(1), o.payload.data.eq(PREAMBLE)]
                with m.If(n == 7):
                    m.d.comb += o.payload.data.eq(SFD)
                with m.If(step):
                    m.d.sync += n.eq(n + 1)
                    with m.If(n == 7):
                        m.d.sync += n.eq(0)
                        m.next = "DATA"
            with m.State("DATA"):
                m.d.comb += [o.valid.eq(self.i.valid), o.payload.data.eq(self.i.payload.data),
                             self.i.ready.eq(o.ready),
                             fcs.valid.eq(step), fcs.data.eq(self.i.payload.data)]
                with m.If(step):
                    with m.If(n != 63):
                        m.d.sync += n.eq(n + 1)
                    with m.If(self.i.payload.last):
                        m.next = "FCS"
                        with m.If(n < 59):
                            m.d.sync += n.eq(n + 1)
                            m.next = "PAD"
                        with m.Else():
                            m.d.sync += n.eq(0)
            with m.State("PAD"):
                m.d.comb += [o.valid.eq(1), o.payload.data.eq(0),
                             fcs.valid.eq(step), fcs.data.eq(0)]
                with m.If(step):
                    m.d.sync += n.eq(n + 1)
                    with m.If(n == 59):
                        m.d.sync += n.eq(0)
                        m.next = "FCS"
            with m.State("FCS"):
                m.d.comb += [o.valid.eq(1), o.payload.data.eq(~fcs.crc.word_select(n[:2], 8)),
                             o.payload.last.eq(n == 3)]
                with m.If(step):
                    m.d.sync += n.eq(n + 1)
                    with m.If(n == 3):
                        m.next = "IDLE"
        return m
