# amaranth: UnusedElaboratable=no
"""The UART appliance end to end, with the serial line in the loop: host-side UART PHYs send
protocol frames over the simulated line and the replies equal the reference device's."""


import pytest
from amaranth.hdl import Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from aes_fpga import protocol
from aes_fpga.cores import DrabLocus
from aes_fpga.cxxsim import open_device
from aes_fpga.designs import UartAppliance
from aes_fpga.frontends import ProtocolEngine, UARTRx, UARTTx

CLK, BAUD = 16e6, 2e6          # 8 clocks per bit: a short simulation


class UartLoop(wiring.Component):
    """Bytes in -> host UART TX -> appliance -> host UART RX -> bytes out."""
    rx: In(stream.Signature(8))
    tx: Out(stream.Signature(8))

    def elaborate(self, platform):
        m = Module()
        m.submodules.host_tx = htx = UARTTx(CLK, BAUD)
        m.submodules.host_rx = hrx = UARTRx(CLK, BAUD)
        m.submodules.dev = dev = UartAppliance(DrabLocus(key_sizes=(128,)), clk_freq=CLK,
                                               baud=BAUD, heartbeat_cycles=1000)
        wiring.connect(m, wiring.flipped(self.rx), htx.i)
        m.d.comb += [dev.uart_rx.eq(htx.tx), hrx.rx.eq(dev.uart_tx),
                     self.tx.payload.eq(hrx.o.payload.data), self.tx.valid.eq(hrx.o.valid),
                     hrx.o.ready.eq(self.tx.ready)]
        return m


def test_requests_over_the_serial_line():
    info = ProtocolEngine(core=DrabLocus(key_sizes=(128,)), key_slots=1).info
    model = protocol.DeviceModel(info)
    key = bytes(range(16))
    requests = [
        protocol.encode_frame(protocol.Command.INFO, 1, b""),
        protocol.encode_frame(protocol.Command.LOAD_KEY, 2,
                              protocol.build_load_key_request(0, key)),
        *[protocol.encode_frame(protocol.Command.PROCESS, 3 + n, p) for n, p in enumerate(
            protocol.build_process_requests(0, protocol.Op.ENCRYPT, protocol.Mode.CTR,
                                            bytes(range(100)), iv=bytes(16), chunk_size=64))],
        b"\x13\x37\x00" + protocol.encode_frame(protocol.Command.INFO, 9, b""),  # garbage
        b"\x13\x37" + protocol.encode_frame(protocol.Command.INFO, 10, b""),  # no delimiter
    ]
    with open_device(UartLoop(), progress=lambda line: None) as link:
        for frame in requests:
            expected = model.feed(frame)
            link.write(frame)
            # a frame the device must ignore gets a short wait, an answered one a long one
            reply = link.read_until(b"\0", timeout=120 if expected else 2)
            assert reply == expected, frame.hex()


def test_impossible_baud_rejected():
    with pytest.raises(ValueError, match="baud"):
        UartAppliance(DrabLocus(key_sizes=(128,)), clk_freq=10e6, baud=12e6)
