# amaranth: UnusedElaboratable=no
"""Compiled (CXXRTL) and fallback (Amaranth) simulation of byte-stream devices."""

import pytest
from amaranth.hdl import Module
from amaranth.lib import fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from aes_fpga.cxxsim import find_cxx, open_device


class Incrementer(wiring.Component):
    """Each byte comes back plus one, through a small FIFO (so rx can be back-pressured)."""
    rx: In(stream.Signature(8))
    tx: Out(stream.Signature(8))

    def elaborate(self, platform):
        m = Module()
        m.submodules.q = q = fifo.SyncFIFOBuffered(width=8, depth=4)
        m.d.comb += [q.w_data.eq(self.rx.payload + 1), q.w_en.eq(self.rx.valid),
                     self.rx.ready.eq(q.w_rdy),
                     self.tx.payload.eq(q.r_data), self.tx.valid.eq(q.r_rdy),
                     q.r_en.eq(self.tx.ready)]
        return m


ENGINES = ["pysim", pytest.param("cxxrtl", marks=pytest.mark.skipif(
    find_cxx() is None, reason="no C++ compiler for the compiled simulator"))]


@pytest.mark.parametrize("engine", ENGINES)
def test_bytes_round_trip(engine, tmp_path, monkeypatch):
    monkeypatch.setenv("AES_FPGA_CACHE", str(tmp_path))
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
def test_frame_timing(engine, tmp_path, monkeypatch):
    """Frame starts into rx and delimiters out of tx are stamped with their clock cycle."""
    monkeypatch.setenv("AES_FPGA_CACHE", str(tmp_path))
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
