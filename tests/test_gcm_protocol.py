"""GCM in the protocol's reference device (spec "GCM messages"): messages of every shape
against ``cryptography``, every refusal changing nothing, the kept replies of retransmitted
chunks, the ``auth_failures`` counter, and no key or plaintext in a ``repr``."""

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from gcm_cases import GCM_REFUSALS, KEY, NONCE, Session, aesgcm, refusal_payloads
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aes_fpga import gcm_model
from aes_fpga.appliance.client import Device, ModelLink
from aes_fpga.appliance.errors import BadMode, DeviceError
from aes_fpga.appliance.gcm import build_gcm_requests, check_gcm_lengths
from aes_fpga.appliance.messages import (
    DeviceInfo,
    build_process_request,
    parse_process_request,
    parse_stats_reply,
)
from aes_fpga.appliance.reference import DeviceModel, GcmState
from aes_fpga.appliance.spec import (
    BLOCK_MODES,
    FLAG_AAD,
    FLAG_FIRST,
    FLAG_LAST,
    GCM_MAX_AAD_BYTES,
    Command,
    Mode,
    Op,
    Status,
    gcm_pre_counter,
)

# Lengths around the block and the chunk boundaries (chunks of 16, 32 or 1440 bytes).
LENGTHS = [0, 1, 15, 16, 17, 31, 32, 33, 47, 100, 1439, 1440, 1441, 2881]


def _auth_failures(session):
    return parse_stats_reply(session.send(1, b"", Command.STATS))[-1]


def _encrypt(session, key, nonce, aad, data, seq, chunk_size=16, slot=0):
    out = session.run(build_gcm_requests(slot, Op.ENCRYPT, nonce, aad, data,
                                         chunk_size=chunk_size), seq)
    return out[:-16], out[-16:]


def _decrypt(session, nonce, aad, ct, tag, seq, chunk_size=16, slot=0):
    return session.run(build_gcm_requests(slot, Op.DECRYPT, nonce, aad, ct, tag=tag,
                                          chunk_size=chunk_size), seq)


@settings(max_examples=30, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(key=st.sampled_from([16, 24, 32]).flatmap(lambda n: st.binary(min_size=n, max_size=n)),
       nonce=st.binary(min_size=12, max_size=12),
       aad_len=st.sampled_from(LENGTHS), data_len=st.sampled_from(LENGTHS),
       chunk=st.sampled_from([16, 32, 1440]), seq=st.integers(0, 0xFFFF),
       tag_len=st.integers(12, 16))
def test_messages_match_aesgcm(key, nonce, aad_len, data_len, chunk, seq, tag_len):
    aad, data = bytes(range(256)) * 12, bytes(range(255, -1, -1)) * 12
    aad, data = aad[:aad_len], data[:data_len]
    session = Session()
    session.load(0, key)
    ct, tag = _encrypt(session, key, nonce, aad, data, seq, chunk)
    assert (ct, tag) == aesgcm(key, nonce, aad, data)
    # Decryption, the seqs wrapping from 0xFFFF to 0 wherever they start; a truncated tag.
    back = _decrypt(session, nonce, aad, ct, tag[:tag_len], seq ^ 0x8000, chunk)
    assert back == data
    assert _auth_failures(session) == 0


@pytest.mark.parametrize("case", GCM_REFUSALS, ids=lambda c: c.name)
def test_refusals_change_nothing(case):
    payloads, aad, data = refusal_payloads(case)
    session = Session(**case.limits)
    session.load(0, KEY)
    session.load(1, bytes(16))
    seq = 10
    head = session.run(payloads[:case.sent], seq)
    last_seq, last = seq + case.sent - 1, payloads[case.sent - 1]
    kept = session.send(last_seq, last)
    bad_seq, bad = case.bad(seq + case.sent, payloads)
    assert session.send(bad_seq, bad) == bytes([case.status])
    # The refusal kept nothing and changed nothing: the chunk before it is still answered
    # from the kept replies, and the message goes on to what AESGCM gives.
    assert session.send(last_seq, last) == kept
    out = head + session.run(payloads[case.sent:], seq + case.sent)
    assert (out[:-16], out[-16:]) == aesgcm(KEY, NONCE, aad, data)
    assert _auth_failures(session) == 0


def test_every_sequence_status_is_covered():
    assert {c.status for c in GCM_REFUSALS} >= {
        Status.OUT_OF_ORDER, Status.BAD_CHUNK_ORDER, Status.TOO_LONG, Status.BAD_IV}


def test_retransmissions_get_the_kept_reply_and_are_not_processed_again():
    aad, data = bytes(40), bytes(range(100))
    session = Session(window=3)
    session.load(0, KEY)
    payloads = build_gcm_requests(0, Op.ENCRYPT, NONCE, aad, data, chunk_size=32)
    replies = []
    for n, payload in enumerate(payloads):
        replies.append(session.send(100 + n, payload))
        # A duplicate now, and the chunks up to the window back once more: the same replies.
        for back in range(min(n + 1, 3)):
            assert session.send(100 + n - back, payloads[n - back]) == replies[n - back]
    ct, tag = aesgcm(KEY, NONCE, aad, data)
    assert b"".join(r[1:] for r in replies) == ct + tag
    # The message has ended; its last chunks are still answered from the kept replies.
    assert session.send(100 + len(payloads) - 1, payloads[-1]) == replies[-1]
    # One window back is too far: not kept, and no message in progress.
    gone = len(payloads) - 4
    assert session.send(100 + gone, payloads[gone]) == bytes([Status.CHAIN_NOT_STARTED])


def test_a_kept_seq_with_another_payload_is_not_a_retransmission():
    session = Session()
    session.load(0, KEY)
    first = build_gcm_requests(0, Op.ENCRYPT, NONCE, bytes(16), bytes(16), chunk_size=16)
    session.run(first, 7)
    # A host starting afresh at seq 7 with another message: processed, not the kept reply.
    other = build_gcm_requests(0, Op.ENCRYPT, bytes(12), b"", b"abc", chunk_size=16)
    out = session.run(other, 7)
    assert (out[:-16], out[-16:]) == aesgcm(KEY, bytes(12), b"", b"abc")


def test_auth_failure_ends_the_message_is_kept_and_counted():
    aad, data = b"header", bytes(range(50))
    session = Session()
    session.load(0, KEY)
    ct, tag = aesgcm(KEY, NONCE, aad, data)
    bad = bytes([tag[0] ^ 1]) + tag[1:]
    payloads = build_gcm_requests(0, Op.DECRYPT, NONCE, aad, ct, tag=bad, chunk_size=16)
    with pytest.raises(DeviceError) as e:
        session.run(payloads, 20)
    assert e.value.status == Status.AUTH_FAILED
    assert _auth_failures(session) == 1
    last_seq = 20 + len(payloads) - 1
    # A retransmission gets the kept AUTH_FAILED and is not counted again.
    assert session.send(last_seq, payloads[-1]) == bytes([Status.AUTH_FAILED])
    assert _auth_failures(session) == 1
    # The message has ended: a continuation is refused.
    assert session.send(last_seq + 1, payloads[-1]) == bytes([Status.CHAIN_NOT_STARTED])
    # Every tag length 12 .. 16 is compared over its own bytes, its last one included.
    for n in range(12, 17):
        ok = build_gcm_requests(0, Op.DECRYPT, NONCE, aad, ct, tag=tag[:n], chunk_size=16)
        assert session.run(ok, 200 + 20 * n) == data
        wrong = tag[:n - 1] + bytes([tag[n - 1] ^ 0x80])
        with pytest.raises(DeviceError):
            session.run(build_gcm_requests(0, Op.DECRYPT, NONCE, aad, ct, tag=wrong,
                                           chunk_size=16), 400 + 20 * n)
    assert _auth_failures(session) == 6


@pytest.mark.parametrize("how", ["load_key", "zeroize", "new message"])
def test_kept_replies_are_dropped(how):
    session = Session()
    session.load(0, KEY)
    payloads = build_gcm_requests(0, Op.ENCRYPT, NONCE, b"", bytes(16), chunk_size=16)
    session.run(payloads, 50)
    if how == "load_key":
        session.load(0, KEY)
    elif how == "zeroize":
        assert session.send(3, b"\0", Command.ZEROIZE) == b"\0"
        session.load(0, KEY)
    else:
        session.run(build_gcm_requests(0, Op.ENCRYPT, NONCE, b"", b"", chunk_size=16), 60)
    assert session.send(51, payloads[1]) == bytes([Status.CHAIN_NOT_STARTED])
    # A zeroize of another slot keeps them.
    session.run(payloads, 70)
    assert session.send(1, bytes([3]), Command.ZEROIZE) == b"\0"
    assert session.send(71, payloads[1])[0] == Status.OK


def test_empty_messages():
    session = Session()
    session.load(0, KEY)
    (only,) = build_gcm_requests(0, Op.ENCRYPT, NONCE, b"", b"")
    assert only[3] == FLAG_FIRST | FLAG_LAST
    tag = session.run([only], 5)
    assert tag == aesgcm(KEY, NONCE, b"", b"")[1]
    # GMAC: AAD only.
    gmac = session.run(build_gcm_requests(0, Op.ENCRYPT, NONCE, b"a" * 33, b"", chunk_size=16),
                       9)
    assert gmac == aesgcm(KEY, NONCE, b"a" * 33, b"")[1]
    assert session.run(build_gcm_requests(0, Op.DECRYPT, NONCE, b"", b"", tag=tag), 30) == b""


def test_a_device_without_gcm_refuses_it():
    device = DeviceModel(DeviceInfo())
    assert Mode.GCM not in device.info.modes and device.info.modes == BLOCK_MODES
    session = Session()
    session.device = device
    session.load(0, KEY)
    payload = build_gcm_requests(0, Op.ENCRYPT, NONCE, b"", b"x")[0]
    assert session.send(2, payload) == bytes([Status.BAD_MODE])
    assert parse_stats_reply(session.send(3, b"", Command.STATS)) == []
    # The AAD flag in another mode.
    ecb = bytes([0, 0, Mode.ECB, FLAG_FIRST | FLAG_AAD]) + bytes(32)
    assert session.send(4, ecb) == bytes([Status.BAD_FLAGS])


def test_the_iv_must_be_j0():
    session = Session()
    session.load(0, KEY)
    j0 = gcm_pre_counter(NONCE)
    for iv in (NONCE + bytes(4), NONCE + bytes([0, 0, 0, 2]), NONCE + bytes([1, 0, 0, 1])):
        payload = build_process_request(0, Op.ENCRYPT, Mode.GCM, b"", first=True, last=True,
                                        iv=iv)
        assert session.send(1, payload) == bytes([Status.BAD_IV])
    payload = build_process_request(0, Op.ENCRYPT, Mode.GCM, b"", first=True, last=True, iv=j0)
    assert session.send(1, payload)[1:] == aesgcm(KEY, NONCE, b"", b"")[1]
    with pytest.raises(ValueError, match="12 bytes"):
        gcm_pre_counter(bytes(16))


def test_host_refuses_messages_over_the_limits():
    check_gcm_lengths(GCM_MAX_AAD_BYTES, gcm_model.MAX_DATA_BYTES)
    with pytest.raises(ValueError, match="over the GCM limit"):
        check_gcm_lengths(0, gcm_model.MAX_DATA_BYTES + 1)
    with pytest.raises(ValueError, match="AAD limit"):
        check_gcm_lengths(GCM_MAX_AAD_BYTES + 1, 0)
    with pytest.raises(ValueError, match="tag"):
        build_gcm_requests(0, Op.DECRYPT, NONCE, b"", b"", tag=bytes(11))
    with pytest.raises(ValueError, match="tag"):
        build_gcm_requests(0, Op.ENCRYPT, NONCE, b"", b"", tag=bytes(16))


def test_no_key_or_plaintext_in_a_repr():
    secret = bytes.fromhex("5ec2e75ec2e75ec2e75ec2e75ec2e75e")
    session = Session()
    session.load(0, secret)
    payloads = build_gcm_requests(0, Op.ENCRYPT, NONCE, b"", secret, chunk_size=16)
    session.send(1, payloads[0])
    texts = [repr(session.device), repr(parse_process_request(payloads[0])),
             repr(GcmState(secret, gcm_pre_counter(NONCE), 1))]
    for text in texts:
        assert secret.hex() not in text and repr(secret) not in text, text
    assert "data=" not in texts[1]
    assert AESGCM(secret).encrypt(NONCE, secret, b"")[:16].hex() not in repr(session.device)


def test_host_driver_over_the_model_link():
    dev = Device(ModelLink(DeviceInfo(modes=tuple(Mode), window=3, max_payload=4 + 16 + 48)))
    dev.load_key(1, KEY)
    aad, data = bytes(range(70)), bytes(range(200))
    ct, tag = dev.gcm_encrypt(1, NONCE, aad, data)
    assert (ct, tag) == aesgcm(KEY, NONCE, aad, data)
    assert dev.gcm_decrypt(1, NONCE, aad, ct, tag[:12]) == data
    for broken in ((NONCE, aad, ct[:-1] + bytes([ct[-1] ^ 1]), tag),
                   (NONCE, aad[1:], ct, tag), (bytes(12), aad, ct, tag)):
        with pytest.raises(gcm_model.AuthenticationError, match="^authentication failed$"):
            dev.gcm_decrypt(1, *broken)
    # Without GCM in INFO the host refuses before it sends anything.
    plain = Device(ModelLink(DeviceInfo()))
    with pytest.raises(BadMode, match="does not offer GCM"):
        plain.gcm_encrypt(0, NONCE, b"", b"")
