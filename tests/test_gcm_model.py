"""The pure-Python GCM model against OpenSSL (``cryptography``'s AESGCM)."""

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from hypothesis import given, settings
from hypothesis import strategies as st

from aes_fpga import gcm_model as gcm

LENGTHS = st.sampled_from([0, 1, 15, 16, 17, 31, 32, 33, 64])


@settings(max_examples=40, deadline=None)
@given(key=st.sampled_from([16, 24, 32]).flatmap(lambda n: st.binary(min_size=n, max_size=n)),
       nonce=st.binary(min_size=12, max_size=12),
       aad=LENGTHS.flatmap(lambda n: st.binary(min_size=n, max_size=n)),
       data=LENGTHS.flatmap(lambda n: st.binary(min_size=n, max_size=n)))
def test_matches_openssl(key, nonce, aad, data):
    ciphertext, tag = gcm.encrypt(key, nonce, aad, data)
    assert ciphertext + tag == AESGCM(key).encrypt(nonce, data, aad)
    assert gcm.decrypt(key, nonce, aad, ciphertext, tag[:gcm.MIN_TAG_BYTES]) == data


@pytest.mark.parametrize("part", ["nonce", "aad", "ciphertext", "tag"])
def test_any_flipped_bit_fails(part):
    key, nonce, aad = bytes(range(16)), bytes(12), b"header"
    ciphertext, tag = gcm.encrypt(key, nonce, aad, b"attack at dawn!!x")
    args = {"nonce": nonce, "aad": aad, "ciphertext": ciphertext, "tag": tag}
    flipped = bytearray(args[part])
    flipped[-1] ^= 0x01
    args[part] = bytes(flipped)
    with pytest.raises(gcm.AuthenticationError) as failure:
        gcm.decrypt(key, **args)
    assert str(failure.value) == "authentication failed"


def test_multiplication_is_the_field_product():
    h = gcm.hash_key(bytes(16))
    assert gcm.mul(h, 1 << 127) == h                       # the block 0x80 00.. is 1
    assert gcm.mul(h, 1 << 126) == gcm.mul_x(h)            # 0x40 00.. is x
    assert gcm.mul(gcm.mul_x_pow(h, 127), 1 << 126) == gcm.mul_x_pow(h, 128)
    assert gcm.mul_x_pow(1 << 127, 128) == gcm.R                # x^128 = 1 + x + x^2 + x^7


def test_refusals_name_the_parameter():
    with pytest.raises(ValueError, match="nonce: must be 12 bytes"):
        gcm.encrypt(bytes(16), bytes(16), b"", b"")
    with pytest.raises(ValueError, match="tag: 11 bytes is not allowed; from 12 to 16"):
        gcm.decrypt(bytes(16), bytes(12), b"", b"", bytes(11))
    assert gcm.inc32((5 << 32) | 0xFFFFFFFF) == 5 << 32
