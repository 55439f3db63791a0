"""The simulated Ethernet appliance on a Linux TAP device, so the kernel's own network stack
(ARP, ping, UDP sockets) talks to it.

:class:`TapBridge` copies frames between a TAP device and a :class:`~.ethbridge.FrameLink` (the
compiled simulation, at the MII nibble level): frames read from the TAP have no FCS and no
padding, so the link pads them to 60 bytes and adds the FCS; frames from the simulation lose
their FCS on the way back.

Run a command with the appliance reachable at :data:`~.ethbridge.SIM_IP` (port
:data:`~.ethbridge.SIM_PORT`), inside an unprivileged network namespace so that no traffic
leaves it::

    unshare -rn python -m aes_fpga.sim.tap -- aes-fpga info --port udp://10.0.0.2

The TAP device gets :data:`~.ethbridge.HOST_IP`/24, IPv6 off (no router solicitations or
other chatter), and is removed with the namespace.
"""

import argparse
import fcntl
import os
import select
import struct
import subprocess
import sys
import threading

from .ethbridge import HOST_IP, SIM_IP, SIM_MAC, SIM_PORT, open_frame_link

__all__ = ["open_tap", "configure_tap", "TapBridge", "main", "TAP_NAME"]

TAP_NAME = "aesfpga0"
_TUNSETIFF = 0x400454CA
_IFF_TAP = 0x0002
_IFF_NO_PI = 0x1000


def open_tap(name=TAP_NAME):
    """A TAP device's file descriptor (``OSError`` where there is no ``/dev/net/tun`` or no
    right to make one)."""
    fd = os.open("/dev/net/tun", os.O_RDWR)
    try:
        fcntl.ioctl(fd, _TUNSETIFF, struct.pack("16sH", name.encode(), _IFF_TAP | _IFF_NO_PI))
    except OSError:
        os.close(fd)
        raise
    return fd


def configure_tap(name=TAP_NAME, address=f"{HOST_IP}/24"):
    """IPv6 off, ``address`` on, link up (``ip`` from iproute2)."""
    with open(f"/proc/sys/net/ipv6/conf/{name}/disable_ipv6", "w") as f:
        f.write("1")
    subprocess.run(["ip", "addr", "add", address, "dev", name], check=True)
    subprocess.run(["ip", "link", "set", name, "up"], check=True)


class TapBridge:
    """Frames between the TAP device ``fd`` and ``frames`` (a
    :class:`~.ethbridge.FrameLink`), one thread each way, until :meth:`close`.
    ``counts``: frames each way."""

    def __init__(self, fd, frames):
        self.fd, self.frames = fd, frames
        self.counts = {"to_device": 0, "from_device": 0}
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=f, daemon=True)
                         for f in (self._to_device, self._from_device)]
        for t in self._threads:
            t.start()

    def _to_device(self):
        while not self._stop.is_set():
            ready, _, _ = select.select([self.fd], [], [], 0.1)
            if ready:
                self.frames.send(os.read(self.fd, 2048))
                self.counts["to_device"] += 1

    def _from_device(self):
        while not self._stop.is_set():
            frame = self.frames.recv(0.1)
            if frame is not None:
                os.write(self.fd, frame)
                self.counts["from_device"] += 1

    def close(self):
        self._stop.set()
        for t in self._threads:
            t.join(timeout=5)


def main(argv=None):
    p = argparse.ArgumentParser(
        prog="python -m aes_fpga.sim.tap",
        description=f"Run COMMAND with the simulated Ethernet appliance at {SIM_IP} (UDP port "
                    f"{SIM_PORT}, MAC {SIM_MAC}) behind a TAP device. Run inside a network "
                    f"namespace of its own (unshare -rn).")
    p.add_argument("--timeout", type=float, default=300.0,
                   help="seconds COMMAND may run (default 300)")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND [ARGS...]")
    args = p.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        p.error("no COMMAND given")
    try:
        fd = open_tap()
    except OSError as e:
        print(f"python -m aes_fpga.sim.tap: cannot make a TAP device: {e}", file=sys.stderr)
        return 77
    frames = open_frame_link()
    bridge = TapBridge(fd, frames)
    try:
        configure_tap()
        return subprocess.run(command, timeout=args.timeout).returncode
    except subprocess.TimeoutExpired:
        print(f"python -m aes_fpga.sim.tap: {command[0]} ran over {args.timeout} s",
              file=sys.stderr)
        return 124
    finally:
        bridge.close()
        frames.close()
        os.close(fd)


if __name__ == "__main__":
    sys.exit(main())
