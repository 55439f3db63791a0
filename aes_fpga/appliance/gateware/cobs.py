"""COBS in gateware: the appliance's framing layer (see "Framing" in
:mod:`aes_fpga.appliance.spec`).

The gateware half of one codec: its host twin, :mod:`aes_fpga.appliance.cobs`, has the same name
on purpose (the two are tested against each other).

:class:`CobsDecoder` turns the received byte stream into frame content and says at each frame's
end whether the frame is to be dropped; :class:`CobsEncoder` turns reply content back into
encoded frames, each ending in ``0x00``.
"""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ...stage import SkidBuffer
from .. import spec
from ..frame import SERIAL_MAX_ENCODED_FRAME

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
    longer than ``max_encoded`` bytes (what follows the limit is not decoded), or its content is
    shorter than header and CRC.

    Throughput: one byte per cycle. Latency: one cycle: the bytes enter through a
    :class:`~aes_fpga.stage.SkidBuffer`, which also registers whether each is zero, so
    ``i.ready`` is a register and no byte comparison is on the path to ``o``. Back-pressure on
    ``o`` stalls ``i``.

    Parameters
    ----------
    max_encoded : int
        The longest encoded frame (delimiter excluded), by default the serial transport's
        :data:`~aes_fpga.appliance.frame.SERIAL_MAX_ENCODED_FRAME` (1058 bytes: a request with a
        1 KiB chunk; a device with a smaller max payload still answers a longer request up to
        it, with ``BAD_LENGTH``).
    """

    i: In(stream.Signature(8))
    o: Out(stream.Signature(DECODER_LAYOUT))

    def __init__(self, max_encoded=SERIAL_MAX_ENCODED_FRAME):
        self.max_encoded = max_encoded
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        max_encoded = self.max_encoded
        enc_len = Signal(range(max_encoded + 1))
        overflow = Signal()
        remain = Signal(8)          # data bytes left in the current group; 0: a code byte next
        zero_pending = Signal()     # the group before the next code byte ended with a zero
        short = Signal(range(MIN_FRAME + 1))    # content bytes so far, up to MIN_FRAME

        # Registered comparisons of the counters, kept with them: ``remain == 0`` and
        # ``enc_len == max_encoded``.
        code = Signal(init=1)       # a code byte next
        at_limit = Signal()         # the encoding has reached the limit

        m.submodules.stage = stage = SkidBuffer(data.StructLayout({"data": 8, "zero": 1}))
        m.d.comb += [
            stage.i.valid.eq(self.i.valid),
            stage.i.payload.data.eq(self.i.payload),
            stage.i.payload.zero.eq(self.i.payload == 0),
            self.i.ready.eq(stage.i.ready),
        ]
        src = stage.o
        byte = src.payload.data
        delimiter = src.payload.zero
        # What this byte gives: the end of the frame, a content byte, or nothing (a code byte
        # after a full run, anything past the limit).
        emits = delimiter | (~overflow & ~at_limit & (~code | zero_pending))
        m.d.comb += [
            self.o.payload.data.eq(Mux(code, 0, byte)),
            self.o.payload.end.eq(delimiter),
            self.o.payload.drop.eq((enc_len == 0) | overflow | ~code
                                   | (short != MIN_FRAME)),
            self.o.valid.eq(src.valid & emits),
            src.ready.eq(self.o.ready | ~emits),
        ]
        with m.If(src.valid & src.ready):
            with m.If(delimiter):
                m.d.sync += [enc_len.eq(0), overflow.eq(0), remain.eq(0), zero_pending.eq(0),
                             short.eq(0), code.eq(1), at_limit.eq(0)]
            with m.Elif(at_limit):
                m.d.sync += overflow.eq(1)
            with m.Elif(~overflow):
                m.d.sync += [enc_len.eq(enc_len + 1),
                             at_limit.eq(enc_len == max_encoded - 1)]
                with m.If(code):
                    m.d.sync += [remain.eq(byte - 1), zero_pending.eq(byte != 0xFF),
                                 code.eq(byte == 1)]
                with m.Else():
                    m.d.sync += [remain.eq(remain - 1), code.eq(remain == 1)]
                with m.If(emits & (short != MIN_FRAME)):
                    m.d.sync += short.eq(short + 1)
        return m


class CobsEncoder(wiring.Component):
    """COBS-encodes frames (as :func:`aes_fpga.appliance.cobs.cobs_encode`), each ending in 0x00.

    Content bytes enter on ``i`` (``last`` marks a frame's final byte); encoded bytes leave on
    ``o``. The encoding is built in place in a :data:`RING`-byte ring: each group's code byte
    gets a slot when the group opens and is written when the group closes (at the next zero,
    the 254th data byte or the frame's end), then the group's bytes may leave. After a frame's
    last group come an empty ``0x01`` group when the content ends in a zero, and ``0x00``.
    Everything before the open group's code slot is final, so the sender sends from the ring
    while the next group fills behind it.

    Throughput: one byte per cycle on each side, but for one cycle per group closed by a full
    run or the frame's end (its code byte is written then) and two per frame (the ``0x00``
    and the next frame's code slot); the output carries most of those bytes too, so the
    encoder keeps up with ``o`` but for about one cycle per frame. ``i`` waits while
    the ring is full: the open group (up to 255 bytes with its code) and the ones before it
    not yet sent. Latency: up to 254 content bytes (a group's code byte waits for its end)
    plus two cycles. Back-pressure on ``o`` stalls ``i``.
    """

    #: Bytes of encoding the encoder holds: a longest group (code and 254 bytes) and one more.
    RING = 256

    i: In(stream.Signature(ENCODER_LAYOUT))
    o: Out(stream.Signature(8))

    def elaborate(self, platform):
        m = Module()
        size = self.RING
        m.submodules.ring = ring = Memory(shape=8, depth=size, init=[])
        wport = ring.write_port()
        rport = ring.read_port(domain="comb")

        ptr_w = size.bit_length()           # ring pointers carry one wrap bit
        wp = Signal(ptr_w, init=1)          # next free byte (slot 0: the first code byte)
        code_at = Signal(ptr_w)             # the open group's code slot
        sp = Signal(ptr_w)                  # next byte to send
        count = Signal(range(_COBS_RUN + 1))   # data bytes of the open group
        then_end = Signal()                 # the group being closed ends the frame
        # ``wp - sp`` as a counter of its own, and ``full`` its registered comparison with
        # the ring's size, so that no pointer difference is on ``i.ready``.
        used = Signal(range(size + 1), init=1)   # slot 0 is taken from the start
        full = Signal()
        bump = Signal()                     # wp advances this cycle

        # ---- filling ----------------------------------------------------------------------
        byte, last = self.i.payload.data, self.i.payload.last
        take = self.i.valid & self.i.ready

        def open_group(at):
            # The next group's code slot is ``at``; its data follows.
            m.d.sync += [code_at.eq(at), wp.eq(at + 1), count.eq(0)]
            m.d.comb += bump.eq(1)

        with m.FSM():
            with m.State("FILL"):
                m.d.comb += self.i.ready.eq(~full)
                with m.If(byte == 0):
                    # The zero closes the group: its code byte stands for it.
                    m.d.comb += [wport.addr.eq(code_at[:-1]), wport.data.eq(count + 1),
                                 wport.en.eq(take)]
                    with m.If(take):
                        with m.If(last):
                            # Content ending in a zero: an empty group, then the delimiter.
                            m.next = "ONE"
                        with m.Else():
                            open_group(wp)
                with m.Else():
                    m.d.comb += [wport.addr.eq(wp[:-1]), wport.data.eq(byte),
                                 wport.en.eq(take)]
                    with m.If(take):
                        m.d.sync += [wp.eq(wp + 1), count.eq(count + 1), then_end.eq(last)]
                        m.d.comb += bump.eq(1)
                        with m.If(last | (count == _COBS_RUN - 1)):
                            m.next = "CLOSE"
            with m.State("CLOSE"):
                # A full run (code 0xFF) or the frame's last group.
                m.d.comb += [wport.addr.eq(code_at[:-1]), wport.data.eq(count + 1),
                             wport.en.eq(1)]
                with m.If(then_end):
                    m.next = "END"
                with m.Else():
                    with m.If(~full):
                        open_group(wp)
                        m.next = "FILL"
            with m.State("ONE"):
                m.d.comb += [wport.addr.eq(wp[:-1]), wport.data.eq(1), wport.en.eq(~full)]
                with m.If(~full):
                    m.d.sync += wp.eq(wp + 1)
                    m.d.comb += bump.eq(1)
                    m.next = "END"
            with m.State("END"):
                # The delimiter: the frame's bytes are all final.
                m.d.comb += [wport.addr.eq(wp[:-1]), wport.data.eq(0),
                             wport.en.eq(~full)]
                with m.If(~full):
                    m.d.sync += [wp.eq(wp + 1), code_at.eq(wp + 1)]
                    m.d.comb += bump.eq(1)
                    m.next = "OPEN"
            with m.State("OPEN"):
                # The next frame's first code slot.
                with m.If(~full):
                    open_group(wp)
                    m.next = "FILL"

        # ---- sending: everything before the open group's code slot --------------------------
        m.d.comb += [
            rport.addr.eq(sp[:-1]),
            self.o.valid.eq(sp != code_at),
            self.o.payload.eq(rport.data),
        ]
        send = self.o.valid & self.o.ready
        with m.If(send):
            m.d.sync += sp.eq(sp + 1)
        with m.If(bump & ~send):
            m.d.sync += [used.eq(used + 1), full.eq(used == size - 1)]
        with m.Elif(send & ~bump):
            m.d.sync += [used.eq(used - 1), full.eq(0)]
        return m
