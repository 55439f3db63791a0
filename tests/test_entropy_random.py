# amaranth: UnusedElaboratable=no
"""``RANDOM``: the entropy source's words to the host. The protocol's host side and the reference
device; the protocol engine's gateware against the reference device byte for byte, its words
against the conditioning's Python model of the raw samples it used; failure injection (a source
in start-up, failed before or while a reply's words are gathered); ``Device.random`` and
``aes-fpga random``."""

import pytest
from amaranth.sim import Simulator
from test_entropy import run_source

from aes_fpga import appliance as P
from aes_fpga import model as aes_model
from aes_fpga.appliance.frame import split_through
from aes_fpga.appliance.spec import Command, EntropyStatus, Mode, Op, Status
from aes_fpga.entropy import EntropySource
from aes_fpga.entropy.conditioning import condition
from aes_fpga.primitives import NoiseModel


def reply_of(device, command, payload=b"", seq=1):
    """The reply payload of the reference ``device`` to one request."""
    wire = device.feed(P.encode_frame(command, seq, payload))
    return P.decode_frame(P.cobs_decode(wire[:-1])).payload


# --------------------------------------------------------------------------------------------
# Host side and reference device
# --------------------------------------------------------------------------------------------

def test_random_request_and_reply_round_trip():
    assert P.build_random_request(3) == b"\x03"
    assert P.parse_random_request(b"\x03") == 3
    words = [bytes([n]) * 16 for n in range(3)]
    assert P.parse_random_reply(P.build_random_reply(words), 3) == words
    with pytest.raises(P.BadLength, match="1"):
        P.parse_random_request(b"\x01\x00")
    with pytest.raises(P.BadLength, match="got 49"):
        P.parse_random_reply(P.build_random_reply(words), 2)
    with pytest.raises(P.DeviceError, match="ENTROPY_UNAVAILABLE"):
        P.parse_random_reply(bytes([Status.ENTROPY_UNAVAILABLE]), 2)
    with pytest.raises(ValueError, match="count"):
        P.build_random_request(256)


def test_max_random_words_fill_the_payload():
    for max_payload, most in ((P.SERIAL_MAX_PAYLOAD, 65), (P.MAX_PAYLOAD, 91),
                              (P.MIN_MAX_PAYLOAD, 2)):
        assert P.max_random_words(max_payload) == most
        assert 1 + 16 * most <= max_payload < 1 + 16 * (most + 1)


def test_reference_device_random():
    info = P.DeviceInfo(entropy=True, max_payload=P.SERIAL_MAX_PAYLOAD)
    device = P.DeviceModel(info)
    device.source = P.SourceModel(bytes([n]) * 16 for n in range(100))
    assert reply_of(device, Command.RANDOM, b"\x02") == b"\x00" + bytes(16) + bytes([1]) * 16
    # Never given twice; a count of 0 takes nothing.
    assert reply_of(device, Command.RANDOM, b"\x00") == b"\x00"
    assert reply_of(device, Command.RANDOM, b"\x01") == b"\x00" + bytes([2]) * 16
    # The count's limit, the payload's length: BAD_LENGTH, and nothing taken.
    assert reply_of(device, Command.RANDOM, b"\x42") == bytes([Status.BAD_LENGTH])
    assert reply_of(device, Command.RANDOM, b"") == bytes([Status.BAD_LENGTH])
    assert len(reply_of(device, Command.RANDOM, b"\x41")) == 1 + 16 * 65
    for state in (EntropyStatus.STARTUP, EntropyStatus.FAILED):
        device.entropy["entropy_state"] = state
        assert reply_of(device, Command.RANDOM, b"\x01") == bytes([Status.ENTROPY_UNAVAILABLE])
        # Length first (step 5), then the source (step 6).
        assert reply_of(device, Command.RANDOM, b"") == bytes([Status.BAD_LENGTH])
    assert device.source.given == 68
    # Without a source: UNKNOWN_COMMAND, whatever the payload.
    plain = P.DeviceModel(P.DeviceInfo())
    for payload in (b"", b"\x01", b"\xff\xff"):
        assert reply_of(plain, Command.RANDOM, payload) == bytes([Status.UNKNOWN_COMMAND])


def test_device_random_splits_into_requests():
    link = P.ModelLink(P.DeviceInfo(entropy=True, max_payload=P.MIN_MAX_PAYLOAD))
    words = [aes_model.to_bytes(aes_model.encrypt_block(bytes(16), n)) for n in range(5)]
    with P.Device(link) as dev:
        assert dev.random(5) == b"".join(words)        # requests of 2, 2 and 1 words
        assert dev.random(0) == b""
        link.device.entropy["entropy_state"] = EntropyStatus.FAILED
        with pytest.raises(P.EntropyUnavailable):
            dev.random(1)
        with pytest.raises(ValueError, match="count"):
            dev.random(-1)
    with P.Device(P.ModelLink(P.DeviceInfo())) as dev, pytest.raises(P.UnknownCommand):
        dev.random(1)


# --------------------------------------------------------------------------------------------
# Gateware
# --------------------------------------------------------------------------------------------

def engine_with(noise, **kwargs):
    from aes_fpga.appliance.gateware.engine import ProtocolEngine
    return ProtocolEngine(key_slots=1, key_sizes=(128,), window=1,
                          entropy=EntropySource(model=noise), **kwargs)


def run_engine(dut, script, *, max_cycles=40000):
    """Simulate ``dut`` through ``script``: ``("idle", n)`` waits ``n`` cycles, a frame (wire
    bytes) is sent and its reply awaited. Returns the exchanges ``[(frame, reply wire bytes,
    source state when the reply ended, source state when the request's last byte went in)]``
    and the raw samples the source's conditioning used, in order."""
    source = dut.entropy
    exchanges, used = [], []

    async def bench(ctx):
        cycles = 0

        async def tick():
            nonlocal cycles
            if ctx.get(source.sample_used):
                used.append(ctx.get(source.sample))
            await ctx.tick()
            cycles += 1
            assert cycles < max_cycles, "the engine did not answer"

        def state():
            return EntropyStatus(ctx.get(source.state).value)

        ctx.set(dut.tx.ready, 1)
        for item in script:
            if item[0] == "idle":
                for _ in range(item[1]):
                    await tick()
                continue
            pending, reply = bytearray(item), bytearray()
            while not reply.endswith(b"\0"):
                ctx.set(dut.rx.valid, bool(pending))
                if pending:
                    ctx.set(dut.rx.payload, pending[0])
                rx_fire = bool(pending) and ctx.get(dut.rx.ready)
                if ctx.get(dut.tx.valid):
                    reply.append(ctx.get(dut.tx.payload))
                await tick()
                if rx_fire:
                    del pending[0]
                    if not pending:
                        sent = state()
            exchanges.append((bytes(item), bytes(reply), state(), sent))

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return exchanges, used


def check_against_reference(dut, exchanges, used, samples=None):
    """Every reply byte for byte against the reference device's, told the source's state
    when the reply ended (and, for ``STATS``, the counts the engine reported), its words the
    conditioning's model of the samples the engine used. The reply payloads."""
    words = [aes_model.to_bytes(w) for w in condition(used, dut.entropy.blocks)]
    device = P.DeviceModel(dut.info)
    device.source = P.SourceModel(words, samples=samples)
    payloads = []
    for frame, got, state, _ in exchanges:
        reply = P.decode_frame(P.cobs_decode(got[:-1]))
        device.entropy["entropy_state"] = state
        if reply.command == P.reply_opcode(Command.STATS):
            _, entropy, _ = P.split_stats(dut.info, P.parse_stats_reply(reply.payload))
            device.entropy.update(entropy)
        assert device.feed(frame).hex() == got.hex(), P.decode_frame(P.cobs_decode(frame[:-1]))
        payloads.append(reply.payload)
    return payloads


def frame(command, seq, payload=b""):
    return P.encode_frame(command, seq, payload)


def test_engine_random_start_up_served_and_failure():
    """One simulation, the source healthy until it sticks (sample 3000): ``RANDOM`` in the
    start-up (refused), ``INFO`` reporting the source and ``STATS`` its start-up, then
    ``RANDOM`` served (2 words, 0 words), the count's limit and the payload's length refused;
    then a ``RANDOM`` sent while the source is healthy whose words are still being gathered
    when it fails (refused), a later one refused too, ``STATS`` showing the failure and its
    count, and a message in progress not disturbed by the refusals. Every reply is the
    reference device's and every word the conditioning model's of the raw samples the engine
    used."""
    dut = engine_with(NoiseModel("stuck", value=1, onset=3000))
    most = P.max_random_words(dut.info.max_payload)
    chunk = bytes(range(32))
    head = P.build_process_request(0, Op.ENCRYPT, Mode.CBC, chunk, first=True, last=False,
                                   iv=bytes(16))
    tail = P.build_process_request(0, Op.ENCRYPT, Mode.CBC, chunk, first=False, last=True)
    script = [frame(Command.RANDOM, 1, b"\x01"),
              frame(Command.INFO, 14), frame(Command.STATS, 15),
              frame(Command.LOAD_KEY, 2, P.build_load_key_request(0, bytes(range(16)))),
              frame(Command.PROCESS, 3, head), ("idle", 1000),
              frame(Command.STATS, 4), frame(Command.RANDOM, 5, b"\x02"),
              frame(Command.RANDOM, 6, bytes([most + 1])), frame(Command.RANDOM, 7, b"\x01\x01"),
              frame(Command.RANDOM, 8, b"\x00"),
              frame(Command.RANDOM, 9, b"\x04"),       # gathering when the source fails
              frame(Command.RANDOM, 10, b"\x01"), frame(Command.STATS, 11),
              frame(Command.PROCESS, 12, tail),
              frame(Command.ENTROPY_RAW, 13, b"\x01")]     # not a diagnostic build
    exchanges, used = run_engine(dut, script)
    sent = [state for *_, state in exchanges]
    assert sent[0] == sent[2] == EntropyStatus.STARTUP and sent[5] == EntropyStatus.OK
    assert sent[10] == EntropyStatus.OK           # healthy when the RANDOM of 4 was sent
    payloads = check_against_reference(dut, exchanges, used)
    OK, UNAVAILABLE, LENGTH = Status.OK, Status.ENTROPY_UNAVAILABLE, Status.BAD_LENGTH
    assert [p[0] for p in payloads] == [UNAVAILABLE, OK, OK, OK, OK, OK, OK, LENGTH, LENGTH,
                                        OK, UNAVAILABLE, UNAVAILABLE, OK, OK,
                                        Status.UNKNOWN_COMMAND]
    info = P.parse_info_reply(payloads[1])
    assert info == dut.info and info.entropy and not info.entropy_raw
    states = [P.split_stats(dut.info, P.parse_stats_reply(payloads[n]))[1] for n in (2, 5)]
    assert states == [{"entropy_state": state, "entropy_rct_failures": 0,
                       "entropy_apt_failures": 0}
                      for state in (EntropyStatus.STARTUP, EntropyStatus.OK)]
    words = payloads[6][1:]
    assert len(words) == 32 and words[:16] != words[16:]
    _, entropy, _ = P.split_stats(dut.info, P.parse_stats_reply(payloads[12]))
    assert entropy["entropy_state"] == EntropyStatus.FAILED
    assert entropy["entropy_rct_failures"] >= 1


def test_engine_raw_samples_in_a_diagnostic_build():
    """``ENTROPY_RAW`` (``entropy_raw=True``): given in the start-up too (when ``RANDOM`` is
    refused), each reply consecutive samples of the noise model, packed first bit on top;
    the count's limit refused; every reply the reference device's."""
    noise = NoiseModel(seed=9)
    dut = engine_with(noise, entropy_raw=True)
    assert dut.info.entropy_raw
    most = P.max_random_words(dut.info.max_payload)
    script = [frame(Command.ENTROPY_RAW, 1, b"\x02"), frame(Command.RANDOM, 2, b"\x01"),
              frame(Command.ENTROPY_RAW, 3, bytes([most + 1])),
              frame(Command.ENTROPY_RAW, 4, b"\x01")]
    exchanges, used = run_engine(dut, script)
    stream = bytes(noise.bits(2000))
    given = []
    for n in (0, 3):
        reply = P.decode_frame(P.cobs_decode(exchanges[n][1][:-1]))
        bits = P.unpack_samples(reply.payload[1:])
        assert len(bits) == 128 * (2 if n == 0 else 1)
        at = stream.find(bits)           # (one place: 128 bits of a healthy model)
        assert at >= 0 and stream.find(bits, at + 1) == -1
        given.append(at)
        assert exchanges[n][3] == EntropyStatus.STARTUP
    assert given[1] > given[0] + 256                 # later samples, never the same ones
    samples = [*stream[given[0]:given[0] + 256], *stream[given[1]:given[1] + 128]]
    payloads = check_against_reference(dut, exchanges, used, samples)
    assert [p[0] for p in payloads] == [Status.OK, Status.ENTROPY_UNAVAILABLE,
                                        Status.BAD_LENGTH, Status.OK]


# --------------------------------------------------------------------------------------------
# aes-fpga random
# --------------------------------------------------------------------------------------------

def test_cli_random(tmp_path, capsys, monkeypatch):
    """``aes-fpga random`` on the reference device (whose words are known): to a file, as hex,
    and refused with its status when the source has failed (no file written)."""
    from aes_fpga.appliance import links
    from aes_fpga.cli import main

    link = P.ModelLink(P.DeviceInfo(entropy=True, max_payload=P.MIN_MAX_PAYLOAD))
    monkeypatch.setattr(links, "open_link", lambda *args, **kwargs: link)
    words = [aes_model.to_bytes(aes_model.encrypt_block(bytes(16), n)) for n in range(6)]
    out = tmp_path / "words.bin"
    assert main(["random", "--port", "model", "--count", "5", "-o", str(out)]) == 0
    assert out.read_bytes() == b"".join(words[:5])
    assert main(["random", "--port", "model"]) == 0
    assert capsys.readouterr().out == words[5].hex() + "\n"
    link.device.entropy["entropy_state"] = EntropyStatus.STARTUP
    failed = tmp_path / "none.bin"
    assert main(["random", "--port", "model", "-o", str(failed)]) == 1
    assert "ENTROPY_UNAVAILABLE" in capsys.readouterr().err and not failed.exists()
    assert main(["random", "--port", "model", "--count", "-1"]) == 2


def test_sim_port_has_the_source(capsys):
    """``--port sim``: the simulated appliance (the one compiled simulator its tests share)
    has the entropy source, its noise the seeded model: ``aes-fpga random`` gives its words,
    the first the one the source alone gives (its words taken at once), and ``aes-fpga info``
    reports it, healthy."""
    import json

    from aes_fpga.cli import main
    from aes_fpga.sim.cxxsim import find_cxx
    from aes_fpga.sim.link import SIM_NOISE_SEED

    if find_cxx() is None:
        pytest.skip("needs the compiled simulator (no C++ compiler)")
    assert main(["random", "--port", "sim", "--count", "3"]) == 0
    lines = capsys.readouterr().out.split()
    assert len(lines) == len(set(lines)) == 3 and {len(w) for w in lines} == {32}
    # (The source's first word comes after its start-up and a word's time: within 1800 cycles.)
    _, alone = run_source(EntropySource(model=NoiseModel(seed=SIM_NOISE_SEED)), 1800)
    assert bytes.fromhex(lines[0]) == aes_model.to_bytes(alone[0][1])
    assert main(["info", "--port", "sim", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["entropy_state"], report["entropy_rct_failures"],
            report["entropy_apt_failures"]) == ("OK", 0, 0)


def test_cli_entropy_raw(tmp_path, monkeypatch, capsys):
    """``aes-fpga entropy --raw N -o FILE``: N samples, one a byte, the reference device's in
    order (over requests of at most the payload's blocks); a build without the option
    refuses it (UNKNOWN_COMMAND) and no file is written."""
    from aes_fpga.appliance import links
    from aes_fpga.cli import main

    info = P.DeviceInfo(entropy=True, entropy_raw=True, max_payload=P.MIN_MAX_PAYLOAD)
    link = P.ModelLink(info)
    monkeypatch.setattr(links, "open_link", lambda *args, **kwargs: link)
    assert main(["info", "--port", "model", "--json"]) == 0
    assert '"entropy_raw": true' in capsys.readouterr().out          # a diagnostic build
    out = tmp_path / "raw.bin"
    assert main(["entropy", "--port", "model", "--raw", "300", "-o", str(out)]) == 0
    want = P.unpack_samples(P.SourceModel().take_samples(3 * 128))[:300]   # 2 requests
    assert out.read_bytes() == want and set(want) == {0, 1}
    link.device.entropy["entropy_state"] = EntropyStatus.FAILED           # given all the same
    assert main(["entropy", "--port", "model", "--raw", "8", "-o", str(out)]) == 0
    plain = P.ModelLink(P.DeviceInfo(entropy=True))
    monkeypatch.setattr(links, "open_link", lambda *args, **kwargs: plain)
    refused = tmp_path / "none.bin"
    assert main(["entropy", "--port", "model", "--raw", "8", "-o", str(refused)]) == 1
    assert "UNKNOWN_COMMAND" in capsys.readouterr().err and not refused.exists()


def test_raw_samples_are_a_build_option(tmp_path):
    """``entropy_raw`` is an option of the uart appliance in the design table (what ``aes-fpga
    build --entropy-raw`` builds), off by default, refused for other designs."""
    from amaranth.hdl import Fragment

    from aes_fpga.designs.table import DesignOptions
    from aes_fpga.flow.build import build

    for raw in (False, True):
        options = DesignOptions(entropy=True, entropy_raw=raw).appliance_entropy()
        Fragment.get(options.pop("entropy"), None)          # (made, so elaborated)
        assert options == ({"entropy_raw": True} if raw else {})
    with pytest.raises(ValueError, match=r"^entropy_raw \(--entropy-raw\): design selftest"):
        build("ulx3s-85", design="selftest", entropy_raw=True, dry_run=True,
              build_root=tmp_path, progress=lambda line: None)
    with pytest.raises(ValueError, match="entropy_raw"):
        P.DeviceInfo(entropy_raw=True)


# --------------------------------------------------------------------------------------------
# The Ethernet appliance
# --------------------------------------------------------------------------------------------

class SteppedLink:
    """A byte link (``write``, ``read_until``, ``close``: what
    :class:`~aes_fpga.sim.ethbridge.FrameLink` uses) to ``dut``'s ``rx`` and ``tx`` byte
    streams in Amaranth's simulator, run in the caller's thread: the simulation advances only
    while a read waits, by the cycles the answer takes (the link of
    :func:`~aes_fpga.sim.cxxsim.open_device` runs its thread in bursts of cycles, whether or
    not a host waits), so a run is the same every time."""

    def __init__(self, dut, *, max_cycles=20_000):
        self.dut, self.max_cycles = dut, max_cycles
        self.inbox, self.out, self.cycles = bytearray(), bytearray(), 0
        self.sim = Simulator(dut)
        self.sim.add_clock(1e-6)
        self.sim.add_testbench(self.bench, background=True)

    async def bench(self, ctx):
        dut = self.dut
        ctx.set(dut.tx.ready, 1)
        while True:
            ctx.set(dut.rx.valid, bool(self.inbox))
            if self.inbox:
                ctx.set(dut.rx.payload, self.inbox[0])
            rx_fire = bool(self.inbox) and ctx.get(dut.rx.ready)
            tx_fire, byte = ctx.get(dut.tx.valid), ctx.get(dut.tx.payload)
            await ctx.tick()
            self.cycles += 1
            if rx_fire:
                del self.inbox[0]
            if tx_fire:
                self.out.append(byte)

    def write(self, data):
        self.inbox += data

    def read_until(self, delimiter=b"\0", timeout=None):
        """The bytes up to and including ``delimiter``, the simulation advanced until they are
        out, for at most ``max_cycles`` cycles (then the bytes that came; ``timeout``, in
        seconds, is not used)."""
        stop = self.cycles + self.max_cycles
        while delimiter not in self.out and self.cycles < stop:
            self.sim.advance()
        data, self.out = split_through(self.out, delimiter)
        return data

    def close(self):
        pass


def test_ethernet_appliance_serves_random():
    """The whole Ethernet appliance with an entropy source (MII, simulated with Amaranth's
    simulator), through the UDP host driver: ``INFO`` reports the source, ``RANDOM`` is
    refused in the start-up and then served (its first word the source's first), ``STATS`` has
    the transport's values (the PHY's link unknown: no MDIO) and then the source's."""
    from aes_fpga.appliance.gateware.eth_appliance import EthernetAppliance
    from aes_fpga.appliance.udp_client import UdpDevice
    from aes_fpga.sim import ethbridge as bridge

    noise = NoiseModel(seed=3)
    dut = bridge.MiiBridge(EthernetAppliance(
        mac=bridge.SIM_MAC, ip=bridge.SIM_IP, udp_port=bridge.SIM_PORT, key_slots=1,
        key_sizes=(128,), entropy=EntropySource(model=noise)))
    info = dut.appliance.info
    link = bridge.SimUdpLink(bridge.FrameLink(SteppedLink(dut)))
    with UdpDevice(link, timeout=30, retries=0) as dev:
        with pytest.raises(P.EntropyUnavailable):
            dev.request(Command.RANDOM, P.build_random_request(1))
        assert dev.info() == info and info.entropy and not info.entropy_raw
        for _ in range(40):
            transport, entropy, _ = P.split_stats(info, dev.stats())
            if entropy["entropy_state"] == EntropyStatus.OK:
                break
        assert entropy == {"entropy_state": EntropyStatus.OK, "entropy_rct_failures": 0,
                           "entropy_apt_failures": 0}
        assert len(transport) == len(P.UDP_COUNTERS)
        assert transport[P.UDP_COUNTERS.index("phy_link")] == 0xFFFF
        # (One word: the engine's words in a row, each new, are
        # test_engine_random_start_up_served_and_failure's.)
        words = dev.random(1)
    assert len(words) == 16
    # The first word is the source's first, whoever takes it when: the same source alone
    # (its words taken at once) gives it too.
    _, alone = run_source(EntropySource(model=noise), 1800)
    assert words == aes_model.to_bytes(alone[0][1])
