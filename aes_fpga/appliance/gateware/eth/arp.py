"""ARP: answers the requests for our IPv4 address (no cache: the reply goes to the requester's
addresses from the request)."""

from amaranth.hdl import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .common import ARP_PACKET, ETHERTYPE_ARP, ETHERTYPE_IPV4, capture, check_ip, check_mac, pick
from .ethernet import RX_LAYOUT, TX_LAYOUT

__all__ = ["ArpResponder"]

REQUEST = 1
REPLY = 2


class ArpResponder(wiring.Component):
    """Takes ARP packets on ``i`` (from :class:`~.ethernet.EthRx`) and, for an Ethernet/IPv4
    request whose target is ``ip``, sends the reply on ``o``; anything else is ignored (counted
    in ``ignored``). While a reply is sent (28 bytes) ``i`` waits."""

    def __init__(self, mac, ip):
        self.mac = check_mac(mac)
        self.ip = check_ip(ip)
        super().__init__({
            "i": In(stream.Signature(RX_LAYOUT)),
            "o": Out(stream.Signature(TX_LAYOUT)),
            "ignored": Out(16),
        })

    def elaborate(self, platform):
        m = Module()
        i, o = self.i, self.o
        pos = Signal(range(ARP_PACKET.size + 1))
        take = i.valid & i.ready
        f = capture(m, ARP_PACKET, pos, i.payload.data, take & (pos != ARP_PACKET.size))
        wanted = ((f["htype"] == 1) & (f["ptype"] == ETHERTYPE_IPV4) & (f["hlen"] == 6)
                  & (f["plen"] == 4) & (f["oper"] == REQUEST) & (f["tpa"] == self.ip))
        reply = ARP_PACKET.wire_bytes({
            "htype": 1, "ptype": ETHERTYPE_IPV4, "hlen": 6, "plen": 4, "oper": REPLY,
            "sha": self.mac, "spa": self.ip, "tha": f["sha"], "tpa": f["spa"]})
        out = Signal(range(ARP_PACKET.size))
        m.d.comb += [o.payload.data.eq(pick(reply, out)), o.payload.dst_mac.eq(f["sha"]),
                     o.payload.ethertype.eq(ETHERTYPE_ARP),
                     o.payload.last.eq(out == ARP_PACKET.size - 1)]
        with m.FSM():
            with m.State("RECEIVE"):
                m.d.comb += i.ready.eq(1)
                with m.If(take):
                    with m.If(pos != ARP_PACKET.size):
                        m.d.sync += pos.eq(pos + 1)
                    with m.If(i.payload.last):
                        m.d.sync += pos.eq(0)
                        # The whole packet is in the registers only when the frame was long
                        # enough; the last byte may itself be the packet's last.
                        complete = (pos == ARP_PACKET.size) | (pos == ARP_PACKET.size - 1)
                        with m.If(complete & ~i.payload.drop):
                            m.next = "CHECK"
                        with m.Else():
                            m.d.sync += self.ignored.eq(self.ignored + 1)
            with m.State("CHECK"):
                with m.If(wanted):
                    m.d.sync += out.eq(0)
                    m.next = "REPLY"
                with m.Else():
                    m.d.sync += self.ignored.eq(self.ignored + 1)
                    m.next = "RECEIVE"
            with m.State("REPLY"):
                m.d.comb += o.valid.eq(1)
                with m.If(o.ready):
                    m.d.sync += out.eq(out + 1)
                    with m.If(o.payload.last):
                        m.next = "RECEIVE"
        return m
