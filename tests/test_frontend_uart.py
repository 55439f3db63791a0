# amaranth: UnusedElaboratable=no
"""The UART PHY in Amaranth's simulator: bit timing, tx -> rx loopback, a receiver fed by an
asynchronous bit-level transmitter model (baud error, glitches, framing errors), back-pressure,
overrun and RTS/CTS.

Simulated time is one clock per microsecond whatever ``clk_freq`` says: only clock counts
matter. Testbenches wait for events (an edge, a delay) rather than polling every clock, which
keeps the slow rates cheap to simulate; every wait has a deadline.
"""

import math
import random

import pytest
from amaranth.back import rtlil
from amaranth.hdl import Module, Signal
from amaranth.sim import Simulator

from aes_fpga.appliance.gateware.uart import RX_LAYOUT, UARTConfig, UARTRx, UARTTx, uart_divider

PERIOD = 1e-6
SEED = 0x0A25


# -- infrastructure ----------------------------------------------------------------------------

class Timeout(AssertionError):
    pass


def bench(tx=None, rx=None):
    """A top-level module holding ``tx`` and/or ``rx`` (with both, ``tx.tx`` drives ``rx.rx``)
    and a free-running clock counter."""
    m = Module()
    cycle = Signal(32)
    m.d.sync += cycle.eq(cycle + 1)
    if tx is not None:
        m.submodules.tx = tx
    if rx is not None:
        m.submodules.rx = rx
    if tx is not None and rx is not None:
        m.d.comb += rx.rx.eq(tx.tx)
    return m, cycle


def simulate(m, *testbenches, background=()):
    sim = Simulator(m)
    sim.add_clock(PERIOD)
    for tb in testbenches:
        sim.add_testbench(tb)
    for tb in background:
        sim.add_testbench(tb, background=True)
    sim.run()


async def wait_high(ctx, signal, timeout_cycles, what):
    """Return at once if ``signal`` is high, else after the clock edge that raises it. Only for
    a register output: a combinational signal can pulse while the design settles."""
    if not ctx.get(signal):
        _, expired = await ctx.posedge(signal).delay(timeout_cycles * PERIOD)
        if expired:
            raise Timeout(f"{what}: nothing within {timeout_cycles} clocks")


async def send(ctx, port, byte, cycle, timeout_cycles):
    """Offer ``byte`` on stream ``port`` until taken; returns the value of ``cycle`` in the
    clock of the transfer. ``valid`` stays high. ``ready`` is combinational, so a rising edge
    on it is only a cue to look at it as sampled by the next clock edge."""
    ctx.set(port.valid, 1)
    ctx.set(port.payload, byte)
    deadline = ctx.get(cycle) + timeout_cycles
    while True:
        left = deadline - ctx.get(cycle)
        if left <= 0:
            raise Timeout(f"send: not taken within {timeout_cycles} clocks")
        if not ctx.get(port.ready):
            await ctx.posedge(port.ready).delay(left * PERIOD)
        _, _, ready, taken = await ctx.tick().sample(port.ready, cycle)
        if ready:
            return taken


def as_dict(payload):
    return {"data": payload.data, "framing_error": payload.framing_error}


async def receive(ctx, port, cycle, timeout_cycles):
    """Take one payload from stream ``port`` (``ready`` held high); returns (cycle, payload),
    the cycle being the first with ``valid`` high."""
    ctx.set(port.ready, 1)
    await wait_high(ctx, port.valid, timeout_cycles, "receive")
    got = (ctx.get(cycle), as_dict(ctx.get(port.payload)))
    await ctx.tick()
    return got


def frame_bits(byte, stop=1):
    """8N1 levels of one frame: start, data LSB first, stop."""
    return [0] + [(byte >> i) & 1 for i in range(8)] + [stop]


async def drive_line(ctx, pin, segments):
    """Drive ``pin`` with ``(level, seconds)`` segments: an asynchronous transmitter, its edges
    anywhere between clock edges."""
    for level, duration in segments:
        ctx.set(pin, level)
        await ctx.delay(duration)


def frames_segments(frames, bit_time, idle_bits=0.0):
    """Segments for ``frames``, (byte, stop level) pairs, with ``idle_bits`` of idle line
    after each (0: back to back), and two bit times of idle line at the end."""
    segs = []
    for byte, stop in frames:
        segs += [(b, bit_time) for b in frame_bits(byte, stop)]
        if idle_bits:
            segs.append((1, idle_bits * bit_time))
    segs.append((1, 2 * bit_time))
    return segs


def timeline(segments):
    """``(level, seconds)`` segments as ``(time, level)`` changes, and the total time."""
    t, out = 0.0, []
    for level, duration in segments:
        out.append((t, level))
        t += duration
    return out, t


def level_at(changes, when):
    level = 1
    for t, lv in changes:
        if t > when:
            break
        level = lv
    return level


def run_rx_model(config_args, frames, *, error_percent=0.0, idle_bits=0.0, lead_bits=0.0,
                 glitches=()):
    """Send ``frames`` ((byte, stop level) pairs) to a UARTRx from the asynchronous transmitter
    model, ``error_percent`` fast (positive) or slow (negative), after ``lead_bits`` bit times of
    idle line, with ``idle_bits`` of idle line after each frame, and ``glitches``: ``(position,
    clocks)`` inverted pulses, the position in bit times from the start of the line. Returns the
    payloads received."""
    rx = UARTRx(*config_args)
    m, cycle = bench(rx=rx)
    bit_time = rx.config.bit_cycles * PERIOD / (1 + error_percent / 100)
    base, total = timeline([(1, lead_bits * bit_time)] +
                           frames_segments(frames, bit_time, idle_bits))
    events = list(base)
    for position, width in glitches:
        t0, t1 = position * bit_time, position * bit_time + width * PERIOD
        events += [(t0, 1 - level_at(base, t0)), (t1, level_at(base, t1))]
    events.sort(key=lambda e: e[0])             # stable: a glitch edge after a line edge
    offset = 3.37 * PERIOD                      # an odd phase to the clock
    received = []

    async def line(ctx):
        await ctx.delay(offset)
        now = 0.0
        for when, level in events:
            if when > now:
                await ctx.delay(when - now)
                now = when
            ctx.set(rx.rx, level)
        await ctx.delay(total - now)

    async def collect(ctx):
        ctx.set(rx.o.ready, 1)
        deadline = int((offset + total) / PERIOD) + 10
        while True:
            left = deadline - ctx.get(cycle)
            if left <= 0:
                return
            if not ctx.get(rx.o.valid):
                fired, _ = await ctx.posedge(rx.o.valid).delay(left * PERIOD)
                if not fired:
                    return
            received.append(as_dict(ctx.get(rx.o.payload)))
            await ctx.tick()

    simulate(m, line, collect)
    return received


def ok(byte):
    return {"data": byte, "framing_error": 0}


def tick_cycle(config, k):
    """The divider's clock (1 = the first clock it runs) of tick ``k``."""
    return -(-k * (1 << config.phase_bits) // config.phase_inc)


# -- divider ----------------------------------------------------------------------------------

@pytest.mark.parametrize(("clk", "baud", "oversample"), [
    (100e6, 12e6, 8), (100e6, 3e6, 16), (12e6, 115200, 16), (100e6, 115200, 16),
    (100e6, 300, 16), (48e6, 3e6, 16), (10e6, 1e6, 10), (16, 4, 4), (50, 10, 5),
])
def test_divider_figures(clk, baud, oversample):
    os, divisor, achieved, error = uart_divider(clk, baud)
    assert os == oversample
    assert divisor >= 1
    assert achieved == pytest.approx(clk / (os * divisor))
    assert error == pytest.approx((achieved - baud) / baud * 100)
    assert abs(error) < 0.002
    assert UARTConfig(clk, baud).bit_cycles == pytest.approx(clk / baud, rel=2e-5)


def test_divider_explicit_oversample():
    assert uart_divider(100e6, 3e6, 4)[:2] == (4, pytest.approx(100 / 12, rel=2e-5))
    assert uart_divider(100e6, 12e6, 8)[0] == 8


@pytest.mark.parametrize(("args", "pattern"), [
    ((10e6, 3e6), r"^baud: 3000000\.0 needs at least 4 clocks per bit.* 2500000 baud "
                  r"\(-16\.67 %\)"),
    ((39, 10), r"^baud: 10 .* 9\.75 baud \(-2\.50 %\)"),
    ((100e6, 12e6, 16), r"^oversample: 16 .* 6250000 baud \(-47\.92 %\); use oversample <= 8"),
    ((100e6, 3e6, 64), r"^oversample: 64 .* 1562500 baud \(-47\.92 %\)"),
    ((100e6, 12.5e6), r"^baud: 12500000\.0 is above the 12000000 baud limit"),
    ((100e6, 0), r"^baud: 0 "),
    ((0, 9600), r"^clk_freq: 0 "),
    ((-1e6, 9600), r"^clk_freq: -1000000\.0 "),
    ((100e6, 9600, 3), r"^oversample: 3 is not an integer of at least 4"),
    ((100e6, 9600, 8.0), r"^oversample: 8\.0 "),
])
def test_divider_errors(args, pattern):
    with pytest.raises(ValueError, match=pattern):
        uart_divider(*args)
    with pytest.raises(ValueError, match=pattern):
        UARTTx(*args[:2], oversample=args[2] if len(args) > 2 else None)
    with pytest.raises(ValueError, match=pattern):
        UARTRx(*args[:2], oversample=args[2] if len(args) > 2 else None)


def test_ports_and_elaboration():
    assert "cts_n" not in UARTTx(16e6, 1e6).signature.members
    assert "rts_n" not in UARTRx(16e6, 1e6).signature.members
    assert UARTRx(16e6, 1e6).o.payload.shape() == RX_LAYOUT
    for dut in (UARTTx(100e6, 12e6, flow_control=True), UARTRx(100e6, 12e6, flow_control=True),
                UARTTx(12e6, 115200), UARTRx(50, 10)):
        assert rtlil.convert(dut)


# -- transmitter ------------------------------------------------------------------------------

def tx_waveform(config_args, payload, *, flow_control=False, cts=None):
    """Send ``payload`` back to back through a UARTTx; returns (config, transfer cycles, line
    changes as (cycle, level)). ``cts(ctx, tx)``, if given, runs alongside."""
    tx = UARTTx(*config_args, flow_control=flow_control)
    m, cycle = bench(tx=tx)
    frame = math.ceil(10 * tx.config.bit_cycles) + 1
    taken, changes = [], []

    async def source(ctx):
        for byte in payload:
            taken.append(await send(ctx, tx.i, byte, cycle, 40 * frame))
        ctx.set(tx.i.valid, 0)
        await ctx.tick().repeat(frame + 2)

    async def monitor(ctx):
        last = 1
        assert ctx.get(tx.tx) == last
        async for level, c in ctx.changed(tx.tx).sample(cycle):
            if level != last:
                changes.append((c, level))
                last = level

    async def flow(ctx):
        await cts(ctx, tx)

    bgs = [monitor] + ([flow] if cts else [])
    simulate(m, source, background=bgs)
    return tx.config, taken, changes


def expected_changes(config, start, payload):
    """The exact line of ``payload`` sent back to back from clock ``start``: bit g (over all
    frames) starts at ``start + tick_cycle(config, g * oversample)``."""
    bits = [b for byte in payload for b in frame_bits(byte)] + [1]
    out, level = [], 1
    for g, b in enumerate(bits):
        if b != level:
            out.append((start + tick_cycle(config, g * config.oversample), b))
            level = b
    return out


@pytest.mark.parametrize("config_args", [(100e6, 12e6), (100e6, 3e6), (12e6, 115200), (16, 4),
                                         (45, 10)])
def test_tx_waveform_and_throughput(config_args):
    """Back-to-back bytes: the exact 8N1 waveform, no idle time between frames, and so
    ``achieved_baud / 10`` bytes per second, within 1 % of ``baud / 10``."""
    rng = random.Random(SEED)
    payload = [0x00, 0xFF, 0x55, 0xAA, 0x01, 0x80] + [rng.randrange(256) for _ in range(26)]
    config, taken, changes = tx_waveform(config_args, payload)
    assert changes == expected_changes(config, taken[0] + 1, payload)
    # Measured: bytes per second from the first transfer to the last (n - 1 whole frames).
    clk, baud = config_args
    cycles = taken[-1] - taken[0]
    bytes_per_s = (len(payload) - 1) * clk / cycles
    assert bytes_per_s == pytest.approx(baud / 10, rel=0.01)
    assert bytes_per_s == pytest.approx(config.achieved_baud / 10, rel=1 / cycles)


def test_tx_latency_ready_and_idle():
    """tx is high at reset and when idle; it falls the clock after a transfer; ready is high
    when idle and for exactly one clock per frame while busy."""
    tx = UARTTx(20, 2)      # 10 clocks per bit, oversample 10, divisor 1
    m, cycle = bench(tx=tx)
    log = []

    async def tb(ctx):
        assert ctx.get(tx.tx) == 1 and ctx.get(tx.i.ready) == 1
        await ctx.tick().repeat(3)
        ctx.set(tx.i.valid, 1)
        ctx.set(tx.i.payload, 0xA5)
        for _ in range(230):
            log.append((ctx.get(tx.i.ready), ctx.get(tx.tx)))
            if len(log) == 102:
                ctx.set(tx.i.valid, 0)
            await ctx.tick()

    simulate(m, tb)
    ready = [r for r, _ in log]
    line = [t for _, t in log]
    # Offered in clock 0, taken at once; the second byte in the last clock of the first stop
    # bit (clock 100); ready again in the last clock of the second, then idle from clock 201.
    assert [c for c, r in enumerate(ready) if r] == [0, 100] + list(range(200, 230))
    assert line[0] == 1 and line[1:11] == [0] * 10
    assert line[1:201] == [b for b in frame_bits(0xA5) * 2 for _ in range(10)]
    assert set(line[201:]) == {1}


# -- loopback ---------------------------------------------------------------------------------

# The slow rates (over 30 clocks per bit) send every byte value only with -m slow; by default
# they send the bit patterns and some random bytes, and the fast rates every value (every
# byte through the same transmitter and receiver, their dividers' other constants covered by
# the slow rates' default cases).
_SLOW_RATES = [(100e6, 3e6), (12e6, 115200), (50e6, 921600)]


@pytest.mark.parametrize(("config_args", "extra"), [
    ((100e6, 12e6), 16), ((16, 4), 16), ((9, 2), 16), ((73, 10), 16),
    # (45, 10) has (9, 2)'s oversampling and divider (phase_bits, phase_inc): the same
    # hardware and payload, so with -m slow.
    pytest.param((45, 10), 64, marks=pytest.mark.slow),
] + [(rate, -26) for rate in _SLOW_RATES]
  + [pytest.param(rate, 16 if rate[1] < 3e6 else 64, marks=pytest.mark.slow)
     for rate in _SLOW_RATES])
def test_loopback(config_args, extra):
    """tx -> rx: all 256 byte values, then ``extra`` random bytes, back to back (with a
    negative ``extra``: 0x00, 0xFF, 0x55, 0xAA, 0x01, 0x80, then ``-extra`` random bytes)."""
    rng = random.Random(SEED + extra)
    if extra >= 0:
        payload = list(range(256)) + [rng.randrange(256) for _ in range(extra)]
    else:
        payload = [0x00, 0xFF, 0x55, 0xAA, 0x01, 0x80] + [rng.randrange(256)
                                                          for _ in range(-extra)]
    tx, rx = UARTTx(*config_args), UARTRx(*config_args)
    assert tx.config == rx.config
    m, cycle = bench(tx=tx, rx=rx)
    frame = math.ceil(10 * tx.config.bit_cycles) + 1
    sent, received = [], []

    async def source(ctx):
        for byte in payload:
            sent.append(await send(ctx, tx.i, byte, cycle, 4 * frame))
        ctx.set(tx.i.valid, 0)

    async def sink(ctx):
        for _ in payload:
            received.append(await receive(ctx, rx.o, cycle, 4 * frame))

    simulate(m, source, sink)
    assert [p for _, p in received] == [ok(b) for b in payload]
    # The receiver keeps pace: each byte comes out a fixed time after it went in, its latency
    # from the start bit's falling edge (the clock after the transfer) as documented.
    os = tx.config.oversample
    delays = {r - s for (r, _), s in zip(received, sent, strict=True)}
    assert delays == {1 + tick_cycle(tx.config, 9 * os + os // 2 + 1) + 2}


@pytest.mark.parametrize("config_args", [(100e6, 12e6), (12e6, 115200), (45, 10)])
def test_rx_latency(config_args):
    """``o.valid`` rises ceil((9 os + os // 2 + 1) divisor) + 2 clocks after the clock in which
    rx falls."""
    rx = UARTRx(*config_args)
    config = rx.config
    m, cycle = bench(rx=rx)
    fell, seen = [], []

    async def line(ctx):
        await ctx.tick().repeat(5)
        fell.append(ctx.get(cycle))
        await drive_line(ctx, rx.rx, frames_segments([(0x3C, 1)], config.bit_cycles * PERIOD))

    async def sink(ctx):
        seen.append(await receive(ctx, rx.o, cycle, int(12 * config.bit_cycles)))

    simulate(m, line, sink)
    valid, payload = seen[0]
    os = config.oversample
    assert payload == ok(0x3C)
    assert valid - fell[0] == tick_cycle(config, 9 * os + os // 2 + 1) + 2


# -- receiver against the transmitter model ---------------------------------------------------

@pytest.mark.parametrize("error", [-2.0, 2.0])
@pytest.mark.parametrize("config_args", [(100e6, 12e6), (100e6, 3e6), (12e6, 115200),
                                         (16e6, 1e6)])
def test_rx_baud_tolerance(config_args, error):
    """A transmitter 2 % fast or slow, frames back to back, still decodes."""
    rng = random.Random(SEED)
    n = 12 if config_args[1] < 1e6 else 40
    payload = [0x00, 0xFF, 0x55, 0xAA, 0x80, 0x01] + [rng.randrange(256) for _ in range(n)]
    got = run_rx_model(config_args, [(b, 1) for b in payload], error_percent=error)
    assert got == [ok(b) for b in payload]


def test_rx_model_is_sensitive():
    """The same model 8 % off breaks the frames: the tolerance test measures something."""
    payload = [0x00, 0xFF, 0x55, 0xAA] * 3
    for error in (-8.0, 8.0):
        got = run_rx_model((16e6, 1e6), [(b, 1) for b in payload], error_percent=error)
        assert got != [ok(b) for b in payload]


@pytest.mark.parametrize("config_args", [(100e6, 12e6), (16e6, 1e6), (9, 2)])
def test_rx_idle_glitches(config_args):
    """One-clock low pulses on the idle line are rejected as false start bits; a byte after
    them is received."""
    rng = random.Random(SEED)
    positions, t = [], 0.5
    while t < 40:                       # one every 1.5 to 3 bit times
        positions.append(t)
        t += rng.uniform(1.5, 3.0)
    got = run_rx_model(config_args, [(0x5A, 1)], lead_bits=42,
                       glitches=[(p, 1) for p in positions])
    assert len(positions) > 12
    assert got == [ok(0x5A)]


@pytest.mark.parametrize("config_args", [(100e6, 12e6), (16e6, 1e6), (9, 2)])
def test_rx_glitch_filter(config_args):
    """A one-clock inverted pulse at or beside the centre of any bit (start, data or stop) is
    outvoted by the other two samples."""
    rng = random.Random(SEED)
    bit_cycles = UARTConfig(*config_args).bit_cycles
    payload = [rng.randrange(256) for _ in range(30)]
    # Frame f gets a pulse in bit f % 10 (centred at 10 f + k + 0.5 bit times), shifted by
    # (f // 10 - 1) clocks and a fraction of one, so it hits each of the three samples.
    glitches = [(10 * f + f % 10 + 0.5 + (f // 10 - 1 + rng.uniform(-0.5, 0.5)) / bit_cycles, 1)
                for f in range(len(payload))]
    got = run_rx_model(config_args, [(b, 1) for b in payload], glitches=glitches)
    assert got == [ok(b) for b in payload]


def test_rx_framing_error_and_break():
    """A low stop bit gives the byte with framing_error; after the line is high again the next
    byte is received. A break (line held low) gives one 0x00 with framing_error."""
    config_args = (16e6, 1e6)
    bit_time = 16 * PERIOD
    frames = frames_segments([(0xC3, 0)], bit_time, idle_bits=1)
    frames += frames_segments([(0x3C, 1)], bit_time)
    frames += [(0, 35 * bit_time), (1, 0.5 * bit_time)]
    frames += frames_segments([(0x7E, 1), (0x81, 0)], bit_time, idle_bits=1)
    frames += frames_segments([(0x99, 1)], bit_time)
    rx = UARTRx(*config_args)
    m, cycle = bench(rx=rx)
    total = sum(d for _, d in frames)
    received = []

    async def line(ctx):
        await ctx.delay(4.6 * PERIOD)
        await drive_line(ctx, rx.rx, frames)

    async def sink(ctx):
        while len(received) < 6:
            received.append((await receive(ctx, rx.o, cycle, int(total / PERIOD) + 10))[1])

    simulate(m, line, sink)
    assert received == [{"data": 0xC3, "framing_error": 1}, ok(0x3C),
                        {"data": 0x00, "framing_error": 1}, ok(0x7E),
                        {"data": 0x81, "framing_error": 1}, ok(0x99)]


def test_rx_overrun_and_backpressure():
    """With ``o`` stalled the first byte is held (payload stable); the second is dropped and
    sets ``overrun``, which stays set until ``clear``; then bytes flow again."""
    config_args = (16e6, 1e6)
    rx = UARTRx(*config_args, flow_control=True)
    m, cycle = bench(rx=rx)
    bit_cycles = 16
    log = []
    took = []

    async def line(ctx):
        await ctx.delay(3.3 * PERIOD)
        await drive_line(ctx, rx.rx, frames_segments([(0x11, 1), (0x22, 1), (0x33, 1)],
                                                     bit_cycles * PERIOD))
        await ctx.delay(18 * bit_cycles * PERIOD)      # the next byte at about 50 bit times
        await drive_line(ctx, rx.rx, frames_segments([(0x44, 1)], bit_cycles * PERIOD))

    async def consumer(ctx):
        assert ctx.get(rx.rts_n) == 1                   # reset state: not ready, stop
        ctx.set(rx.o.ready, 0)
        for c in range(70 * bit_cycles):
            if c == 40 * bit_cycles:
                ctx.set(rx.clear, 1)
            if c == 40 * bit_cycles + 1:
                ctx.set(rx.clear, 0)
            if c == 45 * bit_cycles:
                ctx.set(rx.o.ready, 1)
            valid, payload, overrun, rts_n, ready = (
                ctx.get(rx.o.valid), as_dict(ctx.get(rx.o.payload)), ctx.get(rx.overrun),
                ctx.get(rx.rts_n), ctx.get(rx.o.ready))
            log.append((valid, payload if valid else None, overrun, rts_n))
            if valid and ready:
                took.append(payload)
            await ctx.tick()

    simulate(m, line, consumer)
    valid_payloads = {p["data"] for v, p, _, _ in log[:45 * bit_cycles] if v}
    assert valid_payloads == {0x11}                     # held, unchanged, while stalled
    first_overrun = next(c for c, (_, _, o, _) in enumerate(log) if o)
    assert 19 * bit_cycles < first_overrun < 21 * bit_cycles   # at the second byte's stop bit
    assert all(o for _, _, o, _ in log[first_overrun:40 * bit_cycles + 1])
    assert not any(o for _, _, o, _ in log[40 * bit_cycles + 1:])
    assert took == [ok(0x11), ok(0x44)]
    # rts_n is ~ready one clock late.
    assert all(r == 1 for _, _, _, r in log[1:45 * bit_cycles + 1])
    assert all(r == 0 for _, _, _, r in log[45 * bit_cycles + 1:])


def test_rx_overrun_wins_over_clear():
    """An overrun in a clock with ``clear`` high still sets the flag (for one clock, with
    ``clear`` held high throughout)."""
    rx = UARTRx(16e6, 1e6)
    m, cycle = bench(rx=rx)
    flags = []

    async def line(ctx):
        await ctx.delay(2.6 * PERIOD)
        await drive_line(ctx, rx.rx, frames_segments([(0x11, 1), (0x22, 1)], 16 * PERIOD))

    async def consumer(ctx):
        ctx.set(rx.clear, 1)
        for _ in range(25 * 16):
            flags.append(ctx.get(rx.overrun))
            await ctx.tick()

    simulate(m, line, consumer)
    assert sum(flags) == 1


# -- flow control -----------------------------------------------------------------------------

def test_tx_cts_holds_before_start_bit():
    """cts_n high: no byte starts (ready stays low); a byte in flight is finished. After cts_n
    falls, sending resumes within the synchroniser's delay."""
    config_args = (16e6, 1e6)
    payload = [0x12, 0x34, 0x56, 0x78]

    async def cts(ctx, tx):
        ctx.set(tx.cts_n, 1)                           # not clear at first
        await ctx.tick().repeat(100)
        ctx.set(tx.cts_n, 0)                           # clear in clock 100
        await ctx.tick().repeat(200)
        ctx.set(tx.cts_n, 1)                           # hold in clock 300, in the second frame
        await ctx.tick().repeat(400)
        ctx.set(tx.cts_n, 0)                           # clear in clock 700

    config, taken, changes = tx_waveform(config_args, payload, flow_control=True, cts=cts)
    # cts_n falls in clock 100, seen through two flip-flops from clock 102: first transfer.
    assert taken[0] == 102
    assert taken[1] == taken[0] + 160                  # back to back while clear
    # The hold comes in the middle of the second frame: it is finished, the third waits.
    assert taken[2] == 702
    assert taken[3] == taken[2] + 160
    line = expected_changes(config, taken[0] + 1, payload[:2])
    line += expected_changes(config, taken[2] + 1, payload[2:])
    assert changes == line


def test_tx_ready_from_reset_without_flow_control():
    """Without flow control the transmitter has no cts_n and is ready from reset."""
    _, taken, _ = tx_waveform((16e6, 1e6), [0x01, 0x02])
    assert taken == [0, 160]
