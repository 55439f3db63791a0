"""ICMP: echo replies."""

from amaranth.hdl import Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .common import PROTO_ICMP, OnesSum, PacketFIFO, word
from .ipv4 import IP_RX_LAYOUT, IP_TX_LAYOUT

__all__ = ["IcmpEcho"]

ECHO_REQUEST = 8
ECHO_REPLY = 0

_META = data.StructLayout({"mac": 48, "ip": 32, "length": 16, "checksum": 16})


class IcmpEcho(wiring.Component):
    """Answers each ICMP echo request of ``i`` (from :class:`~.ipv4.IPv4Rx`) with an echo
    reply on ``o`` carrying the same identifier, sequence number and data.

    A request is stored whole (a :class:`~.common.PacketFIFO` of ``buffer`` bytes: the
    largest the MTU allows fits) while its checksum is verified; a bad checksum (``bad_checksum``)
    or another ICMP type (``ignored``) drops it. The reply's checksum is computed on the way
    in, so the reply leaves as soon as the request is whole, one byte a cycle.
    """

    def __init__(self, *, buffer=2048):
        self.buffer = buffer
        super().__init__({
            "i": In(stream.Signature(IP_RX_LAYOUT)),
            "o": Out(stream.Signature(IP_TX_LAYOUT)),
            "bad_checksum": Out(16), "ignored": Out(16),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.fifo = buf = PacketFIFO(self.buffer, meta=_META)
        i = self.i
        pos = Signal(16)
        byte = i.payload.data
        acc = OnesSum("request")    # the request's sum, checksum included
        reply = OnesSum("reply")    # the reply's: type 0, checksum field left out
        echo = Signal()             # the type and code say echo request
        total = acc.plus(word(byte, pos))
        reply_total = Signal(18)
        m.d.comb += reply_total.eq(reply.plus())
        with m.If((pos == 1) | (pos >= 4)):
            m.d.comb += reply_total.eq(reply.plus(word(byte, pos)))
        m.d.comb += [
            i.ready.eq(1),
            buf.i.valid.eq(i.valid),
            buf.i.payload.data.eq(byte),
            buf.i.payload.last.eq(i.payload.last),
            buf.i.payload.meta.mac.eq(i.payload.src_mac),
            buf.i.payload.meta.ip.eq(i.payload.src_ip),
            buf.i.payload.meta.length.eq(i.payload.length),
            buf.i.payload.meta.checksum.eq(~OnesSum.value(reply_total)),
        ]
        good_type = echo & ((pos != 1) | (byte == 0))
        with m.If(i.valid):
            m.d.sync += [pos.eq(pos + 1), *acc.load(total), *reply.load(reply_total)]
            with m.If(pos == 0):
                m.d.sync += echo.eq(byte == ECHO_REQUEST)
            with m.If(pos == 1):
                m.d.sync += echo.eq(good_type)
            with m.If(i.payload.last):
                m.d.sync += [pos.eq(0), *acc.clear(), *reply.clear()]
                bad_sum = ~OnesSum.is_ffff(total)
                m.d.comb += buf.i.payload.drop.eq(i.payload.drop | (pos < 7) | ~good_type
                                                  | bad_sum)
                with m.If(~i.payload.drop & (pos >= 7)):
                    with m.If(~good_type):
                        m.d.sync += self.ignored.eq(self.ignored + 1)
                    with m.Elif(bad_sum):
                        m.d.sync += self.bad_checksum.eq(self.bad_checksum + 1)

        o = buf.o
        out = Signal(16)
        meta = o.payload.meta
        m.d.comb += [
            self.o.valid.eq(o.valid), o.ready.eq(self.o.ready),
            self.o.payload.data.eq(o.payload.data), self.o.payload.last.eq(o.payload.last),
            self.o.payload.dst_mac.eq(meta.mac), self.o.payload.dst_ip.eq(meta.ip),
            self.o.payload.protocol.eq(PROTO_ICMP), self.o.payload.length.eq(meta.length),
        ]
        with m.Switch(out):
            with m.Case(0):
                m.d.comb += self.o.payload.data.eq(ECHO_REPLY)
            with m.Case(2):
                m.d.comb += self.o.payload.data.eq(meta.checksum[8:])
            with m.Case(3):
                m.d.comb += self.o.payload.data.eq(meta.checksum[:8])
        with m.If(o.valid & o.ready):
            m.d.sync += out.eq(out + 1)
            with m.If(o.payload.last):
                m.d.sync += out.eq(0)
        return m
