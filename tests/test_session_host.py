"""The host driver with a device key (aes_fpga.appliance.session_host): Device (serial framing)
and UdpDevice (datagrams, lossy too) against the reference device with a secret, and the
command line's --device-key-file, its environment variable and --port model+secure."""

import os
import random

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from udp_links import LossyLink, ModelDatagramLink, reference

from aes_fpga.appliance import udp_client
from aes_fpga.appliance.client import Device, ModelLink
from aes_fpga.appliance.errors import EntropyFailed, UnknownSession
from aes_fpga.appliance.messages import DeviceInfo
from aes_fpga.appliance.reference import DeviceModel
from aes_fpga.appliance.session_host import (
    HostSession,
    NotSecured,
    WrongDeviceKey,
    read_device_key,
)
from aes_fpga.appliance.spec import Mode, Op
from aes_fpga.appliance.udp_client import UdpDevice
from aes_fpga.cli import main

SECRET = bytes(range(32, 64))
KEY = bytes(range(16))
INFO = DeviceInfo(modes=tuple(Mode), window=4, key_slots=2)


def serial(secret=SECRET, key=SECRET, **options):
    return Device(ModelLink(INFO, device_secret=secret, **options), device_key=key, timeout=1)


class VirtualClock:
    """Stands for :mod:`time` in the UDP driver: time passes only while the driver waits
    for a datagram that does not come, so its retransmissions (and with them the lossy link's
    draws) are the same on a loaded machine as on an idle one."""

    def __init__(self, link):
        self.link, self.now = link, 0.0
        self.name, self.datagrams = link.name, True

    def monotonic(self):
        return self.now

    def send(self, datagram):
        self.link.send(datagram)

    def recv(self, timeout):
        got = self.link.recv(timeout)
        if got is None:
            self.now += max(timeout, 1e-3)
        return got

    def close(self):
        self.link.close()


def udp(secret=SECRET, key=SECRET, lossy=None, seed=5, monkeypatch=None):
    link = ModelDatagramLink(window=4)
    link.device = DeviceModel(link.device.info, device_secret=secret)
    outer = link if lossy is None else LossyLink(link, lossy, seed=seed)
    if monkeypatch is not None:
        outer = VirtualClock(outer)
        monkeypatch.setattr(udp_client, "time", outer)
    return UdpDevice(outer, timeout=0.05, retries=30, device_key=key), link


def use(dev, seed=None):
    """Load a key, CTR and GCM through the session; checked against cryptography. ``seed``
    makes the data reproducible."""
    rng = random.Random(seed)
    data = rng.randbytes(3000)
    dev.load_key(0, KEY)
    iv = rng.randbytes(16)
    assert dev.process(0, Op.ENCRYPT, Mode.CTR, data, iv=iv) == \
        reference(Mode.CTR, Op.ENCRYPT, KEY, iv, data)
    nonce = rng.randbytes(12)
    ct, tag = dev.gcm_encrypt(0, nonce, b"aad", data)
    assert ct + tag == AESGCM(KEY).encrypt(nonce, data, b"aad")
    assert dev.gcm_decrypt(0, nonce, b"aad", ct, tag) == data


def test_serial_device_opens_one_session_and_keeps_it():
    dev = serial()
    assert dev.info().sessions
    assert dev.session.opened == 0          # INFO needs none
    use(dev)
    assert dev.session.opened == 1
    assert dev.link.device.sessions.failures == 0


def lossy_session(monkeypatch, seed):
    dev, link = udp(lossy=0.1, seed=seed, monkeypatch=monkeypatch)
    use(dev, seed)
    events = dev.link.link.events
    assert dev.session.opened == 1 and sum(events.values()) > 0
    # Retransmitted records were answered from the kept replies; a record is counted as a
    # failure only when the link held it back until its counter had left the window (a GCM
    # message sent again whole leaves its first sending's records behind), as a replay is.
    assert link.device.sessions.failures <= events["reordered"]
    return dev


@pytest.mark.parametrize("seed", [1, 42])
def test_udp_device_in_a_session_over_a_lossy_link(monkeypatch, seed):
    # Seed 1: a full window of records answered with its oldest reply last once made the
    # driver return before it had sent the rest (a GCM message without its tag chunk).
    # Seed 42: a duplicated OPEN_SESSION once replaced the handshake the host went on with.
    assert lossy_session(monkeypatch, seed).retransmissions > 0


@pytest.mark.slow
def test_udp_device_in_a_session_over_many_lossy_links(monkeypatch):
    for seed in range(100):
        lossy_session(monkeypatch, seed)


def test_chunks_fit_a_record():
    info = DeviceInfo()
    assert HostSession.max_chunk(info) == 1408
    assert HostSession.max_chunk(info) + 20 + 29 <= info.max_payload


def test_wrong_device_key_no_secret_and_entropy_failure_are_named():
    with pytest.raises(WrongDeviceKey, match="wrong device key"):
        serial(key=bytes(32)).load_key(0, KEY)
    dev = Device(ModelLink(INFO), device_key=SECRET)
    with pytest.raises(NotSecured, match="no secret"):
        dev.load_key(0, KEY)
    assert not dev.link.device.key_loaded(0)
    with pytest.raises(EntropyFailed, match="ENTROPY_FAILED"):
        serial(challenge_source=lambda: None).load_key(0, KEY)


def test_a_lost_session_is_reported_and_the_next_request_opens_another():
    for dev, link in ((serial(), None), udp()):
        link = link or dev.link
        dev.load_key(0, KEY)
        link.device = DeviceModel(link.device.info, device_secret=SECRET)   # restart
        with pytest.raises(UnknownSession, match="session lost"):
            dev.load_key(0, KEY)
        dev.load_key(0, KEY)
        assert dev.session.opened == 2 and link.device.key_loaded(0)


def test_device_key_files(tmp_path):
    raw, text, bad = tmp_path / "raw", tmp_path / "hex", tmp_path / "bad"
    raw.write_bytes(SECRET)
    text.write_text(SECRET.hex() + "\n")
    bad.write_bytes(b"x" * 31)
    assert read_device_key(raw) == read_device_key(text) == SECRET
    with pytest.raises(ValueError, match="32 bytes") as e:
        read_device_key(bad)
    assert "xxx" not in str(e.value)


def test_cli_info_and_encrypt_on_the_secured_model(tmp_path, capsys, monkeypatch):
    key_file = tmp_path / "device.key"
    key_file.write_bytes(SECRET)
    key_file.chmod(0o600)
    assert main(["info", "--port", "model+secure", "--device-key-file", str(key_file)]) == 0
    out = capsys.readouterr().out
    assert "session           required" in out and "session_failures  0" in out
    assert main(["info", "--port", "model"]) == 0
    assert "not required" in capsys.readouterr().out
    assert main(["info", "--port", "model+secure"]) == 1
    assert "needs a device key" in capsys.readouterr().err
    monkeypatch.setenv("AES_FPGA_DEVICE_KEY_FILE", str(key_file))
    plain, out_file = tmp_path / "plain", tmp_path / "out"
    data = os.urandom(100)
    plain.write_bytes(data)
    assert main(["encrypt", "--port", "model+secure", "--key", KEY.hex(), "--mode", "ctr",
                 "--iv", bytes(16).hex(), str(plain), str(out_file)]) == 0
    assert out_file.read_bytes() == reference(Mode.CTR, Op.ENCRYPT, KEY, bytes(16), data)
    # With a key, an open device is refused (nothing goes out in the clear).
    assert main(["encrypt", "--port", "model", "--key", KEY.hex(), "--mode", "ctr",
                 "--iv", bytes(16).hex(), str(plain), str(tmp_path / "o2")]) == 1
    assert "no secret" in capsys.readouterr().err


@pytest.mark.parametrize("mode, what", [(0o640, "read"), (0o604, "read"), (0o620, "write")])
def test_a_key_file_others_may_use_is_refused_by_host_commands(tmp_path, capsys, monkeypatch,
                                                               mode, what):
    """The host commands refuse a device key file as the build does (and OpenSSH a private
    key): no session is opened, the message names the file and its mode, never the key."""
    key_file = tmp_path / "device.key"
    key_file.write_text(SECRET.hex() + "\n")
    key_file.chmod(mode)
    for how in ("option", "environment"):
        argv = ["info", "--port", "model+secure"]
        if how == "option":
            argv += ["--device-key-file", str(key_file)]
        else:
            monkeypatch.setenv("AES_FPGA_DEVICE_KEY_FILE", str(key_file))
        assert main(argv) == 1
        out, err = capsys.readouterr()
        assert out == ""
        assert f"device key file {key_file}: mode {mode:04o} lets others {what} it" in err
        assert f"chmod 600 {key_file}" in err
        assert SECRET.hex() not in err and SECRET.hex()[:8] not in err
    key_file.chmod(0o600)
    assert main(["info", "--port", "model+secure"]) == 0


def test_an_expired_session_is_reported_and_replaced():
    from aes_fpga.appliance.errors import SessionExpired
    dev = serial(max_records=2)
    dev.load_key(0, KEY)
    dev.stats()
    with pytest.raises(SessionExpired):
        dev.stats()
    dev.stats()
    assert dev.session.opened == 2
