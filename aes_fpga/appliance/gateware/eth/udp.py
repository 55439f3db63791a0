"""UDP on one port: request payloads in, reply payloads back to the requester."""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ....stage import PipeStage
from ...addresses import check_ip, check_port
from .common import (
    BYTES,
    IP_PREFIX,
    IPV4_HEADER,
    PROTO_UDP,
    RX,
    UDP_HEADER,
    Header,
    OnesSum,
    PacketFIFO,
    at,
    count,
    fold_const,
    rotate_left,
    table,
    word,
)
from .ipv4 import IP_RX_LAYOUT

__all__ = ["UdpPort"]

HEADER = UDP_HEADER.size
#: What the receive buffer keeps of a request in front of its payload, and the transmit
#: buffer of a reply: the peer's addresses, in the order they go out.
PEER = Header(("mac", 6), ("ip", 4), ("port", 2))


class UdpPort(wiring.Component):
    """One UDP port: the payload of each datagram sent to ``port`` comes out on ``rx``; each
    payload taken on ``tx`` goes back as a datagram to the sender of the last request taken
    from ``rx`` when the payload's first byte comes (its MAC, IP address and port, stored with
    the reply while it waits to be sent, so a request read meanwhile does not redirect it).

    Receive (``i``, from :class:`~.ipv4.IPv4Rx`): a datagram is stored whole behind its
    sender's addresses (:data:`PEER`; out on ``store`` into a packet buffer, back on
    ``stored``: the stack's :class:`~.common.SharedPacketFIFO`, shared with ICMP) and
    delivered only when its checksum is right or zero (``bad_checksum`` otherwise), its port
    is ``port`` (``other_ports``) and its length fits its IP packet (``bad_length``: found
    when the IP payload ends first, so a truncated packet counts only as the IP layer's
    ``truncated``); empty datagrams are dropped (``bad_length`` too). Transmit (``o``, to
    :class:`~.ipv4.IPv4Tx`, behind :data:`~.common.IP_PREFIX`): a reply is stored whole
    (``buffer`` bytes) behind its peer's addresses while its length and checksum are summed,
    then sent with a UDP header (source port ``port``; a checksum computing to zero is sent
    as ``0xFFFF``).

    Throughput: one byte a cycle each way, plus per reply 12 cycles to store the peer's
    addresses in front of it and 5 at its end to finish its checksum (``tx`` waits); ``tx``
    also waits while the reply buffer is nearly full (replies faster than ``o`` takes them
    are held back, never lost); ``rx`` and ``o`` honour back-pressure; ``i`` is always ready
    (``store``, a cycle behind it, must be too: a packet buffer's input is). The checksums are
    summed a byte a cycle with one adder each way, the pseudo-header's words included as
    their bytes pass.
    """

    def __init__(self, ip, port, *, buffer=2048):
        self.ip = check_ip(ip)
        self.port = check_port(port)
        self.buffer = buffer
        super().__init__({
            "i": In(stream.Signature(IP_RX_LAYOUT)),
            "store": Out(stream.Signature(RX())),
            "stored": In(stream.Signature(BYTES)),
            "o": Out(stream.Signature(BYTES)),
            "rx": Out(stream.Signature(BYTES)),
            "tx": In(stream.Signature(BYTES)),
            "bad_checksum": Out(16), "bad_length": Out(16), "other_ports": Out(16),
        })

    def elaborate(self, platform):
        m = Module()
        # A reply's length needs only the bits of the longest that fits the buffer (a longer
        # one is dropped by it whatever its length field says).
        self._length_bits = (self.buffer + HEADER).bit_length()
        reply = data.StructLayout({"length": self._length_bits, "checksum": 16})
        m.submodules.tx_fifo = tx_buf = PacketFIFO(self.buffer, meta=reply)
        self._receive(m)
        peers, last = self._deliver(m)
        self._take_reply(m, tx_buf, peers, last)
        self._send(m, tx_buf)
        return m

    def _receive(self, m):
        i = self.i
        store = self.store
        byte = i.payload.data
        start = IP_PREFIX.size                          # 13: the UDP header's first byte
        payload = start + HEADER                        # 21
        pos = Signal(range(payload + 1))                # saturating
        rows = 2 ** len(pos)

        def field(name, n=0):
            return start + UDP_HEADER.offset(name) + n

        def prefix(name):
            offset = IP_PREFIX.offset(name)
            return range(offset, offset + dict((f, s) for f, _, s in IP_PREFIX)[name])

        # Bytes kept in front of the payload: the prefix's MAC and IP address, the source port.
        kept = [*prefix("mac"), *prefix("ip"), field("src_port"), field("src_port", 1)]
        assert len(kept) == PEER.size
        # The pseudo-header's words other than the length, and our address's.
        acc = OnesSum("rx", init=fold_const((self.ip >> 16) + (self.ip & 0xFFFF) + PROTO_UDP))
        low = Signal()              # the byte now on ``i`` is a word's low half
        # Summed: the source address and the datagram; the length twice (it is in the
        # pseudo-header too).
        summed = pos >= IP_PREFIX.offset("ip")
        twice = (pos == field("length")) | (pos == field("length", 1))
        term = Mux(summed, Mux(twice, rotate_left(word(byte, low)), word(byte, low)), 0)
        total = acc.plus(term)
        # The datagram's bytes to come, from its length on, as its complement (counting up:
        # an increment needs no inverters).
        left = Signal(16)
        port_ok = Signal()
        empty = Signal()            # the length leaves no payload
        no_checksum = Signal()
        bad = Signal()              # header checks failed: drop the rest
        done = Signal()             # the datagram's last byte has gone into the buffer
        port = list(self.port.to_bytes(2, "big"))
        length = Cat(byte, ~left[:8])       # at the length's low byte
        ours = byte == Mux(pos == field("dst_port"), port[0], port[1])
        # The bytes to come count down from the length's low byte on (their complement up):
        # at the datagram's last byte, HEADER - 1 (the header bytes after the length).
        end = (pos == payload) & (left == (~(HEADER - 1) & 0xFFFF))
        keep = at(kept, pos, rows)
        good_end = end & ~bad
        # ``store`` is a registered copy of the bytes kept, a cycle late: by then the sum
        # holds the datagram's last byte, so the checksum is checked from registers (the
        # adder and the comparison are then not one path with the buffer's input).
        check = Signal()            # the beat on ``store`` ends a datagram whose sum counts
        drop = Signal()             # the beat on ``store`` drops its datagram regardless
        bad_sum = check & ~OnesSum.is_ffff(Cat(acc.acc, acc.carry))
        m.d.comb += [
            i.ready.eq(1),
            store.payload.drop.eq(drop | bad_sum),
        ]
        m.d.sync += [
            store.valid.eq(i.valid & ~done & (keep | (pos == payload) & ~bad | i.payload.last)),
            store.payload.data.eq(byte),
            store.payload.last.eq(i.payload.last | good_end),
            drop.eq(~good_end | i.payload.drop),
            check.eq(i.valid & good_end & ~i.payload.drop & ~no_checksum),
        ]
        with m.If(bad_sum):
            m.d.sync += count(self.bad_checksum)
        with m.If(i.valid):
            with m.If(pos != payload):
                m.d.sync += pos.eq(pos + 1)
            with m.If(summed):
                m.d.sync += [low.eq(~low), *acc.load(total)]
            with m.Else():
                # Cleared before the sum starts, not at the last byte: the check above
                # reads the sum a cycle after it.
                m.d.sync += acc.clear()
            with m.If(pos == field("dst_port")):
                m.d.sync += port_ok.eq(ours)
            with m.If(pos == field("dst_port", 1)):
                m.d.sync += port_ok.eq(port_ok & ours)
            with m.If((pos == field("length")) | (pos == field("length", 1))):
                m.d.sync += left.eq(~length)
            with m.Else():
                m.d.sync += count(left)
            with m.If(pos == field("length", 1)):
                m.d.sync += empty.eq(length <= HEADER)
            with m.If(pos == field("checksum")):
                m.d.sync += no_checksum.eq(byte == 0)
            with m.If(pos == field("checksum", 1)):
                m.d.sync += no_checksum.eq(no_checksum & (byte == 0))
                with m.If(~port_ok):
                    m.d.sync += [bad.eq(1), count(self.other_ports)]
                with m.Elif(empty):
                    m.d.sync += [bad.eq(1), count(self.bad_length)]
            with m.If(good_end):
                m.d.sync += done.eq(1)
            with m.If(i.payload.last):
                m.d.sync += [pos.eq(0), low.eq(0), bad.eq(0), done.eq(0)]
                # The IP packet ended before the datagram did: its length does not fit (a
                # truncated packet is counted as such by the IP layer).
                header_bad = Mux(pos == field("checksum", 1), ~port_ok | empty, bad)
                with m.If((pos >= field("checksum", 1)) & ~done & ~good_end & ~header_bad
                          & ~i.payload.drop):
                    m.d.sync += count(self.bad_length)

    def _deliver(self, m):
        """Request payloads out on ``rx``; returns the read port of the peers' memory and its
        bank holding the peer of the last request taken (whom replies go to)."""
        r = self.stored
        skip = Signal(range(PEER.size + 1))     # the stored peer's bytes read
        # The peers in a small memory of two banks of 16 bytes (LUT RAM, where 96-bit
        # registers for this request's peer and the last one's would need a 12-way byte
        # multiplexer to send them): this request's peer goes into ``bank`` a byte at a time,
        # the last request's is in the other; they swap when a request's last byte is taken.
        m.submodules.peers = peers = Memory(shape=8, depth=32, init=[])
        write = peers.write_port()
        bank = Signal()
        payload = skip == PEER.size
        m.d.comb += [self.rx.valid.eq(r.valid & payload),
                     r.ready.eq(self.rx.ready | ~payload),
                     self.rx.payload.data.eq(r.payload.data),
                     self.rx.payload.last.eq(r.payload.last),
                     write.addr.eq(Cat(skip[:4], bank)), write.data.eq(r.payload.data),
                     write.en.eq(r.valid & ~payload)]
        with m.If(r.valid & ~payload):
            m.d.sync += skip.eq(skip + 1)
        with m.If(r.valid & r.ready & payload & r.payload.last):
            m.d.sync += [skip.eq(0), bank.eq(~bank)]
        return peers.read_port(), ~bank

    def _take_reply(self, m, buf, peers, last):
        """Replies in, stored whole behind their peer while length and checksum are summed.

        Every byte summed comes through ``byte`` (the peer's bytes, the reply's, then the
        length's two), so the adder has one term, a byte as a word's high or low half.
        """
        t = self.tx
        w = buf.i.payload
        n = Signal(range(PEER.size + 1))
        # The datagram's length with the byte on ``tx``.
        length = Signal(self._length_bits, init=HEADER + 1)
        constant = fold_const((self.ip >> 16) + (self.ip & 0xFFFF) + PROTO_UDP + self.port)
        acc = OnesSum("tx", init=constant)
        low = Signal()                          # ``byte`` is a word's low half
        add = Signal()                          # ``byte`` goes into the sum
        byte = Signal(8)
        peer_byte = peers.data                  # the peer's byte n - 1 (a read register)
        held = Signal(8)                        # the reply's last byte
        twice = (length << 1)[:16]               # the length in pseudo-header and header
        m.d.comb += peers.addr.eq(Cat(n[:4], last))
        m.d.comb += w.data.eq(byte)
        with m.If(add):
            m.d.sync += [low.eq(~low), *acc.load(acc.plus(word(byte, low)))]
        with m.FSM():
            # A reply waits while the buffer is nearly full (``room``: ROOM bytes free, more
            # than the peer's bytes or the checksum's end write in a row), so no reply is
            # lost when replies come faster than the line sends them.
            with m.State("IDLE"):
                with m.If(t.valid & buf.room):
                    m.d.sync += n.eq(1)
                    m.next = "PEER"
            with m.State("PEER"):
                # The peer's address and port are pseudo-header and header words.
                m.d.comb += [buf.i.valid.eq(1), byte.eq(peer_byte),
                             add.eq(n > PEER.offset("ip"))]
                m.d.sync += n.eq(n + 1)
                with m.If(n == PEER.size):
                    m.next = "DATA"
            with m.State("DATA"):
                # The last byte waits in ``held`` until the checksum is known.
                m.d.comb += [t.ready.eq(buf.room),
                             buf.i.valid.eq(t.valid & buf.room & ~t.payload.last),
                             byte.eq(t.payload.data), add.eq(t.valid & buf.room)]
                with m.If(t.valid & buf.room):
                    with m.If(t.payload.last):
                        m.d.sync += [held.eq(t.payload.data), low.eq(0)]
                        m.next = "LENGTH_HIGH"
                    with m.Else():
                        m.d.sync += length.eq(length + 1)
            with m.State("LENGTH_HIGH"):
                m.d.comb += [byte.eq(twice[8:]), add.eq(1)]
                m.next = "LENGTH_LOW"
            with m.State("LENGTH_LOW"):
                m.d.comb += [byte.eq(twice[:8]), add.eq(1)]
                m.d.sync += n.eq(0)
                m.next = "FOLD"
            with m.State("FOLD"):
                # The carries back into the sum (two steps: each leaves at most one).
                m.d.sync += [acc.load(acc.plus()), n.eq(1)]
                with m.If(n == 1):
                    m.next = "LAST"
            with m.State("LAST"):
                # The checksum goes with the reply: the sum's complement, except that a sum
                # of 0xFFFF (whose complement is zero, which would mean "no checksum") is sent
                # as 0xFFFF. Made here, from registers, not on the way out.
                m.d.comb += [byte.eq(held), buf.i.valid.eq(1), w.last.eq(1),
                             buf.i.payload.meta.length.eq(length),
                             buf.i.payload.meta.checksum.eq(
                                 ~acc.acc | (acc.acc == 0xFFFF).replicate(16))]
                m.d.sync += [length.eq(length.init), low.eq(0), n.eq(0), *acc.clear()]
                m.next = "IDLE"

    def _send(self, m, buf):
        """Replies out, behind the prefix and the UDP header."""
        # The buffer's block RAM read goes into flip-flops first (a pipe stage: no logic in
        # front of them), not into the header position's logic.
        m.submodules.tx_stage = stage = PipeStage(buf.o.payload.shape())
        wiring.connect(m, buf.o, stage.i)
        q = stage.o
        meta = q.payload.meta
        o = self.o
        # Where the stored peer's bytes go, the meta fields and the constants in between.
        mac, ip = IP_PREFIX.offset("mac"), IP_PREFIX.offset("ip")
        start = IP_PREFIX.size
        payload = start + HEADER
        dst_port = start + UDP_HEADER.offset("dst_port")
        stored = [*range(mac, mac + 6), *range(ip, ip + 4), dst_port, dst_port + 1]
        pos = Signal(range(payload + 1))
        rows = 2 ** len(pos)
        from_buffer = at([*stored, payload], pos, rows)
        total = (meta.length + IPV4_HEADER.size)[:16]
        checksum = meta.checksum
        constants = IP_PREFIX.wire_bytes({"protocol": PROTO_UDP}) + UDP_HEADER.wire_bytes(
            {"src_port": self.port})
        m.d.comb += [o.valid.eq(q.valid), q.ready.eq(o.ready & from_buffer),
                     o.payload.last.eq(q.payload.last & (pos == payload))]
        with m.Switch(pos):
            for place, value in ((IP_PREFIX.offset("total_length"), total[8:]),
                               (IP_PREFIX.offset("total_length") + 1, total[:8]),
                               (start + UDP_HEADER.offset("length"), meta.length[8:]),
                               (start + UDP_HEADER.offset("length") + 1, meta.length[:8]),
                               (start + UDP_HEADER.offset("checksum"), checksum[8:]),
                               (start + UDP_HEADER.offset("checksum") + 1, checksum[:8])):
                with m.Case(place):
                    m.d.comb += o.payload.data.eq(value)
            with m.Default():
                m.d.comb += o.payload.data.eq(
                    Mux(from_buffer, q.payload.data,
                        table(constants + [0] * (rows - len(constants)), pos)))
        with m.If(o.valid & o.ready):
            with m.If(pos != payload):
                m.d.sync += pos.eq(pos + 1)
            with m.If(o.payload.last):
                m.d.sync += pos.eq(0)
