"""The appliance's reply builder in gateware: reply descriptors and payload bytes in, frame
content (header, payload, CRC-32) out to the :class:`~.cobs.CobsEncoder` (spec "Frame content"),
or without the CRC-32 as a UDP datagram (spec "Transport over UDP").
"""

from amaranth.hdl import Array, Module, Signal
from amaranth.lib import crc, stream, wiring
from amaranth.lib.wiring import In, Out

from .. import spec
from .check import field_bytes
from .cobs import ENCODER_LAYOUT
from .executor import reply_layout

__all__ = ["ReplyBuilder"]


class ReplyBuilder(wiring.Component):
    """Builds reply frames: for each descriptor on ``desc`` (command, seq, payload length,
    status) the header of :data:`~aes_fpga.appliance.spec.HEADER` with the reply opcode
    (``command | REPLY_BIT``), the status, ``length - 1`` payload bytes taken from ``data``,
    and the CRC-32 (:mod:`amaranth.lib.crc`, ``CRC32_ETHERNET``) of all of these, most
    significant byte first; ``o.last`` marks the CRC's last byte. With ``crc=False`` there is no
    CRC and ``o.last`` marks the payload's last byte.

    The header is sent straight from the descriptor, which is taken with the header's last
    byte (so the builder keeps no copy of it).

    Throughput: one byte per cycle, plus one cycle per reply to start it. Latency: none from
    ``data`` to ``o`` (combinational). Back-pressure on ``o`` stalls ``data``; ``data`` is read
    only for the reply being built, so its source may change from one reply to the next once
    the descriptor has been taken.
    """

    desc: In(stream.Signature(reply_layout()))
    data: In(stream.Signature(8))
    o: Out(stream.Signature(ENCODER_LAYOUT))

    def __init__(self, *, crc=True):
        self.crc = crc
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        if self.crc:
            m.submodules.crc = tx_crc = crc.catalog.CRC32_ETHERNET(data_width=8).create()
        else:
            tx_crc = None
        after_data = "CRC" if self.crc else "HEAD"
        r = self.desc.payload
        head = field_bytes(spec.HEADER, {"command": r.command | spec.REPLY_BIT, "seq": r.seq,
                                         "length": r.length}) + [r.status]
        head_rom = Array(head)
        index = Signal(range(max(len(head), spec.CRC_SIZE)))
        left = Signal.like(r.length)        # payload bytes after the status still to send

        fire = Signal()
        m.d.comb += fire.eq(self.o.valid & self.o.ready)
        if tx_crc is not None:
            m.d.comb += tx_crc.data.eq(self.o.payload.data)
        with m.FSM():
            with m.State("HEAD"):
                m.d.comb += [self.o.valid.eq(self.desc.valid),
                             self.o.payload.data.eq(head_rom[index])]
                if tx_crc is not None:
                    m.d.comb += [tx_crc.start.eq(index == 0), tx_crc.valid.eq(fire)]
                else:
                    m.d.comb += self.o.payload.last.eq((index == len(head) - 1)
                                                       & (r.length == 1))
                with m.If(fire):
                    m.d.sync += index.eq(index + 1)
                    with m.If(index == len(head) - 1):
                        m.d.comb += self.desc.ready.eq(1)
                        m.d.sync += [index.eq(0), left.eq(r.length - 1)]
                        with m.If(r.length == 1):
                            m.next = after_data
                        with m.Else():
                            m.next = "DATA"
            with m.State("DATA"):
                m.d.comb += [self.o.valid.eq(self.data.valid),
                             self.o.payload.data.eq(self.data.payload),
                             self.data.ready.eq(self.o.ready)]
                if tx_crc is not None:
                    m.d.comb += tx_crc.valid.eq(fire)
                else:
                    m.d.comb += self.o.payload.last.eq(left == 1)
                with m.If(fire):
                    m.d.sync += left.eq(left - 1)
                    with m.If(left == 1):
                        m.next = after_data
            if tx_crc is not None:
                with m.State("CRC"):
                    m.d.comb += [self.o.valid.eq(1),
                                 self.o.payload.data.eq(tx_crc.crc.word_select(~index[:2], 8)),
                                 self.o.payload.last.eq(index == spec.CRC_SIZE - 1)]
                    with m.If(fire):
                        m.d.sync += index.eq(index + 1)
                        with m.If(index == spec.CRC_SIZE - 1):
                            m.d.sync += index.eq(0)
                            m.next = "HEAD"
        return m
