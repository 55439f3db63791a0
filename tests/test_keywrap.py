"""SP 800-38F key wrap (aes_fpga.keywrap) against the NIST KW and KWP vectors of
``cryptography-vectors`` (``KW_AE_*``, ``KW_AD_*``, ``KWP_AE_*``, ``KWP_AD_*``, the FAIL cases
included) and ``cryptography``'s ``aes_key_wrap`` / ``aes_key_wrap_with_padding``; the
key-encryption key of a device secret; ``aes-fpga wrap-key``.

The default run takes the first few vectors of each length and outcome (the pure-Python AES
costs 33 ms for one 4096-bit plaintext); ``-m slow`` takes them all."""

import os
import random
import stat
from pathlib import Path

import cryptography_vectors
import pytest
from cryptography.hazmat.primitives import keywrap as openssl

from aes_fpga import cmac_model
from aes_fpga.appliance import session_spec as S
from aes_fpga.appliance.session_host import DEVICE_KEY_ENV
from aes_fpga.cli import main
from aes_fpga.keywrap import (
    UnwrapError,
    unwrap,
    unwrap_with_padding,
    wrap,
    wrap_with_padding,
)

VECTORS = Path(cryptography_vectors.__file__).parent / "keywrap" / "kwtestvectors"
SECRET = bytes(range(40, 72))


def vectors(name):
    """The cases of a NIST key wrap file: dicts of K, P, C (bytes; P None for FAIL)."""
    cases, case = [], None
    for line in (VECTORS / name).read_text().splitlines():
        line = line.strip()
        if line.startswith("["):
            continue
        if line.startswith("COUNT"):
            case = {"P": None}
            cases.append(case)
        elif case is not None and line == "FAIL":
            case["fail"] = True
        elif case is not None and " = " in line:
            key, value = line.split(" = ")
            case[key] = bytes.fromhex(value)
    return cases


def chosen(cases, slow):
    """All of them, or per length and outcome the first 8 (of a length below 64 bytes) or the
    first one (longer)."""
    if slow:
        return cases
    taken, out = {}, []
    for c in cases:
        n = len(c.get("P") or c["C"])
        group = (n, bool(c.get("fail")))
        if taken.get(group, 0) < (8 if n < 64 else 1):
            out.append(c)
            taken[group] = taken.get(group, 0) + 1
    return out


FILES = [(kind, bits) for kind in ("KW", "KWP") for bits in (128, 192, 256)]


def check_file(kind, bits, slow):
    do_wrap = wrap if kind == "KW" else wrap_with_padding
    do_unwrap = unwrap if kind == "KW" else unwrap_with_padding
    theirs = openssl.aes_key_wrap if kind == "KW" else openssl.aes_key_wrap_with_padding
    wrapped = unwrapped = failed = 0
    for case in chosen(vectors(f"{kind}_AE_{bits}.txt"), slow):
        assert do_wrap(case["K"], case["P"]) == case["C"] == theirs(case["K"], case["P"])
        wrapped += 1
    for case in chosen(vectors(f"{kind}_AD_{bits}.txt"), slow):
        if case.get("fail"):
            with pytest.raises(UnwrapError):
                do_unwrap(case["K"], case["C"])
            failed += 1
        else:
            assert do_unwrap(case["K"], case["C"]) == case["P"]
            unwrapped += 1
    least = (400, 300, 50) if slow else (20, 20, 10)
    assert all(got >= n for got, n in zip((wrapped, unwrapped, failed), least, strict=True)), \
        (wrapped, unwrapped, failed)


# AES-192 takes the code paths of AES-128 and AES-256 with another key schedule length: its
# vector files are -m slow; the default run wraps with 192-bit keys against cryptography in
# test_random_keys_against_cryptography.
@pytest.mark.parametrize("kind,bits", [
    pytest.param(kind, bits, marks=pytest.mark.slow) if bits == 192 else (kind, bits)
    for kind, bits in FILES])
def test_nist_vectors(kind, bits):
    check_file(kind, bits, slow=False)


@pytest.mark.slow
@pytest.mark.parametrize("kind,bits", FILES)
def test_nist_vectors_all(kind, bits):
    check_file(kind, bits, slow=True)


def test_random_keys_against_cryptography():
    rng = random.Random(38)
    for _ in range(40):
        kek = rng.randbytes(rng.choice((16, 24, 32)))
        key = rng.randbytes(rng.randint(1, 70))
        w = wrap_with_padding(kek, key)
        assert w == openssl.aes_key_wrap_with_padding(kek, key)
        assert unwrap_with_padding(kek, w) == key
        # Any byte flipped, a wrong key, or a cut: the one error, telling nothing more.
        bad = bytearray(w)
        bad[rng.randrange(len(w))] ^= 1 << rng.randrange(8)
        for kek2, w2 in ((kek, bytes(bad)), (bytes(len(kek)), w), (kek, w[:-8]), (kek, w[1:])):
            with pytest.raises(UnwrapError) as e:
                unwrap_with_padding(kek2, w2)
            assert str(e.value) == str(UnwrapError()) and key.hex() not in str(e.value)


def test_refused_inputs():
    with pytest.raises(ValueError, match="1 to"):
        wrap_with_padding(bytes(16), b"")
    with pytest.raises(ValueError, match="multiple of 8"):
        wrap(bytes(16), bytes(12))
    with pytest.raises(ValueError, match="16, 24 or 32"):
        wrap_with_padding(bytes(15), bytes(16))
    # A KW-wrapped key is no KWP-wrapped one (its initial value differs), and the reverse.
    k = bytes(range(16))
    with pytest.raises(UnwrapError):
        unwrap_with_padding(k, wrap(k, bytes(16)))
    with pytest.raises(UnwrapError):
        unwrap(k, wrap_with_padding(k, bytes(16)))


def test_the_key_encryption_key_is_the_kdf_with_its_own_constant():
    kek = S.derive_key_wrap_key(SECRET)
    assert kek == cmac_model.kdf_counter(SECRET, bytes(11) + b"\x08", bytes(32), 256)
    from cryptography.hazmat.primitives.ciphers import algorithms
    from cryptography.hazmat.primitives.kdf.kbkdf import (
        KBKDFCMAC,
        CounterLocation,
        Mode,
    )
    kdf = KBKDFCMAC(algorithm=algorithms.AES, mode=Mode.CounterMode, length=32, rlen=1, llen=2,
                    location=CounterLocation.BeforeFixed, label=bytes(11) + b"\x08",
                    context=bytes(32), fixed=None)
    assert kek == kdf.derive(SECRET)
    # No session value shares it.
    keys = S.derive_session(SECRET, bytes(16), bytes(16), bytes(4))
    assert kek not in (keys.request_key, keys.reply_key)
    assert len({d.value for d in S.Derivation}) == len(S.Derivation)
    with pytest.raises(ValueError):
        S.derive_key_wrap_key(SECRET[:16])


def test_wrap_key_command(tmp_path, capsys, monkeypatch):
    device_key = tmp_path / "device.key"
    device_key.write_text(SECRET.hex())
    device_key.chmod(0o600)
    key = tmp_path / "k.bin"
    key.write_bytes(bytes(range(32)))
    out = tmp_path / "k.wrapped"
    assert main(["wrap-key", "--device-key-file", str(device_key), "--key-file", str(key),
                 str(out)]) == 0
    printed = capsys.readouterr()
    wrapped = out.read_bytes()
    assert len(wrapped) == 40
    assert wrapped == openssl.aes_key_wrap_with_padding(S.derive_key_wrap_key(SECRET),
                                                        bytes(range(32)))
    for secret in (SECRET, bytes(range(32))):
        assert secret.hex() not in printed.out + printed.err
    # Never replaced; without a device key nothing is written.
    assert main(["wrap-key", "--device-key-file", str(device_key), "--key-file", str(key),
                 str(out)]) == 2
    assert "exists" in capsys.readouterr().err and out.read_bytes() == wrapped
    other = tmp_path / "other.wrapped"
    monkeypatch.delenv(DEVICE_KEY_ENV, raising=False)
    assert main(["wrap-key", "--key-file", str(key), str(other)]) == 2
    assert "device key" in capsys.readouterr().err and not other.exists()


def test_wrap_key_file_mode(tmp_path):
    device_key = tmp_path / "device.key"
    device_key.write_text(SECRET.hex())
    device_key.chmod(0o600)
    key = tmp_path / "k.hex"
    key.write_text(bytes(range(16)).hex() + "\n")
    out = tmp_path / "k.wrapped"
    old = os.umask(0o022)
    try:
        assert main(["wrap-key", "--device-key-file", str(device_key), "--key-file", str(key),
                     str(out)]) == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert unwrap_with_padding(S.derive_key_wrap_key(SECRET), out.read_bytes()) \
        == bytes(range(16))
