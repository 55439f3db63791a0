"""Host driver and CLI through the reference device (--port model): files against
cryptography, padding, errors, timeouts."""

import io
import re
import time

import pytest
from cli_files import IV, KEY, crypt, no_device, pkcs7, reference

from aes_fpga import appliance
from aes_fpga import modes as hw_modes
from aes_fpga.appliance.client import Device, DeviceTimeout, ModelLink, Progress
from aes_fpga.cli import main
from aes_fpga.cores import interface


@pytest.mark.parametrize("mode", ["ecb", "cbc", "ctr"])
@pytest.mark.parametrize("size", [1, 15, 16, 17, 1000, 5000])
def test_files_match_cryptography(tmp_path, mode, size):
    data = bytes((i * 7 + size) & 0xFF for i in range(size))
    rc, ct = crypt(tmp_path, "encrypt", mode, data)
    assert rc == 0
    expected = reference(mode, data if mode == "ctr" else pkcs7(data))
    assert ct == expected
    rc, pt = crypt(tmp_path, "decrypt", mode, ct)
    assert rc == 0 and pt == data


def test_whole_blocks_without_padding(tmp_path):
    data = bytes(range(64))
    rc, ct = crypt(tmp_path, "encrypt", "cbc", data, "--padding", "none")
    assert rc == 0 and ct == reference("cbc", data)
    rc, _ = crypt(tmp_path, "encrypt", "cbc", data[:40], "--padding", "none")
    assert rc == 2


def test_errors_are_clear(tmp_path, capsys):
    src = tmp_path / "in"
    src.write_bytes(b"x")
    assert main(["encrypt", "--port", "model", "--key", KEY.hex(), "--iv", IV.hex(),
                 str(tmp_path / "missing"), str(tmp_path / "o")]) == 2
    assert "IN: cannot read" in capsys.readouterr().err
    assert main(["encrypt", "--port", "model", "--key", KEY.hex(), str(src),
                 str(tmp_path / "o")]) == 2
    assert "iv: --iv is required for CTR" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["encrypt", "--port", "model", "--key", "abcd", str(src), str(tmp_path / "o")])
    assert "key: 2 bytes; allowed 16 or 24 or 32 bytes" in capsys.readouterr().err
    # a protocol error returned by the device: the reference device has 4 slots
    assert main(["encrypt", "--port", "model", "--key-slot", "9", "--key", KEY.hex(), "--iv",
                 IV.hex(), str(src), str(tmp_path / "o")]) == 1
    assert "BAD_SLOT" in capsys.readouterr().err
    # wrong key on decryption: the padding check says so instead of writing garbage
    rc, ct = crypt(tmp_path, "encrypt", "cbc", b"secret")
    bad = tmp_path / "ct"
    bad.write_bytes(ct)
    assert main(["decrypt", "--port", "model", "--key", bytes(32).hex(), "--mode", "cbc",
                 "--iv", IV.hex(), str(bad), str(tmp_path / "pt")]) == 1
    assert "PKCS#7" in capsys.readouterr().err


class SilentLink(ModelLink):
    name = "a link that never answers"

    def write(self, data):
        pass


def test_timeout_names_the_link():
    with pytest.raises(DeviceTimeout, match="no reply to INFO from a link that never answers"):
        Device(SilentLink(), timeout=0.2).info()


class CountingLink(ModelLink):
    """The reference device, counting the requests the host has sent but not yet read."""
    name = "counting link"

    def __init__(self, info):
        super().__init__(info)
        self.unanswered = self.most_unanswered = 0

    def write(self, data):
        super().write(data)
        self.unanswered += 1
        self.most_unanswered = max(self.most_unanswered, self.unanswered)

    def read_until(self, delimiter=b"\0", timeout=1.0):
        data = super().read_until(delimiter, timeout)
        self.unanswered -= data.count(delimiter)
        return data


@pytest.mark.parametrize("window", [1, 3])
def test_chunks_are_pipelined_up_to_the_window(window):
    data = bytes(range(256)) * 40           # 10 KiB: 10 chunks of 1024 bytes
    link = CountingLink(appliance.DeviceInfo(window=window))
    with Device(link) as dev:
        dev.load_key(0, KEY)
        out = dev.process(0, appliance.Op.ENCRYPT, appliance.Mode.CTR, data, iv=IV)
    assert out == reference("ctr", data)
    assert link.most_unanswered == window


def test_error_in_a_pipeline_leaves_the_device_usable():
    link = CountingLink(appliance.DeviceInfo(window=4))
    with Device(link) as dev:
        with pytest.raises(appliance.KeyNotLoaded, match="KEY_NOT_LOADED"):
            dev.process(1, appliance.Op.ENCRYPT, appliance.Mode.CTR, bytes(5000), iv=IV)
        # replies still due are skipped by the next request
        assert dev.request(appliance.Command.INFO)[1:5] == appliance.MAGIC
        assert dev.pipeline(appliance.Command.INFO, [b""] * 6) == [
            appliance.build_info_reply(link.device.info)] * 6


def test_device_selftest_and_info(capsys):
    assert main(["selftest", "--port", "model"]) == 0
    assert capsys.readouterr().out.count("pass") == 3
    assert main(["info", "--port", "model", "--json"]) == 0
    out = capsys.readouterr().out
    assert '"key_slots": 4' in out and '"window": 1' in out


def test_device_selftest_checks_the_standard_answers(monkeypatch):
    """Device.selftest compares with FIPS-197's answers, not with the host's model: a device
    whose cipher is wrong (here the reference device with one bit of every encryption
    flipped) fails every key size."""
    from types import SimpleNamespace

    from aes_fpga import model
    from aes_fpga.appliance import reference

    with Device(ModelLink()) as dev:
        assert dev.selftest() == [(128, True), (192, True), (256, True)]
    def encrypt_wrong(key, block):
        out = model.encrypt_block(key, block)
        return out[:-1] + bytes([out[-1] ^ 1])

    monkeypatch.setattr(reference, "model", SimpleNamespace(encrypt_block=encrypt_wrong,
                                                            decrypt_block=model.decrypt_block))
    with Device(ModelLink()) as dev:
        assert dev.selftest() == [(128, False), (192, False), (256, False)]


def test_sim_port_without_engine_or_with(tmp_path, capsys):
    """--port sim runs the gateware when the library has the protocol engine; otherwise it
    says what is missing instead of failing obscurely."""
    src = tmp_path / "in"
    src.write_bytes(b"abc")
    rc = main(["encrypt", "--key", KEY.hex(), "--iv", IV.hex(), str(src), str(tmp_path / "o")])
    try:
        import aes_fpga.appliance.gateware.engine  # noqa: F401
    except ImportError:
        assert rc == 1
        assert "gateware protocol engine" in capsys.readouterr().err
    else:
        assert rc == 0 and (tmp_path / "o").read_bytes() == reference("ctr", b"abc")


def test_protocol_and_gateware_enums_agree():
    """The wire codes of appliance.py are the values the gateware uses."""
    assert {m.name: m.value for m in appliance.Mode} == {m.name: m.value for m in hw_modes.Mode}
    assert {m.name: m.value for m in appliance.Op} == {m.name: m.value for m in interface.Op}


def serve_model(info):
    """A reference device behind a TCP socket (what pyserial's ``socket://`` URL talks to, as
    a serial-over-network bridge would): returns (port, thread)."""
    import socket
    import threading

    server = socket.create_server(("127.0.0.1", 0))
    model = appliance.DeviceModel(info)

    def run():
        conn, _ = server.accept()
        with conn, server:
            while data := conn.recv(65536):
                conn.sendall(model.feed(data))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return server.getsockname()[1], thread


def test_serial_link_end_to_end_with_rtscts(tmp_path, monkeypatch):
    """The serial-port link (pyserial) with --rtscts: the port is opened with flow control,
    and a file goes through a device on the other end of the line."""
    import serial

    opened = []
    real = serial.serial_for_url

    def recording(url, *args, **kwargs):
        opened.append((url, kwargs))
        return real(url, *args, **kwargs)

    monkeypatch.setattr(serial, "serial_for_url", recording)
    port, thread = serve_model(appliance.DeviceInfo(window=3))
    url = f"socket://127.0.0.1:{port}"
    data = bytes(range(256)) * 40           # 10 KiB: ten chunks, three in flight
    src, dst = tmp_path / "in", tmp_path / "out"
    src.write_bytes(data)
    assert main(["encrypt", "--port", url, "--rtscts", "--key", KEY.hex(), "--mode", "ctr",
                 "--iv", IV.hex(), str(src), str(dst)]) == 0
    thread.join(timeout=10)
    assert dst.read_bytes() == reference("ctr", data)
    assert [(u, k["rtscts"]) for u, k in opened] == [(url, True)]


def test_serial_port_that_cannot_open_is_named(tmp_path, capsys):
    src = tmp_path / "in"
    src.write_bytes(b"x")
    rc = main(["encrypt", "--port", str(tmp_path / "ttyNONE"), "--key", KEY.hex(), "--iv",
               IV.hex(), str(src), str(tmp_path / "o")])
    assert rc != 0
    assert f"cannot open serial port {tmp_path / 'ttyNONE'}" in capsys.readouterr().err


@pytest.mark.parametrize("mode", ["ecb", "cbc", "ctr"])
def test_empty_input_is_refused_for_decryption(tmp_path, monkeypatch, capsys, mode):
    no_device(monkeypatch)
    rc, out = crypt(tmp_path, "decrypt", mode, b"")
    assert (rc, out) == (2, None)
    err = capsys.readouterr().err
    assert f"error: IN: {tmp_path / 'decrypt.in'} is empty" in err and "PKCS#7" not in err


@pytest.mark.parametrize("mode", ["ecb", "cbc"])
def test_empty_input_padded_to_one_block(tmp_path, mode):
    rc, ct = crypt(tmp_path, "encrypt", mode, b"")
    assert rc == 0 and ct == reference(mode, pkcs7(b"")) and len(ct) == 16
    assert crypt(tmp_path, "decrypt", mode, ct) == (0, b"")


@pytest.mark.parametrize(("mode", "extra"), [("ctr", ()), ("ecb", ("--padding", "none"))])
def test_empty_input_with_nothing_to_encrypt(tmp_path, monkeypatch, capsys, mode, extra):
    """No padding: an empty IN has nothing to encrypt; refused (decryption would refuse the
    empty OUT it gives) without opening the device."""
    no_device(monkeypatch)
    assert crypt(tmp_path, "encrypt", mode, b"", *extra) == (2, None)
    assert "is empty: there is nothing to encrypt" in capsys.readouterr().err


def test_progress_summary_when_stderr_is_not_a_terminal(tmp_path, capsys):
    rc, _ = crypt(tmp_path, "encrypt", "ctr", bytes(5000))
    assert rc == 0
    err = capsys.readouterr().err
    assert "\r" not in err
    assert re.fullmatch(r"encrypt CTR: 4\.9 KiB in [\d.]+ m?s \([\d.]+ [KMG]iB/s\)\n", err), err


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_bar_on_a_terminal():
    stream = Terminal()
    bar = Progress(3 << 20, "decrypt CBC", stream=stream)
    for _ in range(3):
        time.sleep(0.15)            # tqdm redraws at most every 0.1 s
        bar.update(1 << 20)
    bar.close()
    text = stream.getvalue()
    # Binary units, as in the summary line.
    assert "\rdecrypt CBC:   0%|" in text and "| 0 B/3.0 MiB [00:00<?, ?]" in text
    assert re.search(r"\rdecrypt CBC:  67%\|.*\| 2\.0 MiB/3\.0 MiB \[[\d:]+<[\d:]+, "
                     r"[\d.]+ [KMG]iB/s\]", text), text
    assert re.search(r"\rdecrypt CBC: 3\.0 MiB in [\d.]+ m?s \([\d.]+ [KMGT]iB/s\)\n$", text)


def test_progress_small_message_not_on_a_terminal():
    stream = io.StringIO()
    bar = Progress(16, "encrypt ECB", stream=stream)
    bar.update(16)
    bar.close()
    assert re.fullmatch(r"encrypt ECB: 16 B in [\d.]+ m?s \([\d.]+ [KMG]?i?B/s\)\n",
                        stream.getvalue())
