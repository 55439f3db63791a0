"""Pure-Python AES-CMAC (NIST SP 800-38B) and the SP 800-108 counter-mode KDF built on it.

The golden model of the appliance's session keys (:mod:`aes_fpga.appliance.session_spec`): the
reference device and the host driver derive keys and cryptograms here, and the gateware will run
the same chain of block encryptions on its core. Like :mod:`aes_fpga.gcm_model` it imports only
:mod:`aes_fpga.model` and is checked against ``cryptography`` (``CMAC``, ``KBKDFCMAC``) and the
SP 800-38B examples.

CMAC is a chained construction: each 16-byte block is encrypted after the previous one (one block
per core latency), so a message of ``n`` blocks costs ``n`` encryptions and one more for the
subkeys (``E_K(0^128)``), which a device may keep with the key.
"""

from . import model

__all__ = ["BLOCK_BYTES", "RB", "subkeys", "cmac", "kdf_counter", "kdf_fixed_input"]

#: Bytes in a block.
BLOCK_BYTES = 16
#: The constant of the subkey doubling for 128-bit blocks (SP 800-38B §5.3): x^128 = x^7 + x^2 +
#: x + 1.
RB = 0x87
_MASK = (1 << 128) - 1


def _double(v):
    # Multiply by x in GF(2^128) with the most significant bit first (SP 800-38B §6.1).
    return ((v << 1) & _MASK) ^ (RB if v >> 127 else 0)


def subkeys(key):
    """``(K1, K2)`` of ``key`` (16, 24 or 32 bytes) as 128-bit ints (SP 800-38B §6.1)."""
    k1 = _double(model.encrypt_block(bytes(key), 0))
    return k1, _double(k1)


def cmac(key, message, tag_bytes=BLOCK_BYTES):
    """The CMAC of ``message`` (bytes) under ``key`` (AES-128/192/256), cut to ``tag_bytes``
    (1 .. 16; SP 800-38B §6.2)."""
    if not 1 <= tag_bytes <= BLOCK_BYTES:
        raise ValueError(f"tag_bytes must be in range 1 .. {BLOCK_BYTES}, got {tag_bytes}")
    key, message = bytes(key), bytes(message)
    k1, k2 = subkeys(key)
    n = max(1, -(-len(message) // BLOCK_BYTES))
    last = message[(n - 1) * BLOCK_BYTES:]
    if len(last) == BLOCK_BYTES:
        last = int.from_bytes(last, "big") ^ k1
    else:
        padded = last + b"\x80" + bytes(BLOCK_BYTES - 1 - len(last))
        last = int.from_bytes(padded, "big") ^ k2
    c = 0
    for i in range(n - 1):
        block = int.from_bytes(message[i * BLOCK_BYTES:(i + 1) * BLOCK_BYTES], "big")
        c = model.encrypt_block(key, c ^ block)
    c = model.encrypt_block(key, c ^ last)
    return c.to_bytes(BLOCK_BYTES, "big")[:tag_bytes]


def kdf_fixed_input(label, context, length_bits):
    """The fixed input of the counter-mode KDF: ``label || 0x00 || context || [L]_16``
    (SP 800-108 §5.1, the order of ``cryptography``'s ``KBKDFCMAC`` with ``llen=2``)."""
    if not 0 < length_bits < 1 << 16 or length_bits % 8:
        raise ValueError(f"length_bits must be a positive multiple of 8 below 65536, "
                         f"got {length_bits}")
    return bytes(label) + b"\x00" + bytes(context) + length_bits.to_bytes(2, "big")


def kdf_counter(key, label, context, length_bits):
    """SP 800-108 counter-mode KDF with AES-CMAC as the PRF: ``length_bits`` of output, the
    CMAC of ``[i]_8 || fixed input`` for i = 1, 2, ... concatenated (an 8-bit counter before
    the fixed data, as SCP03)."""
    fixed = kdf_fixed_input(label, context, length_bits)
    blocks = -(-length_bits // (8 * BLOCK_BYTES))
    if blocks > 255:
        raise ValueError(f"length_bits: {length_bits} needs more than 255 blocks")
    out = b"".join(cmac(key, bytes([i]) + fixed) for i in range(1, blocks + 1))
    return out[:length_bits // 8]
