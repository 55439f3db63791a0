"""ARP: answers the requests for our IPv4 address (no cache: the reply goes to the requester's
addresses from the request)."""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ...addresses import check_ip, check_mac
from .common import (
    ARP_PACKET,
    BYTES,
    ETH_TX_PREFIX,
    ETHERTYPE_ARP,
    ETHERTYPE_IPV4,
    at,
    count,
    mac_bytes,
    table,
)
from .ethernet import RX_LAYOUT

__all__ = ["ArpResponder"]

REQUEST = 1
REPLY = 2


class ArpResponder(wiring.Component):
    """Takes ARP packets on ``i`` (from :class:`~.ethernet.EthRx`) and, for an Ethernet/IPv4
    request whose target is ``ip``, sends the reply on ``o`` (behind
    :data:`~.common.ETH_TX_PREFIX`: to the requester's MAC address, type ARP); anything else is
    ignored (counted in ``ignored``). While a reply is sent (36 bytes) ``i`` waits.

    The fixed fields are compared with a small ROM a byte at a time as they come; only the
    requester's addresses are kept, in a byte-wide shift register that the reply rotates
    through twice (destination, then target addresses).
    """

    def __init__(self, mac, ip):
        self.mac = check_mac(mac)
        self.ip = check_ip(ip)
        super().__init__({
            "i": In(stream.Signature(RX_LAYOUT)),
            "o": Out(stream.Signature(BYTES)),
            "ignored": Out(16),
        })

    def elaborate(self, platform):
        m = Module()
        i, o = self.i, self.o
        byte = i.payload.data
        size = ARP_PACKET.size
        pos = Signal(range(size + 1))       # bytes of the packet so far, saturating
        take = i.valid & i.ready
        request = ARP_PACKET.wire_bytes({"htype": 1, "ptype": ETHERTYPE_IPV4, "hlen": 6,
                                         "plen": 4, "oper": REQUEST, "tpa": self.ip})
        checked = [n for name, offset, length in ARP_PACKET
                   if name not in ("sha", "spa", "tha") for n in range(offset, offset + length)]
        rows = 2 ** len(pos)
        good = ((byte == table(request + [0] * (rows - size), pos))
                | ~at(checked, pos, rows))
        match = Signal()                    # every checked byte so far as a request wants it
        # The requester's hardware then protocol address (sha, spa: adjacent), oldest lowest.
        sha = ARP_PACKET.offset("sha")
        keep = ARP_PACKET.offset("tha") - sha
        peer = Signal(8 * keep)
        rotate = Signal()
        with m.If((take & at(range(sha, sha + keep), pos, rows)) | rotate):
            m.d.sync += peer.eq(Cat(peer[8:], Mux(rotate, peer[:8], byte)))

        # The reply: prefix, then the packet. The peer's addresses go out twice: as the
        # destination (6 bytes), rotated 4 more while constants go out, and as sha/spa.
        reply = (mac_bytes(0) + list(ETHERTYPE_ARP.to_bytes(2, "big"))
                 + ARP_PACKET.wire_bytes({"htype": 1, "ptype": ETHERTYPE_IPV4, "hlen": 6,
                                          "plen": 4, "oper": REPLY, "sha": self.mac,
                                          "spa": self.ip}))
        length = len(reply)                 # 36
        theirs = [*range(6), *range(length - keep, length)]
        out = Signal(range(length))
        out_rows = 2 ** len(out)
        from_peer = at(theirs, out, out_rows)
        m.d.comb += [
            o.payload.data.eq(Mux(from_peer, peer[:8],
                                  table(reply + [0] * (out_rows - length), out))),
            o.payload.last.eq(out == length - 1)]
        assert ETH_TX_PREFIX.size == 8 and len(mac_bytes(0)) == 6

        with m.FSM():
            with m.State("RECEIVE"):
                m.d.comb += i.ready.eq(1)
                with m.If(take):
                    with m.If(pos != size):
                        m.d.sync += pos.eq(pos + 1)
                    m.d.sync += match.eq(Mux(pos == 0, 1, match) & good)
                    with m.If(i.payload.last):
                        m.d.sync += pos.eq(0)
                        # The whole packet has come only when the frame was long enough; the
                        # last byte may itself be the packet's last.
                        complete = pos >= size - 1
                        with m.If(complete & ~i.payload.drop & match & good):
                            m.d.sync += out.eq(0)
                            m.next = "REPLY"
                        with m.Else():
                            m.d.sync += count(self.ignored)
            with m.State("REPLY"):
                m.d.comb += o.valid.eq(1)
                with m.If(o.ready):
                    m.d.comb += rotate.eq(from_peer | (out >= 6) & (out < 10))
                    m.d.sync += out.eq(out + 1)
                    with m.If(o.payload.last):
                        m.next = "RECEIVE"
        return m
