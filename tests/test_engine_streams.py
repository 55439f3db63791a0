# amaranth: UnusedElaboratable=no
"""The protocol engine fed hostile byte streams: garbage, truncated, corrupt, oversized and
refused frames among valid ones. Whatever arrives, the engine sends exactly the bytes the
reference device sends for the same stream, and answers valid requests afterwards."""

import struct
import zlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aes_fpga import appliance as P
from aes_fpga.sim.cxxsim import find_cxx, open_device
from aes_fpga.sim.link import sim_appliance

pytestmark = pytest.mark.skipif(find_cxx() is None,
                                reason="needs the compiled simulator (no C++ compiler)")

# The engine of ``--port sim`` (one compiled simulator serves this file, the CLI's and the
# other engine tests): 4 key slots, every key size.
KEY_SLOTS = 4
# Long enough for the largest frame and its reply, with room for a busy machine.
READ_TIMEOUT = 20.0

_SETTINGS = dict(deadline=None, derandomize=True,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.fixture(scope="module")
def device():
    make, cache_key = sim_appliance(KEY_SLOTS)
    engine = make()
    assert engine.info.key_slots == KEY_SLOTS
    with open_device(engine, engine="cxxrtl", cache_key=cache_key,
                     progress=lambda line: None) as link:
        yield engine, link


# ---- stream pieces ---------------------------------------------------------------------------

def raw_frame(command, seq, payload, *, length=None):
    """A frame whose length field may disagree with its payload (the CRC is still right)."""
    content = struct.pack(">BHH", command, seq, len(payload) if length is None else length)
    content += payload
    content += (zlib.crc32(content) & 0xFFFFFFFF).to_bytes(4, "big")
    return P.cobs_encode(content) + b"\x00"


def _no_zeros(data):
    return data.replace(b"\x00", b"\xa5")


seqs = st.integers(0, 0xFFFF)
slots = st.sampled_from([0, 0, 1, 1, KEY_SLOTS, 0x7F, 0xFE, P.ALL_SLOTS])
keys = st.binary(min_size=16, max_size=16)
# Data lengths around the interesting boundaries: empty, partial blocks, whole blocks, the
# largest chunk and one block more.
data_lengths = st.sampled_from([0, 1, 15, 16, 17, 32, 48, 1008, 1024, 1040])


@st.composite
def process_payloads(draw, valid=False):
    """PROCESS payloads: valid ones (slot 0/1, known op/mode/flags, whole blocks), or with one
    field (or, rarely, several) out of range."""
    broken = set() if valid else set(draw(st.lists(
        st.sampled_from(["slot", "op", "mode", "flags", "iv", "size"]), min_size=1,
        max_size=draw(st.sampled_from([1, 1, 1, 3])))))
    slot = draw(slots.filter(lambda s: s >= KEY_SLOTS) if "slot" in broken
                else st.sampled_from([0, 1]))
    op = draw(st.sampled_from([2, 0x80, 0xFF]) if "op" in broken else st.sampled_from(P.Op))
    # 3 is GCM, which this device does not offer.
    mode = draw(st.sampled_from([3, 0x80]) if "mode" in broken
                else st.sampled_from(P.BLOCK_MODES))
    flags = draw(st.sampled_from([4, 0x81, 0xFF]) if "flags" in broken
                 else st.sampled_from([0, 1, 2, 3]))
    if "size" in broken:
        size = draw(data_lengths)
    else:
        size = 16 * draw(st.integers(0, 4))
        if flags & P.FLAG_LAST and mode == P.Mode.CTR:
            size += draw(st.integers(0, 15))
    iv = draw(st.binary(min_size=16, max_size=16)) if flags & P.FLAG_FIRST else b""
    if "iv" in broken:
        iv = iv[:draw(st.sampled_from([0, 5, 15]))]     # a short IV (or none) with FIRST
    data = draw(st.binary(min_size=size, max_size=size))
    return bytes([slot, op, mode, flags]) + iv + data


@st.composite
def requests(draw):
    """One request frame, well-formed on the wire; its fields valid or not."""
    seq = draw(seqs)
    kind = draw(st.sampled_from(["info", "info_bad", "load", "load_bad", "zeroize",
                                 "process", "process", "process_valid", "unknown",
                                 "length"]))
    if kind == "info":
        return P.encode_frame(P.Command.INFO, seq)
    if kind == "info_bad":
        return P.encode_frame(P.Command.INFO, seq, draw(st.binary(min_size=1, max_size=4)))
    if kind == "load":
        return P.encode_frame(P.Command.LOAD_KEY, seq, bytes([draw(st.sampled_from([0, 1]))])
                              + b"\x00" + draw(keys))
    if kind == "load_bad":
        size_code = draw(st.sampled_from([0, 1, 2, 3, 0xFF]))
        key = draw(st.binary(max_size=40))
        return P.encode_frame(P.Command.LOAD_KEY, seq,
                              (bytes([draw(slots), size_code]) + key)[:draw(st.integers(0, 60))])
    if kind == "zeroize":
        payload = bytes([draw(slots)]) if draw(st.booleans()) else draw(st.binary(max_size=3))
        return P.encode_frame(P.Command.ZEROIZE, seq, payload)
    if kind == "process":
        # raw_frame: the payload may exceed MAX_PAYLOAD, which encode_frame refuses to build
        return raw_frame(P.Command.PROCESS, seq, draw(process_payloads()))
    if kind == "process_valid":
        return P.encode_frame(P.Command.PROCESS, seq, draw(process_payloads(valid=True)))
    if kind == "unknown":
        command = draw(st.sampled_from([0x00, 0x0F, 0x7F, 0x80, 0x81, 0x84, 0xFF]))
        return P.encode_frame(command, seq, draw(st.binary(max_size=20)))
    # A length field that disagrees with the payload, or above MAX_PAYLOAD.
    command = draw(st.sampled_from(list(P.Command)))
    payload = draw(st.binary(max_size=24))
    length = draw(st.sampled_from([len(payload) + 1, abs(len(payload) - 1), P.MAX_PAYLOAD + 1,
                                   0xFFFF]))
    return raw_frame(command, seq, payload, length=length)


@st.composite
def corrupted(draw):
    """A request damaged on the wire: truncated, a bit flipped in its content (bad CRC, or a
    header the CRC then refuses) or in its encoded form (broken COBS, a split frame)."""
    frame = draw(requests())
    how = draw(st.sampled_from(["truncate", "flip_content", "flip_wire", "drop_delimiter"]))
    if how == "truncate":
        return frame[:draw(st.integers(0, len(frame) - 2))] + b"\x00"
    if how == "drop_delimiter":
        return frame[:-1]
    if how == "flip_content":
        content = bytearray(P.cobs_decode(frame[:-1]))
        bit = draw(st.integers(0, 8 * len(content) - 1))
        content[bit // 8] ^= 1 << (bit % 8)
        return P.cobs_encode(bytes(content)) + b"\x00"
    wire = bytearray(frame[:-1])
    bit = draw(st.integers(0, 8 * len(wire) - 1))
    wire[bit // 8] ^= 1 << (bit % 8)
    return bytes(wire) + b"\x00"


garbage = st.one_of(
    st.binary(min_size=1, max_size=40),                     # zeros too: many short frames
    st.binary(min_size=1, max_size=300).map(_no_zeros),      # one long bogus frame (no end)
    # Encoded frames at the buffer limit: exactly MAX_ENCODED_FRAME bytes is still decoded,
    # one more is dropped as oversized, however it goes on.
    st.sampled_from([0, 1, 2, 50]).flatmap(lambda extra: st.binary(
        min_size=P.MAX_ENCODED_FRAME + extra, max_size=P.MAX_ENCODED_FRAME + extra).map(
            lambda b: _no_zeros(b) + b"\x00")),
    st.sampled_from([b"\x00", b"\x00\x00", b"\xff", b"\x05\x11\x22", b"\x02\x11\x00",
                     b"\x01\x00", b"\x01\x01\x00"]),
)

# Protocol-level sequences the engine must keep state for exactly as the model does.
scenarios = st.one_of(
    # ZEROIZE (one slot or all), then a PROCESS: KEY_NOT_LOADED when it names a zeroized slot.
    st.tuples(st.sampled_from([0, 1, P.ALL_SLOTS]), process_payloads(valid=True), seqs).map(
        lambda t: P.encode_frame(P.Command.ZEROIZE, t[2], bytes([t[0]]))
        + P.encode_frame(P.Command.PROCESS, t[2] ^ 1, t[1])),
    # A message started, then continued with a chunk that may not match it.
    st.tuples(st.sampled_from([0, 1]), st.sampled_from(P.BLOCK_MODES), seqs,
              process_payloads(valid=True)).map(
        lambda t: P.encode_frame(P.Command.LOAD_KEY, t[2], P.build_load_key_request(0, bytes(16)))
        + P.encode_frame(P.Command.LOAD_KEY, t[2], P.build_load_key_request(1, bytes(16)))
        + P.encode_frame(P.Command.PROCESS, t[2], P.build_process_request(
            t[0], P.Op.ENCRYPT, t[1], bytes(32), first=True, last=False, iv=bytes(16)))
        + P.encode_frame(P.Command.PROCESS, t[2], t[3])),
    # A whole message in two chunks, with the key loaded first.
    st.tuples(st.sampled_from([0, 1]), keys, st.sampled_from(P.BLOCK_MODES),
              st.sampled_from(list(P.Op)), st.integers(1, 6), seqs).map(
        lambda t: P.encode_frame(P.Command.LOAD_KEY, t[5], P.build_load_key_request(t[0], t[1]))
        + b"".join(P.encode_frame(P.Command.PROCESS, (t[5] + 1 + n) & 0xFFFF, p)
                   for n, p in enumerate(P.build_process_requests(
                       t[0], t[3], t[2], bytes(range(16 * t[4])), iv=bytes(16),
                       chunk_size=16 * (1 + t[4] // 2))))),
)

pieces = st.one_of(requests(), requests(), corrupted(), garbage, scenarios)
streams = st.lists(pieces, min_size=1, max_size=8).map(b"".join)


# ---- the property ---------------------------------------------------------------------------

def _replies(wire):
    """Split concatenated replies into decoded frames."""
    assert wire.endswith(b"\x00") or not wire
    return [P.decode_frame(P.cobs_decode(f)) for f in wire.split(b"\x00")[:-1]]


def _check_stream(device, stream):
    engine, link = device
    link.read(None, timeout=0)              # nothing should be left, but start clean anyway
    model = P.DeviceModel(engine.info)
    # Resynchronise and clear every key and the message in progress: the engine then holds
    # the state of a fresh model.
    reset = b"\x00" + P.encode_frame(P.Command.ZEROIZE, 0xFFFF, P.build_zeroize_request())
    # After the stream, the engine must still work: INFO, a key and a message.
    key, data = bytes(range(16, 32)), bytes(range(48))
    tail = (b"\x00" + P.encode_frame(P.Command.INFO, 0xA001)
            + P.encode_frame(P.Command.LOAD_KEY, 0xA002, P.build_load_key_request(1, key))
            + P.encode_frame(P.Command.PROCESS, 0xA003, P.build_process_request(
                1, P.Op.ENCRYPT, P.Mode.CBC, data, first=True, last=True, iv=bytes(16))))
    want_reset = model.feed(reset)
    want_stream = model.feed(stream)
    want_tail = model.feed(tail)
    link.write(reset + stream + tail)
    want = want_reset + want_stream + want_tail
    got = link.read(len(want), timeout=READ_TIMEOUT)
    # Compare the parts separately for a readable report; a missing or extra reply shows as
    # a shifted stream part.
    assert got[:len(want_reset)].hex() == want_reset.hex()
    got_stream = got[len(want_reset):len(want_reset) + len(want_stream)]
    assert got_stream.hex() == want_stream.hex(), (
        f"stream {stream.hex()}: model answers {len(_replies(want_stream))} frame(s)")
    assert got[len(want_reset) + len(want_stream):].hex() == want_tail.hex()
    # The final three replies are the tail's, and succeed (the tail's leading zero ends
    # whatever partial frame the stream left, which may add a reply before them).
    info, load, process = _replies(want_tail)[-3:]
    assert (info.seq, load.seq, process.seq) == (0xA001, 0xA002, 0xA003)
    assert P.parse_info_reply(info.payload) == engine.info
    P.parse_load_key_reply(load.payload)
    assert len(P.parse_process_reply(process.payload, len(data))) == len(data)
    # And nothing beyond.
    assert link.read(None, timeout=0.05) == b""


@settings(max_examples=25, **_SETTINGS)
@given(streams)
def test_engine_matches_model_on_hostile_streams(device, stream):
    _check_stream(device, stream)


@pytest.mark.slow
@settings(max_examples=300, **_SETTINGS)
@given(streams)
def test_engine_matches_model_on_hostile_streams_long(device, stream):
    _check_stream(device, stream)


# ---- a few fixed streams for the cases a random draw may miss --------------------------------

def _valid_frames():
    return [P.encode_frame(P.Command.INFO, 7),
            P.encode_frame(P.Command.LOAD_KEY, 8, P.build_load_key_request(0, bytes(16)))]


def _zero_free_frame(command, payload):
    """The content of a frame with ``payload`` whose header and CRC hold no zero byte (the seq
    is chosen for that), COBS-encoded without its delimiter."""
    for seq in range(0x0101, 0x10000):
        content = P.cobs_decode(P.encode_frame(command, seq, payload)[:-1])
        if seq & 0xFF and 0 not in content[-4:]:
            return P.cobs_encode(content)
    raise AssertionError("no seq gives a zero-free CRC")


def _largest_frame():
    """A PROCESS request of MAX_PAYLOAD bytes without a zero anywhere: its encoding is exactly
    MAX_ENCODED_FRAME bytes, the longest frame the engine must take."""
    payload = bytes([1, P.Op.DECRYPT, P.Mode.CBC, P.FLAG_FIRST | P.FLAG_LAST]) + bytes(
        1 + n % 255 for n in range(P.MAX_PAYLOAD - 4))
    wire = _zero_free_frame(P.Command.PROCESS, payload)
    assert len(wire) == P.MAX_ENCODED_FRAME
    return (P.encode_frame(P.Command.LOAD_KEY, 1, P.build_load_key_request(1, bytes(16)))
            + wire + b"\x00")


def _trailing_empty_group():
    """A frame whose content ends with 254 non-zero bytes after its last zero, sent in both
    COBS forms: the shortest, and with the empty 0x01 group decoders also accept."""
    # INFO with a 249-byte payload: content 01 seq seq 00 f9, payload, CRC; the run after the
    # zero in the length field is 1 + 249 + 4 = 254 bytes.
    wire = _zero_free_frame(P.Command.INFO, bytes(range(1, 250)))
    assert wire[-255] == 0xFF
    return wire + b"\x00" + wire + b"\x01\x00"


FIXED = {
    "largest_frame_at_buffer_limit": _largest_frame(),
    # Contents of 0 to 9 bytes: shorter than header and CRC (dropped), then a bad CRC.
    "short_contents": b"".join(P.cobs_encode(bytes(range(1, n + 1))) + b"\x00"
                               for n in range(10)),
    "trailing_empty_cobs_group": _trailing_empty_group(),
    "process_before_load_key": P.encode_frame(P.Command.PROCESS, 1, P.build_process_request(
        0, P.Op.ENCRYPT, P.Mode.ECB, bytes(32), first=True, last=True)),
    "continuation_without_first": _valid_frames()[1] + P.encode_frame(
        P.Command.PROCESS, 2, P.build_process_request(0, P.Op.ENCRYPT, P.Mode.CBC, bytes(16),
                                                      first=False, last=True)),
    "zeroize_then_continue": _valid_frames()[1] + P.encode_frame(
        P.Command.PROCESS, 3, P.build_process_request(
            0, P.Op.ENCRYPT, P.Mode.CTR, bytes(16), first=True, last=False, iv=bytes(16)))
        + P.encode_frame(P.Command.ZEROIZE, 4, b"\x00")
        + _valid_frames()[1] + P.encode_frame(P.Command.PROCESS, 5, P.build_process_request(
            0, P.Op.ENCRYPT, P.Mode.CTR, bytes(16), first=False, last=True)),
    "oversized_then_valid": b"\x5a" * (P.MAX_ENCODED_FRAME + 1) + b"\x00"
        + _valid_frames()[0],
    "oversized_swallows_next_frame": b"\x5a" * (P.MAX_ENCODED_FRAME + 1) + _valid_frames()[0]
        + _valid_frames()[0],
    "garbage_without_delimiter_swallows_frame": b"\x13\x37" + _valid_frames()[0],
    "bad_slots": b"".join(P.encode_frame(c, 9, bytes([s]) + rest) for s in (KEY_SLOTS, 0xFE)
                          for c, rest in ((P.Command.LOAD_KEY, b"\x00" + bytes(16)),
                                          (P.Command.ZEROIZE, b""),
                                          (P.Command.PROCESS, b"\x00\x00\x03" + bytes(16)))),
    "largest_chunk": _valid_frames()[1] + P.encode_frame(
        P.Command.PROCESS, 10, P.build_process_request(
            0, P.Op.DECRYPT, P.Mode.CBC, bytes(range(256)) * 4, first=True, last=True,
            iv=bytes(16))),
    # Each PROCESS field refused in turn, behind a loaded key.
    "process_fields": _valid_frames()[1] + b"".join(
        P.encode_frame(P.Command.PROCESS, 12 + n, payload) for n, payload in enumerate([
            b"\x00\x02\x00\x00", b"\x00\x00\x03\x00", b"\x00\x00\x00\x04",
            b"\x00\x00\x00\x01" + bytes(15), b"\x00\x00\x01\x03" + bytes(16 + 17),
            b"\x00\x00\x02\x01" + bytes(16 + 17), b"\x00\x00\x02\x03" + bytes(16 + 17),
            b"\x00\x00", b"\x01\x00\x00\x03" + bytes(16)])),
    "chunk_one_block_too_large": raw_frame(P.Command.PROCESS, 11, bytes([0, 0, 0, 2])
                                           + bytes(P.MAX_PROCESS_DATA + 16)),
}


@pytest.mark.parametrize("name", list(FIXED))
def test_engine_matches_model_on_fixed_streams(device, name):
    _check_stream(device, FIXED[name])
