"""The serial-port AES appliance: UART receiver -> protocol engine -> UART transmitter."""

from amaranth.hdl import Module, Signal
from amaranth.lib import fifo, wiring
from amaranth.lib.wiring import In, Out

from ..frontends.engine import ProtocolEngine
from ..frontends.uart import UARTRx, UARTTx, uart_divider

__all__ = ["UartAppliance"]


class UartAppliance(wiring.Component):
    """The appliance on a serial line: 8N1 at ``baud``, the :mod:`aes_fpga.protocol` frames.

    Ports: ``uart_rx`` (from the host, idle high), ``uart_tx`` (to the host), and status
    outputs for LEDs: ``heartbeat`` (toggles every ``heartbeat_cycles``), ``rx_activity`` and
    ``tx_activity`` (stretched to be visible). A 32-byte FIFO sits between the receiver and the
    engine, so bytes arriving while the engine finishes a reply are kept. A byte received with a
    framing error is passed on as received: the frame's CRC rejects it.

    Parameters
    ----------
    core
        The core (common interface) inside the engine.
    clk_freq : float
        Clock frequency in Hz.
    baud : float
        Line rate; checked at construction (see :func:`aes_fpga.frontends.uart.uart_divider`).
    heartbeat_cycles : int
        Cycles between heartbeat toggles.
    """

    def __init__(self, core, *, clk_freq, baud=3_000_000, heartbeat_cycles=50_000_000):
        # Fails here, naming the parameter and the nearest rate, when the clock cannot make it.
        self.divider = uart_divider(clk_freq, baud)
        self.core = core
        self.clk_freq = clk_freq
        self.baud = baud
        self.heartbeat_cycles = heartbeat_cycles
        super().__init__({
            "uart_rx": In(1, init=1), "uart_tx": Out(1, init=1),
            "heartbeat": Out(1), "rx_activity": Out(1), "tx_activity": Out(1),
        })

    @property
    def status_leds(self):
        """Signals for the board's status LEDs, most important first."""
        return [self.heartbeat, self.rx_activity, self.tx_activity]

    def elaborate(self, platform):
        m = Module()
        m.submodules.rx = rx = UARTRx(self.clk_freq, self.baud)
        m.submodules.tx = tx = UARTTx(self.clk_freq, self.baud)
        m.submodules.rx_fifo = rx_fifo = fifo.SyncFIFOBuffered(width=8, depth=32)
        m.submodules.engine = engine = ProtocolEngine(core=self.core,
                                                      key_slots=self.core.key_slots)
        m.d.comb += [
            rx.rx.eq(self.uart_rx),
            self.uart_tx.eq(tx.tx),
            rx_fifo.w_data.eq(rx.o.payload.data),
            rx_fifo.w_en.eq(rx.o.valid),
            rx.o.ready.eq(rx_fifo.w_rdy),
            engine.rx.payload.eq(rx_fifo.r_data),
            engine.rx.valid.eq(rx_fifo.r_rdy),
            rx_fifo.r_en.eq(engine.rx.ready),
        ]
        wiring.connect(m, engine.tx, tx.i)

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
