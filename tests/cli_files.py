"""Files through the ``aes-fpga encrypt/decrypt`` CLI and the ``cryptography`` reference for
them, shared by the tests of the reference device and of the simulated appliance."""

from cryptography.hazmat.primitives import padding as sym_padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from aes_fpga.cli import main

KEY = bytes(range(16, 48))          # AES-256
IV = bytes.fromhex("f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff")


def reference(mode, data, decrypt=False):
    m = {"ecb": modes.ECB(), "cbc": modes.CBC(IV), "ctr": modes.CTR(IV)}[mode]
    c = Cipher(algorithms.AES(KEY), m)
    ctx = c.decryptor() if decrypt else c.encryptor()
    return ctx.update(data) + ctx.finalize()


def pkcs7(data):
    p = sym_padding.PKCS7(128).padder()
    return p.update(data) + p.finalize()


def crypt(tmp_path, verb, mode, data, *extra, port="model"):
    """Run ``aes-fpga <verb>`` on ``data`` with :data:`KEY` and :data:`IV` (where ``mode``
    takes one); returns the exit code and the output file's bytes (``None`` when no output
    file was written)."""
    src, dst = tmp_path / f"{verb}.in", tmp_path / f"{verb}.out"
    src.write_bytes(data)
    dst.unlink(missing_ok=True)
    iv = [] if mode == "ecb" else ["--iv", IV.hex()]     # ECB takes no IV (and refuses one)
    rc = main([verb, "--port", port, "--key", KEY.hex(), "--mode", mode, *iv, *extra, str(src),
               str(dst)])
    return rc, (dst.read_bytes() if dst.exists() else None)


def no_device(monkeypatch):
    """Make any attempt to open the device fail the test: what must be refused before any
    device work is refused without it."""
    from aes_fpga.commands import device

    def opened(args):
        raise AssertionError("the device was opened")
    monkeypatch.setattr(device, "open_device", opened)
