"""``aes-fpga encrypt/decrypt --mode gcm`` with the reference device (``--port model``): files
of several sizes to and from what ``cryptography``'s AESGCM makes, every altered bit refused
with "authentication failed" and no output left, the limits and the options refused before
any work."""

import os

import cli_files
import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from aes_fpga import gcm_model
from aes_fpga.appliance.spec import GCM_MAX_DATA_BYTES
from aes_fpga.cli import main
from aes_fpga.commands import crypt as crypt_command

KEY = bytes(range(16, 48))
NONCE = bytes.fromhex("cafebabefacedbaddecaf888")
AAD = b"file header v1"


@pytest.fixture
def no_device(monkeypatch):
    """Any attempt to open the device fails the test."""
    cli_files.no_device(monkeypatch)


def gcm(tmp_path, verb, data, *extra, aad=AAD, out="out"):
    """Run ``aes-fpga VERB --mode gcm`` on ``data`` (AAD from a file unless ``aad`` is None);
    the exit code and OUT's bytes (``None`` when there is none)."""
    src, dst = tmp_path / f"{verb}.in", tmp_path / out
    src.write_bytes(data)
    aad_args = []
    if aad is not None:
        (tmp_path / "aad").write_bytes(aad)
        aad_args = ["--aad-file", str(tmp_path / "aad")]
    rc = main([verb, "--port", "model", "--mode", "gcm", "--key", KEY.hex(), *aad_args, *extra,
               str(src), str(dst)])
    return rc, (dst.read_bytes() if dst.exists() else None)


def _left(tmp_path):
    return sorted(p.name for p in tmp_path.iterdir())


@pytest.mark.parametrize("size", [0, 1, 16, 1000, 5000])
def test_files_encrypt_to_what_aesgcm_makes_and_back(tmp_path, size):
    data = os.urandom(size)
    rc, sealed = gcm(tmp_path, "encrypt", data, "--nonce", NONCE.hex())
    assert rc == 0
    assert sealed == NONCE + AESGCM(KEY).encrypt(NONCE, data, AAD)
    # A random nonce: AESGCM opens it.
    rc, sealed = gcm(tmp_path, "encrypt", data)
    assert rc == 0 and len(sealed) == 12 + size + 16
    assert AESGCM(KEY).decrypt(sealed[:12], sealed[12:], AAD) == data
    assert gcm(tmp_path, "decrypt", sealed) == (0, data)
    # And a file AESGCM made, without AAD, opens here.
    made = NONCE + AESGCM(KEY).encrypt(NONCE, data, b"")
    assert gcm(tmp_path, "decrypt", made, aad=None) == (0, data)
    assert not [n for n in _left(tmp_path) if n.endswith(".part")]


@pytest.mark.parametrize("where", ["nonce", "aad", "ciphertext", "tag"])
@pytest.mark.parametrize("bit", [0, 7])
def test_a_flipped_bit_fails_and_leaves_no_output(tmp_path, capsys, where, bit):
    data = bytes(range(100))
    sealed = NONCE + AESGCM(KEY).encrypt(NONCE, data, AAD)
    aad = AAD
    at = {"nonce": 5, "ciphertext": 12 + 50, "tag": len(sealed) - 1}.get(where)
    if where == "aad":
        aad = AAD[:3] + bytes([AAD[3] ^ 1 << bit]) + AAD[4:]
    else:
        sealed = sealed[:at] + bytes([sealed[at] ^ 1 << bit]) + sealed[at + 1:]
    capsys.readouterr()
    assert gcm(tmp_path, "decrypt", sealed, aad=aad) == (1, None)
    err = capsys.readouterr().err
    assert err.startswith("aes-fpga decrypt: error: authentication failed")
    assert "nothing was written" in err
    assert _left(tmp_path) == ["aad", "decrypt.in"]       # no OUT, no temporary file


def test_a_wrong_key_or_missing_aad_fails(tmp_path, capsys):
    sealed = NONCE + AESGCM(KEY).encrypt(NONCE, b"secret", AAD)
    assert gcm(tmp_path, "decrypt", sealed, aad=None) == (1, None)
    assert "authentication failed" in capsys.readouterr().err
    (tmp_path / "in").write_bytes(sealed)
    (tmp_path / "aad").write_bytes(AAD)
    rc = main(["decrypt", "--port", "model", "--mode", "gcm", "--key", bytes(32).hex(),
               "--aad-file", str(tmp_path / "aad"), str(tmp_path / "in"),
               str(tmp_path / "out")])
    assert rc == 1 and not (tmp_path / "out").exists()


def test_an_existing_output_is_left_as_it_was(tmp_path):
    (tmp_path / "out").write_bytes(b"earlier")
    sealed = NONCE + AESGCM(KEY).encrypt(NONCE, b"x" * 40, AAD)
    tampered = sealed[:-1] + bytes([sealed[-1] ^ 1])
    assert gcm(tmp_path, "decrypt", tampered) == (1, b"earlier")
    assert gcm(tmp_path, "decrypt", sealed) == (0, b"x" * 40)


def test_any_other_failure_leaves_no_output(tmp_path, capsys, monkeypatch):
    from aes_fpga.appliance.client import Device, ModelLink
    from aes_fpga.appliance.messages import DeviceInfo
    from aes_fpga.commands import device

    # A device without GCM (as the gateware is today): refused by the host driver.
    monkeypatch.setattr(device, "open_device", lambda args: Device(ModelLink(DeviceInfo())))
    sealed = NONCE + AESGCM(KEY).encrypt(NONCE, b"x" * 40, AAD)
    assert gcm(tmp_path, "decrypt", sealed) == (1, None)
    assert "does not offer GCM" in capsys.readouterr().err
    assert gcm(tmp_path, "encrypt", b"abc") == (1, None)
    assert _left(tmp_path) == ["aad", "decrypt.in", "encrypt.in"]


@pytest.mark.parametrize("verb", ["encrypt", "decrypt"])
def test_over_the_limit_refused_before_any_work(tmp_path, capsys, no_device, verb):
    big = tmp_path / "big"
    extra = 12 + 16 if verb == "decrypt" else 0
    with open(big, "wb") as f:          # sparse: nothing is written, nothing is read
        f.truncate(GCM_MAX_DATA_BYTES + extra + 1)
    rc = main([verb, "--port", "model", "--mode", "gcm", "--key", KEY.hex(), str(big),
               str(tmp_path / "out")])
    assert rc == 2
    err = capsys.readouterr().err
    assert f"{GCM_MAX_DATA_BYTES + 1} bytes" in err and "over GCM's limit" in err
    assert "SP 800-38D" in err and not (tmp_path / "out").exists()
    assert GCM_MAX_DATA_BYTES == gcm_model.MAX_DATA_BYTES == 2 ** 36 - 32


@pytest.mark.parametrize(("argv", "message"), [
    (["--mode", "ctr", "--iv", "00" * 16, "--aad-file", "f"],
     "aad-file: --aad-file is not used by CTR; CTR takes --iv"),
    (["--mode", "cbc", "--iv", "00" * 16, "--nonce", "00" * 12],
     "nonce: --nonce is not used by CBC; CBC takes --iv and --padding"),
    (["--mode", "gcm", "--iv", "00" * 16],
     "iv: --iv is not used by GCM; GCM takes --aad-file and --nonce"),
    (["--mode", "gcm", "--padding", "none"],
     "padding: --padding is not used by GCM; GCM takes --aad-file and --nonce"),
])
def test_options_gcm_does_not_take_or_only_gcm_takes(tmp_path, capsys, no_device, argv,
                                                     message):
    (tmp_path / "in").write_bytes(bytes(40))
    rc = main(["encrypt", "--port", "model", "--key", KEY.hex(), *argv, str(tmp_path / "in"),
               str(tmp_path / "out")])
    assert rc == 2
    assert capsys.readouterr().err == f"aes-fpga encrypt: error: {message}\n"


def test_decrypt_refuses_a_nonce_and_a_short_file(tmp_path, capsys, no_device):
    assert gcm(tmp_path, "decrypt", bytes(40), "--nonce", NONCE.hex()) == (2, None)
    assert "--nonce is for encryption only" in capsys.readouterr().err
    assert gcm(tmp_path, "decrypt", bytes(27)) == (2, None)
    assert "not a GCM file: its 27 bytes" in capsys.readouterr().err
    with pytest.raises(SystemExit, match="2"):
        gcm(tmp_path, "encrypt", bytes(4), "--nonce", "00" * 16)
    assert "nonce: 16 bytes; allowed 12 bytes" in capsys.readouterr().err


def test_help_warns_about_nonce_reuse(capsys):
    with pytest.raises(SystemExit):
        main(["encrypt", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "WARNING: never encrypt two messages with the same key and nonce" in text
    assert "gcm: --aad-file (additional authenticated data, optional), --nonce (encryption " \
           "only, random by default)" in text
    assert crypt_command.MODE_OPTIONS["gcm"] == ("aad_file", "nonce")


def test_info_reports_gcm_and_its_failure_count(capsys):
    import json

    assert main(["info", "--port", "model", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["modes"] == ["ECB", "CBC", "CTR", "GCM"]
    assert report["protocol_version"] == 6 and report["auth_failures"] == 0
