"""The Ethernet header: dispatch of received frames by type, and the header of frames sent."""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ...addresses import check_mac
from .common import (
    BYTES,
    ETH_HEADER,
    ETH_RX_PREFIX,
    ETH_TX_PREFIX,
    ETHERTYPE_ARP,
    ETHERTYPE_IPV4,
    RX,
    count,
    mac_bytes,
    table,
)

__all__ = ["EthRx", "EthTx", "RX_LAYOUT"]

#: Received frame payloads.
RX_LAYOUT = RX()


class EthRx(wiring.Component):
    """Removes the Ethernet header from the good frames of ``i`` (from :class:`~.mac.MACRx`)
    and sends the payload of ARP frames to ``arp``, of IPv4 frames to ``ip`` behind the
    sender's MAC address (:data:`~.common.ETH_RX_PREFIX`); other types are dropped and counted
    in ``other_types``. Padding stays in the payload (the layers above know their length).

    One byte a cycle, and six cycles more for the prefix of an IPv4 packet (``i`` waits); each
    output stalls ``i`` while it is not ready. The sender's address waits in a byte-wide shift
    register (no multiplexer) until the type is known."""

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
        byte = i.payload.data
        header = ETH_HEADER.size
        src = ETH_HEADER.offset("src")
        # Header bytes, then (IPv4) the prefix's: 0..header + prefix, saturating.
        pos = Signal(range(header + ETH_RX_PREFIX.size + 1))
        sender = Signal(8 * ETH_RX_PREFIX.size)     # oldest byte lowest
        shift = Signal()
        with m.If(shift):
            m.d.sync += sender.eq(Cat(sender[8:], byte))
        type_high = Signal()                        # the type's first byte is 0x08
        is_arp = Signal()
        is_ip = Signal()
        take = i.valid & i.ready
        prefix = (pos >= header) & (pos < header + ETH_RX_PREFIX.size) & is_ip
        payload = pos == header + ETH_RX_PREFIX.size
        for out in (self.arp, self.ip):
            m.d.comb += [out.payload.data.eq(Mux(prefix, sender[:8], byte)),
                         out.payload.last.eq(i.payload.last & ~prefix)]
        with m.If(prefix):
            m.d.comb += [self.ip.valid.eq(1), shift.eq(self.ip.ready)]
            with m.If(self.ip.ready):
                m.d.sync += pos.eq(pos + 1)
        with m.Elif(payload):
            with m.If(is_arp):
                m.d.comb += [self.arp.valid.eq(i.valid), i.ready.eq(self.arp.ready)]
            with m.Elif(is_ip):
                m.d.comb += [self.ip.valid.eq(i.valid), i.ready.eq(self.ip.ready)]
            with m.Else():
                m.d.comb += i.ready.eq(1)
        with m.Else():
            m.d.comb += i.ready.eq(1)
            with m.If(take):
                m.d.sync += pos.eq(pos + 1)
                m.d.comb += shift.eq((pos >= src) & (pos < src + ETH_RX_PREFIX.size))
                first, second = ETHERTYPE_IPV4 >> 8, ETHERTYPE_IPV4 & 0xFF
                assert ETHERTYPE_ARP >> 8 == first
                with m.If(pos == header - 2):
                    m.d.sync += type_high.eq(byte == first)
                with m.If(pos == header - 1):
                    m.d.sync += [is_ip.eq(type_high & (byte == second)),
                                 is_arp.eq(type_high & (byte == (ETHERTYPE_ARP & 0xFF)))]
                    # An IPv4 packet goes on with its prefix; the others skip it.
                    with m.If(~type_high | (byte != second)):
                        m.d.sync += pos.eq(header + ETH_RX_PREFIX.size)
        with m.If(take & i.payload.last):
            m.d.sync += [pos.eq(0), is_arp.eq(0), is_ip.eq(0)]
            with m.If(payload & ~is_arp & ~is_ip):
                m.d.sync += count(self.other_types)
        return m


class EthTx(wiring.Component):
    """Builds the Ethernet header of each packet of ``i``: the packet starts with
    :data:`~.common.ETH_TX_PREFIX` (destination address and type), which passes through with
    our address ``mac`` put between its two fields; frames leave on ``o`` for
    :class:`~.mac.MACTx`. One byte a cycle (six more a frame for the source address);
    back-pressure passes through."""

    def __init__(self, mac):
        self.mac = check_mac(mac)
        super().__init__({
            "i": In(stream.Signature(BYTES)),
            "o": Out(stream.Signature(BYTES)),
        })

    def elaborate(self, platform):
        m = Module()
        i, o = self.i, self.o
        dst = ETH_TX_PREFIX.offset("ethertype")         # 6: where our address goes
        end = dst + 6
        pos = Signal(range(end + 1))                    # output bytes, saturating
        ours = (pos >= dst) & (pos < end)
        m.d.comb += [o.valid.eq(i.valid),
                     o.payload.data.eq(Mux(ours, table([0] * dst + mac_bytes(self.mac)
                                                       + [0] * (2 ** len(pos) - end), pos),
                                           i.payload.data)),
                     o.payload.last.eq(i.payload.last & ~ours),
                     i.ready.eq(o.ready & ~ours)]
        with m.If(o.valid & o.ready):
            with m.If(pos != end):
                m.d.sync += pos.eq(pos + 1)
            with m.If(o.payload.last):
                m.d.sync += pos.eq(0)
        return m
