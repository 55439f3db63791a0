"""``PROCESS`` with GCM (spec "GCM messages"): :class:`GcmProcess`, the executor's ``PROCESS``
handler in a build with GCM.

It is :class:`~.handlers.Process` (the payload into blocks, the blocks into the mode engine, the
results out byte by byte) with what GCM adds:

* the checks of a GCM chunk, in the spec's order: ``BAD_FLAGS`` for ``AAD`` outside GCM or with
  ``LAST``, ``BAD_IV`` for a ``FIRST`` chunk whose IV field is not a J0 (the frame check says
  whether it ends in 00 00 00 01), ``BAD_LENGTH`` for a ``LAST`` chunk's ``D`` (0 in an
  encryption, 12 to 16 in a decryption), then ``OUT_OF_ORDER`` (the ``seq`` rule),
  ``BAD_CHUNK_ORDER`` and ``TOO_LONG`` (byte counters counting down what the message may still
  have);
* the message's state beside the executor's (slot, op, mode): the next ``seq``, the AAD and data
  bytes it may still have, and which kinds of chunk may still come;
* the beats: AAD chunks' blocks with ``aad``, data chunks' with their byte count, the ``LAST``
  chunk as one ``final`` beat (an encryption's without data, a decryption's with the expected
  tag); each result's tag is the number of its bytes to send (16 for an encryption's tag), or
  marks a decryption's verdict;
* the replies: an AAD chunk's is its status alone, a data chunk's its output, an encryption's
  ``LAST`` the tag; a decryption's ``LAST`` reply descriptor is written only once the mode
  engine's verdict is out: ``OK`` or ``AUTH_FAILED`` (counted in ``auth_failures``).

Every change of state happens in ``DECIDE``, after every check passed, so a refused request
changes nothing.

The replies to the last ``W`` GCM chunks processed (``W`` the device's window) are kept
(:class:`KeptReplies`): a request whose ``seq`` and digest (the CRC-32 of its header and
payload) are those of a kept one is answered with the kept reply and not processed again.
``W`` is at most :data:`~aes_fpga.appliance.spec.GCM_MAX_WINDOW`. A ``ZEROIZE`` clears what
the kept replies leave behind (:class:`KeptReplies`); a result byte goes out only once the
reply builder has taken its reply's descriptor, so that each kept reply records its own bytes.
"""

from types import SimpleNamespace

from amaranth.hdl import Array, Cat, MemoryData, Mux, Signal

from ... import gcm_model
from ...primitives import DualPortBRAM
from .. import spec
from .handlers import PARTIAL_LAST_BLOCK, Process, any_of

__all__ = ["GcmProcess", "KeptReplies", "kept_reply_memory", "kept_reply_stride", "GCM_TAG_WIDTH",
           "KEPT"]

#: The validation's outcome for a retransmission of a kept GCM chunk (not a status on the wire:
#: such a request is answered with its kept reply).
KEPT = 0xFF

#: The tag a block carries through the mode engine in a GCM build: the bytes of its result to
#: send (5 bits, 0 to 16), and whether the result is a decryption's verdict (bit 5).
GCM_TAG_WIDTH = 6
_VERDICT = 5


class GcmProcess(Process):
    """``PROCESS`` in an executor with GCM (see the module docstring)."""

    def __init__(self, x):
        super().__init__(x)
        process = self.fields
        self.aad = (process["flags"] & spec.FLAG_AAD) != 0
        self.is_gcm = process["mode"] == spec.Mode.GCM
        self.enc = process["op"] == spec.Op.ENCRYPT
        # The GCM message in progress (valid while the executor's message is a GCM one).
        self.next_seq = Signal(16)
        # The AAD and data bytes it may still have, plus the PROCESS header's 4: the longest
        # payload of a chunk (without IV) that fits, compared with the payload's length.
        self.aad_room = Signal(range(x.max_gcm_aad + spec.PROCESS_HEADER_SIZE + 1))
        self.data_room = Signal(range(x.max_gcm_data + spec.PROCESS_HEADER_SIZE + 1))
        self.aad_short = Signal()       # a short AAD chunk came: no more AAD
        self.data_seen = Signal()       # a data chunk came: no more AAD
        self.data_short = Signal()      # a short data chunk came: no more data
        # The chunk being processed.
        self.c_gcm = Signal()
        self.c_aad = Signal()
        self.c_last = Signal()
        self.c_enc = Signal()
        self.c_first = Signal()
        self.final_due = Signal()       # an encryption's LAST: its final beat is still to make
        self.take_verdict = Signal()    # the verdict on ``me.o`` is taken

    # ---- the result tags (read by Process's datapath) --------------------------------------

    @staticmethod
    def result_verdict(tag):
        return tag[_VERDICT]

    @staticmethod
    def result_length(tag):
        return tag[:_VERDICT]

    def gcm_beat(self, m, hold_n, hold_final):
        """The GCM fields of the beat in ``hold`` (``hold_n`` bytes, ``hold_final``: the
        ``LAST`` chunk's beat) and its tag."""
        me, B = self.x.me, spec.BLOCK_SIZE
        m.d.comb += [
            me.i.payload.aad.eq(self.c_aad),
            me.i.payload.final.eq(hold_final),
            me.i.payload.nbytes.eq(hold_n),
            me.i.payload.tag[:_VERDICT].eq(Mux(hold_final & self.c_enc, B, hold_n)),
            me.i.payload.tag[_VERDICT].eq(hold_final & ~self.c_enc),
        ]

    # ---- checks, decision, states ------------------------------------------------------

    def checks(self, m):
        x, process, first, last, dlen = self.x, self.fields, self.first, self.last, self.dlen
        B, length, req = spec.BLOCK_SIZE, x.length, x.req.payload
        aad, gcm, enc = self.aad, self.is_gcm, self.enc
        m.d.comb += dlen.eq(length - spec.PROCESS_HEADER_SIZE - self.iv_len)
        partial = any_of(process["mode"], PARTIAL_LAST_BLOCK)
        # A LAST chunk's D: 0 in an encryption, 12 to 16 in a decryption (compared as payload
        # lengths, with and without the IV, so that no subtraction is on the path).
        tag_bad = Mux(first, self._tag_bad(length, enc, B), self._tag_bad(length, enc, 0))
        # (a FIRST chunk: the whole limit, and the IV in the payload)
        head = spec.PROCESS_HEADER_SIZE + B
        too_long = Mux(first, length > Mux(aad, x.max_gcm_aad + head, x.max_gcm_data + head),
                       length > Mux(aad, self.aad_room, self.data_room))
        order_bad = Mux(aad, self.data_seen | self.aad_short, self.data_short)
        x.kept.lookup(m, req)
        return [
            *self.header_checks(),
            (((process["flags"] & spec.FLAGS_RESERVED) != 0) | (aad & (~gcm | last)),
             spec.Status.BAD_FLAGS),
            (first & (length < spec.PROCESS_HEADER_SIZE + B), spec.Status.BAD_LENGTH),
            (gcm & first & ~req.j0, spec.Status.BAD_IV),
            # (two conditions with one status: each is registered on its own)
            (dlen > x.info.max_process_data, spec.Status.BAD_LENGTH),
            (gcm & last & tag_bad, spec.Status.BAD_LENGTH),
            ((dlen[:4] != 0) & ~(partial & last) & ~gcm, spec.Status.LENGTH_NOT_MULTIPLE_OF_16),
            (gcm & x.kept.hit, KEPT),
            *self.message_checks(),
            (gcm & ~first & (req.seq != self.next_seq), spec.Status.OUT_OF_ORDER),
            (gcm & ~first & ~last & order_bad, spec.Status.BAD_CHUNK_ORDER),
            (gcm & ~last & too_long, spec.Status.TOO_LONG),
        ]

    @staticmethod
    def _tag_bad(length, enc, iv):
        # (``iv``: the IV's bytes in the payload, folded into the constants compared with)
        # (equalities, not comparisons, which synthesis would make carry chains)
        head = spec.PROCESS_HEADER_SIZE + iv
        tags = range(head + gcm_model.MIN_TAG_BYTES, head + gcm_model.TAG_BYTES + 1)
        return Mux(enc, length != head, ~Cat(*[length == n for n in tags]).any())

    def decide(self, m):
        x, process, first, last, dlen = self.x, self.fields, self.first, self.last, self.dlen
        aad, gcm, enc = self.aad, self.is_gcm, self.enc
        short = dlen[:4] != 0
        kept = x.kept
        # D != 0, from the payload length (no subtraction on the path)
        self.has_data = Mux(first, x.length != spec.PROCESS_HEADER_SIZE + spec.BLOCK_SIZE,
                            x.length != spec.PROCESS_HEADER_SIZE)
        with m.If(x.rep_free & x.r_kept):
            # A retransmission: the kept reply, nothing processed, nothing changed.
            e = kept.hit_entry
            m.d.sync += x.reply(kept.status[e], kept.length[e])
            with m.If(kept.length[e] == 1):
                m.d.sync += x.release.eq(1)
                m.next = "IDLE"
            with m.Else():
                m.next = "KEPT_WAIT"
        with m.Elif(x.rep_free):
            m.d.sync += [
                x.msg_active.eq(~last), x.msg_slot.eq(process["slot"]),
                x.msg_op.eq(process["op"]), x.msg_mode.eq(process["mode"]),
                self.iv_left.eq(self.iv_len), self.data_left.eq(self.dlen),
                self.more.eq(first | (x.length != spec.PROCESS_HEADER_SIZE)),  # dlen != 0
                self.c_gcm.eq(gcm), self.c_aad.eq(aad), self.c_last.eq(last),
                self.c_enc.eq(enc), self.c_first.eq(first),
                self.final_due.eq(gcm & last & enc),
            ]
            # The reply: a data chunk's (ECB, CBC, CTR too) status and output, an AAD chunk's
            # status, an encryption's tag; a decryption's LAST waits for the verdict.
            length = Mux(gcm & aad, 1, Mux(gcm & last, 1 + gcm_model.TAG_BYTES,
                                                       self.reply_length))
            with m.If(~(gcm & last & ~enc)):
                m.d.sync += x.reply(spec.Status.OK, length)
                with m.If(gcm):
                    kept.record(m, x.req.payload, spec.Status.OK, length, first=first,
                                bytes_follow=~(gcm & aad) & ((gcm & last) | self.has_data))
            with m.If(gcm):
                m.d.sync += self.next_seq.eq(x.req.payload.seq + 1)
                aad_full = x.max_gcm_aad + spec.PROCESS_HEADER_SIZE
                data_full = x.max_gcm_data + spec.PROCESS_HEADER_SIZE
                with m.If(first):
                    m.d.sync += [self.aad_room.eq(aad_full), self.data_room.eq(data_full),
                                 self.aad_short.eq(0), self.data_seen.eq(0),
                                 self.data_short.eq(0)]
                with m.If(~last & aad):
                    m.d.sync += [self.aad_room.eq(Mux(first, aad_full, self.aad_room) - dlen),
                                 self.aad_short.eq(short)]
                with m.If(~last & ~aad):
                    m.d.sync += [self.data_room.eq(Mux(first, data_full, self.data_room) - dlen),
                                 self.data_seen.eq(1), self.data_short.eq(short)]
            m.next = "PROCESS"

    # ``PROCESS`` (:meth:`Process.states`): IV first (FIRST chunks), then data (a LAST
    # chunk's: the expected tag, one final beat); an encryption's LAST gets a final beat
    # without data. The request is taken once its last block is in the mode engine, a
    # decryption's LAST once its verdict is out (``VERDICT``).

    def block_full(self, in_iv):
        return (self.blk_final.eq(~in_iv & self.c_gcm & self.c_last),)

    def after_payload(self, m):
        with m.Elif(self.final_due & ~self.full):
            m.d.sync += [self.full.eq(1), self.nb.eq(0), self.blk_iv.eq(0),
                         self.blk_final.eq(1), self.final_due.eq(0)]

    def done(self, m):
        with m.If(self.c_gcm & self.c_last & ~self.c_enc):
            m.next = "VERDICT"
        with m.Else():
            super().done(m)

    def states(self, m):
        x = self.x
        super().states(m)
        with m.State("VERDICT"):
            # The decryption's verdict, the last result of its message: the reply's status.
            me = x.me
            m.d.comb += self.take_verdict.eq(x.rep_free)
            with m.If(me.o.valid & self.result_verdict(me.o.payload.tag) & x.rep_free):
                ok = me.o.payload.auth_ok
                status = Mux(ok, spec.Status.OK, spec.Status.AUTH_FAILED)
                m.d.sync += x.reply(status)
                x.kept.record(m, x.req.payload, status, 1, first=self.c_first,
                              bytes_follow=0)
                with m.If(~ok):
                    m.d.sync += x.auth_failures.eq(x.auth_failures + 1)
                m.d.sync += x.release.eq(1)
                m.next = "IDLE"
        self._replay_states(m)

    def _replay_states(self, m):
        x, kept, k = self.x, self.x.kept, self.replay
        with m.State("KEPT_WAIT"):
            # Once the reply builder has taken the descriptor, ``data`` is this reply's.
            with m.If(x.rep_free):
                e = kept.hit_entry
                left = kept.length[e] - 1
                m.d.sync += [k.active.eq(1), k.valid.eq(0), k.read.eq(0),
                             k.rd.eq(e * kept.stride), k.to_read.eq(left), k.out.eq(left)]
                m.next = "KEPT"
        with m.State("KEPT"):
            with m.If(k.fire & (k.out == 1)):
                m.d.sync += [k.active.eq(0), k.valid.eq(0), k.read.eq(0), x.release.eq(1)]
                m.next = "IDLE"

    def datapath(self, m):
        super().datapath(m)
        x, kept = self.x, self.x.kept
        res_valid, res_byte, res_fire = self.results
        fire = Signal()
        rport = kept.datapath(m, x)
        # The kept reply being sent again: its bytes read from the block RAM ahead, through
        # its two stages (the array's read and its output register), which both stall while
        # the byte at the output is not taken.
        self.replay = k = Replay(kept)
        m.d.comb += [res_fire.eq(fire & ~k.active), k.fire.eq(fire & k.active)]
        en = k.active & (~k.valid | k.fire)
        m.d.comb += [rport.addr.eq(k.rd), rport.en.eq(en)]
        with m.If(en):
            m.d.sync += [k.valid.eq(k.read), k.read.eq(k.to_read != 0)]
            with m.If(k.to_read != 0):
                m.d.sync += [k.rd.eq(k.rd + 1), k.to_read.eq(k.to_read - 1)]
        with m.If(k.fire):
            m.d.sync += k.out.eq(k.out - 1)
        # (A result byte goes out only once its reply's descriptor is taken: see
        # :meth:`KeptReplies.datapath`.)
        self.results = (Mux(k.active, k.valid, res_valid & kept.open),
                        Mux(k.active, rport.data, res_byte), fire)


class Replay:
    """The state of a kept reply being sent again (:class:`GcmProcess`)."""

    def __init__(self, kept):
        self.active = Signal(name="replay_active")
        self.read = Signal(name="replay_read")      # the array's read holds a byte ...
        self.valid = Signal(name="replay_valid")    # ... the read port's output the next byte
        self.fire = Signal(name="replay_fire")
        self.rd = Signal(range(kept.entries * kept.stride), name="replay_rd")
        self.to_read = Signal(range(kept.stride + 1), name="replay_to_read")
        self.out = Signal(range(kept.stride + 1), name="replay_out")


def kept_reply_memory(info):
    """The block RAM's contents of :class:`KeptReplies` for a device reporting ``info``: its
    ``window`` entries of ``stride`` bytes (:func:`kept_reply_stride`), 8 bits wide, zeros at
    reset. Made before elaboration, so that a simulation can read what the memory holds."""
    return MemoryData(shape=8, depth=info.window * kept_reply_stride(info), init=[])


def kept_reply_stride(info):
    """The bytes of one kept reply's entry: the largest reply's bytes after its status (a data
    chunk's, or a tag), rounded up to a power of two."""
    return 1 << (max(info.max_process_data, gcm_model.TAG_BYTES) - 1).bit_length()


class KeptReplies:
    """The replies to the last ``info.window`` GCM chunks processed (spec "GCM messages"):
    per entry its request's ``seq`` and digest, the reply's status and payload length, and
    the payload bytes after the status in a block RAM (an entry's
    bytes at ``entry * stride``, ``stride`` the largest reply's bytes rounded up to a power of
    two, :func:`kept_reply_stride`; ``data``, the RAM's contents, from
    :func:`kept_reply_memory`).

    Entries are written in turn, the oldest overwritten (they belong to one message: a new
    message's ``FIRST`` chunk drops the others, so their ``seq`` values are consecutive). The
    bytes are recorded as the reply builder sends them: a kept reply's descriptor says which
    entry it fills, and every ``data`` byte of that reply goes there.

    Clearing (``ZEROIZE``, spec "GCM messages"): :meth:`start_clear` notes, per entry, how
    many of its bytes are a reply still kept (none in an entry dropped, by this ``ZEROIZE`` or
    before); once the reply being recorded is out, the RAM is swept, one address a cycle, and
    zeros written over every other byte (dropped replies, and what is left of a longer reply
    under a shorter one): ``window * stride`` cycles (4096 for a window of 4 and 1 KiB chunks),
    with :attr:`busy` high until it is done.
    """

    def __init__(self, info, data):
        self.entries = W = info.window
        self.stride = kept_reply_stride(info)
        self.valid = Array(Signal(name=f"kept_valid{e}") for e in range(W))
        self.seq = Array(Signal(16, name=f"kept_seq{e}") for e in range(W))
        self.digest = Array(Signal(32, name=f"kept_digest{e}") for e in range(W))
        self.status = Array(Signal(8, name=f"kept_status{e}") for e in range(W))
        self.length = Array(Signal(range(info.max_process_data + 2), name=f"kept_length{e}")
                            for e in range(W))
        self.slot = Signal(8)               # the slot of their message
        self.ptr = Signal(range(W))         # the entry written next
        self.hit = Signal()                 # the request presented is a kept one ...
        self.hit_entry = Signal(range(W))   # ... this one (registered: read in DECIDE)
        self.rep_keep = Signal()            # the reply descriptor's bytes are kept ...
        self.rep_entry = Signal(range(W))   # ... in this entry
        self.recording = Signal()           # a kept reply's bytes are going out
        #: The reply being sent has bytes still to take (see :meth:`datapath`).
        self.open = Signal()
        # The sweep of ``ZEROIZE``: the kept bytes of each entry (the next entry's first),
        # those of the entry being swept still to pass, waiting for the recording to end,
        # sweeping, where.
        self.keep_w = self.stride.bit_length()
        self.keep = Signal(W * self.keep_w)
        self.keep_left = Signal(self.keep_w)
        self.clear_wait = Signal()
        self.clearing = Signal()
        self.clear_at = Signal(range(W * self.stride))
        #: A clear is waiting or running (registers).
        self.busy = self.clear_wait | self.clearing
        assert data.depth == W * self.stride
        # (port a writes; port b reads, through the block's output register)
        self.memory = DualPortBRAM(width=8, depth=data.depth, data=data, out_reg=(False, True),
                                   writable=(True, False))

    def lookup(self, m, req):
        """Whether ``req`` (the request presented) is a kept one (``hit``, for the checks,
        which register it), and which (``hit_entry``, a register)."""
        W = self.entries
        match = [self.valid[e] & (self.seq[e] == req.seq) & (self.digest[e] == req.digest)
                 for e in range(W)]
        index = 0
        for e in range(W):
            index = Mux(match[e], e, index)
        m.d.comb += self.hit.eq(Cat(*match).any())
        m.d.sync += self.hit_entry.eq(index)

    def drop(self, m, cond):
        """Drop every entry when ``cond`` (a key change of their slot)."""
        with m.If(cond):
            m.d.sync += [self.valid[e].eq(0) for e in range(self.entries)]

    def start_clear(self, m, dropped):
        """Clear (zeros into the RAM) every byte but those of the replies still kept, after
        this cycle's :meth:`drop` (``dropped``: its condition): :attr:`busy` from the next
        cycle until it is done."""
        m.d.sync += [self.clear_wait.eq(1), self.keep.eq(Cat(
            Mux(self.valid[e] & ~dropped, self.length[e] - 1, 0)[:self.keep_w]
            for e in range(self.entries)))]

    def record(self, m, req, status, length, *, first, bytes_follow):
        """Keep the reply (``status``, ``length``) to ``req`` in the next entry; a ``first``
        chunk drops the others (and sets the slot); with ``bytes_follow`` the reply's data
        bytes are recorded as they go out."""
        e = self.ptr
        with m.If(first):
            m.d.sync += [self.valid[n].eq(0) for n in range(self.entries)]
            m.d.sync += self.slot.eq(req.head[0])
        m.d.sync += [self.valid[e].eq(1), self.seq[e].eq(req.seq),
                     self.digest[e].eq(req.digest), self.status[e].eq(status),
                     self.length[e].eq(length), self.rep_keep.eq(bytes_follow),
                     self.rep_entry.eq(e),
                     self.ptr.eq(Mux(e == self.entries - 1, 0, e + 1))]

    def datapath(self, m, x):
        """Record the data bytes of a kept reply as they are taken on ``x.data``, and sweep
        the RAM when a clear is asked for; return the read port for replays (``addr``,
        ``en``, ``data``: a byte two cycles after its address, the array's read and then the
        block's output register, both held while ``en`` is low).

        A reply's bytes are told from the next one's by counting: :attr:`open` is high from
        the cycle after the reply builder takes a descriptor with bytes after its status until
        the last of them is taken, and ``PROCESS``'s results go out only while it is (else
        the first bytes of a reply could be taken, into the stage in front of the builder,
        while the builder still sends the reply before, and be kept as that one's)."""
        m.submodules.kept = memory = self.memory
        wport = SimpleNamespace(addr=memory.addr_a, data=memory.wdata_a, en=memory.we_a)
        rport = SimpleNamespace(addr=memory.addr_b, en=memory.en_b, data=memory.rdata_b)
        rec_on = self.recording
        rec_entry = Signal.like(self.rep_entry)
        rec_at = Signal(range(self.stride))
        left = Signal.like(x.rep.length)        # bytes of the reply still to take
        taken = x.data.valid & x.data.ready
        with m.If(x.reply_taken):
            m.d.sync += [self.open.eq(x.rep.length != 1), rec_on.eq(self.rep_keep),
                         rec_entry.eq(self.rep_entry), rec_at.eq(0),
                         left.eq(x.rep.length - 1), self.rep_keep.eq(0)]
        record = taken & rec_on
        with m.If(taken):
            m.d.sync += [rec_at.eq(rec_at + 1), left.eq(left - 1)]
            with m.If(left == 1):
                m.d.sync += [self.open.eq(0), rec_on.eq(0)]
        # The sweep starts once no reply is being recorded (the one before ``ZEROIZE`` may
        # still be going out), so it has the write port to itself.
        # Each entry's count of kept bytes is shifted out of ``keep`` as its sweep starts and
        # counted down: zeros are written from there on.
        last = self.entries * self.stride - 1
        w = self.keep_w
        next_entry = [self.keep_left.eq(self.keep[:w]), self.keep.eq(self.keep >> w)]
        with m.If(self.clear_wait & ~rec_on):
            m.d.sync += [self.clear_wait.eq(0), self.clearing.eq(1), self.clear_at.eq(0),
                         *next_entry]
        with m.If(self.clearing):
            m.d.sync += self.clear_at.eq(self.clear_at + 1)
            with m.If(self.keep_left != 0):
                m.d.sync += self.keep_left.eq(self.keep_left - 1)
            with m.If(self.clear_at[:(self.stride - 1).bit_length()].all()):
                m.d.sync += next_entry
            with m.If(self.clear_at == last):
                m.d.sync += self.clearing.eq(0)
        m.d.comb += [
            wport.addr.eq(Mux(self.clearing, self.clear_at, Cat(rec_at, rec_entry))),
            wport.data.eq(Mux(self.clearing, 0, x.data.payload)),
            wport.en.eq(Mux(self.clearing, self.keep_left == 0, record)),
        ]
        return rport
