"""COBS in gateware: the appliance's framing layer (see "Framing" in
:mod:`aes_fpga.appliance.spec`; the host's pair is :mod:`aes_fpga.appliance.cobs`).

:class:`CobsDecoder` turns the received byte stream into frame content and says at each frame's
end whether the frame is to be dropped; :class:`CobsEncoder` turns reply content back into
encoded frames, each ending in ``0x00``.
"""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from .. import spec
from ..frame import MAX_ENCODED_FRAME

__all__ = ["CobsDecoder", "CobsEncoder", "DECODER_LAYOUT", "ENCODER_LAYOUT"]

#: Payload of :attr:`CobsEncoder.i`: one content byte and whether it ends the frame.
ENCODER_LAYOUT = data.StructLayout({"data": 8, "last": 1})

#: Payload of :attr:`CobsDecoder.o`: a content byte (``end`` clear), or the end of a frame
#: (``end`` set, ``data`` meaningless) with ``drop`` telling whether the frame is to be
#: discarded without a reply.
DECODER_LAYOUT = data.StructLayout({"data": 8, "end": 1, "drop": 1})

# A COBS group holds at most this many data bytes (code 0xFF).
_COBS_RUN = 254

# The shortest content a frame can have: header and CRC around an empty payload.
MIN_FRAME = spec.HEADER_SIZE + spec.CRC_SIZE


class CobsDecoder(wiring.Component):
    """Decodes COBS frames (as :func:`aes_fpga.appliance.cobs.cobs_decode`) from a byte stream.

    Every byte on ``i`` gives at most one beat on ``o``: a data byte its content byte, a code
    byte the zero its previous group implied (if any), the delimiter ``0x00`` an ``end`` beat.
    The ``end`` beat has ``drop`` set when the frame gets no reply (spec "Errors", step 1): it
    was empty or malformed (its last group announced more bytes than came), its encoding was
    longer than :data:`~aes_fpga.appliance.frame.MAX_ENCODED_FRAME` bytes (what follows the
    limit is not decoded), or its content is shorter than header and CRC.

    Throughput: one byte per cycle. Latency: none (combinational; ``i.ready`` follows
    ``o.ready`` when the byte gives a beat). Back-pressure on ``o`` stalls ``i``.
    """

    i: In(stream.Signature(8))
    o: Out(stream.Signature(DECODER_LAYOUT))

    def elaborate(self, platform):
        m = Module()
        enc_len = Signal(range(MAX_ENCODED_FRAME + 1))
        overflow = Signal()
        remain = Signal(8)          # data bytes left in the current group; 0: a code byte next
        zero_pending = Signal()     # the group before the next code byte ended with a zero
        short = Signal(range(MIN_FRAME + 1))    # content bytes so far, up to MIN_FRAME

        byte = self.i.payload
        delimiter = byte == 0
        code = remain == 0
        # What this byte gives: the end of the frame, a content byte, or nothing (a code byte
        # after a full run, anything past the limit).
        emits = delimiter | (~overflow & (enc_len != MAX_ENCODED_FRAME)
                             & (~code | zero_pending))
        m.d.comb += [
            self.o.payload.data.eq(Mux(code, 0, byte)),
            self.o.payload.end.eq(delimiter),
            self.o.payload.drop.eq((enc_len == 0) | overflow | ~code
                                   | (short != MIN_FRAME)),
            self.o.valid.eq(self.i.valid & emits),
            self.i.ready.eq(self.o.ready | ~emits),
        ]
        with m.If(self.i.valid & self.i.ready):
            with m.If(delimiter):
                m.d.sync += [enc_len.eq(0), overflow.eq(0), remain.eq(0), zero_pending.eq(0),
                             short.eq(0)]
            with m.Elif(enc_len == MAX_ENCODED_FRAME):
                m.d.sync += overflow.eq(1)
            with m.Elif(~overflow):
                m.d.sync += enc_len.eq(enc_len + 1)
                with m.If(code):
                    m.d.sync += [remain.eq(byte - 1), zero_pending.eq(byte != 0xFF)]
                with m.Else():
                    m.d.sync += remain.eq(remain - 1)
                with m.If(emits & (short != MIN_FRAME)):
                    m.d.sync += short.eq(short + 1)
        return m


class CobsEncoder(wiring.Component):
    """COBS-encodes frames (as :func:`aes_fpga.appliance.cobs.cobs_encode`), each ending in 0x00.

    Content bytes enter on ``i`` (``last`` marks a frame's final byte); encoded bytes leave on
    ``o``. A group's bytes are held until its code byte is known (the next zero, the 254th byte
    or the end of the frame). They are written into a 512-byte ring and each completed group
    is queued as a record (size, and what follows it: after the frame's last group an empty
    ``0x01`` group when the content ends in a zero, then ``0x00``); the sender takes records in
    order and sends code byte and data from the ring while later groups are filled behind it.

    Throughput: one byte per cycle on each side. ``i`` waits only while the ring is full
    (512 bytes not yet sent: two longest groups) or :data:`GROUPS` records are queued; ``o``
    sends without a gap between groups, so the encoder sustains ``o``'s rate. Latency: up to
    254 content bytes (a group's code byte waits for its end) plus one cycle. Back-pressure on
    ``o`` stalls ``i``.
    """

    #: Completed groups that can wait to be sent (short groups, e.g. runs of zeros).
    GROUPS = 16

    i: In(stream.Signature(ENCODER_LAYOUT))
    o: Out(stream.Signature(8))

    def elaborate(self, platform):
        m = Module()
        ring_bytes = 512
        m.submodules.ring = ring = Memory(shape=8, depth=ring_bytes, init=[])
        wport = ring.write_port()
        rport = ring.read_port(domain="comb")
        record = data.StructLayout({"size": range(_COBS_RUN + 1), "one": 1, "end": 1})
        m.submodules.groups = groups = fifo.SyncFIFO(width=record.size, depth=self.GROUPS)

        ptr_w = ring_bytes.bit_length()     # with a wrap bit
        wp = Signal(ptr_w)                  # next byte to write
        sp = Signal(ptr_w)                  # next byte to send; everything before is free
        count = Signal(range(_COBS_RUN + 1))   # data bytes of the group being filled

        # ---- filling ----------------------------------------------------------------------
        byte, last = self.i.payload.data, self.i.payload.last
        zero = byte == 0
        # The byte ends the group: a zero (which the code byte stands for), the frame's last
        # byte, or the 254th data byte (a full run, no zero).
        ends = zero | last | (count == _COBS_RUN - 1)
        room = (wp - sp)[:ptr_w] != ring_bytes
        new = Signal(record)
        m.d.comb += [
            # A zero ends the group without counting; a frame ending in a zero needs an empty
            # group; at the end of a full run, no empty group (the shortest form).
            new.size.eq(Mux(zero, count, count + 1)),
            new.one.eq(zero & last),
            new.end.eq(~zero & last),
            self.i.ready.eq((zero | room) & (~ends | groups.w_rdy)),
            wport.addr.eq(wp[:-1]),
            wport.data.eq(byte),
            wport.en.eq(self.i.valid & self.i.ready & ~zero),
            groups.w_data.eq(new),
            groups.w_en.eq(self.i.valid & self.i.ready & ends),
        ]
        with m.If(self.i.valid & self.i.ready):
            with m.If(~zero):
                m.d.sync += wp.eq(wp + 1)
            with m.If(ends):
                m.d.sync += count.eq(0)
            with m.Else():
                m.d.sync += count.eq(count + 1)

        # ---- sending: the record at the head of the queue, taken when its group is out -----
        head = Signal(record)
        sent = Signal(range(_COBS_RUN + 1))
        m.d.comb += [head.eq(groups.r_data), rport.addr.eq(sp[:-1])]
        fire = self.o.valid & self.o.ready

        def after_data():
            with m.If(head.one):
                m.next = "ONE"
            with m.Elif(head.end):
                m.next = "END"
            with m.Else():
                m.d.comb += groups.r_en.eq(1)
                m.next = "CODE"

        with m.FSM():
            with m.State("CODE"):
                m.d.comb += [self.o.valid.eq(groups.r_rdy),
                             self.o.payload.eq(Mux(head.size == _COBS_RUN, 0xFF, head.size + 1))]
                with m.If(fire):
                    with m.If(head.size != 0):
                        m.next = "DATA"
                    with m.Else():
                        after_data()
            with m.State("DATA"):
                m.d.comb += [self.o.valid.eq(1), self.o.payload.eq(rport.data)]
                with m.If(fire):
                    m.d.sync += [sp.eq(sp + 1), sent.eq(sent + 1)]
                    with m.If(sent == head.size - 1):
                        m.d.sync += sent.eq(0)
                        after_data()
            with m.State("ONE"):
                m.d.comb += [self.o.valid.eq(1), self.o.payload.eq(1)]
                with m.If(fire):
                    m.next = "END"
            with m.State("END"):
                m.d.comb += [self.o.valid.eq(1), self.o.payload.eq(0)]
                with m.If(fire):
                    m.d.comb += groups.r_en.eq(1)
                    m.next = "CODE"
        return m
