"""Pure-Python GCM (NIST SP 800-38D): GF(2^128) arithmetic, GHASH and GCM with 96-bit IVs.

The golden model of the GCM mode: the reference device (:mod:`aes_fpga.appliance.reference`),
the gateware's tables (computed from it at elaboration) and the tests take their GCM from here.
Like :mod:`aes_fpga.model` it is written for clarity, imports only the standard library and that
model, and is checked against ``cryptography`` and the NIST vectors.

Conventions
-----------
A 128-bit block is an ``int`` from its 16 bytes read big-endian (``int.from_bytes(b, "big")``),
the library's block convention. GCM reads a block as a polynomial with the *first* bit (the most
significant bit of byte 0, bit 127 of the int) as the coefficient of x^0 and the last bit
(bit 0 of the int) as that of x^127 (SP 800-38D §6.3), so multiplying by x is a right shift of
the int, and the reduction by x^128 + x^7 + x^2 + x + 1 XORs :data:`R` into the top byte.
"""

from . import model

__all__ = [
    "R", "BLOCK_BYTES", "NONCE_BYTES", "TAG_BYTES", "MIN_TAG_BYTES",
    "MAX_DATA_BYTES", "MAX_AAD_BYTES",
    "mul", "mul_x", "mul_x_pow", "ghash", "ghash_blocks", "length_block", "inc32", "j0",
    "hash_key", "encrypt", "decrypt", "tag_matches", "AuthenticationError",
]

#: The reduction constant: x^128 = x^7 + x^2 + x + 1, as the block 0xE1 || 0^120.
R = 0xE1 << 120
#: Bytes in a block.
BLOCK_BYTES = 16
#: The only IV length supported: 96 bits (J0 = IV || 0^31 || 1, SP 800-38D §7.1 step 2).
NONCE_BYTES = 12
#: Bytes of the tag the encryption produces.
TAG_BYTES = 16
#: Shortest expected tag a decryption accepts (SP 800-38D §5.2.1.2 allows 96 to 128 bits here).
MIN_TAG_BYTES = 12
#: Most plaintext (or ciphertext) bytes in one message: len(P) <= 2^39 - 256 bits.
MAX_DATA_BYTES = (2 ** 39 - 256) // 8
#: Most additional authenticated data bytes in one message: len(A) <= 2^64 - 1 bits.
MAX_AAD_BYTES = (2 ** 64 - 1) // 8

_MASK = (1 << 128) - 1


class AuthenticationError(ValueError):
    """The tag does not match: the message, its AAD, its nonce or the tag was altered, or the
    key is not the one it was made with. Carries no data."""

    def __init__(self):
        super().__init__("authentication failed")


def _check_block(value, name):
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _MASK:
        raise ValueError(f"{name}: must be a 128-bit non-negative int")


def mul_x(v):
    """``v`` times x in GCM's field (one step of SP 800-38D Algorithm 1)."""
    return (v >> 1) ^ (R if v & 1 else 0)


def mul_x_pow(v, n):
    """``v`` times x^n (``n`` >= 0)."""
    for _ in range(n):
        v = mul_x(v)
    return v


def mul(x, y):
    """The product of blocks ``x`` and ``y`` in GF(2^128) (SP 800-38D §6.3, Algorithm 1)."""
    _check_block(x, "x")
    _check_block(y, "y")
    z, v = 0, y
    for i in range(127, -1, -1):
        if (x >> i) & 1:
            z ^= v
        v = mul_x(v)
    return z


def ghash_blocks(h, blocks, y=0):
    """GHASH_H over the 128-bit ``blocks`` (ints), starting from ``y`` (SP 800-38D §6.4)."""
    for block in blocks:
        y = mul(y ^ block, h)
    return y


def _blocks(data):
    """``data`` as whole blocks, the last one padded with zeros."""
    padded = data + bytes(-len(data) % BLOCK_BYTES)
    return [int.from_bytes(padded[i:i + BLOCK_BYTES], "big")
            for i in range(0, len(padded), BLOCK_BYTES)]


def length_block(aad_bytes, data_bytes):
    """The last block GHASH takes: len(A) || len(C), each a 64-bit count of bits."""
    return ((aad_bytes * 8) << 64) | (data_bytes * 8)


def ghash(h, aad, ciphertext):
    """GHASH_H(A || 0^v || C || 0^u || [len(A)]64 || [len(C)]64), SP 800-38D §7.1 step 5."""
    return ghash_blocks(h, [*_blocks(aad), *_blocks(ciphertext),
                            length_block(len(aad), len(ciphertext))])


def inc32(block):
    """The block with its last 32 bits incremented modulo 2^32 (SP 800-38D §6.2)."""
    return (block & ~0xFFFFFFFF & _MASK) | ((block + 1) & 0xFFFFFFFF)


def j0(nonce):
    """The pre-counter block J0 = IV || 0^31 || 1 of a 96-bit ``nonce`` (12 bytes)."""
    if not isinstance(nonce, (bytes, bytearray)) or len(nonce) != NONCE_BYTES:
        raise ValueError(f"nonce: must be {NONCE_BYTES} bytes (only 96-bit IVs are supported)")
    return (int.from_bytes(nonce, "big") << 32) | 1


def hash_key(key):
    """H = E_K(0^128), the hash subkey of ``key`` (16, 24 or 32 bytes)."""
    return model.encrypt_block(key, 0)


def _check_lengths(aad, data):
    if len(data) > MAX_DATA_BYTES:
        raise ValueError(f"data: {len(data)} bytes is over the GCM limit of {MAX_DATA_BYTES}")
    if len(aad) > MAX_AAD_BYTES:
        raise ValueError(f"aad: {len(aad)} bytes is over the GCM limit of {MAX_AAD_BYTES}")


def _gctr(key, counter, data):
    """GCTR_K(ICB = inc32(counter)) over ``data`` (SP 800-38D §6.5)."""
    out = bytearray()
    for i in range(0, len(data), BLOCK_BYTES):
        counter = inc32(counter)
        stream = model.encrypt_block(key, counter).to_bytes(BLOCK_BYTES, "big")
        out += bytes(a ^ b for a, b in zip(data[i:i + BLOCK_BYTES], stream, strict=False))
    return bytes(out)


def _tag(key, pre_counter, aad, ciphertext):
    s = ghash(hash_key(key), aad, ciphertext)
    return (model.encrypt_block(key, pre_counter) ^ s).to_bytes(TAG_BYTES, "big")


def encrypt(key, nonce, aad, plaintext):
    """GCM-AE (SP 800-38D §7.1): ``(ciphertext, tag)`` of ``plaintext`` and ``aad`` (bytes)
    under ``key`` and the 12-byte ``nonce``; the tag is 16 bytes."""
    _check_lengths(aad, plaintext)
    counter = j0(nonce)
    ciphertext = _gctr(key, counter, bytes(plaintext))
    return ciphertext, _tag(key, counter, bytes(aad), ciphertext)


def tag_matches(expected, computed):
    """Whether the first ``len(expected)`` bytes of ``computed`` equal ``expected``, compared
    without an early exit (every byte is looked at whatever the others hold)."""
    diff = 0
    for a, b in zip(expected, computed, strict=False):
        diff |= a ^ b
    return diff == 0


def decrypt(key, nonce, aad, ciphertext, tag):
    """GCM-AD (SP 800-38D §7.2): the plaintext, or :class:`AuthenticationError` when ``tag``
    (12 to 16 bytes) does not match."""
    if not MIN_TAG_BYTES <= len(tag) <= TAG_BYTES:
        raise ValueError(f"tag: {len(tag)} bytes is not allowed; from {MIN_TAG_BYTES} to "
                         f"{TAG_BYTES}")
    _check_lengths(aad, ciphertext)
    counter = j0(nonce)
    if not tag_matches(bytes(tag), _tag(key, counter, bytes(aad), bytes(ciphertext))):
        raise AuthenticationError()
    return _gctr(key, counter, bytes(ciphertext))
