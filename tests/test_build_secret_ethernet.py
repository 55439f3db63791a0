# amaranth: UnusedElaboratable=no
"""The Ethernet appliance built with a device secret (what ``aes-fpga build --design ethernet
--device-key-file F`` builds), compiled (CXXRTL) and driven over UDP at the MII level by hosts
on ports of the link, the reference device with the same secret beside it: every datagram any
host sends goes to both, and every reply datagram must be the reference's, byte for byte (and
a datagram the reference drops must get none).

Before a session only ``INFO`` and the handshake are taken; the handshake gives the
reference's session and cryptogram, to the owner and to another host's port alike, and a wrong
cryptogram is refused. The owner's host driver then runs a whole session of records: a key
loaded, CTR and GCM through ``PROCESS``, ``STATS``, ``CLOSE_SESSION``.

:class:`Lan` is the bench of the attacks on the same link (tests/test_session_lan.py): every
test there runs this one compiled design. The first run compiles the simulator (about two
minutes); cached after, each test starts it in a fraction of a second."""

import hashlib
import inspect
import random
import time
from collections import defaultdict, deque

import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from aes_fpga.appliance import session_spec as S
from aes_fpga.appliance.client import split_stats
from aes_fpga.appliance.errors import UnknownSession
from aes_fpga.appliance.frame import frame_content
from aes_fpga.appliance.messages import (
    build_load_key_request,
    build_process_request,
    build_zeroize_request,
    parse_info_reply,
)
from aes_fpga.appliance.reference import DeviceModel
from aes_fpga.appliance.spec import (
    ALL_SLOTS,
    UDP_COUNTERS,
    Command,
    Mode,
    Op,
    Status,
    frame_size,
    reply_opcode,
)
from aes_fpga.appliance.udp_client import UdpDevice
from aes_fpga.sim.cxxsim import find_cxx, mark_used
from aes_fpga.sim.ethbridge import QUIET_CYCLES_SECURED

SECRET = bytes(range(90, 122))
KEY = bytes(range(16))
OPEN, AUTH = S.SessionCommand.OPEN_SESSION, S.SessionCommand.AUTHENTICATE
RECORD = S.SessionCommand.RECORD
#: The owner's and another host's UDP ports; the bench's own (its INFO requests show where
#: the device's answers to the datagrams before them end).
OWNER, OTHER, PROBE = 40000, 40001, 40009
#: ``phy_link`` of the simulated appliance: built without MDIO.
LINK_UNKNOWN = 0xFFFF

#: The compiled tests (a C++ compiler for the simulator).
COMPILED = pytest.mark.skipif(find_cxx() is None, reason="no C++ compiler for the simulator")


def secured_appliance():
    from aes_fpga.appliance.gateware.eth_appliance import EthernetAppliance
    from aes_fpga.cores import Compact8
    from aes_fpga.entropy import EntropySource
    from aes_fpga.primitives import NoiseModel
    from aes_fpga.sim.ethbridge import SIM_IP, SIM_MAC, SIM_PORT, MiiBridge
    from aes_fpga.sim.link import SIM_GCM
    core = Compact8(key_slots=1, key_sizes=(128,), tag_width=0)
    return MiiBridge(EthernetAppliance(mac=SIM_MAC, ip=SIM_IP, udp_port=SIM_PORT, core=core,
                                       key_slots=1, gcm=SIM_GCM, entropy=EntropySource(
                                           model=NoiseModel(seed=5)),
                                       device_secret=SECRET))


def cache_key():
    """The compiled simulator's name: :func:`secured_appliance`'s text and secret (the cache
    adds the package's sources)."""
    text = inspect.getsource(secured_appliance).encode() + SECRET
    return f"secured appliance of tests/test_build_secret_ethernet.py " \
           f"{hashlib.sha256(text).hexdigest()[:16]}"


class Lan:
    """A fresh simulation of the compiled appliance (a device just powered up) on its link,
    the reference device beside it.

    The appliance takes one datagram at a time and answers in order, so every reply it sends
    is matched to the oldest datagram not yet resolved: the datagrams before it that the
    reference drops must have got none, and it must be the reference's reply to the next one,
    to that datagram's port. The reference's device challenges are the appliance's (read from
    its ``OPEN_SESSION`` replies). :attr:`frames` holds every Ethernet frame both ways, in
    order (FCS left out, as a capture on a host shows them)."""

    def __init__(self):
        from aes_fpga.sim.cxxsim import open_device
        from aes_fpga.sim.ethbridge import FrameLink
        made = secured_appliance()
        self.info = made.appliance.info
        # (Named for the simulator cache, the cached simulator starts without elaborating it.)
        self.link = FrameLink(open_device(lambda: made, engine="cxxrtl", cache_key=cache_key(),
                                          quiet_cycles=QUIET_CYCLES_SECURED,
                                          progress=lambda line: None))
        mark_used(made)
        self.challenge = None
        self.model = DeviceModel(self.info, device_secret=SECRET,
                                 challenge_source=lambda: self.challenge)
        # What the appliance's STATS reports of its link: nothing dropped, no PHY on MDIO.
        self.model.counters = [LINK_UNKNOWN if name == "phy_link" else 0
                               for name in UDP_COUNTERS]
        self.waiting = deque()              # (port, datagram) sent, not yet resolved
        #: Every (port, datagram) sent, and every reply (port, datagram), in order.
        self.sent, self.received = [], []
        self.inbox = defaultdict(deque)     # port -> reply datagrams not yet read
        self.frames = []
        #: Replies compared with the reference's; datagrams both dropped.
        self.compared = self.dropped = 0
        self._seq = 0

    def close(self):
        self.link.close()

    def send(self, port, datagram):
        from aes_fpga.sim.ethbridge import HOST_IP, HOST_MAC, SIM_IP, SIM_MAC, SIM_PORT, udp_frame
        frame = udp_frame(bytes(datagram), src_mac=HOST_MAC, dst_mac=SIM_MAC, src_ip=HOST_IP,
                          dst_ip=SIM_IP, sport=port, dport=SIM_PORT, ident=len(self.frames))
        self.frames.append(frame)
        self.waiting.append((port, bytes(datagram)))
        self.sent.append((port, bytes(datagram)))
        # The appliance counts the datagrams too short or too long for a request (the
        # reference drops them without a word).
        if len(datagram) < 5:
            self.model.counters[UDP_COUNTERS.index("app_short")] += 1
        elif len(datagram) > frame_size(self.info.max_payload, crc=False):
            self.model.counters[UDP_COUNTERS.index("app_long")] += 1
        self.link.send(frame)

    def pump(self, timeout):
        """Take the next frame the appliance sends (``False`` if none within ``timeout``)."""
        from aes_fpga.sim.ethbridge import SIM_IP, SIM_PORT, parse_udp_frame
        frame = self.link.recv(timeout)
        if frame is None:
            return False
        self.frames.append(frame)
        got = parse_udp_frame(frame)
        assert got is not None and got[:2] == (SIM_IP, SIM_PORT), frame.hex()
        self._match(got[2], got[3])
        self.inbox[got[2]].append(got[3])
        self.received.append(got[2:])
        return True

    def _match(self, port, got):
        while True:
            assert self.waiting, f"a reply no datagram asked for: {got.hex()}"
            sent_from, sent = self.waiting.popleft()
            self.challenge = None
            if sent[0] == OPEN and got[:3] == bytes([reply_opcode(OPEN)]) + sent[1:3] \
                    and got[5:6] == bytes([Status.OK]):
                self.challenge = S.parse_open_reply(got[5:], ValueError)[1]
            want = self.model.datagram(sent)
            if want:
                break
            self.dropped += 1
        assert (port, got.hex()) == (sent_from, want.hex()), f"the reply to {sent.hex()}"
        self.compared += 1

    def settle(self):
        """Wait until every datagram sent is resolved: the bench's own ``INFO``, sent last,
        is answered after them all."""
        self._seq += 1
        self.send(PROBE, frame_content(Command.INFO, self._seq, b"", crc=False))
        while self.waiting:
            assert self.pump(60), "the appliance stopped answering"
        assert self.inbox[PROBE].pop()[:3] == bytes([reply_opcode(Command.INFO)]) + \
            self._seq.to_bytes(2, "big")

    def exchange(self, port, datagram):
        """Send ``datagram`` from ``port``; its reply, or ``None`` if it gets none."""
        self.send(port, datagram)
        self.settle()
        replies = self.inbox[port]
        assert len(replies) <= 1
        return replies.popleft() if replies else None

    def ask(self, port, command, payload=b"", seq=None):
        """A request in the clear from ``port``; its reply payload (``None``: no reply)."""
        if seq is None:
            self._seq += 1
            seq = self._seq
        reply = self.exchange(port, frame_content(command, seq, payload, crc=False))
        return None if reply is None else reply[5:]

    def ready(self):
        """Wait for the entropy source's start-up tests (``ENTROPY_FAILED`` to every handshake
        until then); the handshake that finds it ready stays pending."""
        rng = random.Random(1)
        for _ in range(200):
            status = self.ask(PROBE, OPEN, rng.randbytes(16))[0]
            if status == Status.OK:
                return
            assert status == Status.ENTROPY_FAILED
        raise AssertionError("the entropy source never became ready")

    def host(self, port, **options):
        """The host driver on ``port`` (:class:`Host`)."""
        return UdpDevice(Host(self, port), timeout=30, retries=1, **options)


class Host:
    """One host's datagram link on the :class:`Lan` (for
    :class:`~aes_fpga.appliance.udp_client.UdpDevice`). :attr:`forge`, when set, gives for each
    datagram sent the datagrams another host puts in front of the device's reply (spoofing the
    device's address)."""

    def __init__(self, lan, port):
        self.lan, self.port = lan, port
        self.name = f"host port {port}"
        self.forge = None
        self.forged = 0

    def send(self, datagram):
        self.lan.send(self.port, datagram)
        if self.forge is not None:
            forged = self.forge(bytes(datagram))
            self.forged += len(forged)
            self.lan.inbox[self.port].extend(forged)

    def recv(self, timeout):
        deadline = time.monotonic() + timeout
        inbox = self.lan.inbox[self.port]
        while not inbox:
            left = deadline - time.monotonic()
            if left <= 0 or not self.lan.pump(left):
                return None
        return inbox.popleft()

    def close(self):
        pass


def ctr(key, iv, data):
    return Cipher(algorithms.AES(key), modes.CTR(iv)).encryptor().update(data)


@pytest.mark.slow
@COMPILED
def test_the_handshake_against_the_reference(lan):
    info = parse_info_reply(lan.ask(OWNER, Command.INFO))
    assert info.sessions and info.entropy and info.key_slots == 1 and Mode.GCM in info.modes
    clear = [(Command.LOAD_KEY, build_load_key_request(0, KEY)),
             (Command.ZEROIZE, build_zeroize_request(ALL_SLOTS)), (Command.STATS, b""),
             (Command.PROCESS, build_process_request(0, Op.ENCRYPT, Mode.ECB, bytes(16),
                                                     first=True, last=True)),
             (Command.RANDOM, b"\x01")]
    for command, payload in clear:
        assert lan.ask(OTHER, command, payload)[0] == Status.SESSION_REQUIRED
    lan.ready()
    # Another host's handshake is answered too (it proves nothing without the secret).
    rng = random.Random(3)
    host = rng.randbytes(16)
    sid, device, cryptogram = S.parse_open_reply(lan.ask(OTHER, OPEN, host), ValueError)
    keys = S.derive_session(SECRET, host, device, sid)
    assert cryptogram == keys.device_cryptogram
    assert lan.ask(OTHER, AUTH, S.build_authenticate_request(
        sid, bytes(16)))[0] == Status.BAD_CRYPTOGRAM
    assert lan.ask(OWNER, AUTH, S.build_authenticate_request(
        sid, keys.host_cryptogram))[0] == Status.OK
    assert sid in lan.model.sessions.session_ids
    # A session held changes nothing for requests in the clear.
    for command, payload in clear[:3]:
        assert lan.ask(OTHER, command, payload)[0] == Status.SESSION_REQUIRED
    assert not lan.model.key_loaded(0)
    assert lan.compared >= 16 and not lan.dropped


@pytest.mark.slow
@COMPILED
def test_an_owners_session_of_records_against_the_reference(lan):
    rng = random.Random(4)
    lan.ready()
    dev = lan.host(OWNER, device_key=SECRET)
    dev.load_key(0, KEY)                        # opens the session; the key in a record
    assert dev.session.opened == 1 and lan.model.key_loaded(0)
    # CTR over three records (the driver's chunks, two in flight), then GCM both ways.
    data = rng.randbytes(3000)
    iv = rng.randbytes(16)
    assert dev.process(0, Op.ENCRYPT, Mode.CTR, data, iv=iv) == ctr(KEY, iv, data)
    nonce, aad = rng.randbytes(12), rng.randbytes(40)
    ct, tag = dev.gcm_encrypt(0, nonce, aad, data[:1500])
    assert ct + tag == AESGCM(KEY).encrypt(nonce, data[:1500], aad)
    assert dev.gcm_decrypt(0, nonce, aad, ct, tag) == data[:1500]
    _, _, counters = split_stats(dev.info(), dev.stats())
    assert counters == {"auth_failures": 0, "session_failures": 0}
    sid, = lan.model.sessions.session_ids       # one session, eight records or more
    assert lan.model.sessions.last_counters[sid] >= 8
    # CLOSE_SESSION in a record: its sealed OK is the session's last reply.
    assert dev.request(S.SessionCommand.CLOSE_SESSION) == b"\x00"
    assert lan.model.sessions.session_ids == []
    with pytest.raises(UnknownSession):
        dev.stats()
    # The driver opens a new session for its next request; the key is still loaded.
    assert dev.process(0, Op.ENCRYPT, Mode.CTR, data[:32], iv=iv) == ctr(KEY, iv, data[:32])
    assert dev.session.opened == 2
    lan.settle()
    assert lan.compared >= 20 and not lan.dropped


@pytest.mark.parametrize("options,match", [
    ({"entropy": None}, "entropy"),
    ({"core_slots": 1, "key_slots": 2}, "key_slots"),
])
def test_the_ethernet_appliance_refuses_a_secret_it_cannot_serve(options, match):
    from aes_fpga.appliance.gateware.eth_appliance import EthernetAppliance
    from aes_fpga.cores import Compact8
    from aes_fpga.entropy import EntropySource
    args = {"mac": "02:00:00:00:00:02", "ip": "10.0.0.2", "udp_port": 7001, "key_slots": 1,
            "key_sizes": (128, 256), "device_secret": SECRET, **options}
    if "entropy" not in args:
        args["entropy"] = EntropySource()
    if "core_slots" in args:
        args["core"] = Compact8(key_slots=args.pop("core_slots"), key_sizes=(128, 256),
                                tag_width=0)
    with pytest.raises(ValueError, match=match) as e:
        EthernetAppliance(**args)
    mark_used(list(args.values()))  # (the source and core of a refused appliance: never elaborated)
    assert SECRET.hex() not in str(e.value)


def test_the_ethernet_appliance_with_a_secret_says_so():
    from aes_fpga.appliance.gateware.eth_appliance import EthernetAppliance
    from aes_fpga.entropy import EntropySource
    dut = EthernetAppliance(mac="02:00:00:00:00:02", ip="10.0.0.2", udp_port=7001, key_slots=2,
                            entropy=EntropySource(), device_secret=SECRET)
    assert dut.info.sessions and dut.info.key_slots == 2
    assert dut.core.key_slots == 2      # (the sessions' keys are the records' cipher's)
    assert SECRET.hex() not in repr(dut) and SECRET.hex() not in repr(dut.info)
    open_one = EthernetAppliance(mac="02:00:00:00:00:02", ip="10.0.0.2", udp_port=7001)
    assert not open_one.info.sessions
    mark_used([dut, open_one])          # inspected, never elaborated
