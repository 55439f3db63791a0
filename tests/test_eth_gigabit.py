# amaranth: UnusedElaboratable=no
"""The Ethernet appliance at 1000 Mbit/s: the bench on the simulated RGMII pins (the stack and
the datagram engine a byte a 125 MHz cycle), its options checked. Each simulator compiles for
about a minute, so the benches run with -m slow."""

import json

import pytest

from aes_fpga.appliance.gateware.eth_appliance import EthernetAppliance
from aes_fpga.appliance.spec import MAX_PROCESS_DATA
from aes_fpga.cli import main
from aes_fpga.sim.cxxsim import find_cxx, mark_used
from aes_fpga.sim.ethbridge import SIM_IP, SIM_MAC, SIM_PORT, MiiBridge, sim_ethernet_appliance

needs_cxx = pytest.mark.skipif(find_cxx() is None, reason="no C++ compiler")


def bench(capsys, *args):
    assert main(["bench", "--design", "ethernet", "--phy", "rgmii", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.slow
@needs_cxx
@pytest.mark.parametrize("size", [12 * MAX_PROCESS_DATA, 1 << 20])
def test_gigabit_bench_reaches_the_target(capsys, size):
    """CTR in 1440-byte datagrams, every request queued at once (12 of them, and 1 MiB: 729):
    every request answered and checked (none lost to a full receive buffer), the reply payload
    rate at least 0.93 of 1000 Mbit/s and at most the wire format's ceiling (1440 of 1531
    bytes). The executor keeps up with the line: each chunk continues the last one's counter,
    so it follows it into the mode engine without waiting for the core to empty."""
    r = bench(capsys, "--size", str(size))
    assert r["checked_with"] == "cryptography" and r["phy"] == "rgmii"
    assert r["line_mbit_s"] == 1000 and r["phy_clock_mhz"] == 125 and r["core_mhz"] == 125
    assert r["datagrams"] == -(-size // MAX_PROCESS_DATA)
    assert r["ceiling_fraction"] == round(1440 / 1531, 4)
    assert 0.93 <= r["payload_fraction_of_line_rate"] <= r["ceiling_fraction"]
    # Store-and-forward on the way in (the UDP checksum) and out (the IP length and checksum):
    # a 16-byte request's round trip is a few hundred byte times.
    assert 0 < r["latency_cycles_16_bytes"] < 1500


@pytest.mark.slow
@needs_cxx
def test_gigabit_gcm_reaches_the_target():
    """1 MiB of GCM encryption as one message of 1440-byte chunks, every request queued at
    once: every chunk answered, the ciphertext and tag checked, the reply payload rate at
    least 0.93 of 1000 Mbit/s and at most the replies' ceiling (1440 of 1512 bytes: while the
    backlog of the key's start drains, replies follow each other at their own pace)."""
    from aes_fpga.sim.ethbench import bench_ethernet_gcm
    r = bench_ethernet_gcm(1 << 20, phy="rgmii")
    assert r["checked_with"] == "cryptography" and r["datagrams"] == 730   # (and the tag)
    assert r["ceiling_fraction"] == round(1440 / 1515, 4)
    assert 0.93 <= r["payload_fraction_of_line_rate"] <= round(1440 / 1512, 4)


def test_bench_options_are_checked(capsys):
    with pytest.raises(SystemExit):
        main(["bench", "--design", "ethernet", "--phy", "rgmii", "--core-mhz", "126"])
    assert "--core-mhz" in capsys.readouterr().err
    with pytest.raises(ValueError, match="core_mhz: 99.5 is not a whole number of MHz"):
        sim_ethernet_appliance(phy="rgmii", core_mhz=99.5)


def test_the_bridge_takes_rgmii_at_gigabit_only():
    slow = EthernetAppliance(mac=SIM_MAC, ip=SIM_IP, udp_port=SIM_PORT, phy="rgmii", speed=100)
    mark_used(slow)
    with pytest.raises(ValueError, match="phy='rgmii' at 1000 Mbit/s"):
        MiiBridge(slow)
    fast = EthernetAppliance(mac=SIM_MAC, ip=SIM_IP, udp_port=SIM_PORT, phy="rgmii",
                             core_domain="core")
    mark_used(fast)
    with pytest.raises(ValueError, match=r"core_share: \(5, 4\) is not a fraction"):
        MiiBridge(fast, core_share=(5, 4))
    bridge = MiiBridge(fast, core_share=(4, 5))
    mark_used(bridge)
    assert bridge.width == 8 and fast.core.domain == "core"
