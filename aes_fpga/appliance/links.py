"""Host links chosen by name: what a host command's ``--port`` names.

=======================  =====================================================================
name                     link
=======================  =====================================================================
``model``                :class:`~aes_fpga.appliance.client.ModelLink`: the reference device
``model+secure``         the reference device with a device secret (the host's device key)
``sim``                  :class:`aes_fpga.sim.link.SimLink`: the appliance gateware in
                         simulation (it needs Amaranth, so it is imported only when named)
``udp://ADDR[:PORT]``    :class:`~aes_fpga.appliance.udp_client.UdpLink` (driven by
                         :class:`~aes_fpga.appliance.udp_client.UdpDevice`)
anything else            :class:`~aes_fpga.appliance.client.SerialLink`: a serial port
=======================  =====================================================================

This module is host side: opening a serial port, a UDP socket or the model imports no
simulator and no Amaranth.
"""

import importlib

from .client import LinkError, SerialLink

__all__ = ["NAMED_LINKS", "SECURE_MODEL", "open_link"]

#: The links opened by a fixed name: name -> (module, class), the module imported when the name
#: is opened. A new kind of link is one more entry (its class made without arguments).
NAMED_LINKS = {
    "model": ("aes_fpga.appliance.client", "ModelLink"),
    "sim": ("aes_fpga.sim.link", "SimLink"),
}


#: The simulated device with a secret: the reference device, its secret the host's device key.
SECURE_MODEL = "model+secure"


def open_link(port="sim", *, baud=3_000_000, rtscts=False, device_key=None):
    """The link ``port`` names (see the module docstring): a name of :data:`NAMED_LINKS`, a
    ``udp://ADDR[:PORT]`` address or a serial port at ``baud`` (``rtscts``: hardware flow
    control). A bad UDP address raises :class:`~aes_fpga.appliance.client.LinkError`, and so
    does :data:`SECURE_MODEL` without a ``device_key`` (its secret)."""
    if port == SECURE_MODEL:
        if device_key is None:
            raise LinkError(f"--port {SECURE_MODEL} needs a device key (--device-key-file)")
        from .client import ModelLink
        return ModelLink(device_secret=device_key)
    if port in NAMED_LINKS:
        module, name = NAMED_LINKS[port]
        return getattr(importlib.import_module(module), name)()
    if port.startswith("udp://"):
        from .udp_client import UdpLink, parse_udp_address
        try:
            host, udp_port = parse_udp_address(port)
        except ValueError as e:
            raise LinkError(str(e)) from None
        return UdpLink(host, udp_port)
    return SerialLink(port, baud, rtscts=rtscts)
