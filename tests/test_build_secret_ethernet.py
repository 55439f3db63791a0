# amaranth: UnusedElaboratable=no
"""The Ethernet appliance built with a device secret (what ``aes-fpga build --design ethernet
--device-key-file F`` builds), compiled (CXXRTL) and driven over UDP at the MII level: every
reply datagram against the reference device with the same secret. Before a session only
``INFO`` and the handshake are taken; the handshake gives the reference's session and
cryptogram, to the owner and to another host's port alike, and a wrong cryptogram is refused.

The first run compiles the simulator (about a minute); cached after."""

import random

import pytest

from aes_fpga.appliance import session_spec as S
from aes_fpga.appliance.frame import frame_content
from aes_fpga.appliance.messages import (
    build_load_key_request,
    build_process_request,
    build_zeroize_request,
    parse_info_reply,
)
from aes_fpga.appliance.reference import DeviceModel
from aes_fpga.appliance.spec import ALL_SLOTS, Command, Mode, Op, Status, reply_opcode
from aes_fpga.sim.cxxsim import find_cxx, mark_used

SECRET = bytes(range(90, 122))
KEY = bytes(range(16))


def secured_appliance():
    from aes_fpga.appliance.gateware.eth_appliance import EthernetAppliance
    from aes_fpga.cores import Compact8
    from aes_fpga.entropy import EntropySource
    from aes_fpga.primitives import NoiseModel
    from aes_fpga.sim.ethbridge import SIM_IP, SIM_MAC, SIM_PORT, MiiBridge
    core = Compact8(key_slots=1, key_sizes=(128,), tag_width=0)
    return MiiBridge(EthernetAppliance(mac=SIM_MAC, ip=SIM_IP, udp_port=SIM_PORT, core=core,
                                       key_slots=1, entropy=EntropySource(
                                           model=NoiseModel(seed=5)),
                                       device_secret=SECRET))


class Both:
    """The simulated appliance and the reference device, one datagram to each from a host
    port; the reference's device challenges are the appliance's (read from its replies)."""

    def __init__(self, info):
        self.challenge = None
        self.model = DeviceModel(info, device_secret=SECRET,
                                 challenge_source=lambda: self.challenge)
        self.seq = 0

    def send(self, link, command, payload=b""):
        self.seq += 1
        datagram = frame_content(command, self.seq, payload, crc=False)
        link.send(datagram)
        got = link.recv(timeout=60)
        assert got is not None, f"no reply to {command!r}"
        assert got[0] == reply_opcode(command)
        status = got[5:6]
        if command == S.SessionCommand.OPEN_SESSION and status == bytes([Status.OK]):
            self.challenge = S.parse_open_reply(got[5:], ValueError)[1]
        else:
            self.challenge = None
        assert self.model.datagram(datagram).hex() == got.hex()
        return got[5:]


@pytest.mark.slow
@pytest.mark.skipif(find_cxx() is None, reason="no C++ compiler for the simulator")
def test_the_ethernet_appliance_with_a_secret_against_the_reference():
    from aes_fpga.sim.cxxsim import open_device
    from aes_fpga.sim.ethbridge import FrameLink, SimUdpLink

    made = secured_appliance()
    frames = FrameLink(open_device(made, engine="cxxrtl", progress=lambda line: None))
    owner, other = SimUdpLink(frames, sport=40000), SimUdpLink(frames, sport=40001)
    try:
        both = Both(made.appliance.info)
        info = parse_info_reply(both.send(owner, Command.INFO))
        assert info.sessions and info.entropy and info.key_slots == 1
        clear = [(Command.LOAD_KEY, build_load_key_request(0, KEY)),
                 (Command.ZEROIZE, build_zeroize_request(ALL_SLOTS)), (Command.STATS, b""),
                 (Command.PROCESS, build_process_request(0, Op.ENCRYPT, Mode.ECB, bytes(16),
                                                         first=True, last=True)),
                 (Command.RANDOM, b"\x01")]
        for command, payload in clear:
            assert both.send(other, command, payload)[0] == Status.SESSION_REQUIRED
        rng = random.Random(3)
        for _ in range(200):
            reply = both.send(owner, S.SessionCommand.OPEN_SESSION, rng.randbytes(16))
            if reply[0] == Status.OK:
                break
            assert reply[0] == Status.ENTROPY_FAILED      # the source's start-up tests
        else:
            raise AssertionError("the entropy source never became ready")
        # Another host's handshake is answered too (it proves nothing without the secret).
        host = rng.randbytes(16)
        sid, device, cryptogram = S.parse_open_reply(
            both.send(other, S.SessionCommand.OPEN_SESSION, host), ValueError)
        keys = S.derive_session(SECRET, host, device, sid)
        assert cryptogram == keys.device_cryptogram
        assert both.send(other, S.SessionCommand.AUTHENTICATE, S.build_authenticate_request(
            sid, bytes(16)))[0] == Status.BAD_CRYPTOGRAM
        assert both.send(owner, S.SessionCommand.AUTHENTICATE, S.build_authenticate_request(
            sid, keys.host_cryptogram))[0] == Status.OK
        assert sid in both.model.sessions.session_ids
        # A session held changes nothing for requests in the clear.
        for command, payload in clear[:3]:
            assert both.send(other, command, payload)[0] == Status.SESSION_REQUIRED
        assert not both.model.key_loaded(0)
    finally:
        frames.close()


@pytest.mark.parametrize("options,match", [
    ({"entropy": None}, "entropy"),
    ({"core_slots": 1, "key_slots": 2}, "key_slots"),
])
def test_the_ethernet_appliance_refuses_a_secret_it_cannot_serve(options, match):
    from aes_fpga.appliance.gateware.eth_appliance import EthernetAppliance
    from aes_fpga.cores import Compact8
    from aes_fpga.entropy import EntropySource
    args = {"mac": "02:00:00:00:00:02", "ip": "10.0.0.2", "udp_port": 7001, "key_slots": 1,
            "key_sizes": (128, 256), "device_secret": SECRET, **options}
    if "entropy" not in args:
        args["entropy"] = EntropySource()
    if "core_slots" in args:
        args["core"] = Compact8(key_slots=args.pop("core_slots"), key_sizes=(128, 256),
                                tag_width=0)
    with pytest.raises(ValueError, match=match) as e:
        EthernetAppliance(**args)
    mark_used(list(args.values()))  # (the source and core of a refused appliance: never elaborated)
    assert SECRET.hex() not in str(e.value)


def test_the_ethernet_appliance_with_a_secret_says_so():
    from aes_fpga.appliance.gateware.eth_appliance import EthernetAppliance
    from aes_fpga.entropy import EntropySource
    dut = EthernetAppliance(mac="02:00:00:00:00:02", ip="10.0.0.2", udp_port=7001, key_slots=2,
                            entropy=EntropySource(), device_secret=SECRET)
    assert dut.info.sessions and dut.info.key_slots == 2
    assert dut.core.key_slots == 2      # (the sessions' keys are the records' cipher's)
    assert SECRET.hex() not in repr(dut) and SECRET.hex() not in repr(dut.info)
    open_one = EthernetAppliance(mac="02:00:00:00:00:02", ip="10.0.0.2", udp_port=7001)
    assert not open_one.info.sessions
    mark_used([dut, open_one])          # inspected, never elaborated
