"""The session layer's cryptography (aes_fpga.cmac_model, appliance.session_spec) against
``cryptography`` (OpenSSL) and the SP 800-38B examples from ``cryptography-vectors``."""

import os
import random

import cryptography_vectors
import pytest
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import cmac as pyca_cmac
from cryptography.hazmat.primitives.ciphers import algorithms
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.kbkdf import KBKDFCMAC, CounterLocation, Mode

from aes_fpga import cmac_model, gcm_model
from aes_fpga.appliance import session_spec as S
from aes_fpga.appliance.spec import Command, Status, describe

RECORD = S.SessionCommand.RECORD


def cmac_examples(bits):
    """``(key, message, tag)`` of every example in ``CMAC/nist-800-38b-aes{bits}.txt``."""
    out, case = [], {}
    with cryptography_vectors.open_vector_file(f"CMAC/nist-800-38b-aes{bits}.txt", "r") as f:
        for line in f:
            if "=" not in line or line.startswith("COUNT"):
                continue
            name, value = (part.strip() for part in line.split("=", 1))
            case[name] = bytes.fromhex(value)
            if name == "OUTPUT":
                out.append((case["KEY"], case["MESSAGE"], case["OUTPUT"]))
                case = {}
    return out


@pytest.mark.parametrize("bits", [128, 192, 256])
def test_cmac_matches_the_sp800_38b_examples(bits):
    examples = cmac_examples(bits)
    assert len(examples) == 4          # empty, one block, 2.5 blocks, four blocks
    for key, message, tag in examples:
        assert cmac_model.cmac(key, message) == tag


def test_cmac_matches_cryptography_at_every_length():
    rng = random.Random(1)
    for length in range(0, 50):
        key = rng.randbytes(rng.choice([16, 24, 32]))
        message = rng.randbytes(length)
        c = pyca_cmac.CMAC(algorithms.AES(key))
        c.update(message)
        assert cmac_model.cmac(key, message) == c.finalize()
    assert cmac_model.cmac(bytes(16), b"", tag_bytes=8) == cmac_model.cmac(bytes(16), b"")[:8]
    with pytest.raises(ValueError):
        cmac_model.cmac(bytes(16), b"", tag_bytes=0)


def pyca_kdf(secret, constant, context, bits):
    return KBKDFCMAC(algorithm=algorithms.AES, mode=Mode.CounterMode, length=bits // 8, rlen=1,
                     llen=2, location=CounterLocation.BeforeFixed,
                     label=bytes(11) + bytes([constant]), context=context,
                     fixed=None).derive(secret)


def test_kdf_matches_cryptography_kbkdfcmac():
    rng = random.Random(2)
    secret = rng.randbytes(32)
    host, dev, sid = rng.randbytes(16), rng.randbytes(16), rng.randbytes(4)
    keys = S.derive_session(secret, host, dev, sid)
    context = host + dev
    assert keys.device_cryptogram == pyca_kdf(secret, 0x00, context, 128)
    assert keys.host_cryptogram == pyca_kdf(secret, 0x01, context, 128)
    assert keys.request_key == pyca_kdf(secret, 0x04, context, 256)
    assert keys.reply_key == pyca_kdf(secret, 0x05, context, 256)
    # Four different values; the fixed input is three AES blocks, as the spec says.
    assert len({keys.device_cryptogram, keys.host_cryptogram, keys.request_key,
                keys.reply_key}) == 4
    assert len(bytes([1]) + cmac_model.kdf_fixed_input(bytes(12), context, 256)) == 48
    # Either challenge changes everything.
    other = S.derive_session(secret, host, bytes(16), sid)
    assert other.request_key != keys.request_key
    assert other.host_cryptogram != keys.host_cryptogram
    assert secret.hex() not in repr(keys) and keys.request_key.hex() not in repr(keys)


def test_derive_session_checks_its_arguments():
    with pytest.raises(ValueError, match="32 bytes"):
        S.derive_session(bytes(16), bytes(16), bytes(16), bytes(4))
    with pytest.raises(ValueError, match="host_challenge"):
        S.derive_session(bytes(32), bytes(8), bytes(16), bytes(4))


def session():
    rng = random.Random(3)
    return S.derive_session(rng.randbytes(32), rng.randbytes(16), rng.randbytes(16),
                            rng.randbytes(4))


def test_request_record_is_aes_gcm_with_the_spec_layout():
    keys = session()
    payload = os.urandom(37)
    record = S.seal_request(keys, RECORD, 0x1234, 7, Command.LOAD_KEY, payload)
    assert len(record) == len(payload) + S.RECORD_OVERHEAD
    assert record[:4] == keys.session_id and record[4:12] == (7).to_bytes(8, "big")
    header = bytes([0x22, 0x12, 0x34]) + len(record).to_bytes(2, "big")
    nonce = keys.session_id + (7).to_bytes(8, "big")
    inner = AESGCM(keys.request_key).decrypt(nonce, record[12:], header + record[:12])
    assert inner == bytes([Command.LOAD_KEY]) + payload
    assert S.open_request(keys, RECORD, 0x1234, record) == (7, Command.LOAD_KEY,
                                                                      payload)


def test_reply_record_is_aes_gcm_under_the_other_key():
    keys = session()
    reply = b"\x00" + os.urandom(20)
    record = S.seal_reply(keys, 0xA2, 9, 7, reply)
    assert len(record) == len(reply) + S.RECORD_REPLY_OVERHEAD and record[0] == Status.OK
    header = bytes([0xA2, 0, 9]) + len(record).to_bytes(2, "big")
    nonce = keys.session_id + (7).to_bytes(8, "big")
    assert AESGCM(keys.reply_key).decrypt(nonce, record[13:], header + record[:13]) == reply
    assert S.open_reply(keys, 0xA2, 9, 7, record) == reply
    # The request key does not open it; another counter or seq does not either.
    with pytest.raises(InvalidTag):
        AESGCM(keys.request_key).decrypt(nonce, record[13:], header + record[:13])
    for args in ((0xA2, 9, 8), (0xA2, 10, 7), (0x82, 9, 7)):
        with pytest.raises(gcm_model.AuthenticationError):
            S.open_reply(keys, *args, record)


def test_every_flipped_bit_of_a_record_fails():
    keys = session()
    record = S.seal_request(keys, RECORD, 5, 1, Command.STATS, b"")
    for i in range(len(record)):
        bad = bytearray(record)
        bad[i] ^= 1 << (i % 8)
        with pytest.raises(gcm_model.AuthenticationError):
            S.open_request(keys, RECORD, 5, bytes(bad))
    with pytest.raises(gcm_model.AuthenticationError):
        S.open_request(keys, RECORD, 6, record)         # another seq


def test_session_statuses_are_in_their_range():
    names = ("SESSION_REQUIRED", "UNKNOWN_SESSION", "ENTROPY_FAILED", "BAD_CRYPTOGRAM",
             "SESSION_EXPIRED")
    for name in names:
        assert 0x20 <= Status[name] <= 0x2F
        assert not describe(Status[name]).startswith("unknown")
    for command in S.SessionCommand:
        assert 0x20 <= command <= 0x2F and command not in set(Command)
        assert S.command_name(command) == command.name
    assert S.command_name(Command.INFO) == "INFO" and S.command_name(0x7F) == "0x7f"


def test_the_hosts_openssl_records_equal_the_model():
    from aes_fpga.appliance.session_host import OpenSslGcm
    fast, keys = OpenSslGcm(), session()
    for size in (0, 1, 16, 100):
        payload = os.urandom(size)
        record = S.seal_request(keys, RECORD, 3, size + 1, Command.PROCESS, payload)
        assert S.seal_request(keys, RECORD, 3, size + 1, Command.PROCESS, payload,
                              gcm=fast) == record
        reply = S.seal_reply(keys, 0xA2, 3, size + 1, payload)
        assert S.open_reply(keys, 0xA2, 3, size + 1, reply, gcm=fast) == payload
        bad = reply[:-1] + bytes([reply[-1] ^ 1])
        with pytest.raises(gcm_model.AuthenticationError):
            S.open_reply(keys, 0xA2, 3, size + 1, bad, gcm=fast)
