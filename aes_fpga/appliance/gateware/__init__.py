"""The appliance in gateware: the layers between a transport's byte streams and the core.

:mod:`.engine` holds :class:`~.engine.ProtocolEngine` (byte stream in, byte stream out, the
protocol of :mod:`aes_fpga.appliance.spec` and the core inside); :mod:`.uart` is the serial-port
transport (UART PHY, receive FIFO, RTS/CTS) around it.
"""
