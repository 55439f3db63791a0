# amaranth: UnusedElaboratable=no
"""The entropy source in the self-test design (``aes-fpga build --design selftest --entropy``):
the verdict waits for the source's first word, a failing source or a repeated word fails it,
and the design table and the build make it with the option."""

import pytest
from amaranth.hdl import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import Out
from amaranth.sim import Simulator

from aes_fpga.cores import DrabLocus
from aes_fpga.designs import SelfTest
from aes_fpga.entropy import EntropySource, EntropyState
from aes_fpga.primitives import NoiseModel

PORTS = ("passed", "failed", "busy", "entropy_ok", "rounds")
WORD = 0x0123456789ABCDEF_FEDCBA9876543210


class WordSource(wiring.Component):
    """A stand-in for an entropy source: always ``OK``, offering ``words`` in turn, one every
    ``gap`` cycles, each taken at once (the self-test's ``ready`` is high)."""

    def __init__(self, words, gap=40):
        self.words = words
        self.gap = gap
        super().__init__({"o": Out(stream.Signature(128)), "state": Out(EntropyState)})

    def elaborate(self, platform):
        m = Module()
        timer = Signal(range(self.gap))
        index = Signal(range(len(self.words) + 1))
        m.d.comb += self.state.eq(EntropyState.OK)
        m.d.sync += timer.eq(timer + 1)
        with m.If(timer == self.gap - 1):
            m.d.sync += timer.eq(0)
            with m.If(index != len(self.words)):
                m.d.comb += self.o.valid.eq(1)
                m.d.sync += index.eq(index + 1)
        with m.Switch(index):
            for n, word in enumerate(self.words):
                with m.Case(n):
                    m.d.comb += self.o.payload.eq(word)
        return m


def simulate(dut, cycles, *, stop=None):
    """Per cycle the ports of ``dut`` and whether its source's ``o`` offered a word; the run
    ends after ``cycles`` or at the first cycle where ``stop(row)`` holds."""
    trace = []

    async def bench(ctx):
        for _ in range(cycles):
            row = {p: ctx.get(getattr(dut, p)) for p in PORTS}
            row["word"] = ctx.get(dut.entropy.o.valid)
            row["state"] = ctx.get(dut.entropy.state)
            trace.append(row)
            if stop is not None and stop(row):
                break
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return trace


def first(trace, port):
    return next(c for c, row in enumerate(trace) if row[port])


def selftest(entropy):
    return SelfTest(DrabLocus(key_sizes=(128,)), entropy=entropy, heartbeat_cycles=100)


def check_waits_for_first_word(trace):
    word = first(trace, "word")
    assert first(trace, "rounds") < word
    assert first(trace, "passed") == first(trace, "entropy_ok") == word + 1
    assert all(row["busy"] and not row["failed"] for row in trace[:word + 1])


def test_verdict_waits_for_the_first_word():
    """A source whose first word comes after the known answers have passed (483 cycles):
    ``passed`` and ``entropy_ok`` come the cycle after that word, ``busy`` until then."""
    dut = selftest(WordSource([WORD], gap=600))
    check_waits_for_first_word(simulate(dut, 700, stop=lambda row: row["passed"]))


@pytest.mark.slow
def test_healthy_source_passes():
    """The real source (healthy model): the known answers pass long before its start-up
    (1024 samples) and first word; the verdict waits for that word, ``failed`` never."""
    dut = selftest(EntropySource(min_entropy=1))      # (2 blocks a word: a shorter run)
    check_waits_for_first_word(simulate(dut, 2400, stop=lambda row: row["passed"]))


def test_failing_source_fails_the_selftest():
    """A stuck source: its repetition count test fails at its cutoff, and the self-test's
    ``failed`` latches the cycle after the source's state shows it; nothing ever passes."""
    dut = selftest(EntropySource(model=NoiseModel("stuck", value=1)))
    trace = simulate(dut, 300)
    source_failed = next(c for c, row in enumerate(trace) if row["state"] == EntropyState.FAILED)
    assert source_failed < 100 and first(trace, "failed") == source_failed + 1
    assert not any(row["passed"] or row["entropy_ok"] for row in trace)
    assert all(row["failed"] and not row["busy"] for row in trace[first(trace, "failed"):])


@pytest.mark.parametrize("words,fails", [
    # Only consecutive words are compared, on all 128 bits: a word one bit off the one before
    # it (bit 0, bit 127) passes, and so does one equal to the word before that.
    ([WORD, WORD ^ 1, WORD, WORD ^ 1 << 127], False),
    ([WORD, WORD ^ 1 << 64, WORD ^ 1 << 64], True)])
def test_a_repeated_word_fails_the_selftest(words, fails):
    """A word equal to the one before it fails two cycles after it is taken."""
    dut = selftest(WordSource(words))
    # (the verdict comes after the known answers, 483 cycles, long after the last word)
    trace = simulate(dut, 40 * len(words) + 600, stop=lambda row: row["failed"] or row["passed"])
    offered = [c for c, row in enumerate(trace) if row["word"]]
    assert len(offered) == len(words)
    if fails:
        assert first(trace, "failed") == offered[-1] + 2
        assert not any(row["passed"] for row in trace)
    else:
        assert trace[-1]["passed"] and not any(row["failed"] for row in trace)


def test_entropy_argument_checked():
    with pytest.raises(TypeError, match="entropy: .* not an entropy source"):
        SelfTest(DrabLocus(key_sizes=(128,)), entropy=DrabLocus(key_sizes=(128,)))
    assert "entropy_ok" not in SelfTest(DrabLocus(key_sizes=(128,))).signature.members


def test_design_table_and_build_make_it():
    """``--entropy`` reaches the self-test through the design table (the factory that
    ``aes-fpga build`` uses, and ``synth``'s out-of-context design), with the source's own
    report group; ``--entropy-raw`` is refused for it (no command reads the self-test)."""
    from aes_fpga.designs.table import DESIGN_TABLE, DesignOptions, make_selftest
    from aes_fpga.flow.synth import component_paths
    from aes_fpga.sim.cxxsim import mark_used

    top = make_selftest(DrabLocus(key_sizes=(128,)), 100.0, 3_000_000, False, entropy=True)
    assert isinstance(top.entropy, EntropySource)
    mark_used(top)                  # (made to be read, not elaborated)
    entry = DESIGN_TABLE["selftest"]
    top = entry.make(DrabLocus(key_sizes=(128,)), DesignOptions(entropy=True))
    groups = entry.resource_groups(top, lambda: component_paths(top))
    assert sorted(groups.values()) == ["core", "entropy source", "self-test (checker, LEDs)"]
    plain = entry.make(DrabLocus(key_sizes=(128,)), DesignOptions())
    mark_used(plain)
    assert plain.entropy is None
