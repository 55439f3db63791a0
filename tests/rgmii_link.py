"""A simulated RGMII PHY for the tests: it drives the receive pins (clock, DDR nibbles,
RX_CTL, in-band status between frames) and records the transmit pins on every half period of
``clk125``, then decodes them by the forwarded ``tx_clk``'s edges."""

from amaranth.sim import Simulator

from aes_fpga.appliance.gateware.eth.rgmii import SPEED_CODES

__all__ = ["RX_HALF", "CLK125_HALF", "status_nibble", "rx_script", "decode_tx", "run_link"]

#: Half periods of the PHY's receive clock at each speed, and of the 125 MHz transmit clock.
RX_HALF = {1000: 4e-9, 100: 20e-9, 10: 200e-9}
CLK125_HALF = 4e-9


def status_nibble(mbps, *, link=True, full_duplex=True):
    """The in-band status RXD carries between frames."""
    return int(link) | SPEED_CODES[mbps] << 1 | int(full_duplex) << 3


def rx_script(wires, mbps, *, idle=24, errors=()):
    """The receive pins, a clock period a step, as ``(rise rxd, rise ctl, fall rxd, fall ctl)``:
    ``idle`` status periods, then each frame of ``wires`` (PHY bytes) and ``idle`` more.
    ``errors`` holds (frame, byte) positions sent with RX_ER."""
    status = status_nibble(mbps)
    steps = [(status, 0, status, 0)] * idle
    for f, wire in enumerate(wires):
        for b, byte in enumerate(wire):
            ctl_fall = 0 if (f, b) in errors else 1
            if mbps == 1000:
                steps.append((byte & 0xF, 1, byte >> 4, ctl_fall))
            else:
                steps += [(n, 1, n, ctl_fall) for n in (byte & 0xF, byte >> 4)]
        steps += [(status, 0, status, 0)] * idle
    return steps


def decode_tx(halves, mbps):
    """The frames on the transmit pins, from ``halves`` ((tx_clk, txd, tx_ctl) sampled in each
    half period of ``clk125``), and what the forwarded clock and the gaps looked like: returns
    (frames, clock periods in half periods of clk125, high halves a period, idle nibble times
    between frames)."""
    rises = [k for k in range(1, len(halves)) if halves[k][0] and not halves[k - 1][0]]
    # The clock is measured from the first frame on (before it, the speed may be changing).
    first = next((n for n, k in enumerate(rises) if halves[k][2]), len(rises))
    measured = rises[first:]
    periods = {b - a for a, b in zip(measured, measured[1:], strict=False)}
    highs = {sum(h[0] for h in halves[a:b])
             for a, b in zip(measured, measured[1:], strict=False)}
    symbols = []            # (enable, nibble), in wire order
    for k in rises:
        _, data, ctl = halves[k]
        symbols.append((ctl, data))
        if mbps == 1000 and k + 1 < len(halves):
            fall = next((j for j in range(k + 1, len(halves)) if not halves[j][0]), None)
            if fall is None:
                break
            assert halves[fall][2] == ctl, f"TX_EN and TX_ER differ at half period {fall}"
            symbols.append((ctl, halves[fall][1]))
    frames, gaps, nibbles, idle = [], [], [], None
    for en, data in symbols:
        if en:
            if not nibbles and idle is not None and frames:
                gaps.append(idle)
            nibbles.append(data)
            idle = 0
        else:
            if nibbles:
                frames.append(bytes(lo | hi << 4 for lo, hi in zip(nibbles[::2], nibbles[1::2],
                                                                   strict=True)))
                nibbles = []
            idle = (idle or 0) + 1
    return frames, periods, highs, gaps


def run_link(dut, script, *, mbps, tx_frames=0, sync_period=8e-9, benches=(), until=None,
             max_time=400e-6):
    """Simulate ``dut`` (an :class:`~aes_fpga.appliance.gateware.eth.rgmii.RGMII` or a stack
    with its pins) with the receive pins following ``script`` (:func:`rx_script`, then idle
    status) and ``clk125`` running, until ``tx_frames`` frames have left and ``until()`` (if
    given) is true. ``benches`` are more testbenches (``sync`` domain), run in the background.
    Returns the transmit half periods (for :func:`decode_tx`)."""
    halves = []
    rx_done = []
    half = RX_HALF[mbps]
    status = status_nibble(mbps)

    async def rx_phy(ctx):
        step = 0
        while True:
            rise_d, rise_c, fall_d, fall_c = (script[step] if step < len(script)
                                              else (status, 0, status, 0))
            ctx.set(dut.rxd, rise_d)
            ctx.set(dut.rx_ctl, rise_c)
            await ctx.delay(half / 2)
            ctx.set(dut.rx_clk, 1)
            await ctx.delay(half / 2)
            ctx.set(dut.rxd, fall_d)
            ctx.set(dut.rx_ctl, fall_c)
            await ctx.delay(half / 2)
            ctx.set(dut.rx_clk, 0)
            await ctx.delay(half / 2)
            step += 1
            if step == len(script):
                rx_done.append(True)

    async def tx_phy(ctx):
        while True:
            for level in (1, 0):
                ctx.set(dut.clk125, level)
                # Sampled where a PHY with its 2 ns transmit clock delay samples.
                await ctx.delay(CLK125_HALF / 2)
                halves.append((ctx.get(dut.tx_clk), ctx.get(dut.txd), ctx.get(dut.tx_ctl)))
                await ctx.delay(CLK125_HALF / 2)

    async def main(ctx):
        elapsed = 0.0
        while True:
            await ctx.delay(1e-6)
            elapsed += 1e-6
            assert elapsed < max_time, "the simulated link did not finish"
            if not rx_done:
                continue
            if tx_frames and len(decode_tx(halves, mbps)[0]) < tx_frames:
                continue
            if until is None or until():
                break

    sim = Simulator(dut)
    sim.add_clock(sync_period)
    sim.add_testbench(rx_phy, background=True)
    sim.add_testbench(tx_phy, background=True)
    for bench in benches:
        sim.add_testbench(bench, background=True)
    sim.add_testbench(main)
    sim.run()
    return halves
