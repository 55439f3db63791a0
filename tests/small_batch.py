"""One Yosys run for the small designs that test_stage.py and test_subbytes_accelerator.py
synthesize in the default run: Yosys's start-up costs more than synthesizing them."""

import json

from amaranth.hdl import Cat, Module
from amaranth.lib import stream, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out
from synth_batch import synthesize_batch

from aes_fpga.cores.subbytes_accelerator import SubBytesAccelerator
from aes_fpga.flow.timing import analyse_netlist
from aes_fpga.stage import PipeStage, SkidBuffer

__all__ = ["BothStages", "FifoThenStage", "small_batch"]


class FifoThenStage(wiring.Component):
    """A block-RAM FIFO read through ``stage`` (a stream stage class)."""

    def __init__(self, stage):
        self.stage = stage
        super().__init__({"i": In(stream.Signature(8)), "o": Out(stream.Signature(8))})

    def elaborate(self, platform):
        m = Module()
        m.submodules.fifo = fifo = SyncFIFOBuffered(width=8, depth=1024)
        m.submodules.stage = stage = self.stage(8)
        wiring.connect(m, wiring.flipped(self.i), fifo.w_stream)
        wiring.connect(m, fifo.r_stream, stage.i)
        wiring.connect(m, stage.o, wiring.flipped(self.o))
        return m


class BothStages(wiring.Component):
    """:class:`FifoThenStage` with each stage class side by side (``pipe``, ``skid``): one
    synthesis for both tests below."""

    def __init__(self):
        self.pipe, self.skid = FifoThenStage(PipeStage), FifoThenStage(SkidBuffer)
        super().__init__({"i": In(stream.Signature(8)), "o": Out(stream.Signature(16))})

    def elaborate(self, platform):
        m = Module()
        m.submodules.pipe, m.submodules.skid = self.pipe, self.skid
        for half in (self.pipe, self.skid):
            m.d.comb += [half.i.payload.eq(self.i.payload), half.i.valid.eq(self.i.valid),
                         half.o.ready.eq(self.o.ready)]
        m.d.comb += [self.i.ready.eq(self.pipe.i.ready & self.skid.i.ready),
                     self.o.valid.eq(self.pipe.o.valid & self.skid.o.valid),
                     self.o.payload.eq(Cat(self.pipe.o.payload, self.skid.o.payload))]
        return m


_made = {}


def small_batch(tmp_path_factory):
    """``{"subbytes_low_power": SynthResult, "both_stages": depth report}``: the low-power
    SubBytes accelerator (for its netlist simulation) and :class:`BothStages` (analysed by
    :func:`~aes_fpga.flow.timing.analyse_netlist`, every end point), synthesized together by
    :func:`synth_batch.synthesize_batch` once per test process."""
    if not _made:
        _made.update(_synthesize(tmp_path_factory))
    return _made


def _synthesize(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("small-batch")
    results = synthesize_batch({"subbytes_low_power": SubBytesAccelerator(low_power=True),
                                "both_stages": BothStages()}, workdir)
    netlist = json.loads((workdir / "netlist.json").read_text())
    return {"subbytes_low_power": results["subbytes_low_power"],
            "both_stages": analyse_netlist(netlist, top="both_stages", worst=1000)}
