"""The record layer of a device with a secret in gateware (spec
:mod:`aes_fpga.appliance.session_spec`, "Records"), as the reference device's
:class:`~aes_fpga.appliance.sessions.SessionGate` answers ``RECORD``.

:class:`RecordLayer` sits inside the :class:`~.executor.Executor`, between its ports and its
command handlers, and lets a record's inner request run through those handlers exactly as a
request in the clear would:

1. ``RECORD`` (:class:`~.session_handlers.Record`) reads the record's counter, then opens it on
   the :class:`~.session_record.RecordCipher` under the session's request key (the clear
   header, session id and counter as AAD): the plaintext goes into a block RAM (a
   ``LOAD_KEY``'s key bytes into a key register only) while the inner request's fields
   (command, head, key, J0 check, digest) are taken from it;
2. the tag is checked inside the cipher (all 16 bytes at once); a failed tag or a counter the
   replay rule (:class:`~.session_counters.RecordCounters`) refuses drops the record: no
   reply, ``session_failures`` counted, nothing else changes. A counter past ``max_records``
   is ``SESSION_EXPIRED`` in the clear;
3. an authenticated record's counter is taken and the layer turns ``inner``: the handlers see
   the inner request (its payload streamed from the block RAM) instead of the ports', and
   their reply (descriptor and bytes) goes into a second block RAM instead of the ports;
4. once that reply's descriptor is in, it is sealed under the session's reply key as its
   bytes come, and sent on the ports (status ``OK``, session id, counter, sealed reply, tag);
   only then is the outer request taken. A ``CLOSE_SESSION`` ends its session, a
   ``ZEROIZE`` of every slot every session, after the sealed reply.

The cipher's core is the transport's (:data:`~.executor.TRANSPORT_NEEDS`): over UDP a
LutRound (a byte a cycle), on a serial line a Compact8 (224 cycles a block, 14 cycles a byte:
the line brings a byte every few hundred cycles). Over UDP the replies are sealed on a second
cipher of their own, so that the next record is opened while a reply is sealed (below).

Latency: a record's bytes through the cipher (:class:`~.session_record.RecordCipher`), the
inner request as in the clear (a ``PROCESS``'s first two blocks given whole, :data:`PREFETCH`),
its reply through the cipher again. The seal runs beside the inner request (it starts once the
inner reply's descriptor is in, reading each reply byte after it is captured), so with the
LutRound a record of ``n`` bytes costs about ``n`` cycles to open and ``n`` more for its inner
request and seal, plus a few blocks of GCM each way (H, E_K(J0), the AAD, the tag); the seal's
first byte comes after the inner request's first block through the main core (115 cycles on
DRAB-LOCUS AES-128) and the seal's first block gathered and enciphered. Throughput: on a shared
cipher (the serial line) one record at a time, the next opened once the reply is sealed; over UDP
the executor is handed the next request as soon as the inner one is taken (the seal's lag behind
it, about 200 cycles for a full-sized ``PROCESS``, is then off the executor's path), so a
record costs the executor its open and its inner request, about ``2 n`` cycles: less than a
full-sized record's frame takes on an MII line (two cycles a byte, ``tests/
test_session_record_overlap.py``). See the README for the figures (``aes-fpga bench --design
ethernet --phy mii|rmii --device-key-file F``, and ``--design uart`` for the serial line).
Nothing is answered ``BUSY``; the ports are back-pressured.

Records still act one after another (the reference device's order), with no effect before a
record's tag is verified: the next record is opened into the request RAM and its fields only
after the inner request before it has read them; its verdict (drop, kept reply, counter taken,
inner request run) waits until the reply before it is sealed and kept; a reply in the clear
waits for the seal's last byte; the seal's record fields are registers of its own. A record
that ends sessions (``CLOSE_SESSION``, ``ZEROIZE`` of every slot) holds the executor until its
seal ends, as on a shared cipher.

Timing (logic depth on xc7a35t, :func:`aes_fpga.flow.timing.timing`)::

    python -c "from aes_fpga.appliance.gateware.engine import ProtocolEngine as E; \
    from aes_fpga.entropy import EntropySource as S; from aes_fpga.flow.timing import timing; \
    r = timing(E(key_slots=4, entropy=S(), device_secret=bytes(range(32))), worst=4); \
    print(r[0].worst_levels, [(p.start.name, p.end.name, p.levels) for p in r[0].paths])"

gives 5 LUT levels at worst (2026-11-27, native Yosys; 6 on 2026-11-26, inside the records'
mode engine), the record layer's own (the records' cipher's tag count into the seal reader's
count, the session place into the kept entries' comparison): the handlers see a registered
view of the inner or outer request, the kept entries' comparison is registered in parts, the
length the cipher opens is a register, and the seal's ownership of the ports and the record
fields it seals are registers. (That is the serial line's engine, one record cipher; the UDP
engine's second cipher and hand-over are not in that figure.)

Routed on ECP5, the ULX3S 85F (nextpnr-ecp5 with the flow's seed, 1)::

    aes-fpga keygen K
    aes-fpga build --board ulx3s-85 --design uart --core compact8 --device-key-file K

Asked for 100 MHz (``--clock-mhz 100``), with the records on the serial line's compact8
(:data:`~.executor.TRANSPORT_NEEDS`), the record cipher's output stage, the key bytes' one-hot
place and the handshake's comparisons registered every cycle, the build synthesizes to 13312
LUT4 and 9455 FF (its report, 2026-11-26); nextpnr's placement estimated 66.03 MHz with about 2,800
endpoints short of the clock (its slack histogram), and the router still had about 4,200 arcs
to route after 1,450 s and was stopped.
Earlier figures of the same command, 100 MHz asked: 84.97 MHz (records on a compact8, before
the cores wrote their round keys from a register; 12396 LUT4) and 79.58 MHz (with that
register; the seal's valid/ready chain critical, which the cipher's output stage now cuts);
with the records on the LutRound (16534 LUT4) the placement estimated 52.75 MHz and the router
did not finish. What limits it: the compact8 datapath (the records' and the host's), whose S-box
block RAM is read without its output register (5.61 ns on the -6 part) into five LUT4s of
serial MixColumns, 6.8 ns of logic before any routing (the critical path below), and the
design's size on the die (the router's congestion at 100 MHz; the open ``uart`` design around
the DRAB-LOCUS alone routes at 94.94 MHz, README "Build"). So the board declares the
clock of a secured build (``secured_clock_mhz`` in ``boards/ulx3s.py``: 75 MHz, where 3 Mbaud
is a byte every 250 cycles, far more than the compact8 records' 14 cycles a byte); the command
above builds at it and routes at 82.92 MHz, the clock met (2026-11-26; 13400 LUT4, 9453 FF,
22 DP16KD, 140 TRELLIS_DPR16X4; place and route about 11 minutes of one core), its critical
path inside the records' compact8: from its S-box block RAM (an unregistered read, 5.61 ns of
the 12.06) through the serial MixColumns into an accumulator (5 LUT4s, 5.27 ns of routing).
Since compact8 reads its block RAMs through their output registers the router went round in
circles on this build's reset net (8396 flip-flops' LSR pins through general routing), so a
secured ULX3S build takes its reset through a DCCA onto a global network
(``secured_global_reset``): 83.91 MHz at seed 1 (2026-11-27), the critical path in the records'
cipher, from its state register into its engine's input buffer (11.9 ns, 9.7 of it routing).
``tests/test_build_secret.py`` routes it (``-m slow``) and holds it to the board's clock.

Not zeroized: the plaintext and reply RAMs keep the last record's inner request and reply
(as the frame check's ring keeps a request in the clear) until the next record overwrites
them; the key bytes of a ``LOAD_KEY`` never enter them.
"""

from amaranth.hdl import Array, Cat, Const, Mux, Signal
from amaranth.lib import crc, stream
from amaranth.lib.memory import Memory

from ...cores.interface import KeyBits
from .. import spec
from ..session_spec import (
    RECORD_REPLY_OVERHEAD,
    SESSION_ID_BYTES,
    SessionCommand,
)
from .check import HEAD_SIZE
from .handlers import any_of
from .session_counters import RecordCounters
from .session_kept import KeptRecords, RamReader
from .session_record import RecordCipher

__all__ = ["RecordLayer"]

#: Where a ``LOAD_KEY``'s key bytes start in a record's plaintext (opcode, slot, key size).
_KEY_AT = 1 + spec.LOAD_KEY_HEADER.size
#: Where a ``PROCESS``'s IV field ends in a record's plaintext (after the opcode).
_J0_AT = 1 + spec.PROCESS_HEADER_SIZE + spec.BLOCK_SIZE - 4
#: The blocks of a ``PROCESS`` inner request given to its handler whole (:attr:`RecordLayer.
#: blocks`): a ``FIRST`` chunk's IV and first data block are gathered in two cycles instead of
#: 32, so its first block reaches the main core that much sooner after the verdict.
PREFETCH = 2
#: Where the payload after the head starts in a record's plaintext (after the opcode).
_STREAM_AT = 1 + HEAD_SIZE


class RecordLayer:
    """The record layer (see the module docstring), made by the executor of a device with a
    secret before its handlers: :attr:`req`, :attr:`payload`, :attr:`reply` and :attr:`data`
    are what the handlers use instead of the executor's ports. :meth:`datapath` builds it
    (from :class:`~.session_handlers.SessionParts`); the ``RECORD`` handler sets
    :attr:`opening` (a register) while the record is opened and calls :meth:`verdict`."""

    def __init__(self, executor):
        info = executor.info
        self.info, self.held = info, executor.sessions_held
        self.gcm = executor.gcm is not None
        self.key_bytes = executor.key_bytes
        self.outer_req, self.outer_payload = executor.req, executor.payload
        self.outer_reply, self.outer_data = executor.reply, executor.data
        self.req = stream.Signature(executor.req.payload.shape()).create()
        self.payload = stream.Signature(8).create()
        self.reply = stream.Signature(executor.reply.payload.shape()).create()
        self.data = stream.Signature(8).create()
        #: The handlers see a record's inner request and their reply goes to the seal.
        self.inner = Signal(name="record_inner")
        #: The ``RECORD`` handler is opening the record (its payload into the cipher).
        self.opening = Signal(name="record_opening")
        #: The seal is done: the outer request is taken.
        self.outer_release = Signal(name="record_release")
        self.depth = 1 << (info.max_payload - 1).bit_length()
        self.cipher = RecordCipher(held=self.held, max_bytes=info.max_payload, gcm="lut",
                                   **executor.needs["record_cipher"])
        #: The replies are sealed on a record cipher of their own (:data:`~.executor.
        #: TRANSPORT_NEEDS`), and the executor takes the next request while a reply is sealed.
        self.split = executor.needs["seal_cipher"]
        self.seal_cipher = RecordCipher(held=self.held, max_bytes=info.max_payload, gcm="lut",
                                        **executor.needs["record_cipher"]) \
            if self.split else self.cipher
        #: A reply is being sealed: from its descriptor to its last byte, the seal has the
        #: executor's ports; :attr:`settled` a few cycles after it ended (its reply kept).
        self.seal_busy = Signal(name="record_seal_busy")
        self.settled = Signal(name="record_seal_settled")
        #: The record whose reply is sealed: its session's place, id and counter, its request's
        #: ``seq``, its kept reply's entry, and whether it zeroizes every slot (all taken as
        #: its reply's descriptor comes, so that the next record may be opened meanwhile).
        self.s_place = Signal(range(self.held), name="seal_place")
        self.s_session_id = Signal(8 * SESSION_ID_BYTES, name="seal_id")
        self.s_counter = Signal(64, name="seal_counter")
        self.s_seq = Signal(16, name="seal_seq")
        self.s_zeroize_all = Signal(name="seal_zeroize_all")
        #: The executor was handed the next request before the seal ended.
        self.handed = Signal(name="record_handed_over")
        # (Pipelined: a record's counter is known hundreds of cycles before its verdict.)
        self.counters = RecordCounters(held=self.held, window=info.window,
                                       max_records=executor.max_records, pipelined=True)
        self.kept = KeptRecords(self.held, info.window, info.max_payload)
        self.datagram = executor.datagram
        # The record: its session's place, id and counter, the tag's verdict.
        self.place = Signal(range(self.held), name="record_place")
        self.session_id = Signal(8 * SESSION_ID_BYTES, name="record_id")
        self.counter = Signal(64, name="record_counter")
        self.tag_ok = Signal(name="record_tag_ok")
        #: The bytes the cipher opens (the inner request and its padding byte), a register.
        self.open_length = Signal(range(info.max_payload + 1), name="record_open_length")
        self.r_hit = Signal(name="record_kept_hit")
        self.r_ok = Signal(name="record_acceptable")
        self.r_expired = Signal(name="record_expired")
        # The inner request.
        self.i_valid = Signal(name="inner_valid")
        self.i_command = Signal(8, name="inner_command")
        self.i_length = Signal(range(info.max_payload + 1), name="inner_length")
        self.i_head = Array(Signal(8, name=f"inner_head{n}") for n in range(HEAD_SIZE))
        self.i_key = Signal(8 * self.key_bytes, name="inner_key")
        self.i_j0 = Signal(name="inner_j0")
        #: A ``PROCESS`` inner request's first :data:`PREFETCH` blocks after its head (its IV
        #: and first data block, say), taken from the plaintext as it is opened, for the
        #: handler to take whole (:class:`~.handlers.Process`) instead of byte by byte.
        self.blocks = stream.Signature(8 * spec.BLOCK_SIZE).create()
        self.prefetched = Signal(8 * spec.BLOCK_SIZE * PREFETCH, name="inner_prefetched")
        # Session ends due once the sealed reply is out; the ended sessions' key slots still
        # to zeroize.
        self.close_due = Signal(name="record_close_due")
        self.wipe = Signal(2 * self.held, name="record_key_wipe")
        # The inner reply as it is taken (its length and status, the bytes still to come, all
        # in), and the outer reply made of it.
        self.cap_len = Signal(range(spec.MAX_PAYLOAD + 1), name="inner_reply_length")
        self.cap_status = Signal(8, name="inner_reply_status")
        self.cap_left = Signal(range(spec.MAX_PAYLOAD + 1), name="inner_reply_left")
        self.cap_done = Signal(name="inner_reply_done")
        #: The inner reply's descriptor is in (its length known: the seal may start); where
        #: its next byte goes; a byte of it is taken.
        self.cap_desc = Signal(name="inner_reply_started")
        self.cap_at = Signal(range(self.depth + 1), name="inner_reply_at")
        self.took_byte = Signal(name="inner_reply_byte")
        self.seal_desc = Signal(executor.reply.payload.shape(), name="seal_desc")
        self.seal_desc_valid = Signal(name="seal_desc_valid")
        self.seal_valid = Signal(name="seal_valid")
        self.seal_byte = Signal(8, name="seal_byte")

    # ---- the handlers' view ----------------------------------------------------------------

    def _route(self, m):
        inner, req, oreq = self.inner, self.req, self.outer_req
        i_status = Mux(any_of(self.i_command, [*spec.Command, SessionCommand.CLOSE_SESSION]),
                       spec.Status.OK, spec.Status.UNKNOWN_COMMAND)
        o, r = oreq.payload, req.payload
        # The handlers' view is registered: the inner/outer multiplexers end at flip-flops,
        # not in the validation's comparisons behind them. It is valid one cycle after its
        # source became valid or changed (a take, or ``inner`` turning), so the handlers never
        # see a stale request. (Both sources hold their fields while valid.)
        source_valid = Mux(inner, self.i_valid, oreq.valid)
        fresh = Signal(name="record_view_fresh")
        inner_seen = Signal(name="record_view_inner")
        m.d.sync += [fresh.eq(source_valid & ~(req.valid & req.ready)), inner_seen.eq(inner)]
        m.d.comb += [
            req.valid.eq(source_valid & fresh & (inner == inner_seen)),
            r.seq.eq(o.seq),
            # (The key of an inner LOAD_KEY only: in the clear LOAD_KEY is refused before its
            # handler, so the frame check's key register has no reader and no multiplexer.)
            r.key.eq(self.i_key),
        ]
        view = Signal(r.shape(), name="record_view")
        m.d.sync += [
            view.status.eq(Mux(inner, i_status, o.status)),
            view.command.eq(Mux(inner, self.i_command, o.command)),
            view.length.eq(Mux(inner, self.i_length, o.length)),
            *[view.head[n].eq(Mux(inner, self.i_head[n], o.head[n])) for n in range(HEAD_SIZE)],
        ]
        m.d.comb += [r.status.eq(view.status), r.command.eq(view.command),
                     r.length.eq(view.length), r.head.eq(view.head)]
        if self.gcm:
            m.d.sync += [
                view.j0.eq(Mux(inner, self.i_j0 & (self.i_length >= _J0_AT + 3), o.j0)),
                view.digest.eq(Mux(inner, self.digest.crc, o.digest))]
            m.d.comb += [r.j0.eq(view.j0), r.digest.eq(view.digest)]
        with m.If(inner & req.ready):
            m.d.sync += [self.i_valid.eq(0), self.i_key.eq(0), self.blocks_left.eq(0)]
        # (The outer request is taken by the seal's end, or in the clear by the handlers.)
        m.d.comb += oreq.ready.eq(Mux(inner, 0, req.ready) | self.outer_release)
        pay, opay, rd = self.payload, self.outer_payload, self.reader
        m.d.comb += [pay.valid.eq(Mux(inner, rd.valid, opay.valid)),
                     pay.payload.eq(Mux(inner, rd.payload, opay.payload)),
                     opay.ready.eq(~inner & pay.ready), rd.ready.eq(inner & pay.ready)]

    # ---- opening ---------------------------------------------------------------------------

    def _open(self, m, wport):
        """While :attr:`opening`: the record's payload after its counter into the cipher, the
        plaintext into the request RAM and the inner request's fields."""
        cipher, req = self.cipher, self.outer_req.payload
        pt = cipher.o
        at = Signal(range(self.depth + 1), name="record_pt_at")
        aad = Cat(Const(0, 8), self.counter, self.session_id, req.length, req.seq, req.command)
        self.digest = crc.catalog.CRC32_ETHERNET(8).create() if self.gcm else None
        with m.If(self.opening):
            m.d.comb += [
                cipher.start.valid.eq(1), cipher.start.payload.decrypt.eq(1),
                cipher.start.payload.place.eq(self.place),
                cipher.start.payload.nonce.eq(Cat(self.counter, self.session_id)),
                # (17 bytes: the last byte of the field is padding)
                cipher.start.payload.aad.eq(aad),
                cipher.start.payload.aad_len.eq(len(aad) // 8 - 1),
                cipher.start.payload.length.eq(self.open_length),
                cipher.i.valid.eq(self.payload.valid), cipher.i.payload.eq(self.payload.payload),
                self.payload.ready.eq(cipher.i.ready),
                pt.ready.eq(1), cipher.verdict.ready.eq(1),
            ]
        with m.If(cipher.verdict.valid & cipher.verdict.ready):
            m.d.sync += self.tag_ok.eq(cipher.verdict.payload.ok)
        byte = pt.payload
        # A LOAD_KEY's key bytes: ``is_key`` from its first on (a register, set as the byte
        # before it comes), and the byte each goes to as a one-hot register shifted along, so
        # no subtraction from ``at`` and no decoder lies between the byte and the key register.
        is_key = Signal(name="record_is_key")
        key_sel = Signal(self.key_bytes, name="record_key_sel")
        m.d.comb += [wport.addr.eq(at), wport.data.eq(byte),
                     wport.en.eq(self.opening & pt.valid & ~is_key)]
        if self.gcm:
            m.submodules.record_digest = self.digest
            m.d.comb += [self.digest.data.eq(byte), self.digest.valid.eq(self.opening & pt.valid),
                         self.digest.start.eq(self.opening & pt.valid & (at == 0))]
        with m.If(self.opening & pt.valid):
            m.d.sync += at.eq(at + 1)
            with m.If((at == _KEY_AT - 1) & (self.i_command == spec.Command.LOAD_KEY)):
                m.d.sync += [is_key.eq(1), key_sel.eq(1 << (self.key_bytes - 1))]
            with m.Elif(is_key):
                m.d.sync += key_sel.eq(key_sel >> 1)
            with m.If(at == 0):
                m.d.sync += [self.i_command.eq(byte), self.i_j0.eq(1)]
            for n in range(HEAD_SIZE):
                with m.If(at == 1 + n):
                    m.d.sync += self.i_head[n].eq(byte)
            for k in range(self.key_bytes):
                with m.If(key_sel[k]):
                    m.d.sync += self.i_key.word_select(k, 8).eq(byte)
            for n in range(4):
                with m.If(at == _J0_AT + n):
                    m.d.sync += self.i_j0.eq(self.i_j0 & (byte == (1 if n == 3 else 0)))
        with m.If(~self.opening):
            m.d.sync += [at.eq(0), is_key.eq(0), key_sel.eq(0)]
        self._prefetch(m, at, byte)

    def _prefetch(self, m, at, byte):
        """:attr:`blocks`: a ``PROCESS``'s plaintext bytes after its head shifted into
        :attr:`prefetched` as the record is opened (a ``LOAD_KEY``'s never: its key bytes go
        to the key register only), given to the handler only once the record is taken
        (:meth:`verdict`); the rest of the payload is streamed after them."""
        pre = self.prefetched
        n = len(pre) // 8
        on = Signal(name="record_prefetch_on")
        with m.If(self.opening & self.cipher.o.valid):
            with m.If((at == _STREAM_AT - 1) & (self.i_command == spec.Command.PROCESS)):
                m.d.sync += on.eq(1)
            with m.If(at == _STREAM_AT + n - 1):
                m.d.sync += on.eq(0)
            with m.If(on):
                m.d.sync += pre.eq(Cat(byte, pre[:-8]))
        with m.If(~self.opening):
            m.d.sync += on.eq(0)
        # (Registers, decided long before the verdict reads them: the inner request's length
        # and command are taken from its first bytes.)
        self.pre_use = Signal(name="inner_prefetch_use")
        self.stream_at = Signal(range(self.depth), name="inner_stream_at")
        self.stream_len = Signal(range(self.info.max_payload + 1), name="inner_stream_length")
        use = (self.i_length >= HEAD_SIZE + n) & (self.i_command == spec.Command.PROCESS)
        m.d.sync += [
            self.pre_use.eq(use),
            self.stream_at.eq(Mux(use, _STREAM_AT + n, _STREAM_AT)),
            self.stream_len.eq(Mux(use, self.i_length - HEAD_SIZE - n,
                                   Mux(self.i_length > HEAD_SIZE, self.i_length - HEAD_SIZE, 0))),
        ]
        self.blocks_left = left = Signal(range(PREFETCH + 1), name="inner_blocks_left")
        B = 8 * spec.BLOCK_SIZE
        m.d.comb += [self.blocks.valid.eq(left != 0), self.blocks.payload.eq(pre[-B:])]
        with m.If(self.blocks.valid & self.blocks.ready):
            m.d.sync += [pre.eq(Cat(Const(0, B), pre[:-B])), left.eq(left - 1)]

    def check(self):
        """The statements (``sync``) that register what :meth:`verdict` acts on: a kept record,
        an acceptable one, an expired counter (64-bit comparisons, so their carry chains end at
        flip-flops)."""
        return [self.r_hit.eq(self.tag_ok & self.kept.hit),
                self.r_ok.eq(self.tag_ok & self.counters.acceptable),
                self.r_expired.eq(self.counters.expired)]

    def verdict(self, m, x):
        """The ``RECORD`` handler's state after the cipher: drop the record (no reply, counted),
        refuse it ``SESSION_EXPIRED`` in the clear, or take its counter and run its inner
        request. ``x`` is the executor's :class:`~.executor.ExecutorParts`."""
        counters, hs, kept = self.counters, self.hs, self.kept
        with m.If(self.r_hit):
            # A retransmission: its kept reply again, nothing run, nothing counted.
            with m.If(x.rep_free):
                m.d.sync += [x.reply(spec.Status.OK, kept.length),
                             self.i_key.eq(0), *kept.start_replay()]
                m.next = "RECORD_KEPT_WAIT"
        with m.Elif(~self.r_ok):
            m.d.comb += x.sessions.record_drop.eq(1)
            m.d.sync += [x.release.eq(1), self.i_key.eq(0)]
            m.next = "IDLE"
        with m.Elif(self.r_expired):
            with m.If(x.rep_free):
                m.d.sync += [x.reply(spec.Status.SESSION_EXPIRED), x.release.eq(1),
                             self.i_key.eq(0)]
                m.next = "IDLE"
        with m.Else():
            m.d.comb += [counters.accept.eq(1), hs.record_taken.eq(1),
                         hs.taken_place.eq(self.place)]
            m.d.sync += [self.inner.eq(1), self.i_valid.eq(1),
                         self.blocks_left.eq(Mux(self.pre_use, PREFETCH, 0)),
                         *self.reader.start(self.stream_at, self.stream_len)]
            m.next = "IDLE"

    # ---- the inner reply and its seal ------------------------------------------------------

    def _capture(self, m, wport):
        """While :attr:`inner`: the handlers' reply (status, then bytes) into the reply RAM;
        ``cap_done`` once it is all in."""
        reply, data = self.reply, self.data
        cap_at = self.cap_at
        took_desc = self.inner & reply.valid & reply.ready
        took_byte = self.took_byte
        # (The inner reply's bytes are captured until its last, also after the executor has
        # been handed the next request: see :meth:`_seal`.)
        capturing = self.cap_desc & ~self.cap_done
        m.d.comb += took_byte.eq(capturing & data.valid & data.ready)
        m.d.comb += [wport.en.eq(took_desc | took_byte),
                     wport.addr.eq(Mux(took_desc, 0, cap_at)),
                     wport.data.eq(Mux(took_desc, reply.payload.status, data.payload))]
        with m.If(took_desc):
            m.d.sync += [self.cap_len.eq(reply.payload.length),
                         self.cap_status.eq(reply.payload.status),
                         self.cap_left.eq(reply.payload.length - 1), cap_at.eq(1),
                         self.cap_desc.eq(1), self.cap_done.eq(reply.payload.length == 1)]
        with m.If(took_byte):
            m.d.sync += [cap_at.eq(cap_at + 1), self.cap_left.eq(self.cap_left - 1)]
            with m.If(self.cap_left == 1):
                m.d.sync += self.cap_done.eq(1)
        # The ports are the seal's while it is busy; the handlers' replies in the clear wait.
        inner, oreply, odata, busy = self.inner, self.outer_reply, self.outer_data, self.seal_busy
        clear = ~inner & ~busy
        m.d.comb += [
            oreply.valid.eq(Mux(busy, self.seal_desc_valid, clear & reply.valid)),
            oreply.payload.eq(Mux(busy, self.seal_desc, reply.payload)),
            reply.ready.eq(Mux(inner, 1, clear & oreply.ready)),
            odata.valid.eq(Mux(busy, self.seal_valid, clear & data.valid)),
            odata.payload.eq(Mux(busy, self.seal_byte, data.payload)),
            data.ready.eq(Mux(capturing, self.cap_left != 0, clear & odata.ready)),
        ]

    def _seal(self, m, hs, reader, rport):
        """Once the inner reply's descriptor is in: the outer reply's descriptor, then the
        session id and counter, then the sealed reply and its tag; then, the inner request
        taken, the outer request is taken and the session ends ``close_due`` asks for.

        The seal runs beside the inner request: ``reader`` (on the reply RAM's read port
        ``rport``) is started with the bytes captured so far and given one more as each is
        captured, so it never reads a byte before it is written, and the records' cipher
        seals the reply as the handlers make it (a record costs the cipher's time twice, not
        three times, a byte a cycle each).

        With a cipher of its own (:attr:`split`) the seal hands the executor over as soon as
        the inner request is taken: the outer request is taken and the next request is
        checked (and a record opened on the other cipher) while the reply is still captured
        and sealed. Not when the record ends sessions (``CLOSE_SESSION``, ``ZEROIZE`` of every
        slot): those wait for the seal's end, as every record does on a shared cipher. What
        the next request may do meanwhile acts on nothing the seal uses: the seal's record
        fields are its own registers (taken with the descriptor), the ports stay the seal's
        until its last byte (a reply in the clear waits), a new session's keys wait
        (:meth:`_keys`), and the next record's verdict waits until this one's reply is kept
        (:attr:`settled`), so records still act one after another."""
        cipher, desc = self.seal_cipher, self.seal_desc
        oreq = self.outer_req.payload
        sealing = Signal(name="record_sealing")
        head = Signal(8 * (SESSION_ID_BYTES + 8), name="seal_head")
        head_left = Signal(range(SESSION_ID_BYTES + 9), name="seal_head_left")
        # (A register, set before the descriptor goes out: the sum is not on the reply
        # builder's paths.)
        length = Signal(16, name="seal_length")
        record = Const(SessionCommand.RECORD, 8)
        m.d.comb += [desc.command.eq(record), desc.seq.eq(self.s_seq),
                     desc.status.eq(spec.Status.OK), desc.length.eq(length)]
        aad = Cat(self.s_counter, self.s_session_id, Const(spec.Status.OK, 8), length,
                  self.s_seq, Const(spec.reply_opcode(SessionCommand.RECORD), 8))
        with m.If(sealing):
            m.d.comb += [
                cipher.start.valid.eq(1), cipher.start.payload.decrypt.eq(0),
                cipher.start.payload.place.eq(self.s_place),
                cipher.start.payload.nonce.eq(Cat(self.s_counter, self.s_session_id)),
                cipher.start.payload.aad.eq(aad), cipher.start.payload.aad_len.eq(len(aad) // 8),
                cipher.start.payload.length.eq(self.cap_len),
                cipher.i.valid.eq(reader.valid), cipher.i.payload.eq(reader.payload),
                reader.ready.eq(cipher.i.ready),
                self.seal_valid.eq(Mux(head_left != 0, 1, cipher.o.valid)),
                self.seal_byte.eq(Mux(head_left != 0, head[-8:], cipher.o.payload)),
                cipher.o.ready.eq((head_left == 0) & self.outer_data.ready),
            ]
        with m.If(sealing & (head_left != 0) & self.outer_data.ready):
            m.d.sync += [head.eq(head << 8), head_left.eq(head_left - 1)]
        zeroize_all = ((self.i_command == spec.Command.ZEROIZE)
                       & (self.i_head[0] == spec.ALL_SLOTS) & (self.cap_status == spec.Status.OK))
        # (After RamReader's own statements, so these win: a byte captured while sealing
        # is one more to read; ``rport.en`` is the reader taking one.)
        with m.If(sealing & self.took_byte):
            m.d.sync += reader.left.eq(reader.left + 1 - rport.en)
        # ``settled``: two cycles after the seal's end, when the kept reply's entry reads back
        # (its LUT RAM, then the registered comparison).
        settling = Signal(name="record_seal_settling")
        m.d.sync += [settling.eq(~self.seal_busy),
                     self.settled.eq(settling & ~self.seal_busy)]
        with m.FSM(name="seal"):
            with m.State("WAIT"):
                # (The handlers may still be reading the inner request: a PROCESS's reply
                # starts as its first block goes into the mode engine.)
                with m.If(self.inner & self.cap_desc):
                    m.d.sync += [length.eq(self.cap_len + RECORD_REPLY_OVERHEAD),
                                 self.seal_busy.eq(1), self.s_place.eq(self.place),
                                 self.s_session_id.eq(self.session_id),
                                 self.s_counter.eq(self.counter), self.s_seq.eq(oreq.seq),
                                 self.s_zeroize_all.eq(zeroize_all)]
                    m.next = "DESC"
            with m.State("DESC"):
                m.d.comb += self.seal_desc_valid.eq(1)
                with m.If(self.outer_reply.ready):
                    m.d.sync += [sealing.eq(1),
                                 head.eq(Cat(self.s_counter, self.s_session_id)),
                                 head_left.eq(SESSION_ID_BYTES + 8),
                                 *reader.start(0, self.cap_at + self.took_byte)]
                    m.next = "SEAL"
            with m.State("SEAL"):
                if self.split:
                    with m.If(self.inner & ~self.i_valid & ~self.close_due
                              & ~self.s_zeroize_all):
                        m.d.comb += self.outer_release.eq(1)
                        m.d.sync += [self.inner.eq(0), self.handed.eq(1)]
                with m.If(cipher.start.ready):
                    m.d.sync += sealing.eq(0)
                    m.next = "END"
            with m.State("END"):
                # The sealed reply is out; the record ends once the handlers have taken the
                # inner request (a LOAD_KEY's reply, say, goes before its key is loaded).
                with m.If(self.handed | ~self.i_valid):
                    with m.If(~self.handed):
                        m.d.comb += self.outer_release.eq(1)
                    m.d.sync += [self.inner.eq(0), self.handed.eq(0), self.seal_busy.eq(0),
                                 self.cap_done.eq(0), self.cap_desc.eq(0),
                                 self.close_due.eq(0), *self.kept.store(m, self, length)]
                    m.d.comb += [hs.end.eq(self.close_due), hs.end_place.eq(self.s_place),
                                 hs.end_all.eq(self.s_zeroize_all)]
                    # The ended sessions' keys are overwritten in the ciphers' cores.
                    with m.If(self.s_zeroize_all):
                        m.d.sync += self.wipe.eq(-1)
                    with m.Elif(self.close_due):
                        m.d.sync += self.wipe.eq(self.wipe | (0b11 << 2 * self.s_place))
                    m.next = "WAIT"

    def _keys(self, m, hs):
        """The established sessions' keys from ``hs`` into the ciphers' cores; the slots in
        :attr:`wipe` (of sessions ended) zeroized first, the handshake's keys waiting (also
        while a reply is sealed: the executor may take a handshake meanwhile, see
        :meth:`_seal`). Returns the cycle a beat is in every core (``comb``)."""
        # (No stage of its own: the handshake's key, slot and valid are registers, and a
        # zeroize beat carries the handshake's key bits unread (the core's contract), so only
        # the slot and the flags pass a multiplexer on the way to the core. A beat's payload
        # holds: wipes are asked for only when a record's reply is sealed, never while the
        # handshake offers a key, and a handshake key waits until the wipes are done.)
        new = hs.session_key
        slot = Const(0, range(2 * self.held))
        for k in reversed(range(2 * self.held)):
            slot = Mux(self.wipe[k], k, slot)
        wiping = self.wipe.any()
        valid = wiping | (new.valid & ~self.seal_busy)
        keys = [self.cipher.key] + ([self.seal_cipher.key] if self.split else [])
        # Each beat goes into every cipher: one may take it before the other (``taken``).
        taken = Signal(len(keys), name="record_key_taken")
        done = Signal(name="record_key_done")
        m.d.comb += done.eq(Cat(*[taken[n] | key.ready for n, key in enumerate(keys)]).all())
        for n, key in enumerate(keys):
            m.d.comb += [key.valid.eq(valid & ~taken[n]), key.payload.key.eq(new.payload.key),
                         key.payload.key_bits.eq(KeyBits.AES256),
                         key.payload.slot.eq(Mux(wiping, slot, new.payload.slot)),
                         key.payload.zeroize.eq(wiping)]
            with m.If(valid & ~done & key.ready):
                m.d.sync += taken[n].eq(1)
        with m.If(valid & done):
            m.d.sync += taken.eq(0)
        m.d.comb += new.ready.eq(done & ~wiping & ~self.seal_busy)
        with m.If(wiping & done):
            m.d.sync += self.wipe.bit_select(slot, 1).eq(0)
        fire = Signal(name="record_key_fire")
        m.d.comb += fire.eq(valid & done)
        return fire, keys[0].payload.slot

    def datapath(self, m, hs):
        """Build the layer in ``m`` beside the sessions' handshake ``hs``."""
        self.hs = hs
        m.submodules.record_cipher = self.cipher
        if self.split:
            m.submodules.seal_cipher = self.seal_cipher
        key_fire, key_slot = self._keys(m, hs)
        m.submodules.record_counters = counters = self.counters
        m.d.comb += [counters.place.eq(self.place), counters.counter.eq(self.counter),
                     counters.datagram.eq(self.datagram)]
        # A new session's counters start afresh as its reply key (the second) goes in.
        m.d.comb += [counters.start.eq(key_fire & key_slot[0]),
                     counters.start_place.eq(key_slot[1:])]
        m.submodules.record_request_ram = req_ram = Memory(shape=8, depth=self.depth, init=[])
        m.submodules.record_reply_ram = rep_ram = Memory(shape=8, depth=self.depth, init=[])
        self.reader = RamReader(m, req_ram.read_port(), self.depth, "inner_payload")
        seal_port = rep_ram.read_port()
        seal_reader = RamReader(m, seal_port, self.depth, "seal_payload")
        self.kept.datapath(m, self, counters)
        self._open(m, req_ram.write_port())
        self._route(m)
        self._seal(m, hs, seal_reader, seal_port)
        self._capture(m, rep_ram.write_port())
