"""Host-link front ends: gateware that carries bytes between a host and the designs.

:mod:`.uart` is the serial-port PHY: an 8N1 transmitter and receiver with byte streams and
optional RTS/CTS flow control. :mod:`.engine` is the appliance's protocol engine: byte streams
in and out, the :mod:`aes_fpga.protocol` frames, the modes and the core inside.
"""

from .engine import CobsEncoder, ProtocolEngine
from .uart import RX_LAYOUT, UARTConfig, UARTRx, UARTTx, uart_divider

__all__ = ["UARTConfig", "UARTTx", "UARTRx", "RX_LAYOUT", "uart_divider", "ProtocolEngine",
           "CobsEncoder"]
