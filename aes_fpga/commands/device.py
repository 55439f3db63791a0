"""``aes-fpga info`` and ``aes-fpga selftest``: what the appliance is, and the FIPS-197 vectors
run on it; :func:`open_device`, how every host command reaches the appliance.

Host side only: nothing here (or in what it imports) loads the HDL, unless ``--port sim``
asks for the simulated appliance.
"""

import math
import os

from .common import fail, print_json
from .options import add_json, add_port_options

__all__ = ["add_arguments", "run", "add_selftest_arguments", "run_selftest", "open_device",
           "device_key", "device_errors"]


def open_device(args):
    """The appliance ``args`` name (``--port``, ``--baud``, ``--rtscts``, ``--timeout``), as a
    :class:`~aes_fpga.appliance.client.Device` (over UDP, one that sends a request again
    within ``--timeout``)."""
    from ..appliance.client import Device
    from ..appliance.links import open_link
    key = device_key(args)
    link = open_link(args.port, baud=args.baud, rtscts=args.rtscts, device_key=key)
    if getattr(link, "datagrams", False):
        from ..appliance.udp_client import UdpDevice
        # --timeout bounds the whole wait for a reply; within it a request is sent again
        # every 0.5 s (a datagram lost on the way is not answered at all).
        attempt = min(0.5, args.timeout)
        return UdpDevice(link, timeout=attempt,
                         retries=max(0, math.ceil(args.timeout / attempt) - 1),
                         device_key=key)
    return Device(link, timeout=args.timeout, device_key=key)


def device_key(args):
    """The device key of ``--device-key-file``, else of the file the environment variable
    ``AES_FPGA_DEVICE_KEY_FILE`` names, else ``None``. A file that cannot be read, that others
    may read or write (as :func:`~aes_fpga.appliance.device_key.check_private` says, the rule
    of the build), or that is not a key raises :class:`~aes_fpga.appliance.client.LinkError`
    (naming the file only)."""
    from ..appliance.client import LinkError
    from ..appliance.device_key import read_private_key_file
    from ..appliance.session_host import DEVICE_KEY_ENV
    path = getattr(args, "device_key_file", None) or os.environ.get(DEVICE_KEY_ENV)
    if not path:
        return None
    try:
        return read_private_key_file(path)
    except OSError as e:
        # (PermissionError's message is ours; the others' name the file and the cause.)
        raise LinkError(str(e) if isinstance(e, PermissionError) and not e.filename
                        else f"device key file {path}: {e.strerror}") from None
    except ValueError as e:
        raise LinkError(str(e)) from None


def device_errors():
    """The exceptions a device can raise that a command reports as its error."""
    from ..appliance.client import LinkError
    from ..appliance.errors import ProtocolError
    return (LinkError, ProtocolError)


def add_arguments(p):
    add_port_options(p)
    add_json(p, "print JSON")


def run(args):
    from ..appliance.client import split_stats
    from ..appliance.spec import Mode

    try:
        with open_device(args) as dev:
            info = dev.info()
            datagrams = getattr(dev.link, "datagrams", False)
            gcm = Mode.GCM in info.modes
            # The Ethernet appliance's drop counters (STATS); a serial device has none. A
            # device with an entropy source adds its state and failure counts, one that offers
            # GCM its count of failed tag checks. A device with a secret answers STATS only
            # in a session.
            readable = not info.sessions or dev.session is not None
            stats = dev.stats() if readable and (datagrams or gcm or info.entropy
                                                 or info.sessions) else None
            if stats is not None:
                stats, entropy, gcm_counters = split_stats(info, stats)
    except device_errors() as e:
        return fail("info", e, 1)
    fields = {"core": info.core_name, "build_id": f"{info.build_id:#010x}",
              "protocol_version": info.protocol_version, "key_sizes": list(info.key_sizes),
              "key_slots": info.key_slots, "modes": [m.name for m in info.modes],
              "max_payload": info.max_payload, "window": info.window,
              "session": "required" if info.sessions else "not required (no device secret)"}
    if info.entropy_raw:
        # A diagnostic build: its RANDOM words are no secret (spec "Commands").
        fields["entropy_raw"] = True
    if stats is not None:
        fields.update({k: getattr(v, "name", v) for k, v in entropy.items()})
        fields.update(gcm_counters)
    if datagrams:
        from ..appliance.spec import UDP_COUNTERS
        names = list(UDP_COUNTERS) + [f"counter{n}" for n in range(len(UDP_COUNTERS),
                                                                  len(stats))]
        fields["drops"] = dict(zip(names[:len(stats)], stats, strict=True))
    if args.json:
        print_json(fields)
        return 0
    for k, v in fields.items():
        if k == "drops":
            link = v.pop("phy_link", None)
            v = ", ".join(f"{name} {n}" for name, n in v.items() if n) or "none"
            if link is not None:
                state = {0: "down", 1: "up"}.get(
                    link, "unknown (no MDIO answer, or no MDIO built in)")
                print(f"{'phy_link':<17} {state}")
        print(f"{k:<17} {v}")  # (a name of 17 or more still gets its space)
    return 0


def add_selftest_arguments(p):
    add_port_options(p)
    p.add_argument("--key-slot", type=int, default=0, help="key slot to use (default 0)")


def run_selftest(args):
    try:
        with open_device(args) as dev:
            results = dev.selftest(args.key_slot)
    except device_errors() as e:
        return fail("selftest", e, 1)
    for bits, ok in results:
        print(f"AES-{bits}: FIPS-197 C encrypt/decrypt {'pass' if ok else 'FAIL'}")
    return 0 if all(ok for _, ok in results) else 1
