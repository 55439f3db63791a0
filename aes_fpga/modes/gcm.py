"""The parts of GCM (SP 800-38D) that :class:`~aes_fpga.modes.ModeEngine` adds around its core.

A GCM build of the engine keeps, beside each value of its queue (the value a result is XORed
with), an :class:`Entry` kind and a byte count, and drives a
:class:`~aes_fpga.modes.ghash.GHash` from the queue's head. The builders here are the pieces of
that datapath which have nothing to do with ECB, CBC or CTR.
"""

import enum

from amaranth.hdl import Cat, Const

__all__ = ["Entry", "cut", "keep_bytes", "lengths_block", "GHASH_VARIANTS", "COUNT_BITS"]

#: Bits of the engine's AAD and data byte counters: 36 hold any message's data (SP 800-38D:
#: 2^36 - 32 bytes at most); the AAD counter wraps past 2^36 - 1 bytes, which the device
#: refuses before.
COUNT_BITS = 36

#: The GHASH implementations a GCM build can use (``ModeEngine(gcm=...)``).
GHASH_VARIANTS = ("bram", "lut")


class Entry(enum.IntEnum):
    """What a queue entry of a GCM build is, and so where its head goes.

    ===========  ======================================================  ==========  =====
    kind         at the head of the queue                                core result  ``o``
    ===========  ======================================================  ==========  =====
    PLAIN        ECB/CBC/CTR: result XOR value                           yes         yes
    HASH_KEY     the result, H = E_K(0^128), loads GHASH's ``h``        yes         no
    AAD          the value, cut, into GHASH                              no          no
    DATA         result XOR value, cut: out; the ciphertext into GHASH   yes         yes
    LENGTHS      the value, len(A) || len(C), into GHASH as its last     no          no
    TAG          E_K(J0) XOR GHASH's Y XOR value: the tag or its check   yes         yes
    FLUSH        GHASH's Y, dropped (ends an abandoned message's GHASH)  no          no
    ===========  ======================================================  ==========  =====
    """

    PLAIN = 0
    HASH_KEY = 1
    AAD = 2
    DATA = 3
    LENGTHS = 4
    TAG = 5
    FLUSH = 6


def keep_bytes(count):
    """Which bytes of a block a byte count keeps: bit ``j`` is byte ``15 - j`` (byte 0, the
    first, is the most significant), kept when ``count`` (4 bits; 0 means 16) is 0 or more
    than its index."""
    return Cat((count == 0) | (count > 15 - j) for j in range(16))


def cut(block, keep):
    """``block`` with the bytes ``keep`` (from :func:`keep_bytes`) does not keep zeroed."""
    return Cat(block[8 * j:8 * j + 8] & keep[j].replicate(8) for j in range(16))


def lengths_block(aad_bytes, data_bytes):
    """GHASH's last block, len(A) || len(C) in bits (64 bits each), from the byte counts (as
    :func:`aes_fpga.gcm_model.length_block`)."""
    assert len(aad_bytes) <= 61 and len(data_bytes) <= 61
    half = [Cat(Const(0, 3), n, Const(0, 61 - len(n))) for n in (data_bytes, aad_bytes)]
    return Cat(*half)

