"""The NIST CAVP GCM vectors (``gcmEncryptExtIV*.rsp``, ``gcmDecrypt*.rsp`` from PyPI
``cryptography-vectors``), every one with a 96-bit IV and all three key sizes, through the
golden model :mod:`aes_fpga.gcm_model` and through the reference device, ``PROCESS`` chunk by
chunk; the decrypt files' FAIL cases refused (``AUTH_FAILED``), tags shorter than the
protocol's 12 bytes refused (``BAD_LENGTH``).

The default run takes a deterministic sample (every 19th vector of each file); ``-m slow``
takes them all."""

import functools

import cryptography_vectors
import pytest
from gcm_cases import Session

from aes_fpga import gcm_model
from aes_fpga.appliance.errors import DeviceError
from aes_fpga.appliance.gcm import build_gcm_requests
from aes_fpga.appliance.spec import FLAG_FIRST, FLAG_LAST, Mode, Op, Status, gcm_pre_counter

SAMPLE = 19
FILES = [f"gcm{kind}{bits}.rsp" for kind in ("EncryptExtIV", "Decrypt")
         for bits in (128, 192, 256)]


@functools.cache
def vectors(name):
    """The vectors of one ``.rsp`` file with a 96-bit IV: dicts of the section's lengths
    (``Keylen``, ``IVlen``, ``PTlen``, ``AADlen``, ``Taglen``, in bits) and the record's
    fields as bytes (``Key``, ``IV``, ``PT``, ``CT``, ``AAD``, ``Tag``; no ``PT`` when
    ``FAIL``)."""
    with cryptography_vectors.open_vector_file(f"ciphers/AES/GCM/{name}", "r") as f:
        lines = f.read().splitlines()
    found, section, record = [], {}, None
    for line in (raw.strip() for raw in lines):
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            key, _, value = line[1:-1].partition("=")
            section[key.strip()] = int(value)
        elif line == "FAIL":
            record["FAIL"] = True
        else:
            key, _, value = (part.strip() for part in line.partition("="))
            if key == "Count":
                record = {**section, "FAIL": False, "Count": int(value)}
                found.append(record)
            else:
                record[key] = bytes.fromhex(value)
    return [v for v in found if v["IVlen"] == 96]


def _tag_bytes(v):
    return v["Taglen"] // 8


def check_model(v, encrypt):
    if encrypt:
        ct, tag = gcm_model.encrypt(v["Key"], v["IV"], v["AAD"], v["PT"])
        assert ct == v["CT"] and tag[:_tag_bytes(v)] == v["Tag"]
    elif _tag_bytes(v) < gcm_model.MIN_TAG_BYTES:
        with pytest.raises(ValueError, match="tag"):
            gcm_model.decrypt(v["Key"], v["IV"], v["AAD"], v["CT"], v["Tag"])
    elif v["FAIL"]:
        with pytest.raises(gcm_model.AuthenticationError):
            gcm_model.decrypt(v["Key"], v["IV"], v["AAD"], v["CT"], v["Tag"])
    else:
        assert gcm_model.decrypt(v["Key"], v["IV"], v["AAD"], v["CT"], v["Tag"]) == v["PT"]


def check_device(v, encrypt, chunk):
    session = Session()
    session.load(0, v["Key"])
    if encrypt:
        out = session.run(build_gcm_requests(0, Op.ENCRYPT, v["IV"], v["AAD"], v["PT"],
                                             chunk_size=chunk), 1)
        assert out[:-16] == v["CT"] and out[-16:][:_tag_bytes(v)] == v["Tag"]
        return
    if _tag_bytes(v) < gcm_model.MIN_TAG_BYTES:
        # The host builder refuses such a tag; the device too, sent by hand.
        payloads = build_gcm_requests(0, Op.DECRYPT, v["IV"], v["AAD"], v["CT"],
                                      tag=bytes(12), chunk_size=chunk)
        session.run(payloads[:-1], 1)
        flags, iv = (FLAG_LAST, b"") if len(payloads) > 1 else (FLAG_FIRST | FLAG_LAST,
                                                                   gcm_pre_counter(v["IV"]))
        last = bytes([0, Op.DECRYPT, Mode.GCM, flags]) + iv + v["Tag"]
        assert session.send(len(payloads), last) == bytes([Status.BAD_LENGTH])
        return
    payloads = build_gcm_requests(0, Op.DECRYPT, v["IV"], v["AAD"], v["CT"], tag=v["Tag"],
                                  chunk_size=chunk)
    if v["FAIL"]:
        with pytest.raises(DeviceError) as e:
            session.run(payloads, 1)
        assert e.value.status == Status.AUTH_FAILED
    else:
        assert session.run(payloads, 1) == v["PT"]


def _check(name, step):
    for n in range(0, len(vectors(name)), step):
        v = vectors(name)[n]
        encrypt = "Encrypt" in name
        try:
            check_model(v, encrypt)
            check_device(v, encrypt, 16 if n % 2 else 1440)
        except (AssertionError, pytest.fail.Exception) as e:
            e.add_note(f"{name}: vector {n} (Count = {v['Count']})")
            raise


@pytest.mark.parametrize("name", FILES)
def test_sample_of_the_vectors(name):
    _check(name, SAMPLE)


@pytest.mark.slow
@pytest.mark.parametrize("name", FILES)
def test_every_vector(name):
    _check(name, 1)


def test_the_files_hold_what_is_expected():
    for name in FILES:
        found = vectors(name)
        assert len(found) == 2625, name
        assert {v["Keylen"] for v in found} == {int(name[-7:-4])}
        fails = sum(v["FAIL"] for v in found)
        assert (fails > 1000) == ("Decrypt" in name), (name, fails)
