"""The whole stack from MII pins: the PHY layer's nibbles and clock domains, and a loopback
where an ARP request, an ICMP echo and a UDP datagram built by scapy get their replies."""

import random

import pytest
from amaranth.sim import Simulator
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
    nibbles,
    on_wire,
    ping,
    save_pcap,
    udp_application,
)
from scapy.layers.inet import ICMP, IP, UDP
from scapy.layers.l2 import ARP, Ether
from scapy.packet import Raw

from aes_fpga.appliance.gateware.eth.phy import IFG_BYTES
from aes_fpga.appliance.gateware.eth.stack import COUNTERS, EthernetStack

MII_HALF = 20e-9        # 25 MHz
RMII_HALF = 10e-9       # 50 MHz
SYNC_PERIOD = 20e-9     # 50 MHz: faster than the byte rate, as the stack needs


def run_mii(dut, wires, replies, *, udp=None, max_cycles=40_000, rng=None):
    """Drive ``wires`` (PHY bytes a frame, each followed by an inter-frame gap) into the MII
    (or RMII) receive pins, take ``replies`` frames from the transmit pins (checking the gap
    between them), answer UDP requests with ``udp``. Returns the frames sent (preamble to
    FCS), the minimum gap seen (in symbol times) and the counters."""
    rng = rng or random.Random(4)
    rmii = dut.phy == "rmii"
    bits = 2 if rmii else 4
    clocks = [dut.ref_clk] if rmii else [dut.rx_clk, dut.tx_clk]
    dv_pin = dut.crs_dv if rmii else dut.rx_dv
    script = []
    for wire in wires:
        symbols = [s for n in nibbles(wire) for s in ((n & 3, n >> 2) if rmii else (n,))]
        script += [(1, n) for n in symbols] + [(0, 0)] * (8 // bits * IFG_BYTES
                                                          + rng.randrange(4))
    got, gaps, values = [], [], {}
    half = RMII_HALF if rmii else MII_HALF
    sync_cycles = round(max_cycles * 2 * half / SYNC_PERIOD) + 1

    async def phy(ctx):
        frame, idle = [], None
        for cycle in range(max_cycles):
            dv, nibble = script[cycle] if cycle < len(script) else (0, 0)
            for clk in clocks:
                ctx.set(clk, 0)
            ctx.set(dv_pin, dv)
            ctx.set(dut.rxd, nibble)
            await ctx.delay(half)
            tx_en, txd = ctx.get(dut.tx_en), ctx.get(dut.txd)
            for clk in clocks:
                ctx.set(clk, 1)
            await ctx.delay(half)
            if tx_en:
                if idle is not None and not frame and got:
                    gaps.append(idle)
                frame.append(txd)
                idle = 0
            else:
                if frame:
                    per = 8 // bits
                    got.append(bytes(sum(s << (bits * k) for k, s in enumerate(frame[n:n + per]))
                                     for n in range(0, len(frame), per)))
                    frame = []
                idle = (idle or 0) + 1
            if len(got) == replies and cycle >= len(script):
                break
        else:
            raise AssertionError(f"{len(got)} of {replies} frames in {max_cycles} MII cycles")
        for name, _, _ in COUNTERS:
            values[name] = ctx.get(getattr(dut, name))

    sim = Simulator(dut)
    sim.add_clock(SYNC_PERIOD)
    if udp is not None:
        sim.add_testbench(udp_application(dut, udp, sync_cycles), background=True)
    sim.add_testbench(phy)
    sim.run()
    return got, min(gaps, default=None), values


@pytest.mark.parametrize("phy", ["mii", pytest.param("rmii", marks=pytest.mark.slow)])
def test_loopback_arp_ping_udp(phy):
    dut = EthernetStack(mac=MAC, ip=IP_ADDR, udp_port=PORT, phy=phy)
    requests = [arp_request(), ping(b"ping!", seq=3), datagram(b"encrypt me")]
    wires = [on_wire(r) for r in requests]
    got, gap, values = run_mii(dut, wires, 3, udp=lambda p: p.upper())
    frames = []
    for wire in got:
        assert wire[:8] == b"\x55" * 7 + b"\xd5"
        body = wire[8:-4]
        assert len(body) >= 60 and wire[-4:] == fcs(body)
        frames.append(body)
    save_pcap(f"{phy}_loopback", [bytes(r) for r in requests] + frames)
    arp, echo, udp = (Ether(f) for f in frames)
    assert arp[ARP].op == 2 and arp[ARP].hwdst == PEER_MAC and arp[ARP].psrc == IP_ADDR
    assert echo[ICMP].type == 0 and echo[ICMP].seq == 3 and echo[IP].dst == PEER_IP
    assert bytes(echo[ICMP].payload)[:5] == b"ping!"
    assert udp.dst == PEER_MAC and udp[UDP].dport == 40000 and udp[UDP].sport == PORT
    assert udp[Raw].load == b"ENCRYPT ME"
    assert all(checksums_ok(f) for f in frames)
    assert gap >= (4 if phy == "rmii" else 2) * IFG_BYTES
    assert set(values.values()) == {0}


@pytest.mark.slow
def test_mii_drops_a_bad_frame_and_keeps_the_next():
    dut = EthernetStack(mac=MAC, ip=IP_ADDR, udp_port=PORT)
    wires = [on_wire(ping(b"bad"), good_fcs=False), on_wire(ping(b"good"), preamble=2)]
    got, _, values = run_mii(dut, wires, 1)
    assert Ether(got[0][8:-4])[ICMP].type == 0
    assert values["mac_bad_fcs"] == 1


@pytest.mark.slow
def test_datagrams_lost_in_the_ip_buffer_count_as_mac_overflows():
    # Nothing reads the UDP port: of five 900-byte datagrams the fifth finds the IP layer's
    # receive buffer full. The ARP request after them is answered (it bypasses that buffer),
    # by which time the loss shows in ``mac_overflows``, where STATS reports it.
    dut = EthernetStack(mac=MAC, ip=IP_ADDR, udp_port=PORT)
    wires = [on_wire(datagram(bytes(900), sport=40000 + n)) for n in range(5)]
    got, _, values = run_mii(dut, [*wires, on_wire(arp_request())], 1, max_cycles=90_000)
    assert Ether(got[0][8:-4])[ARP].op == 2
    assert values == {**dict.fromkeys(values, 0), "mac_overflows": 1}
