"""GCM through the reference device, request by request: a session that sends chosen ``seq``
values, the ``cryptography`` reference, and the table of refusals that need a message in
progress (shared by tests/test_gcm_protocol.py and tests/test_protocol.py)."""

from dataclasses import dataclass, field

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from aes_fpga.appliance.frame import decode_frame, frame_content
from aes_fpga.appliance.gcm import build_gcm_requests, parse_gcm_reply
from aes_fpga.appliance.messages import (
    DeviceInfo,
    build_load_key_request,
    build_process_request,
)
from aes_fpga.appliance.reference import DeviceModel
from aes_fpga.appliance.spec import Command, Mode, Op, Status, gcm_pre_counter

KEY = bytes(range(32, 48))
NONCE = bytes(range(100, 112))


def aesgcm(key, nonce, aad, data):
    """``(ciphertext, tag)`` by ``cryptography``."""
    out = AESGCM(key).encrypt(nonce, data, aad)
    return out[:-16], out[-16:]


class Session:
    """A :class:`DeviceModel` (GCM offered, 4 slots, ``window``) spoken to datagram by
    datagram, every ``seq`` chosen by the test."""

    def __init__(self, window=2, **limits):
        self.device = DeviceModel(DeviceInfo(modes=tuple(Mode), key_slots=4, window=window),
                                  **limits)

    def send(self, seq, payload, command=Command.PROCESS):
        """The reply payload to one request."""
        frame = decode_frame(self.device.datagram(frame_content(command, seq, payload,
                                                                crc=False)), crc=False)
        assert frame.seq == seq
        return frame.payload

    def load(self, slot, key, seq=0):
        assert self.send(seq, build_load_key_request(slot, key), Command.LOAD_KEY) == b"\0"

    def run(self, payloads, seq):
        """Send ``payloads`` with consecutive seqs from ``seq``; the replies' contents joined
        (``parse_gcm_reply``: a device error raises)."""
        return b"".join(parse_gcm_reply(p, self.send((seq + n) & 0xFFFF, p))
                        for n, p in enumerate(payloads))


@dataclass(frozen=True)
class Refusal:
    """A request refused in the middle of a GCM encryption of ``aad_len`` bytes of AAD and
    ``data_len`` of data in 16-byte chunks, after its first ``sent`` requests: ``bad(seq,
    payloads)`` gives the refused ``(seq, payload)`` (``seq``: the message's next)."""

    name: str
    status: Status
    aad_len: int
    data_len: int
    sent: int
    bad: object
    limits: dict = field(default_factory=dict)


def _chunk(data, aad=False, last=False, op=Op.ENCRYPT, slot=0):
    return build_process_request(slot, op, Mode.GCM, data, first=False, last=last, aad=aad)


def _flip_op(payload):
    return payload[:1] + bytes([payload[1] ^ 1]) + payload[2:]


GCM_REFUSALS = [
    Refusal("seq skips one", Status.OUT_OF_ORDER, 16, 32, 2, lambda s, p: (s + 1, p[2])),
    Refusal("seq repeats an unkept one", Status.OUT_OF_ORDER, 16, 64, 4,
            lambda s, p: (s - 3, p[4])),
    Refusal("aad after data", Status.BAD_CHUNK_ORDER, 16, 32, 2,
            lambda s, p: (s, _chunk(bytes(16), aad=True))),
    Refusal("aad after a short aad chunk", Status.BAD_CHUNK_ORDER, 5, 16, 1,
            lambda s, p: (s, _chunk(bytes(16), aad=True))),
    Refusal("data after a short data chunk", Status.BAD_CHUNK_ORDER, 0, 21, 2,
            lambda s, p: (s, _chunk(bytes(16)))),
    Refusal("data over the limit", Status.TOO_LONG, 0, 32, 2, lambda s, p: (s, _chunk(b"x")),
            {"max_gcm_data": 32}),
    Refusal("aad over the limit", Status.TOO_LONG, 32, 16, 2,
            lambda s, p: (s, _chunk(b"x", aad=True)), {"max_gcm_aad": 32}),
    Refusal("encryption's last with data", Status.BAD_LENGTH, 16, 16, 2,
            lambda s, p: (s, p[-1] + b"x")),
    Refusal("aad with last", Status.BAD_FLAGS, 16, 16, 1,
            lambda s, p: (s, p[-1][:3] + bytes([p[-1][3] | 4]) + p[-1][4:])),
    Refusal("a new message with a bad iv", Status.BAD_IV, 16, 16, 1,
            lambda s, p: (s, p[0][:4] + bytes(16) + p[0][20:])),
    Refusal("the other op", Status.CHAIN_MISMATCH, 16, 32, 2, lambda s, p: (s, _flip_op(p[2]))),
    Refusal("another slot", Status.CHAIN_MISMATCH, 16, 32, 2,
            lambda s, p: (s, bytes([1]) + p[2][1:])),
    Refusal("a new message in an empty slot", Status.KEY_NOT_LOADED, 16, 32, 2,
            lambda s, p: (s, bytes([2]) + p[0][1:])),
]


def refusal_payloads(case):
    """The whole message of ``case`` (encryption under :data:`KEY`, :data:`NONCE`) and its
    AAD and data."""
    aad, data = bytes(range(case.aad_len)), bytes(range(7, 7 + case.data_len))
    return build_gcm_requests(0, Op.ENCRYPT, NONCE, aad, data, chunk_size=16), aad, data


def j0():
    return gcm_pre_counter(NONCE)
