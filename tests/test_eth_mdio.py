# amaranth: UnusedElaboratable=no
"""MDIO: the link status read from a simulated PHY (clause 22 frames checked bit by bit)."""

import pytest
from amaranth.sim import Simulator

from aes_fpga.appliance.gateware.eth.mdio import (
    ANAR,
    BMCR,
    BMCR_RESTART_AN,
    BMSR,
    GBCR,
    MdioLinkStatus,
    advertise_only,
)

CLK = 100e6
#: The slowest ``sync`` clock the station takes for MDC at 2.5 MHz (4 cycles a half period):
#: the frames of the tests whose point is not MDC's timing in a quarter of the cycles.
FAST = {"clk_freq": 20e6, "mdc_hz": 2.5e6}


def run_mdio(dut, registers, *, reads, address=1, output_delay=3, answer=True, writes=None):
    """A clause 22 PHY at ``address`` on the pins of ``dut``: it checks each frame the station
    sends (preamble, start, read, addresses, the station letting go in the turnaround) and
    answers ``registers[n]`` (a function of the read's number) for read n, changing its output
    ``output_delay`` cycles after MDC rises; ``answer`` (a bool, or a function of the read's
    number) whether it answers at all. Write frames (driven whole by the station, turnaround
    ``10``) are appended to ``writes`` as ``(reads before it, phy, register, value)``, and
    refused unless ``writes`` is a list. Returns the outputs after each read and the MDC
    periods seen (in cycles)."""
    seen, periods = [], []
    answers = answer if callable(answer) else (lambda n: answer)

    async def bench(ctx):
        bits, drive, drive_at, value, n = [], None, None, 0, 0
        last_mdc, last_rise = 0, None
        cycle = 0
        while n < reads:
            cycle += 1
            assert cycle < 1_000_000, "no MDIO frame"
            mdc, oe, out = ctx.get(dut.mdc), ctx.get(dut.mdio_oe), ctx.get(dut.mdio_o)
            if drive_at is not None and cycle == drive_at:
                ctx.set(dut.mdio_i, drive)
                drive_at = None
            if mdc and not last_mdc:                    # a rising edge: a bit
                if last_rise is not None:
                    periods.append(cycle - last_rise)
                last_rise = cycle
                k = len(bits)
                bits.append(out if oe else None)
                write = len(bits) > 36 and bits[34:36] == [0, 1]
                if k < 46 or write:
                    assert oe, f"the station let go of MDIO at bit {k}"
                else:
                    assert not oe, f"the station drove MDIO at bit {k}"
                if write and k == 63:
                    assert writes is not None, "a write frame"
                    assert bits[:34] == [1] * 32 + [0, 1] and bits[46:48] == [1, 0], bits
                    fields = ["".join(map(str, bits[a:b])) for a, b in
                              ((36, 41), (41, 46), (48, 64))]
                    writes.append((n, *(int(f, 2) for f in fields)))
                    bits = []
                elif write:
                    pass
                elif k == 45:
                    frame = bits[:46]
                    assert frame[:32] == [1] * 32 and frame[32:36] == [0, 1, 1, 0]
                    phy = int("".join(map(str, frame[36:41])), 2)
                    reg = int("".join(map(str, frame[41:46])), 2)
                    assert reg == BMSR
                    value = registers(n) if phy == address and answers(n) else None
                if not write and 45 <= k < 63 and value is not None:
                    # After rising edge 45 the PHY drives the turnaround's 0 (bit 47 is
                    # sampled at rising edge 47), then data bit 15 .. 0.
                    nxt = 0 if k in (45, 46) else (value >> (15 - (k - 47))) & 1
                    drive, drive_at = nxt, cycle + output_delay
                if not write and k == 63:
                    drive, drive_at = 1, cycle + output_delay   # pulled up again
                    bits = []
                    n += 1
                    for _ in range(2 * dut.half + 4):
                        await ctx.tick()
                    seen.append((ctx.get(dut.present), ctx.get(dut.link_up),
                                 ctx.get(dut.link_losses), ctx.get(dut.status)))
                    cycle += 2 * dut.half + 4
            last_mdc = mdc
            await ctx.tick()

    async def pull_up(ctx):
        ctx.set(dut.mdio_i, 1)

    sim = Simulator(dut)
    sim.add_clock(1 / CLK)
    sim.add_testbench(pull_up)
    sim.add_testbench(bench)
    sim.run()
    return seen, periods


def test_link_status_and_losses():
    """Link up, down (latched low, read once), up again: present, link_up, one loss counted;
    MDC at most 2.5 MHz, the frame's bits as clause 22 says (checked by the PHY above)."""
    dut = MdioLinkStatus(**FAST, phy_address=1, poll_hz=20_000)
    values = [0x786D, 0x7869, 0x786D, 0x786D]
    seen, periods = run_mdio(dut, lambda n: values[n], reads=4)
    assert [s[:3] for s in seen] == [(1, 1, 0), (1, 0, 1), (1, 1, 1), (1, 1, 1)]
    assert [s[3] for s in seen] == values
    assert min(periods) >= FAST["clk_freq"] / 2.5e6


def test_no_phy_at_the_address():
    """Nobody answers (the line stays pulled up): not present, link down."""
    dut = MdioLinkStatus(**FAST, phy_address=7, poll_hz=20_000)
    seen, _ = run_mdio(dut, lambda n: 0x786D, reads=2, address=1)
    assert [s[:2] for s in seen] == [(0, 0), (0, 0)]


def test_slow_phy_output():
    """The PHY changes its output as late as clause 22 allows (300 ns after MDC rises)."""
    dut = MdioLinkStatus(clk_freq=CLK, mdc_hz=2.5e6, poll_hz=20_000)
    seen, _ = run_mdio(dut, lambda n: 0x786D, reads=1, output_delay=30)
    assert seen == [(1, 1, 0, 0x786D)]


def test_advertisement_written_once_the_phy_answers():
    """The setup writes (here: advertise 100 Mbit/s only) go out once, in order, one a poll
    from the poll after the first answered read (the PHY still in reset does not answer the
    first), as full write frames to the PHY's address; the reads and the status go on."""
    setup = advertise_only(100)
    assert setup == ((ANAR, 0x0181), (GBCR, 0), (BMCR, BMCR_RESTART_AN))
    dut = MdioLinkStatus(**FAST, phy_address=5, poll_hz=20_000, setup=setup)
    writes = []
    seen, _ = run_mdio(dut, lambda n: 0x786D, reads=4, address=5, writes=writes,
                       answer=lambda n: n > 0)
    assert writes == [(2, 5, reg, value) for reg, value in setup]
    assert [s[:2] for s in seen] == [(0, 0), (1, 1), (1, 1), (1, 1)]


def test_advertise_only_speeds():
    assert advertise_only(10)[0] == (ANAR, 0x0061)
    with pytest.raises(ValueError, match="speed: 1000"):
        advertise_only(1000)
    with pytest.raises(ValueError, match=r"setup: \(4, 65536\)"):
        MdioLinkStatus(clk_freq=CLK, setup=((4, 0x10000),))


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"phy_address": 32}, "phy_address: 32"),
    ({"mdc_hz": 5e6}, "mdc_hz"),
    ({"clk_freq": 5e6}, "clk_freq"),
])
def test_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        MdioLinkStatus(**{"clk_freq": CLK, **kwargs})


def test_appliance_needs_the_clock_for_mdio():
    from aes_fpga.appliance.gateware.eth_appliance import EthernetAppliance
    from aes_fpga.sim.cxxsim import mark_used
    ident = {"mac": "02:00:00:00:00:01", "ip": "10.0.0.2", "udp_port": 7001}
    with pytest.raises(ValueError, match="clk_freq"):
        EthernetAppliance(**ident, mdio_address=1)
    with pytest.raises(ValueError, match="phy_address: 40"):
        EthernetAppliance(**ident, mdio_address=40, clk_freq=CLK)
    dut = EthernetAppliance(**ident, mdio_address=1, clk_freq=CLK)
    mark_used(dut)     # made to read its signature, not to be simulated
    assert {"mdc", "mdio_o", "mdio_oe", "mdio_i"} <= set(dut.signature.members)
    assert dut.counters[-2:] == ("phy_link", "phy_link_losses")
    assert dut.mdio.setup == ()     # the PHY's own advertisement
    # an RGMII link fixed below 1000 Mbit/s: the PHY told to advertise that speed only
    for speed, setup in (("auto", ()), (1000, ()), (100, advertise_only(100))):
        dut = EthernetAppliance(**ident, phy="rgmii", speed=speed, mdio_address=0,
                                clk_freq=CLK)
        mark_used(dut)
        assert dut.mdio.setup == setup, speed
