"""End to end: the CLI through ``--port sim`` (the gateware protocol engine, modes and core,
compiled when a C++ compiler exists) against ``cryptography``, 1 byte to 1 MiB, each mode,
encrypt and decrypt. ECB and CBC pad with PKCS#7 (the default) or refuse a partial block
with ``--padding none``."""

import pytest
from cryptography.hazmat.primitives import padding as sym_padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from aes_fpga.cli import main

KEY = bytes.fromhex("603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4")
IV = bytes.fromhex("f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff")


def reference(mode, data, decrypt=False):
    m = {"ecb": modes.ECB(), "cbc": modes.CBC(IV), "ctr": modes.CTR(IV)}[mode]
    c = Cipher(algorithms.AES(KEY), m)
    ctx = c.decryptor() if decrypt else c.encryptor()
    return ctx.update(data) + ctx.finalize()


def pkcs7(data):
    p = sym_padding.PKCS7(128).padder()
    return p.update(data) + p.finalize()


def crypt(tmp_path, verb, mode, data, *extra):
    src, dst = tmp_path / f"{verb}.in", tmp_path / f"{verb}.out"
    src.write_bytes(data)
    dst.unlink(missing_ok=True)
    rc = main([verb, "--port", "sim", "--key", KEY.hex(), "--mode", mode, "--iv", IV.hex(),
               *extra, str(src), str(dst)])
    return rc, (dst.read_bytes() if dst.exists() else None)


@pytest.mark.parametrize("mode", ["ecb", "cbc", "ctr"])
@pytest.mark.parametrize("size", [1, 16, 1023, 4096 + 5, 1 << 20])
def test_sim_port_matches_cryptography(tmp_path, mode, size):
    data = (bytes(range(251)) * (size // 251 + 1))[:size]
    rc, ct = crypt(tmp_path, "encrypt", mode, data)
    assert rc == 0
    assert ct == reference(mode, data if mode == "ctr" else pkcs7(data))
    rc, pt = crypt(tmp_path, "decrypt", mode, ct)
    assert rc == 0 and pt == data


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
