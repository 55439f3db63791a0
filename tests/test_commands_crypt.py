"""``aes-fpga encrypt`` / ``decrypt`` refusing what cannot work before any device work: options
the mode does not use, an IN that cannot be read, an OUT that cannot be written, a ciphertext
of the wrong length; and the binary units of its progress."""

import io
import os
from pathlib import Path

import cli_files
import pytest
from cli_files import IV, KEY, crypt, reference
from unprivileged import run_cli

from aes_fpga.cli import main
from aes_fpga.commands import crypt as crypt_command
from aes_fpga.ticker import byte_bar, format_bytes


@pytest.fixture
def no_device(monkeypatch):
    """Any attempt to open the device fails the test."""
    cli_files.no_device(monkeypatch)


def run(tmp_path, *argv, data=bytes(100), verb="encrypt", out=None):
    src = tmp_path / "in"
    if data is not None:
        src.write_bytes(data)
    out = tmp_path / "out" if out is None else out
    return main([verb, "--port", "model", "--key", KEY.hex(), *argv, str(src), str(out)])


@pytest.mark.parametrize(("argv", "message"), [
    (["--mode", "ecb", "--iv", IV.hex()], "iv: --iv is not used by ECB; ECB takes --padding"),
    (["--mode", "ctr", "--iv", IV.hex(), "--padding", "none"],
     "padding: --padding is not used by CTR; CTR takes --iv"),
    (["--iv", IV.hex(), "--padding", "pkcs7"], "padding: --padding is not used by CTR; CTR "
                                               "takes --iv"),
])
@pytest.mark.parametrize("verb", ["encrypt", "decrypt"])
def test_options_a_mode_does_not_use_are_refused(tmp_path, capsys, no_device, argv, message,
                                                 verb):
    assert run(tmp_path, *argv, verb=verb) == 2
    assert capsys.readouterr().err == f"aes-fpga {verb}: error: {message}\n"
    assert not (tmp_path / "out").exists()


def test_help_says_which_options_each_mode_takes(capsys):
    with pytest.raises(SystemExit):
        main(["encrypt", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert ("ecb: --padding (pkcs7, the default, or none); cbc: --iv (the IV, required), "
            "--padding (pkcs7, the default, or none); ctr: --iv (the initial counter block, "
            "required)") in text
    assert crypt_command.MODE_OPTIONS == {"ecb": ("padding",), "cbc": ("iv", "padding"),
                                          "ctr": ("iv",), "gcm": ("aad_file", "nonce")}


def test_the_options_each_mode_takes_work(tmp_path):
    data = bytes(range(48))
    assert crypt(tmp_path, "encrypt", "ecb", data, "--padding", "none") == \
        (0, reference("ecb", data))
    assert crypt(tmp_path, "encrypt", "cbc", data, "--padding", "none") == \
        (0, reference("cbc", data))
    assert crypt(tmp_path, "encrypt", "ctr", data) == (0, reference("ctr", data))


@pytest.mark.parametrize(("where", "why"), [
    ("missing", "No such file or directory"),
    ("folder", "Is a directory"),
])
def test_input_that_cannot_be_read(tmp_path, capsys, no_device, where, why):
    (tmp_path / "folder").mkdir()
    src = tmp_path / where
    assert main(["encrypt", "--port", "model", "--key", KEY.hex(), "--iv", IV.hex(), str(src),
                 str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err == (f"aes-fpga encrypt: error: IN: cannot read {src}: "
                                       f"{why}\n")
    assert not (tmp_path / "out").exists()


def test_input_without_read_permission(tmp_path):
    src, out = tmp_path / "in", tmp_path / "out"
    src.write_bytes(bytes(16))
    src.chmod(0o200)
    rc, err = run_cli(["encrypt", "--port", "model", "--key", KEY.hex(), "--iv", IV.hex(),
                       str(src), str(out)])
    assert (rc, err) == (2, f"aes-fpga encrypt: error: IN: cannot read {src}: "
                            f"Permission denied\n")
    assert not out.exists()


def test_output_in_a_folder_without_write_permission(tmp_path):
    src, locked = tmp_path / "in", tmp_path / "locked"
    src.write_bytes(bytes(100))
    locked.mkdir(mode=0o555)
    out = locked / "out"
    rc, err = run_cli(["decrypt", "--port", "model", "--key", KEY.hex(), "--mode", "ctr",
                       "--iv", IV.hex(), str(src), str(out)])
    assert (rc, err) == (2, f"aes-fpga decrypt: error: OUT: cannot write {out}: "
                            f"Permission denied\n")
    assert not any(locked.iterdir())


@pytest.mark.parametrize(("where", "why"), [
    ("no-such-folder/out", "No such file or directory"),
    (".", "Is a directory"),
    ("a-file/out", "Not a directory"),
])
@pytest.mark.parametrize("verb", ["encrypt", "decrypt"])
def test_output_that_cannot_be_written(tmp_path, capsys, no_device, where, why, verb):
    (tmp_path / "a-file").write_bytes(b"")
    (tmp_path / "in").write_bytes(bytes(100))
    before = sorted(tmp_path.rglob("*"))
    out = tmp_path / where
    assert run(tmp_path, "--iv", IV.hex(), verb=verb, out=out, data=None) == 2
    assert capsys.readouterr().err.endswith(f"OUT: cannot write {out}: {why}\n")
    assert sorted(tmp_path.rglob("*")) == before


@pytest.mark.skipif(not os.path.isdir("/sys/kernel"), reason="no sysfs")
def test_output_the_file_system_refuses(tmp_path, capsys, no_device):
    """Found by trying, not by permission bits: sysfs refuses a new file even to root, which
    the bits would allow."""
    out = Path("/sys/kernel/aes-fpga-test.enc")
    assert run(tmp_path, "--iv", IV.hex(), out=out) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"aes-fpga encrypt: error: OUT: cannot write {out}: "), err
    assert not out.exists()


def test_existing_output_is_left_as_it_was_on_refusal(tmp_path, capsys, no_device):
    out = tmp_path / "out"
    out.write_bytes(b"keep me")
    assert run(tmp_path, "--mode", "ecb", "--iv", IV.hex(), out=out) == 2
    assert out.read_bytes() == b"keep me"


@pytest.mark.parametrize("mode", ["ecb", "cbc"])
@pytest.mark.parametrize("padding", [(), ("--padding", "pkcs7"), ("--padding", "none")])
def test_ciphertext_of_the_wrong_length(tmp_path, capsys, no_device, mode, padding):
    """A ciphertext that is not whole blocks is not one of this mode: said so, without the
    hint to use --padding pkcs7 that cannot help."""
    iv = () if mode == "ecb" else ("--iv", IV.hex())
    assert run(tmp_path, "--mode", mode, *iv, *padding, verb="decrypt", data=bytes(37)) == 2
    err = capsys.readouterr().err
    assert err == (f"aes-fpga decrypt: error: IN: {tmp_path / 'in'} is not a {mode.upper()} "
                   f"ciphertext: its 37 bytes are not a whole number of 16-byte blocks\n")
    assert "--padding" not in err


def test_plaintext_of_partial_blocks_without_padding_keeps_its_hint(tmp_path, capsys,
                                                                    no_device):
    assert run(tmp_path, "--mode", "ecb", "--padding", "none", data=bytes(37)) == 2
    assert "use --padding pkcs7" in capsys.readouterr().err


@pytest.mark.parametrize(("n", "text"), [
    (0, "0 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (1536, "1.5 KiB"),
    (3 << 20, "3.0 MiB"), (5 << 30, "5.0 GiB"),
])
def test_binary_units(n, text):
    assert format_bytes(n) == text


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_bar_counts_in_binary_units():
    """The bar says KiB and MiB like the summary line, never tqdm's kB or MB."""
    stream = Terminal()
    bar = byte_bar(5 << 20, "encrypt CTR", stream)
    bar.update(3 << 20)
    fields = bar.format_dict
    assert (fields["n_bytes"], fields["total_bytes"]) == ("3.0 MiB", "5.0 MiB")
    assert fields["rate_bytes"] == "?" or fields["rate_bytes"].endswith("iB/s")
    line = str(bar)
    assert "3.0 MiB/5.0 MiB [" in line and "MB" not in line.replace("MiB", "")
    bar.close()


def test_a_pipe_as_input(tmp_path):
    """A pipe as IN (what a shell's process substitution gives) is not probed by opening it
    first: the data goes through."""
    data = bytes(range(200))
    r_in, w_in = os.pipe()
    os.write(w_in, data)
    os.close(w_in)
    out = tmp_path / "out"
    try:
        assert main(["encrypt", "--port", "model", "--key", KEY.hex(), "--iv", IV.hex(),
                     f"/dev/fd/{r_in}", str(out)]) == 0
    finally:
        os.close(r_in)
    assert out.read_bytes() == reference("ctr", data)
