"""The reference device with a device secret (spec aes_fpga.appliance.session_spec), frame by
frame: the handshake, records, the replay rule, the limits, and refusals that change nothing."""

import os

import pytest

from aes_fpga.appliance import session_spec as S
from aes_fpga.appliance.frame import decode_frame, frame_content
from aes_fpga.appliance.messages import (
    DeviceInfo,
    build_load_key_request,
    build_process_request,
    build_zeroize_request,
    parse_info_reply,
    parse_stats_reply,
)
from aes_fpga.appliance.reference import DeviceModel
from aes_fpga.appliance.spec import ALL_SLOTS, Command, EntropyStatus, Mode, Op, Status

SECRET = bytes(range(32))
KEY = bytes(range(100, 116))
RECORD = S.SessionCommand.RECORD


class Wire:
    """Raw datagrams (or serial frames) to a device, and the owner's side of a session, made
    from the spec's functions alone (not the host driver)."""

    def __init__(self, device, *, datagram=True):
        self.device, self.datagram = device, datagram
        self.seq = 100

    def send(self, command, payload, seq=None):
        """The reply frame, or ``None`` when the device drops the request."""
        self.seq = self.seq + 1 if seq is None else seq
        if self.datagram:
            raw = self.device.datagram(frame_content(command, self.seq, payload, crc=False))
            return decode_frame(raw, crc=False) if raw else None
        raw = self.device.respond(frame_content(command, self.seq, payload))
        if not raw:
            return None
        from aes_fpga.appliance.cobs import cobs_decode
        return decode_frame(cobs_decode(raw[:-1]))

    def status(self, command, payload=b""):
        return Status(self.send(command, payload).payload[0])

    def open(self, secret=SECRET):
        host = os.urandom(16)
        reply = self.send(S.SessionCommand.OPEN_SESSION, host)
        assert reply.payload[0] == Status.OK
        sid, dev, cryptogram = S.parse_open_reply(reply.payload, ValueError)
        keys = S.derive_session(secret, host, dev, sid)
        assert cryptogram == keys.device_cryptogram or secret != SECRET
        return keys

    def authenticate(self, keys):
        return self.status(S.SessionCommand.AUTHENTICATE,
                           S.build_authenticate_request(keys.session_id, keys.host_cryptogram))

    def session(self):
        keys = self.open()
        assert self.authenticate(keys) == Status.OK
        return Session(self, keys)


class Session:
    def __init__(self, wire, keys):
        self.wire, self.keys, self.counter = wire, keys, 0

    def record(self, command, payload=b"", counter=None):
        """``(seq, record payload)`` of a new record."""
        self.counter = self.counter + 1 if counter is None else counter
        seq = self.wire.seq + 1
        return seq, S.seal_request(self.keys, RECORD, seq, self.counter, command, payload)

    def send(self, seq, record):
        """The opened reply payload, the clear status, or ``None`` (dropped)."""
        reply = self.wire.send(RECORD, record, seq)
        if reply is None:
            return None
        if len(reply.payload) == 1:
            return Status(reply.payload[0])
        return S.open_reply(self.keys, reply.command, seq, S.split_record(record)[1],
                            reply.payload)

    def __call__(self, command, payload=b""):
        return self.send(*self.record(command, payload))


def secured(**options):
    return DeviceModel(DeviceInfo(modes=tuple(Mode), window=4), device_secret=SECRET, **options)


def failures(session):
    return parse_stats_reply(session(Command.STATS))[-1]


@pytest.mark.parametrize("datagram", [True, False])
def test_without_a_session_only_info_and_the_handshake(datagram):
    device = secured()
    wire = Wire(device, datagram=datagram)
    info = parse_info_reply(wire.send(Command.INFO, b"").payload)
    assert info.sessions
    for command, payload in [
            (Command.LOAD_KEY, build_load_key_request(0, KEY)),
            (Command.ZEROIZE, build_zeroize_request(ALL_SLOTS)), (Command.STATS, b""),
            (Command.PROCESS, build_process_request(0, Op.ENCRYPT, Mode.ECB, bytes(16),
                                                    first=True, last=True, iv=bytes(16))),
            (S.SessionCommand.CLOSE_SESSION, b"")]:
        assert wire.status(command, payload) == Status.SESSION_REQUIRED
    assert not device.key_loaded(0)
    assert device.sessions.failures == 0 and device.sessions.session_ids == []


def test_an_open_device_does_not_know_the_session_opcodes():
    device = DeviceModel()
    assert not device.info.sessions
    for command in S.SessionCommand:
        assert Wire(device).status(command, bytes(16)) == Status.UNKNOWN_COMMAND


def test_handshake_records_and_the_counter():
    device = secured()
    wire = Wire(device)
    session = wire.session()
    assert session(Command.LOAD_KEY, build_load_key_request(0, KEY)) == b"\x00"
    assert device.key_loaded(0)
    pt = bytes(32)
    reply = session(Command.PROCESS, build_process_request(
        0, Op.ENCRYPT, Mode.ECB, pt, first=True, last=True, iv=bytes(16)))
    from aes_fpga.model import encrypt_block
    assert reply == b"\x00" + 2 * encrypt_block(KEY, bytes(16))
    # An inner refusal travels sealed and takes the counter; it changes nothing.
    assert session(Command.LOAD_KEY, build_load_key_request(0, KEY)[:5]) == \
        bytes([Status.BAD_LENGTH])
    assert session(S.SessionCommand.OPEN_SESSION, bytes(16)) == bytes([Status.UNKNOWN_COMMAND])
    assert failures(session) == 0


def test_wrong_cryptogram_and_unknown_ids_are_refused():
    device = secured()
    wire = Wire(device)
    keys = wire.open()
    bad = S.build_authenticate_request(keys.session_id, bytes(16))
    assert wire.status(S.SessionCommand.AUTHENTICATE, bad) == Status.BAD_CRYPTOGRAM
    other = S.build_authenticate_request(b"\xff" * 4, keys.host_cryptogram)
    assert wire.status(S.SessionCommand.AUTHENTICATE, other) == Status.UNKNOWN_SESSION
    assert device.sessions.session_ids == [] and device.sessions.failures == 1
    # The refusals left the handshake pending: the owner still completes it.
    assert wire.authenticate(keys) == Status.OK
    assert wire.status(S.SessionCommand.AUTHENTICATE, bad[:5]) == Status.BAD_LENGTH
    assert wire.status(S.SessionCommand.OPEN_SESSION, bytes(15)) == Status.BAD_LENGTH
    assert wire.status(RECORD, bytes(S.RECORD_MIN_PAYLOAD - 1)) == Status.BAD_LENGTH
    assert wire.status(RECORD, bytes(S.RECORD_MIN_PAYLOAD)) == Status.UNKNOWN_SESSION


def test_a_failed_entropy_source_refuses_the_handshake():
    device = secured(challenge_source=lambda: None)
    assert Wire(device).status(S.SessionCommand.OPEN_SESSION, bytes(16)) == \
        Status.ENTROPY_FAILED
    device = DeviceModel(DeviceInfo(entropy=True), device_secret=SECRET)
    wire = Wire(device)
    keys = wire.open()
    for state in (EntropyStatus.FAILED, EntropyStatus.STARTUP):
        device.entropy["entropy_state"] = state
        assert wire.status(S.SessionCommand.OPEN_SESSION, bytes(16)) == Status.ENTROPY_FAILED
    assert wire.authenticate(keys) == Status.OK       # the refusal replaced nothing


def test_replays_are_dropped_and_counted_retransmissions_answered():
    device = secured()
    wire = Wire(device)
    session = wire.session()
    seq, record = session.record(Command.LOAD_KEY, build_load_key_request(0, KEY))
    first = wire.send(RECORD, record, seq)
    assert wire.send(RECORD, record, seq) == first          # a retransmission: kept reply
    assert wire.send(RECORD, record, seq + 7) is None       # the same record, another seq
    assert device.sessions.failures == 1
    # On UDP a late record within the window is taken once; older ones and repeats not.
    late = [session.record(Command.STATS) for _ in range(3)]
    assert session.send(*late[2]) is not None
    assert session.send(*late[0]) is not None
    assert session.send(*late[0]) is not None               # kept: the same reply again
    seq, old = session.record(Command.STATS, counter=1)
    assert session.send(seq, old) is None
    # Serial: strictly increasing.
    serial = Wire(device, datagram=False).session()
    records = [serial.record(Command.STATS) for _ in range(2)]
    assert serial.send(*records[1]) is not None
    assert serial.send(*records[0]) is None


def test_sessions_held_the_oldest_replaced_and_ended():
    device = secured()
    wire = Wire(device)
    one, two = wire.session(), wire.session()
    three = wire.session()
    assert one(Command.STATS) == Status.UNKNOWN_SESSION
    assert two(Command.STATS)[0] == Status.OK and three(Command.STATS)[0] == Status.OK
    assert two(S.SessionCommand.CLOSE_SESSION) == b"\x00"
    assert two(Command.STATS) == Status.UNKNOWN_SESSION
    assert three(Command.ZEROIZE, build_zeroize_request(ALL_SLOTS)) == b"\x00"
    assert three(Command.STATS) == Status.UNKNOWN_SESSION
    assert device.sessions.session_ids == []


def test_a_restart_forgets_every_session():
    wire = Wire(secured())
    session = wire.session()
    seq, record = session.record(Command.LOAD_KEY, build_load_key_request(0, KEY))
    assert session.send(seq, record) == b"\x00"
    wire.device = secured()                                 # power-up
    assert session.send(seq, record) == Status.UNKNOWN_SESSION
    assert not wire.device.key_loaded(0)
    # The new session with the same id does not take the old record either.
    wire.session()
    assert session.send(seq, record) is None
    assert wire.device.sessions.failures == 1 and not wire.device.key_loaded(0)


def test_the_record_limit():
    device = secured(max_records=3)
    session = Wire(device).session()
    assert all(session(Command.STATS)[0] == Status.OK for _ in range(3))
    assert session(Command.STATS) == Status.SESSION_EXPIRED


def test_the_device_holds_two_to_four_sessions():
    for held in (1, 5):
        with pytest.raises(ValueError, match="held"):
            secured(sessions_held=held)
    assert "SECRET" not in repr(secured().sessions) and SECRET.hex() not in repr(
        secured().sessions)


def test_the_udp_window_is_the_device_window():
    device = secured()                                      # window 4
    session = Wire(device).session()
    records = [session.record(Command.STATS) for _ in range(6)]
    replies = {}
    for n in (5, 1, 2):                                     # counter 1 is 4 below 5: too old
        replies[n] = session.send(*records[n - 1])
    assert replies[1] is None and replies[5] and replies[2]
    failures = device.sessions.failures
    assert session.send(*records[1]) == replies[2]          # kept: answered, not run again
    assert session.send(*records[5]) is not None            # counter 6: 2 leaves the window
    assert session.send(*records[1]) is None
    assert device.sessions.failures == failures + 1


def test_a_repeated_handshake_request_is_answered_again():
    device = secured()
    wire = Wire(device)
    host = os.urandom(16)
    first = wire.send(S.SessionCommand.OPEN_SESSION, host).payload
    assert wire.send(S.SessionCommand.OPEN_SESSION, host).payload == first
    sid, dev, _ = S.parse_open_reply(first, ValueError)
    keys = S.derive_session(SECRET, host, dev, sid)
    assert wire.authenticate(keys) == Status.OK
    # The lost OK's retransmission: OK again, the session neither replaced nor doubled.
    assert wire.authenticate(keys) == Status.OK
    assert device.sessions.session_ids == [sid]
    # Another host challenge is another handshake; once a record is taken, no repeat.
    assert wire.send(S.SessionCommand.OPEN_SESSION, os.urandom(16)).payload != first
    session = S.SessionKeys(SECRET, host, dev, sid)
    assert Session(wire, session)(Command.STATS)[0] == Status.OK
    assert wire.authenticate(keys) == Status.UNKNOWN_SESSION
    assert device.sessions.session_ids == [sid] and device.sessions.failures == 0
