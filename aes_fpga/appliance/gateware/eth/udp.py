"""UDP on one port: request payloads in, reply payloads back to the requester."""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .common import (
    BYTES,
    PROTO_UDP,
    UDP_HEADER,
    OnesSum,
    PacketFIFO,
    capture,
    check_ip,
    check_port,
    fold,
    fold_const,
    pick,
    word,
)
from .ipv4 import IP_RX_LAYOUT, IP_TX_LAYOUT

__all__ = ["UdpPort"]

HEADER = UDP_HEADER.size
_PEER = data.StructLayout({"mac": 48, "ip": 32, "port": 16})
_REPLY = data.StructLayout({"length": 16, "sum": 16, "peer": _PEER})


class UdpPort(wiring.Component):
    """One UDP port: the payload of each datagram sent to ``port`` comes out on ``rx``; each
    payload taken on ``tx`` goes back as a datagram to the sender of the last request taken
    from ``rx`` when the payload's last byte is taken (its MAC, IP address and port, kept with
    the reply while it waits to be sent, so a request read meanwhile does not redirect it).

    Receive (``i``, from :class:`~.ipv4.IPv4Rx`): a datagram is stored whole (``buffer``
    bytes) and delivered only when its checksum is right or zero (``bad_checksum``
    otherwise), its length fits its IP packet (``bad_length``) and its port is ``port``
    (``other_ports``); empty datagrams are dropped. Transmit (``o``, to :class:`~.ipv4.IPv4Tx`):
    a reply is stored whole while its length and checksum are summed, then sent with a UDP
    header (source port ``port``; a checksum computing to zero is sent as ``0xFFFF``). One byte
    a cycle each way; ``rx`` and ``o`` honour back-pressure, ``i`` and ``tx`` are always ready.
    """

    def __init__(self, ip, port, *, buffer=2048):
        self.ip = check_ip(ip)
        self.port = check_port(port)
        self.buffer = buffer
        super().__init__({
            "i": In(stream.Signature(IP_RX_LAYOUT)),
            "o": Out(stream.Signature(IP_TX_LAYOUT)),
            "rx": Out(stream.Signature(BYTES)),
            "tx": In(stream.Signature(BYTES)),
            "bad_checksum": Out(16), "bad_length": Out(16), "other_ports": Out(16),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.rx_fifo = rx_buf = PacketFIFO(self.buffer, meta=_PEER)
        m.submodules.tx_fifo = tx_buf = PacketFIFO(self.buffer, meta=_REPLY)
        self._receive(m, rx_buf)
        self._transmit(m, rx_buf, tx_buf)
        return m

    def _receive(self, m, buf):
        i = self.i
        byte = i.payload.data
        pos = Signal(16)
        acc = OnesSum("rx")
        # The pseudo-header's words other than the length (added with the header's copy).
        pseudo = fold_const((self.ip >> 16) + (self.ip & 0xFFFF) + PROTO_UDP)
        total = acc.plus(word(byte, pos))
        h = capture(m, UDP_HEADER, pos, byte, i.valid)
        length = Signal(16)         # the datagram's length, header included
        bad = Signal()              # header checks failed: drop the rest
        m.d.comb += [
            i.ready.eq(1),
            buf.i.payload.data.eq(byte),
            buf.i.payload.meta.mac.eq(i.payload.src_mac),
            buf.i.payload.meta.ip.eq(i.payload.src_ip),
            buf.i.payload.meta.port.eq(h["src_port"]),
        ]
        with m.If(i.valid):
            m.d.sync += [pos.eq(pos + 1), *acc.load(total)]
            with m.If(pos == 0):
                m.d.sync += acc.load(acc.plus(word(byte, pos), pseudo, i.payload.src_ip[16:],
                                              i.payload.src_ip[:16]))
            with m.If(pos == HEADER - 1):
                dst_port = h["dst_port"]
                udp_len = h["length"]
                m.d.sync += [length.eq(udp_len), bad.eq(0),
                             *acc.load(acc.plus(word(byte, pos), udp_len))]
                with m.If(dst_port != self.port):
                    m.d.sync += [bad.eq(1), self.other_ports.eq(self.other_ports + 1)]
                with m.Elif((udp_len <= HEADER) | (udp_len > i.payload.length)):
                    m.d.sync += [bad.eq(1), self.bad_length.eq(self.bad_length + 1)]
            end = pos == length - 1
            with m.If((pos >= HEADER) & (pos < length) & ~bad):
                m.d.comb += [buf.i.valid.eq(1), buf.i.payload.last.eq(end | i.payload.last)]
                checksum_ok = (h["checksum"] == 0) | OnesSum.is_ffff(total)
                m.d.comb += buf.i.payload.drop.eq(i.payload.drop | ~end | ~checksum_ok)
                with m.If(end & ~i.payload.drop & ~checksum_ok):
                    m.d.sync += self.bad_checksum.eq(self.bad_checksum + 1)
            with m.If(i.payload.last):
                m.d.sync += [pos.eq(0), *acc.clear(), length.eq(0), bad.eq(0)]

    def _transmit(self, m, rx_buf, tx_buf):
        # Request payloads out; the last one's sender is whom replies go to.
        peer = Signal(_PEER)
        r = rx_buf.o
        m.d.comb += [self.rx.valid.eq(r.valid), r.ready.eq(self.rx.ready),
                     self.rx.payload.data.eq(r.payload.data),
                     self.rx.payload.last.eq(r.payload.last)]
        with m.If(r.valid & r.ready & r.payload.last):
            m.d.sync += peer.eq(r.payload.meta)

        # Replies in: stored whole while their length and sum are counted.
        t = self.tx
        count = Signal(16)
        acc = OnesSum("tx")
        total = acc.plus(word(t.payload.data, count))
        m.d.comb += [t.ready.eq(1), tx_buf.i.valid.eq(t.valid),
                     tx_buf.i.payload.data.eq(t.payload.data),
                     tx_buf.i.payload.last.eq(t.payload.last),
                     tx_buf.i.payload.meta.length.eq(count + 1 + HEADER),
                     tx_buf.i.payload.meta.sum.eq(OnesSum.value(total)),
                     tx_buf.i.payload.meta.peer.eq(peer)]
        with m.If(t.valid):
            m.d.sync += [count.eq(count + 1), *acc.load(total)]
            with m.If(t.payload.last):
                m.d.sync += [count.eq(0), *acc.clear()]

        # Replies out, behind a UDP header.
        q = tx_buf.o
        meta = q.payload.meta
        peer = meta.peer
        ulen = meta.length
        sum_ = fold(meta.sum + ulen + ulen + PROTO_UDP + (self.ip >> 16) + (self.ip & 0xFFFF)
                    + peer.ip[16:] + peer.ip[:16] + self.port + peer.port)
        checksum = Mux(sum_ == 0xFFFF, 0xFFFF, ~sum_ & 0xFFFF)
        header = UDP_HEADER.wire_bytes({"src_port": self.port, "dst_port": peer.port,
                                        "length": ulen, "checksum": checksum})
        o = self.o
        pos = Signal(range(HEADER + 1))
        m.d.comb += [o.payload.dst_mac.eq(peer.mac), o.payload.dst_ip.eq(peer.ip),
                     o.payload.protocol.eq(PROTO_UDP), o.payload.length.eq(ulen)]
        with m.If(pos == HEADER):
            m.d.comb += [o.valid.eq(q.valid), o.payload.data.eq(q.payload.data),
                         o.payload.last.eq(q.payload.last), q.ready.eq(o.ready)]
            with m.If(q.valid & o.ready & q.payload.last):
                m.d.sync += pos.eq(0)
        with m.Else():
            m.d.comb += [o.valid.eq(q.valid), o.payload.data.eq(pick(header, pos))]
            with m.If(o.valid & o.ready):
                m.d.sync += pos.eq(pos + 1)
