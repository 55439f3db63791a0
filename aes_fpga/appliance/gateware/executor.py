"""The appliance's command layer in gateware: checked requests in, replies out (spec "Commands",
steps 5 and 6 of "Errors and validation order"), around a :class:`~aes_fpga.modes.ModeEngine`.

:class:`Executor` knows nothing of COBS, CRCs or the transport: it takes whole requests from
:class:`~.check.FrameCheck` and gives reply descriptors and reply payload bytes to
:class:`~.reply.ReplyBuilder`.

It is made of parts, each a function or class of its own:

* :class:`ExecutorParts`: what the parts share: the request, the mode engine, the key slots
  and the message in progress, the reply descriptor register, ``release`` (take the request);
* the command handlers of :data:`HANDLERS` (:mod:`.handlers`): per command its checks, its
  branch of ``DECIDE``, its states and its datapath;
* :class:`Validation`: every handler's checks registered, then the first failure of the
  request's command (spec step 5, then 6);
* :func:`control`: the FSM. ``IDLE`` registers the checks, ``STATUS`` the status, ``DECIDE``
  answers a refused request with its status alone or gives the request to its command's
  handler, whose states end by taking it (back in ``IDLE``) or in ``ANSWER`` (reply ``OK``
  with the status alone, take the request);
* :func:`drive_data`: the reply payload bytes after the status: the table being sent, else
  ``PROCESS``'s results.

Adding a command
----------------
1. The protocol, host side: the opcode in :class:`~aes_fpga.appliance.spec.Command`, its
   payload's :class:`~aes_fpga.appliance.spec.Fields` and prose in :mod:`~aes_fpga.appliance.spec`,
   its request and reply in :mod:`~aes_fpga.appliance.messages`, its behaviour in the reference
   device (:class:`~aes_fpga.appliance.reference.DeviceModel`), the golden model the gateware is
   tested against.
2. A handler (:class:`~.handlers.CommandHandler` subclass in :mod:`.handlers`): ``checks``
   (its validation, in the spec's order), ``decide`` (its reply descriptor, through
   ``x.reply`` once ``x.rep_free``, and its first state), ``states`` (ending with
   ``x.release`` and ``IDLE``, or in ``x.ANSWER``, the handler then setting ``answers``)
   and, if it needs one, ``datapath``. A command answered with a table of bytes is a
   :class:`~.handlers.TableReply` with its rows (see :func:`~.handlers.stats_reply`). The
   payload fields the request keeps in registers are :data:`~.check.HEAD_SIZE` bytes: a
   longer fixed part needs a larger ``HEAD_SIZE``.
3. An entry in :data:`HANDLERS`.

Adding a mode: the :class:`~aes_fpga.modes.ModeEngine` does the mode; the device offers it
when it is in the device info's ``modes`` (:class:`~aes_fpga.appliance.messages.DeviceInfo`);
if a message of it may end with a short block (a stream mode), it goes into
:data:`~.handlers.PARTIAL_LAST_BLOCK`.

GCM is a build option (``Executor(gcm=...)``, and so of the appliances): its ``PROCESS``
handler is :class:`~.gcm_process.GcmProcess` (:data:`GCM_HANDLERS`), which adds GCM's checks,
its message state, the verdict of a decryption as the reply's status and the replies kept for
retransmissions (:class:`~.gcm_process.KeptReplies`); the frame check adds the request's J0
check and digest. Without it (``gcm=None``) the hardware is that of an executor without GCM.
"""

import operator
from functools import reduce

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ...modes import ModeEngine
from ...modes.gcm import GHASH_VARIANTS
from .. import spec
from ..session_spec import MAX_RECORDS, SESSIONS_HELD
from .check import first_failure, request_layout
from .gcm_process import GCM_TAG_WIDTH, KEPT, GcmProcess, KeptReplies, kept_reply_memory
from .handlers import (
    ZEROIZE_REQUEST,
    LoadKey,
    Process,
    Random,
    RawSamples,
    TableReply,
    Zeroize,
    info_reply,
    stats_reply,
)
from .session_handlers import SESSION_HANDLERS, SessionParts
from .session_kept import check_record_window
from .session_records import RecordLayer

__all__ = ["Executor", "gcm_modes", "reply_layout", "ZEROIZE_REQUEST", "HANDLERS", "GCM_HANDLERS",
           "ExecutorParts", "TRANSPORT_NEEDS",
           "Validation", "control", "drive_data", "offered_key_sizes", "attach_entropy",
           "check_sessions"]

#: The command handlers, each made from the :class:`ExecutorParts` (a class or a function).
#: Their order is the order of ``DECIDE``'s branches; the last branch takes every request
#: left (a request that reaches it passed its command's checks, so it is that command's).
HANDLERS = (info_reply, stats_reply, LoadKey, Zeroize, Random, RawSamples, Process)
#: The handlers of an executor with GCM: ``PROCESS`` is :class:`~.gcm_process.GcmProcess`.
GCM_HANDLERS = (info_reply, stats_reply, LoadKey, Zeroize, Random, RawSamples, GcmProcess)

#: What each transport needs of the executor, by ``datagram`` (``False``: a serial line,
#: ``True``: UDP), declared here once; the designs, the builds and the benches make their
#: appliances with the transport and get these. ``record_cipher``: the keywords of a device
#: with a secret's :class:`~.session_record.RecordCipher` (a serial line of a few Mbaud brings
#: a byte every few hundred cycles, so the records' AES-256-GCM takes the smallest core, a
#: :class:`~aes_fpga.cores.Compact8` at 224 cycles a block, with a GHASH that keeps up with
#: it; 100 Mbit/s Ethernet needs a byte a cycle: a :class:`~aes_fpga.cores.LutRound`).
#: ``seal_cipher``: the replies are sealed on a second record cipher, so that the next record
#: is opened while a reply is sealed (:class:`~.session_records.RecordLayer`: what a record
#: costs the executor is then its open and its inner request, not also the seal's lag behind
#: the inner request; on MII the records keep up with the line only so).
#: ``resume_chunks``: a ``PROCESS`` chunk that continues the last message skips the mode
#: engine's drain (:class:`~.handlers.Process`; a 128-bit chaining copy that only a line
#: faster than the drain needs, Gigabit Ethernet).
TRANSPORT_NEEDS = {
    False: {"record_cipher": {"core": "compact8", "ghash_digit": 2}, "seal_cipher": False,
            "resume_chunks": False},
    True: {"record_cipher": {"core": "lut-round", "ghash_digit": 16}, "seal_cipher": True,
           "resume_chunks": True},
}


def reply_layout():
    """One reply (:attr:`Executor.reply`): the request's ``command`` and ``seq`` (the reply
    opcode is made from the command by the reply builder), the reply payload's ``length``
    (status included) and its ``status``; the payload bytes after the status come on
    :attr:`Executor.data`."""
    return data.StructLayout({
        "command": 8 * spec.HEADER.size_of("command"),
        "seq": 8 * spec.HEADER.size_of("seq"),
        "length": range(spec.MAX_PAYLOAD + 1),
        "status": 8,
    })



def check_sessions(core, info, device_secret, held):
    """Check a device with a secret (``device_secret``, 32 bytes, or ``None``): ``info`` says
    so and has an entropy source. The errors never show the secret. (The session keys are
    held by the records' own cipher, not by ``core``.)"""
    if (device_secret is not None) != info.sessions:
        raise ValueError("info.sessions must be set exactly when a device secret is given")
    if device_secret is None:
        return
    if len(bytes(device_secret)) != 32:
        raise ValueError("device_secret must be 32 bytes")
    if not info.entropy:
        raise ValueError("a device with a secret needs an entropy source (its challenges)")
    check_record_window(info.window)


def offered_key_sizes(component, core, key_slots, key_sizes):
    """The key sizes ``component``, an appliance around ``core``, offers: the core's own, once
    its slot count is checked against ``key_slots`` (a ValueError naming it), or ``key_sizes``
    without a core (one is made later from them). A refused component is marked used, so that
    the error is not followed by a warning that it was never elaborated."""
    if core is None:
        return key_sizes
    if core.key_slots != key_slots:
        component._MustUse__used = True
        raise ValueError(f"key_slots: {key_slots!r} differs from the core's {core.key_slots}; "
                         f"give the same number (or leave out the core)")
    return core.key_sizes


def gcm_modes(component, modes, gcm):
    """The modes ``component``, an appliance built with ``gcm`` (None or a GHASH variant),
    offers: ``modes`` with GCM added for a GCM build; a ValueError naming ``gcm`` (the
    component marked used) for an unknown variant, or GCM asked for in ``modes`` without it."""
    if gcm is not None and gcm not in GHASH_VARIANTS:
        component._MustUse__used = True
        raise ValueError(f"gcm: {gcm!r} is not allowed; choose None or one of "
                         f"{', '.join(map(repr, GHASH_VARIANTS))}")
    modes = tuple(modes)
    if gcm is None:
        if spec.Mode.GCM in modes:
            component._MustUse__used = True
            raise ValueError("modes: GCM needs gcm= (a GHASH variant)")
        return modes
    return modes if spec.Mode.GCM in modes else (*modes, spec.Mode.GCM)


class Executor(wiring.Component):
    """Executes checked requests: ``INFO``, ``LOAD_KEY``, ``ZEROIZE``, ``PROCESS`` and ``STATS``.

    ``req`` and ``payload`` come from :class:`~.check.FrameCheck`. A request whose frame
    status is not ``OK`` is answered with that status. Otherwise its payload is validated in
    the spec's order (condition bits registered, then the first failure taken and
    registered: 3 cycles) and
    the request executed; every request gives one descriptor on ``reply`` and ``length - 1``
    bytes on ``data`` (``INFO``'s table, ``PROCESS``'s results), in request order.

    ``PROCESS`` takes the payload stream one byte per cycle: the IV (``FIRST`` chunks) and the
    data, gathered into blocks for the mode engine; results leave the mode engine block by
    block and are sent one byte per cycle (a partial last CTR block cut to its length). The
    request is taken the cycle after its last block is in the mode engine, so the next request
    is checked and its blocks follow while the previous results are still being sent.

    Timing: ``req.ready`` and the decision taken for a request are registers (a request is
    taken the cycle after it is done with; its status is registered before it is acted on),
    each result block is shifted out of a register, and a gathered block moves to the mode
    engine's input register only once that is empty, so no valid/ready path runs from the
    frame check through the executor into the core or the reply.

    State: the key slots' ``loaded`` flags and the message in progress (slot, op, mode); the
    chaining value lives in the mode engine. A ``FIRST`` chunk's IV goes to the mode engine as
    the first beat of a new message, so a ``FIRST`` chunk without data still starts one.

    Keys: ``LOAD_KEY`` hands the request's key (in :class:`~.check.FrameCheck`'s key register,
    cleared when the request is taken) to the core's key schedule; the executor keeps no copy.
    ``ZEROIZE`` sends the slot (or each slot) to the key schedule with ``zeroize`` set and
    marks it empty.

    ``STATS`` answers with the ``counters`` inputs (16 bits each), taken when the request is
    decided, so one reply shows one moment.

    The commands are the handlers of :data:`HANDLERS` (see the module docstring).

    GCM (``gcm``, spec "GCM messages"): ``PROCESS`` in mode GCM through the mode engine's GCM
    (:class:`~.gcm_process.GcmProcess`), and ``STATS`` reports one more counter after the
    ``counters`` inputs, ``auth_failures``.

    Parameters
    ----------
    core : a core with the common interface
    info : DeviceInfo
        What the device reports and enforces (slots, key sizes, modes, max payload); with
        ``gcm`` its modes list GCM, without they do not.
    counters : int
        How many counters ``STATS`` reports (0 to 254): the ``counters`` input port's length.
    gcm : None, "bram" or "lut"
        None: no GCM (and the hardware of an executor without it); otherwise GCM, with the
        mode engine's GHASH of that variant.
    max_gcm_data, max_gcm_aad : int
        A GCM message's data and AAD limits (``TOO_LONG`` beyond): the protocol's by default;
        smaller ones let a test reach them.
    kept_memory : MemoryData, optional
        With ``gcm``: the contents of the kept replies' block RAM
        (:func:`~.gcm_process.kept_reply_memory` of ``info``, made here by default), for a
        simulation to read; :attr:`kept_memory`.

    device_secret : bytes, optional
        A device with a secret (``info.sessions``; spec
        :mod:`~aes_fpga.appliance.session_spec`): the handlers of
        :mod:`.session_handlers` join the table, every other command is refused
        ``SESSION_REQUIRED`` in the clear before its checks, and ``STATS`` reports
        ``session_failures`` last, and ``RECORD`` carries requests in records
        (:mod:`.session_records`, on a record cipher of its own that holds the session keys).
        Needs ``info.entropy``.
    sessions_held : int
        With ``device_secret``: the sessions held (2 to 4).
    datagram : bool
        The requests come over UDP, else over a serial line: what the executor is built with
        for its transport (:data:`TRANSPORT_NEEDS`), and with ``device_secret`` the records'
        replay window (spec "Counters").
    max_records : int
        With ``device_secret``: the highest record counter taken (``SESSION_EXPIRED``
        above); the protocol's by default, a smaller one lets a test reach it.

    With ``device_secret`` the executor has one more output, ``dropped``: high for one cycle
    when it takes a request that gets no reply at all (a record dropped), so that a transport
    that waits for each reply before it reads the next request's end (:class:`~.eth_appliance.
    DatagramEngine`) stops waiting.

    With ``info.entropy`` the executor has two more ports for the entropy source's words and
    health, which ``RANDOM`` reads (:class:`~.handlers.Random`): ``entropy_words`` (128-bit
    words, a stream) and ``entropy_state`` (an :class:`~aes_fpga.entropy.EntropyState`
    value); without it ``RANDOM`` is answered ``UNKNOWN_COMMAND``. With ``info.entropy_raw``
    (a diagnostic build) two more, the source's raw ``entropy_sample`` and
    ``entropy_sample_valid``, which ``ENTROPY_RAW`` reads (:class:`~.handlers.RawSamples`).
    """

    def __init__(self, core, info, *, counters=0, gcm=None,
                 max_gcm_data=spec.GCM_MAX_DATA_BYTES, max_gcm_aad=spec.GCM_MAX_AAD_BYTES,
                 kept_memory=None, device_secret=None, sessions_held=SESSIONS_HELD,
                 datagram=False, max_records=MAX_RECORDS):
        extra = (gcm is not None) + (device_secret is not None)
        if not 0 <= counters <= 255 - extra:
            raise ValueError(f"counters: {counters!r} is not in range 0 .. {255 - extra}")
        try:
            check_sessions(core, info, device_secret, sessions_held)
        except ValueError:
            self._MustUse__used = True          # (refused: never elaborated)
            raise
        # (Kept for elaboration only; never shown.)
        self._device_secret = device_secret
        self.sessions_held = sessions_held
        self.datagram = bool(datagram)
        #: What the transport needs (:data:`TRANSPORT_NEEDS`).
        self.needs = TRANSPORT_NEEDS[self.datagram]
        self.max_records = max_records
        if (gcm is not None) != (spec.Mode.GCM in info.modes):
            raise ValueError(f"gcm: {gcm!r} does not match the modes offered "
                             f"({', '.join(m.name for m in info.modes)})")
        spec.check_gcm_window(info.modes, info.window)
        self.core = core
        self.info = info
        self.gcm = gcm
        if gcm is not None and kept_memory is None:
            kept_memory = kept_reply_memory(info)
        self.kept_memory = kept_memory
        self.max_gcm_data, self.max_gcm_aad = max_gcm_data, max_gcm_aad
        self.n_counters = counters
        #: The longest key the device takes, in bytes: the size of the request's key field.
        self.key_bytes = max(size // 8 for size in info.key_sizes)
        super().__init__({
            "req": In(stream.Signature(request_layout(self.key_bytes, gcm is not None))),
            "payload": In(stream.Signature(8)),
            "reply": Out(stream.Signature(reply_layout())),
            "data": Out(stream.Signature(8)),
            "counters": In(data.ArrayLayout(16, counters)),
            **({"entropy_words": In(stream.Signature(8 * spec.BLOCK_SIZE)),
                "entropy_state": In(2)} if info.entropy else {}),
            **({"entropy_sample": In(1), "entropy_sample_valid": In(1)}
               if info.entropy_raw else {}),
            **({"dropped": Out(1)} if device_secret is not None else {}),
        })

    def elaborate(self, platform):
        m = Module()
        x = ExecutorParts(self, m)
        makers = HANDLERS if self.gcm is None else GCM_HANDLERS
        if self._device_secret is not None:
            x.sessions = SessionParts(x, m, self._device_secret, self.sessions_held)
            m.d.comb += [x.session_failures.eq(x.sessions.failures),
                         self.dropped.eq(x.sessions.record_drop)]
            makers = (*makers, *SESSION_HANDLERS)
        handlers = [make(x) for make in makers]
        missing = set(spec.Command) - {h.command for h in handlers}
        assert not missing, f"no handler for {sorted(c.name for c in missing)}"
        tables = [h for h in handlers if isinstance(h, TableReply)]
        # (Named in the netlist as when it indexed INFO's table alone.)
        x.table_index = Signal(range(max(t.length for t in tables)), name="info_index")
        validation = Validation(m, x, handlers)
        x.reply_register(m)
        for handler in handlers:
            handler.datapath(m)
        control(m, x, handlers, validation)
        drive_data(m, x, tables, [h.results for h in handlers if h.results is not None])
        return m


class ExecutorParts:
    """What the executor's parts share, made once per elaboration in ``m``.

    ``executor``'s ports are here by name (``req``, ``payload``, ``data``, ``counters``), with
    ``info``, ``n_counters``, ``key_slots`` and ``key_sizes`` (the
    :class:`~aes_fpga.appliance.spec.KeySize` codes the device takes); ``head(n)`` is the
    request's payload byte ``n`` (of the first :data:`~.check.HEAD_SIZE`) and ``length`` its
    payload length. ``me`` is the :class:`~aes_fpga.modes.ModeEngine` (around the core);
    ``loaded`` the key slots' flags; ``msg_active``, ``msg_slot``, ``msg_op``, ``msg_mode`` the
    message in progress (``slot_w`` bits of slot). ``reply(status, length)`` gives the
    statements that fill the reply descriptor register, free when ``rep_free``; ``release``
    set for one cycle takes the request. ``table_index`` indexes the reply table being sent.
    """

    #: The state that answers ``OK`` with the status alone, once the reply register is free,
    #: and takes the request: where ``LOAD_KEY`` and ``ZEROIZE`` end, the cycle after the core
    #: took the key, so the core's key ``ready`` does not run on into the frame check.
    ANSWER = "DONE"

    def __init__(self, executor, m):
        info = executor.info
        self.gcm = executor.gcm
        if self.gcm is None:
            # A block's tag: it is a short last block.
            m.submodules.modes = self.me = ModeEngine(executor.core, tag_width=1)
        else:
            m.submodules.modes = self.me = ModeEngine(executor.core, tag_width=GCM_TAG_WIDTH,
                                                      gcm=self.gcm)
        self.max_gcm_data, self.max_gcm_aad = executor.max_gcm_data, executor.max_gcm_aad
        #: ``PROCESS`` skips the mode engine's drain for a chunk that continues the last
        #: message (:data:`TRANSPORT_NEEDS`).
        self.resume_chunks = executor.needs["resume_chunks"]
        self.info, self.n_counters = info, executor.n_counters
        self.req, self.payload, self.data = executor.req, executor.payload, executor.data
        self._reply_port = executor.reply
        #: A device with a secret: its :class:`~.session_records.RecordLayer`, between the
        #: ports and the handlers (which see a record's inner request through it).
        self.records = None
        if info.sessions:
            self.records = records = RecordLayer(executor)
            self.req, self.payload, self.data = records.req, records.payload, records.data
            self._reply_port = records.reply
        self.counters = executor.counters
        if info.entropy:
            self.entropy_words, self.entropy_state = executor.entropy_words, \
                executor.entropy_state
        if info.entropy_raw:
            self.entropy_sample = executor.entropy_sample
            self.entropy_sample_valid = executor.entropy_sample_valid
        # STATS: the inputs, then the GCM decryptions answered AUTH_FAILED, then (a device
        # with a secret) the session failures.
        extra = []
        if self.gcm is not None:
            self.auth_failures = Signal(16)
            extra.append(self.auth_failures)
        #: A device with a secret: its :class:`~.session_handlers.SessionParts`.
        self.sessions = None
        if info.sessions:
            self.session_failures = Signal(16)
            extra.append(self.session_failures)
        if extra:
            self.n_counters += len(extra)
            self.counters = Signal(data.ArrayLayout(16, self.n_counters))
            m.d.comb += [self.counters[k].eq(executor.counters[k])
                         for k in range(executor.n_counters)]
            m.d.comb += [self.counters[executor.n_counters + n].eq(value)
                         for n, value in enumerate(extra)]
        self.key_slots = S = info.key_slots
        self.key_sizes = [spec.KeySize.from_bits(b) for b in info.key_sizes]
        self.head = lambda n: self.req.payload.head[n]
        self.length = self.req.payload.length
        # ---- key slots and the message in progress -------------------------------------
        self.loaded = Array(Signal(name=f"loaded{s}") for s in range(S))
        self.slot_w = max(1, (S - 1).bit_length())
        self.msg_active = Signal()
        # (As wide as a valid value: a request reaches CHAIN_MISMATCH only with valid fields.)
        self.msg_slot = Signal(self.slot_w)
        self.msg_op = Signal(max(spec.Op).bit_length())
        self.msg_mode = Signal(max(spec.Mode).bit_length())
        # ---- replies: one descriptor register ------------------------------------------
        self.rep_valid = Signal()
        self.rep = Signal(reply_layout())
        self.rep_free = ~self.rep_valid
        # The request is taken (``req.ready``) the cycle after it is done with, from a register:
        # the frame check resets its ring pointers and key register on the take, and the FSM's
        # decisions would otherwise run on into them.
        self.release = Signal()
        self.table_index = None
        if self.gcm is not None:
            # The replies kept for retransmissions (spec "GCM messages"), and the request's
            # lookup in them (registered in STATUS, as ``r_ok`` is).
            self.kept = KeptReplies(info, executor.kept_memory)
            self.r_kept = Signal()
            self.reply_taken = Signal()

    def reply_register(self, m):
        """Drive the ``reply`` port from the descriptor register, emptied when it is taken."""
        m.d.comb += [self._reply_port.valid.eq(self.rep_valid),
                     self._reply_port.payload.eq(self.rep)]
        with m.If(self._reply_port.valid & self._reply_port.ready):
            m.d.sync += self.rep_valid.eq(0)
        if self.gcm is not None:
            m.d.comb += self.reply_taken.eq(self._reply_port.valid & self._reply_port.ready)

    def reply(self, status_value, length_value=1):
        """The statements that fill the reply descriptor for the request presented (``sync``,
        when :attr:`rep_free`)."""
        req, rep = self.req.payload, self.rep
        return [self.rep_valid.eq(1), rep.command.eq(req.command), rep.seq.eq(req.seq),
                rep.status.eq(status_value), rep.length.eq(length_value)]


class Validation:
    """Every handler's checks (spec step 5, then 6), in three registered steps: the condition
    bits of every command (``conds``, taken in ``IDLE``), the first failure of the request's
    command (``status``, a priority chain, registered in ``STATUS`` as ``r_status``,
    ``r_ok``), then acted on in ``DECIDE`` (with ``is_cmd``, the command decoded in ``IDLE``).
    A request the frame check refused (``known`` low) keeps the frame's status."""

    def __init__(self, m, x, handlers):
        req = x.req.payload
        self.checks = checks = {h.command: h.checks(m) for h in handlers}
        self.conds = {c: Signal(len(checks[c]), name=f"fail_{c.name.lower()}") for c in checks}
        self.known = known = Signal()
        self.status = status = Signal(8)
        commands = [*spec.Command, *(h.command for h in handlers
                                     if not isinstance(h.command, spec.Command))]
        # A device with a secret takes no command in the clear but INFO and the handshake.
        gated = set() if x.sessions is None else set(spec.Command) - {spec.Command.INFO}
        command_status = Const(spec.Status.UNKNOWN_COMMAND, 8)   # (refused by FrameCheck)
        for command in reversed(commands):
            verdict = first_failure(
                [(self.conds[command][n], s) for n, (_, s) in enumerate(checks[command])],
                spec.Status.OK)
            if command in gated:
                # (Inside a record, its inner request: as in the clear on an open device.)
                verdict = Mux(x.records.inner, verdict, spec.Status.SESSION_REQUIRED)
            command_status = Mux(req.command == command, verdict, command_status)
        m.d.comb += status.eq(Mux(known, command_status, req.status))
        # The status and the command are registered, so what DECIDE does (and so the
        # request's ``ready``) depends on registers only.
        self.r_status = Signal(8)
        self.r_ok = Signal()
        self.is_cmd = {c: Signal(name=f"is_{c.name.lower()}") for c in commands}

    def take(self, m, req):
        """``IDLE``, a request presented: register its conditions and its command."""
        m.d.sync += [self.conds[c].eq(Cat(cond for cond, _ in self.checks[c]))
                     for c in self.checks]
        m.d.sync += self.known.eq(req.status == spec.Status.OK)
        m.d.sync += [flag.eq(req.command == c) for c, flag in self.is_cmd.items()]


def control(m, x, handlers, v):
    """The control FSM: ``IDLE``, ``STATUS``, ``DECIDE``, the handlers' states, ``ANSWER``."""
    release = x.release
    m.d.comb += x.req.ready.eq(release)
    m.d.sync += release.eq(0)
    with m.FSM():
        with m.State("IDLE"):
            with m.If(x.req.valid & ~release):
                v.take(m, x.req.payload)
                m.next = "STATUS"
        with m.State("STATUS"):
            if x.gcm is None:
                m.d.sync += [v.r_status.eq(v.status), v.r_ok.eq(v.status == spec.Status.OK)]
            else:
                # A retransmission of a kept GCM chunk goes on to PROCESS, which answers it
                # with the kept reply.
                kept = v.status == KEPT
                m.d.sync += [v.r_status.eq(v.status), x.r_kept.eq(kept),
                             v.r_ok.eq((v.status == spec.Status.OK) | kept)]
            m.next = "DECIDE"
        with m.State("DECIDE"):
            with m.If(~v.r_ok):
                # Answered with the status alone (the payload is not read).
                with m.If(x.rep_free):
                    m.d.sync += x.reply(v.r_status)
                    m.d.sync += release.eq(1)
                    m.next = "IDLE"
            for n, handler in enumerate(handlers):
                with m.Elif(v.is_cmd[handler.command]) if n < len(handlers) - 1 else m.Else():
                    handler.decide(m)
        # ANSWER is written after the states of the handlers that end in it (none: no ANSWER).
        answering = [n for n, handler in enumerate(handlers) if handler.answers]
        for n, handler in enumerate(handlers):
            handler.states(m)
            if answering and n == answering[-1]:
                answer(m, x)


def answer(m, x):
    """The :attr:`ExecutorParts.ANSWER` state: reply ``OK`` and take the request. (Taking a
    ``LOAD_KEY`` clears the frame check's key register: the core has the key.)"""
    with m.State(x.ANSWER):
        with m.If(x.rep_free):        # (free since the key was sent)
            m.d.sync += x.reply(spec.Status.OK)
            m.d.sync += x.release.eq(1)
            m.next = "IDLE"


def attach_entropy(m, executor, source, at):
    """Put the entropy source ``source`` (an :class:`~aes_fpga.entropy.EntropySource`) into
    ``m`` beside ``executor`` (made with its ``info.entropy``): its state and failure counts
    into ``executor.counters`` from ``at`` on, in the order of
    :data:`~aes_fpga.appliance.spec.ENTROPY_COUNTERS` (its ``EntropyState`` values are
    :class:`~aes_fpga.appliance.spec.EntropyStatus`'s), its words to ``RANDOM``, and, in a
    diagnostic build (``info.entropy_raw``), its raw samples to ``ENTROPY_RAW``."""
    m.submodules.entropy = source
    m.d.comb += [executor.counters[at].eq(source.state.as_value()),
                 executor.counters[at + 1].eq(source.rct_failures),
                 executor.counters[at + 2].eq(source.apt_failures),
                 executor.entropy_state.eq(source.state.as_value())]
    wiring.connect(m, source.o, executor.entropy_words)
    if executor.info.entropy_raw:
        m.d.comb += [executor.entropy_sample.eq(source.sample),
                     executor.entropy_sample_valid.eq(source.sample_valid)]


def drive_data(m, x, tables, results):
    """``data``: the table being sent (a :class:`~.handlers.TableReply`'s), else the results
    of the handler sending (``[(valid, byte, fire)]``: ``PROCESS``'s, ``RANDOM``'s; one is
    sending at a time, in reply order; each ``fire`` driven here)."""
    table = reduce(operator.or_, [t.active for t in tables])
    valid = reduce(operator.or_, [r_valid for r_valid, _, _ in results])
    byte = results[-1][1]
    for r_valid, r_byte, _ in results[:-1]:
        byte = Mux(r_valid, r_byte, byte)
    for t in reversed(tables):
        byte = Mux(t.active, t.rows[x.table_index], byte)
    m.d.comb += [x.data.valid.eq(Mux(table, 1, valid)), x.data.payload.eq(byte)]
    m.d.comb += [fire.eq(~table & r_valid & x.data.ready) for r_valid, _, fire in results]
