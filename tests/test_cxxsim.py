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
