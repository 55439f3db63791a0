"""Pure-Python AES key wrap (NIST SP 800-38F): KW (§6.2) and KWP, key wrap with padding (§6.3).

The golden model of wrapped keys for the appliance: a key kept outside the device is wrapped
with KWP under a key-encryption key derived from the device secret
(:func:`aes_fpga.appliance.session_spec.derive_key_wrap_key`), so that it is never stored or
sent in the clear (``aes-fpga wrap-key``). Like :mod:`aes_fpga.cmac_model` it imports only
:mod:`aes_fpga.model`, and is checked against the NIST KW/KWP vectors and ``cryptography``'s
``aes_key_wrap`` and ``aes_key_wrap_with_padding``.

Cost: wrapping ``n`` 64-bit semiblocks is ``6n`` chained block encryptions (a 256-bit key with
KWP: 4 semiblocks, 24 encryptions), one block per core latency on a device; a key of 8 bytes or
less with KWP is one encryption.

Unwrapping fails with :class:`UnwrapError` and nothing else: the same error, carrying no
detail, for a wrong key, an altered byte, a bad length field or bad padding (so that the
failure tells an attacker nothing about which check failed); the checks are combined before the
one decision.
"""

import hmac

from . import model

__all__ = ["SEMIBLOCK", "ICV1", "ICV2", "MAX_KWP_BYTES", "UnwrapError", "wrap", "unwrap",
           "wrap_with_padding", "unwrap_with_padding"]

#: Bytes in a semiblock (half an AES block).
SEMIBLOCK = 8
#: KW's integrity check value (SP 800-38F §6.2).
ICV1 = bytes.fromhex("A6A6A6A6A6A6A6A6")
#: KWP's (§6.3): the first half of its alternative initial value, the plaintext length after.
ICV2 = bytes.fromhex("A65959A6")
#: The longest plaintext KWP wraps (its length field is 32 bits).
MAX_KWP_BYTES = 2 ** 32 - 1


class UnwrapError(ValueError):
    """An unwrap failed: the wrapped key is not authentic under this key (or not a wrapped
    key). Says no more."""

    def __init__(self):
        super().__init__("the wrapped key is not authentic under this key-encryption key")


def _key(kek):
    kek = bytes(kek)
    if len(kek) not in (16, 24, 32):
        raise ValueError(f"key-encryption key must be 16, 24 or 32 bytes, got {len(kek)}")
    return kek


def _w(kek, a, r):
    """The wrapping function W (§6.1, algorithm 1) on the initial value ``a`` (8 bytes) and
    the semiblocks ``r`` (two or more): the wrapped bytes."""
    a = int.from_bytes(a, "big")
    r = [int.from_bytes(x, "big") for x in r]
    n = len(r)
    for j in range(6):
        for i in range(n):
            b = model.encrypt_block(kek, (a << 64) | r[i])
            a = (b >> 64) ^ (n * j + i + 1)
            r[i] = b & (2 ** 64 - 1)
    return b"".join(x.to_bytes(SEMIBLOCK, "big") for x in (a, *r))


def _w_inverse(kek, c):
    """The unwrapping function W^-1 (§6.1, algorithm 2): ``(a, semiblocks)`` of ``c``."""
    parts = [int.from_bytes(c[k:k + SEMIBLOCK], "big") for k in range(0, len(c), SEMIBLOCK)]
    a, r = parts[0], parts[1:]
    n = len(r)
    for j in reversed(range(6)):
        for i in reversed(range(n)):
            b = model.decrypt_block(kek, ((a ^ (n * j + i + 1)) << 64) | r[i])
            a = b >> 64
            r[i] = b & (2 ** 64 - 1)
    return a.to_bytes(SEMIBLOCK, "big"), [x.to_bytes(SEMIBLOCK, "big") for x in r]


def _semiblocks(data):
    return [data[k:k + SEMIBLOCK] for k in range(0, len(data), SEMIBLOCK)]


def wrap(kek, key):
    """KW-AE (§6.2): ``key`` (a multiple of 8 bytes, 16 or more) wrapped under ``kek``."""
    kek, key = _key(kek), bytes(key)
    if len(key) < 2 * SEMIBLOCK or len(key) % SEMIBLOCK:
        raise ValueError(f"KW wraps a multiple of {SEMIBLOCK} bytes, {2 * SEMIBLOCK} or more; "
                         f"got {len(key)} (KWP wraps any length)")
    return _w(kek, ICV1, _semiblocks(key))


def unwrap(kek, wrapped):
    """KW-AD (§6.2): the key wrapped in ``wrapped`` under ``kek``, or :class:`UnwrapError`."""
    kek, wrapped = _key(kek), bytes(wrapped)
    if len(wrapped) < 3 * SEMIBLOCK or len(wrapped) % SEMIBLOCK:
        raise UnwrapError()
    a, r = _w_inverse(kek, wrapped)
    if not hmac.compare_digest(a, ICV1):
        raise UnwrapError()
    return b"".join(r)


def wrap_with_padding(kek, key):
    """KWP-AE (§6.3): ``key`` (1 to :data:`MAX_KWP_BYTES` bytes) wrapped under ``kek``: the
    key padded with zero bytes to a multiple of 8, behind the initial value ``ICV2 || [len]_32``;
    one block encryption for a padded key of one semiblock, else the wrapping function."""
    kek, key = _key(kek), bytes(key)
    if not 1 <= len(key) <= MAX_KWP_BYTES:
        raise ValueError(f"KWP wraps 1 to {MAX_KWP_BYTES} bytes, got {len(key)}")
    aiv = ICV2 + len(key).to_bytes(4, "big")
    padded = key + bytes(-len(key) % SEMIBLOCK)
    if len(padded) == SEMIBLOCK:
        return model.encrypt_block(kek, aiv + padded)
    return _w(kek, aiv, _semiblocks(padded))


def unwrap_with_padding(kek, wrapped):
    """KWP-AD (§6.3): the key wrapped in ``wrapped`` under ``kek``, or :class:`UnwrapError`
    (the initial value, the length field and the padding checked together)."""
    kek, wrapped = _key(kek), bytes(wrapped)
    if len(wrapped) < 2 * SEMIBLOCK or len(wrapped) % SEMIBLOCK:
        raise UnwrapError()
    if len(wrapped) == 2 * SEMIBLOCK:
        s = model.decrypt_block(kek, wrapped)
        a, padded = s[:SEMIBLOCK], s[SEMIBLOCK:]
    else:
        a, r = _w_inverse(kek, wrapped)
        padded = b"".join(r)
    length = int.from_bytes(a[4:], "big")
    n = len(padded) // SEMIBLOCK
    # Every check computed, then one decision: the length must fall in the last semiblock and
    # the padding after it be zero.
    fits = 8 * (n - 1) < length <= 8 * n
    pad = padded[length:] if fits else padded[-1:]
    ok = hmac.compare_digest(a[:4], ICV2) & fits & hmac.compare_digest(pad, bytes(len(pad)))
    if not ok:
        raise UnwrapError()
    return padded[:length]
