"""A registered stream stage: cuts the combinational valid/ready path between two components.

Amaranth's streams hand ``ready`` back combinationally, so a chain of components that each pass
``ready`` through builds one long path from the last consumer to the first producer. A
:class:`SkidBuffer` between two of them registers both directions, so no path crosses it.
A :class:`PipeStage` registers only the forward direction, with no logic in front of its
payload flip-flops: the stage to put behind a slow source such as a block RAM read port.
A :class:`HoldStage` registers both directions with one entry, at half the rate: for a
consumer that takes a beat every other cycle at most anyway.
"""

from amaranth.hdl import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["SkidBuffer", "skid", "PipeStage", "HoldStage"]


class _Stage(wiring.Component):
    """A stream stage's ports: ``i`` and ``o`` streams of ``shape``, and with ``flush`` a
    ``flush`` input."""

    def __init__(self, shape, *, flush=False):
        self.shape = shape
        self.has_flush = bool(flush)
        members = {
            "i": In(stream.Signature(shape)),
            "o": Out(stream.Signature(shape)),
        }
        if self.has_flush:
            members["flush"] = In(1)
        super().__init__(members)


class SkidBuffer(_Stage):
    """A two-entry stream register: ``o.valid``, ``o.payload`` and ``i.ready`` are flip-flop
    outputs, so neither valid/payload nor ready passes through it combinationally.

    Latency: one cycle. Throughput: one beat per cycle (the second entry, the skid register,
    catches the beat taken in the cycle ``o.ready`` falls). Back-pressure: ``i.ready`` falls
    one cycle after ``o.ready`` does, while the skid register is full. Nothing is lost or
    reordered. Cost: two payload registers and two flags.

    Parameters
    ----------
    shape : shape-like
        The payload's shape (as for :class:`amaranth.lib.stream.Signature`).
    flush : bool
        Add a ``flush`` input: high, it empties the buffer (the beats in it, and one taken in
        the same cycle, are discarded), for a consumer that may leave the rest of a packet
        unread and have the producer skip it.
    """

    def elaborate(self, platform):
        m = Module()
        out_valid = Signal()
        out_data = Signal(self.shape)
        skid_valid = Signal()
        skid_data = Signal(self.shape)
        m.d.comb += [
            self.o.valid.eq(out_valid),
            self.o.payload.eq(out_data),
            self.i.ready.eq(~skid_valid),
        ]
        with m.If(self.o.ready | ~out_valid):
            # The output register moves on: the skid register first, else the input.
            with m.If(skid_valid):
                m.d.sync += [out_data.eq(skid_data), skid_valid.eq(0)]
            with m.Else():
                m.d.sync += [out_data.eq(self.i.payload), out_valid.eq(self.i.valid)]
        with m.Elif(self.i.valid & ~skid_valid):
            # The output is held: the beat taken this cycle waits in the skid register.
            m.d.sync += [skid_data.eq(self.i.payload), skid_valid.eq(1)]
        if self.has_flush:
            with m.If(self.flush):
                m.d.sync += [out_valid.eq(0), skid_valid.eq(0)]
        return m


def skid(m, name, source, sink, *, flush=False, pipe=None):
    """Connect the stream ``source`` (an ``Out`` stream of a component, or a flipped ``In``
    stream of the current one) to ``sink`` through a :class:`SkidBuffer` added to ``m`` as
    submodule ``name``; returns the buffer.

    ``pipe``: the name of a :class:`PipeStage` to put in front of the buffer, for a ``source``
    that is a block RAM read (flushed with the buffer)."""
    shape = source.payload.shape()
    if pipe is not None:
        m.submodules[pipe] = stage = PipeStage(shape, flush=flush)
        wiring.connect(m, source, stage.i)
        source = stage.o
    buf = SkidBuffer(shape, flush=flush)
    m.submodules[name] = buf
    if pipe is not None and flush:
        m.d.comb += stage.flush.eq(buf.flush)
    wiring.connect(m, source, buf.i)
    wiring.connect(m, buf.o, sink)
    return buf


class PipeStage(_Stage):
    """A one-entry stream register whose payload flip-flops load ``i.payload`` through their
    clock enable alone: no LUT sits between the source and the register, so a slow source (a
    block RAM read without its output register: 5.8 ns clock-to-out on an ECP5 -6) gets a
    whole cycle of its own.

    ``o.valid`` and ``o.payload`` are flip-flop outputs; ``i.ready`` is
    ``o.ready | ~o.valid`` (one LUT, combinational), so put it in front of a consumer whose
    ``ready`` is a register (a :class:`SkidBuffer`). Latency: one cycle. Throughput: one beat
    per cycle while ``o.ready`` is high. Nothing is lost or reordered.

    ``flush`` adds a ``flush`` input as for :class:`SkidBuffer`: high, it discards the beat
    held and one taken in the same cycle.
    """

    def elaborate(self, platform):
        m = Module()
        load = Signal()
        m.d.comb += [
            load.eq(self.o.ready | ~self.o.valid),
            self.i.ready.eq(load),
        ]
        with m.If(load):
            m.d.sync += [self.o.payload.eq(self.i.payload), self.o.valid.eq(self.i.valid)]
        if self.has_flush:
            with m.If(self.flush):
                m.d.sync += self.o.valid.eq(0)
        return m


class HoldStage(_Stage):
    """A one-entry stream register that takes a beat only while empty: ``o.valid``,
    ``o.payload`` and ``i.ready`` (``~o.valid``) are flip-flop outputs, and its payload
    flip-flops load ``i.payload`` through their clock enable alone, so no path crosses it and
    none reaches the source's ``ready`` from the consumer's.

    Latency: one cycle. Throughput: one beat every 2 cycles at most (the cycle a beat leaves,
    the stage is still full for the source). Back-pressure: ``i.ready`` is low while a beat is
    held. Nothing is lost or reordered. Cost: one payload register and a flag, no skid register
    and no multiplexer: the cut to put in front of a consumer that never takes more than every
    other cycle.
    """

    def elaborate(self, platform):
        m = Module()
        # (``empty`` is ``~o.valid`` in a flip-flop of its own: an enable of inverted polarity
        # costs an inverter at every payload flip-flop on a 7-series part)
        empty = Signal(init=1)
        m.d.comb += self.i.ready.eq(empty)
        with m.If(empty):
            m.d.sync += [self.o.payload.eq(self.i.payload), self.o.valid.eq(self.i.valid),
                         empty.eq(~self.i.valid)]
        with m.Elif(self.o.ready):
            m.d.sync += [self.o.valid.eq(0), empty.eq(1)]
        if self.has_flush:
            with m.If(self.flush):
                m.d.sync += [self.o.valid.eq(0), empty.eq(1)]
        return m
