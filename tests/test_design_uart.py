# amaranth: UnusedElaboratable=no
"""The UART appliance end to end, with the serial line in the loop: host-side UART PHYs send
protocol frames over the simulated line and the replies equal the reference device's."""


import pytest

from aes_fpga import appliance
from aes_fpga.appliance.gateware.uart import UartAppliance
from aes_fpga.cores import DrabLocus
from aes_fpga.sim.cxxsim import open_device
from aes_fpga.sim.linkbench import SerialLine

CLK, BAUD = 16e6, 2e6          # 8 clocks per bit: a short simulation


def test_requests_over_the_serial_line():
    # The configuration bench_uart simulates at this clock and baud: one compiled simulator
    # serves this test and the link benchmark's.
    dev = UartAppliance(DrabLocus(key_sizes=(128,), key_slots=1, tag_width=0), clk_freq=CLK,
                        baud=BAUD, heartbeat_cycles=1 << 20)
    assert dev.info.window == 4         # the default 4 KiB receive FIFO holds three frames
    model = appliance.DeviceModel(dev.info)
    key = bytes(range(16))
    requests = [
        appliance.encode_frame(appliance.Command.INFO, 1, b""),
        appliance.encode_frame(appliance.Command.LOAD_KEY, 2,
                              appliance.build_load_key_request(0, key)),
        *[appliance.encode_frame(appliance.Command.PROCESS, 3 + n, p) for n, p in enumerate(
            appliance.build_process_requests(0, appliance.Op.ENCRYPT, appliance.Mode.CTR,
                                            bytes(range(100)), iv=bytes(16), chunk_size=64))],
        b"\x13\x37\x00" + appliance.encode_frame(appliance.Command.INFO, 9, b""),  # garbage
        b"\x13\x37" + appliance.encode_frame(appliance.Command.INFO, 10, b""),  # no delimiter
    ]
    with open_device(SerialLine(dev), progress=lambda line: None) as link:
        for frame in requests:
            expected = model.feed(frame)
            link.write(frame)
            # A frame the device must ignore is not waited for: a reply to it would come
            # before the next one's (or from the drain below) and fail the comparison.
            if expected:
                assert link.read_until(b"\0", timeout=120) == expected, frame.hex()
        # Everything the device sends until it falls quiet: nothing more.
        assert link.drain(timeout=120) == b""


def test_impossible_baud_rejected():
    with pytest.raises(ValueError, match="baud"):
        UartAppliance(DrabLocus(key_sizes=(128,)), clk_freq=10e6, baud=12e6)
