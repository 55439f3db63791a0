"""The network transport: an Ethernet/IPv4/UDP stack in gateware, one module a layer, bottom
up: :mod:`.phy` (MII, RMII) and :mod:`.rgmii` (RGMII), :mod:`.mac` (frame receive and
transmit), :mod:`.ethernet` (header, dispatch by type), :mod:`.arp`, :mod:`.ipv4`, :mod:`.icmp`
(echo), :mod:`.udp` (one port); :mod:`.common` holds the stream layouts, header tables and the
packet FIFO they share, and :mod:`.stack` composes them into :class:`~.stack.EthernetStack`.
"""
