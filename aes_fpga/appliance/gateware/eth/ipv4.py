"""IPv4: header checks and dispatch of received packets by protocol; the header of packets
sent."""

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .common import (
    ETHERTYPE_IPV4,
    IPV4_HEADER,
    PROTO_ICMP,
    PROTO_UDP,
    RX,
    OnesSum,
    capture,
    check_ip,
    fold,
    layout,
    pick,
    word,
)
from .ethernet import RX_LAYOUT, TX_LAYOUT

__all__ = ["IPv4Rx", "IPv4Tx", "IP_RX_LAYOUT", "IP_TX_LAYOUT"]

#: Received IPv4 payloads with the sender's addresses and the payload's length.
IP_RX_LAYOUT = RX(src_mac=48, src_ip=32, length=16)
#: IPv4 payloads to send: destination addresses, protocol, payload length.
IP_TX_LAYOUT = layout(dst_mac=48, dst_ip=32, protocol=8, length=16)
HEADER = IPV4_HEADER.size
MF = 0x2000
DF = 0x4000


class IPv4Rx(wiring.Component):
    """Checks the IPv4 header of each packet of ``i`` (from :class:`~.ethernet.EthRx`) and
    sends its payload (cut to the header's total length: Ethernet padding removed) to
    ``icmp`` or ``udp``.

    Dropped and counted, in this order: ``options`` (version not 4, or a header with options),
    ``fragments`` (more-fragments set or a fragment offset), ``bad_checksum``, ``not_ours``
    (destination other than ``ip``), ``other_protocols``. A packet shorter than its total
    length reaches the layer above with ``drop`` on its last byte (``truncated``). One byte a
    cycle; each output stalls ``i`` while it is not ready.
    """

    def __init__(self, ip):
        self.ip = check_ip(ip)
        super().__init__({
            "i": In(stream.Signature(RX_LAYOUT)),
            "icmp": Out(stream.Signature(IP_RX_LAYOUT)),
            "udp": Out(stream.Signature(IP_RX_LAYOUT)),
            **{name: Out(16) for name in ("options", "fragments", "bad_checksum", "not_ours",
                                          "other_protocols", "truncated")},
        })

    def elaborate(self, platform):
        m = Module()
        i = self.i
        pos = Signal(range(HEADER))
        take = i.valid & i.ready
        byte = i.payload.data
        h = capture(m, IPV4_HEADER, pos, byte, take)
        acc = OnesSum("header")
        total = acc.plus(word(byte, pos))     # the sum with the byte now on ``i``
        left = Signal(16)                     # payload bytes still to come
        proto = Signal(8)

        def count(name):
            counter = getattr(self, name)
            return counter.eq(counter + 1)

        outs = (self.icmp, self.udp)
        for out in outs:
            m.d.comb += [out.payload.data.eq(byte), out.payload.src_mac.eq(i.payload.src_mac),
                         out.payload.src_ip.eq(h["src"]),
                         out.payload.length.eq(h["total_length"] - HEADER),
                         out.payload.last.eq(i.payload.last | (left == 1)),
                         out.payload.drop.eq(left != 1)]

        with m.FSM():
            with m.State("HEADER"):
                m.d.comb += i.ready.eq(1)
                with m.If(take):
                    m.d.sync += [pos.eq(pos + 1), *acc.load(total)]
                    with m.If(i.payload.last):
                        m.d.sync += [pos.eq(0), *acc.clear()]
                    with m.Elif(pos == HEADER - 1):
                        m.d.sync += [pos.eq(0), *acc.clear(),
                                     left.eq(h["total_length"] - HEADER), proto.eq(h["protocol"])]
                        ok = Signal()
                        # The header fields before the last byte are in registers.
                        with m.If(h["version_ihl"] != 0x45):
                            m.d.sync += count("options")
                        with m.Elif((h["flags_fragment"] & (0xFFFF ^ DF)) != 0):
                            m.d.sync += count("fragments")
                        with m.Elif(~OnesSum.is_ffff(total)):
                            m.d.sync += count("bad_checksum")
                        with m.Else():
                            m.d.comb += ok.eq(1)
                        dst = Cat(byte, h["dst"][8:])
                        with m.If(ok):
                            with m.If(dst != self.ip):
                                m.d.sync += count("not_ours")
                                m.next = "DISCARD"
                            with m.Elif(h["total_length"] <= HEADER):
                                m.next = "DISCARD"
                            with m.Elif((h["protocol"] != PROTO_ICMP)
                                        & (h["protocol"] != PROTO_UDP)):
                                m.d.sync += count("other_protocols")
                                m.next = "DISCARD"
                            with m.Else():
                                m.next = "PAYLOAD"
                        with m.Else():
                            m.next = "DISCARD"
            with m.State("PAYLOAD"):
                for out, code in zip(outs, (PROTO_ICMP, PROTO_UDP), strict=True):
                    with m.If(proto == code):
                        m.d.comb += [out.valid.eq(i.valid), i.ready.eq(out.ready)]
                with m.If(take):
                    m.d.sync += left.eq(left - 1)
                    with m.If(left == 1):
                        m.next = "DISCARD"
                        with m.If(i.payload.last):
                            m.next = "HEADER"
                    with m.Elif(i.payload.last):
                        m.d.sync += count("truncated")
                        m.next = "HEADER"
            with m.State("DISCARD"):
                m.d.comb += i.ready.eq(1)
                with m.If(take & i.payload.last):
                    m.next = "HEADER"
        return m


class IPv4Tx(wiring.Component):
    """Puts an IPv4 header (source ``ip``, time to live ``ttl``, don't-fragment set, header
    checksum computed) in front of each payload of ``i``; the packets leave on ``o`` for
    :class:`~.ethernet.EthTx`. One byte a cycle; back-pressure passes through."""

    def __init__(self, ip, *, ttl=64):
        self.ip = check_ip(ip)
        if isinstance(ttl, bool) or not isinstance(ttl, int) or not 1 <= ttl <= 255:
            raise ValueError(f"ttl: {ttl!r} is not a time to live; allowed 1..255")
        self.ttl = ttl
        super().__init__({
            "i": In(stream.Signature(IP_TX_LAYOUT)),
            "o": Out(stream.Signature(TX_LAYOUT)),
        })

    def elaborate(self, platform):
        m = Module()
        i, o = self.i, self.o
        p = i.payload
        total_length = (p.length + HEADER)[:16]
        # The header's words that do not change, summed at elaboration.
        fixed = (0x4500 + DF + (self.ttl << 8) + (self.ip >> 16) + (self.ip & 0xFFFF))
        checksum = ~fold(fixed + total_length + p.protocol + p.dst_ip[16:] + p.dst_ip[:16])
        header = IPV4_HEADER.wire_bytes({
            "version_ihl": 0x45, "total_length": total_length, "flags_fragment": DF,
            "ttl": self.ttl, "protocol": p.protocol, "checksum": checksum[:16],
            "src": self.ip, "dst": p.dst_ip})
        pos = Signal(range(HEADER + 1))
        m.d.comb += [o.payload.dst_mac.eq(p.dst_mac), o.payload.ethertype.eq(ETHERTYPE_IPV4)]
        with m.If(pos == HEADER):
            m.d.comb += [o.valid.eq(i.valid), o.payload.data.eq(p.data),
                         o.payload.last.eq(p.last), i.ready.eq(o.ready)]
            with m.If(i.valid & o.ready & p.last):
                m.d.sync += pos.eq(0)
        with m.Else():
            m.d.comb += [o.valid.eq(i.valid), o.payload.data.eq(pick(header, pos))]
            with m.If(o.valid & o.ready):
                m.d.sync += pos.eq(pos + 1)
        return m
