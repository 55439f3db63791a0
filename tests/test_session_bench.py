# amaranth: UnusedElaboratable=no
"""The figures of a secured appliance inside a session (aes_fpga.sim.sessionbench and
``aes-fpga bench --device-key-file``): the handshake's device time and the payload throughput
of CTR records, every reply opened under the session's reply key and checked against
``cryptography``.

The runs compile a secured appliance (CXXRTL): they run with -m slow. The short one shares the
compiled design of tests/test_build_secret_ethernet.py (and its slow tests); the others hold
the appliances to the targets of the session work: at least 0.90 of the 100 Mbit/s line rate
on Ethernet (1 MiB, MII and RMII, no record dropped), 0.95 of baud/10 on the serial
line, the session set up in under 1 ms of device time. They run the commands of the README's
``session-bench`` figures, with the same key, so they share its compiled simulators."""

import json

import pytest

from aes_fpga.cli import main
from aes_fpga.sim.cxxsim import find_cxx
from aes_fpga.sim.sessionbench import bench_ethernet_session

COMPILED = pytest.mark.skipif(find_cxx() is None, reason="no C++ compiler for the simulator")
SECRET = bytes(range(90, 122))
#: The targets: fractions of the line's rate inside a session, and the handshake's device
#: time (OPEN_SESSION and AUTHENTICATE) in microseconds.
ETHERNET_TARGET, UART_TARGET, HANDSHAKE_US = 0.90, 0.95, 1000


@pytest.fixture
def key_file(tmp_path):
    path = tmp_path / "device.key"
    path.write_bytes(SECRET)
    path.chmod(0o600)
    return path


@pytest.mark.parametrize("args,message", [
    (["--design", "core"], "a core has no sessions"),
    (["--design", "ethernet", "--phy", "rgmii"], "--phy: rgmii is not simulated with a device"),
])
def test_the_session_bench_refuses_what_it_cannot_run(capsys, key_file, args, message):
    assert main(["bench", *args, "--device-key-file", str(key_file)]) == 2
    err = capsys.readouterr().err
    assert message in err and SECRET.hex() not in err


def test_the_session_bench_refuses_a_readable_key_file(capsys, key_file):
    key_file.chmod(0o644)
    assert main(["bench", "--design", "ethernet", "--device-key-file", str(key_file)]) == 2
    assert "lets others read it" in capsys.readouterr().err


@pytest.mark.parametrize("options,match", [({"phy": "rgmii"}, "phy"), ({"size": 0}, "size")])
def test_bench_ethernet_session_checks_its_arguments(options, match):
    with pytest.raises(ValueError, match=match):
        bench_ethernet_session(SECRET, **{"size": 16, **options})


@pytest.mark.slow
@COMPILED
def test_a_short_session_on_the_secured_lan_design():
    """Two records through the design of the LAN tests (its main core a compact8: far
    slower than the line, so only the handshake is held to its target here)."""
    from test_build_secret_ethernet import SECRET as LAN_SECRET
    from test_build_secret_ethernet import cache_key, secured_appliance
    r = bench_ethernet_session(LAN_SECRET, 2 * 1408, make=secured_appliance,
                               cache_key=cache_key())
    assert r["records"] == r["replies"] == 2 and r["dropped"] == 0
    assert 0 < r["payload_fraction_of_line_rate"] < r["ceiling_fraction"] < 1
    assert 0 < r["handshake_device_cycles"] < sum(r["handshake_round_trip_cycles"])
    assert r["handshake_device_us"] < HANDSHAKE_US


def ethernet_session(capsys, key_file, phy):
    assert main(["bench", "--design", "ethernet", "--phy", phy, "--device-key-file",
                 str(key_file), "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["session"] and r["bytes"] == 1 << 20 and r["records"] == 745
    assert r["handshake_device_us"] < HANDSHAKE_US
    # No record answered twice (each request is on the line once) ...
    assert r["duplicates"] == 0
    # ... and nothing faster than the requests' frames can come in.
    assert r["payload_fraction_of_line_rate"] < r["ceiling_fraction"]
    return r


@pytest.mark.slow
@COMPILED
def test_the_rmii_appliance_keeps_the_line_rate_inside_a_session(capsys, key_file):
    """RMII: the appliance at 50 MHz, four cycles a line byte. (Its figure once lay above the
    wire-format ceiling: the MAC's receive buffer delivered a frame twice when one ended on its
    pointers' wrap, the record was answered twice from the kept replies, and the bench counted
    the second reply as data and stopped before the last records' replies.)"""
    r = ethernet_session(capsys, key_file, "rmii")
    assert r["dropped"] == 0
    assert r["payload_fraction_of_line_rate"] >= ETHERNET_TARGET


@pytest.mark.slow
@COMPILED
def test_the_mii_appliance_keeps_the_line_rate_inside_a_session(capsys, key_file):
    """MII: the appliance at 25 MHz, two cycles a line byte. A record costs the executor its
    open and its inner request; the reply is sealed on a cipher of its own while the next
    record is opened (aes_fpga.appliance.gateware.session_records), so the records keep up
    with the line and none of a burst queued at once is dropped."""
    r = ethernet_session(capsys, key_file, "mii")
    assert r["dropped"] == 0
    assert r["payload_fraction_of_line_rate"] >= ETHERNET_TARGET


@pytest.mark.slow
@COMPILED
def test_the_uart_appliance_inside_a_session_reaches_the_target(capsys, key_file):
    """The serial line: the bench's message inside a session (``UART_SESSION_SIZE``, 256 KiB)
    in records of 992 bytes (a 1024-byte frame's data less the record's 29 bytes). The wire
    format's ceiling (the message's bytes over the bytes sent) is then about 0.955, and the
    time is the requests' on the line plus the last reply's (``n`` records, about ``n + 1``
    frames): the device costs nothing beyond that (within 1 %), and at this length the target
    (0.95 of baud/10) is reached."""
    from aes_fpga.commands.bench import UART_SESSION_SIZE
    assert main(["bench", "--design", "uart", "--baud", "3000000", "--device-key-file",
                 str(key_file), "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["session"] and r["sim_port"] is None
    s = r["serial_line"][0]
    assert s["bytes"] == UART_SESSION_SIZE
    ceiling = s["bytes"] / s["line_bytes_to_device"]
    assert UART_TARGET < ceiling
    assert s["efficiency"] >= 0.99 * ceiling * s["chunks"] / (s["chunks"] + 1)
    assert s["efficiency"] >= UART_TARGET
