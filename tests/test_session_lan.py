# amaranth: UnusedElaboratable=no
"""The attacker on the same link as the secured Ethernet appliance: another host (another UDP
port, or the owner's port once the owner is done) that records the owner's datagrams and
sends them again, altered, moved into another session, into the device after it restarted,
and forges replies to the owner's host. The compiled appliance of
tests/test_build_secret_ethernet.py, every reply datagram against the reference device's
(:class:`~test_build_secret_ethernet.Lan`), the owner's host driver beside: every attack is
refused as spec :mod:`aes_fpga.appliance.session_spec` says ("What an attacker on the link can
and cannot do"), counted where it says so, and the owner's next record still works. The
captured traffic of a session that loads a key and encrypts a file (a pcap) holds every
record and neither the key nor the file."""

import random
from types import SimpleNamespace

import pytest
from test_build_secret_ethernet import (
    COMPILED,
    OTHER,
    OWNER,
    RECORD,
    SECRET,
    Lan,
    ctr,
)
from test_session_fuzz import mutate

from aes_fpga.appliance import session_spec as S
from aes_fpga.appliance.client import split_stats
from aes_fpga.appliance.frame import decode_frame, frame_content
from aes_fpga.appliance.gcm import build_gcm_requests
from aes_fpga.appliance.messages import build_load_key_request
from aes_fpga.appliance.spec import Command, Mode, Op, Status, reply_opcode
from aes_fpga.model import encrypt_block

KEY1, KEY2 = bytes(range(1, 17)), bytes(range(17, 33))
#: A third host with the device key (another session of the owner's).
BOB = 40002

pytestmark = [pytest.mark.slow, COMPILED]


def owner(lan, port=OWNER, key=KEY1):
    """The owner's host driver on ``port``, its session open and ``key`` loaded in slot 0."""
    lan.ready()
    dev = lan.host(port, device_key=SECRET)
    dev.load_key(0, key)
    return dev


def session_failures(dev):
    return split_stats(dev.info(), dev.stats())[2]["session_failures"]


def encrypts_with(dev, key, rng):
    block = rng.randbytes(16)
    return dev.process(0, Op.ENCRYPT, Mode.ECB, block) == encrypt_block(key, block)


def records(lan, port=OWNER):
    return [d for p, d in lan.sent if p == port and d[0] == RECORD]


def reply_to(lan, datagram, port=OWNER):
    """The reply ``port`` got to ``datagram`` (matched by its seq; the last such)."""
    return [d for p, d in lan.received if p == port and d[1:3] == datagram[1:3]][-1]


def test_replayed_records_are_dropped_and_counted(lan):
    rng = random.Random(1)
    dev = owner(lan)
    data, iv = rng.randbytes(64), rng.randbytes(16)
    assert dev.process(0, Op.ENCRYPT, Mode.CTR, data, iv=iv) == ctr(KEY1, iv, data)
    for _ in range(lan.info.window + 1):
        dev.stats()                     # the first records leave the window
    before = session_failures(dev)
    recorded = records(lan)
    old, last = recorded[:-lan.info.window], recorded[-1]
    # Each old record (LOAD_KEY, PROCESS, STATS) sent again, from another host and from the
    # owner's port: dropped without a reply, counted; nothing runs again.
    for port in (OTHER, OWNER):
        for raw in old:
            assert lan.exchange(port, raw) is None
    # The last one again: its kept reply, the very bytes the owner got (nothing run, nothing
    # to learn).
    assert lan.exchange(OTHER, last) == reply_to(lan, last)
    assert session_failures(dev) == before + 2 * len(old)
    assert encrypts_with(dev, KEY1, rng)
    assert lan.compared > 2 * len(old) and lan.dropped == 2 * len(old)


def test_a_flipped_byte_in_any_region_is_dropped_and_counted(lan):
    rng = random.Random(2)
    dev = owner(lan)
    before = session_failures(dev)
    seq = 0x5151
    opcode, record = dev.session.seal(Command.LOAD_KEY, seq, build_load_key_request(0, KEY2))
    genuine = frame_content(opcode, seq, record, crc=False)
    sid_at = 5
    counter_at = sid_at + S.SESSION_ID_BYTES
    sealed_at = counter_at + S.COUNTER_BYTES
    tag_at = len(genuine) - S.TAG_BYTES
    regions = {"header": [1, 2, *range(counter_at, sealed_at)],
               "ciphertext": range(sealed_at, tag_at), "tag": range(tag_at, len(genuine))}
    dropped = 0
    for region, places in regions.items():
        for at in places:
            bad = bytearray(genuine)
            bad[at] ^= 1 << (at % 8)
            assert lan.exchange(OTHER, bytes(bad)) is None, (region, at)
            dropped += 1
    # A changed session id names no session, the opcode or length another request: refused
    # in the clear, nothing run, not counted.
    for at, status in ((sid_at, Status.UNKNOWN_SESSION), (3, Status.BAD_LENGTH),
                       (0, Status.SESSION_REQUIRED)):
        bad = bytearray(genuine)
        bad[at] ^= 0x01 if at else 0x20
        reply = lan.exchange(OTHER, bytes(bad))
        assert reply[5:] == bytes([status]), at
    # None of them took the record's counter: the genuine record still loads its key.
    reply = lan.exchange(OWNER, genuine)
    assert dev.session.open(decode_frame(reply, crc=False)).payload == b"\x00"
    assert session_failures(dev) == before + dropped
    assert encrypts_with(dev, KEY2, rng)


def test_a_record_moved_into_another_session_and_forged_replies(lan):
    rng = random.Random(3)
    alice = owner(lan)
    bob = lan.host(BOB, device_key=SECRET)
    assert encrypts_with(bob, KEY1, rng)       # a second session
    alice_id, bob_id = lan.model.sessions.session_ids
    before = session_failures(bob)
    seq = 0x6262
    opcode, record = alice.session.seal(Command.LOAD_KEY, seq, build_load_key_request(0, KEY2))
    assert record[:S.SESSION_ID_BYTES] == alice_id
    moved = frame_content(opcode, seq, bob_id + record[S.SESSION_ID_BYTES:], crc=False)
    assert lan.exchange(OTHER, moved) is None
    assert session_failures(bob) == before + 1
    assert encrypts_with(alice, KEY1, rng) and encrypts_with(bob, KEY1, rng)

    # Replies forged by the other host to alice's port, in front of the device's reply.
    earlier = reply_to(lan, records(lan)[-1])
    wrong = S.derive_session(bytes(32), bytes(16), bytes(16), alice_id)
    forged = []

    def forge(request):
        seq, length = request[1:3], len(request) - 5
        _, counter = S.split_record(request[5:])
        out = [
            # A clear OK, as if the request had gone in the clear (ECB output of zeros).
            bytes([reply_opcode(Command.PROCESS)]) + seq + (17).to_bytes(2, "big")
            + bytes(17),
            # The device's genuine earlier reply, given this request's seq.
            earlier[:1] + seq + earlier[3:],
            # The request reflected; a record sealed under a key not the device's.
            bytes([reply_opcode(RECORD)]) + seq + request[3:],
            frame_content(reply_opcode(RECORD), int.from_bytes(seq, "big"), S.seal_reply(
                wrong, reply_opcode(RECORD), int.from_bytes(seq, "big"), counter,
                b"\x00" + bytes(16)), crc=False),
            # Its status byte alone: OK, a refusal.
            bytes([reply_opcode(RECORD)]) + seq + b"\x00\x01\x00",
            bytes([reply_opcode(RECORD)]) + seq + b"\x00\x01" + bytes([Status.KEY_NOT_LOADED]),
        ]
        assert length >= 0
        forged.extend(out)
        return out

    alice.link.forge = forge
    assert encrypts_with(alice, KEY1, rng)      # every forgery ignored, the genuine taken
    assert alice.link.forged == len(forged) >= 6
    for raw in forged:
        assert alice.session.open(decode_frame(raw, crc=False)) is None
    alice.link.forge = None
    assert encrypts_with(alice, KEY1, rng)


def udp_payloads(path):
    """``(source port, destination port, payload)`` of every UDP datagram in the pcap."""
    from scapy.all import UDP, rdpcap
    return [(p[UDP].sport, p[UDP].dport, bytes(p[UDP].payload)) for p in rdpcap(str(path))
            if UDP in p]


def opened_requests(lan, datagrams):
    """The inner requests of the owner's request records, opened with the session keys the
    device key gives (what only its owner can do): the control of the search below."""
    found, keys = [], None
    for raw in datagrams:
        if raw[0] == S.SessionCommand.OPEN_SESSION:
            sid, device, _ = S.parse_open_reply(reply_to(lan, raw)[5:], ValueError)
            keys = S.derive_session(SECRET, raw[5:], device, sid)
        elif raw[0] == RECORD:
            seq = int.from_bytes(raw[1:3], "big")
            found.append(bytes(S.open_request(keys, RECORD, seq, raw[5:])[2]))
    return b"".join(found)


def test_a_whole_session_replayed_after_the_device_restarts(tmp_path):
    from scapy.all import Ether, wrpcap
    rng = random.Random(4)
    first = Lan()
    try:
        # A session that loads a key and encrypts a file (CTR, then GCM), captured.
        key, data, iv = rng.randbytes(16), rng.randbytes(3000), rng.randbytes(16)
        dev = owner(first, key=key)
        assert dev.process(0, Op.ENCRYPT, Mode.CTR, data, iv=iv) == ctr(key, iv, data)
        nonce = rng.randbytes(12)
        dev.gcm_encrypt(0, nonce, b"", data)
        chunk = dev.session.max_chunk(dev.info())
        gcm = len(build_gcm_requests(0, Op.ENCRYPT, nonce, b"", data, chunk_size=chunk))
        dev.stats()
        first.settle()
        session = [d for p, d in first.sent if p == OWNER]
        opened = {d[5:]: reply_to(first, d) for d in session
                  if d[0] == S.SessionCommand.OPEN_SESSION}
        sid, = first.model.sessions.session_ids
        taken = first.model.sessions.last_counters[sid]
        pcap = tmp_path / "session.pcap"
        wrpcap(str(pcap), [Ether(frame) for frame in first.frames])
        control = opened_requests(first, session)
    finally:
        first.close()
    # The capture holds every record both ways, and neither the key nor any block of the
    # file; the records opened with the session keys hold both (so the search can fail).
    wire = pcap.read_bytes()
    blocks = [data[i:i + 16] for i in range(0, len(data) - 15, 16)]
    assert key not in wire and not any(block in wire for block in blocks)
    assert key in control and all(block in control for block in blocks)
    captured = udp_payloads(pcap)
    to_device = [d for sport, _, d in captured if sport == OWNER and d[0] == RECORD]
    from_device = [d for _, dport, d in captured
                   if dport == OWNER and d[0] == reply_opcode(RECORD)]
    assert len(to_device) == len(from_device) == taken == 1 + -(-len(data) // chunk) + gcm + 1
    second = Lan()                              # the device, powered up again
    try:
        second.ready()
        # (The simulated noise source is a seeded generator, so a restarted simulation draws
        # the first run's challenges again, cycle for cycle, which a ring oscillator does not:
        # one more handshake here moves it on.)
        assert second.ask(OTHER, S.SessionCommand.OPEN_SESSION, bytes(16))[0] == Status.OK
        for port in (OTHER, OWNER):
            for raw in session:
                reply = second.exchange(port, raw)
                status = reply[5]
                if raw[0] == S.SessionCommand.OPEN_SESSION:
                    # A fresh device challenge: the old host cryptogram proves nothing.
                    assert status == Status.OK
                    assert reply[5 + 5:5 + 21] != opened[raw[5:]][5 + 5:5 + 21]
                elif raw[0] == S.SessionCommand.AUTHENTICATE:
                    assert status in (Status.BAD_CRYPTOGRAM, Status.UNKNOWN_SESSION)
                elif raw[0] == RECORD:
                    assert reply[5:] == bytes([Status.UNKNOWN_SESSION])
                else:
                    assert raw[0] == Command.INFO and status == Status.OK
        assert not second.model.key_loaded(0) and not second.model.sessions.session_ids
        # The owner's next session works.
        dev = owner(second, key=KEY1)
        assert encrypts_with(dev, KEY1, rng)
    finally:
        second.close()


def test_mutated_datagrams_through_the_appliance(lan):
    rng = random.Random(5)
    alice = owner(lan)
    bob = lan.host(BOB, device_key=SECRET)
    assert encrypts_with(bob, KEY1, rng)
    alice.process(0, Op.ENCRYPT, Mode.CTR, rng.randbytes(40), iv=rng.randbytes(16))
    alice.stats()
    recorded = SimpleNamespace(records=records(lan), sent=[d for p, d in lan.sent if p == OWNER],
                               ids=lan.model.sessions.session_ids)
    before = lan.model.sessions.last_counters
    count = lan.compared + lan.dropped
    for _ in range(1000):
        datagram = mutate(rng, recorded)
        if datagram:                    # (an empty UDP datagram reaches no request parser)
            lan.exchange(OTHER, datagram)
    # Every reply and every silence was the reference's, and so is the state it kept.
    assert lan.compared + lan.dropped > count + 2 * 900
    assert lan.model.sessions.last_counters == before and lan.model.key_loaded(0)
    assert lan.model.sessions.failures > 200
    assert session_failures(alice) == lan.model.sessions.failures
    assert encrypts_with(alice, KEY1, rng) and encrypts_with(bob, KEY1, rng)
