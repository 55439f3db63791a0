"""Pieces every layer of the network stack shares: stream layouts, header tables, the identity
checks, the Internet checksum, a packet FIFO that can discard its last packet, and an arbiter.

Streams carry one byte a beat with ``last`` on a packet's final byte (the convention of
:data:`~aes_fpga.appliance.gateware.cobs.ENCODER_LAYOUT`; a packet's first beat is the one
after a ``last``). Receive-side streams add ``drop`` (valid with ``last``: discard this
packet) and, as side-band fields held for the whole packet, what the layers below learnt
(the sender's MAC and IP address, ...), the way LiteEth carries a layer's parameters.
"""

from amaranth.hdl import Array, Cat, Const, Module, Mux, Shape, Signal
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

__all__ = ["BYTES", "RX", "layout", "Header", "ETH_HEADER", "ARP_PACKET", "IPV4_HEADER",
           "UDP_HEADER", "check_mac", "check_ip", "check_port", "mac_bytes", "ip_bytes",
           "fold", "fold_const", "word", "OnesSum", "capture", "PacketFIFO", "Arbiter"]

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
        """The header's bytes (8-bit values, wire order) holding ``values`` (name → value,
        big-endian; a missing field is zero)."""
        out = []
        for name, _, size in self.fields:
            value = values.get(name, 0)
            if isinstance(value, int):
                value = Const(value, 8 * size)
            value = Cat(value, Const(0, 8 * size))[:8 * size]
            out += [value.word_select(size - 1 - n, 8) for n in range(size)]
        return out


ETH_HEADER = Header(("dst", 6), ("src", 6), ("ethertype", 2))
ARP_PACKET = Header(("htype", 2), ("ptype", 2), ("hlen", 1), ("plen", 1), ("oper", 2),
                    ("sha", 6), ("spa", 4), ("tha", 6), ("tpa", 4))
IPV4_HEADER = Header(("version_ihl", 1), ("tos", 1), ("total_length", 2), ("ident", 2),
                     ("flags_fragment", 2), ("ttl", 1), ("protocol", 1), ("checksum", 2),
                     ("src", 4), ("dst", 4))
UDP_HEADER = Header(("src_port", 2), ("dst_port", 2), ("length", 2), ("checksum", 2))


def _check(name, value, bits):
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 1 << bits:
        raise ValueError(f"{name}: {value!r} is not an integer in 0..0x{(1 << bits) - 1:X}")
    return value


def check_mac(value, name="mac"):
    """``value`` as a 48-bit unicast MAC address (an int, or a ``"02:00:00:00:00:01"``
    string); a clear error naming ``name`` otherwise."""
    if isinstance(value, str):
        try:
            parts = [int(p, 16) for p in value.split(":")]
        except ValueError:
            parts = []
        if len(parts) != 6 or not all(0 <= p < 256 for p in parts):
            raise ValueError(f"{name}: {value!r} is not a MAC address like 02:00:00:00:00:01")
        value = int.from_bytes(bytes(parts), "big")
    value = _check(name, value, 48)
    if value >> 40 & 1:
        raise ValueError(f"{name}: {value:012X} is a group (multicast) address; allowed: a "
                         f"unicast address (first byte even)")
    return value


def check_ip(value, name="ip"):
    """``value`` as a 32-bit IPv4 address (an int, or a dotted ``"192.168.1.50"`` string)."""
    if isinstance(value, str):
        try:
            parts = [int(p) for p in value.split(".")]
        except ValueError:
            parts = []
        if len(parts) != 4 or not all(0 <= p < 256 for p in parts):
            raise ValueError(f"{name}: {value!r} is not a dotted IPv4 address like 192.168.1.50")
        value = int.from_bytes(bytes(parts), "big")
    value = _check(name, value, 32)
    if value == 0 or value == 0xFFFF_FFFF or value >> 28 in (0xE, 0xF):
        raise ValueError(f"{name}: {value:08X} is not a unicast address; allowed: 0.0.0.1 to "
                         f"223.255.255.255")
    return value


def check_port(value, name="port"):
    """``value`` as a UDP port, 1 to 65535."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 0xFFFF:
        raise ValueError(f"{name}: {value!r} is not a UDP port; allowed 1..65535")
    return value


def mac_bytes(value):
    return list(value.to_bytes(6, "big"))


def ip_bytes(value):
    return list(value.to_bytes(4, "big"))


def fold(value):
    """The 16-bit ones' complement sum of ``value`` (a sum of 16-bit words of up to 32 bits)."""
    once = value[:16] + value[16:]
    return (once[:16] + once[16:])[:16]


def word(byte, pos):
    """``byte`` as the high (``pos`` even) or low half of a 16-bit word of the Internet
    checksum."""
    return Mux(pos[0], byte, Cat(Const(0, 8), byte))


def fold_const(value):
    """:func:`fold` of an integer, at elaboration."""
    while value >> 16:
        value = (value & 0xFFFF) + (value >> 16)
    return value


class OnesSum:
    """An Internet checksum over a byte stream, one byte a cycle: a 16-bit sum and the carries
    not yet added back (at most 3), so a byte costs one 18-bit adder and comparing the result
    with ``0xFFFF`` needs no fold.

    :meth:`plus` gives the 18-bit sum with up to three more 16-bit terms; :meth:`load` stores
    one; :meth:`is_ffff` and :meth:`value` read one (as a ones' complement 16-bit value).
    """

    def __init__(self, name):
        self.acc = Signal(16, name=f"{name}_sum")
        self.carry = Signal(2, name=f"{name}_carry")

    def plus(self, *terms):
        result = self.acc + self.carry
        for term in terms:
            result = result + term
        return result[:18]

    def load(self, total):
        return [self.acc.eq(total[:16]), self.carry.eq(total[16:18])]

    def clear(self):
        return [self.acc.eq(0), self.carry.eq(0)]

    @staticmethod
    def is_ffff(total):
        # sum + carries == 0xFFFF exactly (a larger one folds to 0..2, never 0xFFFF).
        return (total[2:16] == 0x3FFF) & ((total[:2] + total[16:18]) == 3)

    @staticmethod
    def value(total):
        once = total[:16] + total[16:18]
        return (once[:16] + once[16])[:16]


def capture(m, header, pos, byte, enable, base=0):
    """Registers holding each field of ``header`` (big-endian), filled from ``byte`` when
    ``enable`` and ``pos`` is the byte's offset (plus ``base``); ``{name: Signal}``."""
    regs = {}
    for name, offset, size in header:
        reg = regs[name] = Signal(8 * size, name=f"rx_{name}")
        for n in range(size):
            with m.If(enable & (pos == base + offset + n)):
                m.d.sync += reg.word_select(size - 1 - n, 8).eq(byte)
    return regs


def pick(byte_values, pos):
    """The byte of ``byte_values`` at ``pos`` (a multiplexer over a header's bytes)."""
    return Array(byte_values)[pos]


class PacketFIFO(wiring.Component):
    """A FIFO of whole packets: a packet is readable only once its last byte has been written
    and not dropped.

    ``i`` is always ready; a packet whose ``last`` beat has ``drop`` set, or that did not
    fit, is discarded (its space given back at once; an overflow counts in ``overflows``).
    ``meta`` (the input's ``meta`` field, taken with the ``last`` beat) is kept per packet in
    a small FIFO (``packets`` deep) and presented with every byte of that packet on ``o``.

    Latency: a packet's first byte is on ``o`` three cycles after its last byte was written.
    Throughput: one byte a cycle in and out; ``o`` honours back-pressure.

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
        })

    def elaborate(self, platform):
        m = Module()
        depth = self.depth
        ptr = depth.bit_length()                  # one wrap bit
        m.submodules.mem = mem = Memory(shape=9, depth=depth, init=[])
        wport = mem.write_port()
        rport = mem.read_port()
        meta_width = Shape.cast(self.meta_shape).width
        # Distributed RAM read without a register: no output stage to build.
        m.submodules.meta = metas = fifo.SyncFIFO(width=max(meta_width, 1), depth=self.packets)
        wp = Signal(ptr)
        commit = Signal(ptr)
        readable = Signal(ptr)      # ``commit`` a cycle late: the read port then sees the
        rp = Signal(ptr)            # packet's last byte without a write-to-read bypass
        m.d.sync += readable.eq(commit)
        overflow = Signal()     # the packet being written lost a byte

        i = self.i
        # Unconditional: data gated by ``keep`` would cost a LUT per ``meta`` bit.
        m.d.comb += [i.ready.eq(1), metas.w_data.eq(i.payload.meta)]
        full = (wp - rp)[:ptr] == depth
        with m.If(i.valid):
            with m.If(full):
                m.d.sync += overflow.eq(1)
            with m.Else():
                m.d.comb += [wport.en.eq(1), wport.addr.eq(wp[:-1]),
                             wport.data.eq(Cat(i.payload.data, i.payload.last))]
                m.d.sync += wp.eq(wp + 1)
            with m.If(i.payload.last):
                keep = ~i.payload.drop & ~overflow & ~full & metas.w_rdy
                m.d.sync += overflow.eq(0)
                with m.If(keep):
                    m.d.comb += metas.w_en.eq(1)
                    m.d.sync += commit.eq(wp + 1)
                with m.Else():
                    m.d.sync += wp.eq(commit)
                    with m.If(~i.payload.drop):
                        m.d.sync += self.overflows.eq(self.overflows + 1)

        o = self.o
        take = o.valid & o.ready
        m.d.comb += [
            o.valid.eq((rp != readable) & metas.r_rdy),
            o.payload.data.eq(rport.data[:8]),
            o.payload.last.eq(rport.data[8]),
            o.payload.meta.eq(metas.r_data),
            rport.addr.eq(Mux(take, rp + 1, rp)[:-1]),
            metas.r_en.eq(take & o.payload.last),
        ]
        with m.If(take):
            m.d.sync += rp.eq(rp + 1)
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
