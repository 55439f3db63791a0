"""Pure-Python AES reference model (FIPS-197).

This module is the golden model that the Amaranth hardware is checked against. It is written for
clarity and self-containment rather than speed: every table is derived at import time from the
GF(2^8) field definition, so nothing here depends on a pasted constant being transcribed correctly.

Conventions
-----------
A 16-byte block (or a key) is represented either as ``bytes`` or as a non-negative ``int`` whose
most significant byte is the first byte, i.e. ``int.from_bytes(b, "big")``. The AES state is
column-major as in FIPS-197: byte ``i`` of the block is ``s[i % 4][i // 4]``, so the most
significant byte of a 128-bit state is ``s[0][0]``. A 32-bit column word has row 0 in its most
significant byte.

The state transforms (:func:`sub_bytes`, :func:`shift_rows`, ...) operate on 128-bit ints so that
they can be compared directly against hardware signals; the block ciphers work on byte lists
internally and convert only at the edges.
"""

__all__ = [
    "xtime",
    "gf_mul",
    "gf_inv",
    "SBOX",
    "INV_SBOX",
    "KEY_SIZES",
    "FIPS197_EXAMPLES",
    "num_rounds",
    "key_expansion",
    "round_keys",
    "inv_round_keys",
    "sub_bytes",
    "inv_sub_bytes",
    "shift_rows",
    "inv_shift_rows",
    "mix_column",
    "inv_mix_column",
    "mix_columns",
    "inv_mix_columns",
    "add_round_key",
    "encrypt_block",
    "decrypt_block",
    "decrypt_block_eqinv",
    "to_int",
    "to_bytes",
]

# The AES field is GF(2)[x] / (x^8 + x^4 + x^3 + x + 1).
_POLY = 0x11B

KEY_SIZES = (128, 192, 256)

#: The example vectors of FIPS-197 Appendix C (C.1, C.2, C.3), as printed there: key length ->
#: ``(key, plaintext, ciphertext)``, bytes. Data from the standard, not computed by this
#: module, so the model, the cores, the self-test design and a device can all be checked against
#: the standard's own answers (the tests check the model first).
FIPS197_EXAMPLES = {
    128: (bytes.fromhex("000102030405060708090a0b0c0d0e0f"),
          bytes.fromhex("00112233445566778899aabbccddeeff"),
          bytes.fromhex("69c4e0d86a7b0430d8cdb78070b4c55a")),
    192: (bytes.fromhex("000102030405060708090a0b0c0d0e0f1011121314151617"),
          bytes.fromhex("00112233445566778899aabbccddeeff"),
          bytes.fromhex("dda97ca4864cdfe06eaf70a0ec0d7191")),
    256: (bytes.fromhex("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"),
          bytes.fromhex("00112233445566778899aabbccddeeff"),
          bytes.fromhex("8ea2b7ca516745bfeafc49904b496089")),
}

_BLOCK_BYTES = 16
_NB = 4  # columns in the state; fixed at 4 for AES (Rijndael allowed more)


# --------------------------------------------------------------------------------------------
# Argument checking
# --------------------------------------------------------------------------------------------

def _check_uint(value, name, bits):
    # bool is an int subclass; accepting True/False as a byte or block would hide caller bugs.
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if not 0 <= value < (1 << bits):
        # Hex is easier to read for oversized blocks; a negative value is clearer in decimal.
        shown = f"{value:#x}" if value >= 0 else str(value)
        raise ValueError(f"{name} must be in range 0 <= {name} < 2**{bits}, got {shown}")
    return value


def _allowed_key_bits():
    return ", ".join(str(k) for k in KEY_SIZES)


def num_rounds(key_bits):
    """Return the number of AES rounds ``Nr`` for a key size.

    Parameters
    ----------
    key_bits : int
        Key length in bits; one of :data:`KEY_SIZES`.

    Returns
    -------
    int
        10, 12 or 14.

    Raises
    ------
    ValueError
        If ``key_bits`` is not 128, 192 or 256.
    """
    if isinstance(key_bits, bool) or key_bits not in KEY_SIZES:
        raise ValueError(f"key_bits must be one of {_allowed_key_bits()}, got {key_bits!r}")
    # FIPS-197 Table 4: Nr = Nk + 6 with Nk the key length in 32-bit words.
    return key_bits // 32 + 6


def _key_to_bytes(key, key_bits):
    """Normalise a key given as bytes or int to ``bytes`` of a valid AES length."""
    if isinstance(key, (bytes, bytearray, memoryview)):
        key = bytes(key)
        if len(key) * 8 not in KEY_SIZES:
            raise ValueError(
                f"key must be 16, 24 or 32 bytes long ({_allowed_key_bits()} bits), "
                f"got {len(key)} bytes"
            )
        # An explicit key_bits that disagrees with the byte length is almost certainly a mistake
        # at the call site, so refuse it instead of silently trusting one of the two.
        if key_bits is not None and key_bits != len(key) * 8:
            num_rounds(key_bits)
            raise ValueError(
                f"key_bits={key_bits} does not match the length of key ({len(key)} bytes = "
                f"{len(key) * 8} bits)"
            )
        return key
    if isinstance(key, int) and not isinstance(key, bool):
        if key_bits is None:
            key_bits = 128
        num_rounds(key_bits)
        _check_uint(key, "key", key_bits)
        return key.to_bytes(key_bits // 8, "big")
    raise TypeError(f"key must be bytes or a non-negative int, not {type(key).__name__}")


def _block_to_bytes(block):
    """Normalise a block to 16 ``bytes``; also report whether the caller used an int."""
    if isinstance(block, (bytes, bytearray, memoryview)):
        block = bytes(block)
        if len(block) != _BLOCK_BYTES:
            raise ValueError(f"block must be exactly 16 bytes long, got {len(block)} bytes")
        return block, False
    if isinstance(block, int) and not isinstance(block, bool):
        _check_uint(block, "block", 128)
        return block.to_bytes(_BLOCK_BYTES, "big"), True
    raise TypeError(f"block must be bytes or a non-negative int, not {type(block).__name__}")


def to_int(b):
    """Convert bytes to an unsigned int, first byte most significant.

    Parameters
    ----------
    b : bytes
        Any byte string.

    Returns
    -------
    int
        ``int.from_bytes(b, "big")``.
    """
    if not isinstance(b, (bytes, bytearray, memoryview)):
        raise TypeError(f"b must be bytes, not {type(b).__name__}")
    return int.from_bytes(b, "big")


def to_bytes(x, n=16):
    """Convert an unsigned int to ``n`` bytes, most significant byte first.

    Parameters
    ----------
    x : int
        Value with ``0 <= x < 2**(8*n)``.
    n : int, optional
        Output length in bytes (default 16, one AES block).

    Returns
    -------
    bytes
        Big-endian encoding of ``x``.
    """
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise ValueError(f"n must be a non-negative int, got {n!r}")
    _check_uint(x, "x", 8 * n)
    return x.to_bytes(n, "big")


# --------------------------------------------------------------------------------------------
# GF(2^8) arithmetic
# --------------------------------------------------------------------------------------------

def _xtime(a):
    a <<= 1
    # Reduce only when x^8 appeared; this is the single conditional XOR the hardware implements.
    return a ^ _POLY if a & 0x100 else a


def _gf_mul(a, b):
    # Shift-and-add multiplication; the table builders call this unchecked variant.
    p = 0
    while b:
        if b & 1:
            p ^= a
        a = _xtime(a)
        b >>= 1
    return p


def _gf_inv(a):
    # In GF(2^8)* every element satisfies a^255 = 1, so a^254 = a^-1. This maps 0 to 0, which is
    # exactly the convention the S-box construction needs.
    result = 1
    base = a
    e = 254
    while e:
        if e & 1:
            result = _gf_mul(result, base)
        base = _gf_mul(base, base)
        e >>= 1
    return result


def xtime(a):
    """Multiply a field element by ``x`` (i.e. by 0x02) in GF(2^8).

    Parameters
    ----------
    a : int
        Field element, ``0 <= a <= 0xFF``.

    Returns
    -------
    int
        ``a * 0x02`` reduced modulo 0x11B.
    """
    return _xtime(_check_uint(a, "a", 8))


def gf_mul(a, b):
    """Multiply two elements of GF(2^8) with the AES polynomial 0x11B.

    Parameters
    ----------
    a, b : int
        Field elements, each ``0 <= value <= 0xFF``.

    Returns
    -------
    int
        The product, ``0 <= result <= 0xFF``.
    """
    return _gf_mul(_check_uint(a, "a", 8), _check_uint(b, "b", 8))


def gf_inv(a):
    """Return the multiplicative inverse of ``a`` in GF(2^8), with ``gf_inv(0) == 0``.

    Parameters
    ----------
    a : int
        Field element, ``0 <= a <= 0xFF``.

    Returns
    -------
    int
        ``b`` such that ``gf_mul(a, b) == 1`` for ``a != 0``; 0 for ``a == 0``.
    """
    return _gf_inv(_check_uint(a, "a", 8))


# --------------------------------------------------------------------------------------------
# Tables (computed, never pasted)
# --------------------------------------------------------------------------------------------

def _rotl8(b, n):
    return ((b << n) | (b >> (8 - n))) & 0xFF


def _affine(b):
    # FIPS-197 eq. 5.1: b'_i = b_i ^ b_(i+4) ^ b_(i+5) ^ b_(i+6) ^ b_(i+7) ^ c_i is, viewed on the
    # whole byte, the XOR of b with its left rotations by 1..4 plus the constant 0x63.
    return b ^ _rotl8(b, 1) ^ _rotl8(b, 2) ^ _rotl8(b, 3) ^ _rotl8(b, 4) ^ 0x63


def _build_sboxes():
    sbox = tuple(_affine(_gf_inv(a)) for a in range(256))
    inv = [0] * 256
    for a, s in enumerate(sbox):
        inv[s] = a
    return sbox, tuple(inv)


SBOX, INV_SBOX = _build_sboxes()

# Multiplication tables for the (Inv)MixColumns coefficients: avoids re-running the shift-and-add
# loop sixteen times per round, which would make the randomised tests needlessly slow.
_MUL2, _MUL3, _MUL9, _MUL11, _MUL13, _MUL14 = (
    tuple(_gf_mul(a, c) for a in range(256)) for c in (0x02, 0x03, 0x09, 0x0B, 0x0D, 0x0E)
)


def _build_rcon(count):
    # Rcon[i] = x^(i-1); 10 entries suffice for every key size (AES-128 uses the most).
    rc, out = 1, []
    for _ in range(count):
        out.append(rc)
        rc = _xtime(rc)
    return tuple(out)


_RCON = _build_rcon(10)


# --------------------------------------------------------------------------------------------
# Byte-list transforms (internal; index i is s[i % 4][i // 4])
# --------------------------------------------------------------------------------------------

# Output byte r + 4c of ShiftRows takes input byte r + 4((c + r) mod 4), i.e. row r rotates left
# by r positions. Precomputing the permutation keeps the row/column arithmetic in one place.
_SHIFT = tuple(r + 4 * ((c + r) % 4) for c in range(4) for r in range(4))
_INV_SHIFT = tuple(r + 4 * ((c - r) % 4) for c in range(4) for r in range(4))


def _sub(s):
    return [SBOX[b] for b in s]


def _inv_sub(s):
    return [INV_SBOX[b] for b in s]


def _shift(s):
    return [s[j] for j in _SHIFT]


def _inv_shift(s):
    return [s[j] for j in _INV_SHIFT]


def _mix(s):
    out = []
    for c in range(0, 16, 4):
        a0, a1, a2, a3 = s[c:c + 4]
        out += (
            _MUL2[a0] ^ _MUL3[a1] ^ a2 ^ a3,
            a0 ^ _MUL2[a1] ^ _MUL3[a2] ^ a3,
            a0 ^ a1 ^ _MUL2[a2] ^ _MUL3[a3],
            _MUL3[a0] ^ a1 ^ a2 ^ _MUL2[a3],
        )
    return out


def _inv_mix(s):
    out = []
    for c in range(0, 16, 4):
        a0, a1, a2, a3 = s[c:c + 4]
        out += (
            _MUL14[a0] ^ _MUL11[a1] ^ _MUL13[a2] ^ _MUL9[a3],
            _MUL9[a0] ^ _MUL14[a1] ^ _MUL11[a2] ^ _MUL13[a3],
            _MUL13[a0] ^ _MUL9[a1] ^ _MUL14[a2] ^ _MUL11[a3],
            _MUL11[a0] ^ _MUL13[a1] ^ _MUL9[a2] ^ _MUL14[a3],
        )
    return out


def _xor(s, k):
    return [a ^ b for a, b in zip(s, k, strict=True)]


def _state_in(state):
    return list(_check_uint(state, "state", 128).to_bytes(_BLOCK_BYTES, "big"))


def _state_out(s):
    return int.from_bytes(bytes(s), "big")


# --------------------------------------------------------------------------------------------
# Public state transforms on 128-bit ints
# --------------------------------------------------------------------------------------------

def sub_bytes(state):
    """Apply SubBytes (FIPS-197 §5.1.1) to a 128-bit state.

    Parameters
    ----------
    state : int
        128-bit state, most significant byte is ``s[0][0]``.

    Returns
    -------
    int
        The state with :data:`SBOX` applied to every byte.
    """
    return _state_out(_sub(_state_in(state)))


def inv_sub_bytes(state):
    """Apply InvSubBytes (FIPS-197 §5.3.2) to a 128-bit state.

    Parameters
    ----------
    state : int
        128-bit state.

    Returns
    -------
    int
        The state with :data:`INV_SBOX` applied to every byte.
    """
    return _state_out(_inv_sub(_state_in(state)))


def shift_rows(state):
    """Apply ShiftRows (FIPS-197 §5.1.2): row ``r`` is rotated left by ``r`` bytes.

    Parameters
    ----------
    state : int
        128-bit column-major state.

    Returns
    -------
    int
        The shifted state.
    """
    return _state_out(_shift(_state_in(state)))


def inv_shift_rows(state):
    """Apply InvShiftRows (FIPS-197 §5.3.1): row ``r`` is rotated right by ``r`` bytes.

    Parameters
    ----------
    state : int
        128-bit column-major state.

    Returns
    -------
    int
        The shifted state.
    """
    return _state_out(_inv_shift(_state_in(state)))


def mix_column(col32):
    """Apply MixColumns to a single 32-bit column.

    Parameters
    ----------
    col32 : int
        Column word, most significant byte is row 0.

    Returns
    -------
    int
        The column multiplied by ``{03}x^3 + {01}x^2 + {01}x + {02}``.
    """
    col = list(_check_uint(col32, "col32", 32).to_bytes(4, "big"))
    # _mix walks four columns; padding keeps a single implementation of the matrix product.
    return int.from_bytes(bytes(_mix(col + [0] * 12)[:4]), "big")


def inv_mix_column(col32):
    """Apply InvMixColumns to a single 32-bit column.

    Parameters
    ----------
    col32 : int
        Column word, most significant byte is row 0.

    Returns
    -------
    int
        The column multiplied by ``{0b}x^3 + {0d}x^2 + {09}x + {0e}``.
    """
    col = list(_check_uint(col32, "col32", 32).to_bytes(4, "big"))
    return int.from_bytes(bytes(_inv_mix(col + [0] * 12)[:4]), "big")


def mix_columns(state):
    """Apply MixColumns (FIPS-197 §5.1.3) to every column of a 128-bit state.

    Parameters
    ----------
    state : int
        128-bit column-major state.

    Returns
    -------
    int
        The mixed state.
    """
    return _state_out(_mix(_state_in(state)))


def inv_mix_columns(state):
    """Apply InvMixColumns (FIPS-197 §5.3.3) to every column of a 128-bit state.

    Parameters
    ----------
    state : int
        128-bit column-major state.

    Returns
    -------
    int
        The unmixed state.
    """
    return _state_out(_inv_mix(_state_in(state)))


def add_round_key(state, rk):
    """Apply AddRoundKey (FIPS-197 §5.1.4), a plain 128-bit XOR.

    Parameters
    ----------
    state : int
        128-bit state.
    rk : int
        128-bit round key in the same byte order as ``state``.

    Returns
    -------
    int
        ``state ^ rk``.
    """
    return _check_uint(state, "state", 128) ^ _check_uint(rk, "rk", 128)


# --------------------------------------------------------------------------------------------
# Key schedule
# --------------------------------------------------------------------------------------------

def _sub_word(w):
    return (
        (SBOX[w >> 24] << 24) | (SBOX[(w >> 16) & 0xFF] << 16)
        | (SBOX[(w >> 8) & 0xFF] << 8) | SBOX[w & 0xFF]
    )


def _rot_word(w):
    return ((w << 8) | (w >> 24)) & 0xFFFFFFFF


def _expand(key_bytes):
    nk = len(key_bytes) // 4
    nr = nk + 6
    w = [int.from_bytes(key_bytes[4 * i:4 * i + 4], "big") for i in range(nk)]
    for i in range(nk, _NB * (nr + 1)):
        temp = w[i - 1]
        if i % nk == 0:
            temp = _sub_word(_rot_word(temp)) ^ (_RCON[i // nk - 1] << 24)
        elif nk > 6 and i % nk == 4:
            # Only AES-256 has this extra SubWord halfway through each 8-word group.
            temp = _sub_word(temp)
        w.append(w[i - nk] ^ temp)
    return w


def _round_key_ints(key_bytes):
    w = _expand(key_bytes)
    return [
        (w[4 * r] << 96) | (w[4 * r + 1] << 64) | (w[4 * r + 2] << 32) | w[4 * r + 3]
        for r in range(len(w) // 4)
    ]


def key_expansion(key, *, key_bits=None):
    """Expand a cipher key into the word schedule ``w`` of FIPS-197 §5.2.

    Parameters
    ----------
    key : bytes or int
        16, 24 or 32 byte key, or an int interpreted with ``key_bits``.
    key_bits : int, optional
        Key size for an int ``key``; defaults to 128. If given with a ``bytes`` key it must match.

    Returns
    -------
    list of int
        The ``4 * (Nr + 1)`` 32-bit words ``w[0] .. w[4*Nr+3]``.
    """
    return _expand(_key_to_bytes(key, key_bits))


def round_keys(key, *, key_bits=None):
    """Return the ``Nr + 1`` cipher round keys as 128-bit ints.

    Parameters
    ----------
    key : bytes or int
        See :func:`key_expansion`.
    key_bits : int, optional
        See :func:`key_expansion`.

    Returns
    -------
    list of int
        Round key ``r`` is ``w[4r] || w[4r+1] || w[4r+2] || w[4r+3]``; index 0 is added first by
        the forward cipher.
    """
    return _round_key_ints(_key_to_bytes(key, key_bits))


def inv_round_keys(key, *, key_bits=None):
    """Return the equivalent inverse cipher's round keys in the order they are used.

    Parameters
    ----------
    key : bytes or int
        See :func:`key_expansion`.
    key_bits : int, optional
        See :func:`key_expansion`.

    Returns
    -------
    list of int
        ``Nr + 1`` 128-bit keys: index 0 is ``round_keys[Nr]``, index ``r`` for ``1 <= r < Nr``
        is ``inv_mix_columns(round_keys[Nr - r])`` and index ``Nr`` is ``round_keys[0]``.

    Notes
    -----
    FIPS-197 §5.3.5 indexes ``dw`` by round number; this list is reversed relative to that so a
    hardware decryptor can walk it with an incrementing counter, the same way as the encryptor.
    """
    rks = _round_key_ints(_key_to_bytes(key, key_bits))
    nr = len(rks) - 1
    # InvMixColumns is linear, so applying it to the middle keys lets the equivalent cipher swap
    # the order of InvMixColumns and AddRoundKey and reuse the forward round structure.
    return [rks[nr]] + [inv_mix_columns(rks[nr - r]) for r in range(1, nr)] + [rks[0]]


# --------------------------------------------------------------------------------------------
# Block ciphers
# --------------------------------------------------------------------------------------------

def _as_lists(keys):
    return [list(k.to_bytes(_BLOCK_BYTES, "big")) for k in keys]


def _finish(out, as_int):
    out = bytes(out)
    return int.from_bytes(out, "big") if as_int else out


def encrypt_block(key, block, *, key_bits=None):
    """Encrypt one block with the AES cipher (FIPS-197 §5.1).

    Parameters
    ----------
    key : bytes or int
        16, 24 or 32 byte key, or an int key sized by ``key_bits``.
    block : bytes or int
        16-byte plaintext, or a 128-bit int.
    key_bits : int, optional
        Key size for an int ``key``; defaults to 128.

    Returns
    -------
    bytes or int
        The ciphertext, of the same type as ``block``.
    """
    data, as_int = _block_to_bytes(block)
    rks = _as_lists(_round_key_ints(_key_to_bytes(key, key_bits)))
    nr = len(rks) - 1
    s = _xor(data, rks[0])
    for r in range(1, nr):
        s = _xor(_mix(_shift(_sub(s))), rks[r])
    s = _xor(_shift(_sub(s)), rks[nr])
    return _finish(s, as_int)


def decrypt_block(key, block, *, key_bits=None):
    """Decrypt one block with the straightforward inverse cipher (FIPS-197 §5.3).

    Parameters
    ----------
    key : bytes or int
        16, 24 or 32 byte key, or an int key sized by ``key_bits``.
    block : bytes or int
        16-byte ciphertext, or a 128-bit int.
    key_bits : int, optional
        Key size for an int ``key``; defaults to 128.

    Returns
    -------
    bytes or int
        The plaintext, of the same type as ``block``.
    """
    data, as_int = _block_to_bytes(block)
    rks = _as_lists(_round_key_ints(_key_to_bytes(key, key_bits)))
    nr = len(rks) - 1
    s = _xor(data, rks[nr])
    for r in range(nr - 1, 0, -1):
        s = _inv_mix(_xor(_inv_sub(_inv_shift(s)), rks[r]))
    s = _xor(_inv_sub(_inv_shift(s)), rks[0])
    return _finish(s, as_int)


def decrypt_block_eqinv(key, block, *, key_bits=None):
    """Decrypt one block with the equivalent inverse cipher (FIPS-197 §5.3.5).

    The round sequence mirrors the forward cipher (substitute, shift, mix, add key), which is the
    structure a shared encrypt/decrypt datapath implements; the keys come from
    :func:`inv_round_keys`.

    Parameters
    ----------
    key : bytes or int
        16, 24 or 32 byte key, or an int key sized by ``key_bits``.
    block : bytes or int
        16-byte ciphertext, or a 128-bit int.
    key_bits : int, optional
        Key size for an int ``key``; defaults to 128.

    Returns
    -------
    bytes or int
        The plaintext, of the same type as ``block``.
    """
    data, as_int = _block_to_bytes(block)
    dks = _as_lists(inv_round_keys(_key_to_bytes(key, key_bits)))
    nr = len(dks) - 1
    s = _xor(data, dks[0])
    for r in range(1, nr):
        s = _xor(_inv_mix(_inv_shift(_inv_sub(s))), dks[r])
    s = _xor(_inv_shift(_inv_sub(s)), dks[nr])
    return _finish(s, as_int)
