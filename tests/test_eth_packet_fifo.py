# amaranth: UnusedElaboratable=no
"""The Ethernet stack's packet buffer (:class:`~aes_fpga.appliance.gateware.eth.common.
PacketFIFO`) at its pointers' wrap: every packet comes out once, whole, and nothing else."""

import pytest
from amaranth.sim import Simulator

from aes_fpga.appliance.gateware.eth.common import PacketFIFO


@pytest.mark.parametrize("size", [8, 5])
def test_packets_come_out_once_across_the_pointers_wrap(size):
    """Packets of ``size`` bytes through a 16-byte buffer, each read before the next is
    written: with 8, the fourth ends exactly where the pointers (a wrap bit above the address)
    come back to 0, which is where a reader comparing a wider ``rp + 1`` with the commit
    pointer went on reading stale bytes as packets (a datagram delivered twice on the
    Ethernet appliance). Nothing but the packets written may come out."""
    dut = PacketFIFO(16)
    packets = [bytes((16 * n + k) & 0xFF for k in range(size)) for n in range(10)]
    got = []

    async def bench(ctx):
        ctx.set(dut.o.ready, 1)
        for packet in packets:
            for k, byte in enumerate(packet):
                ctx.set(dut.i.payload, {"data": byte, "last": k == len(packet) - 1})
                ctx.set(dut.i.valid, 1)
                await ctx.tick()
            ctx.set(dut.i.valid, 0)
            out = bytearray()
            # (Bounded: a packet's bytes, its latency, and as long again for stale ones.)
            for _ in range(2 * size + 8):
                *_, valid, beat = await ctx.tick().sample(dut.o.valid, dut.o.payload)
                if valid:
                    out.append(beat.data)
                    if beat.last:
                        got.append(bytes(out))
                        out = bytearray()
            assert not out, "bytes without a packet's end came out"

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert got == packets
