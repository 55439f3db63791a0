"""The Ethernet appliance's throughput and latency, measured on the compiled simulation at the MII
nibble, RMII dibit or RGMII DDR-nibble level (:class:`~aes_fpga.sim.ethbridge.MiiBridge`).

The PHY clock is the simulation clock: one cycle is one nibble time (MII, 25 MHz) or one dibit
time (RMII, 50 MHz) at 100 Mbit/s, so the line carries half or a quarter of a byte a cycle each
way; on RGMII at 1000 Mbit/s one cycle of 125 MHz (a byte each way, a nibble on each edge).
Throughput: a CTR message of ``size`` bytes sent
as whole-message chunks of ``MAX_PROCESS_DATA`` = 1440 bytes (``UdpDevice``'s requests), every
request queued at once so the receive line never idles; the reply payload rate between the first
and the last reply, as a fraction of the line rate. Latency: one 16-byte CTR request on an idle
device, from its first preamble symbol on the receive pins to the cycle its reply's last symbol
left the transmit pins.
"""

import random

from ..appliance.frame import decode_frame, frame_content
from ..appliance.messages import build_load_key_request, parse_process_reply
from ..appliance.spec import (
    BLOCK_SIZE,
    HEADER_SIZE,
    MAX_PROCESS_DATA,
    PROCESS_HEADER_SIZE,
    UDP_HEADERS,
    Command,
    Mode,
    Op,
)
from ..appliance.udp_client import independent_requests
from .ethbridge import (
    FIRST_SYMBOL_DELAY,
    HOST_IP,
    HOST_MAC,
    QUIET_CYCLES,
    RGMII_CLOCK_MHZ,
    SIM_IP,
    SIM_MAC,
    SIM_PORT,
    encode,
    fcs,
    parse_udp_frame,
    sim_ethernet_appliance,
    unescape,
)

__all__ = ["bench_ethernet", "wire_frame", "bench_ethernet_gcm", "mode_cycles_ethernet",
           "LINE_BYTES_PER_CYCLE", "LINE_MBIT_S", "PHY_CLOCK_MHZ", "GCM_REQUEST_OVERHEAD"]

#: The PHY clock (the simulation's), MHz.
PHY_CLOCK_MHZ = {"mii": 25, "rmii": 50, "rgmii": 125}
#: The line rate simulated on each PHY, Mbit/s.
LINE_MBIT_S = {"mii": 100, "rmii": 100, "rgmii": 1000}
#: Line bytes a simulation cycle: MII a nibble, RMII a dibit (at 100 Mbit/s), RGMII a byte.
LINE_BYTES_PER_CYCLE = {phy: LINE_MBIT_S[phy] / 8 / mhz for phy, mhz in PHY_CLOCK_MHZ.items()}
_CHUNK = MAX_PROCESS_DATA
#: A request's bytes on the wire besides its data: preamble and SFD, Ethernet header, IPv4
#: and UDP headers, frame header, ``PROCESS`` header, IV, FCS and inter-frame gap.
REQUEST_OVERHEAD = 8 + 14 + UDP_HEADERS + HEADER_SIZE + PROCESS_HEADER_SIZE + BLOCK_SIZE + 4 + 12
#: The same for a GCM data chunk after the first: no IV (the chunks are one message).
GCM_REQUEST_OVERHEAD = REQUEST_OVERHEAD - BLOCK_SIZE


def wire_frame(datagram, ident):
    """``datagram`` from the host to the simulated appliance, as :class:`~aes_fpga.sim.
    ethbridge.MiiBridge` takes it: a UDP frame (IP ``ident``), padded, FCS added, escaped."""
    from .ethbridge import udp_frame
    frame = udp_frame(datagram, src_mac=HOST_MAC, dst_mac=SIM_MAC, src_ip=HOST_IP,
                      dst_ip=SIM_IP, sport=40000, dport=SIM_PORT, ident=ident).ljust(60, b"\0")
    return encode(frame + fcs(frame))


def _run(requests, expect, progress, phy, core_mhz=RGMII_CLOCK_MHZ, first_alone=False):
    """Send the encoded frames ``requests`` at once (with ``first_alone``: the first, and the
    others once its reply is in, so that they find the device idle); return the reply
    payloads (in order of arrival) and the run's frame timing."""
    from .cxxsim import open_device
    make, key = sim_ethernet_appliance(phy=phy, core_mhz=core_mhz)
    link = open_device(make, engine="cxxrtl", cache_key=key, progress=progress,
                       falling_edge=phy == "rgmii", quiet_cycles=QUIET_CYCLES)
    try:
        out = bytearray()
        if first_alone:
            link.write(requests[0])
            out += link.read_until(b"\0", timeout=120.0)
            requests = requests[1:]
        link.write(b"".join(requests))
        out += link.read(None, timeout=0)
        replies = []
        while len(replies) < expect:
            more = link.read_until(b"\0", timeout=120.0)
            if not more:
                raise RuntimeError(f"the simulated appliance sent {len(replies)} of {expect} "
                                   f"replies")
            out += more
            while b"\0" in out:
                end = out.index(b"\0")
                frame = unescape(bytes(out[:end]))[:-4]
                del out[:end + 1]
                got = parse_udp_frame(frame)
                if got is not None:
                    replies.append(decode_frame(got[3], crc=False).payload)
    finally:
        link.close()
    return replies, link.timing


def bench_ethernet(size=1 << 20, *, phy="mii", seed=1, core_mhz=RGMII_CLOCK_MHZ,
                   progress=lambda line: None):
    """Throughput and latency figures (a dict) on ``phy`` (``"mii"``, ``"rmii"`` or
    ``"rgmii"``, at 1000 Mbit/s; ``core_mhz``: the core's clock beside RGMII's 125 MHz, see
    :func:`~aes_fpga.sim.ethbridge.sim_ethernet_appliance`); every result is checked against
    ``cryptography``."""
    if phy not in LINE_BYTES_PER_CYCLE:
        raise ValueError(f"phy: {phy!r} is not a PHY interface; allowed "
                         f"{', '.join(LINE_BYTES_PER_CYCLE)}")
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
    rng = random.Random(seed)
    key, iv = rng.randbytes(16), rng.randbytes(16)
    data = rng.randbytes(size)
    enc = Cipher(algorithms.AES(key), modes.CTR(iv)).encryptor()
    expected = enc.update(data) + enc.finalize()

    load = wire_frame(frame_content(Command.LOAD_KEY, 1, build_load_key_request(0, key), crc=False),
                 1)
    chunks = independent_requests(0, Op.ENCRYPT, Mode.CTR, data, iv=iv, chunk_size=_CHUNK)
    frames = [wire_frame(frame_content(Command.PROCESS, (n + 2) & 0xFFFF, c, crc=False), n + 2)
              for n, c in enumerate(chunks)]
    progress(f"simulating {size} bytes of CTR in {len(chunks)} datagrams over the "
             f"{phy.upper()} ...")
    replies, timing = _run([load] + frames, 1 + len(chunks), progress, phy, core_mhz)
    got = b"".join(parse_process_reply(r) for r in replies[1:])
    if got != expected:
        raise RuntimeError("the simulated Ethernet appliance's CTR output differs from "
                           "cryptography's")
    ends = timing.ends[1:]                      # the replies to PROCESS
    payload = size - min(size, _CHUNK)          # the replies after the first one
    cycles = ends[-1] - ends[0]
    fraction = payload / cycles / LINE_BYTES_PER_CYCLE[phy] if cycles else 0.0

    one = wire_frame(frame_content(Command.PROCESS, 9, independent_requests(
        0, Op.ENCRYPT, Mode.CTR, bytes(16), iv=iv, chunk_size=_CHUNK)[0], crc=False), 9)
    progress("simulating one 16-byte request on an idle device ...")
    replies, t1 = _run([load, one], 2, progress, phy, core_mhz, first_alone=True)
    # The bridge stores a frame whole before the PHY pins (a byte a cycle from the harness,
    # through its COBS decoder's cycle), then starts its preamble three cycles after its end
    # marker: the request's first symbol.
    first_nibble = (t1.starts[1] + len(one) + FIRST_SYMBOL_DELAY if len(t1.starts) > 1
                    else None)
    latency = t1.ends[1] - first_nibble if first_nibble is not None else None
    return {
        "design": "ethernet", "phy": phy, "line_mbit_s": LINE_MBIT_S[phy],
        "phy_clock_mhz": PHY_CLOCK_MHZ[phy], "mode": "ctr", "bytes": size,
        **({"core_mhz": min(core_mhz, RGMII_CLOCK_MHZ)} if phy == "rgmii" else {}),
        "chunk": _CHUNK, "datagrams": len(chunks), "cycles": cycles,
        "payload_fraction_of_line_rate": round(fraction, 4),
        # The requests are the longer frames, so they set the pace.
        "ceiling_fraction": round(_CHUNK / (_CHUNK + REQUEST_OVERHEAD), 4),
        "latency_cycles_16_bytes": latency,
        "latency_us": round(latency / PHY_CLOCK_MHZ[phy], 2) if latency is not None else None,
        "checked_with": "cryptography",
    }


def mode_cycles_ethernet(op, mode, data, *, key, iv, phy="mii", progress=lambda line: None):
    """PHY clock cycles the simulated Ethernet appliance takes per payload byte of ``data`` in
    ``mode`` (``op``), as :class:`~aes_fpga.appliance.udp_client.UdpDevice` sends it, checked
    against ``cryptography``. Returns ``(cycles, payload_bytes)``.

    ECB, CTR and CBC decryption: whole-message datagrams of ``MAX_PROCESS_DATA`` bytes, all
    queued at once, from the first reply to the last (as :func:`bench_ethernet`; ``data``
    spans at least two). CBC encryption chains through the device's output, so the host sends
    a chunk only once the previous reply is in: one chunk on an idle device, from its first
    preamble symbol to its reply's last symbol (the host's turnaround not counted).
    """
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    from ..appliance.messages import build_process_request
    op, mode = Op(op), Mode(mode)
    serial = mode == Mode.CBC and op == Op.ENCRYPT
    if serial:
        data = data[:_CHUNK]
    elif len(data) <= _CHUNK or len(data) % BLOCK_SIZE:
        raise ValueError(f"data: {len(data)} bytes; needs whole blocks spanning more than one "
                         f"{_CHUNK}-byte datagram")
    algo = {Mode.ECB: lambda: modes.ECB(), Mode.CBC: lambda: modes.CBC(iv),
            Mode.CTR: lambda: modes.CTR(iv)}[mode]()
    cipher = Cipher(algorithms.AES(key), algo)
    ctx = cipher.encryptor() if op == Op.ENCRYPT else cipher.decryptor()
    expected = ctx.update(data) + ctx.finalize()
    load = wire_frame(frame_content(Command.LOAD_KEY, 1, build_load_key_request(0, key), crc=False),
                 1)
    if serial:
        payloads = [build_process_request(0, op, mode, data, first=True, last=True, iv=iv)]
    else:
        payloads = independent_requests(0, op, mode, data, iv=iv, chunk_size=_CHUNK)
    frames = [wire_frame(frame_content(Command.PROCESS, n + 2, c, crc=False), n + 2)
              for n, c in enumerate(payloads)]
    replies, timing = _run([load] + frames, 1 + len(frames), progress, phy, first_alone=serial)
    if b"".join(parse_process_reply(r) for r in replies[1:]) != expected:
        raise RuntimeError(f"the simulated Ethernet appliance's {mode.name} output differs "
                           f"from cryptography's")
    if serial:
        # The first symbol of the request, as bench_ethernet's latency counts it.
        return timing.ends[1] - (timing.starts[1] + len(frames[0]) + 3), len(data)
    ends = timing.ends[1:]
    return ends[-1] - ends[0], len(data) - _CHUNK


def bench_ethernet_gcm(size=1 << 20, *, phy="mii", seed=1, core_mhz=RGMII_CLOCK_MHZ,
                       progress=lambda line: None):
    """GCM encryption's throughput on ``phy``: a ``size``-byte message (no AAD) as one GCM
    message of ``MAX_PROCESS_DATA``-byte chunks with consecutive seqs, every request queued at
    once; the reply payload rate from the first data chunk's reply to the tag's, as a fraction
    of the line rate (a dict). The ciphertext and tag are checked against ``cryptography``."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    from ..appliance.gcm import build_gcm_requests, parse_gcm_reply
    if phy not in LINE_BYTES_PER_CYCLE:
        raise ValueError(f"phy: {phy!r} is not a PHY interface; allowed "
                         f"{', '.join(LINE_BYTES_PER_CYCLE)}")
    if size <= _CHUNK:
        raise ValueError(f"size: {size!r} is out of range for a GCM bench; allowed more than "
                         f"one {_CHUNK}-byte chunk ({_CHUNK + 1} bytes or more)")
    rng = random.Random(seed)
    key, nonce, data = rng.randbytes(16), rng.randbytes(12), rng.randbytes(size)
    load = wire_frame(frame_content(Command.LOAD_KEY, 1, build_load_key_request(0, key), crc=False),
                 1)
    payloads = build_gcm_requests(0, Op.ENCRYPT, nonce, b"", data, chunk_size=_CHUNK)
    frames = [wire_frame(frame_content(Command.PROCESS, n + 2, c, crc=False), n + 2)
              for n, c in enumerate(payloads)]
    progress(f"simulating {size} bytes of GCM in {len(frames)} datagrams over the "
             f"{phy.upper()} ...")
    replies, timing = _run([load] + frames, 1 + len(frames), progress, phy, core_mhz)
    got = b"".join(parse_gcm_reply(p, r) for p, r in zip(payloads, replies[1:], strict=True))
    if got != AESGCM(key).encrypt(nonce, data, b""):
        raise RuntimeError("the simulated Ethernet appliance's GCM output differs from "
                           "cryptography's")
    ends = timing.ends[1:]                      # the replies to PROCESS
    cycles = ends[-1] - ends[0]
    fraction = (size - _CHUNK) / cycles / LINE_BYTES_PER_CYCLE[phy]
    return {
        "design": "ethernet", "phy": phy, "line_mbit_s": LINE_MBIT_S[phy],
        "phy_clock_mhz": PHY_CLOCK_MHZ[phy], "mode": "gcm", "bytes": size,
        **({"core_mhz": min(core_mhz, RGMII_CLOCK_MHZ)} if phy == "rgmii" else {}),
        "chunk": _CHUNK, "datagrams": len(frames), "cycles": cycles,
        "payload_fraction_of_line_rate": round(fraction, 4),
        "ceiling_fraction": round(_CHUNK / (_CHUNK + GCM_REQUEST_OVERHEAD), 4),
        "checked_with": "cryptography",
    }
