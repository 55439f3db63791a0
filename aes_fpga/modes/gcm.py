"""The parts of GCM (SP 800-38D) that :class:`~aes_fpga.modes.ModeEngine` adds around its core.

A GCM build of the engine decides, for each value of its queue (the value a result is XORed
with), an :class:`Entry` kind and a byte count (:func:`entry_layout`), keeps them beside the
value decoded into the flags its queue's head acts on (:func:`head_flags`), and drives a
:class:`~aes_fpga.modes.ghash.GHash` from the queue's head. The builders here are the pieces of
that datapath which have nothing to do with ECB, CBC or CTR.
"""

import enum

from amaranth.hdl import Cat, Const
from amaranth.lib import data

from ..params import GHASH_VARIANTS

__all__ = ["Entry", "entry_layout", "head_layout", "head_flags", "cut", "keep_bytes",
           "lengths_block", "GHASH_VARIANTS", "COUNT_BITS"]

#: Bits of the engine's AAD and data byte counters: 36 hold any message's data (SP 800-38D:
#: 2^36 - 32 bytes at most); the AAD counter wraps past 2^36 - 1 bytes, which the device
#: refuses before.
COUNT_BITS = 36



class Entry(enum.IntEnum):
    """What a queue entry of a GCM build is, and so where its head goes.

    ===========  ======================================================  ==========  =====
    kind         at the head of the queue                                core result  ``o``
    ===========  ======================================================  ==========  =====
    PLAIN        ECB/CBC/CTR: result XOR value                           yes         yes
    HASH_KEY     the result, H = E_K(0^128), to GHASH's ``h``           yes         no
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


def entry_layout():
    """What a GCM build keeps in its queue beside each value: the entry's :class:`Entry`
    ``kind``, the bytes of it that count (``count``: 4 bits, 0 meaning all 16): the byte count
    of its beat for the entries it cuts (AAD, DATA and a decryption's TAG, where it is the
    expected tag's length), 0 for every other entry; and whether it is its message's first
    block for GHASH (``gh_first``). Decoded (:func:`head_flags`) as it goes into the queue."""
    return data.StructLayout({"kind": 3, "count": 4, "gh_first": 1})


def head_layout():
    """An entry as the queue holds it, decoded (:func:`head_flags`) before it goes in, so that
    at the queue's head every flag is a bit of the queue's LUT RAM, loaded into a flip-flop
    with no logic between."""
    return data.StructLayout({
        "count": 4,         # its count (the engine registers :func:`keep_bytes` of it)
        "uses_core": 1,     # PLAIN, HASH_KEY, DATA, TAG: waits for the core's result
        "to_o": 1,          # PLAIN, DATA, TAG: a result on ``o``
        "to_gh": 1,         # HASH_KEY, AAD, DATA, LENGTHS: into the GHASH stage
        "takes_y": 1,       # TAG, FLUSH: takes GHASH's Y
        "hash_key": 1,      # HASH_KEY: the result is H
        "gh_last": 1,       # LENGTHS: GHASH's last block
        "tag": 1,           # TAG: Y goes into the result
        "check": 1,         # TAG of a decryption: the result is compared, not given
        "enc_data": 1,      # DATA of an encryption: GHASH takes the result, not the value
        "gh_first": 1,      # the message's first block into GHASH
    })


def head_flags(entry, decrypt):
    """The fields of :func:`head_layout` for an ``entry`` (a view of :func:`entry_layout`) of
    a message that ``decrypt``s, as a dict of expressions."""
    kind = entry.kind

    def one_of(*kinds):
        return Cat(kind == k for k in kinds).any()
    return {
        "count": entry.count,
        "uses_core": one_of(Entry.PLAIN, Entry.HASH_KEY, Entry.DATA, Entry.TAG),
        "to_o": one_of(Entry.PLAIN, Entry.DATA, Entry.TAG),
        "to_gh": one_of(Entry.HASH_KEY, Entry.AAD, Entry.DATA, Entry.LENGTHS),
        "takes_y": one_of(Entry.TAG, Entry.FLUSH),
        "hash_key": kind == Entry.HASH_KEY,
        "gh_last": kind == Entry.LENGTHS,
        "tag": kind == Entry.TAG,
        "check": (kind == Entry.TAG) & decrypt,
        "enc_data": (kind == Entry.DATA) & ~decrypt,
        "gh_first": entry.gh_first,
    }


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

