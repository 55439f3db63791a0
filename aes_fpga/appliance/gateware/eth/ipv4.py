"""IPv4: header checks and dispatch of received packets by protocol; the header of packets
sent."""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ...addresses import check_ip
from .common import (
    BYTES,
    ETH_RX_PREFIX,
    ETHERTYPE_IPV4,
    IP_PREFIX,
    IPV4_HEADER,
    PROTO_ICMP,
    PROTO_UDP,
    RX,
    OnesSum,
    at,
    count,
    fold_const,
    ip_bytes,
    table,
    word,
)
from .ethernet import RX_LAYOUT

__all__ = ["IPv4Rx", "IPv4Tx", "IP_RX_LAYOUT"]

#: Received IPv4 payloads, each behind :data:`~.common.IP_PREFIX` (the sender's).
IP_RX_LAYOUT = RX()
HEADER = IPV4_HEADER.size
MF = 0x2000
DF = 0x4000


def _offsets(header, *names, base=0):
    """The byte offsets (plus ``base``) of the fields ``names`` of ``header``, in wire
    order."""
    return [base + offset + n for name, offset, size in header if name in names
            for n in range(size)]


class IPv4Rx(wiring.Component):
    """Checks the IPv4 header of each packet of ``i`` (from :class:`~.ethernet.EthRx`, behind
    the sender's MAC address) and sends its payload (cut to the header's total length:
    Ethernet padding removed) to ``icmp`` or ``udp``, behind :data:`~.common.IP_PREFIX` (the
    sender's MAC and IP address, the total length and protocol).

    Dropped and counted, in this order: ``options`` (version not 4, or a header with options),
    ``fragments`` (more-fragments set or a fragment offset), ``bad_checksum``, ``not_ours``
    (destination other than ``ip``), ``other_protocols``. A packet shorter than its total
    length reaches the layer above with ``drop`` on its last byte (``truncated``). One byte a
    cycle, 14 cycles more a packet for the verdict and the prefix (``i`` waits); each output
    stalls ``i`` while it is not ready.

    The fields are checked a byte at a time as they come (flags, comparisons with constants);
    the prefix's fields wait in a byte-wide shift register, filled and emptied in wire order.
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
        byte = i.payload.data
        base = ETH_RX_PREFIX.size                   # the header's first byte
        end = base + HEADER                         # 26: bytes before the payload
        pos = Signal(range(end))
        rows = 2 ** len(pos)
        take = i.valid & i.ready

        def field(name, n=0):
            return base + IPV4_HEADER.offset(name) + n

        # The prefix: the MAC address (before the header), total length, protocol, source.
        kept = [*range(base), *_offsets(IPV4_HEADER, "total_length", "protocol", "src",
                                        base=base)]
        assert len(kept) == IP_PREFIX.size
        prefix = Signal(8 * IP_PREFIX.size)         # oldest byte lowest
        shift = Signal()
        with m.If(shift):
            m.d.sync += prefix.eq(Cat(prefix[8:], byte))

        acc = OnesSum("header")
        total = acc.plus(word(byte, pos[0] ^ (base & 1)))   # with the byte now on ``i``
        version_ok = Signal()
        fragment = Signal()
        ours = Signal()
        short = Signal()                            # total length at most the header's
        is_icmp = Signal()
        is_udp = Signal()
        # Payload bytes to come, counted down from the total length: it is loaded with the
        # total length at that field's low byte and counts every byte after it, so at the
        # payload's last byte it is HEADER + 1 - (the header bytes after it). The register
        # holds its complement, which counts up (an increment needs no inverters).
        left = Signal(16)
        last_left = HEADER + 1 - (HEADER - IPV4_HEADER.offset("total_length") - 2)    # 5
        dst = ip_bytes(self.ip)
        mine = table([0] * field("dst") + dst + [0] * (rows - field("dst") - 4), pos)

        def bump(name):
            return count(getattr(self, name))

        outs = (self.icmp, self.udp)
        end_now = left == (~last_left & 0xFFFF)
        in_prefix = Signal()
        for out in outs:
            m.d.comb += [out.payload.data.eq(Mux(in_prefix, prefix[:8], byte)),
                         out.payload.last.eq(0), out.payload.drop.eq(0)]

        with m.FSM():
            with m.State("HEADER"):
                m.d.comb += [i.ready.eq(1), shift.eq(take & at(kept, pos, rows))]
                with m.If(take):
                    m.d.sync += [pos.eq(pos + 1), *acc.load(total)]
                    with m.If(pos < base):
                        m.d.sync += acc.clear()
                    with m.If(pos == field("version_ihl")):
                        m.d.sync += version_ok.eq(byte == 0x45)
                    with m.If(pos == field("flags_fragment")):
                        m.d.sync += fragment.eq((byte & ((0xFFFF ^ DF) >> 8)) != 0)
                    with m.If(pos == field("flags_fragment", 1)):
                        m.d.sync += fragment.eq(fragment | (byte != 0))
                    with m.If((pos == field("total_length"))
                              | (pos == field("total_length", 1))):
                        m.d.sync += left.eq(Cat(~byte, left[:8]))
                    with m.Else():
                        m.d.sync += count(left)
                    with m.If(pos == field("total_length", 1)):
                        m.d.sync += short.eq((left[:8] == 0xFF) & (byte <= HEADER))
                    with m.If(pos == field("protocol")):
                        m.d.sync += [is_icmp.eq(byte == PROTO_ICMP), is_udp.eq(byte == PROTO_UDP)]
                    with m.If(pos == field("dst")):
                        m.d.sync += ours.eq(byte == mine)
                    with m.Elif(pos > field("dst")):
                        m.d.sync += ours.eq(ours & (byte == mine))
                    with m.If(i.payload.last):
                        m.d.sync += pos.eq(0)
                    with m.Elif(pos == end - 1):
                        m.d.sync += pos.eq(0)
                        m.next = "CHECK"
            with m.State("CHECK"):
                # The verdict a cycle after the header's last byte, from registers only (the
                # checksum's adder and the counters are then not one path).
                ok = Signal()
                with m.If(~version_ok):
                    m.d.sync += bump("options")
                with m.Elif(fragment):
                    m.d.sync += bump("fragments")
                with m.Elif(~OnesSum.is_ffff(Cat(acc.acc, acc.carry))):
                    m.d.sync += bump("bad_checksum")
                with m.Else():
                    m.d.comb += ok.eq(1)
                m.next = "DISCARD"
                with m.If(ok):
                    with m.If(~ours):
                        m.d.sync += bump("not_ours")
                    with m.Elif(short):
                        pass
                    with m.Elif(~is_icmp & ~is_udp):
                        m.d.sync += bump("other_protocols")
                    with m.Else():
                        m.next = "PREFIX"
            with m.State("PREFIX"):
                m.d.comb += in_prefix.eq(1)
                for out, flag in zip(outs, (is_icmp, is_udp), strict=True):
                    with m.If(flag):
                        m.d.comb += [out.valid.eq(1), shift.eq(out.ready)]
                with m.If(shift):
                    m.d.sync += pos.eq(pos + 1)
                    with m.If(pos == IP_PREFIX.size - 1):
                        m.d.sync += pos.eq(0)
                        m.next = "PAYLOAD"
            with m.State("PAYLOAD"):
                for out, flag in zip(outs, (is_icmp, is_udp), strict=True):
                    m.d.comb += [out.payload.last.eq(i.payload.last | end_now),
                                 out.payload.drop.eq(~end_now)]
                    with m.If(flag):
                        m.d.comb += [out.valid.eq(i.valid), i.ready.eq(out.ready)]
                with m.If(take):
                    m.d.sync += count(left)
                    with m.If(end_now):
                        m.next = "DISCARD"
                        with m.If(i.payload.last):
                            m.next = "HEADER"
                    with m.Elif(i.payload.last):
                        m.d.sync += bump("truncated")
                        m.next = "HEADER"
            with m.State("DISCARD"):
                m.d.comb += i.ready.eq(1)
                with m.If(take & i.payload.last):
                    m.next = "HEADER"
        return m


class IPv4Tx(wiring.Component):
    """Builds the IPv4 header (source ``ip``, time to live ``ttl``, don't-fragment set, header
    checksum computed) of each payload of ``i``, which comes behind
    :data:`~.common.IP_PREFIX` (the destination's MAC and IP address, the total length and
    protocol); the packets leave on ``o`` for :class:`~.ethernet.EthTx`, behind
    :data:`~.common.ETH_TX_PREFIX`.

    The destination MAC address passes through; the other prefix fields go into a byte-wide
    shift register (7 cycles, ``o`` idle) and into the checksum, one adder summing a byte a
    cycle, and come out of it in the header's order. One byte a cycle otherwise;
    back-pressure passes through.
    """

    def __init__(self, ip, *, ttl=64):
        self.ip = check_ip(ip)
        if isinstance(ttl, bool) or not isinstance(ttl, int) or not 1 <= ttl <= 255:
            raise ValueError(f"ttl: {ttl!r} is not a time to live; allowed 1..255")
        self.ttl = ttl
        super().__init__({
            "i": In(stream.Signature(BYTES)),
            "o": Out(stream.Signature(BYTES)),
        })

    def elaborate(self, platform):
        m = Module()
        i, o = self.i, self.o
        mac = IP_PREFIX.offset("total_length")          # 6: the MAC address passes
        fields = IP_PREFIX.size - mac                   # 7: total length, protocol, address
        start = IP_PREFIX.size                          # 13: where the output resumes
        ethertype = list(ETHERTYPE_IPV4.to_bytes(2, "big"))
        header = IPV4_HEADER.wire_bytes({"version_ihl": 0x45, "flags_fragment": DF,
                                         "ttl": self.ttl, "src": self.ip})
        emitted = ethertype + header                    # 22 bytes from ``start`` on
        payload = start + len(emitted)                  # 35
        pos = Signal(range(payload + 1))
        rows = 2 ** len(pos)
        # Where the shift register's bytes go, in the order they came.
        base = start + len(ethertype)
        from_fields = at(_offsets(IPV4_HEADER, "total_length", "protocol", "dst", base=base),
                         pos, rows)
        ck = base + IPV4_HEADER.offset("checksum")

        prefix = Signal(8 * fields)
        shift = Signal()
        with m.If(shift):
            m.d.sync += prefix.eq(Cat(prefix[8:], i.payload.data))
        # The words that do not change, summed at elaboration.
        fixed = fold_const(0x4500 + DF + (self.ttl << 8) + (self.ip >> 16) + (self.ip & 0xFFFF))
        acc = OnesSum("header", init=fixed)
        # Prefix bytes 6..12: total length (high, low), protocol (a word's low byte), the
        # address (high, low, high, low).
        low = at([mac + 1, mac + 2, mac + 4, mac + 6], pos, rows)
        step = Signal()
        m.d.comb += step.eq(o.valid & o.ready)
        consuming = (pos >= mac) & (pos < start)
        emitting = (pos >= start) & (pos < payload)
        m.d.comb += [
            o.payload.data.eq(i.payload.data),
            o.payload.last.eq(i.payload.last & ~emitting),
        ]
        with m.If(consuming):
            m.d.comb += [i.ready.eq(1), shift.eq(i.valid)]
            with m.If(i.valid):
                m.d.sync += [pos.eq(pos + 1),
                             *acc.load(acc.plus(word(i.payload.data, low)))]
        with m.Elif(emitting):
            m.d.comb += [o.valid.eq(1), shift.eq(step & from_fields)]
            with m.If(from_fields):
                m.d.comb += o.payload.data.eq(prefix[:8])
            with m.Elif(pos == ck):
                m.d.comb += o.payload.data.eq(~acc.acc[8:])
            with m.Elif(pos == ck + 1):
                m.d.comb += o.payload.data.eq(~acc.acc[:8])
            with m.Else():
                m.d.comb += o.payload.data.eq(
                    table([0] * start + emitted + [0] * (rows - payload), pos))
            with m.If(step):
                m.d.sync += pos.eq(pos + 1)
                # The carries go back into the sum before the checksum goes out (two steps
                # are enough: each leaves at most one).
                m.d.sync += acc.load(acc.plus())
        with m.Else():
            m.d.comb += [o.valid.eq(i.valid), i.ready.eq(o.ready)]
            with m.If(step):
                with m.If(pos != payload):
                    m.d.sync += pos.eq(pos + 1)
                with m.If(i.payload.last):
                    m.d.sync += [pos.eq(0), *acc.clear()]
        return m
