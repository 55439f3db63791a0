"""The UART transport of the appliance: an 8N1 PHY (transmitter and receiver with byte streams,
optional RTS/CTS flow control) and :class:`UartAppliance`, the protocol engine behind it.

Both directions time their bits with a fractional divider (a phase accumulator) that produces
``oversample`` ticks per bit: a tick every ``divisor`` clocks on average, where ``divisor`` need
not be an integer. An integer divider cannot reach common rates from common clocks (100 MHz to
12 Mbaud is 8.33 clocks per bit: 8 gives +4.2 %, 9 gives -7.4 %); the fractional one gets within
0.002 % of any rate, at the cost of up to one clock of jitter on each bit edge.
"""

import math
from dataclasses import dataclass, field
from fractions import Fraction

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.cdc import FFSynchronizer
from amaranth.lib.wiring import In, Out

from ...hw import Heartbeat
from ...stage import skid
from ..frame import SERIAL_MAX_ENCODED_FRAME
from ..session_spec import SESSIONS_HELD
from ..spec import GCM_MAX_WINDOW
from .engine import ProtocolEngine

__all__ = ["UartAppliance", "UARTConfig", "UARTTx", "UARTRx", "RX_LAYOUT", "uart_divider",
           "MAX_BAUD", "MAX_BAUD_ERROR", "MIN_OVERSAMPLE", "DEFAULT_OVERSAMPLE"]

#: Fastest supported rate (FT2232H/FT232H top rate).
MAX_BAUD = 12_000_000
#: Largest accepted difference between the achieved and the requested rate, in percent. Two 8N1
#: ends can disagree by about 4 % in total before the stop bit is sampled in the wrong bit.
MAX_BAUD_ERROR = 2.0
#: Fewest ticks per bit: the receiver votes on ticks ``oversample // 2 - 1 .. + 1`` of a bit.
MIN_OVERSAMPLE = 4
DEFAULT_OVERSAMPLE = 16
# Significant bits of the phase increment: the rate is then exact to 2**-16 (0.0015 %).
_RATE_BITS = 16

#: Payload of :attr:`UARTRx.o`: the received byte, and whether its stop bit was low.
RX_LAYOUT = data.StructLayout({"data": 8, "framing_error": 1})


def _is_number(x):
    return isinstance(x, (int, float, Fraction)) and not isinstance(x, bool)


def _rate(clk_freq, oversample, inc, bits):
    """Baud rate achieved with ``oversample`` ticks per bit, a tick every ``2**bits / inc``
    clocks."""
    return Fraction(clk_freq) * inc / (oversample << bits)


def _fmt_rate(clk_freq, baud, oversample, inc, bits):
    achieved = _rate(clk_freq, oversample, inc, bits)
    error = float((achieved - Fraction(baud)) / Fraction(baud) * 100)
    achieved = float(achieved)
    return f"{achieved:.0f} baud ({error:+.2f} %)" if achieved >= 100 else \
        f"{achieved:.4g} baud ({error:+.2f} %)"


@dataclass(frozen=True)
class UARTConfig:
    """Bit timing of a UART, computed (and checked) when constructed.

    Parameters
    ----------
    clk_freq : int or float
        Frequency of the ``sync`` clock, Hz.
    baud : int or float
        Bit rate, up to :data:`MAX_BAUD` (12 Mbaud); at least :data:`MIN_OVERSAMPLE` (4) clocks
        per bit.
    oversample : int or None
        Ticks per bit (receiver sampling resolution). ``None``: :data:`DEFAULT_OVERSAMPLE` (16)
        when ``clk_freq >= 16 * baud``, otherwise the largest integer that fits
        (``floor(clk_freq / baud)``, at least 4).

    Attributes
    ----------
    oversample : int
        The resolved number of ticks per bit.
    phase_bits, phase_inc : int
        The divider: a ``phase_bits``-bit accumulator adds ``phase_inc`` every clock and ticks
        when it wraps.
    divisor : float
        Clocks per tick, ``2**phase_bits / phase_inc`` (>= 1).
    achieved_baud : float
        ``clk_freq / (oversample * divisor)``.
    error_percent : float
        ``100 * (achieved_baud - baud) / baud``.
    bit_cycles : float
        Clocks per bit, ``clk_freq / achieved_baud``.

    Raises
    ------
    ValueError
        Naming the parameter at fault, its value, and (for a combination that cannot be met) the
        nearest achievable rate and its error: a non-positive ``clk_freq`` or ``baud``; ``baud``
        above 12 Mbaud or with ``clk_freq / baud < 4``; an ``oversample`` below 4 or too large for
        ``clk_freq / baud``; an achieved rate more than :data:`MAX_BAUD_ERROR` percent off.
    """

    clk_freq: float
    baud: float
    oversample: int | None = None
    phase_bits: int = field(init=False)
    phase_inc: int = field(init=False)

    def __post_init__(self):
        clk_freq, baud, oversample = self.clk_freq, self.baud, self.oversample
        if not _is_number(clk_freq) or not clk_freq > 0:
            raise ValueError(f"clk_freq: {clk_freq!r} is not a positive frequency in Hz")
        if not _is_number(baud) or not baud > 0:
            raise ValueError(f"baud: {baud!r} is not a positive bit rate")
        if baud > MAX_BAUD:
            raise ValueError(f"baud: {baud!r} is above the {MAX_BAUD} baud limit")
        ratio = Fraction(clk_freq) / Fraction(baud)
        if ratio < MIN_OVERSAMPLE:
            raise ValueError(
                f"baud: {baud!r} needs at least {MIN_OVERSAMPLE} clocks per bit; clk_freq "
                f"{clk_freq!r} Hz gives {float(ratio):.2f}, the fastest achievable rate is "
                f"{_fmt_rate(clk_freq, baud, MIN_OVERSAMPLE, 1, 0)}")
        if oversample is None:
            oversample = min(DEFAULT_OVERSAMPLE, math.floor(ratio))
        elif not isinstance(oversample, int) or isinstance(oversample, bool) or \
                oversample < MIN_OVERSAMPLE:
            raise ValueError(f"oversample: {oversample!r} is not an integer of at least "
                             f"{MIN_OVERSAMPLE}")
        elif oversample > ratio:
            raise ValueError(
                f"oversample: {oversample!r} needs clk_freq >= {oversample} * baud, but clk_freq "
                f"{clk_freq!r} Hz / baud {baud!r} is {float(ratio):.2f}; with one tick per clock "
                f"the rate achieved is {_fmt_rate(clk_freq, baud, oversample, 1, 0)}; use "
                f"oversample <= {math.floor(ratio)}")
        # Ticks per clock, <= 1. Widen the accumulator until the increment has _RATE_BITS bits.
        ticks_per_clock = Fraction(baud) * oversample / Fraction(clk_freq)
        bits = _RATE_BITS
        while ticks_per_clock * (1 << bits) < 1 << (_RATE_BITS - 1):
            bits += 1
        inc = round(ticks_per_clock * (1 << bits))
        object.__setattr__(self, "oversample", oversample)
        object.__setattr__(self, "phase_bits", bits)
        object.__setattr__(self, "phase_inc", inc)
        if abs(self.error_percent) > MAX_BAUD_ERROR:   # a guard: unreachable with _RATE_BITS=16
            raise ValueError(f"baud: {baud!r} is not achievable from clk_freq {clk_freq!r} Hz "
                             f"within {MAX_BAUD_ERROR} %: "
                             f"{_fmt_rate(clk_freq, baud, oversample, inc, bits)}")

    @property
    def divisor(self):
        return (1 << self.phase_bits) / self.phase_inc

    @property
    def achieved_baud(self):
        return float(_rate(self.clk_freq, self.oversample, self.phase_inc, self.phase_bits))

    @property
    def error_percent(self):
        achieved = _rate(self.clk_freq, self.oversample, self.phase_inc, self.phase_bits)
        return float((achieved - Fraction(self.baud)) / Fraction(self.baud) * 100)

    @property
    def bit_cycles(self):
        return self.clk_freq / self.achieved_baud


def uart_divider(clk_freq, baud, oversample=None):
    """Bit timing for ``baud`` from a ``clk_freq`` clock, as the UART components compute it.

    Returns
    -------
    tuple
        ``(oversample, divisor, achieved_baud, error_percent)``: ticks per bit, clocks per tick
        (a float >= 1; the divider is fractional), the rate achieved in baud, and its error
        relative to ``baud`` in percent.

    Raises
    ------
    ValueError
        For an impossible combination; see :class:`UARTConfig`.
    """
    config = UARTConfig(clk_freq, baud, oversample)
    return config.oversample, config.divisor, config.achieved_baud, config.error_percent


def _phase_tick(m, config, run, name):
    """A tick every ``config.divisor`` clocks on average while ``run`` is high. The accumulator
    is held at zero while ``run`` is low, so tick ``k`` comes in clock ``ceil(k * divisor)``
    (exactly: ``ceil(k * 2**phase_bits / phase_inc)``) of a run, its first clock being 1."""
    # The accumulator is kept one increment ahead, ``phase + phase_inc`` with its carry bit:
    # the tick is then that register's top bit, not the carry out of an adder.
    bits = config.phase_bits
    ahead = Signal(bits + 1, name=f"{name}_phase_ahead", init=config.phase_inc)
    with m.If(run):
        m.d.sync += ahead.eq(ahead[:bits] + config.phase_inc)
    with m.Else():
        m.d.sync += ahead.eq(config.phase_inc)
    return run & ahead[bits]


class UARTTx(wiring.Component):
    """UART transmitter: bytes from a stream to an 8N1 serial line.

    Each byte taken on ``i`` is sent as a start bit (low), eight data bits, least significant
    first, and one stop bit (high), ``oversample`` ticks of the divider per bit.

    Latency: ``tx`` falls (start bit) the clock after the byte is taken.

    Throughput: one byte per 10 bit times, with no idle time between back-to-back bytes:
    ``i.ready`` rises in the last clock of each stop bit, so a byte already waiting starts its
    start bit straight after the stop bit; the link then runs at ``achieved_baud / 10`` bytes
    per second exactly.

    Back-pressure: ``i.ready`` is high only in a cycle in which a byte can be taken (it does
    not depend on ``i.valid``): while idle, and in the last clock of a stop bit; with flow
    control, only while ``cts_n`` (synchronised) is low. A byte offered in the middle of a frame
    waits for its end.

    Reset/idle state: ``tx`` high, idle, ready for a byte.

    Parameters
    ----------
    clk_freq, baud, oversample
        Bit timing, see :class:`UARTConfig` (available as :attr:`config`).
    flow_control : bool
        Add the ``cts_n`` input.

    Members
    -------
    i : In(stream.Signature(8))
        Bytes to send.
    tx : Out(1)
        The serial line, a register output; idle high.
    cts_n : In(1), with ``flow_control``
        Clear to send, active low (connect the host's RTS#, e.g. an FTDI chip's ``RTS#`` pin).
        Taken through a 2-flip-flop synchroniser. Sampled only before a start bit: while it is
        high no new byte is started; a byte already started is finished.
    """

    def __init__(self, clk_freq, baud, *, oversample=None, flow_control=False):
        self.config = UARTConfig(clk_freq, baud, oversample)
        self.flow_control = bool(flow_control)
        members = {"i": In(stream.Signature(8)), "tx": Out(1, init=1)}
        if self.flow_control:
            members["cts_n"] = In(1)
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        os = self.config.oversample

        busy = Signal()
        pos = Signal(range(os))         # ticks already counted in the current bit
        bit = Signal(range(10))         # 0: start bit, 1-8: data bits, 9: stop bit
        shreg = Signal(9, init=0x1FF)   # bits still to send after the current one
        tick = _phase_tick(m, self.config, busy, "tx")

        # ``pos == os - 1`` and ``bit == 9`` as flags kept with the counters.
        pos_last = Signal()
        stop_bit = Signal()
        bit_end = Signal()
        m.d.comb += bit_end.eq(tick & pos_last)
        may_start = ~busy | (bit_end & stop_bit)
        if self.flow_control:
            cts_n = Signal(init=1)   # hold off until the pin's level is through the synchroniser
            m.submodules.cts_sync = FFSynchronizer(self.cts_n, cts_n, init=1)
            m.d.comb += self.i.ready.eq(may_start & ~cts_n)
        else:
            m.d.comb += self.i.ready.eq(may_start)

        with m.If(self.i.valid & self.i.ready):
            m.d.sync += [
                busy.eq(1), pos.eq(0), bit.eq(0), pos_last.eq(os == 1), stop_bit.eq(0),
                self.tx.eq(0),
                shreg.eq(Cat(self.i.payload, 1)),
            ]
        with m.Elif(bit_end):
            m.d.sync += [
                pos.eq(0), bit.eq(bit + 1), pos_last.eq(os == 1), stop_bit.eq(bit == 8),
                self.tx.eq(shreg[0]),
                shreg.eq(Cat(shreg[1:], 1)),
            ]
            with m.If(stop_bit):
                m.d.sync += busy.eq(0)
        with m.Elif(tick):
            m.d.sync += [pos.eq(pos + 1), pos_last.eq(pos == os - 2)]
        return m


class UARTRx(wiring.Component):
    """UART receiver: an 8N1 serial line to a stream of bytes.

    ``rx`` goes through a 2-flip-flop synchroniser. A falling edge on the idle line starts the
    divider; each bit is then read as the majority of three samples, on ticks
    ``oversample // 2 - 1``, ``oversample // 2`` and ``oversample // 2 + 1`` counted from that
    edge; a glitch shorter than one clock (or than ``floor(divisor)`` clocks) changes at most
    one of the three, and so no bit. A start bit whose vote is high is
    taken for a glitch: the receiver goes back to idle, and nothing is delivered. Data bits are
    read least significant first. The stop bit's vote is the frame check: high, the byte is
    delivered and the receiver is idle again at once (half a bit before the nominal frame end,
    which gives room for a faster transmitter); low, the byte is delivered with
    ``framing_error`` set, and the receiver waits for the line to be high before it looks for a
    start bit again (a break, a line held low, gives one byte 0x00 with ``framing_error``).

    Latency: ``o.valid`` rises ``ceil((9 * oversample + oversample // 2 + 1) * divisor) + 2``
    clocks after the clock in which ``rx`` falls for the start bit: the third sample of the stop
    bit, ``9.5 + 1 / oversample`` bit times, plus 2 to 3 clocks (synchroniser, output
    register).

    Throughput: one byte per frame, for back-to-back frames (no idle time needed) from a
    transmitter whose rate is within 2 % of ours. Measured with an asynchronous transmitter
    model, back-to-back frames decode up to 3.75 % fast / 4.75 % slow at 100 MHz, 12 Mbaud
    (oversample 8) and 4.5 % either way at oversample 16; at 4 clocks per bit, 2.75 % (the
    start edge is found to within a clock, a quarter of a bit there).

    Back-pressure: one byte of buffering, the output register. A byte stays on ``o`` until
    taken, so the consumer has about one frame time to take it. A byte completed while the
    previous one is still waiting (``o.valid`` high and ``o.ready`` low in that clock) is
    dropped, and ``overrun`` is set; ``overrun`` stays high until a clock with ``clear`` high
    (if an overrun happens in that same clock, the flag stays set).

    Reset/idle state: waiting for a start bit, ``o.valid`` low, ``overrun`` low; ``rts_n`` high
    during reset, then following ``o.ready``.

    Parameters
    ----------
    clk_freq, baud, oversample
        Bit timing, see :class:`UARTConfig` (available as :attr:`config`).
    flow_control : bool
        Add the ``rts_n`` output.

    Members
    -------
    rx : In(1)
        The serial line; idle high.
    o : Out(stream.Signature(RX_LAYOUT))
        Received bytes: ``data``, and ``framing_error`` (stop bit read low).
    overrun : Out(1)
        Sticky: a byte was dropped because ``o`` was not taken in time.
    clear : In(1)
        Clears ``overrun``.
    rts_n : Out(1), with ``flow_control``
        Request to send, active low (connect to the host's CTS#, e.g. an FTDI chip's ``CTS#``
        pin): ``~o.ready``, registered, so high (stop) while the consumer does not accept bytes.
        The consumer should raise ``o.ready`` whenever it can take a byte, not only when
        ``o.valid`` is high. A host may still send a few bytes after ``rts_n`` rises (FTDI
        chips finish the byte in progress and can send up to a few more); the one-byte buffer
        holds the first of them, later ones overrun.
    """

    def __init__(self, clk_freq, baud, *, oversample=None, flow_control=False):
        self.config = UARTConfig(clk_freq, baud, oversample)
        self.flow_control = bool(flow_control)
        members = {
            "rx": In(1, init=1),
            "o": Out(stream.Signature(RX_LAYOUT)),
            "overrun": Out(1),
            "clear": In(1),
        }
        if self.flow_control:
            members["rts_n"] = Out(1, init=1)
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        os = self.config.oversample
        mid = os // 2

        rx = Signal(init=1)
        m.submodules.rx_sync = FFSynchronizer(self.rx, rx, init=1)

        pos = Signal(range(os))     # ticks already counted in the current bit
        bit = Signal(range(10))     # 0: start bit, 1-8: data bits, 9: stop bit
        shreg = Signal(8)
        s0 = Signal()
        s1 = Signal()
        vote = Signal()
        m.d.comb += vote.eq((s0 & s1) | (s0 & rx) | (s1 & rx))

        run = Signal()              # the divider runs
        decide = Signal()           # the third sample of a bit: act on the vote
        deliver = Signal()
        tick = _phase_tick(m, self.config, run, "rx")
        m.d.comb += decide.eq(tick & (pos == mid))

        with m.If(~run):
            m.d.sync += [pos.eq(0), bit.eq(0)]
        with m.Elif(tick):
            with m.If(pos == os - 1):
                m.d.sync += [pos.eq(0), bit.eq(bit + 1)]
            with m.Else():
                m.d.sync += pos.eq(pos + 1)
            with m.If(pos == mid - 2):
                m.d.sync += s0.eq(rx)
            with m.If(pos == mid - 1):
                m.d.sync += s1.eq(rx)

        with m.FSM():
            with m.State("IDLE"):
                # The divider already runs in the clock that sees the falling edge: the edge fell
                # about half a clock before it (as seen through the synchroniser), and tick k
                # comes ceil(k * divisor) clocks after the divider starts, half a clock late on
                # average; so the samples are centred to within a clock.
                m.d.comb += run.eq(~rx)
                with m.If(~rx):
                    m.next = "FRAME"
            with m.State("FRAME"):
                m.d.comb += run.eq(1)
                with m.If(decide):
                    with m.Switch(bit):
                        with m.Case(0):
                            with m.If(vote):            # the start bit was a glitch
                                m.d.sync += [pos.eq(0), bit.eq(0)]
                                m.next = "IDLE"
                        with m.Case(9):
                            m.d.comb += deliver.eq(1)
                            m.d.sync += [pos.eq(0), bit.eq(0)]
                            with m.If(vote):
                                m.next = "IDLE"
                            with m.Else():
                                m.next = "BREAK"
                        with m.Default():
                            m.d.sync += shreg.eq(Cat(shreg[1:], vote))
            with m.State("BREAK"):
                with m.If(rx):
                    m.next = "IDLE"

        full = self.o.valid & ~self.o.ready
        with m.If(self.o.ready):
            m.d.sync += self.o.valid.eq(0)
        with m.If(self.clear):
            m.d.sync += self.overrun.eq(0)
        with m.If(deliver):
            with m.If(full):
                m.d.sync += self.overrun.eq(1)
            with m.Else():
                m.d.sync += [
                    self.o.valid.eq(1),
                    self.o.payload.data.eq(shreg),
                    self.o.payload.framing_error.eq(~vote),
                ]

        if self.flow_control:
            m.d.sync += self.rts_n.eq(~self.o.ready)
        return m

# Bytes a host may still send after the device withdraws clear-to-send (USB-serial bridges
# finish the byte in flight and may have a few more queued).
CTS_SLACK = 16


class UartAppliance(wiring.Component):
    """The appliance on a serial line: 8N1 at ``baud``, the :mod:`aes_fpga.appliance.spec` frames.

    Ports: ``uart_rx`` (from the host, idle high), ``uart_tx`` (to the host), and status
    outputs for LEDs: ``heartbeat`` (toggles every ``heartbeat_cycles``), ``rx_activity`` and
    ``tx_activity`` (stretched to be visible). With ``flow_control``, RTS/CTS hardware flow
    control, active low as on the wire: ``uart_rts_n`` (out, to the host's CTS#) is high (stop)
    while fewer than 16 bytes of the receive FIFO are free, room for what a USB-serial bridge
    still sends after it sees the line rise; ``uart_cts_n`` (in, from the host's RTS#) high
    stops the transmitter before its next byte (see :class:`UARTTx`).

    Receive FIFO: ``rx_buffer`` bytes (one 4 KiB block RAM by default) between the receiver and
    the engine keep what arrives while the engine works on and answers a request. ``INFO``
    reports the window this allows (the protocol's *Pipelining*): ``1 + rx_buffer //
    SERIAL_MAX_ENCODED_FRAME`` requests unanswered (4 for 4096 bytes), so a host that keeps to it
    loses no byte even without flow control, and keeps the line busy in both directions. With
    GCM the window is at most :data:`~aes_fpga.appliance.spec.GCM_MAX_WINDOW` (8, from
    ``7 * SERIAL_MAX_ENCODED_FRAME`` bytes): the device keeps a reply per place of its window;
    a larger buffer gives no wider window.

    A character received with a framing error (stop bit low, a break among them) is passed on
    as a frame delimiter, ``0x00``: the frame it interrupts ends there and is refused like any
    truncated frame, and so is the rest of it up to its own delimiter; the next frame is
    answered. A damaged character never reaches the engine as data.

    Parameters
    ----------
    core
        The core (common interface) inside the engine.
    clk_freq : float
        Clock frequency in Hz.
    baud : float
        Line rate; checked at construction (see :func:`uart_divider`).
    rx_buffer : int
        Receive FIFO depth in bytes, 32 to 65536.
    flow_control : bool
        Add the RTS/CTS ports.
    heartbeat_cycles : int
        Cycles between heartbeat toggles.
    build_id : int
        Reported by ``INFO``.
    gcm : None, "bram" or "lut"
        GCM with that GHASH (see :class:`~.engine.ProtocolEngine`); ``None``, the default, the
        hardware without it.
    entropy : EntropySource, optional
        An entropy source reported by ``INFO`` and ``STATS``, serving ``RANDOM`` (see
        :class:`~.engine.ProtocolEngine`); ``None``, the default, none.
    entropy_raw : bool
        With ``entropy``, a diagnostic build that gives raw samples (``ENTROPY_RAW``).
    device_secret : bytes, optional
        A device with a secret (32 bytes; see :class:`~.engine.ProtocolEngine`): needs
        ``entropy``, and ``core`` then holds the sessions' keys too, two slots per session
        beyond ``LOAD_KEY``'s (``INFO`` reports ``core.key_slots - 2 * sessions_held``).
        Never shown.
    sessions_held : int
        With ``device_secret``: the sessions held (2 to 4).

    Attributes
    ----------
    info : DeviceInfo
        What ``INFO`` reports (with the window).
    """

    def __init__(self, core, *, clk_freq, baud=3_000_000, rx_buffer=4096, flow_control=False,
                 heartbeat_cycles=50_000_000, build_id=0, gcm=None, entropy=None,
                 entropy_raw=False, device_secret=None, sessions_held=SESSIONS_HELD):
        # Fails here, naming the parameter and the nearest rate, when the clock cannot make it.
        self.divider = uart_divider(clk_freq, baud)
        if not isinstance(rx_buffer, int) or not 32 <= rx_buffer <= 65536:
            raise ValueError(f"rx_buffer: {rx_buffer!r} bytes is out of range; allowed 32 .. "
                             f"65536 ({SERIAL_MAX_ENCODED_FRAME} or more for a window above "
                             f"1)")
        self.core = core
        self.clk_freq = clk_freq
        self.baud = baud
        self.rx_buffer = rx_buffer
        self.flow_control = bool(flow_control)
        self.heartbeat_cycles = heartbeat_cycles
        # (A device with GCM keeps a reply per place of its window: at most GCM_MAX_WINDOW.)
        window = min(255 if gcm is None else GCM_MAX_WINDOW,
                     1 + rx_buffer // SERIAL_MAX_ENCODED_FRAME)
        options = {} if gcm is None else {"gcm": gcm}
        if entropy is not None:
            options["entropy"] = entropy
        if entropy_raw:
            options["entropy_raw"] = True
        key_slots = core.key_slots
        if device_secret is not None:
            options.update(device_secret=device_secret, sessions_held=sessions_held)
        self.engine = ProtocolEngine(core=core, key_slots=key_slots, window=window,
                                     build_id=build_id, **options)
        self.info = self.engine.info
        members = {
            "uart_rx": In(1, init=1), "uart_tx": Out(1, init=1),
            "heartbeat": Out(1), "rx_activity": Out(1), "tx_activity": Out(1),
        }
        if self.flow_control:
            members.update({"uart_rts_n": Out(1, init=1), "uart_cts_n": In(1)})
        super().__init__(members)

    @property
    def status_leds(self):
        """Signals for the board's status LEDs, most important first."""
        return [self.heartbeat, self.rx_activity, self.tx_activity]

    def resource_groups(self, paths):
        """How its modules fold into a synthesis report's groups (see
        :func:`aes_fpga.flow.synth.group_modules`): transport (its own logic: UART, FIFO,
        LEDs), protocol engine and core. ``paths`` maps ``id(elaboratable)`` to its place in
        the hierarchy (:func:`aes_fpga.flow.synth.component_paths` of this design)."""
        return {"": "transport (UART, FIFO, LEDs)", paths[id(self.engine)]: "protocol engine",
                paths[id(self.core)]: "core"}

    def elaborate(self, platform):
        m = Module()
        m.submodules.rx = rx = UARTRx(self.clk_freq, self.baud)
        m.submodules.tx = tx = UARTTx(self.clk_freq, self.baud, flow_control=self.flow_control)
        m.submodules.rx_fifo = rx_fifo = fifo.SyncFIFOBuffered(width=8, depth=self.rx_buffer)
        m.submodules.engine = engine = self.engine
        rx_in = rx_fifo.w_stream
        m.d.comb += [
            rx.rx.eq(self.uart_rx),
            self.uart_tx.eq(tx.tx),
            # The receiver's characters into the FIFO as bytes: one with a framing error (its
            # stop bit read low) becomes a frame delimiter, as a break does, so the frame it
            # was part of ends there.
            rx_in.payload.eq(Mux(rx.o.payload.framing_error, 0, rx.o.payload.data)),
            rx_in.valid.eq(rx.o.valid),
            rx.o.ready.eq(rx_in.ready),
        ]
        # The FIFO's bytes come out of a block RAM, whose clock-to-out is slow (5.8 ns on an
        # ECP5 -6 without its output register): a pipeline stage loads them into flip-flops
        # through their enable alone, before any logic looks at them; a registered stage then
        # cuts the engine's ready from the FIFO's read enable.
        skid(m, "rx_stage", rx_fifo.r_stream, engine.rx, pipe="rx_pipe")
        wiring.connect(m, engine.tx, tx.i)
        if self.flow_control:
            m.d.comb += tx.cts_n.eq(self.uart_cts_n)
            m.d.sync += self.uart_rts_n.eq(rx_fifo.level >= self.rx_buffer - CTS_SLACK)

        m.submodules.heartbeat = heartbeat = Heartbeat(self.heartbeat_cycles)
        m.d.comb += self.heartbeat.eq(heartbeat.o)
        # Activity LEDs stay lit for 2**22 cycles (~40 ms at 100 MHz) after a byte.
        for name, pulse in (("rx", rx.o.valid & rx.o.ready), ("tx", tx.i.valid & tx.i.ready)):
            # Counts down from 2**22 - 1 past zero; its top bit set means off (a flag, not a
            # comparison of the 22-bit count).
            timer = Signal(23, name=f"{name}_timer", init=1 << 22)
            with m.If(pulse):
                m.d.sync += timer.eq((1 << 22) - 1)
            with m.Elif(~timer[22]):
                m.d.sync += timer.eq(timer - 1)
            m.d.comb += getattr(self, f"{name}_activity").eq(~timer[22])
        return m
