# amaranth: UnusedElaboratable=no
"""What a board top may host, checked when it is made: a component with three status LEDs,
and the UART and flow-control ports whole or not at all. (Elaborating board tops: test_build's
dry runs.)"""

import dataclasses

import pytest
from aes_fpga.boards import BOARDS, BoardTop
from aes_fpga.boards._base import FLOW_CONTROL, MII, RGMII, RMII, UART, PhyReset
from amaranth.hdl import Fragment, Module, ResetSignal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from aes_fpga.appliance.gateware.uart import UartAppliance
from aes_fpga.cores import DrabLocus
from aes_fpga.designs import SelfTest
from aes_fpga.sim.cxxsim import mark_used


class Design(wiring.Component):
    """A design with the given ports besides three one-bit LEDs (``leds=False``: without the
    ``status_leds`` property's signals; ``led_width``: their width)."""

    def __init__(self, ports, *, leds=True, led_width=1):
        self._leds = leds
        super().__init__({**ports, **{f"led{n}": Out(led_width) for n in range(3)}})

    @property
    def status_leds(self):
        return [self.led0, self.led1, self.led2] if self._leds else None

    def elaborate(self, platform):
        return Module()


def top(design):
    # Checked, never elaborated here: the design and what it holds (a UART appliance's engine
    # and core, made in the library, which this file's pragma does not cover) count as used.
    if isinstance(design, wiring.Component):
        mark_used(design)
    return BoardTop(design, clock_mhz=100)


def test_selftest_and_uart_designs_are_accepted():
    t = top(SelfTest(DrabLocus))
    assert (t.uart, t.flow_control) == (False, False)
    assert t.design.status_leds == [t.design.heartbeat, t.design.passed, t.design.failed]
    for fc in (False, True):
        t = top(UartAppliance(DrabLocus(key_sizes=(128,)), clk_freq=100e6, flow_control=fc))
        assert (t.uart, t.flow_control) == (True, fc)


def test_contracts_from_the_members_whole():
    both = {**UART.members, **FLOW_CONTROL.members}
    assert (top(Design(UART.members)).uart, top(Design(both)).flow_control) == (True, True)
    # initial values are the design's business (a UART line idles high)
    t = top(Design({"uart_rx": In(1, init=1), "uart_tx": Out(1, init=1)}))
    assert (t.uart, t.flow_control) == (True, False)


def test_a_design_without_status_leds_is_refused():
    with pytest.raises(TypeError, match="Design has no status_leds of three one-bit signals"):
        top(Design(UART.members, leds=False))
    with pytest.raises(TypeError, match="Design has no status_leds"):
        top(Design({}, led_width=2))
    with pytest.raises(TypeError, match="is not a wiring.Component"):
        top(Module())


def test_a_design_with_uart_rx_but_no_uart_tx_is_refused():
    with pytest.raises(TypeError, match=r"has uart_rx of UART but no uart_tx \(Out"):
        top(Design({"uart_rx": In(1)}))


@pytest.mark.parametrize(("ports", "message"), [
    ({"uart_rx": Out(1), "uart_tx": Out(1)}, r"uart_rx is Out\(unsigned\(1\)\); UART needs In"),
    ({"uart_rx": In(1), "uart_tx": Out(2)}, r"uart_tx is Out\(unsigned\(2\)\); UART needs Out"),
    ({**UART.members, "uart_cts_n": In(1)}, "has uart_cts_n of FLOW_CONTROL but no uart_rts_n"),
    (FLOW_CONTROL.members, "has the FLOW_CONTROL members but not those of UART"),
])
def test_contract_mismatches_are_refused(ports, message):
    with pytest.raises(TypeError, match=message):
        top(Design(ports))


def test_ethernet_designs_match_the_board_phy():
    """An MII design goes on the Arty A7's DP83848, an RMII one on the Nexys A7's LAN8720A;
    PHY pins on a board without that PHY are refused, naming the interfaces."""
    arty, nexys = BOARDS["arty-a7-35"].ethernet, BOARDS["nexys-a7-100"].ethernet
    for sig, eth in ((MII, arty), (RMII, nexys)):
        d = Design(sig.members)
        t = BoardTop(d, clock_mhz=100, ethernet=eth)
        assert (t.phy, t.ethernet) == (eth.phy, eth)
        with pytest.raises(TypeError, match="but the board has no Ethernet PHY"):
            top(Design(sig.members))
    with pytest.raises(TypeError, match=r"has MII PHY pins; the board's Microchip LAN8720A is "
                                        r"RMII"):
        BoardTop(Design(MII.members), clock_mhz=100, ethernet=nexys)
    # a design without PHY pins ignores the board's PHY
    assert BoardTop(Design({}), clock_mhz=100, ethernet=arty).ethernet is None


def test_a_7series_rgmii_clock_shift_needs_a_fixed_gigabit_speed():
    """The Genesys 2's forwarded transmit clock is a 90-degree 125 MHz clock at every speed,
    so its PHY fixes 1000 Mbit/s; the same PHY without the fixed speed is refused when the
    glue is elaborated, naming the PHY."""
    board = BOARDS["genesys2"]
    assert board.ethernet.speed == 1000 and board.ethernet.tx_clock_delay_ps == 2000
    free = dataclasses.replace(board.ethernet, speed=None)
    design = Design(RGMII.members)
    mark_used(design)
    with pytest.raises(ValueError, match="Realtek RTL8211E-VL: a 7-series transmit clock "
                                         "delay is a fixed 125 MHz clock"):
        Fragment.get(BoardTop(design, clock_mhz=100, ethernet=free),
                     board.platform(toolchain="Xray"))


def test_a_stack_clock_of_its_own_below_gigabit():
    """The Colorlight's link is fixed at 100 Mbit/s, its stack in ``sync`` at ``stack_mhz``
    and any other core clock in a domain of its own; the ECPIX-5 keeps ``sync`` at the
    125 MHz byte rate of 1000 Mbit/s. A stack clock needs a fixed speed below 1000."""
    eth = BOARDS["colorlight-5a75b"].ethernet
    assert eth.speed == 100 and eth.stack_mhz < eth.ref_mhz
    assert (eth.core_domain(100), eth.sync_mhz(100)) == ("core", eth.stack_mhz)
    assert (eth.core_domain(eth.stack_mhz), eth.sync_mhz(eth.stack_mhz)) == (
        None, eth.stack_mhz)
    ecpix5 = BOARDS["ecpix5-85"].ethernet
    assert (ecpix5.speed, ecpix5.core_domain(80), ecpix5.sync_mhz(80)) == (None, "core", 125)
    for speed in (None, 1000):
        with pytest.raises(ValueError, match="stack_mhz: Broadcom B50612D: a stack clock of "
                                             "its own is for an RGMII PHY at a fixed speed"):
            dataclasses.replace(eth, speed=speed)


def test_a_global_reset_goes_through_a_dcca_on_ecp5_only():
    """``global_reset`` (a secured build on the ULX3S) takes the sync reset from the
    synchronizer through a DCCA, which nextpnr-ecp5 routes on a global network; without it
    the synchronizer drives the reset; a 7-series board asking for it is refused."""
    assert BOARDS["ulx3s-85"].secured_global_reset
    assert not BOARDS["colorlight-5a75b"].secured_global_reset
    tops = []
    for glb in (True, False):
        design = Design(UART.members)
        mark_used(design)
        platform = BOARDS["ulx3s-85"].platform(toolchain="Trellis")
        m = BoardTop(design, clock_mhz=75, global_reset=glb).elaborate(platform)
        Fragment.get(m, platform)        # (the rest elaborated: nothing left unused)
        tops.append(m)
    buf = tops[0].submodules["reset_buf"]
    assert buf.type == "DCCA"
    assert repr(buf.ports["CLKO"][0]) == repr(ResetSignal("sync"))
    with pytest.raises(AttributeError, match="reset_buf"):
        tops[1].submodules["reset_buf"]
    design = Design(UART.members)
    mark_used(design)
    with pytest.raises(ValueError, match="global_reset: .* ECP5 boards only"):
        Fragment.get(BoardTop(design, clock_mhz=100, global_reset=True),
                     BOARDS["arty-a7-35"].platform(toolchain="Xray"))


@pytest.mark.parametrize("cycles", [1, 5])
def test_phy_reset_pulse_lasts_its_cycles(cycles):
    """The PHY reset is held for exactly ``cycles`` cycles after the FPGA's reset, then
    released for good (the board glue turns it into a low level on the PHY's reset pin)."""
    dut = PhyReset(cycles)
    seen = []

    async def bench(ctx):
        for _ in range(cycles + 4):
            seen.append(ctx.get(dut.active))
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert seen == [1] * cycles + [0] * 4
    with pytest.raises(ValueError, match="cycles: 0 is not a positive number"):
        PhyReset(0)
