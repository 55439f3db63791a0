# amaranth: UnusedElaboratable=no
"""The entropy source in the appliance: ``INFO``'s features bit and the ``STATS`` values (the
source's state and failure counts), in the protocol's host side, the reference device and the
protocol engine's gateware (every reply byte against the reference device's)."""

import pytest

from aes_fpga import appliance as P
from aes_fpga.appliance.spec import Command, EntropyStatus, Mode
from aes_fpga.entropy import EntropySource, EntropyState
from aes_fpga.primitives import NoiseModel
from aes_fpga.sim.cxxsim import open_device


def test_gateware_states_are_the_protocols():
    assert {s.name: s.value for s in EntropyState} == {s.name: s.value for s in EntropyStatus}


def test_info_features_round_trip():
    for entropy in (False, True):
        info = P.DeviceInfo(entropy=entropy)
        reply = P.build_info_reply(info)
        assert reply[-1] == (P.FEATURE_ENTROPY if entropy else 0)
        assert P.parse_info_reply(reply) == info
    # A features bit this version does not define is the device's error, not ignored.
    reply = bytearray(P.build_info_reply(P.DeviceInfo()))
    reply[-1] = 0x08
    with pytest.raises(P.BadReply, match="features"):
        P.parse_info_reply(bytes(reply))
    with pytest.raises(TypeError, match="entropy"):
        P.DeviceInfo(entropy=1)


def stats_of(model):
    reply = P.decode_frame(P.cobs_decode(model.feed(P.encode_frame(Command.STATS, 1))[:-1]))
    return P.parse_stats_reply(reply.payload)


def test_reference_device_stats_order():
    """Transport counters, then the entropy source's three, then GCM's auth_failures."""
    model = P.DeviceModel(P.DeviceInfo(entropy=True, modes=tuple(Mode)))
    model.counters = [7, 8]
    model.auth_failures = 5
    model.entropy.update(entropy_state=EntropyStatus.FAILED, entropy_rct_failures=3)
    counters = stats_of(model)
    assert counters == [7, 8, 2, 3, 0, 5]
    assert P.split_stats(model.info, counters) == (
        [7, 8], {"entropy_state": EntropyStatus.FAILED, "entropy_rct_failures": 3,
                 "entropy_apt_failures": 0}, {"auth_failures": 5})
    # Without the source (or GCM) nothing of it is reported.
    assert stats_of(P.DeviceModel(P.DeviceInfo())) == []
    assert P.split_stats(P.DeviceInfo(), []) == ([], {}, {})
    with pytest.raises(P.BadReply, match="entropy_state"):
        P.split_stats(P.DeviceInfo(entropy=True), [9, 0, 0])
    with pytest.raises(P.BadReply, match="promises"):
        P.split_stats(P.DeviceInfo(entropy=True), [1])


def engine_with(model):
    from aes_fpga.appliance.gateware.engine import ProtocolEngine
    return ProtocolEngine(key_slots=1, key_sizes=(128,), window=1,
                          entropy=EntropySource(model=model))


def send(link, model, command, seq):
    """One request to the simulated engine and the reference device; the reply payload, the
    engine's bytes checked against the model's."""
    frame = P.encode_frame(command, seq)
    want = model.feed(frame)
    link.write(frame)
    got = link.read(len(want), timeout=60)
    assert got.hex() == want.hex()
    return P.decode_frame(P.cobs_decode(got[:-1])).payload


def watch_stats(link, model, until, limit=40):
    """``STATS`` until the engine's source reports ``until``. Each reply is checked byte for
    byte against the reference device's once the reference is told the values the engine
    reported (their order, widths, count and framing are the reference's). The states seen,
    in order, and the last values."""
    seen = []
    for seq in range(100, 100 + limit):
        frame = P.encode_frame(Command.STATS, seq)
        link.write(frame)
        got = link.read_until(b"\0", timeout=60)
        reply = P.decode_frame(P.cobs_decode(got[:-1]))
        transport, entropy, gcm = P.split_stats(model.info, P.parse_stats_reply(reply.payload))
        assert transport == [] and gcm == {}
        model.entropy = entropy
        assert model.feed(frame).hex() == got.hex()
        seen.append(entropy["entropy_state"])
        if seen[-1] == until:
            return seen, entropy
    raise AssertionError(f"the source never reported {until.name}: {seen}")


@pytest.mark.slow
def test_engine_reports_a_healthy_source():
    """(``-m slow``; by default test_entropy_random.py::test_engine_random_start_up_served_
    and_failure checks the engine's ``INFO`` and its ``STATS`` in the start-up and once
    healthy against the reference device.)"""
    dut = engine_with(NoiseModel(seed=11))
    with open_device(dut, engine="pysim", progress=lambda line: None) as link:
        model = P.DeviceModel(dut.info)
        info = P.parse_info_reply(send(link, model, Command.INFO, 1))
        assert info.entropy and info == dut.info
        seen, entropy = watch_stats(link, model, EntropyStatus.OK)
    assert set(seen) <= {EntropyStatus.STARTUP, EntropyStatus.OK}
    assert seen == sorted(seen)              # start-up, then healthy: never back
    assert entropy == {"entropy_state": EntropyStatus.OK, "entropy_rct_failures": 0,
                       "entropy_apt_failures": 0}


@pytest.mark.slow
def test_engine_reports_a_failed_source():
    """(``-m slow``; by default test_entropy_random.py::test_engine_random_start_up_served_
    and_failure checks the engine's ``STATS`` with a failed source, its state and count, and
    test_entropy.py::test_stuck_source_caught_by_rct_within_its_cutoff a source failing in its
    start-up, never healthy.)"""
    dut = engine_with(NoiseModel("stuck", value=1))
    with open_device(dut, engine="pysim", progress=lambda line: None) as link:
        model = P.DeviceModel(dut.info)
        seen, entropy = watch_stats(link, model, EntropyStatus.FAILED)
    assert EntropyStatus.OK not in seen
    assert entropy["entropy_rct_failures"] >= 1 and entropy["entropy_apt_failures"] <= 1


@pytest.mark.parametrize("board,design,cells", [("ulx3s-85", "uart", {"LUT4": 36}),
                                                pytest.param("arty-a7-35", "uart",
                                                             {"LUT1": 32, "LUT2": 4},
                                                             marks=pytest.mark.slow),
                                                pytest.param("ulx3s-85", "selftest",
                                                             {"LUT4": 36},
                                                             marks=pytest.mark.slow)])
def test_board_build_tree_holds_the_rings(board, design, cells, tmp_path):
    """``aes-fpga build --design uart --entropy`` (and ``--design selftest --entropy``; a dry
    run: the build tree without the tools): the board's RTLIL holds every ring stage as its
    vendor's LUT instance. (The Arty's and the selftest's trees with ``-m slow``; by default
    the ULX3S's, and test_entropy_synth.py::test_synthesis_keeps_every_ring[xc7] the rings
    as 7-series LUT instances.)"""
    import re

    from aes_fpga.flow.build import build
    result = build(board, design=design, entropy=True, dry_run=True, build_root=tmp_path,
                   progress=lambda line: None)
    assert result.report["entropy"] is True
    # The ECP5 tree holds RTLIL, the 7-series tree Verilog.
    rtlil = result.build_dir / "top.il"
    if rtlil.exists():
        text = rtlil.read_text()
        cell_re, mark = r"^\s*cell \\{} \\lut\d+$", 'attribute \\ALLOW_COMBINATORIAL_LOOPS "TRUE"'
    else:
        text = (result.build_dir / "top.v").read_text()
        cell_re, mark = r"^\s*{} #\($", '(* ALLOW_COMBINATORIAL_LOOPS = "TRUE" *)'
    for cell, count in cells.items():
        assert len(re.findall(cell_re.format(cell), text, re.M)) == count, cell
    assert text.count(mark) >= 36
    # The tree's own nextpnr-ecp5 command leaves the loops out of its timing analysis.
    script = (result.build_dir / "build_top.sh").read_text()
    assert ("--ignore-loops" in script) == rtlil.exists()


@pytest.mark.slow
def test_ulx3s_uart_bitstream_with_entropy(tmp_path):
    """The uart appliance with the entropy source, around compact8 (AES-128) on the ULX3S 85F
    at 80 MHz as tests/test_build.py's uart bitstream: placed, routed, packed, the clock met.
    nextpnr's timing analysis would stop at the rings' loops; the build tells it to leave them
    out (``--ignore-loops``), and only for this option."""
    from aes_fpga.flow.build import build
    result = build("ulx3s-85", design="uart", core="compact8", clock_mhz=80,
                   core_options={"key_sizes": (128,)}, entropy=True, build_root=tmp_path,
                   progress=lambda line: None)
    r = result.report
    assert r["status"] == "complete", r["stages"]
    assert (result.build_dir / "top.bit").stat().st_size > 100_000
    assert r["timing_met"] and r["fmax_mhz"] >= 80
    assert "--ignore-loops" in r["nextpnr_command"].split()


def test_cli_info_prints_the_sources_state(capsys, monkeypatch):
    """``aes-fpga info`` on a device with an entropy source (the reference device, told its
    source failed) reports the state by name and both counts, and GCM's count after them."""
    import json

    from aes_fpga.appliance import client, links
    from aes_fpga.cli import main

    link = client.ModelLink(P.DeviceInfo(entropy=True, modes=tuple(Mode)))
    link.device.entropy.update(entropy_state=EntropyStatus.FAILED, entropy_rct_failures=3)
    link.device.auth_failures = 2
    monkeypatch.setattr(links, "open_link", lambda *args, **kwargs: link)
    assert main(["info", "--port", "model", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["entropy_state"], report["entropy_rct_failures"],
            report["entropy_apt_failures"], report["auth_failures"]) == ("FAILED", 3, 0, 2)
    assert "drops" not in report
