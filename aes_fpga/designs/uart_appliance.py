"""The serial-port AES appliance: UART receiver -> protocol engine -> UART transmitter."""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import fifo, wiring
from amaranth.lib.wiring import In, Out

from .. import protocol
from ..frontends.engine import ProtocolEngine
from ..frontends.uart import UARTRx, UARTTx, uart_divider

__all__ = ["UartAppliance"]

# Bytes a host may still send after the device withdraws clear-to-send (USB-serial bridges
# finish the byte in flight and may have a few more queued).
CTS_SLACK = 16


class UartAppliance(wiring.Component):
    """The appliance on a serial line: 8N1 at ``baud``, the :mod:`aes_fpga.protocol` frames.

    Ports: ``uart_rx`` (from the host, idle high), ``uart_tx`` (to the host), and status
    outputs for LEDs: ``heartbeat`` (toggles every ``heartbeat_cycles``), ``rx_activity`` and
    ``tx_activity`` (stretched to be visible). With ``flow_control``, RTS/CTS hardware flow
    control, active low as on the wire: ``uart_rts_n`` (out, to the host's CTS#) is high (stop)
    while fewer than 16 bytes of the receive FIFO are free, room for what a USB-serial bridge
    still sends after it sees the line rise; ``uart_cts_n`` (in, from the host's RTS#) high
    stops the transmitter before its next byte (see :class:`~aes_fpga.frontends.UARTTx`).

    Receive FIFO: ``rx_buffer`` bytes (one 4 KiB block RAM by default) between the receiver and
    the engine keep what arrives while the engine works on and answers a request. ``INFO``
    reports the window this allows (the protocol's *Pipelining*): ``1 + rx_buffer //
    MAX_ENCODED_FRAME`` requests unanswered (4 for 4096 bytes), so a host that keeps to it
    loses no byte even without flow control, and keeps the line busy in both directions.

    A character received with a framing error (stop bit low, a break among them) is passed on
    as a frame delimiter, ``0x00``: the frame it interrupts ends there and is refused like any
    truncated frame, and so is the rest of it up to its own delimiter; the next frame is
    answered. A damaged character never reaches the engine as data.

    Parameters
    ----------
    core
        The core (common interface) inside the engine.
    clk_freq : float
        Clock frequency in Hz.
    baud : float
        Line rate; checked at construction (see :func:`aes_fpga.frontends.uart.uart_divider`).
    rx_buffer : int
        Receive FIFO depth in bytes, 32 to 65536.
    flow_control : bool
        Add the RTS/CTS ports.
    heartbeat_cycles : int
        Cycles between heartbeat toggles.
    build_id : int
        Reported by ``INFO``.

    Attributes
    ----------
    info : protocol.DeviceInfo
        What ``INFO`` reports (with the window).
    """

    def __init__(self, core, *, clk_freq, baud=3_000_000, rx_buffer=4096, flow_control=False,
                 heartbeat_cycles=50_000_000, build_id=0):
        # Fails here, naming the parameter and the nearest rate, when the clock cannot make it.
        self.divider = uart_divider(clk_freq, baud)
        if not isinstance(rx_buffer, int) or not 32 <= rx_buffer <= 65536:
            raise ValueError(f"rx_buffer: {rx_buffer!r} bytes is out of range; allowed 32 .. "
                             f"65536 ({protocol.MAX_ENCODED_FRAME} or more for a window above "
                             f"1)")
        self.core = core
        self.clk_freq = clk_freq
        self.baud = baud
        self.rx_buffer = rx_buffer
        self.flow_control = bool(flow_control)
        self.heartbeat_cycles = heartbeat_cycles
        window = min(255, 1 + rx_buffer // protocol.MAX_ENCODED_FRAME)
        self.engine = ProtocolEngine(core=core, key_slots=core.key_slots, window=window,
                                     build_id=build_id)
        self.info = self.engine.info
        members = {
            "uart_rx": In(1, init=1), "uart_tx": Out(1, init=1),
            "heartbeat": Out(1), "rx_activity": Out(1), "tx_activity": Out(1),
        }
        if self.flow_control:
            members.update({"uart_rts_n": Out(1, init=1), "uart_cts_n": In(1)})
        super().__init__(members)

    @property
    def status_leds(self):
        """Signals for the board's status LEDs, most important first."""
        return [self.heartbeat, self.rx_activity, self.tx_activity]

    def elaborate(self, platform):
        m = Module()
        m.submodules.rx = rx = UARTRx(self.clk_freq, self.baud)
        m.submodules.tx = tx = UARTTx(self.clk_freq, self.baud, flow_control=self.flow_control)
        m.submodules.rx_fifo = rx_fifo = fifo.SyncFIFOBuffered(width=8, depth=self.rx_buffer)
        m.submodules.engine = engine = self.engine
        m.d.comb += [
            rx.rx.eq(self.uart_rx),
            self.uart_tx.eq(tx.tx),
            # A character with a framing error (its stop bit read low) becomes a frame
            # delimiter, as a break does: the frame it was part of ends there.
            rx_fifo.w_data.eq(Mux(rx.o.payload.framing_error, 0, rx.o.payload.data)),
            rx_fifo.w_en.eq(rx.o.valid),
            rx.o.ready.eq(rx_fifo.w_rdy),
            engine.rx.payload.eq(rx_fifo.r_data),
            engine.rx.valid.eq(rx_fifo.r_rdy),
            rx_fifo.r_en.eq(engine.rx.ready),
        ]
        wiring.connect(m, engine.tx, tx.i)
        if self.flow_control:
            m.d.comb += tx.cts_n.eq(self.uart_cts_n)
            m.d.sync += self.uart_rts_n.eq(rx_fifo.level >= self.rx_buffer - CTS_SLACK)

        count = Signal(range(max(self.heartbeat_cycles, 2)))
        with m.If(count == self.heartbeat_cycles - 1):
            m.d.sync += [count.eq(0), self.heartbeat.eq(~self.heartbeat)]
        with m.Else():
            m.d.sync += count.eq(count + 1)
        # Activity LEDs stay lit for 2**22 cycles (~40 ms at 100 MHz) after a byte.
        for name, pulse in (("rx", rx.o.valid & rx.o.ready), ("tx", tx.i.valid & tx.i.ready)):
            timer = Signal(22, name=f"{name}_timer")
            with m.If(pulse):
                m.d.sync += timer.eq(~0)
            with m.Elif(timer != 0):
                m.d.sync += timer.eq(timer - 1)
            m.d.comb += getattr(self, f"{name}_activity").eq(timer != 0)
        return m
