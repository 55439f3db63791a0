# amaranth: UnusedElaboratable=no
"""The appliance on the simulated serial line: no byte lost under a host sending at full rate
(RTS/CTS flow control, or the protocol's window), and the link-efficiency benchmark.

The tests that run the UART appliance's compiled simulator (about 20 s of g++ with empty
caches, and a simulator no other test needs) run with -m slow. The default run holds the same
appliance on the serial line in Amaranth's simulator (tests/test_design_uart.py), RTS and CTS
at the UART's own ports (tests/test_frontend_uart.py), the host's window over the other
simulated links (tests/test_host.py, tests/test_udp_host.py), and the bench's options here."""

import json

import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from aes_fpga import appliance as P
from aes_fpga.appliance.client import Device
from aes_fpga.appliance.gateware.uart import UartAppliance
from aes_fpga.cli import main
from aes_fpga.cores import DrabLocus
from aes_fpga.sim.cxxsim import open_device
from aes_fpga.sim.link import SimLink
from aes_fpga.sim.linkbench import SerialLine, bench_uart

CLK, BAUD = 16e6, 2e6          # 8 clocks per bit: a short simulation
KEY, IV = bytes(range(16)), bytes(range(100, 116))


def appliance(**kwargs):
    """The UART appliance as :func:`bench_uart` builds it at this clock and baud (so the
    tests with the default receive FIFO share one compiled simulator with it)."""
    return UartAppliance(DrabLocus(key_sizes=(128,), key_slots=1, tag_width=0), clk_freq=CLK,
                         baud=BAUD, heartbeat_cycles=1 << 20, **kwargs)


def full_rate_session(dev, messages=5, infos=0, config=None):
    """Every request at once, without waiting for any reply: LOAD_KEY, then ``messages``
    largest PROCESS chunks, then ``infos`` INFO requests (whose replies are four times their
    size, so the device's answers fall behind the host), on the serial line with ``config``.
    Returns (what the device sent, what it should have sent)."""
    model = P.DeviceModel(dev.info)
    data = bytes(range(256)) * 4 * messages
    payloads = P.build_process_requests(0, P.Op.ENCRYPT, P.Mode.CTR, data,
                                        iv=IV, chunk_size=1024)
    stream = P.encode_frame(P.Command.LOAD_KEY, 1, P.build_load_key_request(0, KEY))
    stream += b"".join(P.encode_frame(P.Command.PROCESS, 2 + n, p)
                       for n, p in enumerate(payloads))
    stream += b"".join(P.encode_frame(P.Command.INFO, 100 + n) for n in range(infos))
    expected = model.feed(stream)
    with open_device(SerialLine(dev), config=config, progress=lambda line: None) as link:
        link.write(stream)
        # Everything the device sends until it falls quiet: no read timeout to wait out when
        # bytes were lost, and anything beyond what is expected is seen too.
        got = link.drain(timeout=300)
    return got, expected


@pytest.mark.slow
def test_rts_cts_keeps_every_byte_of_a_full_rate_host():
    """A 64-byte receive FIFO (window 1) and a host that sends six large frames and then
    100 INFO requests back to back: the device stops the host with RTS and answers every
    frame exactly. A compiled simulator of its own (about 20 s of g++), shared only with the
    test below."""
    dev = appliance(rx_buffer=64, flow_control=True)
    assert dev.info.window == 1
    got, expected = full_rate_session(dev, infos=100)
    assert got == expected


@pytest.mark.slow
def test_without_flow_control_a_host_over_its_window_loses_bytes():
    """The same host ignoring the device's RTS (the same simulator, its host set to
    ``HOST_IGNORES_RTS``): the INFO replies are longer than the requests, so the device falls
    behind, its buffers fill and the 64-byte FIFO overflows: frames are lost (which is why
    hosts keep to the window). Shows the test above can fail. (Large PROCESS chunks alone no
    longer overflow it: the engine takes the next frame while it answers.)"""
    dev = appliance(rx_buffer=64, flow_control=True)
    got, expected = full_rate_session(dev, infos=100, config=SerialLine.HOST_IGNORES_RTS)
    assert len(got) < len(expected)


@pytest.mark.slow
def test_host_keeps_to_the_window_without_flow_control():
    """The host pipelines up to the window (4 with the 4 KiB FIFO): nothing is lost."""
    data = bytes(range(256)) * 24           # 6 KiB: 6 chunks
    link = SimLink(SerialLine(appliance()), progress=lambda line: None)
    with Device(link, timeout=120) as dev:
        assert dev.info().window == 4
        dev.load_key(0, KEY)
        out = dev.process(0, P.Op.ENCRYPT, P.Mode.CTR, data, iv=IV)
    ctx = Cipher(algorithms.AES(KEY), modes.CTR(IV)).encryptor()
    assert out == ctx.update(data) + ctx.finalize()
    # Frames 0 and 1 are INFO and LOAD_KEY; the PROCESS chunks are frames 2 .. 7. The host
    # did not wait for replies: the chunks follow each other on the line without a gap (one
    # frame time apart), and each next chunk was on its way before the previous reply ended.
    starts, ends = link.timing.starts, link.timing.ends
    assert len(starts) == len(ends) == 8
    frame_cycles = (P.MAX_ENCODED_FRAME + 1) * 10 * CLK / BAUD   # with its delimiter
    assert all(b - a <= frame_cycles for a, b in zip(starts[2:-1], starts[3:], strict=True))
    assert all(starts[n + 1] < ends[n] for n in range(2, 7))


@pytest.mark.slow
def test_bench_uart_figures():
    r = bench_uart(baud=BAUD, clk_freq=CLK, size=4096, progress=lambda line: None)
    assert r["checked_with"] == "cryptography"
    assert r["window"] == 4 and r["chunks"] == 4
    # Four chunks: the line carries five frame times (the last reply comes after the last
    # request), and each frame has about 2 % framing overhead: 4 / 5 * 0.98.
    assert 0.7 < r["efficiency"] < 4 / 5
    assert r["cycles"] == pytest.approx(r["bytes"] / r["efficiency"] / (BAUD / 10) * CLK)


@pytest.mark.slow
def test_bench_uart_cli_json(capsys):
    rc = main(["bench", "--design", "uart", "--key-sizes", "128", "--tag-width", "0",
               "--size", "1024", "--baud", "2000000", "--clock-mhz", "16", "--json"])
    assert rc == 0
    report = json.loads(capsys.readouterr().out)
    (run,) = report["serial_line"]
    assert run["baud"] == 2_000_000 and run["bytes"] == 1024 and run["window"] == 4
    assert 0 < run["efficiency"] < 1
    assert report["sim_port"]["bytes"] == 1024 and report["sim_port"]["wall_s"] > 0


def test_bench_uart_cli_refuses_impossible_baud(capsys):
    rc = main(["bench", "--design", "uart", "--baud", "20000000"])
    assert rc == 2
    assert "baud: 20000000" in capsys.readouterr().err


def test_rx_buffer_range():
    with pytest.raises(ValueError, match="rx_buffer: 16 bytes is out of range"):
        appliance(rx_buffer=16)


def test_check_falls_back_to_the_model_without_cryptography(monkeypatch):
    import sys

    from aes_fpga.sim.linkbench import check_ctr
    from aes_fpga.sim.traffic import WrongResult
    data = bytes(range(40))
    ctx = Cipher(algorithms.AES(KEY), modes.CTR(b"\xff" * 16)).encryptor()
    good = ctx.update(data) + ctx.finalize()
    assert check_ctr(good, KEY, b"\xff" * 16, data) == "cryptography"
    monkeypatch.setitem(sys.modules, "cryptography.hazmat.primitives.ciphers", None)
    assert check_ctr(good, KEY, b"\xff" * 16, data) == "aes_fpga.model"
    with pytest.raises(WrongResult, match=r"differs from AES-CTR \(aes_fpga.model\)"):
        check_ctr(good[:-1] + bytes([good[-1] ^ 1]), KEY, b"\xff" * 16, data)


@pytest.mark.slow
def test_bench_uart_gcm_reaches_its_target(capsys):
    """GCM through the UART appliance built with it (``aes-fpga bench --design uart --mode
    gcm``: 100 MHz, 3 Mbaud, 64 KiB; a simulator of its own, about 40 s to build and a minute
    to run): at least 0.96 of baud / 10, the ciphertext and tag checked against AESGCM."""
    assert main(["bench", "--design", "uart", "--mode", "gcm", "--baud", "3000000",
                 "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["mode"] == "gcm" and report["sim_port"] is None
    (r,) = report["serial_line"]
    assert r["checked_with"] == "cryptography" and r["mode"] == "gcm" and r["window"] == 4
    assert r["efficiency"] >= 0.96
