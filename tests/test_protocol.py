"""Tests for the appliance's wire protocol and its reference device.

COBS and the frame layer are checked against hand-derived encodings and by randomised round trips;
the reference device is checked against OpenSSL (``cryptography``) for every mode, with messages
split into random chunks so that the chaining state has to carry from one chunk to the next.
"""

import dataclasses
import inspect
import random
import zlib

import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from gcm_cases import GCM_REFUSALS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aes_fpga.appliance import messages as message_module
from aes_fpga.appliance import session_spec, spec
from aes_fpga.appliance.cobs import cobs_decode, cobs_encode, cobs_max_encoded_len
from aes_fpga.appliance.errors import (
    BadCrc,
    BadFlags,
    BadKeySize,
    BadLength,
    BadMode,
    BadOp,
    BadReply,
    BadSlot,
    CobsError,
    DeviceError,
    LengthNotMultipleOf16,
    ProtocolError,
    UnknownCommand,
    error_for_status,
)
from aes_fpga.appliance.frame import (
    MAX_ENCODED_FRAME,
    SERIAL_MAX_ENCODED_FRAME,
    Frame,
    FrameDecoder,
    decode_frame,
    encode_frame,
    frame_content,
    max_encoded_frame,
    serial_frame_limit,
)
from aes_fpga.appliance.messages import (
    DeviceInfo,
    LoadKeyRequest,
    ProcessRequest,
    build_info_reply,
    build_load_key_request,
    build_process_reply,
    build_process_request,
    build_process_requests,
    build_status_reply,
    build_zeroize_request,
    parse_info_reply,
    parse_load_key_request,
    parse_process_reply,
    parse_process_request,
    parse_status_reply,
    parse_zeroize_request,
)
from aes_fpga.appliance.reference import DeviceModel
from aes_fpga.appliance.spec import (
    ALL_SLOTS,
    BLOCK_MODES,
    FLAG_AAD,
    FLAG_FIRST,
    FLAG_LAST,
    MAX_FRAME,
    MAX_PAYLOAD,
    MAX_PROCESS_DATA,
    Command,
    KeySize,
    Mode,
    Op,
    Status,
    describe,
    reply_opcode,
)

H = bytes.fromhex

# A few examples are enough per property; derandomize keeps every run identical (and CI stable).
quick = settings(max_examples=40, deadline=None, derandomize=True,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _crc(data):
    return zlib.crc32(data).to_bytes(4, "big")


def _content(command, seq, payload, length=None):
    """Frame content assembled by hand, independently of encode_frame."""
    length = len(payload) if length is None else length
    body = bytes([command]) + seq.to_bytes(2, "big") + length.to_bytes(2, "big") + payload
    return body + _crc(body)


def _wire(raw):
    return cobs_encode(raw) + b"\x00"


def _one_reply(wire):
    frames = FrameDecoder().feed(wire)
    assert len(frames) == 1, wire
    return decode_frame(frames[0])


class Session:
    """A host talking to a DeviceModel; records every reply so tests can inspect them."""

    def __init__(self, device=None):
        self.device = DeviceModel() if device is None else device
        self.seq = 0
        self.wire = []

    def raw(self, command, payload=b""):
        """Send one request, return the reply frame (checked for opcode and seq)."""
        self.seq = (self.seq + 1) % 65536
        wire = self.device.handle(encode_frame(command, self.seq, payload))
        self.wire.append(wire)
        reply = _one_reply(wire)
        assert reply.command == command | 0x80
        assert reply.seq == self.seq
        return reply

    def status(self, command, payload=b""):
        reply = self.raw(command, payload)
        if reply.payload[0] != Status.OK:
            # Error replies carry nothing but the status.
            assert len(reply.payload) == 1
        return Status(reply.payload[0])

    def load(self, slot, key):
        assert self.status(Command.LOAD_KEY, build_load_key_request(slot, key)) == Status.OK

    def process(self, payload):
        return parse_process_reply(self.raw(Command.PROCESS, payload).payload)


def reference(key, op, mode, iv, data):
    """The whole message through OpenSSL."""
    m = {Mode.ECB: lambda: modes.ECB(), Mode.CBC: lambda: modes.CBC(iv),
         Mode.CTR: lambda: modes.CTR(iv)}[mode]()
    cipher = Cipher(algorithms.AES(key), m)
    ctx = cipher.encryptor() if op == Op.ENCRYPT else cipher.decryptor()
    return ctx.update(data) + ctx.finalize()




# --------------------------------------------------------------------------------------------
# COBS
# --------------------------------------------------------------------------------------------

RUN254 = bytes(range(1, 255))

# Encodings derived by hand from the group rules in the module docstring.
COBS_VECTORS = [
    (b"", H("01")),
    (H("00"), H("0101")),
    (H("0000"), H("010101")),
    (H("112200 33"), H("03112202 33")),
    (H("11223344"), H("0511223344")),
    (H("11000000"), H("0211010101")),
    (RUN254, b"\xff" + RUN254),
    (b"\x00" + RUN254, b"\x01\xff" + RUN254),
    (RUN254 + b"\xff", b"\xff" + RUN254 + H("02ff")),
    (RUN254 + b"\x00", b"\xff" + RUN254 + H("0101")),
    (RUN254[2:] + b"\xff\x00\x01", b"\xfe" + RUN254[2:] + H("ff 0201")),
]


@pytest.mark.parametrize(("data", "encoded"), COBS_VECTORS)
def test_cobs_vectors(data, encoded):
    assert cobs_encode(data) == encoded
    assert cobs_decode(encoded) == data


def _runs():
    # Non-zero runs around the 254-byte group limit, alone and next to zeros.
    for n in (0, 1, 253, 254, 255, 256, 507, 508, 509, 1000):
        run = bytes(1 + i % 255 for i in range(n))
        yield run
        yield run + b"\x00"
        yield b"\x00" + run
        yield run + b"\x00" + run
    for n in (1, 2, 3, 254, 255, 256):
        yield bytes(n)


@pytest.mark.parametrize("data", list(_runs()), ids=lambda d: f"len{len(d)}")
def test_cobs_edge_cases(data):
    encoded = cobs_encode(data)
    assert 0 not in encoded
    assert len(encoded) <= cobs_max_encoded_len(len(data))
    assert cobs_decode(encoded) == data


@pytest.mark.parametrize("n", [0, 1, 253, 254, 255, 508, 509, 1053])
def test_cobs_zero_free_data_takes_the_maximum_length(n):
    data = bytes(1 + i % 255 for i in range(n))
    assert len(cobs_encode(data)) == cobs_max_encoded_len(n) == n + max(1, -(-n // 254))


def test_max_encoded_frame():
    assert MAX_PAYLOAD == 4 + 16 + MAX_PROCESS_DATA and MAX_PROCESS_DATA == 1440
    assert MAX_FRAME == 5 + MAX_PAYLOAD + 4
    assert MAX_ENCODED_FRAME == MAX_FRAME + 6
    # The serial appliance: 1 KiB chunks, 1053-byte frames, 1058 encoded.
    assert spec.SERIAL_MAX_PAYLOAD == 4 + 16 + 1024
    assert spec.frame_size(spec.SERIAL_MAX_PAYLOAD) == 1053
    assert SERIAL_MAX_ENCODED_FRAME == max_encoded_frame(spec.SERIAL_MAX_PAYLOAD) == 1058
    # What a serial device takes: 1058 bytes, or its own largest frame when longer.
    assert serial_frame_limit(spec.MIN_MAX_PAYLOAD) == serial_frame_limit(1044) == 1058
    assert serial_frame_limit(MAX_PAYLOAD) == MAX_ENCODED_FRAME


def test_largest_chunk_fills_an_mtu():
    """The largest request is one unfragmented UDP datagram in a 1500-byte MTU, and one more
    block would not be (spec "Transport over UDP")."""
    room = spec.UDP_MTU - spec.UDP_HEADERS
    assert spec.MAX_DATAGRAM == spec.frame_size(MAX_PAYLOAD, crc=False) <= room
    assert spec.MAX_DATAGRAM + spec.BLOCK_SIZE > room
    assert len(frame_content(Command.PROCESS, 1, bytes(MAX_PAYLOAD), crc=False)) == 1465


def test_cobs_decoder_accepts_a_trailing_empty_group():
    # Some encoders close a final 254-byte run with an empty 0x01 group; it adds no zero.
    assert cobs_decode(b"\xff" + RUN254 + b"\x01") == RUN254
    assert cobs_decode(b"\x01\xff" + RUN254 + b"\x01") == b"\x00" + RUN254


@pytest.mark.parametrize(("encoded", "match"), [
    (b"", "empty"),
    (H("00"), "zero byte at offset 0"),
    (H("031100"), "zero byte at offset 2"),
    (H("0211 00 01"), "zero byte at offset 2"),
    (H("051122"), "announces 4 data bytes, only 2 remain"),
    (H("0211 03"), "announces 2 data bytes, only 0 remain"),
    (b"\xff" + RUN254[:-1], "announces 254"),
])
def test_cobs_malformed(encoded, match):
    with pytest.raises(CobsError, match=match) as info:
        cobs_decode(encoded)
    assert isinstance(info.value, ProtocolError)
    assert info.value.status is None


# Data with long zero-free runs as well as dense zeros: plain st.binary rarely reaches 254.
cobs_data = st.one_of(
    st.binary(max_size=1200),
    st.lists(st.one_of(st.just(b"\x00"), st.binary(min_size=250, max_size=520).map(
        lambda b: b.replace(b"\x00", b"\x01"))), max_size=5).map(b"".join),
)


@quick
@given(cobs_data)
def test_cobs_round_trip(data):
    encoded = cobs_encode(data)
    assert 0 not in encoded
    assert len(encoded) <= cobs_max_encoded_len(len(data))
    assert cobs_decode(encoded) == data


@quick
@given(st.binary(max_size=600))
def test_cobs_decode_garbage_returns_or_raises_cobs_error(data):
    try:
        decoded = cobs_decode(data)
    except CobsError:
        return
    # Whatever decodes re-encodes to a decoding of the same content.
    assert cobs_decode(cobs_encode(decoded)) == decoded


# --------------------------------------------------------------------------------------------
# Frame layer
# --------------------------------------------------------------------------------------------

def test_frame_layout():
    wire = encode_frame(Command.PROCESS, 0x1234, H("a1b2c3"))
    assert wire.endswith(b"\x00") and wire.count(0) == 1
    raw = cobs_decode(wire[:-1])
    assert raw == H("04 1234 0003 a1b2c3") + _crc(H("04 1234 0003 a1b2c3"))
    frame = decode_frame(raw)
    assert (frame.command, frame.seq, frame.payload) == (Command.PROCESS, 0x1234, H("a1b2c3"))
    assert frame.request == Command.PROCESS and not frame.is_reply


def test_reply_opcode():
    for command in Command:
        assert reply_opcode(command) == command | 0x80
        frame = decode_frame(_content(reply_opcode(command), 9, b"\x00"))
        assert frame.is_reply and frame.request == command


@quick
@given(st.sampled_from(list(Command)), st.integers(0, 65535), st.binary(max_size=MAX_PAYLOAD))
def test_frame_round_trip(command, seq, payload):
    frames = FrameDecoder().feed(encode_frame(command, seq, payload))
    assert len(frames) == 1
    assert decode_frame(frames[0]) == Frame(command, seq, payload)


def test_encode_frame_limits():
    encode_frame(Command.PROCESS, 65535, bytes(MAX_PAYLOAD))
    with pytest.raises(BadLength, match=r"payload length must be in range 0 \.\. 1460, got 1461"):
        encode_frame(Command.PROCESS, 0, bytes(MAX_PAYLOAD + 1))
    with pytest.raises(ValueError, match=r"seq must be in range 0 \.\. 65535, got 65536"):
        encode_frame(Command.INFO, 65536)
    with pytest.raises(TypeError, match="seq"):
        encode_frame(Command.INFO, True)


@quick
@given(st.binary(max_size=64), st.data())
def test_crc_detects_corruption(payload, data):
    raw = bytearray(_content(Command.PROCESS, 77, payload))
    # CRC-32 has Hamming distance >= 4 at these lengths: every 1..3-bit error is caught, header
    # and CRC bits included.
    bits = data.draw(st.sets(st.integers(0, 8 * len(raw) - 1), min_size=1, max_size=3))
    for bit in bits:
        raw[bit // 8] ^= 1 << bit % 8
    with pytest.raises(BadCrc, match="CRC-32") as info:
        decode_frame(bytes(raw))
    assert info.value.status == Status.BAD_CRC
    assert info.value.seq == int.from_bytes(raw[1:3], "big")


def test_decode_frame_errors():
    with pytest.raises(BadLength, match="at least 9 bytes") as info:
        decode_frame(H("01 0001 0000 0000"))
    assert info.value.seq is None
    with pytest.raises(BadLength, match="length field says 5 payload bytes, the frame has 3") as e:
        decode_frame(_content(Command.INFO, 3, b"abc", length=5))
    assert (e.value.command, e.value.seq) == (Command.INFO, 3)
    with pytest.raises(BadLength, match=r"length must be in range 0 \.\. 1460, got 1461"):
        decode_frame(_content(Command.PROCESS, 3, bytes(MAX_PAYLOAD + 1)))
    for opcode in (0x00, 0x0F, 0x7F):
        with pytest.raises(UnknownCommand, match=f"got {opcode:#04x}") as e:
            decode_frame(_content(opcode, 4, b""))
        assert e.value.status == Status.UNKNOWN_COMMAND and e.value.seq == 4
    # Replies to unknown requests echo their opcode, so any reply opcode decodes.
    for opcode in (0x80, 0x8F, 0xFF):
        frame = decode_frame(_content(opcode, 4, b"\x02"))
        assert frame.is_reply and frame.request is None


# --------------------------------------------------------------------------------------------
# FrameDecoder
# --------------------------------------------------------------------------------------------

frame_contents = st.builds(
    lambda c, s, p: _content(c, s, p),
    st.sampled_from([int(c) for c in Command] + [reply_opcode(c) for c in Command]),
    st.integers(0, 65535), st.binary(max_size=300))

garbage = st.one_of(
    st.binary(min_size=1, max_size=40),
    # long enough to overflow the frame buffer, and free of delimiters so that it does
    st.binary(min_size=MAX_ENCODED_FRAME + 1, max_size=MAX_ENCODED_FRAME + 50).map(
        lambda b: b.replace(b"\x00", b"\x5a")),
    st.sampled_from([b"\x00", b"\x00\x00", H("ff"), H("05 11 22"), H("02 11 00")]),
)


def _is_subsequence(needles, haystack):
    it = iter(haystack)
    return all(any(n == h for h in it) for n in needles)


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(st.one_of(frame_contents.map(lambda r: ("frame", r)),
                          garbage.map(lambda g: ("garbage", g))), max_size=12),
       st.randoms(use_true_random=False))
def test_frame_decoder_recovers_every_frame_among_garbage(items, rng):
    stream = bytearray()
    expected = []
    for kind, data in items:
        if kind == "frame":
            stream += _wire(data)
            expected.append(data)
        else:
            # Garbage is followed by a delimiter, as a receiver resynchronises only there.
            stream += data + b"\x00"
    decoder = FrameDecoder()
    got = []
    pos = 0
    while pos < len(stream):
        step = rng.choice([1, 2, 7, 64, 1500])
        got += decoder.feed(bytes(stream[pos:pos + step]))
        assert decoder.pending <= decoder.max_frame
        pos += step
    assert _is_subsequence(expected, got)
    # Every valid frame passes the frame checks; garbage that happened to decode does not pass
    # the CRC (with overwhelming probability), so the checked frames are exactly the valid ones.
    checked = []
    for raw in got:
        try:
            decode_frame(raw)
        except ProtocolError:
            continue
        checked.append(raw)
    assert checked == expected
    assert decoder.pending == 0


def test_frame_decoder_counts_discarded_frames():
    good = encode_frame(Command.INFO, 1)
    decoder = FrameDecoder()
    stream = (b"\x00\x00" + H("05 1122 00") + b"\xff" * 2000 + b"\x00" + good + H("031100")
              + b"\x00" + good)
    assert decoder.feed(stream) == [cobs_decode(good[:-1])] * 2
    # The two truncated groups and the oversized run; the empty frames are not counted.
    assert decoder.discarded == 3


def test_frame_decoder_max_frame():
    frame = encode_frame(Command.PROCESS, 1, bytes(range(1, 40)))
    n = len(frame) - 1
    assert FrameDecoder(max_frame=n).feed(frame) == [cobs_decode(frame[:-1])]
    short = FrameDecoder(max_frame=n - 1)
    # Split across calls so the overflow is noticed in the middle of a frame.
    assert short.feed(frame[:10]) == [] and short.feed(frame[10:]) == []
    assert short.discarded == 1 and short.pending == 0
    assert short.feed(encode_frame(Command.INFO, 2)) != []
    with pytest.raises(ValueError, match="max_frame"):
        FrameDecoder(max_frame=0)


def test_frame_decoder_byte_by_byte_and_reset():
    frame = encode_frame(Command.ZEROIZE, 300, b"\x01")
    decoder = FrameDecoder()
    out = []
    for b in frame:
        out += decoder.feed(bytes([b]))
    assert [decode_frame(r).seq for r in out] == [300]
    decoder.feed(b"\x11\x22")
    assert decoder.pending == 2
    decoder.reset()
    assert decoder.feed(frame) == out and decoder.discarded == 0


# --------------------------------------------------------------------------------------------
# Payload layouts
# --------------------------------------------------------------------------------------------

def test_info_reply_layout_and_round_trip():
    info = DeviceInfo(core_name="drab-locus", build_id=0xDEADBEEF, key_sizes=(256, 128),
                      key_slots=3, modes=(Mode.CTR, Mode.ECB), max_payload=532, window=4)
    payload = build_info_reply(info)
    assert payload == (H("00") + b"AESF" + H("06 deadbeef 0a") + b"drab-locus"
                       + H("05 03 05 0214 04 00"))
    parsed = parse_info_reply(payload)
    assert parsed == info
    assert parsed.key_sizes == (128, 256) and parsed.modes == (Mode.ECB, Mode.CTR)
    assert parsed.max_process_data == 512 and parsed.max_chunk == 512
    assert DeviceInfo(max_payload=60).max_chunk == 32
    assert DeviceInfo().window == 1


@pytest.mark.parametrize("window", [0, 256])
def test_info_window_range(window):
    with pytest.raises(ValueError, match=f"window must be in range 1 .. 255, got {window}"):
        DeviceInfo(window=window)


@pytest.mark.parametrize(("payload", "error", "match"), [
    (H("00") + b"AESX" + H("02 00000000 00 07 04 07 0414 01 00"), BadReply, "magic"),
    (H("00") + b"AESF" + H("01 00000000 00 07 04 07 0414 01 00"), BadReply, "protocol version"),
    (H("00") + b"AESF" + H("06 00000000 01 07 04 07 0414 01 00"), BadLength, "1-byte core name"),
    (H("00") + b"AESF" + H("06 00000000 00 0f 04 07 0414 01 00"), BadReply, "key sizes bitmask"),
    (H("00") + b"AESF" + H("06 00000000 00 07 04 10 0414 01 00"), BadReply, "modes bitmask"),
    (H("00") + b"AESF" + H("06 00000000 00 07 00 07 0414 01 00"), BadReply, "key_slots"),
    (H("00") + b"AESF" + H("06 00000000 00 07 04 07 05b5 01 00"), BadReply, "max_payload"),
    (H("00") + b"AESF" + H("06 00000000 00 07 04 07 0414 00 00"), BadReply, "window"),
    (H("00") + b"AESF" + H("06 00000000 01 80 07 04 07 0414 01 00"), BadReply, "core_name"),
    (H("00") + b"AESF" + H("06 00000000 00 07 04 07 0414 01 08"), BadReply, "features"),
    (H("00") + b"AESF", BadLength, "at least"),
    (H("05"), DeviceError, "KEY_NOT_LOADED"),
])
def test_info_reply_errors(payload, error, match):
    with pytest.raises(error, match=match):
        parse_info_reply(payload)


def test_load_key_layout():
    key = bytes(range(24))
    payload = build_load_key_request(2, key)
    assert payload == H("02 01") + key
    req = parse_load_key_request(payload)
    assert (req.slot, req.key, req.key_size) == (2, key, KeySize.AES192)
    # The key stays out of logs.
    assert key.hex() not in repr(req) and str(list(key)) not in repr(req)
    assert repr(LoadKeyRequest(1, b"\xaa" * 16)) == "LoadKeyRequest(slot=1)"


def test_zeroize_layout():
    assert build_zeroize_request() == H("ff")
    assert build_zeroize_request(3) == H("03")
    assert parse_zeroize_request(H("ff")) == ALL_SLOTS
    assert parse_zeroize_request(H("03"), DeviceInfo(key_slots=4)) == 3


def test_process_layout():
    iv = bytes(range(16))
    payload = build_process_request(1, Op.DECRYPT, Mode.CBC, b"D" * 32, first=True, last=False,
                                    iv=iv)
    assert payload == H("01 01 01 01") + iv + b"D" * 32
    assert parse_process_request(payload) == ProcessRequest(
        1, Op.DECRYPT, Mode.CBC, True, False, iv, b"D" * 32)
    payload = build_process_request(0, Op.ENCRYPT, Mode.CTR, b"xyz", first=False, last=True)
    assert payload == H("00 00 02 02") + b"xyz"
    assert parse_process_request(payload).iv is None
    # ECB's FIRST chunk keeps the IV field, zeros by default.
    assert build_process_request(0, 0, 0, b"", first=True, last=True) == H("00000003") + bytes(16)
    assert build_process_reply(b"out") == b"\x00out"
    assert parse_process_reply(b"\x00out", expected_length=3) == b"out"
    with pytest.raises(BadLength, match="must be 4"):
        parse_process_reply(b"\x00out", expected_length=4)


def test_status_replies():
    assert build_status_reply(Status.BAD_SLOT) == H("04")
    assert parse_status_reply(H("00")) == Status.OK
    with pytest.raises(DeviceError, match="BAD_SLOT") as info:
        parse_status_reply(H("04"))
    assert info.value.status == Status.BAD_SLOT
    with pytest.raises(BadReply, match="0xee"):
        parse_status_reply(H("ee"))
    with pytest.raises(BadLength, match="error reply payload length must be 1, got 2"):
        parse_process_reply(H("0400"))
    with pytest.raises(BadLength, match="must be 1, got 2"):
        parse_status_reply(H("0000"))
    with pytest.raises(BadLength):
        parse_status_reply(b"")


@pytest.mark.parametrize(("call", "error", "match"), [
    (lambda: build_load_key_request(255, bytes(16)), BadSlot,
     r"slot must be in range 0 \.\. 254, got 255"),
    (lambda: build_load_key_request(0, bytes(20)), BadKeySize,
     "key length must be 16, 24 or 32 bytes, got 20"),
    (lambda: build_zeroize_request(256), ValueError, r"slot must be in range 0 \.\. 255, got 256"),
    (lambda: build_process_request(0, 2, 0, b"", first=True, last=True), BadOp,
     r"op must be one of 0 \(ENCRYPT\), 1 \(DECRYPT\), got 2"),
    (lambda: build_process_request(0, 0, 4, b"", first=True, last=True), BadMode,
     r"mode must be one of 0 \(ECB\), 1 \(CBC\), 2 \(CTR\), 3 \(GCM\), got 4"),
    (lambda: build_process_request(0, 0, Mode.CBC, b"", first=True, last=True), ValueError,
     "iv is required"),
    (lambda: build_process_request(0, 0, Mode.CBC, b"", first=False, last=True, iv=bytes(16)),
     ValueError, "iv must be omitted"),
    (lambda: build_process_request(0, 0, Mode.CBC, b"", first=True, last=True, iv=bytes(8)),
     BadLength, "iv length must be 16 bytes, got 8"),
    (lambda: build_process_request(0, 0, Mode.ECB, bytes(17), first=True, last=True),
     LengthNotMultipleOf16, "multiple of 16.*got 17 in a LAST ECB chunk"),
    (lambda: build_process_request(0, 0, Mode.CTR, bytes(17), first=True, last=False,
                                   iv=bytes(16)),
     LengthNotMultipleOf16, "got 17 in a non-LAST CTR chunk"),
    (lambda: build_process_request(0, 0, Mode.ECB, bytes(1456), first=False, last=True),
     BadLength, r"data length must be in range 0 \.\. 1440, got 1456"),
    (lambda: build_process_request(True, 0, Mode.ECB, b"", first=True, last=True), TypeError,
     "slot"),
    (lambda: build_process_requests(0, 0, Mode.ECB, b"", chunk_size=24), ValueError,
     "chunk_size must be a multiple of 16"),
    (lambda: parse_process_request(H("00 00 00 08")), BadFlags, "got 0x08"),
    (lambda: parse_process_request(H("00 00 02 04")), BadFlags, "only for GCM, got it in CTR"),
    (lambda: parse_process_request(H("04 00 00 03") + bytes(16), DeviceInfo(key_slots=4)),
     BadSlot, r"slot must be in range 0 \.\. 3, got 4"),
    (lambda: parse_process_request(H("00 00 02 03") + bytes(16),
                                   DeviceInfo(modes=(Mode.ECB, Mode.CBC))),
     BadMode, r"supports: 0 \(ECB\), 1 \(CBC\), got 2 \(CTR\)"),
    (lambda: parse_load_key_request(H("00 03") + bytes(16)), BadKeySize, "got 3"),
    (lambda: parse_load_key_request(H("00 02") + bytes(16)), BadLength,
     "key length must be 32 bytes for AES-256, got 16"),
    (lambda: parse_load_key_request(H("00 02") + bytes(32), DeviceInfo(key_sizes=(128,))),
     BadKeySize, r"supports: 0 \(AES-128\), got 2 \(AES-256\)"),
    (lambda: parse_zeroize_request(H("04"), DeviceInfo(key_slots=4)), BadSlot,
     r"0 \.\. 3 or 0xff \(all slots\), got 4"),
])
def test_validation_errors_name_field_value_and_range(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_statuses_and_errors():
    for status in Status:
        text = describe(status)
        assert text and "\n" not in text
        if status != Status.OK:
            assert error_for_status(status).status == status
    assert describe(0x7F) == "unknown status 0x7f"
    assert describe(4) == describe(Status.BAD_SLOT)
    with pytest.raises(ValueError):
        error_for_status(Status.OK)
    # One byte on the wire.
    assert max(Status) < 0x100 and max(Command) < 0x80


def test_no_reply_carries_key_material():
    # Reply builders take statuses, data and device info, never a key.
    builders = [f for name, f in vars(message_module).items()
                if name.startswith("build_") and name.endswith("_reply")]
    assert len(builders) >= 5
    for builder in builders:
        params = inspect.signature(builder).parameters
        assert not any(p == "key" or p.endswith("_key") or "key_bytes" in p for p in params), \
            builder.__name__
    assert {f.name for f in dataclasses.fields(DeviceInfo) if "key" in f.name} == {
        "key_sizes", "key_slots"}
    # And behaviourally: after a session exercising every command, no reply contains a key.
    session = Session()
    keys = [random.Random(n).randbytes(n) for n in (16, 24, 32)]
    for slot, key in enumerate(keys):
        session.load(slot, key)
    session.status(Command.INFO)
    for slot in range(3):
        session.process(build_process_request(slot, 0, Mode.ECB, bytes(64), first=True,
                                              last=True))
        # an error reply too (8 bytes of ECB)
        session.status(Command.PROCESS, bytes([slot, 0, 0, 3]) + bytes(16 + 8))
    session.status(Command.LOAD_KEY, H("09 00") + keys[0])   # bad slot, key in the request
    session.status(Command.ZEROIZE, H("ff"))
    replies = b"".join(session.wire)
    for key in keys:
        assert key not in replies and key not in b"".join(FrameDecoder().feed(replies))
        for half in (key[:8], key[8:16]):
            assert half not in b"".join(FrameDecoder().feed(replies))


# --------------------------------------------------------------------------------------------
# Device model against OpenSSL
# --------------------------------------------------------------------------------------------

@st.composite
def messages(draw, mode):
    """A key, op, IV and message with its chunk boundaries (CTR: partial last block)."""
    key = draw(st.sampled_from([16, 24, 32]).flatmap(lambda n: st.binary(min_size=n, max_size=n)))
    op = draw(st.sampled_from(list(Op)))
    iv = draw(st.binary(min_size=16, max_size=16))
    blocks = draw(st.lists(st.integers(0, 64).filter(lambda b: b < 9 or b > 60 or b % 7 == 0),
                           min_size=1, max_size=5))
    tail = draw(st.integers(0, 15)) if mode == Mode.CTR else 0
    if tail and blocks[-1] == 64:
        blocks[-1] = 63   # room for the partial block within one chunk's data limit
    sizes = [16 * b for b in blocks]
    sizes[-1] += tail
    data = draw(st.binary(min_size=sum(sizes), max_size=sum(sizes)))
    return key, op, iv, data, sizes


def _chunks(slot, op, mode, iv, data, sizes):
    pos = 0
    for i, size in enumerate(sizes):
        first, last = i == 0, i == len(sizes) - 1
        yield build_process_request(slot, op, mode, data[pos:pos + size], first=first, last=last,
                                    iv=iv if first else None)
        pos += size


@pytest.mark.parametrize("mode", BLOCK_MODES, ids=lambda m: m.name)
@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data(), st.integers(0, 3))
def test_device_matches_openssl_over_random_chunks(mode, data_, slot):
    key, op, iv, data, sizes = data_.draw(messages(mode))
    session = Session()
    session.load(slot, key)
    out = b""
    for i, payload in enumerate(_chunks(slot, op, mode, iv, data, sizes)):
        out += session.process(payload)
        assert session.device.message_in_progress == (i < len(sizes) - 1)
    assert len(out) == len(data)
    assert out == reference(key, op, mode, iv, data)


@pytest.mark.parametrize("mode", [Mode.CBC, Mode.CTR])
@pytest.mark.parametrize("op", list(Op))
def test_chaining_state_carries_across_chunks(mode, op):
    key, iv = bytes(range(16)), bytes(range(100, 116))
    data = bytes(range(64))
    session = Session()
    session.load(0, key)
    first = session.process(build_process_request(0, op, mode, data[:32], first=True,
                                                  last=False, iv=iv))
    # Other requests in between do not disturb the message in progress.
    session.load(1, bytes(32))
    assert session.status(Command.INFO) == Status.OK
    second = session.process(build_process_request(0, op, mode, data[32:], first=False,
                                                   last=True))
    assert first + second == reference(key, op, mode, iv, data)
    # Restarting the second half with the original IV gives a different result: the state
    # really was carried, not reset per chunk.
    restarted = session.process(build_process_request(0, op, mode, data[32:], first=True,
                                                      last=True, iv=iv))
    assert restarted != second


def test_ctr_counter_wraps_at_128_bits():
    key, iv = bytes(16), b"\xff" * 16
    session = Session()
    session.load(0, key)
    out = session.process(build_process_request(0, Op.ENCRYPT, Mode.CTR, bytes(40), first=True,
                                                last=True, iv=iv))
    counters = (iv, bytes(16), (1).to_bytes(16, "big"))
    ks = [reference(key, Op.ENCRYPT, Mode.ECB, None, c) for c in counters]
    assert out == b"".join(ks)[:40]


@pytest.mark.parametrize("mode", BLOCK_MODES)
def test_build_process_requests(mode):
    key, iv = bytes(range(32)), bytes(16) if mode == Mode.ECB else bytes(range(16))
    data = random.Random(5).randbytes(16 * 70 + (5 if mode == Mode.CTR else 0))
    session = Session()
    session.load(3, key)
    payloads = build_process_requests(3, Op.ENCRYPT, mode, data, iv=iv, chunk_size=512)
    assert len(payloads) == 3
    ct = b"".join(session.process(p) for p in payloads)
    assert ct == reference(key, Op.ENCRYPT, mode, iv, data)
    back = b"".join(session.process(p) for p in
                    build_process_requests(3, Op.DECRYPT, mode, ct, iv=iv))
    assert back == data
    # An empty message is one FIRST|LAST chunk.
    (empty,) = build_process_requests(3, Op.ENCRYPT, mode, b"", iv=iv)
    assert empty[3] == FLAG_FIRST | FLAG_LAST and session.process(empty) == b""


def test_info_from_the_device():
    info = DeviceInfo(core_name="model", build_id=42, key_slots=2)
    reply = Session(DeviceModel(info)).raw(Command.INFO)
    assert parse_info_reply(reply.payload) == info


# --------------------------------------------------------------------------------------------
# Device model: error replies
# --------------------------------------------------------------------------------------------

KEY = bytes(range(16))
IV = bytes(16)
J0 = bytes(range(12)) + bytes([0, 0, 0, 1])


def _proc(slot=0, op=0, mode=0, flags=FLAG_FIRST | FLAG_LAST, data=b"", iv=IV):
    return bytes([slot, op, mode, flags]) + (iv if flags & FLAG_FIRST else b"") + data


# (what, setup: keys to load, command, payload, expected status). The device has 4 slots.
ERROR_CASES = [
    ("process before load", False, Command.PROCESS, _proc(), Status.KEY_NOT_LOADED),
    ("process other slot", True, Command.PROCESS, _proc(slot=1), Status.KEY_NOT_LOADED),
    ("process bad slot", True, Command.PROCESS, _proc(slot=4), Status.BAD_SLOT),
    ("load bad slot", True, Command.LOAD_KEY, H("04 00") + KEY, Status.BAD_SLOT),
    ("load slot 0xff", True, Command.LOAD_KEY, H("ff 00") + KEY, Status.BAD_SLOT),
    ("zeroize bad slot", True, Command.ZEROIZE, H("04"), Status.BAD_SLOT),
    ("info with payload", True, Command.INFO, H("00"), Status.BAD_LENGTH),
    ("load short key", True, Command.LOAD_KEY, H("00 00") + KEY[:15], Status.BAD_LENGTH),
    ("load long key", True, Command.LOAD_KEY, H("00 00") + KEY + b"!", Status.BAD_LENGTH),
    ("load no size", True, Command.LOAD_KEY, H("00"), Status.BAD_LENGTH),
    ("zeroize empty", True, Command.ZEROIZE, b"", Status.BAD_LENGTH),
    ("zeroize two", True, Command.ZEROIZE, H("0001"), Status.BAD_LENGTH),
    ("process short header", True, Command.PROCESS, H("000000"), Status.BAD_LENGTH),
    ("process short iv", True, Command.PROCESS, H("00000003") + bytes(10), Status.BAD_LENGTH),
    ("process too much data", True, Command.PROCESS, _proc(flags=FLAG_LAST, data=bytes(1456)),
     Status.BAD_LENGTH),
    ("bad key size", True, Command.LOAD_KEY, H("00 03") + KEY, Status.BAD_KEY_SIZE),
    ("bad op", True, Command.PROCESS, _proc(op=2), Status.BAD_OP),
    ("bad mode", True, Command.PROCESS, _proc(mode=4), Status.BAD_MODE),
    ("gcm iv not j0", True, Command.PROCESS, _proc(mode=3), Status.BAD_IV),
    ("aad in ecb", True, Command.PROCESS, _proc(flags=FLAG_FIRST | FLAG_AAD, data=bytes(16)),
     Status.BAD_FLAGS),
    ("gcm aad with last", True, Command.PROCESS,
     _proc(mode=3, flags=FLAG_FIRST | FLAG_LAST | FLAG_AAD, iv=J0), Status.BAD_FLAGS),
    ("gcm encrypt last with data", True, Command.PROCESS, _proc(mode=3, iv=J0, data=bytes(1)),
     Status.BAD_LENGTH),
    ("gcm decrypt tag of 11", True, Command.PROCESS, _proc(op=1, mode=3, iv=J0, data=bytes(11)),
     Status.BAD_LENGTH),
    ("gcm decrypt tag of 17", True, Command.PROCESS, _proc(op=1, mode=3, iv=J0, data=bytes(17)),
     Status.BAD_LENGTH),
    ("bad flags", True, Command.PROCESS, _proc(flags=0x83), Status.BAD_FLAGS),
    ("ecb 17 bytes", True, Command.PROCESS, _proc(data=bytes(17)),
     Status.LENGTH_NOT_MULTIPLE_OF_16),
    ("cbc 15 bytes last", True, Command.PROCESS, _proc(mode=1, data=bytes(15)),
     Status.LENGTH_NOT_MULTIPLE_OF_16),
    ("ctr partial not last", True, Command.PROCESS, _proc(mode=2, flags=FLAG_FIRST,
                                                          data=bytes(17)),
     Status.LENGTH_NOT_MULTIPLE_OF_16),
    ("continuation, no message", True, Command.PROCESS, _proc(flags=FLAG_LAST, data=bytes(16)),
     Status.CHAIN_NOT_STARTED),
    ("random without a source", True, Command.RANDOM, H("01"), Status.UNKNOWN_COMMAND),
    ("unknown command 0x0f", True, 0x0F, b"", Status.UNKNOWN_COMMAND),
    ("unknown command 0x00", True, 0x00, b"", Status.UNKNOWN_COMMAND),
    ("unknown command 0x7f", True, 0x7F, H("00"), Status.UNKNOWN_COMMAND),
    ("reply opcode", True, 0x81, b"", Status.UNKNOWN_COMMAND),
    ("unknown reply opcode", True, 0x8F, b"", Status.UNKNOWN_COMMAND),
]


@pytest.mark.parametrize(("loaded", "command", "payload", "status"),
                         [c[1:] for c in ERROR_CASES], ids=[c[0] for c in ERROR_CASES])
def test_error_replies(loaded, command, payload, status):
    session = Session()
    if loaded:
        session.load(0, KEY)
    reply = session.raw(command, payload)
    assert reply.payload == bytes([status]), describe(reply.payload[0])
    # Nothing changed: slot 0 still holds its key (or still none), no message started.
    assert session.device.key_loaded(0) == loaded
    assert not session.device.message_in_progress


def test_every_error_status_is_produced():
    # The GCM statuses that need a message in progress: tests/test_gcm_protocol.py; a
    # source not healthy: tests/test_entropy_random.py.
    produced = ({c[-1] for c in ERROR_CASES} | {Status.BAD_CRC, Status.CHAIN_MISMATCH}
                | {case.status for case in GCM_REFUSALS} | {Status.AUTH_FAILED}
                | {Status.ENTROPY_UNAVAILABLE})
    # BUSY is for gateware only: the model is never busy. The session statuses (0x20 ..
    # 0x2F): tests/test_sessions.py.
    sessions = {s for s in Status if 0x20 <= s <= 0x2F}
    assert produced == set(Status) - {Status.OK, Status.BUSY} - sessions


def test_bad_crc_reply():
    device = DeviceModel()
    raw = bytearray(_content(Command.LOAD_KEY, 0x0102, H("00 00") + KEY))
    raw[-1] ^= 1
    reply = _one_reply(device.handle(_wire(bytes(raw))))
    assert (reply.command, reply.seq, reply.payload) == (0x82, 0x0102, H("01"))
    assert not device.key_loaded(0)


def test_bad_length_field_reply():
    reply = _one_reply(DeviceModel().handle(_wire(_content(Command.INFO, 5, b"", length=1))))
    assert (reply.command, reply.seq, reply.payload) == (0x81, 5, bytes([Status.BAD_LENGTH]))


def test_no_reply_without_a_header():
    device = DeviceModel()
    assert device.handle(_wire(H("01 0001 0000"))) == b""      # too short for header + CRC
    assert device.handle(H("05 11 22 00")) == b""             # malformed COBS
    with pytest.raises(ValueError, match="single encoded frame"):
        device.handle(encode_frame(Command.INFO, 1) + encode_frame(Command.INFO, 2))


def test_chain_mismatch_and_abandon():
    session = Session()
    session.load(0, KEY)
    session.load(1, KEY)
    start = build_process_request(0, Op.ENCRYPT, Mode.CBC, bytes(16), first=True, last=False,
                                  iv=IV)
    session.process(start)
    for slot, op, mode in [(1, 0, 1), (0, 1, 1), (0, 0, 2)]:
        payload = build_process_request(slot, op, mode, bytes(16), first=False, last=True)
        assert session.status(Command.PROCESS, payload) == Status.CHAIN_MISMATCH
    # The errors left the message alone; a new FIRST chunk abandons it for another.
    assert session.device.message_in_progress
    session.process(build_process_request(1, Op.DECRYPT, Mode.CTR, bytes(16), first=True,
                                          last=False, iv=IV))
    cont = build_process_request(0, Op.ENCRYPT, Mode.CBC, bytes(16), first=False, last=True)
    assert session.status(Command.PROCESS, cont) == Status.CHAIN_MISMATCH


def test_restricted_device():
    info = DeviceInfo(key_sizes=(128,), modes=(Mode.ECB, Mode.CBC), key_slots=1)
    session = Session(DeviceModel(info))
    assert session.status(Command.LOAD_KEY, H("00 02") + bytes(32)) == Status.BAD_KEY_SIZE
    assert session.status(Command.LOAD_KEY, H("01 00") + KEY) == Status.BAD_SLOT
    session.load(0, KEY)
    assert session.status(Command.PROCESS, _proc(mode=Mode.CTR)) == Status.BAD_MODE
    assert session.status(Command.PROCESS, _proc(mode=Mode.CBC)) == Status.OK


def test_zeroize():
    session = Session()
    session.load(0, KEY)
    session.load(1, KEY)
    assert session.status(Command.ZEROIZE, build_zeroize_request(0)) == Status.OK
    assert session.status(Command.PROCESS, _proc(slot=0)) == Status.KEY_NOT_LOADED
    assert session.status(Command.PROCESS, _proc(slot=1)) == Status.OK
    # Zeroizing an empty slot succeeds.
    assert session.status(Command.ZEROIZE, build_zeroize_request(2)) == Status.OK
    assert session.status(Command.ZEROIZE, build_zeroize_request(ALL_SLOTS)) == Status.OK
    assert not any(session.device.key_loaded(s) for s in range(4))
    assert session.status(Command.PROCESS, _proc(slot=1)) == Status.KEY_NOT_LOADED


def test_key_changes_end_the_message_in_progress():
    session = Session()
    session.load(0, KEY)
    session.load(1, KEY)
    start = build_process_request(0, Op.ENCRYPT, Mode.CTR, bytes(16), first=True, last=False,
                                  iv=IV)
    cont = build_process_request(0, Op.ENCRYPT, Mode.CTR, bytes(16), first=False, last=False)
    session.process(start)
    # Another slot's key may change; this message goes on.
    session.load(1, bytes(24))
    session.status(Command.ZEROIZE, build_zeroize_request(1))
    session.process(cont)
    # Its own slot's key may not: the message ends.
    session.load(0, bytes(32))
    assert session.status(Command.PROCESS, cont) == Status.CHAIN_NOT_STARTED
    session.process(start)
    session.status(Command.ZEROIZE, build_zeroize_request(ALL_SLOTS))
    assert not session.device.message_in_progress
    assert session.status(Command.PROCESS, cont) == Status.KEY_NOT_LOADED


def test_device_byte_stream():
    """A whole session over the serial-line interface, with line noise and odd splits."""
    rng = random.Random(7)
    key, iv = rng.randbytes(32), rng.randbytes(16)
    data = rng.randbytes(100)
    requests = [
        (Command.INFO, b""),
        (Command.LOAD_KEY, build_load_key_request(2, key)),
        *[(Command.PROCESS, p) for p in
          build_process_requests(2, Op.ENCRYPT, Mode.CTR, data, iv=iv, chunk_size=32)],
    ]
    stream = bytearray(b"\x00")
    for seq, (command, payload) in enumerate(requests):
        # Noise, then a resync: 0x7f announces more bytes than follow, so it is malformed COBS.
        stream += b"\x7f" + rng.randbytes(5).replace(b"\x00", b"") + b"\x00"
        stream += encode_frame(command, seq, payload)
    device = DeviceModel()
    out = bytearray()
    pos = 0
    while pos < len(stream):
        step = rng.randint(1, 40)
        out += device.feed(bytes(stream[pos:pos + step]))
        pos += step
    replies = [decode_frame(r) for r in FrameDecoder().feed(bytes(out))]
    assert [r.seq for r in replies] == list(range(len(requests)))
    assert [r.command for r in replies] == [c | 0x80 for c, _ in requests]
    ct = b"".join(parse_process_reply(r.payload) for r in replies[2:])
    assert ct == reference(key, Op.ENCRYPT, Mode.CTR, iv, data)
    assert device.discarded == len(requests)   # each noise run was malformed COBS


def test_status_table_in_the_specification():
    # The docstring is the specification the gateware is written from; keep it in step.
    # The session statuses (0x20 .. 0x2F) are specified in session_spec.
    for status in Status:
        assert f"0x{status.value:02X}  {status.name}" in spec.__doc__ + session_spec.__doc__


def test_split_through_the_first_delimiter():
    from aes_fpga.appliance import split_through
    assert split_through(bytearray(b"ab\0cd\0")) == (b"ab\0", bytearray(b"cd\0"))
    assert split_through(b"abc") == (b"abc", b"")
    assert split_through(b"a--b", b"--") == (b"a--", b"b")
