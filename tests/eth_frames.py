"""Frames for the network stack's tests: scapy packets on the wire (preamble, padding, FCS),
MII nibbles, simulation drivers for byte streams, checksum checks, and pcap files of a test's
traffic when ``$AES_FPGA_PCAP`` names a folder (open them in Wireshark)."""

import os
import zlib
from pathlib import Path

from amaranth.sim import Simulator
from scapy.layers.inet import ICMP, IP, UDP
from scapy.layers.l2 import ARP, Ether

__all__ = ["MAC", "IP_ADDR", "PORT", "PEER_MAC", "PEER_IP", "fcs", "padded", "on_wire",
           "nibbles", "checksums_ok", "save_pcap", "simulate_frames"]

MAC = "02:00:00:00:00:01"
IP_ADDR = "192.168.1.50"
PORT = 7777
PEER_MAC = "02:aa:bb:cc:dd:ee"
PEER_IP = "192.168.1.10"


def fcs(frame):
    """The Ethernet FCS of ``frame`` (bytes), in wire order."""
    return zlib.crc32(frame).to_bytes(4, "little")


def padded(frame):
    """``frame`` (bytes) zero-padded to the 60 bytes of a minimum frame before its FCS."""
    return frame + bytes(max(0, 60 - len(frame)))


def on_wire(frame, *, preamble=7, good_fcs=True, pad=True):
    """The bytes a PHY gives for ``frame`` (a scapy packet or bytes): ``preamble`` bytes of
    0x55, the SFD, the frame (padded unless ``pad`` is false) and its FCS (wrong when
    ``good_fcs`` is false)."""
    body = bytes(frame)
    if pad:
        body = padded(body)
    check = fcs(body)
    if not good_fcs:
        check = bytes([check[0] ^ 0x01]) + check[1:]
    return b"\x55" * preamble + b"\xd5" + body + check


def nibbles(wire):
    """The MII nibbles of ``wire`` (bytes), low nibble first."""
    return [n for byte in wire for n in (byte & 0xF, byte >> 4)]


def checksums_ok(frame):
    """Whether the IPv4, ICMP and UDP checksums of ``frame`` (bytes) are what scapy computes
    (a UDP checksum of zero counts as wrong: the stack always sends one)."""
    pkt = Ether(frame)
    fresh = Ether(frame)
    for layer in (IP, ICMP, UDP):
        if layer in fresh:
            del fresh[layer].chksum
    fresh = Ether(bytes(fresh))
    return all(pkt[layer].chksum == fresh[layer].chksum
               for layer in (IP, ICMP, UDP) if layer in pkt)


def save_pcap(name, frames):
    """Write ``frames`` (bytes) to ``$AES_FPGA_PCAP/<name>.pcap`` if that variable is set."""
    folder = os.environ.get("AES_FPGA_PCAP")
    if folder:
        from scapy.utils import wrpcap
        Path(folder).mkdir(parents=True, exist_ok=True)
        wrpcap(str(Path(folder) / f"{name}.pcap"), [Ether(f) for f in frames])


def frame_collector(stream, received, *, with_cycles=False):
    """A testbench that holds ``stream`` (a byte stream with ``data``/``last``) ready and
    appends each frame it gives to ``received``: its bytes, or with ``with_cycles`` (bytes, the
    cycle of each byte, counted from the bench's start)."""
    async def bench(ctx):
        frame, cycles, cycle = bytearray(), [], 0
        ctx.set(stream.ready, 1)
        while True:
            *_, valid, beat = await ctx.tick().sample(stream.valid, stream.payload)
            cycle += 1
            if valid:
                frame.append(beat.data)
                cycles.append(cycle)
                if beat.last:
                    received.append((bytes(frame), cycles) if with_cycles else bytes(frame))
                    frame, cycles = bytearray(), []
    return bench


def arp_request(target=IP_ADDR, *, sender=PEER_IP, mac=PEER_MAC):
    return Ether(dst="ff:ff:ff:ff:ff:ff", src=mac) / ARP(
        op=1, hwsrc=mac, psrc=sender, hwdst="00:00:00:00:00:00", pdst=target)


def ping(data=b"ping", *, seq=1, dst=IP_ADDR):
    return Ether(dst=MAC, src=PEER_MAC) / IP(src=PEER_IP, dst=dst) / ICMP(
        type=8, id=0x1234, seq=seq) / data


def datagram(data=b"hello", *, dport=PORT, sport=40000, dst=IP_ADDR):
    return Ether(dst=MAC, src=PEER_MAC) / IP(src=PEER_IP, dst=dst) / UDP(
        sport=sport, dport=dport) / data


def udp_application(dut, udp, max_cycles, requests=None):
    """A testbench for the application behind a stack's UDP streams: it takes each request
    payload from ``dut.rx`` (appending it to ``requests``, when given) and sends ``udp(payload)``
    back on ``dut.tx``, for at most ``max_cycles`` cycles."""
    async def application(ctx):
        payload = bytearray()
        reply = []
        ctx.set(dut.rx.ready, 1)
        for _ in range(max_cycles):
            if reply:
                ctx.set(dut.tx.payload, {"data": reply[0], "last": len(reply) == 1})
            ctx.set(dut.tx.valid, bool(reply))
            *_, rx_valid, beat, tx_ready = await ctx.tick().sample(
                dut.rx.valid, dut.rx.payload, dut.tx.ready)
            if reply and tx_ready:
                reply.pop(0)
            if rx_valid:
                payload.append(beat.data)
                if beat.last:
                    if requests is not None:
                        requests.append(bytes(payload))
                    reply = list(udp(bytes(payload)))
                    payload = bytearray()
    return application


def simulate_frames(dut, frames, *, rng, replies=0, udp=None, gap=0.3, max_cycles=100_000,
                    out="o", counters=()):
    """Feed ``frames`` (bytes each, a frame a packet) into ``dut.i`` with random gaps and
    collect ``replies`` frames from ``dut.<out>`` (random ready). ``udp``, if given, is a
    function from a request payload to a reply payload, run on ``dut.rx``/``dut.tx``.
    Returns (frames out, UDP requests seen, {counter: value})."""
    got, requests, values = [], [], {}
    sent = []   # set when every frame has been fed

    async def send(ctx):
        for frame in frames:
            for n, byte in enumerate(frame):
                while rng.random() < gap:
                    await ctx.tick()
                ctx.set(dut.i.payload, {"data": byte, "last": n == len(frame) - 1})
                ctx.set(dut.i.valid, 1)
                await ctx.tick().until(dut.i.ready)
                ctx.set(dut.i.valid, 0)
        sent.append(True)

    async def receive(ctx):
        stream = getattr(dut, out)
        frame = bytearray()
        settle = 0      # cycles since everything was sent and the replies came
        for _ in range(max_cycles):
            if sent and len(got) >= replies:
                settle += 1
                if settle == 100:
                    break
            ctx.set(stream.ready, rng.random() < 0.8)
            # Sampled at the clock edge: the other testbenches' settings have all taken effect.
            *_, ready, valid, payload = await ctx.tick().sample(stream.ready, stream.valid,
                                                                stream.payload)
            if ready and valid:
                frame.append(payload.data)
                if payload.last:
                    got.append(bytes(frame))
                    frame = bytearray()
        else:
            raise AssertionError(f"{len(got)} of {replies} frames in {max_cycles} cycles")
        for name in counters:
            values[name] = ctx.get(getattr(dut, name))

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(send, background=True)
    if udp is not None:
        sim.add_testbench(udp_application(dut, udp, max_cycles, requests), background=True)
    sim.add_testbench(receive)
    sim.run()
    return got, requests, values
