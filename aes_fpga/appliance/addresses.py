"""The appliance's network identity, checked by one rule wherever it is given: the build's
options (:func:`aes_fpga.flow.build.ethernet_identity`) and the gateware's constructors
(:mod:`aes_fpga.appliance.gateware.eth`) both call these functions.

- an IPv4 address is a unicast host address: 1.0.0.0 to 223.255.255.255, not 127.x.x.x
  (loopback; 0.x.x.x is "this network", 224 and up multicast and reserved);
- a MAC address is six bytes, unicast (first byte even) and not all zero;
- a UDP port is 1 to 65535.

Addresses are given as text (``"192.168.1.50"``, ``"02:00:c0:a8:01:32"``, ``-`` also
separating a MAC's bytes) or as integers (the address's bytes big-endian); the checks return
integers. Errors are :class:`ValueError` naming the parameter (``name``), the value and what is
allowed. Pure Python: host tools and gateware alike import it.
"""

__all__ = ["check_ip", "check_mac", "check_port", "ip_text", "mac_text"]

_IP_FORMAT = "four decimal numbers 0..255 separated by dots, like 192.168.1.50"
_MAC_FORMAT = "six hex bytes 00..ff separated by colons, like 02:00:c0:a8:01:32"
_HEX = frozenset("0123456789abcdefABCDEF")


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def ip_text(value):
    """The dotted text of the 32-bit IPv4 address ``value``."""
    return ".".join(str(b) for b in value.to_bytes(4, "big"))


def mac_text(value):
    """The text of the 48-bit MAC address ``value``: six lower-case hex bytes and colons."""
    return ":".join(f"{b:02x}" for b in value.to_bytes(6, "big"))


def check_ip(value, name="ip"):
    """``value`` (dotted text or an integer) as a 32-bit unicast host address, 1.0.0.0 to
    223.255.255.255 and not 127.x.x.x; raises :class:`ValueError` naming ``name``."""
    if isinstance(value, str):
        parts = value.split(".")
        if (len(parts) != 4 or not all(p.isdigit() and p.isascii() and len(p) <= 3
                                       for p in parts)
                or not all(int(p) <= 255 for p in parts)):
            raise ValueError(f"{name}: {value!r} is not an IPv4 address; allowed: {_IP_FORMAT}")
        shown, number = value, int.from_bytes(bytes(int(p) for p in parts), "big")
    elif _is_int(value) and 0 <= value < 1 << 32:
        shown, number = ip_text(value), value
    else:
        raise ValueError(f"{name}: {value!r} is not an IPv4 address; allowed: {_IP_FORMAT}, "
                         f"or an integer 0..0xFFFFFFFF")
    first = number >> 24
    if not 1 <= first <= 223 or first == 127:
        raise ValueError(f"{name}: {shown} is not a unicast host address; allowed 1.0.0.0 to "
                         f"223.255.255.255, not 127.x.x.x (loopback)")
    return number


def check_mac(value, name="mac"):
    """``value`` (text or an integer) as a 48-bit MAC address, unicast and not all zero;
    raises :class:`ValueError` naming ``name``."""
    if isinstance(value, str):
        fields = value.replace("-", ":").split(":")
        if len(fields) != 6 or not all(len(f) in (1, 2) and set(f) <= _HEX for f in fields):
            raise ValueError(f"{name}: {value!r} is not a MAC address; allowed: {_MAC_FORMAT}")
        shown, number = value, int.from_bytes(bytes(int(f, 16) for f in fields), "big")
    elif _is_int(value) and 0 <= value < 1 << 48:
        shown, number = mac_text(value), value
    else:
        raise ValueError(f"{name}: {value!r} is not a MAC address; allowed: {_MAC_FORMAT}, or "
                         f"an integer 0..0xFFFFFFFFFFFF")
    if number >> 40 & 1:
        raise ValueError(f"{name}: {shown} is a group (multicast) address; allowed: a unicast "
                         f"address, first byte even (02:.. for a locally administered one)")
    if number == 0:
        raise ValueError(f"{name}: {shown} is all zero; allowed: a unicast address other than "
                         f"00:00:00:00:00:00")
    return number


def check_port(value, name="port"):
    """``value`` as a UDP port, 1 to 65535; raises :class:`ValueError` naming ``name``."""
    if not _is_int(value) or not 1 <= value <= 0xFFFF:
        raise ValueError(f"{name}: {value!r} is out of range; allowed 1..65535")
    return value
