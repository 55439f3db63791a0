"""A simulated appliance that the host meets after its entropy source's start-up.

A board is configured long before a host talks to it: its entropy source has finished its
start-up (1024 samples, about 10 µs) by then. A simulation starts from reset the moment the
host connects, so a host that asks for ``RANDOM`` at once would meet the start-up, or not,
depending on how fast the host turns a reply round. :class:`StartupHold` makes that the same in
every run: it holds the device's byte stream until the source has left its start-up.
"""

from amaranth.hdl import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..entropy import EntropyState

__all__ = ["StartupHold"]


class StartupHold(wiring.Component):
    """``device`` (a byte-stream device with an entropy source: ``rx``, ``tx``, ``entropy``
    and ``info``, such as a :class:`~aes_fpga.appliance.ProtocolEngine` built with one), its
    ``rx`` held (``ready`` low) until the source has left ``STARTUP`` (for ``OK`` or
    ``FAILED``), from then on passed through unchanged. ``tx`` is the device's, unchanged.

    Latency: none once the start-up is over (the cycle after the source's ``state`` changes);
    the first byte waits for it (1027 cycles at the source's defaults). ``info`` is the
    device's (what the host side reads of it).
    """

    def __init__(self, device):
        self.device = device
        self.info = device.info
        super().__init__({"rx": In(stream.Signature(8)), "tx": Out(stream.Signature(8))})

    def elaborate(self, platform):
        m = Module()
        m.submodules.device = device = self.device
        started = Signal()
        with m.If(device.entropy.state != EntropyState.STARTUP):
            m.d.sync += started.eq(1)
        m.d.comb += [device.rx.payload.eq(self.rx.payload),
                     device.rx.valid.eq(self.rx.valid & started),
                     self.rx.ready.eq(device.rx.ready & started)]
        wiring.connect(m, device.tx, wiring.flipped(self.tx))
        return m
