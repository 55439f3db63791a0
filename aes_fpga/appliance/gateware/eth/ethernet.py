"""The Ethernet header: dispatch of received frames by type, and the header of frames sent."""

from amaranth.hdl import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .common import (
    BYTES,
    ETH_HEADER,
    ETHERTYPE_ARP,
    ETHERTYPE_IPV4,
    RX,
    capture,
    check_mac,
    layout,
    pick,
)

__all__ = ["EthRx", "EthTx", "RX_LAYOUT", "TX_LAYOUT"]

#: Received frame payloads, with the sender's address.
RX_LAYOUT = RX(src_mac=48)
#: Frame payloads to send, with the destination address and type.
TX_LAYOUT = layout(dst_mac=48, ethertype=16)


class EthRx(wiring.Component):
    """Removes the Ethernet header from the good frames of ``i`` (from :class:`~.mac.MACRx`)
    and sends the payload of ARP frames to ``arp``, of IPv4 frames to ``ip`` (with the
    sender's MAC address); other types are dropped and counted in ``other_types``. Padding
    stays in the payload (the layers above know their length). One byte a cycle; each output
    stalls ``i`` while it is not ready."""

    def __init__(self):
        super().__init__({
            "i": In(stream.Signature(BYTES)),
            "arp": Out(stream.Signature(RX_LAYOUT)),
            "ip": Out(stream.Signature(RX_LAYOUT)),
            "other_types": Out(16),
        })

    def elaborate(self, platform):
        m = Module()
        i = self.i
        pos = Signal(range(ETH_HEADER.size + 1))
        take = i.valid & i.ready
        head = capture(m, ETH_HEADER, pos, i.payload.data, take & (pos != ETH_HEADER.size))
        ethertype = head["ethertype"]
        in_payload = pos == ETH_HEADER.size
        for out, code in ((self.arp, ETHERTYPE_ARP), (self.ip, ETHERTYPE_IPV4)):
            m.d.comb += [out.payload.data.eq(i.payload.data), out.payload.last.eq(i.payload.last),
                         out.payload.src_mac.eq(head["src"])]
            with m.If(in_payload & (ethertype == code)):
                m.d.comb += [out.valid.eq(i.valid), i.ready.eq(out.ready)]
        known = (ethertype == ETHERTYPE_ARP) | (ethertype == ETHERTYPE_IPV4)
        with m.If(~in_payload | ~known):
            m.d.comb += i.ready.eq(1)
        with m.If(take):
            with m.If(~in_payload):
                m.d.sync += pos.eq(pos + 1)
            with m.If(i.payload.last):
                m.d.sync += pos.eq(0)
                with m.If(in_payload & ~known):
                    m.d.sync += self.other_types.eq(self.other_types + 1)
        return m


class EthTx(wiring.Component):
    """Puts the Ethernet header (destination from the side-band, source ``mac``, type) in
    front of each payload of ``i``; frames leave on ``o`` for :class:`~.mac.MACTx`. One byte a
    cycle; back-pressure passes through."""

    def __init__(self, mac):
        self.mac = check_mac(mac)
        super().__init__({
            "i": In(stream.Signature(TX_LAYOUT)),
            "o": Out(stream.Signature(BYTES)),
        })

    def elaborate(self, platform):
        m = Module()
        i, o = self.i, self.o
        pos = Signal(range(ETH_HEADER.size + 1))
        header = ETH_HEADER.wire_bytes({"dst": i.payload.dst_mac, "src": self.mac,
                                        "ethertype": i.payload.ethertype})
        with m.If(pos == ETH_HEADER.size):
            m.d.comb += [o.valid.eq(i.valid), o.payload.data.eq(i.payload.data),
                         o.payload.last.eq(i.payload.last), i.ready.eq(o.ready)]
            with m.If(i.valid & o.ready & i.payload.last):
                m.d.sync += pos.eq(0)
        with m.Else():
            m.d.comb += [o.valid.eq(i.valid), o.payload.data.eq(pick(header, pos))]
            with m.If(o.valid & o.ready):
                m.d.sync += pos.eq(pos + 1)
        return m
