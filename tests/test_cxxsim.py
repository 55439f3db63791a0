# amaranth: UnusedElaboratable=no
"""Compiled (CXXRTL) and fallback (Amaranth) simulation of byte-stream devices."""

import time

import pytest
from amaranth.hdl import Module
from amaranth.lib import fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from aes_fpga.sim.cxxsim import cache_dir, cxx_flags, find_cxx, open_device
from aes_fpga.ticker import Ticker


class Incrementer(wiring.Component):
    """Each byte comes back plus one (plus ``config``, 0 unless set), through a small FIFO (so
    rx can be back-pressured)."""
    rx: In(stream.Signature(8))
    tx: Out(stream.Signature(8))
    config: In(2)

    def elaborate(self, platform):
        m = Module()
        m.submodules.q = q = fifo.SyncFIFOBuffered(width=8, depth=4)
        m.d.comb += [q.w_data.eq(self.rx.payload + 1 + self.config), q.w_en.eq(self.rx.valid),
                     self.rx.ready.eq(q.w_rdy),
                     self.tx.payload.eq(q.r_data), self.tx.valid.eq(q.r_rdy),
                     q.r_en.eq(self.tx.ready)]
        return m


needs_cxx = pytest.mark.skipif(find_cxx() is None,
                               reason="no C++ compiler for the compiled simulator")
ENGINES = ["pysim", pytest.param("cxxrtl", marks=needs_cxx)]


@pytest.fixture(scope="module")
def incrementer_cache(tmp_path_factory):
    """A simulator cache shared by the tests that only run the Incrementer (its simulator is
    compiled by the first of them); the tests of the cache itself use their own."""
    return tmp_path_factory.mktemp("cxxsim-cache")


@pytest.mark.parametrize("engine", ENGINES)
def test_bytes_round_trip(engine, incrementer_cache, monkeypatch):
    monkeypatch.setenv("AES_FPGA_CACHE", str(incrementer_cache))
    data = bytes(range(255)) * 4
    with open_device(Incrementer(), engine=engine, progress=lambda line: None) as link:
        assert link.engine == engine
        link.write(data)
        got = link.read(len(data), timeout=60)
        assert got == bytes((b + 1) & 0xFF for b in data)
        # an idle device answers the next request too
        link.write(b"\x41")
        assert link.read(1, timeout=30) == b"\x42"


def test_engine_name_checked():
    with pytest.raises(ValueError, match="engine: 'verilator'"):
        open_device(Incrementer(), engine="verilator")


@pytest.mark.parametrize("engine", ENGINES)
def test_config_input(engine, incrementer_cache, monkeypatch):
    """``config`` holds the device's config input for the run: one simulator, any setting;
    a value that does not fit, or a device without the input, is refused before it starts."""
    monkeypatch.setenv("AES_FPGA_CACHE", str(incrementer_cache))
    for config in (2, 0):
        with open_device(Incrementer(), engine=engine, config=config,
                         progress=lambda line: None) as link:
            link.write(b"\x10\x20")
            assert link.read(2, timeout=60) == bytes([0x11 + config, 0x21 + config])
    with pytest.raises(ValueError, match="config: 4 does not fit the device's 2-bit config"):
        open_device(Incrementer(), engine=engine, config=4)
    with pytest.raises(ValueError, match="config: -1 is not a non-negative integer"):
        open_device(Incrementer(), engine=engine, config=-1)

    class Plain(wiring.Component):
        rx: In(stream.Signature(8))
        tx: Out(stream.Signature(8))

        def elaborate(self, platform):
            return Module()

    with pytest.raises(ValueError, match="config: 1 given, but the device has no config"):
        open_device(Plain(), engine=engine, config=1)


@pytest.mark.parametrize("engine", ENGINES)
def test_frame_timing(engine, incrementer_cache, monkeypatch):
    """Frame starts into rx and delimiters out of tx are stamped with their clock cycle."""
    monkeypatch.setenv("AES_FPGA_CACHE", str(incrementer_cache))
    with open_device(Incrementer(), engine=engine, progress=lambda line: None) as link:
        link.write(b"\x10\x11\xff")               # one frame; 0xff comes back as 0x00
        assert link.read(3, timeout=60) == b"\x11\x12\x00"
        link.write(b"\x00\x00\x20\x21\xff")       # empty frames start nothing
        assert link.read(5, timeout=60) == b"\x01\x01\x21\x22\x00"
        assert link.timing is None
    timing = link.timing
    assert len(timing.starts) == 2 and len(timing.ends) == 2
    # Each frame's third byte leaves the same number of cycles after its first byte entered.
    first, second = (end - start for start, end in zip(timing.starts, timing.ends, strict=True))
    assert first == second and 2 <= first <= 8
    assert timing.starts[1] > timing.ends[0] and timing.cycles > timing.ends[1]


def test_cache_dir_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.delenv("AES_FPGA_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_dir() == tmp_path / "aes-fpga" / "cxxsim"
    monkeypatch.setenv("AES_FPGA_CACHE", str(tmp_path / "own"))
    assert cache_dir() == tmp_path / "own" / "cxxsim"


@needs_cxx
def test_named_simulator_starts_without_elaborating(tmp_path, monkeypatch):
    """With a cache key, a cached simulator is found without making the design at all; another
    key builds another simulator. A component whose simulator comes from the cache is never
    elaborated; that must not make Amaranth warn that it (or a component it holds) was created
    but never used (one compiled simulator serves both checks)."""
    import gc
    import warnings

    from aes_fpga.sim.cxxsim import mark_used

    monkeypatch.setenv("AES_FPGA_CACHE", str(tmp_path))
    made = []

    def make():
        made.append(1)
        return Incrementer()

    def refuse():
        raise AssertionError("the design was made although its simulator is cached")

    lines = []
    with open_device(make, engine="cxxrtl", cache_key="inc", progress=lines.append) as link:
        link.write(b"\x01")
        assert link.read(1, timeout=30) == b"\x02"
    assert made == [1] and any("once" in line for line in lines)
    lines.clear()
    with open_device(refuse, engine="cxxrtl", cache_key="inc", progress=lines.append) as link:
        link.write(b"\x07")
        assert link.read(1, timeout=30) == b"\x08"
    assert lines == []                   # a warm start says nothing
    with open_device(make, engine="cxxrtl", cache_key="inc2", progress=lines.append):
        pass
    assert made == [1, 1]
    assert len(list((tmp_path / "cxxsim").glob("*/sim"))) == 2

    class Holder(Incrementer):
        def __init__(self):
            self.inner = [Incrementer()]
            super().__init__()

    holder = Holder()
    mark_used(holder)
    assert holder._MustUse__used and holder.inner[0]._MustUse__used
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dut = Incrementer()
        with open_device(dut, engine="cxxrtl", cache_key="inc", progress=lambda line: None):
            pass
        assert dut._MustUse__used
        del dut
        gc.collect()


def test_ticker_never_silent_for_long():
    lines = []
    with Ticker(lambda line: lines.append((time.monotonic(), line)), "working", every=0.1):
        time.sleep(0.55)
    assert lines[0][1] == "working" and len(lines) >= 5
    gaps = [b[0] - a[0] for a, b in zip(lines, lines[1:], strict=False)]
    assert max(gaps) < 1.0 and lines[-1][1].endswith(" s")


@pytest.mark.parametrize("engine", ENGINES)
def test_drain_returns_everything(engine, incrementer_cache, monkeypatch):
    """drain() runs the device until it is quiet and hands over every byte not yet read."""
    monkeypatch.setenv("AES_FPGA_CACHE", str(incrementer_cache))
    data = bytes(range(200))
    link = open_device(Incrementer(), engine=engine, progress=lambda line: None)
    link.write(data)
    assert link.read(3, timeout=60) == b"\x01\x02\x03"
    rest = link.drain(timeout=60)
    assert rest == bytes(b + 1 for b in data[3:])
    assert link.timing is not None and link.timing.cycles >= len(data)


def _fake_compiler(folder, name, says):
    path = folder / name
    path.write_text(f"#!/bin/sh\necho '{says}'\n")
    path.chmod(0o755)
    return path


def test_compiler_choice(tmp_path, monkeypatch):
    """``$CXX`` first; else the newest Clang (CXXRTL's output compiles in half the time), a
    versioned ``clang++-N`` as Debian installs it included; else ``c++``/``g++``. Each gets
    its own optimisation level, chosen by what the compiler says it is."""
    gcc = _fake_compiler(tmp_path, "g++", "g++ (Debian 12.2.0) 12.2.0")
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CXX", raising=False)
    assert find_cxx() == str(gcc)
    assert "-O3" in cxx_flags(str(gcc))
    _fake_compiler(tmp_path, "clang++-9", "Debian clang version 9.0.1")
    clang = _fake_compiler(tmp_path, "clang++-14", "Debian clang version 14.0.6")
    _fake_compiler(tmp_path, "clang++-tidy", "not a compiler")
    assert find_cxx() == str(clang)
    assert "-O2" in cxx_flags(str(clang)) and "-O3" not in cxx_flags(str(clang))
    monkeypatch.setenv("CXX", "g++")
    assert find_cxx() == str(gcc)
