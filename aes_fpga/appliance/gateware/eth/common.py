"""Pieces every layer of the network stack shares: stream layouts, header tables, the identity
checks, the Internet checksum, a packet FIFO that can discard its last packet, and an arbiter.

Streams carry one byte a beat with ``last`` on a packet's final byte (the convention of
:data:`~aes_fpga.appliance.gateware.cobs.ENCODER_LAYOUT`; a packet's first beat is the one
after a ``last``). Receive-side streams add ``drop`` (valid with ``last``: discard this
packet).

What a layer learnt about a packet (the sender's addresses) and what a layer below needs to
send one (the destination's) travel in-band, as a prefix of bytes in wire order in front of the
packet (:data:`ETH_RX_PREFIX`, :data:`IP_PREFIX`, :data:`ETH_TX_PREFIX`), not as side-band
fields: a layer then keeps them in byte-wide shift registers or in its packet buffer and sends
them on a byte at a time, where wide side-band fields cost a register or multiplexer bit each
at every layer and arbiter they pass.
"""

from amaranth.hdl import Array, Cat, Const, Module, Mux, Shape, Signal
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

__all__ = ["BYTES", "RX", "layout", "Header", "ETH_HEADER", "ARP_PACKET", "IPV4_HEADER",
           "UDP_HEADER", "ETH_RX_PREFIX", "IP_PREFIX", "ETH_TX_PREFIX", "mac_bytes", "ip_bytes",
           "fold_const", "word", "rotate_left", "OnesSum", "count", "table", "at", "PacketFIFO",
           "SharedPacketFIFO", "Arbiter"]

#: A byte stream: the PHY's bytes, a frame to send, a UDP payload.
BYTES = data.StructLayout({"data": 8, "last": 1})
#: Ethernet type codes.
ETHERTYPE_IPV4 = 0x0800
ETHERTYPE_ARP = 0x0806
#: IPv4 protocol numbers.
PROTO_ICMP = 1
PROTO_UDP = 17


def layout(**side):
    """A byte stream layout with ``data``, ``last`` and the side-band fields ``side``."""
    return data.StructLayout({"data": 8, "last": 1, **side})


def RX(**side):  # noqa: N802 - a layout constructor, named like the layouts above
    """A receive-side layout: :func:`layout` with ``drop`` (valid with ``last``)."""
    return layout(drop=1, **side)


class Header:
    """A header declared once as ``(name, bytes)`` pairs in wire order; gives each field's
    offset for :func:`capture` and the byte sequence for a transmitter."""

    def __init__(self, *fields):
        self.fields = []
        offset = 0
        for name, size in fields:
            self.fields.append((name, offset, size))
            offset += size
        self.size = offset

    def __iter__(self):
        return iter(self.fields)

    def offset(self, name):
        return next(offset for field, offset, _ in self.fields if field == name)

    def wire_bytes(self, values):
        """The header's bytes (integers, wire order) holding the integers ``values`` (name →
        value, big-endian; a missing field is zero)."""
        out = []
        for name, _, size in self.fields:
            out += list(values.get(name, 0).to_bytes(size, "big"))
        return out


ETH_HEADER = Header(("dst", 6), ("src", 6), ("ethertype", 2))
ARP_PACKET = Header(("htype", 2), ("ptype", 2), ("hlen", 1), ("plen", 1), ("oper", 2),
                    ("sha", 6), ("spa", 4), ("tha", 6), ("tpa", 4))
IPV4_HEADER = Header(("version_ihl", 1), ("tos", 1), ("total_length", 2), ("ident", 2),
                     ("flags_fragment", 2), ("ttl", 1), ("protocol", 1), ("checksum", 2),
                     ("src", 4), ("dst", 4))
UDP_HEADER = Header(("src_port", 2), ("dst_port", 2), ("length", 2), ("checksum", 2))

#: In front of each IPv4 packet :class:`~.ethernet.EthRx` delivers: the sender's MAC address.
ETH_RX_PREFIX = Header(("src", 6))
#: In front of each IPv4 payload: the sender's addresses and the packet's total length and
#: protocol on the receive side (from :class:`~.ipv4.IPv4Rx`), the destination's and the
#: packet's on the transmit side (to :class:`~.ipv4.IPv4Tx`); an answer to a request can copy
#: the request's prefix.
IP_PREFIX = Header(("mac", 6), ("total_length", 2), ("protocol", 1), ("ip", 4))
#: In front of each Ethernet payload to send (to :class:`~.ethernet.EthTx`).
ETH_TX_PREFIX = Header(("dst", 6), ("ethertype", 2))


def mac_bytes(value):
    return list(value.to_bytes(6, "big"))


def ip_bytes(value):
    return list(value.to_bytes(4, "big"))


def word(byte, low):
    """``byte`` as the high (``low`` is 0) or low half of a 16-bit word of the Internet
    checksum."""
    return Mux(low, byte, Cat(Const(0, 8), byte))


def count(counter):
    """The statement adding one to ``counter`` (a drop counter, wrapping), with the one as
    the carry chain's carry-in: written ``counter + 1``, the lowest bit costs an inverter (a
    LUT) on 7-series parts; this way the chain's first stage makes it."""
    return counter.eq((Cat(Const(1, 1), counter) + 1)[1:])


def table(values, index, width=8):
    """The entry of the constant ``values`` at ``index`` (a small ROM: a LUT per bit for up to
    64 entries); ``width`` bits each."""
    return Array(Const(v, width) for v in values)[index]


def at(positions, index, size):
    """Whether ``index`` (below ``size``) is one of ``positions``: a one-bit :func:`table`."""
    return table([int(n in positions) for n in range(size)], index, 1)


def fold_const(value):
    """:func:`fold` of an integer, at elaboration."""
    while value >> 16:
        value = (value & 0xFFFF) + (value >> 16)
    return value


class OnesSum:
    """An Internet checksum over a byte stream, one word a cycle: a 16-bit sum and the carry
    not yet added back (one bit), which goes into the next addition as its carry-in, so a
    step is one 17-bit carry chain and comparing the result with ``0xFFFF`` needs no fold.

    :meth:`plus` gives the 17-bit sum with one more term of up to 16 bits (``0``: just the
    carry added back); :meth:`load` stores one; :meth:`is_ffff` tests one; :meth:`clear` starts
    again from ``init`` (the constant words of a header, summed at elaboration).
    """

    def __init__(self, name, init=0):
        self.acc = Signal(16, name=f"{name}_sum", init=init)
        self.carry = Signal(name=f"{name}_carry")

    def plus(self, term=0):
        # acc + term + carry as one adder: below the lowest bit, 1 + carry carries in.
        return (Cat(Const(1, 1), self.acc) + Cat(self.carry, term))[1:18]

    def load(self, total):
        return [self.acc.eq(total[:16]), self.carry.eq(total[16])]

    def clear(self):
        return [self.acc.eq(self.acc.init), self.carry.eq(0)]

    @staticmethod
    def is_ffff(total):
        """Whether the sum and carry ``total`` (from :meth:`plus`) add up to exactly 0xFFFF."""
        return Mux(total[16], total[:16] == 0xFFFE, total[:16] == 0xFFFF)


def rotate_left(word):
    """Twice the 16-bit ``word`` in ones' complement arithmetic (modulo 0xFFFF)."""
    return Cat(word[15], word[:15])


#: Free bytes :class:`PacketFIFO`'s ``room`` asks for.
ROOM = 16


class PacketFIFO(wiring.Component):
    """A FIFO of whole packets: a packet is readable only once its last byte has been written
    and not dropped.

    ``i`` is always ready; a packet whose ``last`` beat has ``drop`` set, or that did not
    fit, is discarded (its space given back at once; an overflow counts in ``overflows``,
    and ``lost`` is high for a cycle right after it, for a user keeping a count of its own).
    ``meta`` (the input's ``meta`` field, taken with the ``last`` beat) is kept per packet in
    a small FIFO (``packets`` deep) and presented with every byte of that packet on ``o``.

    Latency: a packet's first byte is on ``o`` four cycles after its last byte was written
    (the first of them registers the input).
    Throughput: one byte a cycle in and out; ``o`` honours back-pressure.

    ``room`` (a register, a cycle late) is high while at least :data:`ROOM` bytes are free: a
    writer that checks it before each byte (or run of fewer bytes) never overflows.

    Parameters
    ----------
    depth : int
        Bytes of storage (a power of two); a packet longer than ``depth - 1`` bytes never fits.
    meta : shape
        Side-band data per packet (``0`` for none).
    packets : int
        How many packets (their ``meta``) the FIFO holds at most.
    """

    def __init__(self, depth=2048, meta=0, packets=4):
        if depth < 2 or depth & (depth - 1):
            raise ValueError(f"depth: {depth!r} is not a power of two of at least 2")
        self.depth = depth
        self.meta_shape = meta
        self.packets = packets
        super().__init__({
            "i": In(stream.Signature(RX(meta=meta))),
            "o": Out(stream.Signature(layout(meta=meta))),
            "overflows": Out(16),
            "lost": Out(1),
            "room": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        depth = self.depth
        ptr = depth.bit_length()                  # one wrap bit
        m.submodules.mem = mem = Memory(shape=9, depth=depth, init=[])
        wport = mem.write_port()
        rport = mem.read_port()
        # The input beat is registered before anything looks at it, so the writer's
        # valid/last/drop logic and the pointer logic here are not one path.
        i = stream.Signature(RX(meta=self.meta_shape)).create(path=("w",))
        m.d.comb += self.i.ready.eq(1)
        m.d.sync += [i.valid.eq(self.i.valid), i.payload.eq(self.i.payload)]
        meta_width = Shape.cast(self.meta_shape).width
        metas = None
        if meta_width:
            # Distributed RAM read without a register: no output stage to build.
            m.submodules.meta = metas = fifo.SyncFIFO(width=meta_width, depth=self.packets)
            # Unconditional: data gated by the packet's keep would cost a LUT a bit.
            m.d.comb += metas.w_data.eq(i.payload.meta)
        # Nothing to keep per packet: no limit on their number either.
        meta_room = metas.w_rdy if metas else 1
        meta_ready = metas.r_rdy if metas else 1
        wp = Signal(ptr)
        commit = Signal(ptr)
        rp = Signal(ptr)
        # Whether a byte is readable, registered: ``rp`` (as it will be) short of ``commit``
        # (as it is: a packet committed is readable a cycle later, so the read port sees its
        # last byte without a write-to-read bypass).
        avail = Signal()
        overflow = Signal()     # the packet being written lost a byte
        m.d.sync += self.lost.eq(0)

        full = (wp[:-1] == rp[:-1]) & (wp[-1] != rp[-1])
        # (Registered, from the pointers a cycle ago: the bytes written since, the one in the
        # input register and the one being taken are within ROOM's margin.)
        m.d.sync += self.room.eq((wp - rp)[:ptr] <= depth - ROOM)
        # The write port's address and data unconditional (gated by the enable alone: gated by
        # ``i.valid`` too they would cost a LUT a bit).
        m.d.comb += [wport.addr.eq(wp[:-1]), wport.data.eq(Cat(i.payload.data, i.payload.last))]
        # ``wp`` moves on a byte written, or back to ``commit`` at the end of a packet not
        # kept: one multiplexer in front of its flip-flops' enable.
        keep = ~i.payload.drop & ~overflow & ~full & meta_room
        rollback = i.valid & i.payload.last & ~keep
        advance = i.valid & ~full
        with m.If(rollback | advance):
            m.d.sync += wp.eq(Mux(rollback, commit, wp + 1))
        with m.If(i.valid):
            with m.If(full):
                m.d.sync += overflow.eq(1)
            with m.Else():
                m.d.comb += wport.en.eq(1)
            with m.If(i.payload.last):
                m.d.sync += overflow.eq(0)
                with m.If(keep):
                    if metas:
                        m.d.comb += metas.w_en.eq(1)
                    m.d.sync += commit.eq(wp + 1)
                with m.Elif(~i.payload.drop):
                    m.d.sync += [count(self.overflows), self.lost.eq(1)]

        o = self.o
        take = o.valid & o.ready
        m.d.comb += [
            o.valid.eq(avail & meta_ready),
            o.payload.data.eq(rport.data[:8]),
            o.payload.last.eq(rport.data[8]),
        ]
        # (Cut to the pointer's width: ``rp + 1`` has a bit more, so a packet ending at the
        # pointers' wrap (``commit`` 0) would otherwise never compare equal, and the reader
        # would go on into stale bytes as if they were packets.)
        rp_next = Mux(take, rp + 1, rp)[:ptr]
        m.d.comb += rport.addr.eq(rp_next[:-1])
        m.d.sync += avail.eq(rp_next != commit)
        if metas:
            m.d.comb += [o.payload.meta.eq(metas.r_data),
                         metas.r_en.eq(take & o.payload.last)]
        with m.If(take):
            m.d.sync += rp.eq(rp + 1)
        return m


class SharedPacketFIFO(wiring.Component):
    """One :class:`PacketFIFO` for two writers that never write at once (the ICMP and UDP
    layers behind :class:`~.ipv4.IPv4Rx`, which gives one packet at a time to one of them):
    a packet written on ``i0`` comes out on ``o0``, one on ``i1`` on ``o1``, in the order they
    were written.

    ``metas`` gives each pair's per-packet side-band shape (as :class:`PacketFIFO`'s
    ``meta``); the buffer keeps the wider one and a bit saying whose the packet is. A packet
    waiting for its reader holds back the other's behind it. Latency and throughput are
    :class:`PacketFIFO`'s; ``i0`` and ``i1`` are always ready.
    """

    def __init__(self, depth=2048, metas=(0, 0), packets=16):
        self.depth = depth
        self.packets = packets
        self.metas = tuple(metas)
        self.width = max(Shape.cast(shape).width for shape in metas)
        super().__init__({
            **{f"i{k}": In(stream.Signature(RX(meta=shape))) for k, shape in enumerate(metas)},
            **{f"o{k}": Out(stream.Signature(layout(meta=shape)))
               for k, shape in enumerate(metas)},
            "overflows": Out(16),
            "lost": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.fifo = buf = PacketFIFO(self.depth, meta=self.width + 1,
                                             packets=self.packets)
        i0, i1, o0, o1 = self.i0, self.i1, self.o0, self.o1
        w = buf.i.payload
        m.d.comb += [
            i0.ready.eq(1), i1.ready.eq(1),
            buf.i.valid.eq(i0.valid | i1.valid),
            w.data.eq(Mux(i1.valid, i1.payload.data, i0.payload.data)),
            w.last.eq(Mux(i1.valid, i1.payload.last, i0.payload.last)),
            w.drop.eq(Mux(i1.valid, i1.payload.drop, i0.payload.drop)),
            # The writer's own meta; whose packet it is in the top bit.
            w.meta.eq(Cat(Mux(i1.valid, Cat(i1.payload.meta), Cat(i0.payload.meta)),
                          Const(0, self.width))[:self.width] | (i1.valid << self.width)),
            self.overflows.eq(buf.overflows),
            self.lost.eq(buf.lost),
        ]
        r = buf.o
        second = r.payload.meta[self.width]
        for k, o in enumerate((o0, o1)):
            m.d.comb += [o.valid.eq(r.valid & (second == k)), o.payload.data.eq(r.payload.data),
                         o.payload.last.eq(r.payload.last)]
            if Shape.cast(self.metas[k]).width:
                m.d.comb += Cat(o.payload.meta).eq(r.payload.meta)
        m.d.comb += r.ready.eq(Mux(second, o1.ready, o0.ready))
        return m


class Arbiter(wiring.Component):
    """Merges ``n`` packet streams of one layout into ``o``, a whole packet at a time (the
    lowest-numbered waiting input first). No latency; one beat a cycle."""

    def __init__(self, shape, n):
        self.n = n
        super().__init__({
            **{f"i{k}": In(stream.Signature(shape)) for k in range(n)},
            "o": Out(stream.Signature(shape)),
        })

    def elaborate(self, platform):
        m = Module()
        inputs = [getattr(self, f"i{k}") for k in range(self.n)]
        sel = Signal(range(self.n))
        busy = Signal()
        choice = Signal(range(self.n))
        for k in reversed(range(self.n)):
            with m.If(inputs[k].valid):
                m.d.comb += choice.eq(k)
        current = Mux(busy, sel, choice)
        for k, i in enumerate(inputs):
            with m.If(current == k):
                m.d.comb += [self.o.valid.eq(i.valid), self.o.payload.eq(i.payload),
                             i.ready.eq(self.o.ready)]
        with m.If(self.o.valid & self.o.ready):
            m.d.sync += [busy.eq(~self.o.payload.last), sel.eq(current)]
        return m
