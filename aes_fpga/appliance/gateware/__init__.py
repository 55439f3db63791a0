"""The appliance in gateware: the layers between a transport's byte streams and the core.

One module a layer, bottom up: :mod:`.cobs` (COBS decoder and encoder), :mod:`.check` (frame
check: receive ring, CRC-32, header), :mod:`.executor` (the commands, the mode engine and the
core; one handler a command in :mod:`.handlers`), :mod:`.reply` (reply builder);
:mod:`.engine` composes them into :class:`~.engine.ProtocolEngine` (byte stream in, byte
stream out); :mod:`.uart` is the serial-port transport (UART PHY, receive FIFO, RTS/CTS)
around it; :mod:`.eth` is an Ethernet/IPv4/UDP stack and :mod:`.eth_appliance` the network
transport that puts the layers behind it.
"""
