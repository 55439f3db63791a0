"""The whole network stack, from MII pins to one UDP port's payload streams."""

from amaranth.hdl import Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .arp import ArpResponder
from .common import BYTES, Arbiter, check_ip, check_mac, check_port
from .ethernet import TX_LAYOUT, EthRx, EthTx
from .icmp import IcmpEcho
from .ipv4 import IP_TX_LAYOUT, IPv4Rx, IPv4Tx
from .mac import MACRx, MACTx
from .phy import MII
from .udp import UdpPort

__all__ = ["EthernetStack", "IPStack", "COUNTERS"]

#: The stack's drop counters: (port name, layer attribute, that layer's counter).
COUNTERS = [
    *((f"mac_{c}", "mac_rx", c) for c in ("runts", "giants", "bad_fcs", "not_ours",
                                           "overflows")),
    ("eth_other_types", "eth_rx", "other_types"),
    ("arp_ignored", "arp", "ignored"),
    *((f"ip_{c}", "ip_rx", c) for c in ("options", "fragments", "bad_checksum", "not_ours",
                                         "other_protocols", "truncated")),
    ("icmp_bad_checksum", "icmp", "bad_checksum"), ("icmp_ignored", "icmp", "ignored"),
    *((f"udp_{c}", "udp", c) for c in ("bad_checksum", "bad_length", "other_ports")),
]


class IPStack(wiring.Component):
    """The layers above the MAC: Ethernet header, ARP responder, IPv4, ICMP echo and one UDP
    port, between good frames (``i``, FCS stripped, as :class:`~.mac.MACRx` delivers them)
    and frames to send (``o``, for :class:`~.mac.MACTx`).

    ``rx`` gives the payload of each good datagram sent to ``udp_port``; each payload taken
    on ``tx`` goes back to the sender of the last request read from ``rx``. ARP requests for
    ``ip`` and ICMP echo requests are answered without the application. Every drop reason is
    counted on a 16-bit port (:data:`COUNTERS` less the MAC's).
    """

    def __init__(self, *, mac, ip, udp_port, ttl=64):
        self.mac = check_mac(mac)
        self.ip = check_ip(ip)
        self.udp_port = check_port(udp_port, "udp_port")
        self.ttl = ttl
        super().__init__({
            "i": In(stream.Signature(BYTES)),
            "o": Out(stream.Signature(BYTES)),
            "rx": Out(stream.Signature(BYTES)),
            "tx": In(stream.Signature(BYTES)),
            **{name: Out(16) for name, layer, _ in COUNTERS if not layer.startswith("mac")},
        })

    def elaborate(self, platform):
        m = Module()
        layers = dict(
            eth_rx=EthRx(), eth_tx=EthTx(self.mac), eth_arb=Arbiter(TX_LAYOUT, 2),
            arp=ArpResponder(self.mac, self.ip),
            ip_rx=IPv4Rx(self.ip), ip_tx=IPv4Tx(self.ip, ttl=self.ttl),
            ip_arb=Arbiter(IP_TX_LAYOUT, 2),
            icmp=IcmpEcho(), udp=UdpPort(self.ip, self.udp_port),
        )
        for name, layer in layers.items():
            m.submodules[name] = layer
        L = type("Layers", (), layers)  # noqa: N806 - attribute access to the layers
        # Receive, bottom up.
        wiring.connect(m, wiring.flipped(self.i), L.eth_rx.i)
        wiring.connect(m, L.eth_rx.arp, L.arp.i)
        wiring.connect(m, L.eth_rx.ip, L.ip_rx.i)
        wiring.connect(m, L.ip_rx.icmp, L.icmp.i)
        wiring.connect(m, L.ip_rx.udp, L.udp.i)
        wiring.connect(m, L.udp.rx, wiring.flipped(self.rx))
        # Transmit, top down.
        wiring.connect(m, wiring.flipped(self.tx), L.udp.tx)
        wiring.connect(m, L.icmp.o, L.ip_arb.i0)
        wiring.connect(m, L.udp.o, L.ip_arb.i1)
        wiring.connect(m, L.ip_arb.o, L.ip_tx.i)
        wiring.connect(m, L.arp.o, L.eth_arb.i0)
        wiring.connect(m, L.ip_tx.o, L.eth_arb.i1)
        wiring.connect(m, L.eth_arb.o, L.eth_tx.i)
        wiring.connect(m, L.eth_tx.o, wiring.flipped(self.o))
        for port, layer, counter in COUNTERS:
            if not layer.startswith("mac"):
                m.d.comb += getattr(self, port).eq(getattr(layers[layer], counter))
        return m


class EthernetStack(wiring.Component):
    """The MII PHY, the MAC and :class:`IPStack`: from MII pins to one UDP port's payload
    streams.

    The MII pins (``rx_clk``, ``rxd``, ``rx_dv``, ``tx_clk``, ``txd``, ``tx_en``) face the PHY;
    ``rx``, ``tx`` and the counters (:data:`COUNTERS`) are :class:`IPStack`'s and the MAC's.

    Parameters
    ----------
    mac : int or str
        Our unicast MAC address.
    ip : int or str
        Our IPv4 address.
    udp_port : int
        The UDP port served (1..65535).
    ttl : int
        The time to live of the packets sent.
    rx_domain, tx_domain : str
        The names of the MII clock domains (made from ``rx_clk`` and ``tx_clk``).
    """

    def __init__(self, *, mac, ip, udp_port, ttl=64, rx_domain="eth_rx", tx_domain="eth_tx"):
        self.mac = check_mac(mac)
        self.ip = check_ip(ip)
        self.udp_port = check_port(udp_port, "udp_port")
        self.ttl = ttl
        self.domains = (rx_domain, tx_domain)
        super().__init__({
            "rx_clk": In(1), "rxd": In(4), "rx_dv": In(1),
            "tx_clk": In(1), "txd": Out(4), "tx_en": Out(1),
            "rx": Out(stream.Signature(BYTES)),
            "tx": In(stream.Signature(BYTES)),
            **{name: Out(16) for name, _, _ in COUNTERS},
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.phy = phy = MII(rx_domain=self.domains[0], tx_domain=self.domains[1])
        m.submodules.mac_rx = mac_rx = MACRx(self.mac)
        m.submodules.mac_tx = mac_tx = MACTx()
        m.submodules.ip = ip = IPStack(mac=self.mac, ip=self.ip, udp_port=self.udp_port,
                                       ttl=self.ttl)
        m.d.comb += [phy.rx_clk.eq(self.rx_clk), phy.rxd.eq(self.rxd), phy.rx_dv.eq(self.rx_dv),
                     phy.tx_clk.eq(self.tx_clk), self.txd.eq(phy.txd), self.tx_en.eq(phy.tx_en)]
        wiring.connect(m, phy.rx, mac_rx.i)
        wiring.connect(m, mac_rx.o, ip.i)
        wiring.connect(m, ip.o, mac_tx.i)
        wiring.connect(m, mac_tx.o, phy.tx)
        wiring.connect(m, ip.rx, wiring.flipped(self.rx))
        wiring.connect(m, wiring.flipped(self.tx), ip.tx)
        for port, layer, counter in COUNTERS:
            source = mac_rx if layer == "mac_rx" else ip
            m.d.comb += getattr(self, port).eq(getattr(source, counter if layer == "mac_rx"
                                                       else port))
        return m
