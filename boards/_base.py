"""What every board module shares: the board description and the top-level glue.

A board top is glue only: the board's oscillator through a clock generator to the core clock
chosen at build time (an MMCME2_ADV and a BUFG on Xilinx 7-series, an EHXPLLL on Lattice ECP5),
a reset synchroniser (clock generator lock and the reset button), status LEDs, and one portable
design inside (simulated on its own in the tests).
"""

from dataclasses import dataclass, field

from amaranth.build import Attrs, ResourceError
from amaranth.hdl import (
    ClockDomain,
    ClockSignal,
    Const,
    Elaboratable,
    Instance,
    Module,
    ResetSignal,
    Shape,
    Signal,
    Value,
)
from amaranth.lib import io, wiring
from amaranth.lib.cdc import ResetSynchronizer
from amaranth.lib.wiring import In, Out
from amaranth_boards.resources import UARTResource

from ..flow.clocking import ecp5_pll_config, mmcm_config
from ..platform import family_of
from ..primitives import InputDelay, OutputDelay

__all__ = ["Board", "BoardTop", "EthernetPhy", "PhyReset", "pmod_usbuart", "UART",
           "FLOW_CONTROL", "MII", "RMII", "DEFAULT_CLOCK_MHZ"]

#: The ports of a design that talks on the board's serial line (8N1, idle high), from the
#: design's side: ``uart_rx`` from the host, ``uart_tx`` to it.
UART = wiring.Signature({"uart_rx": In(1), "uart_tx": Out(1)})

#: RTS/CTS flow control on top of :data:`UART`, active low as on the wire: ``uart_rts_n`` high
#: asks the host to stop sending; ``uart_cts_n`` high (from the host) stops the design's
#: transmitter.
FLOW_CONTROL = wiring.Signature({"uart_rts_n": Out(1), "uart_cts_n": In(1)})


#: The PHY pins of a design on an MII PHY (:class:`~aes_fpga.appliance.gateware.eth.phy.MII`'s,
#: from the design's side): the clocks and received data from the PHY, the data to send to it.
MII = wiring.Signature({"rx_clk": In(1), "rxd": In(4), "rx_dv": In(1),
                        "tx_clk": In(1), "txd": Out(4), "tx_en": Out(1)})

#: The PHY pins of a design on an RMII PHY: ``ref_clk`` is the 50 MHz reference clock the board
#: glue makes (and drives to the PHY), the rest as on the wire.
RMII = wiring.Signature({"ref_clk": In(1), "rxd": In(2), "crs_dv": In(1),
                         "txd": Out(2), "tx_en": Out(1)})

#: The PHY pins of a design on an RGMII PHY: ``clk125`` is the 125 MHz transmit clock the
#: board glue makes (the design forwards it to the PHY on ``tx_clk``), the rest as on the wire.
RGMII = wiring.Signature({"rx_clk": In(1), "rxd": In(4), "rx_ctl": In(1), "clk125": In(1),
                          "tx_clk": Out(1), "txd": Out(4), "tx_ctl": Out(1)})


@dataclass(frozen=True)
class EthernetPhy:
    """A board's Ethernet PHY as the board glue drives it.

    ``phy`` is ``"mii"``, ``"rmii"`` or ``"rgmii"``; ``resource`` the amaranth-boards resource
    of its pins, ``pins`` the subsignal of each design port (:data:`MII`, :data:`RMII` less
    ``ref_clk``, :data:`RGMII` less ``clk125``),
    ``reset`` the subsignal of the PHY's reset pin. ``ref_clock`` is where the FPGA drives the
    PHY's reference clock (``(resource, subsignal)``, subsignal ``None`` for a resource of its
    own) at ``ref_mhz`` (RGMII: ``None``, the PHY has its own crystal; ``ref_mhz`` is then the
    125 MHz transmit clock the glue makes for the design, and ``tx_clock_delay_ps`` a delay
    the glue puts on the forwarded transmit clock for a PHY that does not delay it itself,
    ``rx_delay_ps`` one it puts on RXD and RX_CTL for a PHY that does not delay ``rx_clk``,
    and ``speed`` a fixed link speed for the design, ``None`` for the PHY's in-band status).
    ``reset_hold_s`` is how long the PHY is held in reset after the FPGA's
    own reset, ``reset_note`` the data-sheet figures it covers. Both PHYs here have an
    active-low reset pin (``RESET_N``, ``nRST``): the glue drives the pin low during the pulse,
    whether the resource declares it inverted (``PinsN``) or as the pin's level (``Pins``).
    ``mdio`` names the management subsignals (MDC, MDIO) and ``mdio_address`` the PHY's
    address on them (set by its straps), from which the design reads the link status.
    ``gigabit_sync`` (RGMII on ECP5): the design's ``sync`` runs at the 125 MHz transmit clock,
    the byte rate of 1000 Mbit/s that the stack and the datagram engine need, and a core
    clock below it (``--clock-mhz``) gets a domain of its own (:meth:`core_domain`).
    ``stack_mhz`` (RGMII on ECP5 with a ``speed`` of 100 or 10): the design's ``sync`` (the
    stack and the datagram engine) runs at this clock instead, on the clock generator's third
    output, with the 125 MHz transmit clock beside it for the RGMII transmit logic alone, and
    a core clock other than it gets a domain of its own.
    """
    phy: str
    chip: str
    resource: str
    pins: dict
    reset: str
    ref_clock: tuple
    ref_mhz: float
    reset_hold_s: float
    reset_note: str = ""
    mdio: tuple = ("mdc", "mdio")
    mdio_address: int = 1
    tx_clock_delay_ps: int = 0
    rx_delay_ps: int = 0
    speed: object = None
    gigabit_sync: bool = False
    stack_mhz: float = None

    def __post_init__(self):
        if self.stack_mhz is not None and (self.phy != "rgmii" or self.speed not in (100, 10)
                                           or self.gigabit_sync):
            raise ValueError(f"stack_mhz: {self.chip}: a stack clock of its own is for an "
                             f"RGMII PHY at a fixed speed of 100 or 10 Mbit/s, without "
                             f"gigabit_sync")

    def core_domain(self, clock_mhz):
        """The clock domain of the core of an Ethernet design built at ``clock_mhz`` on this
        PHY: ``"core"`` (the clock generator's main output, the rest of the design in ``sync``
        at :meth:`sync_mhz`) with :attr:`gigabit_sync` and a core clock below ``ref_mhz``, or
        with :attr:`stack_mhz` and a core clock other than it; else ``None`` (the core in
        ``sync``, at ``clock_mhz``)."""
        if self.stack_mhz is not None:
            return "core" if clock_mhz != self.stack_mhz else None
        return "core" if self.gigabit_sync and clock_mhz < self.ref_mhz else None

    def sync_mhz(self, clock_mhz):
        """The design's ``sync`` clock when built at ``clock_mhz`` (see :meth:`core_domain`)."""
        if self.core_domain(clock_mhz) is None:
            return clock_mhz
        return self.ref_mhz if self.stack_mhz is None else self.stack_mhz


def pmod_usbuart(conn=("pmod", 0)):
    """A Digilent Pmod USB-UART (410-212) on the upper row of a Pmod header, as the board's
    ``uart`` resource with flow control. Pin 2 carries data to the host and pin 3 from it;
    pin 1 is the host's RTS# (it clears the FPGA to send) and pin 4 goes to the host's CTS#
    (the Pmod interface specification's type 4 UART, named here from the host's side: the
    board is the DCE)."""
    return UARTResource(0, rx="3", tx="2", rts="1", cts="4", role="dce", conn=conn,
                        attrs=Attrs(IOSTANDARD="LVCMOS33"))


#: The core clock (MHz) a board build gets unless the board or the command says otherwise.
DEFAULT_CLOCK_MHZ = 100.0


@dataclass(frozen=True)
class Board:
    """A board the build flow knows.

    ``platform`` is an amaranth-boards platform class (or a subclass adding resources);
    ``frontends`` the host links its pins could carry (``uart``, ``ethernet``): what the build
    offers on the board is narrower, the designs that exist for them (see
    :func:`aes_fpga.designs.table.designs_for`); ``open_flow`` whether the open
    Yosys/nextpnr-xilinx/prjxray flow supports its part; ``programmer`` openFPGALoader's board
    name.
    """
    name: str
    description: str
    platform: type
    frontends: tuple = ()
    open_flow: bool = True
    programmer: str = ""
    notes: str = ""
    extra: dict = field(default_factory=dict)
    #: the Ethernet PHY the ``ethernet`` design runs on (``None``: no Ethernet design)
    ethernet: EthernetPhy = None
    #: the core clock (MHz) a build with a device secret gets unless another is asked for
    #: (``None``: :data:`DEFAULT_CLOCK_MHZ`, as every other build); see :meth:`clock_mhz`
    secured_clock_mhz: float = None
    #: a build with a device secret takes the ``sync`` domain's reset to its flip-flops on a
    #: global clock network (ECP5: a DCCA after the reset synchronizer) instead of the general
    #: routing (BoardTop's ``global_reset``: :meth:`BoardTop._ecp5_global_reset`)
    secured_global_reset: bool = False

    def clock_mhz(self, *, secured=False):
        """The core clock (MHz) a build on this board gets unless another is asked for:
        :attr:`secured_clock_mhz` for a build with a device secret (``secured``) where the
        board declares one, else :data:`DEFAULT_CLOCK_MHZ`."""
        if secured and self.secured_clock_mhz is not None:
            return self.secured_clock_mhz
        return DEFAULT_CLOCK_MHZ

    @property
    def family(self):
        """``"xc7"`` (Xilinx 7-series) or ``"ecp5"`` (Lattice ECP5): which primitives, clock
        generator and build flow the board gets."""
        return family_of(self.platform())

    @property
    def part(self):
        """The FPGA the board carries, as its platform (and Vivado) names it; an ECP5 as
        Lattice's ordering code without the temperature grade (``LFE5U-85F-6BG381``)."""
        p = self.platform()
        if self.family == "ecp5":
            return f"{p.device}-{p.speed}{p.package}"
        return f"{p.device}{p.package}-{p.speed}"

    @property
    def open_flow_part(self):
        """The part the open flow builds for (``None`` without open-flow support). prjxray
        has databases for the commercial grades only, so Amaranth gives the open tools the
        commercial part of the same die for an industrial/low-power one (the Arty A7's
        ``xc7a35ticsg324-1L`` is built as ``xc7a35tcsg324-1``): the bitstream is the die's, so
        it loads on the board's FPGA, and the timing figures are the commercial grade's.
        The ECP5 flow builds for the board's own part."""
        if not self.open_flow:
            return None
        return self.part if self.family == "ecp5" else self.platform()._xray_part


class BoardTop(Elaboratable):
    """Board glue around ``design``: clock, reset, LEDs, and the board's UART when the design
    has its ports.

    What a design may ask of a board is declared, and checked here once: it is a
    :class:`~amaranth.lib.wiring.Component` with a ``status_leds`` property, three one-bit
    signals (heartbeat, good news, bad news); if its signature has the members of :data:`UART`
    the board's UART is connected to them, and those of :data:`FLOW_CONTROL` (with
    :data:`UART`) its RTS/CTS pins too.

    LEDs, in order of the board's ``led`` resources: the three status signals, then clock
    generator (MMCM or PLL) locked. Boards with fewer single LEDs show good/bad on the
    green/red of an RGB LED, and boards with none the heartbeat on its blue.

    Raises
    ------
    TypeError
        If ``design`` is not a component, has no ``status_leds`` of three one-bit signals, or
        has part of a contract's members only, or one with the wrong direction or width
        (the message names the member).
    """

    def __init__(self, design, *, clock_mhz, uart_resource="uart", ethernet=None,
                 global_reset=False):
        if not isinstance(design, wiring.Component):
            raise TypeError(f"design: {design!r} is not a wiring.Component; a board hosts "
                            f"components only")
        leds = getattr(design, "status_leds", None)
        leds = list(leds) if isinstance(leds, (list, tuple)) else None
        if leds is None or len(leds) != 3 or not all(
                isinstance(v, Value) and len(v) == 1 for v in leds):
            raise TypeError(f"design: {type(design).__name__} has no status_leds of three "
                            f"one-bit signals (heartbeat, good, bad)")
        self.uart = _contract(design, "UART", UART)
        self.flow_control = _contract(design, "FLOW_CONTROL", FLOW_CONTROL)
        if self.flow_control and not self.uart:
            raise TypeError(f"design: {type(design).__name__} has the FLOW_CONTROL members "
                            f"but not those of UART (uart_rx, uart_tx)")
        # (the two share txd, rxd and tx_en: the clock a design takes tells which it is)
        # (RGMII's rx_ctl and clk125 tell it from MII)
        members = design.signature.members
        rgmii = "rx_ctl" in members and _contract(design, "RGMII", RGMII)
        mii = ("ref_clk" not in members and "rx_ctl" not in members
               and _contract(design, "MII", MII))
        rmii = "rx_clk" not in members and _contract(design, "RMII", RMII)
        self.phy = "rgmii" if rgmii else "mii" if mii else "rmii" if rmii else None
        if self.phy is not None:
            if ethernet is None:
                raise TypeError(f"design: {type(design).__name__} has {self.phy.upper()} PHY "
                                f"pins but the board has no Ethernet PHY")
            if ethernet.phy != self.phy:
                raise TypeError(f"design: {type(design).__name__} has {self.phy.upper()} PHY "
                                f"pins; the board's {ethernet.chip} is {ethernet.phy.upper()}")
        self.ethernet = ethernet if self.phy is not None else None
        #: the core's own clock domain (the clock generator's main output; ``sync`` is then
        #: the PHY's 125 MHz), or None: see :meth:`EthernetPhy.core_domain`
        self.core_domain = (None if self.ethernet is None
                            else self.ethernet.core_domain(clock_mhz))
        # (the design's own word for where its core runs: EthernetAppliance's core_domain)
        if (self.core_domain is not None
                and getattr(design, "core_domain", None) != self.core_domain):
            raise TypeError(f"design: {type(design).__name__} must run its core in the "
                            f"{self.core_domain!r} clock domain on this board")
        self.design = design
        self.clock_mhz = clock_mhz
        #: the sync reset on a global network (ECP5 only): :attr:`Board.secured_global_reset`
        self.global_reset = global_reset
        self.uart_resource = uart_resource
        #: the PHY reset pulse, in core clock cycles, once elaborated (Ethernet designs only)
        self.phy_reset_cycles = None
        #: the clock generator's setting once elaborated: a MmcmConfig on 7-series
        #: (``mmcm``), an Ecp5PllConfig on ECP5 (``pll``); the other stays None
        self.mmcm = None
        self.pll = None

    def elaborate(self, platform):
        eth = self.ethernet
        if (eth is not None and eth.phy == "rgmii" and eth.tx_clock_delay_ps
                and family_of(platform) == "xc7" and eth.speed != 1000):
            raise ValueError(f"ethernet: {eth.chip}: a 7-series transmit clock delay is a "
                             f"fixed 125 MHz clock; the PHY must declare speed=1000")
        if self.global_reset and family_of(platform) != "ecp5":
            raise ValueError("global_reset: the sync reset goes on a global network on ECP5 "
                             "boards only")
        m = Module()
        clk_res = platform.lookup(platform.default_clk)
        f_in = clk_res.clock.frequency / 1e6
        m.submodules.clk_buf = clk_in = io.Buffer("i", platform.request(platform.default_clk,
                                                                         dir="-"))
        m.domains.sync = ClockDomain("sync")
        if self.core_domain is not None and family_of(platform) != "ecp5":
            raise ValueError(f"ethernet: {eth.chip}: a core domain of its own is made by the "
                             f"ECP5 glue only")
        if family_of(platform) == "ecp5":
            if self.ethernet is not None and self.ethernet.phy != "rgmii":
                raise TypeError("ethernet: the ECP5 board glue makes no PHY reference clock")
            locked = self._ecp5_pll(m, f_in, clk_in.i)
        else:
            locked = self._mmcm(m, f_in, clk_in.i)
            if self.ethernet is not None and self.ethernet.rx_delay_ps:
                self._idelay_ref(m, platform, f_in, clk_in.i)

        async_reset = Signal()
        m.d.comb += async_reset.eq(~locked)
        if platform.default_rst is not None:
            m.submodules.rst_buf = rst = io.Buffer("i", platform.request(platform.default_rst,
                                                                         dir="-"))
            m.d.comb += async_reset.eq(~locked | rst.i)
        if self.global_reset:
            self._ecp5_global_reset(m, async_reset)
        else:
            m.submodules.reset_sync = ResetSynchronizer(async_reset, domain="sync")
        if self.core_domain is not None:
            # (one source for both resets, as CoreDomain asks)
            m.submodules.core_reset_sync = ResetSynchronizer(async_reset,
                                                             domain=self.core_domain)

        m.submodules.design = design = self.design
        status = [*design.status_leds, locked]
        if self.uart:
            self._connect_uart(m, platform, design)
        if self.ethernet is not None:
            self._connect_ethernet(m, platform, design)
        leds = []
        for n in range(len(status)):
            try:
                port = platform.request("led", n, dir="-")
            except ResourceError:   # the board has fewer LEDs
                break
            m.submodules[f"led{n}_buf"] = buf = io.Buffer("o", port)
            leds.append(buf.o)
        for led, value in zip(leds, status, strict=False):
            m.d.comb += led.eq(value)
        if len(leds) < 3:
            try:
                rgb = platform.request("rgb_led", 0, dir="-")
            except ResourceError:
                rgb = None
            if rgb is not None:
                m.submodules.rgb_g = green = io.Buffer("o", rgb.g)
                m.submodules.rgb_r = red = io.Buffer("o", rgb.r)
                m.d.comb += [green.o.eq(status[1]), red.o.eq(status[2])]
                if not leds:
                    m.submodules.rgb_b = blue = io.Buffer("o", rgb.b)
                    m.d.comb += blue.o.eq(status[0])
        return m

    def _ecp5_global_reset(self, m, async_reset):
        """The ``sync`` reset synchronized in a domain of its own on the same clock, then
        through a DCCA: nextpnr-ecp5 routes a DCCA's output on a global network to every
        flip-flop's LSR, where it would otherwise route the reset (thousands of loads in a
        secured appliance) through the general routing, and its router can spend most of its
        time ripping up and rerouting that one net (it did on the ULX3S's secured build at
        seed 1: README "A board may declare the clock of a secured build"; nextpnr promotes
        only clocks to globals by itself). The reset's timing is the synchronizer's register
        to the LSR pins through the global."""
        m.domains.reset_src = src = ClockDomain("reset_src")
        m.d.comb += src.clk.eq(ClockSignal("sync"))
        m.submodules.reset_sync = ResetSynchronizer(async_reset, domain="reset_src")
        m.submodules.reset_buf = Instance("DCCA", i_CLKI=src.rst, i_CE=Const(1),
                                          o_CLKO=ResetSignal("sync"))

    def _mmcm(self, m, f_in, clk_in):
        # An Ethernet PHY's reference clock comes from the same MMCM (CLKOUT1, exact: the PHY
        # allows +-50 ppm, the board oscillator's accuracy passes through).
        aux = self.ethernet.ref_mhz if self.ethernet is not None else None
        self.mmcm = cfg = mmcm_config(f_in, self.clock_mhz, aux_mhz=aux)
        aux_params = {}
        if aux is not None:
            ref_out = Signal()
            self.eth_ref_clk = Signal()
            aux_params = dict(p_CLKOUT1_DIVIDE=cfg.aux_divide, p_CLKOUT1_PHASE=0.0,
                              p_CLKOUT1_DUTY_CYCLE=0.5, o_CLKOUT1=ref_out)
            m.submodules.eth_ref_bufg = Instance("BUFG", i_I=ref_out, o_O=self.eth_ref_clk)
            if self.ethernet.phy == "rgmii" and self.ethernet.tx_clock_delay_ps:
                aux_params.update(self._mmcm_shifted_clock(m, cfg))
        locked = Signal()
        clk_fb = Signal()
        clk_out = Signal()
        zero = Const(0)
        m.submodules.mmcm = Instance(
            "MMCME2_ADV",
            p_BANDWIDTH="OPTIMIZED", p_COMPENSATION="ZHOLD", p_STARTUP_WAIT="FALSE",
            p_DIVCLK_DIVIDE=cfg.divclk, p_CLKFBOUT_MULT_F=cfg.mult, p_CLKFBOUT_PHASE=0.0,
            p_CLKIN1_PERIOD=round(1000 / f_in, 3), p_CLKOUT0_DIVIDE_F=cfg.divide,
            p_CLKOUT0_PHASE=0.0, p_CLKOUT0_DUTY_CYCLE=0.5, p_REF_JITTER1=0.01,
            i_CLKIN1=clk_in, i_CLKIN2=zero, i_CLKINSEL=Const(1), i_CLKFBIN=clk_fb,
            i_RST=zero, i_PWRDWN=zero,
            i_DADDR=Const(0, 7), i_DCLK=zero, i_DEN=zero, i_DI=Const(0, 16), i_DWE=zero,
            i_PSCLK=zero, i_PSEN=zero, i_PSINCDEC=zero,
            o_CLKFBOUT=clk_fb, o_CLKOUT0=clk_out, o_LOCKED=locked, **aux_params,
        )
        m.submodules.bufg = Instance("BUFG", i_I=clk_out, o_O=ClockSignal("sync"))
        return locked

    def _mmcm_shifted_clock(self, m, cfg):
        # A 7-series HR/HP output has no fixed delay behind an ODDR (OutputDelay refuses it):
        # an RGMII transmit clock is delayed by a copy of CLKOUT1 phase-shifted by
        # ``tx_clock_delay_ps`` on CLKOUT2 (in steps of 1/8 of the VCO period).
        period_ps = 1e6 / self.ethernet.ref_mhz
        step = 45.0 / cfg.aux_divide
        phase = round(self.ethernet.tx_clock_delay_ps / period_ps * 360 / step) * step
        shifted = Signal()
        self.eth_tx_shifted_clk = Signal()
        self.eth_tx_phase = phase
        m.submodules.eth_tx_shifted_bufg = Instance("BUFG", i_I=shifted,
                                                    o_O=self.eth_tx_shifted_clk)
        return dict(p_CLKOUT2_DIVIDE=cfg.aux_divide, p_CLKOUT2_PHASE=phase,
                    p_CLKOUT2_DUTY_CYCLE=0.5, o_CLKOUT2=shifted)

    def _idelay_ref(self, m, platform, f_in, clk_in):
        # The 7-series IDELAYE2's IDELAYCTRL takes a 200 MHz reference: the board's own
        # oscillator where it runs at 200 MHz (the Genesys 2's), on a global buffer.
        if f_in != 200:
            raise ValueError(f"ethernet: an RGMII receive delay on 7-series needs a 200 MHz "
                             f"board clock for its IDELAYCTRL; this board's is {f_in:g} MHz")
        m.domains.idelay_ref = ClockDomain("idelay_ref", reset_less=True)
        m.submodules.idelay_ref_bufg = Instance("BUFG", i_I=clk_in,
                                                o_O=ClockSignal("idelay_ref"))

    def _ecp5_pll(self, m, f_in, clk_in):
        # An RGMII PHY's 125 MHz transmit clock comes from the same PLL (CLKOS, exact). With
        # a core domain, CLKOP is the core's clock and CLKOS ``sync``'s too, or, for a PHY
        # with a stack clock of its own (``stack_mhz``), CLKOS2 ``sync``'s.
        main = "sync" if self.core_domain is None else self.core_domain
        if main != "sync":
            m.domains += ClockDomain(main)
        aux = self.ethernet.ref_mhz if self.ethernet is not None else None
        aux2 = self.ethernet.stack_mhz if main != "sync" else None
        self.pll = cfg = ecp5_pll_config(f_in, self.clock_mhz, aux_mhz=aux, aux2_mhz=aux2)
        locked = Signal()
        zero = Const(0)
        aux_params = {}
        if aux is not None:
            self.eth_ref_clk = Signal()
            aux_params = dict(a_FREQUENCY_PIN_CLKOS=f"{cfg.aux_mhz:g}",
                              p_CLKOS_ENABLE="ENABLED", p_CLKOS_DIV=cfg.aux_div,
                              p_CLKOS_CPHASE=cfg.aux_div - 1, p_CLKOS_FPHASE=0,
                              i_ENCLKOS=zero, o_CLKOS=self.eth_ref_clk)
        stack_clk = None
        if aux2 is not None:
            stack_clk = Signal()
            aux_params.update(a_FREQUENCY_PIN_CLKOS2=f"{cfg.aux2_mhz:g}",
                              p_CLKOS2_ENABLE="ENABLED", p_CLKOS2_DIV=cfg.aux2_div,
                              p_CLKOS2_CPHASE=cfg.aux2_div - 1, p_CLKOS2_FPHASE=0,
                              i_ENCLKOS2=zero, o_CLKOS2=stack_clk)
        # CLKOP feeds itself back; nextpnr routes it on a global network without a buffer
        # instance. The attributes are the loop-filter settings Lattice's PLL tools give and
        # the frequencies nextpnr reads to time the output clock.
        m.submodules.pll = Instance(
            "EHXPLLL",
            a_FREQUENCY_PIN_CLKI=f"{f_in:g}", a_FREQUENCY_PIN_CLKOP=f"{cfg.f_out_mhz:g}",
            a_ICP_CURRENT="12", a_LPF_RESISTOR="8", a_MFG_ENABLE_FILTEROPAMP="1",
            a_MFG_GMCREF_SEL="2",
            p_PLLRST_ENA="DISABLED", p_INTFB_WAKE="DISABLED", p_STDBY_ENABLE="DISABLED",
            p_DPHASE_SOURCE="DISABLED", p_OUTDIVIDER_MUXA="DIVA",
            p_CLKI_DIV=cfg.clki_div, p_CLKFB_DIV=cfg.clkfb_div, p_FEEDBK_PATH="CLKOP",
            p_CLKOP_ENABLE="ENABLED", p_CLKOP_DIV=cfg.clkop_div,
            p_CLKOP_CPHASE=cfg.clkop_div - 1, p_CLKOP_FPHASE=0,
            i_CLKI=clk_in, i_CLKFB=ClockSignal(main), i_RST=zero, i_STDBY=zero,
            i_PHASESEL0=zero, i_PHASESEL1=zero, i_PHASEDIR=zero, i_PHASESTEP=zero,
            i_PHASELOADREG=zero, i_PLLWAKESYNC=zero, i_ENCLKOP=zero,
            o_CLKOP=ClockSignal(main), o_LOCK=locked, **aux_params,
        )
        if main != "sync":
            m.d.comb += ClockSignal("sync").eq(self.eth_ref_clk if stack_clk is None
                                               else stack_clk)
        return locked

    def _connect_uart(self, m, platform, design):
        name = self.uart_resource
        uart = platform.request(name, 0, dir="-")
        rx = getattr(uart, "rx", None) or getattr(uart, f"{name}_rx")
        tx = getattr(uart, "tx", None) or getattr(uart, f"{name}_tx")
        m.submodules.uart_rx_buf = rx_buf = io.Buffer("i", rx)
        m.submodules.uart_tx_buf = tx_buf = io.Buffer("o", tx)
        m.d.comb += [design.uart_rx.eq(rx_buf.i), tx_buf.o.eq(design.uart_tx)]
        if self.flow_control:
            # The board is the DCE: its ``rts`` pin is the host's RTS# (an input, which clears
            # the design to send) and its ``cts`` pin goes to the host's CTS#.
            m.submodules.uart_rts_buf = rts_buf = io.Buffer("i", uart.rts)
            m.submodules.uart_cts_buf = cts_buf = io.Buffer("o", uart.cts)
            m.d.comb += [design.uart_cts_n.eq(rts_buf.i), cts_buf.o.eq(design.uart_rts_n)]


    def _connect_ethernet(self, m, platform, design):
        """The PHY's pins, its reference clock and its reset pulse.

        Reference clock: the MMCM's CLKOUT1 (exactly ``ref_mhz``, see :meth:`_mmcm`) on a BUFG,
        forwarded to the pin through an ODDR (a clock leaves the FPGA through the output
        register, not from the clock network into the pad). An MMCM output rather than a
        divided clock: it is exact and 50 % duty whatever core clock was chosen, and it has a
        global buffer for RMII's logic. MII: the PHY makes ``tx_clk``/``rx_clk`` from it; the
        ODDR drives it in phase. RMII: the same 50 MHz clocks the RMII logic; the ODDR drives
        it inverted (D1 = 0, D2 = 1), so the PHY samples ``txd``/``tx_en`` half a period after
        the FPGA launches them: 10 ns of setup and of hold against the LAN8720A's 4 ns and
        1.5 ns, where an in-phase clock would race the data through the same kind of pad.

        Reset: :class:`PhyReset` holds the PHY in reset for ``reset_hold_s`` after the FPGA's
        reset (clock generator locked, reset button), with the reference clock already
        running."""
        eth = self.ethernet
        res = platform.request(eth.resource, 0, dir="-")
        self._phy_reset(m, res)
        if eth.phy == "rgmii":
            self._connect_rgmii(m, platform, design, res)
            self._connect_mdio(m, design, res)
            return
        m.domains.eth_ref = ClockDomain("eth_ref", reset_less=True)
        m.d.comb += ClockSignal("eth_ref").eq(self.eth_ref_clk)
        ref_res, ref_sub = eth.ref_clock
        if ref_res == eth.resource:
            ref_port = getattr(res, ref_sub)
        else:
            ref_port = platform.request(ref_res, 0, dir="-")
            if ref_sub is not None:
                ref_port = getattr(ref_port, ref_sub)
        m.submodules.eth_ref_oddr = ref_buf = io.DDRBuffer("o", ref_port, o_domain="eth_ref")
        inverted = eth.phy == "rmii"
        m.d.comb += [ref_buf.o[0].eq(int(not inverted)), ref_buf.o[1].eq(int(inverted))]

        if eth.phy == "rmii":
            m.d.comb += design.ref_clk.eq(self.eth_ref_clk)
        # the PHY's clocks: 25 MHz at 100 Mbit/s
        self._connect_phy_pins(m, platform, design, res, MII if eth.phy == "mii" else RMII,
                               skip="ref_clk", clocks={"rx_clk": 25e6, "tx_clk": 25e6})
        self._connect_mdio(m, design, res)

    def _connect_phy_pins(self, m, platform, design, res, interface, *, skip, clocks,
                          drive=None, sample=None):
        """Each pin of the PHY ``interface`` (a signature) but ``skip``, through a plain
        buffer, to the design's port of its name; the input clocks named in ``clocks`` are
        constrained at their frequency (Hz). ``drive(name)``, when given, returns what an
        output pin takes instead (``None``: the design's port); ``sample(name, value)`` what
        the design takes from an input pin's buffer ``value`` (``None``: ``value``)."""
        for name, member in interface.members.items():
            if name == skip:
                continue
            port = getattr(res, self.ethernet.pins[name])
            if member.flow == In:
                m.submodules[f"eth_{name}_buf"] = buf = io.Buffer("i", port)
                value = sample(name, buf.i) if sample is not None else None
                m.d.comb += getattr(design, name).eq(buf.i if value is None else value)
                if name in clocks:
                    platform.add_clock_constraint(port.io, clocks[name])
            else:
                m.submodules[f"eth_{name}_buf"] = buf = io.Buffer("o", port)
                source = drive(name) if drive is not None else None
                m.d.comb += buf.o.eq(getattr(design, name) if source is None else source)

    def _phy_reset(self, m, res):
        eth = self.ethernet
        cfg = self.mmcm or self.pll
        f_sync = (cfg.f_out_mhz if self.core_domain is None
                  else cfg.aux2_mhz or cfg.aux_mhz) * 1e6
        m.submodules.phy_reset = phy_reset = PhyReset(round(eth.reset_hold_s * f_sync + 0.5))
        self.phy_reset_cycles = phy_reset.cycles
        rst_port = getattr(res, eth.reset)
        if any(rst_port.invert):
            rst_port = ~rst_port    # the pin's level: low holds the PHY in reset
        m.submodules.eth_rst_buf = rst_buf = io.Buffer("o", rst_port)
        m.d.comb += rst_buf.o.eq(~phy_reset.active)

    def _connect_rgmii(self, m, platform, design, res):
        """RGMII: the pins straight to the design's DDR registers through plain buffers (the
        design's I/O registers sit in the pins' I/O logic), ``clk125`` from the clock
        generator's exact 125 MHz output, and the forwarded transmit clock delayed by
        ``tx_clock_delay_ps`` when the PHY does not delay it: through
        :class:`~aes_fpga.primitives.OutputDelay` on ECP5; on 7-series the pin is driven
        instead by a DDR register on the clock generator's phase-shifted 125 MHz copy (see
        :meth:`_mmcm_shifted_clock`), which is 125 MHz whatever the link speed, so such a
        board's PHY must declare ``speed=1000``. RXD and RX_CTL go through
        ``rx_delay_ps`` of :class:`~aes_fpga.primitives.InputDelay` when the PHY does not
        delay ``rx_clk``. The receive clock is constrained at 125 MHz, its 1000 Mbit/s
        rate."""
        eth = self.ethernet
        m.d.comb += design.clk125.eq(self.eth_ref_clk)
        xc7 = family_of(platform) == "xc7"

        def drive(name):
            if name != "tx_clk" or not eth.tx_clock_delay_ps:
                return None
            m.submodules.eth_tx_clk_delay = delay = OutputDelay(delay_ps=eth.tx_clock_delay_ps)
            m.d.comb += delay.a.eq(design.tx_clk)
            return delay.z

        # one delay for RXD and RX_CTL (bit 4): one IDELAYCTRL on 7-series
        rx_delay = None
        if eth.rx_delay_ps:
            m.submodules.eth_rx_delay = rx_delay = InputDelay(5, delay_ps=eth.rx_delay_ps)

        def sample(name, value):
            if name not in ("rxd", "rx_ctl") or rx_delay is None:
                return None
            bits = slice(0, 4) if name == "rxd" else slice(4, 5)
            m.d.comb += rx_delay.a[bits].eq(value)
            return rx_delay.z[bits]

        pins = RGMII
        if xc7 and eth.tx_clock_delay_ps:
            pins = wiring.Signature({n: v for n, v in RGMII.members.items() if n != "tx_clk"})
            m.domains.eth_tx_shifted = ClockDomain("eth_tx_shifted", reset_less=True)
            m.d.comb += ClockSignal("eth_tx_shifted").eq(self.eth_tx_shifted_clk)
            port = getattr(res, eth.pins["tx_clk"])
            m.submodules.eth_tx_clk_buf = buf = io.DDRBuffer("o", port,
                                                             o_domain="eth_tx_shifted")
            m.d.comb += [buf.o[0].eq(1), buf.o[1].eq(0)]
        self._connect_phy_pins(m, platform, design, res, pins, skip="clk125",
                               clocks={"rx_clk": 125e6}, drive=drive, sample=sample)

    def _connect_mdio(self, m, design, res):
        # Management: MDC out, MDIO both ways (the PHY pulls it up while nobody drives it).
        if "mdc" in design.signature.members:
            mdc_name, mdio_name = self.ethernet.mdio
            m.submodules.eth_mdc_buf = mdc_buf = io.Buffer("o", getattr(res, mdc_name))
            m.submodules.eth_mdio_buf = mdio_buf = io.Buffer("io", getattr(res, mdio_name))
            m.d.comb += [mdc_buf.o.eq(design.mdc), mdio_buf.o.eq(design.mdio_o),
                         mdio_buf.oe.eq(design.mdio_oe), design.mdio_i.eq(mdio_buf.i)]


class PhyReset(Elaboratable):
    """``active`` high for ``cycles`` cycles of ``sync`` after its reset, then low: a PHY's
    reset pulse timed from the FPGA's reset (a down-counter; ``active`` comes from a
    register)."""

    def __init__(self, cycles):
        if not isinstance(cycles, int) or cycles < 1:
            raise ValueError(f"cycles: {cycles!r} is not a positive number of cycles")
        self.cycles = cycles
        self.active = Signal(init=1)

    def elaborate(self, platform):
        m = Module()
        left = Signal(range(self.cycles + 1), init=self.cycles)
        with m.If(left != 0):
            m.d.sync += left.eq(left - 1)
        m.d.sync += self.active.eq(left > 1)
        return m


def _contract(design, name, contract):
    """Whether ``design``'s signature has the members of ``contract`` (all of them, each with
    the contract's direction and width: a port's initial value is the design's business);
    raises TypeError, naming the member, for a part of them or a mismatch."""
    members = design.signature.members
    present = [n for n in contract.members if n in members]
    if not present:
        return False
    for n, want in contract.members.items():
        if n not in members:
            raise TypeError(f"design: {type(design).__name__} has {', '.join(present)} of "
                            f"{name} but no {n} ({_describe(want)})")
        have = members[n]
        if (not have.is_port or have.flow != want.flow
                or Shape.cast(have.shape) != Shape.cast(want.shape)):
            raise TypeError(f"design: {type(design).__name__}'s {n} is {_describe(have)}; "
                            f"{name} needs {_describe(want)}")
    return True


def _describe(member):
    if not member.is_port:
        return "an interface, not a port"
    return f"{member.flow.name}({Shape.cast(member.shape)})"
