"""The whole network stack, from MII pins to one UDP port's payload streams."""

from amaranth.hdl import Cat, Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ....stage import PipeStage, skid
from ...addresses import check_ip, check_mac, check_port
from .arp import ArpResponder
from .common import BYTES, Arbiter, SharedPacketFIFO
from .ethernet import EthRx, EthTx
from .icmp import IcmpEcho
from .ipv4 import IPv4Rx, IPv4Tx
from .mac import MACRx, MACTx
from .phy import MII, RMII
from .rgmii import RGMII
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


def pipe(m, name, source, sink):
    """Connect ``source`` to ``sink`` through a :class:`~aes_fpga.stage.PipeStage` (valid and
    data registered, ``ready`` one LUT): where the ready path behind it is short, the
    cheaper stage (no skid register, no multiplexer in front of the output register)."""
    m.submodules[name] = stage = PipeStage(source.payload.shape())
    wiring.connect(m, source, stage.i)
    wiring.connect(m, stage.o, sink)


class IPStack(wiring.Component):
    """The layers above the MAC: Ethernet header, ARP responder, IPv4, ICMP echo and one UDP
    port, between good frames (``i``, FCS stripped, as :class:`~.mac.MACRx` delivers them)
    and frames to send (``o``, for :class:`~.mac.MACTx`).

    ``rx`` gives the payload of each good datagram sent to ``udp_port``; each payload taken
    on ``tx`` goes back to the sender of the last request read from ``rx``. ARP requests for
    ``ip`` and ICMP echo requests are answered without the application. Every drop reason is
    counted on a 16-bit port (:data:`COUNTERS` less the MAC's), and ``overflows`` counts the
    ICMP requests and UDP datagrams that found the receive buffer full (``i`` is never
    back-pressured: a datagram arriving while ``rx`` is not read fast enough is lost there;
    :class:`EthernetStack` adds them to the MAC's ``mac_overflows``, counting ``lost``, high
    for a cycle after each).
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
            "overflows": Out(16), "lost": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        layers = dict(
            eth_rx=EthRx(), eth_tx=EthTx(self.mac), eth_arb=Arbiter(BYTES, 2),
            arp=ArpResponder(self.mac, self.ip),
            ip_rx=IPv4Rx(self.ip), ip_tx=IPv4Tx(self.ip, ttl=self.ttl),
            ip_arb=Arbiter(BYTES, 2),
            icmp=IcmpEcho(), udp=UdpPort(self.ip, self.udp_port),
            # ICMP requests and UDP datagrams wait in one buffer (IPv4Rx gives one packet at
            # a time to one of them): 4096 bytes, the request being read and about two more
            # full-sized ones, the backlog of requests queued at the line rate while the
            # application stalls (a new key's GCM start: the GHASH tables filled).
            rx_buffer=SharedPacketFIFO(4096, metas=(IcmpEcho.META, 0)),
        )
        for name, layer in layers.items():
            m.submodules[name] = layer
        L = type("Layers", (), layers)  # noqa: N806 - attribute access to the layers
        # Receive, bottom up.
        wiring.connect(m, wiring.flipped(self.i), L.eth_rx.i)
        # Registered stream stages (:func:`~aes_fpga.stage.skid`) between the layers, so
        # that no valid/ready or data path runs through two of them.
        pipe(m, "arp_stage", L.eth_rx.arp, L.arp.i)
        pipe(m, "ip_rx_stage", L.eth_rx.ip, L.ip_rx.i)
        wiring.connect(m, L.ip_rx.icmp, L.icmp.i)
        wiring.connect(m, L.ip_rx.udp, L.udp.i)
        wiring.connect(m, L.icmp.store, L.rx_buffer.i0)
        wiring.connect(m, L.rx_buffer.o0, L.icmp.stored)
        wiring.connect(m, L.udp.store, L.rx_buffer.i1)
        # The datagrams leave the buffer's block RAM through a register both ways: behind
        # the UDP port the application's ``ready`` decides each read, and that logic may sit
        # far from the buffer on a large FPGA.
        skid(m, "udp_rx_stage", L.rx_buffer.o1, L.udp.stored)
        wiring.connect(m, L.udp.rx, wiring.flipped(self.rx))
        # Transmit, top down.
        wiring.connect(m, wiring.flipped(self.tx), L.udp.tx)
        wiring.connect(m, L.icmp.o, L.ip_arb.i0)
        pipe(m, "udp_stage", L.udp.o, L.ip_arb.i1)
        # Both ways: the IPv4 transmitter's ``ready`` (its header position) would otherwise
        # run through the arbiter into the ICMP and UDP transmitters and on to the receive
        # buffer's read pointer and read address, as the ICMP echo reads its request there.
        skid(m, "ip_tx_stage", L.ip_arb.o, L.ip_tx.i)
        wiring.connect(m, L.arp.o, L.eth_arb.i0)
        wiring.connect(m, L.ip_tx.o, L.eth_arb.i1)
        skid(m, "eth_tx_stage", L.eth_arb.o, L.eth_tx.i)
        pipe(m, "tx_stage", L.eth_tx.o, wiring.flipped(self.o))
        for port, layer, counter in COUNTERS:
            if not layer.startswith("mac"):
                m.d.comb += getattr(self, port).eq(getattr(layers[layer], counter))
        m.d.comb += [self.overflows.eq(L.rx_buffer.overflows), self.lost.eq(L.rx_buffer.lost)]
        return m


class EthernetStack(wiring.Component):
    """A PHY interface, the MAC and :class:`IPStack`: from PHY pins to one UDP port's payload
    streams.

    The PHY pins face the PHY: with ``phy="mii"`` ``rx_clk``, ``rxd`` (4 bits), ``rx_dv``,
    ``tx_clk``, ``txd`` (4 bits), ``tx_en``; with ``phy="rmii"`` ``ref_clk``, ``rxd`` (2 bits),
    ``crs_dv``, ``txd`` (2 bits), ``tx_en``; with ``phy="rgmii"`` ``rx_clk``, ``rxd`` (4
    bits), ``rx_ctl``, ``clk125`` (the 125 MHz transmit clock, from the board's PLL),
    ``tx_clk``, ``txd`` (4 bits), ``tx_ctl``, and the in-band status outputs ``link_up``,
    ``link_speed`` and ``full_duplex``. ``rx``, ``tx`` and the counters (:data:`COUNTERS`)
    are :class:`IPStack`'s and the MAC's; ``mac_overflows`` counts every frame lost for a full
    receive buffer, the MAC's (frames arriving faster than the IP layer takes them) and the IP
    layer's (ICMP requests and UDP datagrams arriving faster than ``rx`` is read), so that a
    request lost on the way in always shows in ``STATS``.

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
    phy : str
        ``"mii"`` (:class:`~.phy.MII`), ``"rmii"`` (:class:`~.phy.RMII`) or ``"rgmii"``
        (:class:`~.rgmii.RGMII`).
    speed : int or str
        RMII: 100 (``None``, the default) or 10 (Mbit/s); RGMII: ``"auto"`` (``None``, the
        default: the PHY's in-band status), 1000, 100 or 10. Not for MII.
    domains : tuple of str
        The names of the PHY clock domains: receive and transmit for MII (made from ``rx_clk``
        and ``tx_clk``) and RGMII (from ``rx_clk`` and ``clk125``), one for RMII (made from
        ``ref_clk``).
    """

    PHYS = ("mii", "rmii", "rgmii")

    #: How a by-module synthesis report folds the stack's modules into layers (paths below
    #: the stack, as :func:`~aes_fpga.flow.synth.group_modules` takes them; ``""`` and ``ip``
    #: are wiring only).
    RESOURCE_GROUPS = {"phy": "PHY", "mac_rx": "MAC rx", "mac_tx": "MAC tx",
                       "": "Ethernet, ARP", "ip": "Ethernet, ARP", "ip.eth_rx": "Ethernet, ARP",
                       "ip.eth_tx": "Ethernet, ARP", "ip.eth_arb": "Ethernet, ARP",
                       "ip.arp": "Ethernet, ARP", "ip.ip_rx": "IPv4, ICMP",
                       "ip.ip_tx": "IPv4, ICMP", "ip.ip_arb": "IPv4, ICMP",
                       "ip.icmp": "IPv4, ICMP", "ip.udp": "UDP",
                       "ip.rx_buffer": "ICMP and UDP receive buffer",
                       "ip.ip_rx_stage": "IPv4, ICMP", "ip.ip_tx_stage": "IPv4, ICMP",
                       "ip.udp_stage": "UDP", "ip.udp_rx_stage": "UDP",
                       "mac_rx_stage": "MAC rx"}

    def __init__(self, *, mac, ip, udp_port, ttl=64, phy="mii", speed=None, domains=None):
        self.mac = check_mac(mac)
        self.ip = check_ip(ip)
        self.udp_port = check_port(udp_port, "udp_port")
        self.ttl = ttl
        if phy not in self.PHYS:
            raise ValueError(f"phy: {phy!r} is not a PHY interface; allowed "
                             f"{', '.join(map(repr, self.PHYS))}")
        self.phy = phy
        self.speed = {"rmii": 100, "rgmii": "auto"}.get(phy) if speed is None else speed
        if phy == "mii":
            self.domains = tuple(domains or ("eth_rx", "eth_tx"))
            pins = {"rx_clk": In(1), "rxd": In(4), "rx_dv": In(1),
                    "tx_clk": In(1), "txd": Out(4), "tx_en": Out(1)}
        elif phy == "rgmii":
            self.domains = tuple(domains or ("eth_rx", "eth_tx"))
            # Made now, so a wrong speed or domain is refused here rather than at elaboration.
            rx_domain, tx_domain = self.domains
            self._rgmii = RGMII(speed=self.speed, rx_domain=rx_domain, tx_domain=tx_domain)
            pins = {"rx_clk": In(1), "rxd": In(4), "rx_ctl": In(1),
                    "clk125": In(1), "tx_clk": Out(1), "txd": Out(4), "tx_ctl": Out(1),
                    "link_up": Out(1), "link_speed": Out(2), "full_duplex": Out(1)}
        else:
            self.domains = tuple(domains or ("eth_rmii",))
            pins = {"ref_clk": In(1), "rxd": In(2), "crs_dv": In(1),
                    "txd": Out(2), "tx_en": Out(1)}
        super().__init__({
            **pins,
            "rx": Out(stream.Signature(BYTES)),
            "tx": In(stream.Signature(BYTES)),
            **{name: Out(16) for name, _, _ in COUNTERS},
        })

    def elaborate(self, platform):
        m = Module()
        if self.phy == "mii":
            rx_domain, tx_domain = self.domains
            phy = MII(rx_domain=rx_domain, tx_domain=tx_domain)
        elif self.phy == "rgmii":
            phy = self._rgmii
        else:
            (domain,) = self.domains
            phy = RMII(speed=self.speed, domain=domain)
        m.submodules.phy = phy
        m.submodules.mac_rx = mac_rx = MACRx(self.mac)
        m.submodules.mac_tx = mac_tx = MACTx()
        m.submodules.ip = ip = IPStack(mac=self.mac, ip=self.ip, udp_port=self.udp_port,
                                       ttl=self.ttl)
        for name, member in self.signature.members.items():
            if name in phy.signature.members and name not in ("rx", "tx"):
                if member.flow == In:
                    m.d.comb += getattr(phy, name).eq(getattr(self, name))
                else:
                    m.d.comb += getattr(self, name).eq(getattr(phy, name))
        wiring.connect(m, phy.rx, mac_rx.i)
        # The frames leave the MAC's buffer through a register: its block RAM's read
        # (unregistered: a slow clock-to-out on ECP5) then goes straight into flip-flops, not
        # through the Ethernet layer's dispatch. (A pipe stage, not a skid buffer: the
        # Ethernet layer's ``ready`` path is short, and the stack's LUT budget is not.)
        pipe(m, "mac_rx_stage", mac_rx.o, ip.i)
        wiring.connect(m, ip.o, mac_tx.i)
        wiring.connect(m, mac_tx.o, phy.tx)
        wiring.connect(m, ip.rx, wiring.flipped(self.rx))
        wiring.connect(m, wiring.flipped(self.tx), ip.tx)
        for port, layer, counter in COUNTERS:
            if port == "mac_overflows":
                continue
            source = mac_rx if layer == "mac_rx" else ip
            m.d.comb += getattr(self, port).eq(getattr(source, counter if layer == "mac_rx"
                                                       else port))
        # Both buffers' losses in one wrapping count, from their ``lost`` pulses (0, 1 or 2 a
        # cycle: the ones the carry-in and the lowest bit of the addend), not as a sum of
        # their own two counters (a 16-bit adder more).
        total = Cat(mac_rx.lost, self.mac_overflows) + Cat(mac_rx.lost, ip.lost)
        m.d.sync += self.mac_overflows.eq(total[1:17])
        return m
