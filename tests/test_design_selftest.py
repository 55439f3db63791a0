# amaranth: UnusedElaboratable=no
"""The self-test design: passes on a good core, fails visibly on a wrong or dead one, never
hangs, and takes the documented number of cycles per round."""

import re

import pytest
from amaranth.back import rtlil
from amaranth.hdl import Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from aes_fpga import model
from aes_fpga.cores import DrabLocus, DrabLocusDatapath
from aes_fpga.cores.drab_locus import key_load_cycles, latency
from aes_fpga.cores.interface import key_layout, request_layout, response_layout
from aes_fpga.designs import KNOWN_ANSWERS, SelfTest
from aes_fpga.hw import Heartbeat

PORTS = ("passed", "failed", "busy", "heartbeat", "rounds")


def simulate(dut, cycles):
    """Run ``dut`` from reset for exactly ``cycles`` cycles (so no wait can hang); per cycle, a
    dict of its ports and of the core's stream handshakes, sampled before the edge ending it."""
    core = dut.core
    streams = {"key": core.key, "i": core.i, "o": core.o}
    trace = []

    async def tb(ctx):
        for _ in range(cycles):
            row = {p: ctx.get(getattr(dut, p)) for p in PORTS}
            for name, s in streams.items():
                row[name] = (ctx.get(s.valid), ctx.get(s.ready), ctx.get(s.payload.as_value()))
            trace.append(row)
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(tb)
    sim.run()
    return trace


def changes(trace, port):
    """Cycles at which ``port`` differs from the cycle before."""
    return [c for c in range(1, len(trace)) if trace[c][port] != trace[c - 1][port]]


def vector_cycles(bits):
    """One vector on DrabLocus, derived from the core's documented timing: the key is offered
    at cycle k; the schedule's last rk write is at k + key_load_cycles - 1, so the slot unlocks
    and the ENCRYPT is accepted at k + key_load_cycles; the DECRYPT one cycle later; its result
    is seen latency(Nr) cycles after that, and the next key is offered the cycle after."""
    return key_load_cycles(bits) + 1 + latency(model.num_rounds(bits)) + 1


class WrongCore(wiring.Component):
    """DrabLocus(key_sizes=(128,)) with the last bit of every result flipped."""

    def __init__(self):
        self.inner = DrabLocus(key_sizes=(128,))
        self.key_sizes = self.inner.key_sizes
        super().__init__({n: self.inner.signature.members[n] for n in ("key", "i", "o")})

    def elaborate(self, platform):
        m = Module()
        m.submodules.inner = inner = self.inner
        wiring.connect(m, wiring.flipped(self.key), inner.key)
        wiring.connect(m, wiring.flipped(self.i), inner.i)
        wiring.connect(m, inner.o, wiring.flipped(self.o))
        m.d.comb += self.o.payload.block.eq(inner.o.payload.block ^ 1)   # after connect: wins
        return m


class DeadCore(wiring.Component):
    """The core interface and nothing behind it: ``mute`` takes every key and request and never
    answers; ``stuck`` takes keys but no request; ``deaf`` takes nothing."""

    key_sizes = (128,)

    def __init__(self, mode):
        self.mode = mode
        super().__init__({"key": In(stream.Signature(key_layout(1))),
                          "i": In(stream.Signature(request_layout(1, 8))),
                          "o": Out(stream.Signature(response_layout(8)))})

    def elaborate(self, platform):
        m = Module()
        m.d.comb += [self.key.ready.eq(self.mode in ("mute", "stuck")),
                     self.i.ready.eq(self.mode == "mute")]
        return m


def test_known_answers_are_fips197_and_agree_with_model():
    """The table is the standard's (keys 000102.., one plaintext), and the model, itself checked
    against OpenSSL, gives the same answers: a typo in the table cannot pass silently. The
    design checks exactly this table."""
    assert KNOWN_ANSWERS is model.FIPS197_EXAMPLES
    assert sorted(KNOWN_ANSWERS) == list(model.KEY_SIZES)
    for bits, (key, pt, ct) in KNOWN_ANSWERS.items():
        assert key == bytes(range(bits // 8))
        assert pt == bytes.fromhex("00112233445566778899aabbccddeeff")
        assert model.encrypt_block(key, pt) == ct
        assert model.decrypt_block(key, ct) == pt


@pytest.mark.parametrize(("key_sizes", "round_cycles", "rounds"),
                         [((128,), 504, 2), ((128, 192, 256), 1785, 1)], ids=["aes128", "all"])
def test_passes_and_round_length(key_sizes, round_cycles, rounds):
    """A good core passes; rounds are exactly as long as the docstring says (derived from the
    core's key-load and latency figures, and pinned as numbers, which the docstring quotes).
    Every key length's round once; two rounds of AES-128's (the loop starting again, the
    same logic whatever the key lengths)."""
    assert round_cycles == sum(vector_cycles(b) for b in key_sizes)
    hb = 97
    dut = SelfTest(DrabLocus(key_sizes=key_sizes), heartbeat_cycles=hb)
    assert dut.key_sizes == key_sizes   # from the core's key_sizes
    cycles = rounds * round_cycles + 2
    trace = simulate(dut, cycles)

    # The loop starts at reset: every round, the first one too, takes round_cycles.
    ends = [k * round_cycles for k in range(1, rounds + 1)]
    assert changes(trace, "rounds") == ends
    assert [trace[c]["rounds"] for c in ends] == list(range(1, rounds + 1))
    # Verdict: busy until the first round is complete, passed from then on, never failed.
    assert all(r["failed"] == 0 for r in trace)
    assert [r["busy"] for r in trace] == [1] * round_cycles + [0] * (cycles - round_cycles)
    assert [r["passed"] for r in trace] == [0] * round_cycles + [1] * (cycles - round_cycles)
    assert trace[-1]["rounds"] == rounds
    assert changes(trace, "heartbeat") == list(range(hb, cycles, hb))

    # Stream rules as a source: an offer is held, unchanged, until taken; o is never stalled.
    for name in ("key", "i"):
        for now, nxt in zip(trace[:-1], trace[1:], strict=True):
            valid, ready, payload = now[name]
            if valid and not ready:
                assert nxt[name][0] == 1 and nxt[name][2] == payload
    assert all(r["o"][1] == 1 for r in trace)
    # Per vector and round: one key, two requests, two results.
    assert sum(r["key"][0] & r["key"][1] for r in trace) == rounds * len(key_sizes)
    assert sum(r["i"][0] & r["i"][1] for r in trace) == 2 * rounds * len(key_sizes)
    assert sum(r["o"][0] for r in trace) == 2 * rounds * len(key_sizes)


def test_one_bit_tag_core_passes():
    """With a 1-bit tag there is no room for the vector number; the op bit alone still does
    (one round: test_passes_and_round_length shows the loop going on)."""
    trace = simulate(SelfTest(DrabLocus(key_sizes=(128,), tag_width=1), heartbeat_cycles=10),
                     504 + 2)
    assert changes(trace, "rounds") == [504]
    assert trace[-1]["passed"] == 1 and not any(r["failed"] for r in trace)


def test_corrupt_switch_fails():
    """``corrupt`` flips the expected ENCRYPT answer of the first key length: the first result
    (the ENCRYPT, seen at key_load_cycles + latency) latches ``failed``; the round goes on
    (and the loop after it: test_wrong_results_fail)."""
    dut = SelfTest(DrabLocus(key_sizes=(128,)), heartbeat_cycles=10, corrupt=True)
    trace = simulate(dut, 504 + 2)
    first_result = key_load_cycles(128) + latency(10)
    assert [c for c, r in enumerate(trace) if r["o"][0]][0] == first_result
    assert changes(trace, "failed") == [first_result + 1]
    assert trace[-1]["failed"] == 1
    assert all(r["passed"] == 0 for r in trace)
    assert trace[-1]["busy"] == 0
    assert changes(trace, "rounds") == [504]   # a failure does not slow the round


def test_wrong_results_fail():
    """A core whose every result is wrong (but on time) fails on its first result."""
    dut = SelfTest(WrongCore(), heartbeat_cycles=10)
    trace = simulate(dut, 2 * 504 + 2)
    assert changes(trace, "failed") == [key_load_cycles(128) + latency(10) + 1]
    assert all(r["passed"] == 0 for r in trace)
    assert trace[-1]["rounds"] == 2


@pytest.mark.parametrize("mode", ["mute", "stuck", "deaf"])
def test_dead_core_times_out_and_loop_goes_on(mode):
    """A core that never answers (or never takes a request, or a key) fails by timeout; each
    vector is abandoned after timeout_cycles, and the loop keeps counting rounds."""
    timeout = 40
    dut = SelfTest(DeadCore(mode), heartbeat_cycles=10, timeout_cycles=timeout)
    trace = simulate(dut, 5 * timeout + 1)
    assert changes(trace, "failed") == [timeout]
    assert all(r["passed"] == 0 for r in trace)
    assert changes(trace, "rounds") == [timeout * k for k in range(1, 6)]
    first = trace[:timeout]   # the first vector
    taken = {name: sum(r[name][0] & r[name][1] for r in first) for name in ("key", "i")}
    offered = {name: [c for c, r in enumerate(first) if r[name][0]] for name in ("key", "i")}
    if mode == "mute":
        # Key and both requests taken at once, then nothing offered while results are awaited.
        assert taken == {"key": 1, "i": 2}
        assert offered == {"key": [0], "i": [1, 2]}
    elif mode == "stuck":
        # The ENCRYPT is offered until the timeout, then withdrawn for the next vector's key.
        assert taken == {"key": 1, "i": 0}
        assert offered == {"key": [0], "i": list(range(1, timeout))}
        assert trace[timeout]["i"][0] == 0 and trace[timeout]["key"][0] == 1
    else:
        assert taken == {"key": 0, "i": 0}
        assert offered == {"key": list(range(timeout)), "i": []}


def test_factory_and_rtlil():
    """A factory (the class) is called; the design converts for synthesis with no platform and
    has the five LED ports besides the board's clock and reset."""
    dut = SelfTest(DrabLocus)
    assert isinstance(dut.core, DrabLocus) and dut.key_sizes == (128, 192, 256)
    text = rtlil.convert(dut)
    top = text[text.index("module \\top\n"):]
    top = top[:top.index("\nend\n")]
    ports = re.findall(r"^  wire width (\d+) (?:input|output) \d+ +\\(\w+)$", top, re.M)
    assert sorted(ports) == sorted([("1", "clk"), ("1", "rst"), ("1", "passed"), ("1", "failed"),
                                    ("1", "heartbeat"), ("16", "rounds"), ("1", "busy")])


def test_arguments():
    assert SelfTest(DrabLocus(), key_sizes=[256, 128]).key_sizes == (128, 256)
    with pytest.raises(TypeError, match="key, i and o"):
        SelfTest(DrabLocusDatapath())   # round keys through rk, no key stream
    with pytest.raises(ValueError, match="does not support"):
        SelfTest(DrabLocus(key_sizes=(128,)), key_sizes=(192,))
    with pytest.raises(ValueError, match="key_sizes"):
        SelfTest(DrabLocus(), key_sizes=(64,))
    with pytest.raises(ValueError, match="tag"):
        SelfTest(DrabLocus(tag_width=0))
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="heartbeat_cycles"):
            SelfTest(DrabLocus(), heartbeat_cycles=bad)
        with pytest.raises(ValueError, match="timeout_cycles"):
            SelfTest(DrabLocus(), timeout_cycles=bad)


def test_corrupt_changes_one_expected_bit_only():
    good, bad = SelfTest(DrabLocus()).vectors(), SelfTest(DrabLocus(), corrupt=True).vectors()
    diff = [(n, f, a ^ b) for n, (g, c) in enumerate(zip(good, bad, strict=True))
            for f, (a, b) in enumerate(zip(g, c, strict=True)) if a != b]
    assert diff == [(0, 3, 1)]   # vector 0 (AES-128), expected ENCRYPT result, bit 0


@pytest.mark.parametrize(("cycles", "expected"), [(1, "0101010101"), (3, "0001110001")])
def test_heartbeat(cycles, expected):
    """The heartbeat the self-test (and the UART appliance) shows: low after reset, toggling
    every ``cycles`` cycles; sampled once per cycle."""
    dut = Heartbeat(cycles)
    seen = []

    async def tb(ctx):
        for _ in range(len(expected)):
            seen.append(str(ctx.get(dut.o)))
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(tb)
    sim.run()
    assert "".join(seen) == expected
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="cycles: "):
            Heartbeat(bad)
