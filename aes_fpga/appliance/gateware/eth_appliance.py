"""The appliance over Ethernet: one request a UDP datagram, into the same layers as the serial
appliance (spec "Transport over UDP").

:class:`DatagramEngine` puts datagram payloads into :class:`~.check.FrameCheck`,
:class:`~.executor.Executor` and :class:`~.reply.ReplyBuilder` (the layers
:class:`~.engine.ProtocolEngine` has between its COBS decoder and encoder);
:class:`EthernetAppliance` puts it behind :class:`~.eth.stack.EthernetStack`::

    PHY pins -> EthernetStack.rx -> DatagramEngine -> EthernetStack.tx -> PHY pins
                (MAC, IPv4, UDP)    (FrameCheck, Executor, ReplyBuilder)
"""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ...cores import DEFAULT_CORE, make_core
from ...hw import Heartbeat
from ...stage import SkidBuffer
from .. import spec
from ..messages import DeviceInfo
from ..session_spec import SESSIONS_HELD, SessionCommand
from .check import FrameCheck
from .core_domain import CoreDomain
from .eth.common import BYTES
from .eth.mdio import MdioLinkStatus, advertise_only, mdc_half_period
from .eth.stack import COUNTERS, EthernetStack
from .executor import Executor, attach_entropy, gcm_modes, offered_key_sizes
from .reply import ReplyBuilder

__all__ = ["DatagramEngine", "EthernetAppliance", "DATAGRAM_COUNTERS", "PHY_STATE",
           "LINK_UNKNOWN", "UDP_WINDOW"]

#: :class:`DatagramEngine`'s drop counters: datagrams shorter than the frame header, and
#: longer than the header and the max payload (neither gets a reply).
DATAGRAM_COUNTERS = ("app_short", "app_long")
#: What ``STATS`` reports of the PHY after the counters: ``phy_link`` (1: the PHY reports its
#: link up over MDIO, 0: down, :data:`LINK_UNKNOWN`: no PHY answers, or built without MDIO)
#: and ``phy_link_losses`` (how often the link went down, wrapping).
PHY_STATE = ("phy_link", "phy_link_losses")
LINK_UNKNOWN = 0xFFFF

#: The window :class:`EthernetAppliance` reports: the request executing plus one more
#: full-sized request (:data:`~aes_fpga.appliance.spec.MAX_DATAGRAM`, 1465 bytes) in the IP
#: layer's receive buffer (4096 bytes: room for more, the backlog of a stall at line rate).
UDP_WINDOW = 2


class DatagramEngine(wiring.Component):
    """The appliance's protocol layers between UDP payload streams: each datagram on ``rx`` is
    one request, header and payload as spec "Frame content" says, without the CRC-32 and
    without COBS (spec "Transport over UDP"); each reply leaves on ``tx`` as one datagram of
    the same form (``last`` on its final byte).

    Requests overlap their replies: the next datagram is read from ``rx`` while the reply to
    the previous one is written, all but its last byte, which waits until that reply's first
    byte has been taken on ``tx`` (or, with a secret, until the executor has dropped the
    previous request: a record refused gets no reply); so a UDP port that answers "the sender
    of the last request read when the reply's first byte comes" (:class:`~.eth.udp.UdpPort`)
    sends every reply to its requester. A
    datagram shorter than the header (5 bytes) or longer than the header and the max payload
    (``info.max_payload``) is dropped without a reply and counted (``app_short``,
    ``app_long``; 16 bits, wrapping).

    Throughput: one byte a cycle each way, a request read while the previous reply is
    written (the frame check holds the next request's payload while the executor reads the
    current one's); one cycle more per datagram (the frame's end). Latency: a request is
    answered as the executor does (see :class:`~.engine.ProtocolEngine`), the reply's bytes
    a cycle later (a skid buffer in front of ``tx``). Back-pressure on
    ``tx`` stalls the reply; a datagram's last byte waits on ``rx`` while the reply before it
    has not started.

    ``STATS`` reports the ``counters`` inputs (the transport's), then ``app_short`` and
    ``app_long``, then the ``after`` inputs, then, with ``entropy``, the source's state and
    failure counts (:data:`~aes_fpga.appliance.spec.ENTROPY_COUNTERS`).

    Parameters
    ----------
    core, info, gcm
        As :class:`~.executor.Executor`'s (with ``gcm``, ``STATS`` reports ``auth_failures``
        last, and a kept reply is matched by a CRC-32 of its request computed here).
    counters : int
        How many counters of the layers below ``STATS`` reports (the ``counters`` input).
    after : int
        How many more values ``STATS`` reports after the engine's own (the ``after`` input).
    entropy : EntropySource, optional
        With ``info.entropy``: the entropy source (see :class:`~.engine.ProtocolEngine`).
    device_secret : bytes, optional
        With ``info.sessions``: the device secret (see :class:`~.executor.Executor`; its
        ``STATS`` then ends with ``session_failures``). Never shown.
    sessions_held : int
        With ``device_secret``: the sessions held (2 to 4).
    """

    def __init__(self, core, info, *, counters=0, after=0, gcm=None, entropy=None,
                 device_secret=None, sessions_held=SESSIONS_HELD):
        if (entropy is not None) != info.entropy:
            raise ValueError(f"entropy: {entropy!r} does not match info.entropy "
                             f"({info.entropy})")
        self.entropy = entropy
        self.core = core
        self.info = info
        self.gcm = gcm
        # (Kept for elaboration only; never shown.)
        self._device_secret = device_secret
        self.sessions_held = sessions_held
        self.n_counters = counters
        self.n_after = after
        super().__init__({
            "rx": In(stream.Signature(BYTES)),
            "tx": Out(stream.Signature(BYTES)),
            "counters": In(data.ArrayLayout(16, counters)),
            "after": In(data.ArrayLayout(16, after)),
            **{name: Out(16) for name in DATAGRAM_COUNTERS},
        })

    def elaborate(self, platform):
        m = Module()
        own = len(DATAGRAM_COUNTERS)
        gcm = {} if self.gcm is None else {"gcm": self.gcm}
        transport = self.n_counters + own + self.n_after
        n_entropy = 0 if self.entropy is None else len(spec.ENTROPY_COUNTERS)
        secured = {}
        if self._device_secret is not None:
            secured = {"device_secret": self._device_secret,
                       "sessions_held": self.sessions_held}
        m.submodules.executor = executor = Executor(
            self.core, self.info, counters=transport + n_entropy, datagram=True, **gcm,
            **secured)
        if self.entropy is not None:
            attach_entropy(m, executor, self.entropy, transport)
        m.d.comb += [executor.counters[k].eq(self.counters[k]) for k in range(self.n_counters)]
        m.d.comb += [executor.counters[self.n_counters + k].eq(getattr(self, name))
                     for k, name in enumerate(DATAGRAM_COUNTERS)]
        m.d.comb += [executor.counters[self.n_counters + own + k].eq(self.after[k])
                     for k in range(self.n_after)]
        more = {} if not secured else {"more_commands": tuple(SessionCommand)}
        m.submodules.check = check = FrameCheck(self.info.max_payload,
                                                key_bytes=executor.key_bytes, crc=False,
                                                **({} if self.gcm is None else {"gcm": True}),
                                                **more)
        m.submodules.reply = reply = ReplyBuilder(crc=False)
        wiring.connect(m, check.req, executor.req)
        wiring.connect(m, check.payload, executor.payload)
        wiring.connect(m, executor.reply, reply.desc)
        wiring.connect(m, executor.data, reply.data)

        # Datagram bytes into FrameCheck's beats: the bytes, then an ``end`` beat of its own.
        longest = spec.frame_size(self.info.max_payload, crc=False)
        count = Signal(range(longest + 2))           # bytes of the datagram so far, saturating
        end_pending = Signal()
        end_drop = Signal()
        awaiting = Signal()                          # a reply is due and has not started
        rx = self.rx
        beat = check.i.payload
        # Flags of ``count``, registered with it (its compares are then not on the ready path
        # nor in front of ``end_drop``): bytes past the longest are only counted; a datagram
        # ending with the byte now on ``rx`` is shorter than the header.
        stored = Signal(init=1)                      # count < longest
        under = Signal(init=1)                       # count < check.min_frame - 1
        with m.If(end_pending):
            m.d.comb += [check.i.valid.eq(1), beat.end.eq(1), beat.drop.eq(end_drop)]
            with m.If(check.i.ready):
                m.d.sync += [end_pending.eq(0), awaiting.eq(~end_drop)]
        with m.Elif(~awaiting | ~rx.payload.last):
            m.d.comb += [check.i.valid.eq(rx.valid & stored), beat.data.eq(rx.payload.data),
                         rx.ready.eq(check.i.ready | ~stored)]
        # The drop counters count a cycle after the datagram's end, from registered flags: the
        # length's adder and compare and a counter's carry chain do not fit one 125 MHz cycle.
        bump_short, bump_long = Signal(), Signal()
        m.d.sync += [bump_short.eq(0), bump_long.eq(0)]
        with m.If(bump_short):
            m.d.sync += self.app_short.eq(self.app_short + 1)
        with m.If(bump_long):
            m.d.sync += self.app_long.eq(self.app_long + 1)
        with m.If(rx.valid & rx.ready):
            total = count + stored
            m.d.sync += [count.eq(total), stored.eq(total < longest),
                         under.eq(total < check.min_frame - 1)]
            with m.If(rx.payload.last):
                # (With the byte now on ``rx``, the datagram has ``count + 1`` bytes while it
                # is stored: short below ``min_frame``.)
                short, long = under, ~stored
                m.d.sync += [count.eq(0), stored.eq(1), under.eq(1), end_pending.eq(1),
                             end_drop.eq(short | long), bump_short.eq(short),
                             bump_long.eq(long)]

        # Replies out, one datagram each, through a skid buffer: the reply's bytes come
        # combinationally from the executor's tables and result register, and the UDP port's
        # checksum adder takes them; the UDP port's ready runs back through the reply builder
        # into the results and the core's output (at 125 MHz neither chain fits a cycle). The
        # wait below watches ``tx`` itself, after the buffer, so a reply's first byte still
        # reaches the UDP port before the next request's last byte is read.
        m.submodules.tx_stage = tx_stage = SkidBuffer(BYTES)
        m.d.comb += [tx_stage.i.valid.eq(reply.o.valid), reply.o.ready.eq(tx_stage.i.ready),
                     tx_stage.i.payload.data.eq(reply.o.payload.data),
                     tx_stage.i.payload.last.eq(reply.o.payload.last)]
        wiring.connect(m, tx_stage.o, wiring.flipped(self.tx))
        # Only a reply's first byte ends the wait: a later byte of it may leave in the cycle
        # the next request's end sets ``awaiting`` again, and must not clear it. The byte
        # taken is seen a cycle late, from registers: ``tx.ready`` is the UDP port's, whose
        # logic sits with the stack, far from the engine's on a large FPGA (the wait only
        # grows by that cycle, and the port has read its peer by the time it takes the byte).
        replying = Signal()                          # a reply's first byte has left, not its last
        taken, taken_last = Signal(), Signal()
        m.d.sync += [taken.eq(self.tx.valid & self.tx.ready), taken_last.eq(self.tx.payload.last)]
        with m.If(taken):
            m.d.sync += replying.eq(~taken_last)
            with m.If(~replying):
                m.d.sync += awaiting.eq(0)
        if secured:
            # A record dropped (tag or counter refused) gets no reply to wait for.
            with m.If(executor.dropped):
                m.d.sync += awaiting.eq(0)
        return m


class EthernetAppliance(wiring.Component):
    """The AES appliance on an Ethernet PHY: :class:`~.eth.stack.EthernetStack` (ARP, ICMP echo,
    IPv4, one UDP port) around :class:`DatagramEngine` (spec "Transport over UDP").

    The PHY pins are the stack's (MII, RMII or RGMII, see :class:`~.eth.stack.EthernetStack`); the
    drop counters are the stack's (:data:`~.eth.stack.COUNTERS`) and the engine's
    (:data:`DATAGRAM_COUNTERS`), then the PHY's link state (:data:`PHY_STATE`), each a 16-bit
    output (``counters`` lists their names) and all of them in ``STATS``' reply, in the order
    of :data:`~aes_fpga.appliance.spec.UDP_COUNTERS`.

    With ``mdio_address``, :class:`~.eth.mdio.MdioLinkStatus` reads the PHY's link status on
    the management pins ``mdc``, ``mdio_o``, ``mdio_oe`` (drive ``mdio``) and ``mdio_i``. On
    an RGMII PHY with a fixed speed below 1000 Mbit/s it also tells the PHY, once, to advertise
    that speed only (:func:`~.eth.mdio.advertise_only`), so that a Gigabit peer negotiates
    the speed the design runs at.

    Parameters
    ----------
    mac, ip, udp_port, phy, speed, domains
        As :class:`~.eth.stack.EthernetStack`'s.
    core, key_slots, key_sizes, modes, core_name, build_id, gcm, entropy, entropy_raw
        As :class:`~.engine.ProtocolEngine`'s (``gcm``: GCM with that GHASH; ``None``, the
        default, the hardware without it; ``entropy``: an entropy source, reported in
        ``INFO`` and ``STATS``, after the transport's values, and serving ``RANDOM``).
    device_secret, sessions_held
        As :class:`~.engine.ProtocolEngine`'s: a device with a secret (32 bytes, never shown;
        needs ``entropy``) takes only ``INFO`` and the session handshake in the clear; its
        core has ``2 * sessions_held`` key slots more than ``key_slots`` (the sessions' keys;
        a default core is made so) and AES-256. ``STATS`` ends with ``session_failures``.
    heartbeat_cycles : int or None
        With a number, status outputs for a board's LEDs (``status_leds``): ``heartbeat``
        (toggles every ``heartbeat_cycles``), ``rx_activity`` and ``tx_activity`` (lit for
        2**22 cycles after a request byte comes in or a reply byte goes out).
    mdio_address : int or None
        The PHY's MDIO address (0..31) to read its link status from; ``None``: no MDIO
        (``phy_link`` reads :data:`LINK_UNKNOWN`).
    clk_freq : float
        The ``sync`` clock in Hz (needed with ``mdio_address``, for MDC's rate).
    core_domain : str or None
        With a name, the core runs in that clock domain behind :class:`~.core_domain.CoreDomain`
        (its streams cross through asynchronous FIFOs), the rest of the appliance in ``sync``:
        at 1000 Mbit/s ``sync`` must run at the line's byte rate (125 MHz; the stack and the
        datagram engine carry a byte a cycle), faster than a core closes timing on some
        FPGAs. ``None`` (the default): the core in ``sync`` too.

    Attributes
    ----------
    info : DeviceInfo
        What ``INFO`` reports (window :data:`UDP_WINDOW`, max payload ``MAX_PAYLOAD``).
    """

    def __init__(self, *, mac, ip, udp_port, phy="mii", speed=None, domains=None, core=None,
                 key_slots=4, key_sizes=(128, 192, 256), modes=spec.BLOCK_MODES,
                 core_name="drab-locus", build_id=0, heartbeat_cycles=None, mdio_address=None,
                 clk_freq=None, gcm=None, entropy=None, entropy_raw=False, device_secret=None,
                 sessions_held=SESSIONS_HELD, core_domain=None):
        secured = device_secret is not None
        if secured and entropy is None:
            self._MustUse__used = True
            raise ValueError("entropy: a device with a secret needs an entropy source (its "
                             "device challenges)")
        self.heartbeat_cycles = heartbeat_cycles
        self.mdio = None
        if mdio_address is not None:
            if clk_freq is None:
                raise ValueError("clk_freq: needed with mdio_address (MDC is made from it)")
            # Checked first, naming the parameter, so that nothing is made on an error.
            mdc_half_period(clk_freq, mdio_address)
            setup = advertise_only(speed) if phy == "rgmii" and speed in (100, 10) else ()
            self.mdio = MdioLinkStatus(clk_freq=clk_freq, phy_address=mdio_address,
                                       setup=setup)
        key_sizes = offered_key_sizes(self, core, key_slots, key_sizes)
        modes = gcm_modes(self, modes, gcm)
        self.gcm = gcm
        self.entropy = entropy
        # (Kept for elaboration only; never shown.)
        self._device_secret, self.sessions_held = device_secret, sessions_held
        self.info = DeviceInfo(core_name=core_name, build_id=build_id, key_sizes=key_sizes,
                               key_slots=key_slots, modes=modes, max_payload=spec.MAX_PAYLOAD,
                               window=UDP_WINDOW, entropy=entropy is not None,
                               entropy_raw=entropy_raw, sessions=secured)
        self.stack = EthernetStack(mac=mac, ip=ip, udp_port=udp_port, phy=phy, speed=speed,
                                   domains=domains)
        if core is None:
            core = make_core(DEFAULT_CORE, key_slots=key_slots, key_sizes=key_sizes, tag_width=0)
        self.core_domain = core_domain
        if core_domain is not None:
            core = CoreDomain(core, domain=core_domain)
        self.core = core
        self.counters = tuple(name for name, _, _ in COUNTERS) + DATAGRAM_COUNTERS + PHY_STATE
        # STATS reports them in the order the protocol names them.
        assert self.counters == spec.UDP_COUNTERS, self.counters
        pins = {name: member for name, member in self.stack.signature.members.items()
                if name not in ("rx", "tx") and name not in self.counters}
        if self.mdio is not None:
            pins.update({"mdc": Out(1), "mdio_o": Out(1), "mdio_oe": Out(1), "mdio_i": In(1)})
        leds = ({} if heartbeat_cycles is None else
                {"heartbeat": Out(1), "rx_activity": Out(1), "tx_activity": Out(1)})
        super().__init__({**pins, **{name: Out(16) for name in self.counters}, **leds})

    @property
    def status_leds(self):
        """Signals for a board's status LEDs (with ``heartbeat_cycles`` only)."""
        if self.heartbeat_cycles is None:
            raise AttributeError("status_leds: built without heartbeat_cycles")
        return [self.heartbeat, self.rx_activity, self.tx_activity]

    #: The groups of :meth:`resource_groups` that make the network stack (PHY to UDP), in
    #: layer order.
    STACK_GROUPS = tuple(dict.fromkeys(EthernetStack.RESOURCE_GROUPS.values()))

    def resource_groups(self, paths):
        """How its modules fold into a synthesis report's groups (see
        :func:`aes_fpga.flow.synth.group_modules`): the stack's layers
        (:attr:`STACK_GROUPS`), the datagram engine and the core. ``paths`` maps
        ``id(elaboratable)`` to its place in the hierarchy
        (:func:`aes_fpga.flow.synth.component_paths` of this design)."""
        stack = paths[id(self.stack)]
        # Everything neither the stack's nor the core's is the datagram engine's (frame check,
        # executor, replies) or the appliance's own wiring (its counters, MDIO, LEDs).
        return {**{".".join(filter(None, (stack, p))): g
                   for p, g in EthernetStack.RESOURCE_GROUPS.items()},
                "": "datagram engine", paths[id(self.core)]: "core"}

    def elaborate(self, platform):
        m = Module()
        m.submodules.stack = stack = self.stack
        m.submodules.engine = engine = DatagramEngine(self.core, self.info,
                                                      counters=len(COUNTERS),
                                                      after=len(PHY_STATE), gcm=self.gcm,
                                                      entropy=self.entropy,
                                                      device_secret=self._device_secret,
                                                      sessions_held=self.sessions_held)
        m.d.comb += [engine.counters[k].eq(getattr(stack, name))
                     for k, (name, _, _) in enumerate(COUNTERS)]
        link = Signal(16, init=LINK_UNKNOWN)
        losses = Signal(16)
        if self.mdio is not None:
            m.submodules.mdio = mdio = self.mdio
            m.d.comb += [self.mdc.eq(mdio.mdc), self.mdio_o.eq(mdio.mdio_o),
                         self.mdio_oe.eq(mdio.mdio_oe), mdio.mdio_i.eq(self.mdio_i),
                         losses.eq(mdio.link_losses)]
            # Registered: STATS reads it with the counters, never on a path of its own.
            m.d.sync += link.eq(Mux(mdio.present, mdio.link_up, LINK_UNKNOWN))
        m.d.comb += [self.phy_link.eq(link), self.phy_link_losses.eq(losses),
                     engine.after[0].eq(link), engine.after[1].eq(losses)]
        wiring.connect(m, stack.rx, engine.rx)
        wiring.connect(m, engine.tx, stack.tx)
        if self.heartbeat_cycles is not None:
            m.submodules.heartbeat = heartbeat = Heartbeat(self.heartbeat_cycles)
            m.d.comb += self.heartbeat.eq(heartbeat.o)
            for name, s in (("rx", stack.rx), ("tx", stack.tx)):
                timer = Signal(22, name=f"{name}_timer")
                # From a registered strobe: the timers sit by their LED pins, away from the
                # stream's handshake logic.
                moved = Signal(name=f"{name}_moved")
                m.d.sync += moved.eq(s.valid & s.ready)
                with m.If(moved):
                    m.d.sync += timer.eq(~0)
                with m.Elif(timer != 0):
                    m.d.sync += timer.eq(timer - 1)
                m.d.comb += getattr(self, f"{name}_activity").eq(timer != 0)
        own = ("heartbeat", "rx_activity", "tx_activity", "mdc", "mdio_o", "mdio_oe", "mdio_i",
               *PHY_STATE)
        for name, member in self.signature.members.items():
            if name in own:
                continue
            source = engine if name in DATAGRAM_COUNTERS else stack
            if member.flow == In:
                m.d.comb += getattr(source, name).eq(getattr(self, name))
            else:
                m.d.comb += getattr(self, name).eq(getattr(source, name))
        return m
