"""The appliance's protocol engine: :mod:`aes_fpga.appliance.spec` in gateware, around a core.

:class:`ProtocolEngine` takes the bytes a host sends (``rx``, the UART already removed) and
answers on ``tx`` exactly as :class:`aes_fpga.appliance.DeviceModel` does. It is a stack of
small stream components, one per layer, each in its own module::

    rx -> CobsDecoder -> FrameCheck -> Executor -> ReplyBuilder -> CobsEncoder -> tx
          (cobs)         (check:       (executor:   (reply:         (cobs)
                          ring, CRC,    commands,    header,
                          header)       ModeEngine)  CRC)

Every number of the protocol (opcodes, status codes, sizes, flags, magic, field offsets) is
taken from :mod:`aes_fpga.appliance.spec` at elaboration.

GCM (spec "GCM messages") is a build option, ``gcm=`` a GHASH variant of
:class:`~aes_fpga.modes.ModeEngine` (``None`` by default: the hardware without it). With it
``INFO`` lists GCM, ``STATS`` reports ``auth_failures``, and the replies to the last
``window`` GCM chunks are kept in block RAM for retransmissions (see
:mod:`~.gcm_process`). Measured on xc7a35t (``synth_xilinx`` with the hierarchy kept,
DRAB-LOCUS AES-128, one slot, window 1: the engine without its core and GHASH, the sum of
the groups but ``core`` and ``ghash``): 2000 LUT, 136 LUT as memory, 1398 FF, 1 RAMB18
without GCM; 2836 LUT, 156 LUT as memory, 2213 FF, 2 RAMB18 with it (of the 836 LUT more,
664 are the executor's: GCM's checks, its message state, the verdict and the kept replies
with their clearing, whose bytes take the RAMB18; 173 the mode engine's GCM control; the
frame check's differ by one); the block-RAM GHASH adds 279 LUT, 920 FF, 16 RAMB36 and
15 DSP48E1, the LUT GHASH (digit 8, ``gcm='lut'``) 667 LUT and 393 FF (without ``gcm=`` for
the engine without GCM)::

    python -c "from aes_fpga.appliance.gateware.engine import ProtocolEngine as E; \
    from aes_fpga.flow.synth import group_modules, synthesize; \
    r = synthesize(E(key_slots=1, key_sizes=(128,), gcm='bram'), hierarchy=True); \
    print(group_modules(r.modules, {'': 'engine', 'check': 'check', 'executor': 'executor', \
    'executor.modes': 'modes', 'executor.modes.core': 'core', \
    'executor.modes.ghash': 'ghash'}))"

An entropy source is another build option, ``entropy=`` an
:class:`~aes_fpga.entropy.EntropySource`: ``INFO`` then sets its features bit and ``STATS``
reports the source's state and failure counts (:data:`~aes_fpga.appliance.spec.
ENTROPY_COUNTERS`), and ``RANDOM`` answers with the source's words (its ``o``, conditioned:
the conditioning and its AES core are in the build; :class:`~.handlers.Random` gathers a
reply's words in a block RAM before it answers). The health tests run on every raw sample
whether words are taken or not. Measured on xc7a35t (Yosys ``synth_xilinx``, DRAB-LOCUS
AES-128, one slot, window 1): 2221 LUT, 2138 FF, 9 RAMB18 without a source; 3076 LUT,
3329 FF, 12 RAMB18 with one (the source alone is 487 LUT, 952 FF, 2 RAMB18, see
:class:`~aes_fpga.entropy.EntropySource`; the rest is ``RANDOM``'s RAM, its counters and the
wiring); 3125 LUT, 3413 FF, 13 RAMB18 with ``entropy_raw`` as well (and 12 RAMB36 and
18 DSP48E1 in all three)::

    python -c "from aes_fpga.appliance.gateware.engine import ProtocolEngine as E; \
    from aes_fpga.entropy import EntropySource as S; from aes_fpga.flow.synth import \
    synthesize; [print(synthesize(E(key_slots=1, key_sizes=(128,), **kw), \
    'xc7a35tcsg324-1').total) for kw in ({}, {'entropy': S()}, \
    {'entropy': S(), 'entropy_raw': True})]"
"""

from amaranth.hdl import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ...cores import DEFAULT_CORE, make_core
from ...stage import skid
from .. import spec
from ..frame import serial_frame_limit
from ..messages import DeviceInfo
from ..session_spec import SESSIONS_HELD, SessionCommand
from .check import FrameCheck
from .cobs import ENCODER_LAYOUT, CobsDecoder, CobsEncoder
from .executor import Executor, attach_entropy, gcm_modes, offered_key_sizes
from .gcm_process import kept_reply_memory
from .reply import ReplyBuilder

__all__ = ["ProtocolEngine", "CobsEncoder", "ENCODER_LAYOUT"]


class ProtocolEngine(wiring.Component):
    """The AES appliance behind its byte streams: :mod:`aes_fpga.appliance.spec` around a core.

    ``rx`` takes the bytes the host sends, ``tx`` gives the bytes to send back; both are
    8-bit :mod:`amaranth.lib.stream` interfaces (put a UART on them for the real appliance).
    The engine answers every request exactly as :class:`aes_fpga.appliance.DeviceModel` with
    :attr:`info` does.

    Operation: the layers work at once, on different frames. :class:`~.cobs.CobsDecoder`
    decodes COBS and drops malformed, oversized and short frames; :class:`~.check.FrameCheck`
    keeps each frame's payload in a 2048-byte ring (for ``SERIAL_MAX_PAYLOAD``), checks CRC, length
    and command and presents it as a request; :class:`~.executor.Executor` validates and
    executes it (``PROCESS`` chunks through a :class:`~aes_fpga.modes.ModeEngine`, results
    streamed straight to the reply); :class:`~.reply.ReplyBuilder` adds header and CRC;
    :class:`~.cobs.CobsEncoder` encodes in place in a 256-byte ring. While one request
    executes and its reply leaves, the next frame is received into the ring, so with requests
    pipelined (the protocol's window) ``rx`` and ``tx`` each carry about one byte per cycle:
    1 KiB CTR chunks take about 1.02 cycles per payload byte in steady state (AES-128 core;
    CBC encryption is bound by the core's latency per block). ``rx`` is back-pressured
    whenever a layer is full (a frame's end while the previous request is still presented, a
    full ring, a second key while one is held), so nothing is lost and ``BUSY`` is never
    sent.

    Timing: the layers meet at registered stream stages (:class:`~aes_fpga.stage.SkidBuffer`,
    one cycle each; the decoder has its own), so no valid/ready path runs through more than
    one layer, and inside the layers counters are compared into registered flags: ``aes-fpga
    timing --design uart`` counts the logic levels (``tests/test_appliance_depth.py`` holds the
    bound).

    Chaining: the message in progress (slot, op, mode) is kept in the executor, the chaining
    value in the :class:`~aes_fpga.modes.ModeEngine`, which a ``FIRST`` chunk's IV starts
    afresh, so a ``FIRST`` chunk without data still starts the message.

    Keys are write-only: a ``LOAD_KEY``'s key bytes go from the frame check's delay line into
    one key register only (never into the ring or any header register), from there to the
    core's key schedule; the register is cleared when the request has been answered or the
    frame dropped, accepted or refused, and no reply contains key material. ``ZEROIZE`` sends
    the slot to the core's key schedule with ``zeroize`` set, which overwrites every round key
    of the slot (both ops) with zeros, and marks the slot empty, so ``PROCESS`` answers
    ``KEY_NOT_LOADED``. With GCM it then overwrites with zeros every byte of the kept replies'
    block RAM but those of replies still kept (another slot's message's), before it answers:
    ``window * stride`` cycles more (:class:`~.gcm_process.KeptReplies`; 4096 for a window of
    4 and 1 KiB chunks), during which the next requests wait.

    Parameters
    ----------
    core : DrabLocus, optional
        The core (with the common core interface); by default a
        :class:`~aes_fpga.cores.DrabLocus` with ``key_slots`` and ``key_sizes``.
    key_slots : int
        Key slots (1 to 64) of the default core; must match ``core.key_slots`` when a core is
        given.
    key_sizes : tuple of int
        Key lengths of the default core; a given core's ``key_sizes`` are used instead.
    modes : tuple of protocol.Mode
        Modes to accept (``BAD_MODE`` for others).
    max_payload : int
        Largest payload accepted, reported by ``INFO``; from
        :data:`~aes_fpga.appliance.spec.MIN_MAX_PAYLOAD` to
        :data:`~aes_fpga.appliance.spec.MAX_PAYLOAD` (default
        :data:`~aes_fpga.appliance.spec.SERIAL_MAX_PAYLOAD`, 1 KiB chunks).
        The ring holds ``max_payload - 4`` bytes rounded up to a power of two (2048 bytes for
        either).
    core_name : str
        Reported by ``INFO``.
    window : int
        Requests a host may have unanswered (``INFO``, see the protocol's *Pipelining*), 1 to
        255. On its own the engine loses nothing whatever the host sends (``rx`` is
        back-pressured); behind a UART without flow control the receive buffer in front of it
        must hold ``window - 1`` frames of ``serial_frame_limit(max_payload)`` bytes
        (:class:`~aes_fpga.appliance.UartAppliance` sizes its FIFO so). With ``gcm`` at most
        :data:`~aes_fpga.appliance.spec.GCM_MAX_WINDOW` (a :class:`ValueError` beyond): a
        reply is kept per place of the window.
    build_id : int
        32-bit bitstream identifier reported by ``INFO``.
    gcm : None, "bram" or "lut"
        GCM (spec "GCM messages") with the mode engine's GHASH of that variant
        (:class:`~aes_fpga.modes.ModeEngine`), added to ``modes``; ``None``: no GCM, and the
        hardware of an engine without it.
    max_gcm_data, max_gcm_aad : int
        With ``gcm``: a message's data and AAD limits (``TOO_LONG`` beyond), the protocol's
        by default (smaller ones let a test reach them; :class:`~aes_fpga.appliance.DeviceModel`
        takes the same).
    entropy : EntropySource, optional
        An entropy source for the engine to report in ``INFO`` and ``STATS`` and to serve
        ``RANDOM`` from; ``None``, the default, the hardware without one.
    entropy_raw : bool
        A diagnostic build (with ``entropy``): ``ENTROPY_RAW`` gives the source's raw samples
        for an offline assessment (one more block RAM). Off by default: its words are no
        secret in such a build (spec "Commands").
    device_secret : bytes, optional
        A device with a secret (32 bytes; spec :mod:`~aes_fpga.appliance.session_spec`): the
        session handshake (:mod:`.session_handlers`), every other command refused in the
        clear, ``RECORD`` carries the rest (:mod:`.session_records`). Needs ``entropy``. The
        session keys are held by the records' own cipher (a Compact8 with AES-256), not by
        ``core``. The secret is put into the netlist as a constant and nowhere else.
    sessions_held : int
        With ``device_secret``: the sessions held (2 to 4).

    Attributes
    ----------
    info : DeviceInfo
        What ``INFO`` reports; ``protocol.DeviceModel(engine.info)`` is the engine's golden
        model.
    kept_memory : MemoryData or None
        With ``gcm``: the contents of the kept replies' block RAM, which a simulation may read
        (``ctx.get(engine.kept_memory[n])``); else None.
    """

    def __init__(self, core=None, *, key_slots=4, key_sizes=(128, 192, 256),
                 modes=spec.BLOCK_MODES, max_payload=spec.SERIAL_MAX_PAYLOAD,
                 core_name="drab-locus", build_id=0, window=1, gcm=None,
                 max_gcm_data=spec.GCM_MAX_DATA_BYTES, max_gcm_aad=spec.GCM_MAX_AAD_BYTES,
                 entropy=None, entropy_raw=False, device_secret=None,
                 sessions_held=SESSIONS_HELD):
        secured = device_secret is not None
        core_slots = key_slots
        key_sizes = offered_key_sizes(self, core, core_slots, key_sizes)
        if secured and entropy is None:
            self._MustUse__used = True
            raise ValueError("entropy: a device with a secret needs an entropy source (its "
                             "device challenges)")
        self._device_secret, self.sessions_held = device_secret, sessions_held
        modes = gcm_modes(self, modes, gcm)
        self.entropy = entropy
        self.gcm = gcm
        self.gcm_limits = {"max_gcm_data": max_gcm_data, "max_gcm_aad": max_gcm_aad}
        # DeviceInfo checks every value and names the field that is wrong (before a default
        # core is made, which would otherwise be left unused).
        self.info = DeviceInfo(core_name=core_name, build_id=build_id,
                                        key_sizes=key_sizes, key_slots=key_slots, modes=modes,
                                        max_payload=max_payload, window=window,
                                        entropy=entropy is not None,
                                        entropy_raw=entropy_raw, sessions=secured)
        try:
            spec.check_gcm_window(modes, window)
        except ValueError:
            self._MustUse__used = True
            raise
        self.kept_memory = None if gcm is None else kept_reply_memory(self.info)
        if core is None:
            core = make_core(DEFAULT_CORE, key_slots=core_slots, key_sizes=key_sizes,
                             tag_width=0)
        self.core = core
        super().__init__({
            "rx": In(stream.Signature(8)),
            "tx": Out(stream.Signature(8)),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.decoder = decoder = CobsDecoder(serial_frame_limit(self.info.max_payload))
        counters = {} if self.entropy is None else {"counters": len(spec.ENTROPY_COUNTERS)}
        more = {}
        if self._device_secret is not None:
            counters.update(device_secret=self._device_secret,
                            sessions_held=self.sessions_held)
            more["more_commands"] = tuple(SessionCommand)
        if self.gcm is None:
            m.submodules.executor = executor = Executor(self.core, self.info, **counters)
            m.submodules.check = check = FrameCheck(self.info.max_payload,
                                                    key_bytes=executor.key_bytes, **more)
        else:
            m.submodules.executor = executor = Executor(self.core, self.info, gcm=self.gcm,
                                                        kept_memory=self.kept_memory,
                                                        **counters, **self.gcm_limits)
            m.submodules.check = check = FrameCheck(self.info.max_payload,
                                                    key_bytes=executor.key_bytes, gcm=True,
                                                    **more)
        if self.entropy is not None:
            # STATS: no transport counters before the source's.
            attach_entropy(m, executor, self.entropy, 0)
        m.submodules.reply = reply = ReplyBuilder()
        m.submodules.encoder = encoder = CobsEncoder()
        # Registered stages where a layer boundary carries a long valid/ready path: each
        # layer passes ``ready`` back combinationally, so without them one path would run from
        # the UART transmitter through every layer into the core and the receive FIFO.
        # (The decoder has its own input stage.)
        wiring.connect(m, wiring.flipped(self.rx), decoder.i)
        skid(m, "check_stage", decoder.o, check.i)
        wiring.connect(m, check.req, executor.req)
        # A request's payload is streamed until the request is taken; what the executor
        # leaves unread (a refused request's) is skipped then, and so must the stage's. The
        # flush comes a cycle after the take (registered): in that cycle the frame check sends
        # nothing (its next request's payload starts a cycle later) and the executor reads
        # nothing (it is checking the next request), so only the old bytes go.
        # The payload comes out of the frame check's ring, a block RAM read: a pipeline stage
        # takes it into flip-flops with no LUT in front (the skid buffer's register has its
        # input multiplexer), and both stages are flushed together.
        payload_stage = skid(m, "payload_stage", check.payload, executor.payload, flush=True,
                             pipe="payload_pipe")
        flush = Signal()
        m.d.sync += flush.eq(check.req.valid & check.req.ready)
        m.d.comb += payload_stage.flush.eq(flush)
        wiring.connect(m, executor.reply, reply.desc)
        skid(m, "data_stage", executor.data, reply.data)
        skid(m, "reply_stage", reply.o, encoder.i)
        skid(m, "tx_stage", encoder.o, wiring.flipped(self.tx))
        return m
