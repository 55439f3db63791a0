"""The records' replay rule in gateware (spec :mod:`aes_fpga.appliance.session_spec`,
"Counters"): per session place the highest record counter taken and which of the ``W - 1``
below it have been taken too, as the reference device's
:class:`~aes_fpga.appliance.sessions.SessionState` keeps them.

A part of the record layer (:class:`~.session_records.RecordLayer`), which opens a record
(its tag checked first), asks :class:`RecordCounters` whether its counter may be taken, and
takes it once the record is authenticated; ``in_window`` tells it which counters' replies
are kept (:class:`~.session_kept.KeptRecords`).
"""

from amaranth.hdl import Array, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..session_spec import COUNTER_BYTES, MAX_RECORDS, SESSIONS_HELD

__all__ = ["RecordCounters"]

_COUNTER_BITS = 8 * COUNTER_BYTES


class RecordCounters(wiring.Component):
    """The record counters of ``held`` session places, window ``window``.

    ``acceptable`` (combinational, from ``place``, ``counter`` and ``datagram``): the counter
    is not 0 and is above the place's highest taken, or (``datagram``: over UDP) one of the
    ``window - 1`` below it not yet taken. ``expired``: the counter is above ``max_records``.
    ``in_window``: the counter is the highest taken or one of the ``window - 1`` below it
    (whose replies are kept).
    ``accept`` (one cycle, with ``place`` and ``counter``) takes the counter; ``start`` (with
    ``start_place``) empties a place for a new session. Each place is a 64-bit highest counter
    and a ``window``-bit map of the counters taken below and at it (bit ``k``: highest - k).

    Latency: the answers are combinational, a take is registered (the next cycle's answers
    see it); with ``pipelined`` three cycles. Throughput: one take per cycle (pipelined: one
    per :attr:`latency` + 1 cycles).

    Parameters
    ----------
    held : int
        Session places (2 to 4).
    window : int
        The device's window ``W`` (1 to 255).
    max_records : int
        The highest counter a session takes (``expired`` above).
    pipelined : bool
        The answers come from three register stages (the place's state and the counter, the
        64-bit subtractions and comparisons, the window comparisons), :attr:`latency` = 3
        cycles after their inputs, so no carry chain runs into the caller's logic; ``place``
        and ``counter`` must then stay for 3 cycles before an answer is read or a take made,
        and a take or start is seen 3 cycles later. For the record layer, which knows a
        record's counter hundreds of cycles before it acts on it.
    """

    def __init__(self, *, held=SESSIONS_HELD, window=1, max_records=MAX_RECORDS,
                 pipelined=False):
        for name, value, low, high in (("held", held, 2, 4), ("window", window, 1, 255),
                                       ("max_records", max_records, 1, (1 << 64) - 1)):
            if not low <= value <= high:
                self._MustUse__used = True      # (refused: never elaborated)
                raise ValueError(f"{name} must be in range {low} .. {high}, got {value!r}")
        self.held, self.window, self.max_records = held, window, max_records
        #: Cycles from ``place``/``counter`` (or a take, a start) to the answers.
        self.latency = 3 if pipelined else 0
        super().__init__({
            "place": In(range(held)),
            "counter": In(_COUNTER_BITS),
            "datagram": In(1),
            "acceptable": Out(1),
            "expired": Out(1),
            "in_window": Out(1),
            "accept": In(1),
            "start": In(1),
            "start_place": In(range(held)),
        })

    def elaborate(self, platform):
        m = Module()
        w, stages = self.window, self.latency
        last = Array(Signal(_COUNTER_BITS, name=f"last{k}") for k in range(self.held))
        seen = Array(Signal(w, name=f"seen{k}") for k in range(self.held))
        here_last, here_seen = last[self.place], seen[self.place]

        def stage(name, value):
            # ``value`` as it is, or (pipelined) a register of it.
            if not stages:
                return value
            reg = Signal.like(value, name=name) if isinstance(value, Signal) else \
                Signal(len(value), name=name)
            m.d.sync += reg.eq(value)
            return reg

        # Stage 1: the place's state and the counter; stage 2: the subtractions and the
        # comparisons with the highest; stage 3: the comparisons with the window.
        p_last, p_seen = stage("p_last", here_last), stage("p_seen", here_seen)
        counter = stage("p_counter", self.counter)
        below = Signal(_COUNTER_BITS)           # how far below the highest taken
        ahead = Signal(_COUNTER_BITS)           # how far a new highest moves it
        m.d.comb += [below.eq(p_last - counter), ahead.eq(counter - p_last)]
        above = stage("r_above", counter > p_last)
        nonzero = stage("r_nonzero", counter != 0)
        expired = stage("r_expired", counter > self.max_records)
        below, ahead, r_seen = stage("r_below", below), stage("r_ahead", ahead), \
            stage("r_seen", p_seen)
        near = stage("r_near", below < w)
        ahead_near = stage("r_ahead_near", ahead < w)
        taken = stage("r_taken", (r_seen >> below[:8])[0])
        below, ahead = stage("s_below", below[:8]), stage("s_ahead", ahead[:8])
        above = stage("s_above", above)
        nonzero, expired = stage("s_nonzero", nonzero), stage("s_expired", expired)
        in_window = ~above & near
        m.d.comb += [
            self.acceptable.eq(nonzero & (above | self.datagram & in_window & ~taken)),
            self.expired.eq(expired),
            self.in_window.eq(in_window),
        ]
        with m.If(self.accept):
            with m.If(above):
                m.d.sync += [here_last.eq(self.counter),
                             here_seen.eq(Mux(ahead_near, (here_seen << ahead) | 1,
                                              Const(1, w)))]
            with m.Elif(in_window):
                m.d.sync += here_seen.eq(here_seen | (Const(1, w) << below))
        with m.If(self.start):
            m.d.sync += [last[self.start_place].eq(0), seen[self.start_place].eq(0)]
        return m
