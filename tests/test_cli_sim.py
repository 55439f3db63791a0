"""End to end: the CLI through ``--port sim`` (the gateware protocol engine, modes and core,
compiled when a C++ compiler exists) against ``cryptography``, 1 byte to 1 MiB, each mode,
encrypt and decrypt. ECB and CBC pad with PKCS#7 (the default) or refuse a partial block
with ``--padding none``."""

import time
from functools import partial

import cli_files
import pytest
from cli_files import pkcs7, reference

crypt = partial(cli_files.crypt, port="sim")


# 64 KiB in CTR (64 chunks, pipelined like ECB and CBC decryption) stays in the default run;
# every mode at 1 MiB (CBC encryption waits for every block: 7.5 M cycles) runs with -m slow.
_BIG = [pytest.param(mode, 1 << 20, marks=pytest.mark.slow) for mode in ("ecb", "cbc", "ctr")]


@pytest.mark.parametrize(("mode", "size"), [
    (mode, size) for mode in ("ecb", "cbc", "ctr") for size in (1, 16, 1023, 4096 + 5)
] + [("ctr", 1 << 16)] + _BIG)
def test_sim_port_matches_cryptography(tmp_path, mode, size):
    """Both ways through ``--port sim``; 64 KiB (and more) within a minute each way once the
    simulator is built (timed on the decryption, which the encryption's build precedes), as
    the engine's own -m slow test_frontend_engine.py::test_ctr_64k_timed asks too."""
    data = (bytes(range(251)) * (size // 251 + 1))[:size]
    rc, ct = crypt(tmp_path, "encrypt", mode, data)
    assert rc == 0
    assert ct == reference(mode, data if mode == "ctr" else pkcs7(data))
    start = time.monotonic()
    rc, pt = crypt(tmp_path, "decrypt", mode, ct)
    assert rc == 0 and pt == data
    assert size < 1 << 16 or time.monotonic() - start < 60


@pytest.mark.parametrize("mode", ["ecb", "cbc"])
def test_sim_port_whole_blocks_without_padding(tmp_path, mode, capsys):
    data = bytes(range(48))
    rc, ct = crypt(tmp_path, "encrypt", mode, data, "--padding", "none")
    assert rc == 0 and ct == reference(mode, data)
    rc, pt = crypt(tmp_path, "decrypt", mode, ct, "--padding", "none")
    assert rc == 0 and pt == data
    capsys.readouterr()
    rc, out = crypt(tmp_path, "encrypt", mode, data[:40], "--padding", "none")
    assert rc == 2 and out is None
    assert "use --padding pkcs7" in capsys.readouterr().err


# ---- GCM ---------------------------------------------------------------------------------

NONCE = bytes.fromhex("cafebabefacedbaddecaf888")


def gcm(tmp_path, verb, data, *extra, aad=b"file header"):
    """``aes-fpga VERB --mode gcm --port sim`` on ``data`` with AAD from a file; the exit code
    and the output file's bytes (``None`` when there is none)."""
    from aes_fpga.cli import main
    src, dst = tmp_path / f"{verb}.in", tmp_path / f"{verb}.out"
    src.write_bytes(data)
    (tmp_path / "aad").write_bytes(aad)
    dst.unlink(missing_ok=True)
    rc = main([verb, "--port", "sim", "--mode", "gcm", "--key", cli_files.KEY.hex(),
               "--aad-file", str(tmp_path / "aad"), *extra, str(src), str(dst)])
    return rc, (dst.read_bytes() if dst.exists() else None)


@pytest.mark.parametrize("size", [0, 1, 17, 1024, 5000])
def test_sim_port_gcm_matches_aesgcm(tmp_path, size):
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    data = (bytes(range(251)) * (size // 251 + 1))[:size]
    rc, sealed = gcm(tmp_path, "encrypt", data, "--nonce", NONCE.hex())
    assert rc == 0
    assert sealed == NONCE + AESGCM(cli_files.KEY).encrypt(NONCE, data, b"file header")
    assert gcm(tmp_path, "decrypt", sealed) == (0, data)


def test_sim_port_gcm_flipped_bit_fails_without_output(tmp_path, capsys):
    data = bytes(range(100))
    rc, sealed = gcm(tmp_path, "encrypt", data)
    assert rc == 0
    flipped = sealed[:40] + bytes([sealed[40] ^ 4]) + sealed[41:]
    capsys.readouterr()
    assert gcm(tmp_path, "decrypt", flipped) == (1, None)
    assert "authentication failed" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["aad", "decrypt.in", "encrypt.in",
                                                         "encrypt.out"]
