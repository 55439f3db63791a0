"""The simulated Ethernet appliance behind a TAP device in an unprivileged network namespace:
the kernel resolves it by ARP, pings it, and ``aes-fpga encrypt|decrypt --port udp://...``
matches ``cryptography`` for ECB, CBC, CTR and GCM (see ``tap_checks.py``). All traffic stays in
the namespace. It builds the compiled simulator when it is not cached (about 20 s). It skips,
saying why, where the kernel or the machine forbids the namespace or the TAP device."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from aes_fpga.sim.cxxsim import find_cxx


def _namespace_missing():
    if find_cxx() is None:
        return "no C++ compiler for the simulator"
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return "unshare or ip (iproute2) not installed"
    if not Path("/dev/net/tun").exists():
        return "no /dev/net/tun"
    probe = subprocess.run(["unshare", "-rn", "ip", "tuntap", "add", "dev", "probe0", "mode",
                            "tap"], capture_output=True, text=True, timeout=30)
    if probe.returncode != 0:
        return f"no TAP device in an unprivileged network namespace: {probe.stderr.strip()}"
    return None


def test_kernel_stack_talks_to_the_simulated_appliance():
    reason = _namespace_missing()
    if reason:
        pytest.skip(reason)
    checks = Path(__file__).with_name("tap_checks.py")
    proc = subprocess.run(
        ["unshare", "-rn", sys.executable, "-m", "aes_fpga.sim.tap", "--timeout", "300", "--",
         sys.executable, str(checks)],
        capture_output=True, text=True, timeout=900)
    print(proc.stdout)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    for line in ("ping: 3 replies", "arp: ", "ecb:", "cbc:", "ctr:", "gcm:"):
        assert line in proc.stdout
