"""The host driver with a device key (aes_fpga.appliance.session_host): Device (serial framing)
and UdpDevice (datagrams, lossy too) against the reference device with a secret, and the
command line's --device-key-file, its environment variable and --port model+secure."""

import os

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from udp_links import LossyLink, ModelDatagramLink, reference

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


def udp(secret=SECRET, key=SECRET, lossy=None):
    link = ModelDatagramLink(window=4)
    link.device = DeviceModel(link.device.info, device_secret=secret)
    outer = link if lossy is None else LossyLink(link, lossy, seed=5)
    return UdpDevice(outer, timeout=0.05, retries=30, device_key=key), link


def use(dev):
    """Load a key, CTR and GCM through the session; checked against cryptography."""
    data = os.urandom(3000)
    dev.load_key(0, KEY)
    iv = os.urandom(16)
    assert dev.process(0, Op.ENCRYPT, Mode.CTR, data, iv=iv) == \
        reference(Mode.CTR, Op.ENCRYPT, KEY, iv, data)
    nonce = os.urandom(12)
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


def test_udp_device_in_a_session_over_a_lossy_link():
    dev, link = udp(lossy=0.1)
    use(dev)
    assert dev.session.opened == 1 and dev.retransmissions > 0
    # Retransmitted records were answered from the kept replies, none counted as a failure.
    assert link.device.sessions.failures == 0


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


def test_an_expired_session_is_reported_and_replaced():
    from aes_fpga.appliance.errors import SessionExpired
    dev = serial(max_records=2)
    dev.load_key(0, KEY)
    dev.stats()
    with pytest.raises(SessionExpired):
        dev.stats()
    dev.stats()
    assert dev.session.opened == 2
