# amaranth: UnusedElaboratable=no
"""The layers above the MAC (Ethernet header, ARP, IPv4, ICMP echo, UDP) as one
:class:`IPStack`, fed frames as the MAC delivers them (padded, FCS stripped), with scapy
building the requests and parsing the replies."""

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
    padded,
    ping,
    save_pcap,
    simulate_frames,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scapy.layers.inet import ICMP, IP, TCP, UDP
from scapy.layers.l2 import ARP, Ether

from aes_fpga.appliance.gateware.eth.stack import COUNTERS, IPStack

NAMES = [name for name, layer, _ in COUNTERS if not layer.startswith("mac")]


def reply_to(payload):
    return payload[::-1] + b"!"


def run(frames, replies, *, seed=3, name=None, pad=False, udp=reply_to):
    """Feed ``frames`` to an :class:`IPStack` (unpadded unless ``pad``: shorter simulations;
    the padding is removed by the IP layer, which the padded frames of ``test_eth_stack``
    check); returns the frames sent, the UDP requests seen and the counters."""
    dut = IPStack(mac=MAC, ip=IP_ADDR, udp_port=PORT)
    wires = [padded(bytes(f)) if pad else bytes(f) for f in frames]
    got, requests, values = simulate_frames(dut, wires, rng=random.Random(seed),
                                            replies=replies, udp=udp, counters=NAMES)
    if name:
        save_pcap(name, [w for pair in zip(wires, got, strict=False) for w in pair])
    return got, requests, values


def check_echo(reply, request):
    r = Ether(reply)
    assert r.dst == PEER_MAC and r.src == MAC
    assert r[IP].src == IP_ADDR and r[IP].dst == PEER_IP and r[IP].ttl == 64
    assert r[ICMP].type == 0 and r[ICMP].id == request[ICMP].id
    assert r[ICMP].seq == request[ICMP].seq
    assert bytes(r[ICMP].payload) == bytes(request[ICMP].payload)
    assert checksums_ok(reply)


def test_arp_icmp_udp_get_replies():
    no_checksum = Ether(bytes(datagram(b"nochk")))
    no_checksum[UDP].chksum = 0
    frames = [arp_request(), ping(b"abc", seq=7), datagram(b"hello"), no_checksum]
    got, requests, values = run(frames, 4, name="ip_stack", pad=True)
    arp = Ether(got[0])
    assert arp.dst == PEER_MAC and arp[ARP].op == 2
    assert arp[ARP].hwsrc == MAC and arp[ARP].psrc == IP_ADDR
    assert arp[ARP].hwdst == PEER_MAC and arp[ARP].pdst == PEER_IP
    check_echo(got[1], frames[1])
    assert requests == [b"hello", b"nochk"]
    udp = Ether(got[2])
    assert udp.dst == PEER_MAC and udp[IP].dst == PEER_IP
    assert udp[UDP].sport == PORT and udp[UDP].dport == 40000
    assert bytes(udp[UDP].payload) == reply_to(b"hello")
    assert checksums_ok(got[2])
    assert bytes(Ether(got[3])[UDP].payload)[:6] == reply_to(b"nochk")
    assert values == dict.fromkeys(NAMES, 0)


def _bad_checksum(layer):
    def make(pkt):
        raw = Ether(bytes(pkt))
        raw[layer].chksum ^= 0x0101
        return raw
    return make


MALFORMED = {
    "eth_other_types": Ether(dst=MAC, src=PEER_MAC, type=0x86DD) / bytes(40),
    "arp_ignored": arp_request("192.168.1.51"),
    "ip_options": Ether(dst=MAC, src=PEER_MAC) / IP(src=PEER_IP, dst=IP_ADDR,
                                                     options=b"\x01\x01\x01\x00") / ICMP(),
    "ip_fragments": Ether(dst=MAC, src=PEER_MAC) / IP(src=PEER_IP, dst=IP_ADDR, flags="MF")
    / ICMP(),
    "ip_bad_checksum": _bad_checksum(IP)(ping()),
    "ip_not_ours": ping(dst="192.168.1.51"),
    "ip_other_protocols": Ether(dst=MAC, src=PEER_MAC) / IP(src=PEER_IP, dst=IP_ADDR) / TCP(),
    "ip_truncated": Ether(bytes(ping(bytes(30)))[:50]),
    "icmp_bad_checksum": _bad_checksum(ICMP)(ping()),
    "icmp_ignored": Ether(dst=MAC, src=PEER_MAC) / IP(src=PEER_IP, dst=IP_ADDR) / ICMP(type=0),
    "udp_bad_checksum": _bad_checksum(UDP)(datagram(b"bad")),
    "udp_bad_length": Ether(dst=MAC, src=PEER_MAC) / IP(src=PEER_IP, dst=IP_ADDR)
    / UDP(sport=1, dport=PORT, len=40) / b"short",
    "udp_other_ports": datagram(b"x", dport=PORT + 1),
}


def test_each_malformed_frame_is_dropped_and_counted():
    # All cases in one simulation (one elaboration): each bad frame followed by a good ping.
    frames = []
    for n, counter in enumerate(MALFORMED):
        frames += [MALFORMED[counter], ping(b"next", seq=n)]
    got, requests, values = run(frames, len(MALFORMED), name="ip_malformed")
    assert len(got) == len(MALFORMED)
    for n, reply in enumerate(got):
        check_echo(reply, frames[2 * n + 1])
    assert requests == []
    assert values == dict.fromkeys(NAMES, 1)


@pytest.mark.slow
@pytest.mark.parametrize("counter", MALFORMED)
def test_malformed_is_dropped_and_counted(counter):
    good = ping(b"next")
    got, requests, values = run([MALFORMED[counter], good], 1)
    assert len(got) == 1
    check_echo(got[0], good)
    assert requests == []
    assert values == {**dict.fromkeys(NAMES, 0), counter: 1}


def ones_sum(data):
    data += bytes(len(data) % 2)
    total = sum(int.from_bytes(data[n:n + 2], "big") for n in range(0, len(data), 2))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return total


def test_udp_checksum_computing_to_zero_is_sent_as_ffff():
    # A reply whose last word makes the sum 0xFFFF: its checksum computes to 0.
    head = b"zero"
    length = 8 + len(head) + 2
    pseudo = (bytes(int(x) for x in IP_ADDR.split(".")) + bytes(int(x) for x in PEER_IP.split("."))
              + bytes([0, 17]) + length.to_bytes(2, "big"))
    header = PORT.to_bytes(2, "big") + (40000).to_bytes(2, "big") + length.to_bytes(2, "big")
    fill = 0xFFFF - ones_sum(pseudo + header + bytes(2) + head)
    reply = head + fill.to_bytes(2, "big")
    got, _, _ = run([datagram(b"?")], 1, udp=lambda _: reply)
    assert Ether(got[0])[UDP].chksum == 0xFFFF
    assert checksums_ok(got[0])             # scapy sends a computed 0 as 0xFFFF too
    assert ones_sum(pseudo + bytes(got[0][34:])) == 0xFFFF


def test_largest_ping():
    # 1472 data bytes: a 1500-byte IP packet, the MTU.
    request = ping(bytes(range(256)) * 5 + bytes(192))
    assert len(request[IP]) == 1500
    got, _, values = run([request], 1)
    check_echo(got[0], request)


test_largest_ping = pytest.mark.slow(test_largest_ping)

KINDS = ["arp", "ping", "udp", *MALFORMED]


@pytest.mark.slow
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(KINDS), st.binary(max_size=40)), min_size=1,
                max_size=6), st.integers(0, 1000))
def test_random_frame_streams(kinds, seed):
    frames, expect, counts = [], [], dict.fromkeys(NAMES, 0)
    for kind, data in kinds:
        if kind == "arp":
            frames.append(arp_request())
            expect.append("arp")
        elif kind == "ping":
            frames.append(ping(data))
            expect.append("ping")
        elif kind == "udp":
            frames.append(datagram(data or b"."))
            expect.append("udp")
        else:
            frames.append(MALFORMED[kind])
            counts[kind] += 1
    got, requests, values = run(frames, len(expect), seed=seed)
    assert len(got) == len(expect)
    for frame, kind in zip(got, expect, strict=True):
        pkt = Ether(frame)
        assert {"arp": ARP, "ping": ICMP, "udp": UDP}[kind] in pkt
        assert checksums_ok(frame)
    assert values == counts


def test_identity_is_checked():
    with pytest.raises(ValueError, match="ip: '10.0.0.256'"):
        IPStack(mac=MAC, ip="10.0.0.256", udp_port=PORT)
    with pytest.raises(ValueError, match="udp_port: 0 .*1..65535"):
        IPStack(mac=MAC, ip=IP_ADDR, udp_port=0)


def test_full_buffers_lose_datagrams_and_hold_replies():
    """Both buffers filled at once, in one simulation.

    Receive: four 1000-byte datagrams and a 300-byte one while the application reads
    nothing: the receive buffer (4096 bytes) keeps the four, the fifth is lost and counted in
    ``overflows``; once read, the four come out whole, and a datagram sent after them is
    delivered (the loss left no state).

    Transmit (meanwhile, after a first request read): three 700-byte replies while nothing is
    sent (``o`` not ready): the reply buffer (2048 bytes) fills during the third, and ``tx``
    waits instead of losing it (``o`` is made ready only once ``tx`` has waited over 1000
    cycles: it never is if ``tx`` does not wait); then all three go out whole, in order, to
    the requester."""
    dut = IPStack(mac=MAC, ip=IP_ADDR, udp_port=PORT)
    request = bytes(datagram(b"go"))
    payloads = [bytes([n]) * size for n, size in enumerate((1000,) * 4 + (300, 10))]
    frames = [bytes(datagram(p, sport=40000 + n)) for n, p in enumerate(payloads)]
    replies = [bytes([n + 1]) * 700 for n in range(3)]
    got, seen, out, stalls = [], {}, [], []
    started = []        # set once the first request has been read

    async def send(ctx, frame):
        for n, byte in enumerate(frame):
            ctx.set(dut.i.payload, {"data": byte, "last": n == len(frame) - 1})
            ctx.set(dut.i.valid, 1)
            await ctx.tick().until(dut.i.ready)
        ctx.set(dut.i.valid, 0)

    async def read(ctx, count):
        ctx.set(dut.rx.ready, 1)
        payload = bytearray()
        for _ in range(6000):
            *_, valid, beat = await ctx.tick().sample(dut.rx.valid, dut.rx.payload)
            if valid:
                payload.append(beat.data)
                if beat.last:
                    got.append(bytes(payload))
                    payload = bytearray()
                    if len(got) == count:
                        break
        ctx.set(dut.rx.ready, 0)

    async def receive(ctx):
        await send(ctx, request)
        await read(ctx, 1)
        started.append(True)
        for frame in frames[:5]:
            await send(ctx, frame)
        await ctx.tick().repeat(20)
        seen["lost"] = ctx.get(dut.overflows)
        await read(ctx, 5)
        await send(ctx, frames[5])
        await read(ctx, 6)
        seen["after"] = ctx.get(dut.overflows)

    async def reply(ctx):
        while not started:
            await ctx.tick()
        for payload in replies:
            for n, byte in enumerate(payload):
                ctx.set(dut.tx.payload, {"data": byte, "last": n == len(payload) - 1})
                ctx.set(dut.tx.valid, 1)
                while True:
                    *_, taken = await ctx.tick().sample(dut.tx.ready)
                    if taken:
                        break
                    stalls.append(ctx.get(dut.o.ready))
        ctx.set(dut.tx.valid, 0)

    async def collect(ctx):
        frame = bytearray()
        for _ in range(20_000):
            ctx.set(dut.o.ready, len(stalls) > 1000)
            *_, valid, ready, beat = await ctx.tick().sample(dut.o.valid, dut.o.ready,
                                                             dut.o.payload)
            if valid and ready:
                frame.append(beat.data)
                if beat.last:
                    out.append(bytes(frame))
                    frame = bytearray()
                    if len(out) == 3:
                        return

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(reply, background=True)
    sim.add_testbench(collect)
    sim.add_testbench(receive)
    sim.run()
    assert seen == {"lost": 1, "after": 1}
    assert got == [b"go", *payloads[:4], payloads[5]]
    # ``tx`` waited while nothing went out (beyond the cycles each reply's start takes)
    assert stalls.count(0) > 1000
    assert [bytes(Ether(f)[UDP].payload) for f in out] == replies
    assert all(Ether(f)[IP].dst == PEER_IP for f in out)
