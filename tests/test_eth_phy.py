# amaranth: UnusedElaboratable=no
"""The PHY layers alone: MII nibbles and RMII dibits (100 and 10 Mbit/s) to and from byte
streams in the ``sync`` domain, through their clock domain crossings."""

import pytest
from amaranth.sim import Simulator
from eth_frames import datagram, frame_collector, on_wire

from aes_fpga.appliance.gateware.eth.phy import IFG_BYTES, MII, RMII

SYNC_PERIOD = 8e-9


def symbols(wire, bits):
    """``wire`` (bytes) as ``bits``-wide symbols, low bits first."""
    per = 8 // bits
    return [byte >> (bits * k) & ((1 << bits) - 1) for byte in wire for k in range(per)]


def run_phy(dut, pins, wires, sends, *, bits, repeat=1, half=10e-9, toggle_end=False):
    """Drive ``wires`` (frames as PHY bytes) into the receive pins (``pins``: the clocks,
    receive data, data valid, transmit data, transmit enable) and feed ``sends`` to ``tx``;
    return the frames from ``rx`` and the frames seen on the transmit pins with the idle symbol
    times between them."""
    clks, rxd, dv, txd, tx_en = pins
    script = []
    for wire in wires:
        syms = symbols(wire, bits)
        script += [(1, s) for s in syms]
        if toggle_end:
            # RMII: carrier lost before the last byte, crs_dv toggling at nibble boundaries.
            tail = script[-4:]
            script[-4:] = [(0, tail[0][1]), (1, tail[1][1]), (0, tail[2][1]), (1, tail[3][1])]
        script += [(0, 0)] * 30
    script = [step for step in script for _ in range(repeat)]
    received, sent, gaps = [], [], []
    expect_tx = sum(len(s) for s in sends) * 8 // bits * repeat

    async def pins_bench(ctx):
        frame, idle, seen = [], 0, 0
        cycle = 0
        while cycle < len(script) or seen < expect_tx or idle < 4 * repeat:
            on, sym = script[cycle] if cycle < len(script) else (0, 0)
            for clk in clks:
                ctx.set(clk, 0)
            ctx.set(dv, on)
            ctx.set(rxd, sym)
            await ctx.delay(half)
            en, out = ctx.get(tx_en), ctx.get(txd)
            for clk in clks:
                ctx.set(clk, 1)
            await ctx.delay(half)
            cycle += 1
            assert cycle < 50_000
            if en:
                if not frame and sent:
                    gaps.append(idle)
                frame.append(out)
                idle = 0
                seen += 1
            else:
                if frame:
                    syms = frame[::repeat]
                    per = 8 // bits
                    sent.append(bytes(sum(s << (bits * k) for k, s in enumerate(syms[n:n + per]))
                                      for n in range(0, len(syms), per)))
                    frame = []
                idle += 1

    rx_bench = frame_collector(dut.rx, received)

    async def tx_bench(ctx):
        for wire in sends:
            for n, byte in enumerate(wire):
                ctx.set(dut.tx.payload, {"data": byte, "last": n == len(wire) - 1})
                ctx.set(dut.tx.valid, 1)
                await ctx.tick().until(dut.tx.ready)
            ctx.set(dut.tx.valid, 0)

    sim = Simulator(dut)
    sim.add_clock(SYNC_PERIOD)
    sim.add_testbench(rx_bench, background=True)
    sim.add_testbench(tx_bench, background=True)
    sim.add_testbench(pins_bench)
    sim.run()
    return received, sent, gaps


FRAMES = [on_wire(datagram(b"a"), pad=False)[:24], on_wire(b"\x01\x02\x03\x04\x05", preamble=3)]


def sfd_on(wire):
    """What the PHY layer delivers of ``wire``: from the SFD on."""
    return wire[wire.index(0xD5):]


def test_mii():
    dut = MII()
    # rx_clk and tx_clk driven together here (two clock domains all the same).
    pins = ((dut.rx_clk, dut.tx_clk), dut.rxd, dut.rx_dv, dut.txd, dut.tx_en)
    received, sent, gaps = run_phy(dut, pins, FRAMES, FRAMES, bits=4, half=20e-9)
    assert received == [sfd_on(w) for w in FRAMES]
    assert sent == FRAMES
    assert min(gaps) >= 2 * IFG_BYTES


@pytest.mark.parametrize("speed", [100, pytest.param(10, marks=pytest.mark.slow)])
def test_rmii(speed):
    dut = RMII(speed=speed)
    pins = ((dut.ref_clk,), dut.rxd, dut.crs_dv, dut.txd, dut.tx_en)
    frames = FRAMES if speed == 100 else FRAMES[1:]
    received, sent, gaps = run_phy(dut, pins, frames, frames, bits=2, repeat=100 // speed,
                                   toggle_end=True)
    assert received == [sfd_on(w) for w in frames]
    assert sent == frames
    assert min(gaps, default=4 * IFG_BYTES * 100 // speed) >= 4 * IFG_BYTES * 100 // speed


def test_parameters_are_checked():
    with pytest.raises(ValueError, match="speed: 1000 .*allowed 10, 100"):
        RMII(speed=1000)
    with pytest.raises(ValueError, match="rx_domain: 'sync'"):
        MII(rx_domain="sync")
