"""An attacker on the link of a device with a secret (spec aes_fpga.appliance.session_spec,
"What an attacker on the link can and cannot do"): another host sending its own frames or
datagrams, replaying, altering and forging what it sees, against the reference device and the
owner's host driver, over serial framing and UDP datagrams, in process."""

import os
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from udp_links import ModelDatagramLink, reference

from aes_fpga.appliance import session_spec as S
from aes_fpga.appliance.client import Device, DeviceTimeout
from aes_fpga.appliance.cobs import cobs_decode
from aes_fpga.appliance.errors import SessionRequired, UnknownSession
from aes_fpga.appliance.frame import FrameDecoder, decode_frame, encode_frame, frame_content
from aes_fpga.appliance.messages import DeviceInfo, build_load_key_request
from aes_fpga.appliance.reference import DeviceModel
from aes_fpga.appliance.session_host import WrongDeviceKey
from aes_fpga.appliance.spec import Command, Mode, Op, Status
from aes_fpga.appliance.udp_client import UdpDevice

SECRET = bytes(range(200, 232))
KEY1, KEY2 = bytes(range(1, 17)), bytes(range(17, 33))
INFO = DeviceInfo(modes=tuple(Mode), window=4, key_slots=2)
RECORD = S.SessionCommand.RECORD


class Tap:
    """The link as an attacker sees it: every request (frame content) the host sends and
    every reply it gets, in order; :attr:`forge` may put frames before a genuine reply or
    replace it."""

    def __init__(self, datagrams, secret=SECRET):
        self.datagrams = datagrams
        self.name = "tap"
        self.device = DeviceModel(INFO, device_secret=secret)
        self.requests, self.replies = [], []
        self.forge = None           # content -> list of contents delivered instead
        self.after = None           # called with each request content once it is answered
        self._decoder, self._inbox = FrameDecoder(), []

    # The device as both transports reach it, frame content in, frame content out.
    def deliver(self, content):
        if self.datagrams:
            return self.device.datagram(content) or None
        out = self.device.respond(content)
        return cobs_decode(out[:-1]) if out else None

    def attack(self, content):
        """A frame content sent by the attacker (a serial frame gets its CRC recomputed by
        the caller through :func:`content`); the reply's content, or ``None``."""
        return self.deliver(content)

    def _exchange(self, content):
        self.requests.append(content)
        reply = self.deliver(content)
        if self.after:
            self.after(content)
        if reply is None:
            return
        self.replies.append(reply)
        for out in (self.forge(reply) if self.forge else [reply]):
            self._inbox.append(out if self.datagrams else encode_frame(*_split(out)))

    # Datagram link.
    def send(self, datagram):
        self._exchange(bytes(datagram))

    def recv(self, timeout):
        return self._inbox.pop(0) if self._inbox else None

    # Serial link.
    def write(self, data):
        for content in self._decoder.feed(bytes(data)):
            self._exchange(content)

    def read_until(self, delimiter=b"\0", timeout=1.0):
        return self._inbox.pop(0) if self._inbox else b""

    def close(self):
        pass


def _split(content):
    # A serial reply's parts, for encode_frame to give it a CRC again (as a forger would).
    return content[0], int.from_bytes(content[1:3], "big"), content[5:len(content) - 4]


def content(datagrams, command, seq, payload):
    """A request as the transport carries it (the CRC recomputed on serial)."""
    return frame_content(command, seq, payload, crc=not datagrams)


def payload_of(datagrams, raw):
    return raw[5:] if datagrams else raw[5:-4]


def owner(tap, key=SECRET):
    if tap.datagrams:
        # The model answers within send(): the timeout only has to cover its work.
        return UdpDevice(tap, timeout=0.5, retries=2, device_key=key)
    return Device(tap, timeout=0.2, device_key=key)


def attacker(tap):
    return UdpDevice(tap, timeout=0.5, retries=0) if tap.datagrams else Device(tap, timeout=0.2)


def encrypts_with(dev, key):
    data = os.urandom(48)
    return dev.process(0, Op.ENCRYPT, Mode.ECB, data, iv=bytes(16)) == \
        reference(Mode.ECB, Op.ENCRYPT, key, bytes(16), data)


TRANSPORTS = pytest.mark.parametrize("datagrams", [True, False], ids=["udp", "serial"])


@TRANSPORTS
def test_without_the_key_only_info(datagrams):
    tap = Tap(datagrams)
    dev = owner(tap)
    dev.load_key(0, KEY1)
    before = tap.device.sessions.last_counters
    them = attacker(tap)
    assert them.info().sessions
    for call in (lambda: them.load_key(0, KEY2), lambda: them.zeroize(),
                 lambda: them.stats(), lambda: them.process(0, Op.ENCRYPT, Mode.ECB,
                                                            bytes(16), iv=bytes(16))):
        with pytest.raises(SessionRequired):
            call()
    with pytest.raises(WrongDeviceKey):
        owner(tap, key=bytes(32)).load_key(0, KEY2)
    assert tap.device.sessions.last_counters == before
    assert tap.device.key_loaded(0) and encrypts_with(dev, KEY1)


@TRANSPORTS
def test_replayed_requests_and_sessions_are_refused(datagrams):
    tap = Tap(datagrams)
    dev = owner(tap)
    dev.load_key(0, KEY1)
    dev.load_key(0, KEY2)
    for _ in range(INFO.window):
        dev.stats()                      # the loads' replies are no longer kept
    failures = tap.device.sessions.failures
    recorded = list(tap.requests)
    records = [r for r in recorded if r[0] == RECORD]
    for raw in records:
        assert tap.attack(raw) is None or raw in records[-INFO.window:]
    assert tap.device.sessions.failures > failures
    assert encrypts_with(dev, KEY2)
    # The whole session, replayed into the same device and into it after a restart.
    for restart in (False, True):
        if restart:
            tap.device = DeviceModel(INFO, device_secret=SECRET)
        for raw in recorded:
            reply = tap.attack(raw)
            # A kept reply given again (nothing run), UNKNOWN_SESSION, or nothing.
            kept = not restart and raw in records[-INFO.window:]
            if raw[0] == RECORD and reply is not None and not kept:
                assert len(payload_of(datagrams, reply)) == 1
        assert tap.device.key_loaded(0) != restart
    with pytest.raises(UnknownSession):
        dev.load_key(0, KEY1)


@TRANSPORTS
def test_a_flipped_byte_anywhere_is_dropped_and_counted(datagrams):
    tap = Tap(datagrams)
    dev = owner(tap)
    dev.load_key(0, KEY1)
    seq = 0x4242
    opcode, record = dev.session.seal(Command.LOAD_KEY, seq, build_load_key_request(0, KEY2))
    failures = tap.device.sessions.failures
    # Every byte of the record after the session id, and of the seq: dropped without a reply,
    # counted. A changed session id names no session: UNKNOWN_SESSION, as for any stranger.
    places = [(None, i) for i in range(len(record))] + [("seq", 0), ("seq", 1)]
    for where, i in places:
        bad, bad_seq = bytearray(record), seq
        if where is None:
            bad[i] ^= 0x10
        else:
            bad_seq ^= 0x100 if i == 0 else 1
        reply = tap.attack(content(datagrams, opcode, bad_seq, bytes(bad)))
        if where is None and i < S.SESSION_ID_BYTES:
            assert payload_of(datagrams, reply) == bytes([Status.UNKNOWN_SESSION])
        else:
            assert reply is None
    assert tap.device.sessions.failures == failures + len(places) - S.SESSION_ID_BYTES
    # The opcode or the length field changed: a refusal in the clear, nothing run.
    for command in (Command.LOAD_KEY, S.SessionCommand.AUTHENTICATE, 0x7F):
        reply = tap.attack(content(datagrams, command, seq, record))
        assert len(payload_of(datagrams, reply)) == 1
    # None of that took the record's counter (on serial a later record would): the genuine
    # one is still run.
    reply = tap.attack(content(datagrams, opcode, seq, record))
    assert dev.session.open(decode_frame(reply, crc=not datagrams)).payload == b"\x00"
    assert encrypts_with(dev, KEY2)


@TRANSPORTS
def test_a_forged_reply_is_refused_by_the_host(datagrams):
    tap = Tap(datagrams)
    dev = owner(tap)
    dev.load_key(0, KEY1)
    earlier = tap.replies[-1]
    crc = 0 if datagrams else 4

    def forgeries(reply):
        out = []
        for i in range(5, len(reply) - crc, 7):
            bad = bytearray(reply)
            bad[i] ^= 1
            out.append(bytes(bad))
        # A genuine earlier reply sent with this seq; a clear OK.
        out.append(reply[:1] + reply[1:3] + earlier[3:])
        out.append(reply[:1] + reply[1:3] + b"\x00\x01\x00" + bytes(crc))
        # A clear OK as if the request had been sent in the clear, whatever it was.
        for command in Command:
            out.append(bytes([command | 0x80]) + reply[1:3] + b"\x00\x01\x00" + bytes(crc))
        return out

    # Records' replies forged (INFO is not authenticated, the handshake by its cryptograms).
    dev.info()
    tap.forge = lambda reply: [*forgeries(reply), reply] if reply[0] == 0xA2 else [reply]
    assert encrypts_with(dev, KEY1)          # every forgery ignored, the genuine reply taken
    tap.forge = forgeries
    dev.timeout = 0.05
    with pytest.raises(DeviceTimeout):
        dev.stats()


@TRANSPORTS
def test_an_attackers_handshakes_only_delay_the_owners(datagrams):
    tap = Tap(datagrams)
    opens = []

    def interfere(request):
        # Another host's OPEN_SESSION right after each of the owner's first two.
        if request[0] == S.SessionCommand.OPEN_SESSION and len(opens) < 2:
            opens.append(tap.attack(content(datagrams, request[0], 9, os.urandom(16))))

    tap.after = interfere
    dev = owner(tap)
    dev.load_key(0, KEY1)
    assert len(opens) == 2 and dev.session.opened == 1
    assert encrypts_with(dev, KEY1)


@TRANSPORTS
def test_a_request_copied_into_another_session_fails(datagrams):
    tap = Tap(datagrams)
    alice, bob = owner(tap), owner(tap)
    alice.load_key(0, KEY1)
    bob.load_key(1, KEY1)
    seq = 7
    opcode, record = alice.session.seal(Command.LOAD_KEY, seq, build_load_key_request(0, KEY2))
    bob_id = tap.device.sessions.session_ids[-1]
    moved = bob_id + record[4:]
    failures = tap.device.sessions.failures
    assert tap.attack(content(datagrams, opcode, seq, moved)) is None
    assert tap.device.sessions.failures == failures + 1
    assert encrypts_with(bob, KEY1) and encrypts_with(alice, KEY1)
    # Once alice's session is replaced, her record is refused for that.
    owner(tap).stats()
    reply = tap.attack(content(datagrams, opcode, seq, record))
    assert payload_of(datagrams, reply) == bytes([Status.UNKNOWN_SESSION])


@TRANSPORTS
def test_the_wire_carries_neither_the_key_nor_the_plaintext(datagrams):
    data = os.urandom(4000)
    for secured in (True, False):
        tap = Tap(datagrams)
        if not secured:
            tap.device = DeviceModel(INFO)
        dev = owner(tap) if secured else attacker(tap)
        dev.load_key(0, KEY1)
        dev.process(0, Op.ENCRYPT, Mode.CTR, data, iv=bytes(16))
        nonce = os.urandom(12)
        ct, tag = dev.gcm_encrypt(0, nonce, b"", data)
        wire = b"".join(tap.requests + tap.replies)
        blocks = [data[i:i + 16] for i in range(0, len(data), 16)]
        found = [KEY1 in wire, any(b in wire for b in blocks)]
        # The same check finds both on an open device: it can fail.
        assert found == ([False, False] if secured else [True, True])


def fuzz_world():
    link = ModelDatagramLink(window=4)
    link.device = DeviceModel(link.device.info, device_secret=SECRET)
    tap = []
    send = link.send
    link.send = lambda d: (tap.append(bytes(d)), send(d))
    dev = UdpDevice(link, timeout=0.5, retries=2, device_key=SECRET)
    dev.load_key(0, KEY1)
    dev.stats()
    return link, dev, tap


def mutate(rng, samples):
    d = bytearray(rng.choice(samples))
    for _ in range(rng.randint(1, 4)):
        kind = rng.randrange(4)
        if kind == 0 and d:
            d[rng.randrange(len(d))] ^= 1 << rng.randrange(8)
        elif kind == 1:
            d = d[:rng.randrange(len(d) + 1)]
        elif kind == 2:
            d += os.urandom(rng.randrange(1, 20))
        elif d:
            d[rng.randrange(len(d))] = rng.randrange(256)
    if len(d) >= 5 and rng.random() < 0.7:
        d[3:5] = (len(d) - 5).to_bytes(2, "big")     # past the length check, to the tag's
    return bytes(d)


def fuzz(link, dev, samples, datagrams):
    device = link.device
    keys = [device.key_loaded(s) for s in range(2)]
    counters = device.sessions.last_counters
    for d in datagrams:
        link.device.datagram(d)
        assert [device.key_loaded(s) for s in range(2)] == keys
        assert device.sessions.last_counters == counters
    assert encrypts_with(dev, KEY1)             # the owner's next request succeeds


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2 ** 32 - 1),
       noise=st.lists(st.binary(min_size=0, max_size=80), max_size=40))
def test_fuzz_random_and_mutated_datagrams(seed, noise):
    link, dev, samples = fuzz_world()
    rng = random.Random(seed)
    fuzz(link, dev, samples, noise + [mutate(rng, samples) for _ in range(60)])


@pytest.mark.slow
def test_fuzz_a_hundred_thousand_datagrams():
    link, dev, samples = fuzz_world()
    rng = random.Random(27)
    for _ in range(100):
        batch = [mutate(rng, samples) if rng.random() < 0.8 else os.urandom(rng.randrange(90))
                 for _ in range(1000)]
        fuzz(link, dev, samples, batch)
