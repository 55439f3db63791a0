# amaranth: UnusedElaboratable=no
"""One rule for the appliance's network identity: every refusal of an IPv4 address, a MAC address
or a UDP port, through the rule itself, the build's options (``ethernet_identity``, naming the
option) and the gateware's constructors (naming the parameter)."""

import pytest

from aes_fpga.appliance.addresses import check_ip, check_mac, check_port, ip_text, mac_text
from aes_fpga.appliance.gateware.eth.arp import ArpResponder
from aes_fpga.appliance.gateware.eth.ethernet import EthTx
from aes_fpga.appliance.gateware.eth.ipv4 import IPv4Rx, IPv4Tx
from aes_fpga.appliance.gateware.eth.mac import MACRx
from aes_fpga.appliance.gateware.eth.stack import EthernetStack
from aes_fpga.appliance.gateware.eth.udp import UdpPort
from aes_fpga.flow.build import ethernet_identity

GOOD = {"ip": "192.168.1.50", "udp_port": 7001, "mac": "02:00:c0:a8:01:32"}

# (parameter, value, the message after "<name>: ")
REFUSED = [
    ("ip", "192.168.1.256", r"'192.168.1.256' is not an IPv4 address; allowed: four decimal "
                            r"numbers 0..255 separated by dots, like 192.168.1.50"),
    ("ip", "10.0.0", r"'10.0.0' is not an IPv4 address"),
    ("ip", "10.0.0.1.2", r"'10.0.0.1.2' is not an IPv4 address"),
    ("ip", "10.0.0.+1", r"'10.0.0.\+1' is not an IPv4 address"),
    ("ip", " 10.0.0.1", r"' 10.0.0.1' is not an IPv4 address"),
    ("ip", "10.0.0.0001", r"'10.0.0.0001' is not an IPv4 address"),
    ("ip", "", r"'' is not an IPv4 address"),
    ("ip", 1 << 32, r"4294967296 is not an IPv4 address; allowed: .*, or an integer "
                    r"0..0xFFFFFFFF"),
    ("ip", -1, r"-1 is not an IPv4 address"),
    ("ip", True, r"True is not an IPv4 address"),
    ("ip", 10.5, r"10.5 is not an IPv4 address"),
    ("ip", "0.0.0.0", r"0.0.0.0 is not a unicast host address; allowed 1.0.0.0 to "
                      r"223.255.255.255, not 127.x.x.x \(loopback\)"),
    ("ip", "0.0.0.1", r"0.0.0.1 is not a unicast host address"),
    ("ip", "127.0.0.1", r"127.0.0.1 is not a unicast host address"),
    ("ip", "127.255.255.254", r"127.255.255.254 is not a unicast host address"),
    ("ip", "224.0.0.1", r"224.0.0.1 is not a unicast host address"),
    ("ip", "255.255.255.255", r"255.255.255.255 is not a unicast host address"),
    ("ip", 0x7F000001, r"127.0.0.1 is not a unicast host address"),
    ("mac", "02:00:00:00:01", r"'02:00:00:00:01' is not a MAC address; allowed: six hex bytes "
                              r"00..ff separated by colons, like 02:00:c0:a8:01:32"),
    ("mac", "02:00:00:00:01:zz", r"'02:00:00:00:01:zz' is not a MAC address"),
    ("mac", "02:00:00:00:01:100", r"'02:00:00:00:01:100' is not a MAC address"),
    ("mac", "02:00:00:00:01:0x1", r"'02:00:00:00:01:0x1' is not a MAC address"),
    ("mac", "02:00:00:00::01", r"'02:00:00:00::01' is not a MAC address"),
    ("mac", 1 << 48, r"281474976710656 is not a MAC address; allowed: .*, or an integer "
                     r"0..0xFFFFFFFFFFFF"),
    ("mac", False, r"False is not a MAC address"),
    ("mac", "03:00:00:00:00:01", r"03:00:00:00:00:01 is a group \(multicast\) address; "
                                 r"allowed: a unicast address, first byte even"),
    ("mac", "ff:ff:ff:ff:ff:ff", r"ff:ff:ff:ff:ff:ff is a group \(multicast\) address"),
    ("mac", 0x01005E000001, r"01:00:5e:00:00:01 is a group \(multicast\) address"),
    ("mac", "00:00:00:00:00:00", r"00:00:00:00:00:00 is all zero; allowed: a unicast address "
                                 r"other than 00:00:00:00:00:00"),
    ("mac", 0, r"00:00:00:00:00:00 is all zero"),
    ("udp_port", 0, r"0 is out of range; allowed 1..65535"),
    ("udp_port", 65536, r"65536 is out of range; allowed 1..65535"),
    ("udp_port", -1, r"-1 is out of range"),
    ("udp_port", True, r"True is out of range"),
    ("udp_port", "7001", r"'7001' is out of range"),
    ("udp_port", 7001.0, r"7001.0 is out of range"),
]
IDS = [f"{name}={value!r}" for name, value, _ in REFUSED]
CHECKS = {"ip": check_ip, "mac": check_mac, "udp_port": check_port}
OPTIONS = {"ip": "--ip", "mac": "--mac", "udp_port": "--udp-port"}


@pytest.mark.parametrize(("name", "value", "message"), REFUSED, ids=IDS)
def test_the_rule_refuses(name, value, message):
    with pytest.raises(ValueError, match=rf"^{name}: {message}"):
        CHECKS[name](value, name)


@pytest.mark.parametrize(("name", "value", "message"), REFUSED, ids=IDS)
def test_the_build_options_refuse(name, value, message):
    """The build's options: the message names the option too (``ip (--ip): ...``)."""
    with pytest.raises(ValueError, match=rf"^{name} \({OPTIONS[name]}\): {message}"):
        ethernet_identity(**{**GOOD, name: value})


@pytest.mark.parametrize(("name", "value", "message"), REFUSED, ids=IDS)
def test_the_gateware_refuses(name, value, message):
    """The Ethernet stack's constructor (the one the appliance builds on) keeps the same rule."""
    with pytest.raises(ValueError, match=rf"^{name}: {message}"):
        EthernetStack(**{**GOOD, name: value})


def test_every_layer_keeps_the_rule():
    """The stack's layers that take an address check it the same way."""
    for make, message in [
        (lambda: ArpResponder("02:00:00:00:00:01", "127.0.0.1"), r"^ip: 127.0.0.1 is not"),
        (lambda: ArpResponder("00:00:00:00:00:00", "10.0.0.1"), r"^mac: 00:00:00:00:00:00 is "
                                                                 r"all zero"),
        (lambda: IPv4Rx("0.1.2.3"), r"^ip: 0.1.2.3 is not a unicast host address"),
        (lambda: IPv4Tx("224.0.0.1"), r"^ip: 224.0.0.1 is not a unicast host address"),
        (lambda: UdpPort("10.0.0.1", 0), r"^port: 0 is out of range; allowed 1..65535"),
        (lambda: EthTx("01:00:5e:00:00:01"), r"^mac: 01:00:5e:00:00:01 is a group"),
        (lambda: MACRx("00:00:00:00:00:00"), r"^mac: 00:00:00:00:00:00 is all zero"),
    ]:
        with pytest.raises(ValueError, match=message):
            make()


@pytest.mark.parametrize(("ip", "number"), [
    ("1.0.0.0", 0x01000000), ("10.0.0.2", 0x0A000002), ("126.255.255.255", 0x7EFFFFFF),
    ("128.0.0.0", 0x80000000), ("223.255.255.255", 0xDFFFFFFF), ("010.000.000.001", 0x0A000001),
])
def test_accepted_addresses(ip, number):
    assert check_ip(ip) == number == check_ip(number)
    assert ip_text(number) == ".".join(str(int(p)) for p in ip.split("."))
    assert check_mac("02-AB-0-0-0-1") == 0x02AB00000001 == check_mac(0x02AB00000001)
    assert mac_text(0x02AB00000001) == "02:ab:00:00:00:01"
    assert check_port(1) == 1 and check_port(65535) == 65535


def test_build_and_gateware_agree_on_the_identity():
    """What the build's options accept, the gateware takes unchanged."""
    identity = ethernet_identity("10.0.0.7", 9000, "02-AB-00-00-00-01")
    assert identity == {"ip": "10.0.0.7", "udp_port": 9000, "mac": "02:ab:00:00:00:01"}
    stack = EthernetStack(**identity)
    assert (stack.ip, stack.udp_port, stack.mac) == (0x0A000007, 9000, 0x02AB00000001)
    # without a MAC, one is derived from the address: 02:00 and the address's four bytes
    assert ethernet_identity(ip="10.0.0.7")["mac"] == "02:00:0a:00:00:07"
