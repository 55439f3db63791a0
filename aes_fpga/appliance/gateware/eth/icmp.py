"""ICMP: echo replies."""

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .common import BYTES, IP_PREFIX, RX, OnesSum, count, layout, word
from .ipv4 import IP_RX_LAYOUT

__all__ = ["IcmpEcho"]

ECHO_REQUEST = 8
ECHO_REPLY = 0
#: The ICMP message's first byte (type) and its checksum, after the prefix.
_TYPE = IP_PREFIX.size
_CHECKSUM = _TYPE + 2
#: An echo message's header: type, code, checksum, identifier, sequence number.
_ECHO_HEADER = 8


class IcmpEcho(wiring.Component):
    """Answers each ICMP echo request of ``i`` (from :class:`~.ipv4.IPv4Rx`) with an echo
    reply on ``o`` (for :class:`~.ipv4.IPv4Tx`) carrying the same identifier, sequence number
    and data.

    A request is stored whole with the prefix it came with (the sender's addresses are the
    reply's destination) while its checksum is verified: it goes out on ``store`` into a
    packet buffer (the stack's :class:`~.common.SharedPacketFIFO`, shared with UDP; the
    largest request the MTU allows must fit), with ``drop`` on its last byte for a bad
    checksum (``bad_checksum``) or another ICMP type (``ignored``), and the reply's checksum
    as the packet's meta; ``i`` is always ready and ``store``, a cycle behind it, must be too
    (a packet buffer's input is). It comes back on ``stored`` and leaves on ``o`` as the reply, one
    byte a cycle, with type 0 and its checksum put in on the way.

    The reply's checksum comes from the request's (RFC 1624: a type changed from 8 to 0
    adds 0x0800 to it, in ones' complement), so only the request's checksum is summed.
    """

    #: The packet buffer's per-packet side-band: the reply's checksum.
    META = 16

    def __init__(self):
        super().__init__({
            "i": In(stream.Signature(IP_RX_LAYOUT)),
            "store": Out(stream.Signature(RX(meta=self.META))),
            "stored": In(stream.Signature(layout(meta=self.META))),
            "o": Out(stream.Signature(BYTES)),
            "bad_checksum": Out(16), "ignored": Out(16),
        })

    def elaborate(self, platform):
        m = Module()
        i = self.i
        store = self.store
        byte = i.payload.data
        # Bytes of the packet so far, saturating once the echo header has come.
        pos = Signal(range(_TYPE + _ECHO_HEADER + 1))
        low = Signal()              # the byte now on ``i`` is a word's low half
        acc = OnesSum("request")    # the message's sum, checksum included
        echo = Signal()             # the type and code say echo request
        checksum = Signal(16)       # the request's
        nonzero = Signal()          # a byte the reply's sum covers is not zero
        total = acc.plus(word(byte, low))
        in_message = pos >= _TYPE
        # ``store`` is a registered copy of ``i``, a cycle late: by then the sum holds the
        # request's last byte, so the checksum is checked from registers (the adder and the
        # comparison are then not one path with the buffer's input).
        check = Signal()            # the beat on ``store`` ends a request whose sum counts
        drop = Signal()             # the beat on ``store`` drops its request regardless
        bad_sum = check & ~OnesSum.is_ffff(Cat(acc.acc, acc.carry))
        m.d.comb += [i.ready.eq(1), store.payload.drop.eq(drop | bad_sum)]
        m.d.sync += [
            store.valid.eq(i.valid),
            store.payload.data.eq(byte),
            store.payload.last.eq(i.payload.last),
            drop.eq(0),
            check.eq(0),
        ]
        with m.If(bad_sum):
            m.d.sync += count(self.bad_checksum)
        good_type = echo & ((pos != _TYPE + 1) | (byte == 0))
        summed = (pos == _TYPE + 1) | (pos >= _CHECKSUM + 2)
        all_zero = ~nonzero & (~summed | (byte == 0))
        # The reply's checksum: request + 0x0800 modulo 0xFFFF, as 0..0xFFFE, except 0xFFFF
        # (minus zero, as a sum from scratch gives it) when every word the reply sums is zero;
        # that needs a request checksum of 0xF7FF, which the carry-in then leaves at 0xFFFF.
        wrap = (checksum > 0xF7FF) | ((checksum == 0xF7FF) & ~all_zero)
        m.d.sync += store.payload.meta.eq(checksum + 0x0800 + wrap)
        with m.If(i.valid):
            with m.If(pos != _TYPE + _ECHO_HEADER):
                m.d.sync += pos.eq(pos + 1)
            with m.If(in_message):
                m.d.sync += [low.eq(~low), *acc.load(total)]
            with m.Else():
                # Cleared before the sum starts, not at the last byte: the check above
                # reads the sum a cycle after it.
                m.d.sync += acc.clear()
            with m.If(summed & (byte != 0)):
                m.d.sync += nonzero.eq(1)
            with m.If(pos == _TYPE):
                m.d.sync += echo.eq(byte == ECHO_REQUEST)
            with m.If(pos == _TYPE + 1):
                m.d.sync += echo.eq(good_type)
            with m.If((pos == _CHECKSUM) | (pos == _CHECKSUM + 1)):
                m.d.sync += checksum.eq(Cat(byte, checksum[:8]))
            with m.If(i.payload.last):
                m.d.sync += [pos.eq(0), low.eq(0), nonzero.eq(0)]
                long_enough = pos >= _TYPE + _ECHO_HEADER - 1
                m.d.sync += [drop.eq(i.payload.drop | ~long_enough | ~good_type),
                             check.eq(~i.payload.drop & long_enough & good_type)]
                with m.If(~i.payload.drop & long_enough & ~good_type):
                    m.d.sync += count(self.ignored)

        o = self.stored
        out = Signal(range(_CHECKSUM + 3))      # bytes sent of this reply, saturating
        meta = o.payload.meta
        m.d.comb += [
            self.o.valid.eq(o.valid), o.ready.eq(self.o.ready),
            self.o.payload.data.eq(o.payload.data), self.o.payload.last.eq(o.payload.last),
        ]
        with m.Switch(out):
            with m.Case(_TYPE):
                m.d.comb += self.o.payload.data.eq(ECHO_REPLY)
            with m.Case(_CHECKSUM):
                m.d.comb += self.o.payload.data.eq(meta[8:])
            with m.Case(_CHECKSUM + 1):
                m.d.comb += self.o.payload.data.eq(meta[:8])
        with m.If(o.valid & o.ready):
            with m.If(out != _CHECKSUM + 2):
                m.d.sync += out.eq(out + 1)
            with m.If(o.payload.last):
                m.d.sync += out.eq(0)
        return m
