"""The library stream driver and benchmark: cycle semantics, key loads, verification, bounds."""

from contextlib import contextmanager
from types import SimpleNamespace

import pytest
from amaranth.hdl import Fragment, Module, Signal
from amaranth.lib import fifo, stream, wiring
from amaranth.lib.wiring import In, Out
from shared_dut import shared

from aes_fpga import model
from aes_fpga.cores.drab_locus import DrabLocusDatapath
from aes_fpga.cores.interface import key_layout, request_layout, response_layout
from aes_fpga.sim import rerun, traffic
from aes_fpga.sim.traffic import WrongResult, bench, run_core, run_streams

RING = 12  # DRAB-LOCUS ring slots: 12 blocks in flight, each holds its slot for RING * Nr cycles


class XorCore(wiring.Component):
    """Not AES: the smallest core with the common interface, for testing the driver itself.

    ``o.block`` is ``i.block`` XOR (the top 128 bits of the last key XOR its ``key_bits``), one
    cycle after acceptance, so a result shows both that the key payload arrived whole and when.
    ``stall`` makes it refuse every request, to show that nothing waits for it forever.
    """

    def __init__(self, *, key_stream=True, stall=False):
        self.stall = stall
        members = {"i": In(stream.Signature(request_layout(1, 8))),
                   "o": Out(stream.Signature(response_layout(8)))}
        if key_stream:
            members["key"] = In(stream.Signature(key_layout(1)))
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        k = Signal(128)
        if hasattr(self, "key"):
            m.d.comb += self.key.ready.eq(1)
            with m.If(self.key.valid):
                m.d.sync += k.eq(self.key.payload.key[128:]
                                 ^ self.key.payload.key_bits)
        if not self.stall:
            m.d.comb += self.i.ready.eq(~self.o.valid | self.o.ready)
        with m.If(self.i.ready):
            m.d.sync += [self.o.valid.eq(self.i.valid),
                         self.o.payload.block.eq(self.i.payload.block ^ k),
                         self.o.payload.tag.eq(self.i.payload.tag)]
        return m


class CorruptOne(wiring.Component):
    """Wraps a core and flips bit 0 of the result whose tag is ``tag``: a real hardware fault in
    one block among many, which the benchmark must catch."""

    def __init__(self, inner, tag):
        self.inner, self.tag = inner, tag
        super().__init__(inner.signature)

    def elaborate(self, platform):
        m = Module()
        m.submodules.inner = inner = self.inner
        # Pass every port through (the streams and any plain control inputs the core has).
        for name, member in inner.signature.members.items():
            outer, core = getattr(self, name), getattr(inner, name)
            src, dst = (outer, core) if member.flow == In else (core, outer)
            if member.is_port:
                m.d.comb += dst.eq(src)
            else:
                m.d.comb += [dst.payload.eq(src.payload), dst.valid.eq(src.valid),
                             src.ready.eq(dst.ready)]
        with m.If(inner.o.payload.tag == self.tag):
            m.d.comb += self.o.payload.block[0].eq(~inner.o.payload.block[0])
        return m


def saturated_cycles(blocks, nr, latency):
    """``cycles`` as :func:`bench` defines it, from the DRAB-LOCUS architecture: requests enter
    RING at a time on consecutive cycles, the next RING one slot period (RING * Nr) later, and
    the count runs from the first accept to the last result inclusive."""
    last = blocks - 1
    last_accept = (last // RING) * RING * nr + last % RING
    return last_accept + latency + 1


@pytest.mark.parametrize(("nbytes", "latency"), [(16, 115), (24, 139), (32, 163)],
                         ids=["128", "192", "256"])
def test_bench_drab_locus(nbytes, latency):
    blocks = 36 if nbytes == 16 else 24
    r = bench(shared(DrabLocusDatapath), key_bytes=nbytes, blocks=blocks)
    nr = model.num_rounds(8 * nbytes)
    assert r["verified"] is True
    assert (r["latency_cycles"], r["latency_min"], r["latency_max"]) == (latency,) * 3
    assert (r["blocks"], r["key_bits"], r["op_pattern"]) == (blocks, 8 * nbytes, "alternate")
    assert r["cycles"] == saturated_cycles(blocks, nr, latency)
    assert r["cycles"] == r["last_result"] - r["first_accept"] + 1
    assert r["blocks_per_cycle"] == blocks / saturated_cycles(blocks, nr, latency)
    if nbytes == 16:
        assert r["cycles"] == 367   # 3 ring periods of 120, less the last 120 - 12, + 115
        # fill and drain cost 7 cycles in 367: close to the steady 12 per 120
        assert r["blocks_per_cycle"] == pytest.approx(RING / (RING * nr), rel=0.02)


def test_bench_wrapping_tags_bytes_key_random_ops():
    """A 2-bit tag wraps every 4 blocks, with 12 in flight; one key length keeps results in
    order, so each is still matched to its own request."""
    key = bytes(range(24))
    r = bench(DrabLocusDatapath(tag_width=2), key_bytes=key, blocks=30, op_pattern="random",
              seed=7, load="rk")
    assert (r["verified"], r["latency_cycles"], r["load"]) == (True, 139, "rk")


def test_bench_fails_loudly_on_one_wrong_block():
    with pytest.raises(WrongResult, match=r"request 5 \(decrypt .*result at cycle \d+ is"):
        bench(CorruptOne(DrabLocusDatapath(), tag=5), key_bytes=16, blocks=12)


def test_bench_fails_on_a_core_that_is_not_aes():
    with pytest.raises(WrongResult, match=r"request 0 \(encrypt .*the model says"):
        bench(XorCore(), key_bytes=16, blocks=4)


def test_run_core_key_item_goes_on_the_key_stream():
    key = int.from_bytes(bytes(range(32)), "big")
    reqs = [{"block": 0x1234, "op": 0, "slot": 0, "tag": 7},
            {"block": 0x5678, "op": 1, "slot": 0, "tag": 8}]
    acc, res = run_core(XorCore(), requests=[{"key": {"key": key, "key_bits": 2, "slot": 0}}]
                        + reqs)
    k = (key >> 128) ^ 2
    # key taken at cycle 0; requests at 1 and 2; results one cycle after each
    assert acc == [(1, reqs[0]), (2, reqs[1])]
    assert res == [(2, 0x1234 ^ k, 7), (3, 0x5678 ^ k, 8)]


@pytest.mark.parametrize("nbytes", [16, 24, 32])
def test_bench_loads_key_through_key_stream(nbytes, monkeypatch):
    """With a ``key`` stream bench picks load="key" and sends the key MSB-aligned with its
    key_bits: checked by giving bench the fake core's own function as the model."""
    def xor_model(key, block):
        return block ^ (int.from_bytes(key.ljust(32, b"\0"), "big") >> 128) ^ (nbytes - 16) // 8

    monkeypatch.setattr(traffic, "model", SimpleNamespace(encrypt_block=xor_model,
                                                          decrypt_block=xor_model))
    r = bench(XorCore(), key_bytes=nbytes, blocks=5, seed=nbytes)
    assert (r["load"], r["verified"], r["latency_cycles"], r["cycles"]) == ("key", True, 1, 6)


@contextmanager
def refused(dut):
    """A dut the code under test refuses before simulating it: elaborated afterwards, because
    Amaranth warns about a design that is never used and the suite makes warnings errors."""
    try:
        yield dut
    finally:
        Fragment.get(dut, None)


def test_key_loads_need_the_stream():
    with (refused(XorCore(key_stream=False)) as dut,
          pytest.raises(ValueError, match="'key' items need a core with a 'key' stream")):
        run_core(dut, requests=[{"key": {"key": 0, "key_bits": 0, "slot": 0}}])
    with (refused(XorCore()) as dut,
          pytest.raises(ValueError, match="load: 'rk' needs a core with a 'rk' stream")):
        bench(dut, key_bytes=16, blocks=1, load="rk")
    with (refused(XorCore(key_stream=False)) as dut,
          pytest.raises(ValueError, match="load: 'key' needs a core with a 'key' stream")):
        bench(dut, key_bytes=16, blocks=1, load="key")


@pytest.mark.parametrize("bad", [{"blocks": 0}, {"key_bytes": 20}, {"op_pattern": "zigzag"}])
def test_bench_argument_errors(bad):
    name = next(iter(bad))
    with refused(XorCore()) as dut, pytest.raises(ValueError, match=f"^{name}: "):
        bench(dut, **{"key_bytes": 16, "blocks": 1, **bad})


def test_nothing_waits_forever_for_a_stalled_core():
    acc, res = run_core(XorCore(stall=True), requests=[{"block": 1, "op": 0, "slot": 0,
                                                        "tag": 0}], max_cycles=50)
    assert (acc, res) == ([], [])
    with pytest.raises(RuntimeError, match="max_cycles=60: 0 of 3 requests accepted"):
        bench(XorCore(stall=True), key_bytes=16, blocks=3, max_cycles=60)


FIFO_OFFERS = [("w_stream", 0x11), ("w_stream", 0x22), ("w_stream", 0x33, 3),
               ("w_stream", 0x44), ("w_stream", 0x55)]


def test_run_streams_any_component_waits_and_back_pressure():
    """A FIFO of depth 2 (one entry and the output register) with other stream names: it takes
    at 0 and 2, the third offer (after 3 idle cycles) waits for room until the reader, ready on
    even cycles from 10, takes its first byte; every byte comes out once, in order, on a cycle
    the reader was ready."""
    taken, out = run_streams(fifo.SyncFIFOBuffered(width=8, depth=2), FIFO_OFFERS, count=5,
                             output="r_stream", o_ready=lambda c: c >= 10 and c % 2 == 0)
    assert taken == [0, 2, 11, 13, 15]
    assert out == [(10, 0x11), (12, 0x22), (14, 0x33), (16, 0x44), (18, 0x55)]


def test_run_streams_stops_at_max_cycles():
    taken, out = run_streams(fifo.SyncFIFOBuffered(width=8, depth=2), FIFO_OFFERS, count=5,
                             output="r_stream", o_ready=lambda c: False, max_cycles=40)
    assert (taken, out) == ([0, 2], [])


def test_run_streams_needs_the_named_streams():
    with (refused(fifo.SyncFIFOBuffered(width=8, depth=2)) as dut,
          pytest.raises(ValueError, match="SyncFIFOBuffered has no stream 'o'")):
        run_streams(dut, FIFO_OFFERS, count=1)
    with (refused(fifo.SyncFIFOBuffered(width=8, depth=2)) as dut,
          pytest.raises(ValueError, match="SyncFIFOBuffered has no stream 'i'")):
        run_streams(dut, [("i", 1)], count=1, output="r_stream")


def test_a_component_simulated_again_starts_from_its_initial_state(monkeypatch):
    """A core driven a second time is reset, not built again, and answers as a fresh one: the
    key the first run loaded is gone (its slot reads the all-zero key again), the cycles are
    the same."""
    from aes_fpga.cores import make_core
    key = bytes(range(16))
    block = {"block": model.to_int(model.FIPS197_EXAMPLES[128][1]), "op": 0, "slot": 0,
             "tag": 1}
    load = {"key": {"key": int.from_bytes(key, "big") << 128, "key_bits": 0, "slot": 0}}
    core = make_core("drab-locus", key_sizes=(128,))
    _, first = run_core(core, requests=[load, block])
    assert first[0][1] == model.encrypt_block(key, block["block"])
    built = []
    monkeypatch.setattr(rerun, "Simulator", lambda dut: built.append(dut))
    again = run_core(core, requests=[block])
    assert built == []
    monkeypatch.undo()
    fresh = run_core(make_core("drab-locus", key_sizes=(128,)), requests=[block])
    assert again == fresh
    assert again[1][0][1] == model.encrypt_block(bytes(16), block["block"]) != first[0][1]
