# amaranth: UnusedElaboratable=no
"""A protocol engine built with a device secret (the session handshake and records in the
appliance's gateware), every reply byte against the reference device with the same secret:
before a session only INFO and the handshake are taken, everything else is refused
SESSION_REQUIRED and changes nothing; the handshake gives the reference's session id,
cryptogram and refusals; records carry LOAD_KEY, PROCESS and STATS."""

import random

import pytest

from aes_fpga import appliance as P
from aes_fpga.appliance import session_spec as S
from aes_fpga.appliance.messages import (
    build_load_key_request,
    build_process_request,
    build_zeroize_request,
)
from aes_fpga.appliance.spec import ALL_SLOTS, Command, Mode, Op, Status
from aes_fpga.cores import Compact8
from aes_fpga.entropy import EntropySource
from aes_fpga.primitives import NoiseModel
from aes_fpga.sim.cxxsim import open_device

SECRET = bytes(range(50, 82))
KEY = bytes(range(16))


def secured_engine():
    from aes_fpga.appliance.gateware.engine import ProtocolEngine
    # (The session keys are held by the records' own cipher, not by this core.)
    core = Compact8(key_slots=1, key_sizes=(128,), tag_width=0)
    return ProtocolEngine(core, key_slots=1, key_sizes=(128,), window=1,
                          entropy=EntropySource(model=NoiseModel(seed=11)),
                          device_secret=SECRET)


class Both:
    """The simulated engine and the reference device, one request to each; the reference's
    device challenges are the engine's (read from its replies)."""

    def __init__(self, link, info):
        self.link, self.seq = link, 0
        self.challenge = None
        self.model = P.DeviceModel(info, device_secret=SECRET,
                                   challenge_source=lambda: self.challenge)

    def send(self, command, payload=b""):
        self.seq += 1
        frame = P.encode_frame(command, self.seq, payload)
        self.link.write(frame)
        got = self.link.read_until(b"\0", timeout=120)
        reply = P.decode_frame(P.cobs_decode(got[:-1]), opcodes=S.SessionCommand)
        if command == S.SessionCommand.OPEN_SESSION and reply.payload[:1] == b"\0":
            self.challenge = S.parse_open_reply(reply.payload, ValueError)[1]
        else:
            self.challenge = None          # the engine's source is not ready: neither is it
        assert self.model.feed(frame).hex() == got.hex()
        return reply.payload


@pytest.mark.slow
def test_the_engine_with_a_secret_against_the_reference():
    dut = secured_engine()
    rng = random.Random(7)
    with open_device(dut, engine="pysim", progress=lambda line: None) as link:
        both = Both(link, dut.info)
        info = P.parse_info_reply(both.send(Command.INFO))
        assert info.sessions and info.entropy and info == both.model.info
        clear = [(Command.LOAD_KEY, build_load_key_request(0, KEY)),
                 (Command.ZEROIZE, build_zeroize_request(ALL_SLOTS)), (Command.STATS, b""),
                 (Command.PROCESS, build_process_request(0, Op.ENCRYPT, Mode.ECB, bytes(16),
                                                         first=True, last=True)),
                 (Command.RANDOM, b"\x01"),
                 (S.SessionCommand.CLOSE_SESSION, b""),
                 (S.SessionCommand.RECORD, bytes(5)),
                 (S.SessionCommand.RECORD, bytes(S.RECORD_MIN_PAYLOAD))]
        for command, payload in clear:
            both.send(command, payload)
        for command in (S.SessionCommand.OPEN_SESSION, S.SessionCommand.AUTHENTICATE):
            assert both.send(command, bytes(3))[0] == Status.BAD_LENGTH
        # Until the source has passed its start-up tests: ENTROPY_FAILED, nothing held.
        host = rng.randbytes(16)
        for _ in range(60):
            reply = both.send(S.SessionCommand.OPEN_SESSION, host)
            if reply[0] == Status.OK:
                break
            assert reply[0] == Status.ENTROPY_FAILED
        sid, device, cryptogram = S.parse_open_reply(reply, ValueError)
        keys = S.derive_session(SECRET, host, device, sid)
        assert cryptogram == keys.device_cryptogram
        assert both.send(S.SessionCommand.AUTHENTICATE, S.build_authenticate_request(
            sid, bytes(16)))[0] == Status.BAD_CRYPTOGRAM
        assert both.send(S.SessionCommand.AUTHENTICATE, S.build_authenticate_request(
            sid, keys.host_cryptogram))[0] == Status.OK
        assert both.model.sessions.session_ids == [sid]
        # With a session held, a request in the clear is still refused.
        for command, payload in clear[:3]:
            assert both.send(command, payload)[0] == Status.SESSION_REQUIRED
        assert not both.model.key_loaded(0)
        # Inside records (serial framing, the CRC around them): LOAD_KEY, PROCESS, STATS.
        inner = [(Command.LOAD_KEY, build_load_key_request(0, KEY)),
                 (Command.PROCESS, build_process_request(0, Op.ENCRYPT, Mode.ECB, bytes(32),
                                                         first=True, last=True)),
                 (Command.STATS, b"")]
        for counter, (command, payload) in enumerate(inner, 1):
            sealed = S.seal_request(keys, S.SessionCommand.RECORD, both.seq + 1, counter,
                                    command, payload)
            reply = both.send(S.SessionCommand.RECORD, sealed)
            assert S.open_reply(keys, 0xA2, both.seq, counter, reply)[0] == Status.OK
        assert both.model.key_loaded(0)


def test_a_secret_needs_an_entropy_source():
    from aes_fpga.appliance.gateware.engine import ProtocolEngine
    args = {"key_slots": 1, "key_sizes": (128,), "device_secret": SECRET}
    with pytest.raises(ValueError, match="entropy") as e:
        ProtocolEngine(**args)
    assert SECRET.hex() not in str(e.value)
