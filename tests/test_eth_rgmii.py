# amaranth: UnusedElaboratable=no
"""The RGMII PHY layer at the DDR-nibble level: scapy-built frames received and sent at 1000
and 100 Mbit/s (the speed taken from the in-band status), the bytes and the cycles checked:
a byte each 125 MHz cycle at Gigabit, the inter-frame gap, the forwarded transmit clock."""

import pytest
from eth_frames import (
    IP_ADDR,
    MAC,
    PEER_IP,
    PEER_MAC,
    PORT,
    arp_request,
    checksums_ok,
    datagram,
    fcs,
    frame_collector,
    on_wire,
    ping,
    udp_application,
)
from rgmii_link import decode_tx, run_link, rx_script
from scapy.layers.inet import ICMP, IP, UDP
from scapy.layers.l2 import ARP, Ether
from scapy.packet import Raw

from aes_fpga.appliance.gateware.eth.phy import IFG_BYTES
from aes_fpga.appliance.gateware.eth.rgmii import RGMII, SPEED_CODES
from aes_fpga.appliance.gateware.eth.stack import EthernetStack

SYNC_PERIOD = 8e-9      # 125 MHz: the byte rate at 1000 Mbit/s

FRAMES = [on_wire(datagram(b"gigabit")), on_wire(ping(b"rgmii"), preamble=3)]


def sfd_on(wire):
    return wire[wire.index(0xD5):]


def run_phy(dut, wires, sends, mbps, *, errors=(), stall_every=0):
    """Frames into the receive pins and ``sends`` into ``tx``; returns the frames from ``rx``
    with the ``sync`` cycle of each byte, and the transmit pins' half periods."""
    received = []
    sent = []

    rx_bench = frame_collector(dut.rx, received, with_cycles=True)

    async def tx_bench(ctx):
        # Sent once the in-band status has set the speed (and it has reached clk125's domain).
        await ctx.tick().until(dut.link_up)
        await ctx.tick().repeat(8)
        for wire in sends:
            for n, byte in enumerate(wire):
                if stall_every and n % stall_every == stall_every - 1:
                    ctx.set(dut.tx.valid, 0)
                    await ctx.tick()
                ctx.set(dut.tx.payload, {"data": byte, "last": n == len(wire) - 1})
                ctx.set(dut.tx.valid, 1)
                await ctx.tick().until(dut.tx.ready)
            ctx.set(dut.tx.valid, 0)
        sent.append(True)

    halves = run_link(dut, rx_script(wires, mbps, errors=errors), mbps=mbps,
                      tx_frames=len(sends), sync_period=SYNC_PERIOD,
                      benches=(rx_bench, tx_bench),
                      until=lambda: len(received) == len(wires) and sent)
    return received, halves


@pytest.mark.parametrize("mbps", [1000, 100])
def test_receive_and_send(mbps):
    dut = RGMII()
    received, halves = run_phy(dut, FRAMES, FRAMES, mbps)
    assert [frame for frame, _ in received] == [sfd_on(w) for w in FRAMES]
    if mbps == 1000:
        for _, cycles in received:
            # A byte each 125 MHz cycle, as fast as it came in (sync is 125 MHz too), the last
            # one a byte time late, when RX_DV has fallen.
            assert cycles[-2] - cycles[0] == len(cycles) - 2
            assert cycles[-1] - cycles[-2] in (1, 2)
    frames, periods, highs, gaps = decode_tx(halves, mbps)
    assert frames == FRAMES
    # The forwarded clock: 125 MHz (2 half periods of clk125) or 25 MHz (10), 50 % duty.
    assert periods == {2 if mbps == 1000 else 10}
    assert highs == {1 if mbps == 1000 else 5}
    # The gap between the two frames (nibble times): at least the IFG, and no more than the
    # FIFO's crossing adds (the second frame was waiting in the FIFO).
    assert 2 * IFG_BYTES <= gaps[0] <= 2 * IFG_BYTES + 2


@pytest.mark.parametrize("start_level", [48, 1])
def test_a_stalling_frame_is_sent_whole_from_the_start_level(start_level):
    """A frame fed at 7/8 of the line rate (sync at 125 MHz) goes out whole when it starts
    with ``tx_start_level`` bytes buffered; started with one byte, it runs dry and is cut."""
    dut = RGMII(tx_start_level=start_level)
    wire = on_wire(datagram(b"x" * 200))
    _, halves = run_phy(dut, [], [wire], 1000, stall_every=8)
    frames = decode_tx(halves, 1000)[0]
    if start_level == 48:
        assert frames == [wire]
    else:
        assert frames[0] == wire[:len(frames[0])] and len(frames[0]) < len(wire)


def test_in_band_status_and_the_speed_it_sets():
    dut = RGMII()
    seen = {}

    async def status(ctx):
        await ctx.tick().repeat(200)
        seen.update(link=ctx.get(dut.link_up), speed=ctx.get(dut.link_speed),
                    duplex=ctx.get(dut.full_duplex))

    run_link(dut, rx_script([], 100, idle=20), mbps=100, benches=(status,),
             until=lambda: bool(seen))
    assert seen == {"link": 1, "speed": SPEED_CODES[100], "duplex": 1}


def test_fixed_speed_ignores_in_band_status():
    """A PHY without in-band status: ``speed=1000`` receives at Gigabit although the RXD
    between frames reads as 10 Mbit/s."""
    dut = RGMII(speed=1000)
    wire = FRAMES[0]
    script = [(0, 0, 0, 0)] * 20 + rx_script([wire], 1000, idle=0) + [(0, 0, 0, 0)] * 20
    received = []

    rx_bench = frame_collector(dut.rx, received)

    run_link(dut, script, mbps=1000, benches=(rx_bench,), until=lambda: bool(received))
    assert received == [sfd_on(wire)]


def test_rx_er_spoils_the_frame():
    """RX_ER on two bytes: the first is inverted (a burst CRC-32 always catches), the second
    is passed as it is (the frame is lost anyway), the next frame comes whole."""
    dut = RGMII()
    received, _ = run_phy(dut, FRAMES, [], 1000, errors={(0, 20), (0, 30)})
    frame = bytearray(sfd_on(FRAMES[0]))
    offset = FRAMES[0].index(0xD5)
    frame[20 - offset] ^= 0xFF
    assert [f for f, _ in received] == [bytes(frame), sfd_on(FRAMES[1])]


def test_parameters_are_checked():
    with pytest.raises(ValueError, match="speed: 2500 is not an RGMII speed"):
        RGMII(speed=2500)
    with pytest.raises(ValueError, match="tx_domain: 'eth_rx' is also the receive domain"):
        RGMII(tx_domain="eth_rx")
    with pytest.raises(ValueError, match="rx_domain: 'sync'"):
        RGMII(rx_domain="sync")
    with pytest.raises(ValueError, match="delay_ps: 9000 is beyond"):
        RGMII(rx_delay_ps=9000)
    with pytest.raises(ValueError, match="tx_buffer: 48 is not a power of 2"):
        RGMII(tx_buffer=48)
    with pytest.raises(ValueError, match="tx_start_level: 64 is out of range; allowed 1 to 63"):
        RGMII(tx_start_level=64)


@pytest.mark.parametrize("mbps", [1000, pytest.param(100, marks=pytest.mark.slow)])
def test_stack_loopback_arp_ping_udp(mbps):
    """The stack's loopback test (test_eth_stack) on the RGMII PHY: an ARP request, an ICMP
    echo and a UDP datagram get their replies, the speed taken from the in-band status."""
    dut = EthernetStack(mac=MAC, ip=IP_ADDR, udp_port=PORT, phy="rgmii")
    requests = [arp_request(), ping(b"ping!", seq=3), datagram(b"encrypt me")]
    wires = [on_wire(r) for r in requests]
    halves = run_link(dut, rx_script(wires, mbps), mbps=mbps, tx_frames=3,
                      sync_period=SYNC_PERIOD,
                      benches=(udp_application(dut, lambda p: p.upper(), 100_000),))
    got, _, _, gaps = decode_tx(halves, mbps)
    frames = []
    for wire in got:
        assert wire[:8] == b"\x55" * 7 + b"\xd5"
        body = wire[8:-4]
        assert len(body) >= 60 and wire[-4:] == fcs(body)
        frames.append(body)
    arp, echo, udp = (Ether(f) for f in frames)
    assert arp[ARP].op == 2 and arp[ARP].hwdst == PEER_MAC and arp[ARP].psrc == IP_ADDR
    assert echo[ICMP].type == 0 and echo[ICMP].seq == 3 and echo[IP].dst == PEER_IP
    assert bytes(echo[ICMP].payload)[:5] == b"ping!"
    assert udp[UDP].dport == 40000 and udp[Raw].load == b"ENCRYPT ME"
    assert all(checksums_ok(f) for f in frames)
    assert min(gaps) >= 2 * IFG_BYTES


@pytest.mark.slow
def test_rgmii_logic_depth(tmp_path):
    """No path of the PHY layer deeper than 5 LUT levels (7-series): the 125 MHz domains keep
    no arithmetic on the run-time speed and register the frame-start condition (the routed
    ECPIX-5 build once missed 125 MHz on both)."""
    from aes_fpga.flow.synth import synthesize
    from aes_fpga.flow.timing import analyse_netlist

    report = analyse_netlist(synthesize(RGMII(), "xc7a35tcsg324-1",
                                        workdir=tmp_path).netlist_json, worst=50)
    assert report.paths
    assert max(p.levels for p in report.paths) <= 5, [
        f"{p.levels}: {p.start} -> {p.end}" for p in report.paths[:5]]
