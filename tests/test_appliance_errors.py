# amaranth: UnusedElaboratable=no
"""The UART appliance with a damaged serial line: framing errors, breaks and glitches driven
on its ``uart_rx`` pin, bit by bit, in Amaranth's simulator.

Whatever the line does, the appliance answers exactly what the reference device answers for
the bytes its receiver delivered to the protocol engine (watched at the engine's ``rx``
stream), and a valid request sent afterwards is answered. Replies are decoded by a second
UART receiver on ``uart_tx``, as a host would.

Only ``STATS`` requests are sent (a serial device's reply is a status byte, far shorter on the
line than ``INFO``'s, which keeps the runs short), which never reach the core, so by default
the appliance holds
:class:`IdleCore` (the core interface with nothing behind it), which Amaranth's simulator runs
two to three times as fast as with the DRAB-LOCUS ring. With ``-m slow``,
``test_real_core_on_a_damaged_line`` puts the real core behind a damaged line, and every test
here runs with it too.
"""

import functools

import pytest
from amaranth.hdl import Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from aes_fpga import appliance as P
from aes_fpga.appliance.gateware.uart import UartAppliance, UARTRx, uart_divider
from aes_fpga.cores import DrabLocus
from aes_fpga.cores.interface import key_layout, request_layout, response_layout
from aes_fpga.sim.cxxsim import mark_used

CLK, BAUD = 16e6, 2e6
BIT = 8                     # clocks per bit at CLK / BAUD
BYTE = 10 * BIT             # one 8N1 character
PERIOD = 1e-6               # simulated time per clock; only clock counts matter
QUIET = 40 * BIT            # no traffic for this long: the appliance has answered
MAX_CYCLES = 40_000


class IdleCore(wiring.Component):
    """The core interface of ``DrabLocus(key_sizes=(128,))`` and nothing behind it: it takes
    keys, never takes a request and never answers (no test here sends one)."""

    key_slots, key_sizes, tag_width = 1, (128,), 8

    def __init__(self):
        super().__init__({"key": In(stream.Signature(key_layout(self.key_slots))),
                          "i": In(stream.Signature(request_layout(self.key_slots,
                                                                  self.tag_width))),
                          "o": Out(stream.Signature(response_layout(self.tag_width))),
                          "key_rejected": Out(1)})

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.key.ready.eq(1)
        return m


CORES = {"idle": IdleCore, "drab-locus": lambda: DrabLocus(key_sizes=(128,))}


@pytest.fixture(params=["idle", pytest.param("drab-locus", marks=pytest.mark.slow)])
def core(request):
    """The core inside the appliance: :class:`IdleCore`, or (``-m slow``) the real one."""
    return CORES[request.param]


def test_idle_core_has_the_real_interface():
    """The stand-in's ports and INFO figures are the real core's."""
    idle, real = IdleCore(), DrabLocus(key_sizes=(128,))
    assert idle.signature == real.signature
    assert (idle.key_slots, idle.key_sizes) == (real.key_slots, real.key_sizes)
    devs = [UartAppliance(c, clk_freq=CLK, baud=BAUD, rx_buffer=32) for c in (idle, real)]
    assert devs[0].info == devs[1].info
    mark_used(devs)        # compared, never simulated


def test_bit_timing_is_exact():
    # The line model below relies on exactly BIT clocks per bit, no divider jitter.
    oversample, divisor, achieved, error = uart_divider(CLK, BAUD)
    assert (oversample * divisor, achieved, error) == (BIT, BAUD, 0)


# ---- the serial line as segments of (level, clocks) ------------------------------------------

def idle(clocks):
    return [(1, clocks)]


def character(byte, *, stop=1):
    """One 8N1 character: start bit, data bits least significant first, stop bit ``stop``."""
    return [(0, BIT), *[((byte >> i) & 1, BIT) for i in range(8)], (stop, BIT)]


def characters(data):
    return [seg for byte in data for seg in character(byte)]


def damaged(byte, low_from):
    """A character whose line is pulled low from bit ``low_from`` (1..8: a data bit, 9: the
    stop bit) to the end of the character: the data bits from there on read as 0 and the stop
    bit is low, a framing error. The line is high again straight after."""
    segs = character(byte)
    return segs[:low_from] + [(0, BIT * (10 - low_from))]


class Run:
    """What one simulation saw: ``engine_rx`` the bytes the engine took, ``replies`` the bytes
    decoded from ``uart_tx``."""

    def __init__(self, engine_rx, replies):
        self.engine_rx = bytes(engine_rx)
        self.replies = bytes(replies)


class LineBench:
    """A fresh appliance holding ``core()`` with a host's UART receiver on its ``uart_tx``,
    and its simulation, kept for the next run with the same core and reset for it (building
    the simulation costs about a third of a run)."""

    def __init__(self, core):
        self.dev = dev = UartAppliance(core(), clk_freq=CLK, baud=BAUD, rx_buffer=32,
                                       heartbeat_cycles=1000)
        m = Module()
        m.submodules.dev = dev
        m.submodules.host = self.host = host = UARTRx(CLK, BAUD)
        m.d.comb += [host.rx.eq(dev.uart_tx), host.o.ready.eq(1)]
        self.segments, self.used = None, False
        self.sim = Simulator(m)
        self.sim.add_clock(PERIOD)
        self.sim.add_testbench(self.monitor, background=True)
        self.sim.add_testbench(self.line)

    def run(self, segments):
        """Drive ``segments`` on ``uart_rx`` from reset, then wait until the line has been
        quiet for :data:`QUIET` clocks in both directions."""
        self.segments = segments
        self.seen, self.replies = bytearray(), bytearray()
        self.last_activity = self.cycle = 0
        if self.used:
            self.sim.reset()
        self.used = True
        self.sim.run()
        return Run(self.seen, self.replies), self.dev.info

    async def monitor(self, ctx):
        engine, host = self.dev.engine, self.host
        async for _, _, e_valid, e_ready, e_byte, h_valid, h_byte, line in ctx.tick().sample(
                engine.rx.valid, engine.rx.ready, engine.rx.payload, host.o.valid,
                host.o.payload.data, self.dev.uart_tx):
            self.cycle += 1
            if e_valid and e_ready:
                self.seen.append(e_byte)
            if h_valid:
                self.replies.append(h_byte)
            if e_valid or not line:
                self.last_activity = self.cycle

    async def line(self, ctx):
        for level, clocks in self.segments:
            ctx.set(self.dev.uart_rx, level)
            await ctx.tick().repeat(clocks)
            self.last_activity = self.cycle
        ctx.set(self.dev.uart_rx, 1)
        while self.cycle - self.last_activity < QUIET:
            assert self.cycle < MAX_CYCLES, "the appliance is still busy"
            await ctx.tick().repeat(BIT)


@functools.cache
def bench_of(core):
    return LineBench(core)


def run_line(segments, core):
    """Drive ``segments`` on ``uart_rx`` of a fresh appliance holding ``core()`` (one
    simulation per core, reset for each run), then wait until the line has been quiet for
    :data:`QUIET` clocks in both directions."""
    return bench_of(core).run(segments)


def replies_of(wire):
    assert wire.endswith(b"\x00") or not wire
    return [P.decode_frame(P.cobs_decode(f)) for f in wire.split(b"\x00")[:-1]]


def check(run, info):
    """The appliance answered exactly what the reference device answers for the bytes the
    engine took; returns the decoded replies."""
    want = P.DeviceModel(info).feed(run.engine_rx)
    assert run.replies.hex() == want.hex()
    return replies_of(run.replies)


STATS_A = P.encode_frame(P.Command.STATS, 0x1111)
STATS_B = P.encode_frame(P.Command.STATS, 0x2222)


def assert_stats_answered(reply, seq, info):
    """``reply`` is the answer to ``STATS`` number ``seq``: OK and no counters (a serial
    device without GCM or an entropy source)."""
    assert not info.entropy and P.Mode.GCM not in info.modes
    assert reply.seq == seq and reply.command == P.reply_opcode(P.Command.STATS)
    assert reply.payload[0] == P.Status.OK and P.parse_stats_reply(reply.payload) == []


# ---- (a) framing errors inside a frame -------------------------------------------------------

# STATS_A on the wire is 04 10 11 11 01 05 53 83 99 22 00: byte 0 is the COBS code byte of
# its first group, 1 the command, 2..3 the seq, 6..9 the CRC. The line goes low from the
# byte's highest set bit (clearing just that bit), or from its first data bit (all bits: a code
# byte then reads as 0x00, a delimiter in the middle of the frame).
# One character of each kind in the default run (a code byte pulled to a delimiter, a CRC
# byte damaged), every position under -m slow.
@pytest.mark.parametrize(("index", "damage"), [
    (0, "all_bits"), (9, "top_bit"),
    *(pytest.param(i, d, marks=pytest.mark.slow)
      for i, d in [(0, "top_bit"), (2, "top_bit"), (7, "all_bits")])])
def test_framing_error_with_damaged_data_refuses_the_frame(index, damage, core):
    """A character pulled low from a data bit through its stop bit: the appliance delivers it
    as a delimiter (not its damaged value), the truncated frame and the rest of it are refused,
    and the next request is answered."""
    byte = STATS_A[index]
    low_from = byte.bit_length() if damage == "top_bit" else 1
    corrupt = byte & ((1 << (low_from - 1)) - 1)
    assert corrupt != byte, "the damage must change the byte"
    segments = (idle(2 * BIT) + characters(STATS_A[:index]) + damaged(byte, low_from)
                + idle(BIT) + characters(STATS_A[index + 1:]) + idle(4 * BYTE)
                + characters(STATS_B))
    run, info = run_line(segments, core)
    # The damaged character becomes 0x00, nothing else is dropped or added.
    assert run.engine_rx == STATS_A[:index] + b"\x00" + STATS_A[index + 1:] + STATS_B
    replies = check(run, info)
    assert all(r.seq != 0x1111 or r.payload[0] != P.Status.OK for r in replies)
    assert_stats_answered(replies[-1], 0x2222, info)


def test_framing_error_in_stop_bit_only_refuses_the_frame(core):
    """Only the stop bit of one character is low; the line is high again a bit later. Its data
    bits are intact, so only the framing error can stop the frame: it is not executed."""
    index = 6
    segments = (idle(2 * BIT) + characters(STATS_A[:index]) + character(STATS_A[index], stop=0)
                + idle(BIT) + characters(STATS_A[index + 1:]) + idle(4 * BYTE)
                + characters(STATS_B))
    run, info = run_line(segments, core)
    assert run.engine_rx == STATS_A[:index] + b"\x00" + STATS_A[index + 1:] + STATS_B
    replies = check(run, info)
    assert_stats_answered(replies[-1], 0x2222, info)
    assert all(r.seq != 0x1111 or r.payload[0] != P.Status.OK for r in replies)


def test_framing_error_then_characters_back_to_back(core):
    """A low stop bit followed at once by the next character's start bit: the receiver waits
    for the line to go high and picks up the frame misaligned. Whatever it then delivers is
    answered as the reference device would, and after a quiet line and a delimiter the next
    request is answered."""
    index = 4
    segments = (idle(2 * BIT) + characters(STATS_A[:index]) + character(STATS_A[index], stop=0)
                + characters(STATS_A[index + 1:]) + idle(4 * BYTE)
                + characters(b"\x00" + STATS_B))
    run, info = run_line(segments, core)
    assert run.engine_rx.endswith(b"\x00" + STATS_B)
    assert run.engine_rx != STATS_A + b"\x00" + STATS_B
    replies = check(run, info)
    assert all(r.seq != 0x1111 or r.payload[0] != P.Status.OK for r in replies)
    assert_stats_answered(replies[-1], 0x2222, info)


# ---- (b) breaks ------------------------------------------------------------------------------

@pytest.mark.parametrize("break_bytes", [2, pytest.param(6, marks=pytest.mark.slow)])
def test_break_between_frames(break_bytes, core):
    """A break (line low for several character times) between two requests is delivered as
    one 0x00 (a frame delimiter): both requests are answered."""
    segments = (idle(2 * BIT) + characters(STATS_A) + idle(BYTE) + [(0, break_bytes * BYTE)]
                + idle(2 * BYTE) + characters(STATS_B))
    run, info = run_line(segments, core)
    assert run.engine_rx == STATS_A + b"\x00" + STATS_B
    replies = check(run, info)
    assert len(replies) == 2
    assert_stats_answered(replies[0], 0x1111, info)
    assert_stats_answered(replies[1], 0x2222, info)


def test_break_inside_a_frame(core):
    """A break in the middle of a request cuts it (the break's 0x00 ends it early, the rest
    is a frame of its own): neither part is answered with OK, the next request is."""
    cut = 5
    segments = (idle(2 * BIT) + characters(STATS_A[:cut]) + [(0, 4 * BYTE)] + idle(2 * BYTE)
                + characters(STATS_A[cut:]) + idle(2 * BYTE) + characters(STATS_B))
    run, info = run_line(segments, core)
    assert run.engine_rx == STATS_A[:cut] + b"\x00" + STATS_A[cut:] + STATS_B
    replies = check(run, info)
    assert [r.seq for r in replies] == [0x2222]
    assert_stats_answered(replies[0], 0x2222, info)


# ---- (c) glitches ----------------------------------------------------------------------------

@pytest.mark.parametrize("width", [pytest.param(1, marks=pytest.mark.slow), 2])
def test_glitches_on_the_idle_line(width, core):
    """Short low pulses on the idle line before, between and after requests deliver no byte:
    the receiver takes them for false start bits."""
    glitch = [(0, width), (1, 3 * BIT)]
    segments = (idle(2 * BIT) + glitch * 3 + characters(STATS_A) + idle(BIT) + glitch * 2
                + idle(BYTE) + characters(STATS_B) + glitch)
    run, info = run_line(segments, core)
    assert run.engine_rx == STATS_A + STATS_B
    replies = check(run, info)
    assert [r.seq for r in replies] == [0x1111, 0x2222]
    assert_stats_answered(replies[1], 0x2222, info)


def test_glitches_inside_characters(core):
    """A one-clock inversion in the middle of a data bit changes one of the receiver's three
    samples at most, so no bit: the request is answered as if the line were clean."""
    segments = idle(2 * BIT)
    for n, byte in enumerate(STATS_A):
        bits = character(byte)
        k = 1 + n % 8                              # a different data bit in each character
        level = bits[k][0]
        offset = 2 + n % 5                         # and a different clock of it
        bits[k:k + 1] = [(level, offset), (1 - level, 1), (level, BIT - offset - 1)]
        segments += bits
    run, info = run_line(segments, core)
    assert run.engine_rx == STATS_A
    replies = check(run, info)
    assert len(replies) == 1
    assert_stats_answered(replies[0], 0x1111, info)


# ---- the real core ---------------------------------------------------------------------------

@pytest.mark.slow
def test_real_core_on_a_damaged_line():
    """The appliance with the DRAB-LOCUS core (not :class:`IdleCore`) behind a line with a
    damaged character, a break and a glitch: the answers are the reference device's, and the
    request after them is answered. (``-m slow``: the requests never reach the core; by
    default the same damage, break and glitch are the IdleCore tests' above, and
    test_idle_core_has_the_real_interface shows the stand-in has the core's ports and INFO.)"""
    byte = STATS_A[2]
    segments = (idle(2 * BIT) + characters(STATS_A[:2]) + damaged(byte, byte.bit_length())
                + idle(BIT) + characters(STATS_A[3:]) + idle(BYTE) + [(0, 2 * BYTE)]
                + idle(2 * BYTE) + [(0, 1), (1, 3 * BIT)] + characters(STATS_B))
    run, info = run_line(segments, CORES["drab-locus"])
    assert run.engine_rx == STATS_A[:2] + b"\x00" + STATS_A[3:] + b"\x00" + STATS_B
    replies = check(run, info)
    assert all(r.seq != 0x1111 or r.payload[0] != P.Status.OK for r in replies)
    assert_stats_answered(replies[-1], 0x2222, info)
