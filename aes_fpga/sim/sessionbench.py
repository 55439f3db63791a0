"""The secured Ethernet appliance's figures inside a session, measured on the compiled
simulation at the MII level (as :mod:`aes_fpga.sim.ethbench` measures the open appliance):
the handshake's device time and the payload throughput of CTR records.

Handshake: ``OPEN_SESSION`` and ``AUTHENTICATE``, each on an idle device, from the request's
first preamble symbol on the receive pins to its reply's last symbol on the transmit pins
(the round trip), and that less both frames' time on the wire (the device time: from the
request's last symbol in to its reply's first symbol out). The host's own time between them
is not counted. Throughput: a key loaded inside the session, then a CTR message of ``size``
bytes as records of :meth:`~aes_fpga.appliance.session_host.HostSession.max_chunk` bytes of
data each (as the host driver cuts it), every record queued at once so the receive line never
idles; the reply payload rate between the first and the last reply, as a fraction of the line
rate (the plain-text bytes of the message, not the records' own). A device slower than the
line drops what its receive buffer cannot hold (the host would send those again): the
fraction is then what it delivered (its ``goodput``), and ``dropped`` says how many records it
lost. A second reply to a record (a device answering one request twice) adds no data: it
counts in ``duplicates``, and the run goes on until every record is answered. Every reply is
opened under the session's reply key and checked against ``cryptography``.
"""

import random

from ..appliance.errors import error_for_status
from ..appliance.frame import decode_frame, frame_content
from ..appliance.messages import build_load_key_request
from ..appliance.session_host import HostSession
from ..appliance.session_spec import RECORD_OVERHEAD, SessionCommand
from ..appliance.spec import MAX_PROCESS_DATA, Command, Mode, Op, Status
from ..appliance.udp_client import independent_requests
from .ethbench import LINE_BYTES_PER_CYCLE, LINE_MBIT_S, PHY_CLOCK_MHZ, wire_frame
from .ethbridge import FIRST_SYMBOL_DELAY, QUIET_CYCLES_SECURED, parse_udp_frame, unescape

__all__ = ["bench_ethernet_session", "secured_ethernet_appliance", "WIRE_BYTES"]

#: A frame's bytes on the wire besides its UDP payload: preamble and SFD, Ethernet header,
#: IPv4 and UDP headers, FCS and inter-frame gap (a frame is at least 64 bytes with its FCS).
WIRE_BYTES = 8 + 14 + 28 + 4 + 12


def _wire_cycles(datagram, phy):
    """Cycles a datagram's frame takes on the line (preamble to FCS, no gap)."""
    frame = max(14 + 28 + len(datagram), 60) + 4
    return round((8 + frame) / LINE_BYTES_PER_CYCLE[phy])


def secured_ethernet_appliance(secret, *, core="drab-locus", key_slots=1, phy="mii"):
    """The simulated secured Ethernet appliance (what ``aes-fpga build --design ethernet
    --device-key-file`` builds, behind :class:`~aes_fpga.sim.ethbridge.MiiBridge`) with the
    main ``core`` (AES-128, ``key_slots`` slots) and the device secret ``secret``, and its
    name for the simulator cache: ``(make, key)``. The secret is in neither the name nor any
    message; the cache key holds a digest of it only."""
    import hashlib

    def make():
        from ..appliance.gateware.eth_appliance import EthernetAppliance
        from ..cores import make_core
        from ..entropy import EntropySource
        from ..primitives import NoiseModel
        from .ethbridge import SIM_IP, SIM_MAC, SIM_PORT, MiiBridge
        from .link import SIM_GCM
        made = make_core(core, key_slots=key_slots, key_sizes=(128,), tag_width=0)
        return MiiBridge(EthernetAppliance(
            mac=SIM_MAC, ip=SIM_IP, udp_port=SIM_PORT, core=made, key_slots=key_slots, phy=phy,
            gcm=SIM_GCM, entropy=EntropySource(model=NoiseModel(seed=5)),
            device_secret=bytes(secret)))

    digest = hashlib.sha256(b"sessionbench" + bytes(secret)).hexdigest()[:16]
    return make, f"secured EthernetAppliance(core={core}, key_slots={key_slots}, phy={phy}, " \
                 f"secret digest {digest})"


class _NotReady(Exception):
    """``ENTROPY_FAILED`` to a handshake: the entropy source's start-up tests still run."""


class _Bench:
    """The compiled appliance and the host's session on it; every frame sent and every reply
    received kept in order (the simulation's frame timing counts them in that order)."""

    def __init__(self, make, cache_key, secret, progress):
        from .cxxsim import open_device
        self.link = open_device(make, engine="cxxrtl", cache_key=cache_key, progress=progress,
                                quiet_cycles=QUIET_CYCLES_SECURED)
        self.session = HostSession(secret)
        #: The datagrams sent and the escaped frames that carried them, in order.
        self.sent, self.frames = [], []
        #: The reply datagrams received, in order, and each one's place among all the frames
        #: the device sent (its index in the run's ``FrameTiming.ends``).
        self.received, self.placed = [], []
        self.seq = 0
        self._frames_out = 0
        self._buf = bytearray()

    def send(self, command, payload, seq=None):
        self.seq = seq = (self.seq + 1) & 0xFFFF if seq is None else seq
        datagram = frame_content(command, seq, payload, crc=False)
        self.sent.append(datagram)
        self.frames.append(wire_frame(datagram, len(self.sent)))
        self.link.write(self.frames[-1])

    def recv(self, timeout):
        """The next reply frame (decoded), or ``None`` after ``timeout`` s without one."""
        while True:
            while b"\0" not in self._buf:
                more = self.link.read_until(b"\0", timeout=timeout)
                if not more:
                    return None
                self._buf += more
            end = self._buf.index(b"\0")
            frame = unescape(bytes(self._buf[:end]))[:-4]
            del self._buf[:end + 1]
            self._frames_out += 1
            got = parse_udp_frame(frame)
            if got is not None:
                self.received.append(got[3])
                self.placed.append(self._frames_out - 1)
                return decode_frame(got[3], crc=False, max_payload=1 << 16)

    def request(self, command, payload):
        """One request on an idle device (sealed in a session, but for the handshake): its
        ``OK`` reply payload; :class:`_NotReady` on ``ENTROPY_FAILED``."""
        self.send(*self.session.seal(command, (self.seq + 1) & 0xFFFF, payload))
        reply = self.recv(60.0)
        if reply is None:
            raise RuntimeError(f"the simulated appliance did not answer {command!r}")
        if reply.command == SessionCommand.RECORD | 0x80:
            reply = self.session.open(reply)
        status = reply.payload[0]
        if status == Status.ENTROPY_FAILED:
            raise _NotReady()
        if status != Status.OK:
            raise error_for_status(status)(f"command {command:#04x}: status {status:#04x}")
        return reply.payload

    def close(self):
        self.link.close()
        return self.link.timing


def bench_ethernet_session(secret, size=1 << 20, *, make=None, cache_key=None,
                           core="drab-locus", phy="mii", seed=1, progress=lambda line: None):
    """The figures (a dict) of the secured Ethernet appliance (:func:`secured_ethernet_
    appliance` with ``core``, or the one ``make`` makes, named ``cache_key``) with the device
    secret ``secret``, on ``phy`` (``"mii"`` or ``"rmii"``, 100 Mbit/s): see the module's
    docstring. ``size`` bytes of CTR (at least one byte)."""
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
    if phy not in ("mii", "rmii"):
        raise ValueError(f"phy: {phy!r} is not allowed; the session bench runs 'mii' or 'rmii'")
    if not isinstance(size, int) or size < 1:
        raise ValueError(f"size: {size!r} is not a positive number of bytes")
    if make is None:
        make, cache_key = secured_ethernet_appliance(secret, core=core, phy=phy)
    bench = _Bench(make, cache_key, secret, progress)
    rng = random.Random(seed)
    key, iv, data = rng.randbytes(16), rng.randbytes(16), rng.randbytes(size)
    # (HostSession.max_chunk of the appliance's INFO: a record as large as a request may be)
    chunk = (MAX_PROCESS_DATA - RECORD_OVERHEAD) // 16 * 16
    payloads = independent_requests(0, Op.ENCRYPT, Mode.CTR, data, iv=iv, chunk_size=chunk)
    # The records' outputs, the order they came in, where each reply is among the frames the
    # device sent; the second replies to a record.
    got, order, placed, duplicates = {}, [], {}, 0
    try:
        progress("simulating the session's handshake ...")
        for _ in range(_READY_TRIES):
            try:
                bench.session.handshake(bench.request)
                break
            except _NotReady:
                continue
        else:
            raise RuntimeError("the simulated appliance's entropy source never became ready")
        # OPEN_SESSION and AUTHENTICATE: each request's place among those sent, its reply's
        # among those received.
        hand = [(len(bench.sent) - k, len(bench.received) - k) for k in (2, 1)]
        bench.request(Command.LOAD_KEY, build_load_key_request(0, key))
        progress(f"simulating {size} bytes of CTR in {len(payloads)} records over the "
                 f"{phy.upper()} ...")
        first, seqs = len(bench.sent), {}
        for n, p in enumerate(payloads):
            seq = (bench.seq + 1) & 0xFFFF
            seqs[seq] = n
            bench.send(*bench.session.seal(Command.PROCESS, seq, p), seq=seq)
        while len(order) < len(payloads):
            reply = bench.recv(_DROP_TIMEOUT if order else 60.0)
            if reply is None:
                break
            inner = bench.session.open(reply)
            if inner is None or inner.payload[:1] != bytes([Status.OK]):
                what = "did not open" if inner is None else f"is status {inner.payload[0]:#04x}"
                raise RuntimeError(f"the reply to record seq {reply.seq} {what}")
            n = seqs[reply.seq]
            if n in got:
                # A record answered twice: no more data delivered, and it must not end the
                # run before the records still to be answered.
                if inner.payload[1:] != got[n]:
                    raise RuntimeError(f"two different replies to record seq {reply.seq}")
                duplicates += 1
                continue
            got[n] = inner.payload[1:]
            order.append(n)
            placed[n] = bench.placed[-1]
    finally:
        timing = bench.close()
    ctx = Cipher(algorithms.AES(key), modes.CTR(iv)).encryptor()
    expected = ctx.update(data) + ctx.finalize()
    if any(out != expected[n * chunk:(n + 1) * chunk] for n, out in got.items()):
        raise RuntimeError("the simulated secured appliance's CTR output differs from "
                           "cryptography's")
    if not order:
        raise RuntimeError("the simulated secured appliance answered no record")
    # A request's first symbol on the receive pins (the bridge stores a frame whole, then
    # starts its preamble FIRST_SYMBOL_DELAY cycles after its end); its reply's last symbol.
    pin = [timing.starts[i] + len(f) + FIRST_SYMBOL_DELAY for i, f in enumerate(bench.frames)]
    trips = [timing.ends[bench.placed[r]] - pin[k] for k, r in hand]
    wire = [_wire_cycles(bench.sent[k], phy) + _wire_cycles(bench.received[r], phy)
            for k, r in hand]
    device = sum(t - w for t, w in zip(trips, wire, strict=True))
    # From the first record's first symbol on the pins to the last reply's end: a device that
    # answers its first records late (the session key's GHASH set-up, a backlog) and then
    # replies from its queue faster than the line could have brought the requests cannot
    # look faster than the line. The last reply is the last record's to come, found by its
    # place among the device's frames (a record answered twice, say, is one more frame).
    delivered = sum(len(got[n]) for n in order)
    cycles = timing.ends[placed[order[-1]]] - pin[first]
    fraction = delivered / cycles / LINE_BYTES_PER_CYCLE[phy] if cycles else None
    mhz = PHY_CLOCK_MHZ[phy]
    return {
        "design": "ethernet", "phy": phy, "line_mbit_s": LINE_MBIT_S[phy], "phy_clock_mhz": mhz,
        "session": True, "mode": "ctr", "bytes": size, "chunk": chunk,
        "records": len(payloads), "replies": len(order), "dropped": len(payloads) - len(order),
        "duplicates": duplicates,
        "cycles": cycles,
        "payload_fraction_of_line_rate": round(fraction, 4) if fraction is not None else None,
        # The requests are the longer frames, so they set the pace.
        "ceiling_fraction": round(chunk / (len(bench.sent[first]) + WIRE_BYTES), 4),
        "first_record_round_trip_cycles": (timing.ends[placed[0]] - pin[first]
                                           if 0 in placed else None),
        "handshake_round_trip_cycles": trips,
        "handshake_device_cycles": device,
        "handshake_device_us": round(device / mhz, 2),
        "checked_with": "cryptography",
    }


#: Handshakes tried while the entropy source starts up.
_READY_TRIES = 400
#: Seconds without a reply after which the records not answered count as dropped.
_DROP_TIMEOUT = 20.0
