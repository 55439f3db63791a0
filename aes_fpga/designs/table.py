"""The table of buildable designs: a core alone, the core in the mode engine, the self-test, the
UART appliance and the Ethernet appliance, each made from a core the same way by every command
that offers it (``synth``, ``timing``, ``bench``, ``compare``, ``build``).

Importing this module loads no HDL: a design's module loads when one is first made.

A design is made either *out of context* (``DesignOptions(on_board=False)``, what ``synth``
and ``timing`` measure: the constructor's defaults for anything a board would set) or *for a
board* (``on_board=True``: the heartbeat blinks at 1 Hz at the clock, RTS/CTS where the
board's UART has the pins, and with ``board``, the board's PHY and MDIO address).
"""

from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["DesignOptions", "DesignEntry", "DESIGN_TABLE", "DESIGNS", "DESIGN_NEEDS",
           "designs_for", "heartbeat_cycles", "uart_has_flow_control", "make_selftest",
           "make_uart", "make_ethernet", "ENTROPY_DESIGNS", "ENTROPY_RAW_DESIGNS",
           "SECRET_DESIGNS"]


def heartbeat_cycles(clock_mhz):
    """Cycles between the heartbeat LED's toggles at ``clock_mhz``: twice a second, so that it
    blinks at 1 Hz at any core clock."""
    return max(1, round(clock_mhz * 1e6 / 2))


def uart_has_flow_control(board):
    """Whether ``board``'s UART resource has RTS and CTS pins (the uart design then uses
    hardware flow control, and hosts open the port with ``--rtscts``)."""
    name = board.extra.get("uart_resource", "uart")
    for res in board.platform.resources:
        if res.name == name and res.number == 0:
            names = {getattr(io, "name", None) for io in res.ios}
            return {"rts", "cts"} <= names
    return False


@dataclass(frozen=True)
class DesignOptions:
    """What a design is made with besides its core.

    ``clock_mhz`` the ``sync`` clock; ``baud`` the UART's line rate; ``phy`` the Ethernet PHY
    interface out of context (a board's own PHY otherwise); ``identity`` the Ethernet design's
    ``{"ip", "udp_port", "mac"}`` (checked by :func:`aes_fpga.flow.build.ethernet_identity`);
    ``on_board`` whether it is made for a board's glue; ``board`` that board (the Ethernet
    design takes its PHY from it); ``flow_control`` RTS/CTS on the UART (for a board: see
    :func:`uart_has_flow_control`); ``gcm`` GCM in the mode engine of the designs that have
    one (``modes``, ``uart``, ``ethernet``) with that GHASH variant, ``None`` for none, and
    ``ghash_digit`` the LUT-only GHASH's digit; ``entropy`` an entropy source
    (:class:`~aes_fpga.entropy.EntropySource`, its defaults) in the ``uart`` or ``ethernet``
    appliance, reported by ``INFO`` and ``STATS``, serving ``RANDOM``, or in the ``selftest``
    design, tested beside the core (its health and its words, the verdict on the LEDs);
    ``entropy_raw`` with it, an appliance's diagnostic build that gives raw samples
    (``ENTROPY_RAW``); ``device_secret`` (32 bytes, with ``entropy``; never shown, not even by
    ``repr``) an appliance with a secret (:class:`~aes_fpga.appliance.gateware.ProtocolEngine`'s
    ``device_secret``).
    """

    clock_mhz: float = 100.0
    baud: int = 3_000_000
    phy: str = "mii"
    identity: dict = None
    on_board: bool = False
    board: object = None
    flow_control: bool = False
    gcm: str = None
    ghash_digit: int = 8
    entropy: bool = False
    entropy_raw: bool = False
    device_secret: bytes = field(default=None, repr=False)

    def gcm_options(self):
        """The GCM keywords of a design with a mode engine: none without GCM (so such a
        design is exactly what it was before GCM existed)."""
        if self.gcm is None:
            return {}
        return {"gcm": self.gcm, "ghash_digit": self.ghash_digit}

    def appliance_gcm(self):
        """The GCM keyword of an appliance (its LUT-only GHASH takes the default digit)."""
        return {} if self.gcm is None else {"gcm": self.gcm}

    def entropy_source(self):
        """The entropy keyword of a design: none without (so the design is exactly what it
        was before), else a new :class:`~aes_fpga.entropy.EntropySource`."""
        if not self.entropy:
            return {}
        from ..entropy import EntropySource
        return {"entropy": EntropySource()}

    def appliance_entropy(self):
        """The entropy keywords of an appliance: :meth:`entropy_source`, and
        ``entropy_raw`` for a diagnostic build."""
        return {**self.entropy_source(), **({"entropy_raw": True} if self.entropy_raw else {})}

    def appliance_secret(self):
        """The secret keyword of an appliance: none for an open device (so the design is
        exactly what it was before sessions existed)."""
        return {} if self.device_secret is None else {"device_secret": self.device_secret}

    def leds(self):
        """The heartbeat keyword a design gets: on a board, a 1 Hz blink at the clock; out of
        context none (the constructor's default)."""
        if not self.on_board:
            return {}
        return {"heartbeat_cycles": heartbeat_cycles(self.clock_mhz)}


def _core(core, options):
    return core


def _modes(core, options):
    from ..modes import ModeEngine
    return ModeEngine(core, **options.gcm_options())


def _selftest(core, options):
    from .selftest import SelfTest
    return SelfTest(core, **options.leds(), **options.entropy_source())


def _uart(core, options):
    from ..appliance.gateware.uart import UartAppliance
    extra = {"flow_control": options.flow_control} if options.on_board else {}
    return UartAppliance(core, clk_freq=options.clock_mhz * 1e6, baud=options.baud, **extra,
                         **options.leds(), **options.appliance_gcm(),
                         **options.appliance_entropy(), **options.appliance_secret())


def _ethernet(core, options):
    from ..appliance.gateware.eth_appliance import EthernetAppliance
    identity = options.identity
    board = options.board
    extra, leds = {}, options.leds()
    if board is not None:
        # (a Gigabit board's glue may run sync at the PHY's byte rate, the core beside it)
        sync_mhz = board.ethernet.sync_mhz(options.clock_mhz)
        extra = {"mdio_address": board.ethernet.mdio_address, "clk_freq": sync_mhz * 1e6,
                 "core_domain": board.ethernet.core_domain(options.clock_mhz)}
        leds = {"heartbeat_cycles": heartbeat_cycles(sync_mhz)} if leds else {}
    if board is not None and board.ethernet.speed is not None:
        extra["speed"] = board.ethernet.speed     # a board whose glue fixes the link speed
    key_slots = core.key_slots
    return EthernetAppliance(mac=identity["mac"], ip=identity["ip"],
                             udp_port=identity["udp_port"],
                             phy=options.phy if board is None else board.ethernet.phy,
                             core=core, key_slots=key_slots, **leds, **extra,
                             **options.appliance_gcm(), **options.appliance_entropy(),
                             **options.appliance_secret())


def _groups_of_core(top, paths):
    return type(top).RESOURCE_GROUPS


def _groups_of_appliance(top, paths):
    return top.resource_groups(paths())


def _groups_of_modes(top, paths):
    # The engine's own logic (queue, counters, GCM's control), its GHASH and the core.
    known = paths()
    groups = {"": "mode engine", known[id(top.core)]: "core"}
    if top.ghash is not None:
        groups[known[id(top.ghash)]] = "GHASH"
    return groups


def _groups_of_selftest(top, paths):
    # Its own logic (known answers, checker, heartbeat), the core below it and the entropy
    # source beside it, if any.
    known = paths()
    groups = {"": "self-test (checker, LEDs)", known[id(top.core)]: "core"}
    if top.entropy is not None:
        groups[known[id(top.entropy)]] = "entropy source"
    return groups


@dataclass(frozen=True)
class DesignEntry:
    """One design of :data:`DESIGN_TABLE`.

    ``make(core, options)`` makes its top from a core and :class:`DesignOptions`;
    ``what(core_text, options)`` names it as the reports do (around ``core_text``, the
    core's own description); ``resource_groups(top, paths)`` folds the modules of a top it
    made into report groups (``paths()`` gives the design's hierarchy paths by
    ``id(elaboratable)``, elaborating it), ``None`` where no report groups it; ``needs`` the
    board frontend it needs (``None``: any board; ``""``: it is never built for a board).
    """

    name: str
    summary: str
    make: Callable
    what: Callable
    resource_groups: Callable = None
    needs: str = None

    @property
    def on_board(self):
        """Whether ``aes-fpga build`` builds it inside a board's glue."""
        return self.needs != ""


#: Designs by name, in the order commands list them.
DESIGN_TABLE = {
    "core": DesignEntry(
        "core", "the core alone", _core, lambda core, o: core,
        resource_groups=_groups_of_core, needs=""),
    "modes": DesignEntry(
        "modes", "the core in the mode engine (ECB, CBC, CTR; GCM with --ghash)",
        _modes, lambda core, o: (f"mode engine{' with GCM (' + o.gcm + ' GHASH)' if o.gcm else ''}"
                                 f" around {core}"),
        resource_groups=_groups_of_modes, needs=""),
    "selftest": DesignEntry(
        "selftest", "the core run through the FIPS-197 known answers in a loop, the verdict "
                    "on LEDs",
        _selftest, lambda core, o: f"self-test around {core}",
        resource_groups=_groups_of_selftest),
    "uart": DesignEntry(
        "uart", "the UART appliance around the core (transport, protocol engine, modes, core)",
        _uart, lambda core, o: f"uart appliance at {o.clock_mhz:g} MHz, {o.baud} baud, "
                               f"around {core}",
        resource_groups=_groups_of_appliance, needs="uart"),
    "ethernet": DesignEntry(
        "ethernet", "the Ethernet appliance around the core (PHY, MAC, Ethernet and ARP, IPv4 "
                    "and ICMP, UDP, datagram engine, core)",
        _ethernet, lambda core, o: f"ethernet appliance ({o.phy.upper()}) around {core}",
        resource_groups=_groups_of_appliance, needs="ethernet"),
}


def _board_factory(name):
    entry = DESIGN_TABLE[name]

    def make(core, clock_mhz, baud, flow_control, *, board=None, identity=None, gcm=None,
             entropy=False, entropy_raw=False, device_secret=None):
        return entry.make(core, DesignOptions(clock_mhz=clock_mhz, baud=baud, on_board=True,
                                              board=board, identity=identity,
                                              flow_control=flow_control, gcm=gcm,
                                              entropy=entropy, entropy_raw=entropy_raw,
                                              device_secret=device_secret))
    make.__name__ = make.__qualname__ = f"make_{name}"
    make.__doc__ = (f"The {name} design for ``board`` (see :class:`DesignOptions`; ``gcm``, "
                    f"the GHASH variant of GCM in a design with a mode engine; ``entropy``, "
                    f"an entropy source (the appliances' and the self-test's); ``entropy_raw``, "
                    f"an appliance's raw samples; ``device_secret``, an appliance's device "
                    f"secret, :data:`SECRET_DESIGNS`), as "
                    f":func:`aes_fpga.flow.build.build` makes it.")
    return make


make_selftest = _board_factory("selftest")
make_uart = _board_factory("uart")
make_ethernet = _board_factory("ethernet")

#: design name -> factory(core, clock_mhz, baud, flow_control) of the portable design inside
#: a board's glue (``ethernet``'s also takes ``board`` and ``identity``, keywords): the
#: designs ``aes-fpga build`` builds
DESIGNS = {"selftest": make_selftest, "uart": make_uart, "ethernet": make_ethernet}
#: the board frontend each design needs
DESIGN_NEEDS = {name: e.needs for name, e in DESIGN_TABLE.items() if e.needs}
#: the designs that take an entropy source (``entropy``), and those of them that also give
#: its raw samples (``entropy_raw``: an appliance, whose ``ENTROPY_RAW`` reads them)
ENTROPY_DESIGNS = ("selftest", "uart", "ethernet")
ENTROPY_RAW_DESIGNS = ("uart", "ethernet")
#: the designs that take a device secret (``device_secret``: an appliance that takes only
#: ``INFO`` and the session handshake in the clear)
SECRET_DESIGNS = ("uart", "ethernet")


def designs_for(board):
    """The designs :func:`aes_fpga.flow.build.build` accepts for ``board``, in
    :data:`DESIGNS` order: those whose frontend the board has (``ethernet`` where the board
    also describes its PHY, :attr:`~aes_fpga.boards.Board.ethernet`)."""
    return [d for d in DESIGNS if DESIGN_NEEDS.get(d) in (None, *board.frontends)
            and (d != "ethernet" or board.ethernet is not None)]
