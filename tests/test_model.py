"""Tests for the pure-Python AES reference model.

Known-answer vectors come from FIPS-197 (Appendices A, B and C) and NIST SP 800-38A (F.1, ECB);
randomised cases are cross-checked against the ``cryptography`` package so the model is never only
compared against itself.
"""

import ast
import random

import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from aes_fpga import model
from aes_fpga.model import (
    INV_SBOX,
    KEY_SIZES,
    SBOX,
    add_round_key,
    decrypt_block,
    decrypt_block_eqinv,
    encrypt_block,
    gf_inv,
    gf_mul,
    inv_mix_column,
    inv_mix_columns,
    inv_round_keys,
    inv_shift_rows,
    inv_sub_bytes,
    key_expansion,
    mix_column,
    mix_columns,
    num_rounds,
    round_keys,
    shift_rows,
    sub_bytes,
    to_bytes,
    to_int,
    xtime,
)

H = bytes.fromhex

KEY128 = H("2b7e151628aed2a6abf7158809cf4f3c")
KEY192 = H("8e73b0f7da0e6452c810f32b809079e562f8ead2522c6b7b")
KEY256 = H("603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4")


# --------------------------------------------------------------------------------------------
# Field arithmetic and S-boxes
# --------------------------------------------------------------------------------------------

def test_sbox_spot_values():
    assert SBOX[0x00] == 0x63
    assert SBOX[0x01] == 0x7C
    assert SBOX[0x53] == 0xED
    assert SBOX[0xFF] == 0x16
    assert INV_SBOX[0x63] == 0x00
    assert INV_SBOX[0xED] == 0x53
    assert INV_SBOX[0x00] == 0x52


def test_sbox_tables_are_inverse_permutations():
    assert isinstance(SBOX, tuple) and isinstance(INV_SBOX, tuple)
    assert len(SBOX) == len(INV_SBOX) == 256
    assert sorted(SBOX) == list(range(256))
    for a in range(256):
        assert INV_SBOX[SBOX[a]] == a
        assert SBOX[INV_SBOX[a]] == a


def test_sbox_has_no_fixed_points():
    # A design property of the AES S-box; a wrong affine constant typically breaks it.
    assert all(SBOX[a] != a and SBOX[a] != a ^ 0xFF for a in range(256))


def test_xtime_known_values():
    # FIPS-197 §4.2.1 worked example: {57} * x^k.
    assert xtime(0x57) == 0xAE
    assert xtime(0xAE) == 0x47
    assert xtime(0x47) == 0x8E
    assert xtime(0x8E) == 0x07
    assert xtime(0x80) == 0x1B


@pytest.mark.parametrize(
    "a, b, product",
    [(0x57, 0x83, 0xC1), (0x57, 0x13, 0xFE), (0x83, 0x57, 0xC1), (0x01, 0xAB, 0xAB),
     (0x00, 0xAB, 0x00), (0x02, 0x87, 0x15)],
)
def test_gf_mul_known_products(a, b, product):
    assert gf_mul(a, b) == product


def test_gf_inv():
    assert gf_inv(0) == 0
    assert gf_inv(1) == 1
    for a in range(1, 256):
        inv = gf_inv(a)
        assert 0 < inv < 256
        assert gf_mul(a, inv) == 1


def test_gf_arguments_are_checked():
    with pytest.raises(ValueError, match=r"\ba\b.*0x100"):
        gf_mul(0x100, 1)
    with pytest.raises(ValueError, match=r"\bb\b"):
        gf_mul(1, -1)
    with pytest.raises(TypeError, match=r"\ba\b"):
        xtime("x")


# --------------------------------------------------------------------------------------------
# Key expansion (FIPS-197 Appendix A)
# --------------------------------------------------------------------------------------------

KEY_EXPANSION_VECTORS = [
    (
        KEY128,
        44,
        {
            0: 0x2B7E1516, 1: 0x28AED2A6, 2: 0xABF71588, 3: 0x09CF4F3C,
            4: 0xA0FAFE17, 5: 0x88542CB1, 6: 0x23A33939, 7: 0x2A6C7605,
            20: 0xD4D1C6F8, 21: 0x7C839D87, 22: 0xCAF2B8BC, 23: 0x11F915BC,
            40: 0xD014F9A8, 41: 0xC9EE2589, 42: 0xE13F0CC8, 43: 0xB6630CA6,
        },
    ),
    (
        KEY192,
        52,
        {
            0: 0x8E73B0F7, 1: 0xDA0E6452, 2: 0xC810F32B, 3: 0x809079E5,
            4: 0x62F8EAD2, 5: 0x522C6B7B, 6: 0xFE0C91F7, 7: 0x2402F5A5,
            8: 0xEC12068E, 9: 0x6C827F6B, 12: 0x4DB7B4BD, 24: 0xA25E7ED5,
            48: 0xE98BA06F, 49: 0x448C773C, 50: 0x8ECC7204, 51: 0x01002202,
        },
    ),
    (
        KEY256,
        60,
        {
            0: 0x603DEB10, 1: 0x15CA71BE, 2: 0x2B73AEF0, 3: 0x857D7781,
            4: 0x1F352C07, 5: 0x3B6108D7, 6: 0x2D9810A3, 7: 0x0914DFF4,
            8: 0x9BA35411, 9: 0x8E6925AF, 10: 0xA51A8B5F, 11: 0x2067FCDE,
            # w[12] is the first word produced by the AES-256-only extra SubWord step.
            12: 0xA8B09C1A, 13: 0x93D194CD,
            56: 0xFE4890D1, 57: 0xE6188D0B, 58: 0x046DF344, 59: 0x706C631E,
        },
    ),
]


@pytest.mark.parametrize("key, length, words", KEY_EXPANSION_VECTORS, ids=["128", "192", "256"])
def test_key_expansion_appendix_a(key, length, words):
    w = key_expansion(key)
    assert len(w) == length
    assert all(0 <= x < 1 << 32 for x in w)
    for i, expected in words.items():
        assert w[i] == expected, f"w[{i}] = {w[i]:08x}, expected {expected:08x}"


@pytest.mark.parametrize("key_bits, nr", [(128, 10), (192, 12), (256, 14)])
def test_num_rounds(key_bits, nr):
    assert num_rounds(key_bits) == nr


@pytest.mark.parametrize("bad", [0, 64, 127, 129, 512, True])
def test_num_rounds_rejects_bad_sizes(bad):
    with pytest.raises(ValueError, match=r"key_bits.*128, 192, 256"):
        num_rounds(bad)


def test_key_sizes_constant():
    assert KEY_SIZES == (128, 192, 256)


@pytest.mark.parametrize("key", [KEY128, KEY192, KEY256], ids=["128", "192", "256"])
def test_round_keys_are_grouped_words(key):
    w = key_expansion(key)
    rks = round_keys(key)
    nr = len(key) // 4 + 6
    assert len(rks) == nr + 1
    for r, rk in enumerate(rks):
        expected = int.from_bytes(b"".join(x.to_bytes(4, "big") for x in w[4 * r:4 * r + 4]), "big")
        assert rk == expected
    assert rks[0] == to_int(key[:16])


@pytest.mark.parametrize("key", [KEY128, KEY192, KEY256], ids=["128", "192", "256"])
def test_inv_round_keys_order(key):
    rks = round_keys(key)
    dks = inv_round_keys(key)
    nr = len(rks) - 1
    assert len(dks) == nr + 1
    assert dks[0] == rks[nr]
    assert dks[nr] == rks[0]
    for r in range(1, nr):
        assert dks[r] == inv_mix_columns(rks[nr - r])
    # The middle keys must actually differ from the plain reversed schedule, otherwise the test
    # above could not distinguish a missing InvMixColumns.
    assert dks[1] != rks[nr - 1]


def test_round_keys_first_last_appendix_a():
    rks = round_keys(KEY128)
    assert rks[10] == 0xD014F9A8C9EE2589E13F0CC8B6630CA6
    assert inv_round_keys(KEY128)[0] == 0xD014F9A8C9EE2589E13F0CC8B6630CA6


# --------------------------------------------------------------------------------------------
# Known-answer cipher vectors
# --------------------------------------------------------------------------------------------

APPENDIX_C = [
    (H("000102030405060708090a0b0c0d0e0f"), H("69c4e0d86a7b0430d8cdb78070b4c55a")),
    (H("000102030405060708090a0b0c0d0e0f1011121314151617"), H("dda97ca4864cdfe06eaf70a0ec0d7191")),
    (
        H("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"),
        H("8ea2b7ca516745bfeafc49904b496089"),
    ),
]
APPENDIX_C_PT = H("00112233445566778899aabbccddeeff")


@pytest.mark.parametrize("key, ct", APPENDIX_C, ids=["128", "192", "256"])
def test_fips197_appendix_c(key, ct):
    assert encrypt_block(key, APPENDIX_C_PT) == ct
    assert decrypt_block(key, ct) == APPENDIX_C_PT
    assert decrypt_block_eqinv(key, ct) == APPENDIX_C_PT


@pytest.mark.parametrize("key, ct", APPENDIX_C, ids=["128", "192", "256"])
def test_fips197_appendix_c_int_api(key, ct):
    key_bits = len(key) * 8
    k, p, c = to_int(key), to_int(APPENDIX_C_PT), to_int(ct)
    assert encrypt_block(k, p, key_bits=key_bits) == c
    assert decrypt_block(k, c, key_bits=key_bits) == p
    assert decrypt_block_eqinv(k, c, key_bits=key_bits) == p


def test_fips197_appendix_b():
    pt = H("3243f6a8885a308d313198a2e0370734")
    ct = H("3925841d02dc09fbdc118597196a0b32")
    assert encrypt_block(KEY128, pt) == ct
    assert decrypt_block(KEY128, ct) == pt
    assert decrypt_block_eqinv(KEY128, ct) == pt


def test_fips197_appendix_b_first_round_states():
    # Intermediate states of round 1 from the Appendix B walk-through; pins down the transform
    # byte order independently of the full cipher.
    start = 0x193DE3BEA0F4E22B9AC68D2AE9F84808
    after_sub = 0xD42711AEE0BF98F1B8B45DE51E415230
    after_shift = 0xD4BF5D30E0B452AEB84111F11E2798E5
    after_mix = 0x046681E5E0CB199A48F8D37A2806264C
    rk1 = 0xA0FAFE1788542CB123A339392A6C7605
    assert add_round_key(to_int(H("3243f6a8885a308d313198a2e0370734")), round_keys(KEY128)[0]) \
        == start
    assert sub_bytes(start) == after_sub
    assert shift_rows(after_sub) == after_shift
    assert mix_columns(after_shift) == after_mix
    assert add_round_key(after_mix, rk1) == 0xA49C7FF2689F352B6B5BEA43026A5049


PT_38A = [
    H("6bc1bee22e409f96e93d7e117393172a"),
    H("ae2d8a571e03ac9c9eb76fac45af8e51"),
    H("30c81c46a35ce411e5fbc1191a0a52ef"),
    H("f69f2445df4f9b17ad2b417be66c3710"),
]
ECB_38A = [
    (
        KEY128,
        [
            H("3ad77bb40d7a3660a89ecaf32466ef97"),
            H("f5d3d58503b9699de785895a96fdbaaf"),
            H("43b1cd7f598ece23881b00e3ed030688"),
            H("7b0c785e27e8ad3f8223207104725dd4"),
        ],
    ),
    (
        KEY192,
        [
            H("bd334f1d6e45f25ff712a214571fa5cc"),
            H("974104846d0ad3ad7734ecb3ecee4eef"),
            H("ef7afd2270e2e60adce0ba2face6444e"),
            H("9a4b41ba738d6c72fb16691603c18e0e"),
        ],
    ),
    (
        KEY256,
        [
            H("f3eed1bdb5d2a03c064b5a7e3db181f8"),
            H("591ccb10d410ed26dc5ba74a31362870"),
            H("b6ed21b99ca6f4f9f153e7b1beafed1d"),
            H("23304b7a39f9f3ff067d8d8f9e24ecc7"),
        ],
    ),
]


@pytest.mark.parametrize("key, cts", ECB_38A, ids=["ECB-AES128", "ECB-AES192", "ECB-AES256"])
def test_sp800_38a_ecb(key, cts):
    for pt, ct in zip(PT_38A, cts, strict=True):
        assert encrypt_block(key, pt) == ct
        assert decrypt_block(key, ct) == pt
        assert decrypt_block_eqinv(key, ct) == pt


# --------------------------------------------------------------------------------------------
# Randomised cross-check against `cryptography`
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("key_bits", [128, 192, 256])
def test_random_against_cryptography(key_bits):
    rng = random.Random(0xAE5_0000 + key_bits)
    for _ in range(1000):
        key = rng.randbytes(key_bits // 8)
        pt = rng.randbytes(16)
        cipher = Cipher(algorithms.AES(key), modes.ECB())
        enc = cipher.encryptor()
        ct = enc.update(pt) + enc.finalize()
        dec = cipher.decryptor()
        # Decrypting an unrelated random block tests the inverse direction on fresh input
        # rather than only undoing our own encryption.
        other = rng.randbytes(16)
        other_pt = dec.update(other) + dec.finalize()

        assert encrypt_block(key, pt) == ct
        assert decrypt_block(key, ct) == pt
        assert decrypt_block(key, other) == other_pt
        assert decrypt_block_eqinv(key, ct) == pt
        assert decrypt_block_eqinv(key, other) == other_pt


# --------------------------------------------------------------------------------------------
# Individual transforms
# --------------------------------------------------------------------------------------------

TRANSFORM_PAIRS = [
    (sub_bytes, inv_sub_bytes),
    (shift_rows, inv_shift_rows),
    (mix_columns, inv_mix_columns),
]


@pytest.mark.parametrize("fwd, inv", TRANSFORM_PAIRS, ids=lambda f: f.__name__)
def test_transform_round_trip(fwd, inv):
    rng = random.Random(1234)
    changed = 0
    for _ in range(200):
        s = rng.getrandbits(128)
        t = fwd(s)
        assert 0 <= t < 1 << 128
        assert inv(t) == s
        assert fwd(inv(s)) == s
        changed += t != s
    # Guards against both functions silently being the identity.
    assert changed > 190


def test_column_round_trip():
    rng = random.Random(99)
    for _ in range(200):
        c = rng.getrandbits(32)
        assert inv_mix_column(mix_column(c)) == c
        assert mix_column(inv_mix_column(c)) == c


@pytest.mark.parametrize(
    "col_in, col_out",
    [
        (0xDB135345, 0x8E4DA1BC),
        (0xF20A225C, 0x9FDC589D),
        (0x01010101, 0x01010101),
        (0xC6C6C6C6, 0xC6C6C6C6),
        (0xD4D4D4D5, 0xD5D5D7D6),
        (0x2D26314C, 0x4D7EBDF8),
    ],
)
def test_mix_column_known_values(col_in, col_out):
    assert mix_column(col_in) == col_out
    assert inv_mix_column(col_out) == col_in


def test_mix_columns_acts_per_column():
    state = 0xDB135345_F20A225C_01010101_2D26314C
    assert mix_columns(state) == 0x8E4DA1BC_9FDC589D_01010101_4D7EBDF8
    assert inv_mix_columns(0x8E4DA1BC_9FDC589D_01010101_4D7EBDF8) == state


def test_shift_rows_layout():
    # Byte i of the block is s[i % 4][i // 4]; row r rotates left by r columns.
    state = to_int(bytes(range(16)))
    expected = bytes([0, 5, 10, 15, 4, 9, 14, 3, 8, 13, 2, 7, 12, 1, 6, 11])
    assert shift_rows(state) == to_int(expected)
    assert inv_shift_rows(to_int(expected)) == state


def test_sub_bytes_is_bytewise():
    state = to_int(bytes(range(16)))
    assert sub_bytes(state) == to_int(bytes(SBOX[i] for i in range(16)))
    assert inv_sub_bytes(state) == to_int(bytes(INV_SBOX[i] for i in range(16)))


def test_add_round_key_is_xor():
    a, b = 0x0123456789ABCDEF_FEDCBA9876543210, 0xFFFF0000FFFF0000_0000FFFF0000FFFF
    assert add_round_key(a, b) == a ^ b
    assert add_round_key(add_round_key(a, b), b) == a


def test_transform_rejects_oversized_state():
    with pytest.raises(ValueError, match="state"):
        sub_bytes(1 << 128)
    with pytest.raises(ValueError, match="col32"):
        mix_column(1 << 32)


# --------------------------------------------------------------------------------------------
# API types and error handling
# --------------------------------------------------------------------------------------------

def test_to_int_to_bytes():
    assert to_int(H("0102")) == 0x0102
    assert to_bytes(0x0102, 2) == H("0102")
    assert to_bytes(1) == bytes(15) + b"\x01"
    assert len(to_bytes(0)) == 16
    assert to_bytes(to_int(APPENDIX_C_PT)) == APPENDIX_C_PT
    with pytest.raises(ValueError, match=r"\bx\b"):
        to_bytes(1 << 128)
    with pytest.raises(ValueError, match=r"\bx\b"):
        to_bytes(-1)


def test_return_type_follows_block():
    key, ct = APPENDIX_C[0]
    out = encrypt_block(key, APPENDIX_C_PT)
    assert type(out) is bytes and out == ct
    out = encrypt_block(key, to_int(APPENDIX_C_PT))
    assert type(out) is int and out == to_int(ct)
    # Key and block types are independent.
    out = encrypt_block(to_int(key), APPENDIX_C_PT)
    assert type(out) is bytes and out == ct
    out = decrypt_block(to_int(key), to_int(ct))
    assert type(out) is int and out == to_int(APPENDIX_C_PT)
    out = decrypt_block_eqinv(key, to_int(ct))
    assert type(out) is int and out == to_int(APPENDIX_C_PT)


def test_int_block_with_leading_zeros():
    # Small ints must still be treated as full 16-byte blocks (leading zero bytes kept).
    key = KEY128
    ct_int = encrypt_block(key, 1)
    assert ct_int == to_int(encrypt_block(key, bytes(15) + b"\x01"))
    assert decrypt_block(key, ct_int) == 1
    assert decrypt_block_eqinv(key, ct_int) == 1


def test_int_key_uses_key_bits():
    key192, ct192 = APPENDIX_C[1]
    k = to_int(key192)
    assert encrypt_block(k, APPENDIX_C_PT, key_bits=192) == ct192
    # The same int read as a 256-bit key (with leading zero bytes) is a different key.
    assert encrypt_block(k, APPENDIX_C_PT, key_bits=256) != ct192
    # Default key size for int keys is 128 bits.
    assert encrypt_block(to_int(APPENDIX_C[0][0]), APPENDIX_C_PT) == APPENDIX_C[0][1]
    assert len(round_keys(0)) == 11
    assert len(key_expansion(0, key_bits=256)) == 60


@pytest.mark.parametrize("func", [encrypt_block, decrypt_block, decrypt_block_eqinv])
@pytest.mark.parametrize("length", [0, 8, 15, 17, 20, 33])
def test_bad_key_length(func, length):
    with pytest.raises(ValueError, match=rf"key.*16, 24 or 32.*{length} bytes"):
        func(bytes(length), bytes(16))


@pytest.mark.parametrize("func", [key_expansion, round_keys, inv_round_keys])
def test_bad_key_length_schedule(func):
    with pytest.raises(ValueError, match=r"key.*got 20 bytes"):
        func(bytes(20))


@pytest.mark.parametrize("func", [encrypt_block, decrypt_block, decrypt_block_eqinv])
@pytest.mark.parametrize("length", [0, 15, 17, 32])
def test_bad_block_length(func, length):
    with pytest.raises(ValueError, match=rf"block.*16 bytes.*got {length} bytes"):
        func(KEY128, bytes(length))


def test_int_out_of_range():
    with pytest.raises(ValueError, match=r"block.*2\*\*128"):
        encrypt_block(KEY128, 1 << 128)
    with pytest.raises(ValueError, match=r"block"):
        encrypt_block(KEY128, -1)
    with pytest.raises(ValueError, match=r"key.*2\*\*128"):
        encrypt_block(1 << 128, 0)
    # Fits in 192 bits, so it is fine once the caller says the key is 192 bits wide.
    assert isinstance(encrypt_block(1 << 128, 0, key_bits=192), int)


def test_bad_key_bits():
    with pytest.raises(ValueError, match=r"key_bits.*128, 192, 256.*got 100"):
        encrypt_block(0, 0, key_bits=100)
    with pytest.raises(ValueError, match=r"key_bits=192.*key.*16 bytes"):
        encrypt_block(KEY128, 0, key_bits=192)


@pytest.mark.parametrize("bad", ["00" * 16, 1.5, None, [0] * 16, True])
def test_bad_types(bad):
    with pytest.raises(TypeError, match="block"):
        encrypt_block(KEY128, bad)
    with pytest.raises(TypeError, match="key"):
        encrypt_block(bad, bytes(16))


def test_model_has_no_hardware_dependency():
    # The reference model must stay importable without Amaranth so it can be trusted on its own.
    with open(model.__file__, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            imported.add((node.module or "").split(".")[0])
    # Only the standard library (or nothing) may be imported; in particular no Amaranth.
    assert not imported & {"amaranth", "numpy", "cryptography"}
