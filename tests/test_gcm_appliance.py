# amaranth: UnusedElaboratable=no
"""GCM through the appliance gateware: the protocol engine of ``--port sim`` (compiled, the same
simulator as tests/test_frontend_engine.py) against the reference device, every reply byte,
and the results against ``cryptography``'s AESGCM."""

import random

import pytest
from gcm_cases import GCM_REFUSALS, KEY, NONCE, aesgcm, refusal_payloads

from aes_fpga import appliance as P
from aes_fpga.appliance.gcm import build_gcm_requests
from aes_fpga.appliance.spec import FLAG_AAD, FLAG_LAST, Command, Mode, Op, Status
from aes_fpga.sim.cxxsim import find_cxx, open_device
from aes_fpga.sim.link import sim_appliance

pytestmark = pytest.mark.skipif(find_cxx() is None,
                                reason="needs the compiled simulator (no C++ compiler)")


class Session:
    """The simulated engine and the reference device, fed the same frames, ``seq`` chosen by
    the test or counted up."""

    def __init__(self, link, info):
        self.link = link
        self.model = P.DeviceModel(info)
        self.seq = 0

    def send(self, command, payload=b"", seq=None):
        """The reply payload to one request, checked byte for byte against the model's."""
        if seq is None:
            self.seq = seq = (self.seq + 1) & 0xFFFF
        frame = P.encode_frame(command, seq, payload)
        want = self.model.feed(frame)
        self.link.write(frame)
        got = self.link.read(len(want), timeout=30) if want else b""
        assert got.hex() == want.hex()
        reply = P.decode_frame(P.cobs_decode(got[:-1]))
        assert reply.seq == seq
        return reply.payload

    def send_all(self, requests):
        """The reply payloads to ``requests`` [(command, payload, seq)], sent in one write
        (pipelined: the engine takes them back to back), every reply byte checked against the
        model's."""
        frames = [P.encode_frame(command, seq, payload) for command, payload, seq in requests]
        want = [self.model.feed(frame) for frame in frames]
        self.link.write(b"".join(frames))
        got = self.link.read(sum(map(len, want)), timeout=30)
        assert got.hex() == b"".join(want).hex()
        replies = [P.decode_frame(P.cobs_decode(f)) for f in got.split(b"\0")[:-1]]
        assert [r.seq for r in replies] == [seq for _, _, seq in requests]
        return [r.payload for r in replies]

    def run(self, payloads, seq=None):
        """A message's requests with consecutive seqs; the replies."""
        if seq is not None:
            self.seq = (seq - 1) & 0xFFFF
        return [self.send(Command.PROCESS, p) for p in payloads]

    def stats(self):
        """GCM's counters of ``STATS`` (after the entropy source's, which the engine of
        ``--port sim`` also reports)."""
        _, _, gcm = P.split_stats(self.model.info,
                                  P.parse_stats_reply(self.send(Command.STATS)))
        return [gcm["auth_failures"]]


@pytest.fixture(scope="module")
def engine():
    make, key = sim_appliance()
    dut = make()
    with open_device(dut, engine="cxxrtl", cache_key=key, progress=lambda line: None) as link:
        yield dut, link


@pytest.fixture
def dev(engine):
    dut, link = engine
    link.read(None, timeout=0)
    session = Session(link, dut.info)
    assert session.send(Command.ZEROIZE, P.build_zeroize_request(P.ALL_SLOTS)) == b"\0"
    # The failures counted by the tests before: the model starts from the engine's count.
    link.write(P.encode_frame(Command.STATS, 0))
    reply = P.decode_frame(P.cobs_decode(link.read_until(b"\0", timeout=30)[:-1]))
    _, _, gcm = P.split_stats(dut.info, P.parse_stats_reply(reply.payload))
    session.model.auth_failures = gcm["auth_failures"]
    return session


def encrypt(dev, slot, nonce, aad, data, chunk):
    replies = dev.run(build_gcm_requests(slot, Op.ENCRYPT, nonce, aad, data, chunk_size=chunk))
    assert all(r[0] == Status.OK for r in replies)
    out = b"".join(r[1:] for r in replies)
    return out[:-16], out[-16:]


def decrypt(dev, slot, nonce, aad, ct, tag, chunk):
    """The plaintext released and the LAST chunk's status."""
    replies = dev.run(build_gcm_requests(slot, Op.DECRYPT, nonce, aad, ct, tag=tag,
                                         chunk_size=chunk))
    return b"".join(r[1:] for r in replies[:-1]), Status(replies[-1][0])


def test_info_lists_gcm(dev):
    info = P.parse_info_reply(dev.send(Command.INFO))
    assert info == dev.model.info and Mode.GCM in info.modes and info.window == 4


# (AAD length, data length, chunk size): the lengths 0, 1, 15, 16, 17, and chunk boundaries.
LENGTHS = [(a, d, 1024) for a in (0, 1, 15, 16, 17) for d in (0, 1, 15, 16, 17)]
LENGTHS += [(0, 1024, 1024), (3, 1025, 1024), (1024, 2049, 1024), (48, 100, 16),
            (33, 47, 32)]


@pytest.mark.parametrize("key_len", [16, 32])
def test_messages_match_aesgcm(dev, key_len):
    """Each length's encryption and its decryptions (with the whole tag and with 12 bytes of
    it: ``cryptography``'s ciphertext and tag) go in one write, pipelined."""
    rng = random.Random(key_len)
    key = rng.randbytes(key_len)
    dev.send(Command.LOAD_KEY, P.build_load_key_request(1, key))
    for aad_len, data_len, chunk in LENGTHS:
        nonce, aad, data = rng.randbytes(12), rng.randbytes(aad_len), rng.randbytes(data_len)
        ct, tag = aesgcm(key, nonce, aad, data)
        messages = [build_gcm_requests(1, Op.ENCRYPT, nonce, aad, data, chunk_size=chunk),
                    build_gcm_requests(1, Op.DECRYPT, nonce, aad, ct, tag=tag, chunk_size=chunk),
                    build_gcm_requests(1, Op.DECRYPT, nonce, aad, ct, tag=tag[:12],
                                       chunk_size=chunk)]
        payloads = [p for message in messages for p in message]
        requests = [(Command.PROCESS, p, (dev.seq + 1 + n) & 0xFFFF)
                    for n, p in enumerate(payloads)]
        dev.seq = requests[-1][2]
        replies = dev.send_all(requests)
        enc, dec, dec12 = (replies[:len(messages[0])],
                           replies[len(messages[0]):-len(messages[2])],
                           replies[-len(messages[2]):])
        assert all(r[0] == Status.OK for r in enc)
        out = b"".join(r[1:] for r in enc)
        assert (out[:-16], out[-16:]) == (ct, tag), (aad_len, data_len, chunk)
        for replies in (dec, dec12):
            assert (b"".join(r[1:] for r in replies[:-1]), replies[-1]) \
                == (data, bytes([Status.OK]))


def test_wrong_tags_fail_and_are_counted(dev):
    dev.send(Command.LOAD_KEY, P.build_load_key_request(0, KEY))
    aad, data = b"header", bytes(range(40))
    ct, tag = encrypt(dev, 0, NONCE, aad, data, 1024)
    before = dev.stats()
    assert len(before) == 1             # a serial device: auth_failures alone
    wrong = [bytes([tag[0] ^ 1]) + tag[1:], tag[:15] + bytes([tag[15] ^ 0x80]),
             tag[:13] + bytes([tag[13] ^ 4])]
    for bad in wrong:
        assert decrypt(dev, 0, NONCE, aad, ct, bad, 1024)[1] == Status.AUTH_FAILED
    flipped = bytes([ct[0] ^ 1]) + ct[1:]
    assert decrypt(dev, 0, NONCE, aad, flipped, tag, 1024)[1] == Status.AUTH_FAILED
    assert decrypt(dev, 0, NONCE, b"Header", ct, tag, 1024)[1] == Status.AUTH_FAILED
    assert decrypt(dev, 0, bytes(12), aad, ct, tag, 1024)[1] == Status.AUTH_FAILED
    assert dev.stats() == [(before[0] + 6) & 0xFFFF]
    # The message has ended either way.
    last = build_gcm_requests(0, Op.DECRYPT, NONCE, aad, ct, tag=tag)[-1]
    assert dev.send(Command.PROCESS, last) == bytes([Status.CHAIN_NOT_STARTED])


@pytest.mark.parametrize("case", [c for c in GCM_REFUSALS if not c.limits],
                         ids=lambda c: c.name)
def test_refusals_change_nothing(dev, case):
    """Each refusal of a GCM message in progress, then the rest of the message: the tag is
    still right (the refused request changed nothing)."""
    for slot in (0, 1):
        dev.send(Command.LOAD_KEY, P.build_load_key_request(slot, KEY))
    payloads, aad, data = refusal_payloads(case)
    seq0 = 100
    replies = dev.run(payloads[:case.sent], seq0)
    seq, bad = case.bad(seq0 + case.sent, payloads)
    assert dev.send(Command.PROCESS, bad, seq) == bytes([case.status])
    replies += dev.run(payloads[case.sent:], seq0 + case.sent)
    out = b"".join(r[1:] for r in replies)
    assert (out[:-16], out[-16:]) == aesgcm(KEY, NONCE, aad, data)


def _with_flags(payload, flags):
    return payload[:3] + bytes([flags]) + payload[4:]


def test_request_refusals(dev):
    """The refusals of spec step 5 (and a continuation without a message), each changing
    nothing."""
    dev.send(Command.LOAD_KEY, P.build_load_key_request(0, KEY))
    enc = build_gcm_requests(0, Op.ENCRYPT, NONCE, b"", b"x" * 20, chunk_size=16)
    dec = build_gcm_requests(0, Op.DECRYPT, NONCE, b"", b"x" * 20, tag=bytes(16),
                             chunk_size=16)
    j0 = enc[0][4:20]
    for bad_iv in (j0[:15] + b"\x02", j0[:12] + b"\x01\x00\x00\x01", bytes(16)):
        assert dev.send(Command.PROCESS, enc[0][:4] + bad_iv + enc[0][20:]) \
            == bytes([Status.BAD_IV])
    ctr = P.build_process_request(0, Op.ENCRYPT, Mode.CTR, bytes(16), first=True, last=True,
                                  iv=bytes(16))
    assert dev.send(Command.PROCESS, _with_flags(ctr, ctr[3] | FLAG_AAD)) \
        == bytes([Status.BAD_FLAGS])
    assert dev.send(Command.PROCESS, _with_flags(enc[-1], FLAG_LAST | FLAG_AAD)) \
        == bytes([Status.BAD_FLAGS])
    for tag_len in (0, 11, 17):
        last = dec[-1][:4] + bytes(tag_len)
        assert dev.send(Command.PROCESS, last) == bytes([Status.BAD_LENGTH])
    assert dev.send(Command.PROCESS, enc[-1] + b"x") == bytes([Status.BAD_LENGTH])
    # No message in progress yet.
    assert dev.send(Command.PROCESS, enc[1]) == bytes([Status.CHAIN_NOT_STARTED])
    # A message after all of them is right.
    ct, tag = encrypt(dev, 0, NONCE, b"", b"x" * 20, 16)
    assert (ct, tag) == aesgcm(KEY, NONCE, b"", b"x" * 20)


def test_a_key_change_ends_the_message(dev):
    dev.send(Command.LOAD_KEY, P.build_load_key_request(2, KEY))
    payloads = build_gcm_requests(2, Op.ENCRYPT, NONCE, b"a" * 16, b"d" * 32, chunk_size=16)
    dev.run(payloads[:2], 7)
    dev.send(Command.LOAD_KEY, P.build_load_key_request(2, KEY))
    assert dev.send(Command.PROCESS, payloads[2], 9) == bytes([Status.CHAIN_NOT_STARTED])
    dev.run(payloads[:2], 20)
    dev.send(Command.ZEROIZE, P.build_zeroize_request(2))
    assert dev.send(Command.PROCESS, payloads[2], 22) == bytes([Status.KEY_NOT_LOADED])


def test_other_modes_between_gcm_messages(dev):
    """A CTR message abandons a GCM one in the middle (and ends); both give the right
    results."""
    dev.send(Command.LOAD_KEY, P.build_load_key_request(0, KEY))
    payloads = build_gcm_requests(0, Op.ENCRYPT, NONCE, b"a" * 20, b"d" * 40, chunk_size=16)
    dev.run(payloads[:3], 50)
    for p in P.build_process_requests(0, Op.ENCRYPT, Mode.CTR, bytes(37), iv=bytes(16)):
        dev.send(Command.PROCESS, p)
    assert dev.send(Command.PROCESS, payloads[3], 53) == bytes([Status.CHAIN_NOT_STARTED])
    assert encrypt(dev, 0, NONCE, b"a" * 20, b"d" * 40, 16) \
        == aesgcm(KEY, NONCE, b"a" * 20, b"d" * 40)


# ---- kept replies: retransmissions -------------------------------------------------------

def test_retransmissions_get_the_kept_replies(dev):
    """Every chunk of a message sent again after each later one, as far back as the window
    keeps (4 here), and one further back: the kept reply, or OUT_OF_ORDER (CHAIN_NOT_STARTED
    once the message has ended); the message's results are not changed by any of them."""
    dev.send(Command.LOAD_KEY, P.build_load_key_request(0, KEY))
    aad, data = bytes(range(40)), bytes(range(100, 200))
    payloads = build_gcm_requests(0, Op.ENCRYPT, NONCE, aad, data, chunk_size=32)
    seq0 = 0xFFFD                       # the seqs wrap in the message
    replies = []
    for n, payload in enumerate(payloads):
        replies.append(dev.send(Command.PROCESS, payload, (seq0 + n) & 0xFFFF))
        for back in range(min(n, 4) + 1):
            if back == 4 and n == 4:
                continue                # (a FIRST chunk no longer kept starts a message)
            again = dev.send(Command.PROCESS, payloads[n - back], (seq0 + n - back) & 0xFFFF)
            lost = Status.OUT_OF_ORDER if n < len(payloads) - 1 else Status.CHAIN_NOT_STARTED
            assert again == (replies[n - back] if back < 4 else bytes([lost]))
    out = b"".join(r[1:] for r in replies)
    assert (out[:-16], out[-16:]) == aesgcm(KEY, NONCE, aad, data)
    # A kept seq with another payload is not a retransmission.
    other = payloads[-2][:-1] + bytes([payloads[-2][-1] ^ 1])
    assert dev.send(Command.PROCESS, other, (seq0 + len(payloads) - 2) & 0xFFFF) \
        == bytes([Status.CHAIN_NOT_STARTED])
    # The verdicts are kept too, AUTH_FAILED included (counted once).
    tag = out[-16:]
    before = dev.stats()
    for bad in (bytes([tag[0] ^ 1]) + tag[1:], tag):
        dec = build_gcm_requests(0, Op.DECRYPT, NONCE, aad, out[:-16], tag=bad, chunk_size=64)
        first = dev.run(dec, 500)
        assert dev.run(dec[-3:], 500 + len(dec) - 3) == first[-3:]
    assert dev.stats() == [before[0] + 1]


def test_a_new_message_or_a_key_change_drops_the_kept_replies(dev):
    dev.send(Command.LOAD_KEY, P.build_load_key_request(1, KEY))
    one = build_gcm_requests(1, Op.ENCRYPT, NONCE, b"", b"d" * 20)
    two = build_gcm_requests(1, Op.ENCRYPT, bytes(12), b"a", b"")
    first = dev.run(one, 10)
    assert dev.send(Command.PROCESS, one[0], 10) == first[0]      # kept
    dev.run(two, 20)
    # The FIRST chunk of the other message dropped them: one's FIRST chunk is processed
    # again (a new message), its LAST chunk follows it.
    assert dev.send(Command.PROCESS, one[0], 10) == first[0]
    assert dev.send(Command.PROCESS, one[1], 11) == first[1]
    assert dev.send(Command.PROCESS, one[1], 11) == first[1]
    dev.send(Command.LOAD_KEY, P.build_load_key_request(0, KEY))   # another slot
    assert dev.send(Command.PROCESS, one[1], 11) == first[1]
    dev.send(Command.ZEROIZE, P.build_zeroize_request(1))
    assert dev.send(Command.PROCESS, one[1], 11) == bytes([Status.KEY_NOT_LOADED])


# ---- the length limits, on a small engine in Amaranth's simulator -------------------------

def test_too_long():
    """TOO_LONG at a message's data or AAD limit (made small here, as the reference device's),
    and the message still right after it: an engine with the LUT GHASH, one slot, AES-128.
    Every request goes in one write (Amaranth's simulator is slow, and the link runs it in
    bursts: a request per burst would wait out most of one)."""
    from aes_fpga.appliance.gateware.engine import ProtocolEngine
    limits = {"max_gcm_data": 32, "max_gcm_aad": 32}
    cases = [c for c in GCM_REFUSALS if c.limits]
    assert cases and all(c.limits.items() <= limits.items() for c in cases)
    dut = ProtocolEngine(key_slots=1, key_sizes=(128,), window=2, gcm="lut", **limits)
    requests, messages = [(Command.LOAD_KEY, P.build_load_key_request(0, KEY), 1)], []
    for n, case in enumerate(cases):
        payloads, aad, data = refusal_payloads(case)
        seq0 = 100 * (n + 1)
        seq, bad = case.bad(seq0 + case.sent, payloads)
        messages.append((case, len(requests), aad, data))
        requests += [(Command.PROCESS, p, seq0 + k) for k, p in enumerate(payloads)]
        requests.insert(len(requests) - len(payloads) + case.sent, (Command.PROCESS, bad, seq))
    with open_device(dut, engine="pysim") as link:
        session = Session(link, dut.info)
        session.model = P.DeviceModel(dut.info, **limits)
        replies = session.send_all(requests)
    assert replies[0] == b"\0"
    for (case, start, aad, data), end in zip(messages, [m[1] for m in messages[1:]] + [None],
                                             strict=True):
        these = replies[start:end]
        assert these.pop(case.sent) == bytes([case.status]), case.name
        out = b"".join(r[1:] for r in these)
        assert (out[:-16], out[-16:]) == aesgcm(KEY, NONCE, aad, data), case.name
