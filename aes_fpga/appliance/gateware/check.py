"""The appliance's frame layer in gateware: store a decoded frame, check its CRC and header, and
hand whole requests on (spec "Frame content" and steps 2 to 4 of "Errors and validation order").

:class:`FrameCheck` sits between :class:`~.cobs.CobsDecoder` and the executor; the field helpers
:func:`field_values` and :func:`field_bytes` read and write the protocol's header tables
(:class:`aes_fpga.appliance.spec.Fields`) in gateware, so no layer indexes header bytes by hand.
"""

from types import SimpleNamespace

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import crc, data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from .. import spec
from .cobs import DECODER_LAYOUT

__all__ = ["FrameCheck", "request_layout", "field_values", "field_bytes", "first_failure",
           "HEAD_SIZE", "KEY_BYTES"]

#: Payload bytes a request carries in registers (:attr:`FrameCheck.req` ``head``): enough for
#: every command's fixed fields; the rest of the payload is streamed from the frame buffer.
HEAD_SIZE = max(spec.PROCESS_HEADER.size, spec.LOAD_KEY_HEADER.size)
#: The longest key a ``LOAD_KEY`` carries.
KEY_BYTES = max(size.nbytes for size in spec.KeySize)
#: Where a ``PROCESS`` request's IV field ends: its last 4 bytes are J0's 00 00 00 01 in GCM.
J0_END = spec.PROCESS_HEADER_SIZE + spec.BLOCK_SIZE


def field_values(fields, byte_at):
    """``{name: value}`` of each field of ``fields`` (a :class:`~aes_fpga.appliance.spec.Fields`),
    big-endian, from the bytes ``byte_at(offset)`` (8-bit values)."""
    return {name: Cat(*[byte_at(offset + n) for n in reversed(range(size))])
            for name, offset, size in fields}


def field_bytes(fields, values):
    """The bytes (8-bit values, in wire order) of ``fields`` holding ``values`` (a mapping
    from field name to value): the inverse of :func:`field_values`."""
    out = []
    for name, _, size in fields:
        value = Cat(values[name], Const(0, 8 * size))[:8 * size]
        out += [value.word_select(size - 1 - n, 8) for n in range(size)]
    return out


def first_failure(checks, ok):
    """The status of the first true condition of ``checks`` [(condition, status)], else
    ``ok``: a validation order of the protocol as a priority chain."""
    result = Const(int(ok), 8) if isinstance(ok, int) else ok
    for cond, status in reversed(checks):
        result = Mux(cond, int(status), result)
    return result


def request_layout(key_bytes=KEY_BYTES, gcm=False):
    """One checked request (:attr:`FrameCheck.req`): the frame's ``status`` (``OK``, or the
    first of ``BAD_CRC``, ``BAD_LENGTH``, ``UNKNOWN_COMMAND``), the header fields of
    :data:`~aes_fpga.appliance.spec.HEADER` (``length`` is the payload's), the first
    :data:`HEAD_SIZE` payload bytes (``head``; a ``LOAD_KEY``'s key bytes are not among them)
    and, for ``LOAD_KEY``, up to ``key_bytes`` key bytes (``key``, the first one in the most
    significant byte, as FIPS-197 writes a key; a shorter key leaves the low bytes zero).

    With ``gcm`` two more fields: ``j0``, payload bytes 16 to 19 are 00 00 00 01 (a ``PROCESS``
    request's IV field ends as a GCM J0 does, spec "GCM messages"), and ``digest``, the CRC-32
    of the frame's header and payload (what a kept reply is matched with besides its ``seq``)."""
    fields = {
        "status": 8,
        **{name: 8 * size for name, _, size in spec.HEADER},
        "head": data.ArrayLayout(8, HEAD_SIZE),
        "key": 8 * key_bytes,
    }
    if gcm:
        fields.update({"j0": 1, "digest": 32})
    return data.StructLayout(fields)


class FrameCheck(wiring.Component):
    """Stores each decoded frame, checks it, and presents it as one request.

    ``i`` takes :class:`~.cobs.CobsDecoder` beats. As a frame arrives its CRC-32 is computed
    (:mod:`amaranth.lib.crc`, ``CRC32_ETHERNET``) over all but its last 4 bytes (those are the
    CRC, held in a 4-byte delay line), its header and first :data:`HEAD_SIZE` payload bytes
    are kept in registers and the rest of its payload is written into a ring buffer. A frame
    the decoder drops is forgotten (its ring space given back). Every other frame becomes a
    request on ``req``: status (checked in the spec's order), header fields, ``head`` and key;
    while it is presented, ``payload`` streams its payload from offset :data:`HEAD_SIZE` on
    (the ``iv`` and data of a ``PROCESS``). The consumer reads as much of it as it needs and
    then takes ``req``, which gives the frame's ring space back.

    Key material: a ``LOAD_KEY``'s key bytes never enter the ring or ``head``; they are
    shifted into the key register only, which is cleared when the request is taken or the
    frame dropped (and the delay line at every frame's end). While a ``LOAD_KEY`` request is
    presented, the next frame's key bytes wait (``i`` not ready), so the register holds one
    key at a time.

    Pipelining: the next frame is received while a request is presented; its end waits (``i``
    not ready) until ``req`` has been taken, and its payload waits while the ring is full.
    The ring holds ``max_payload - HEAD_SIZE`` bytes rounded up to a power of two (2048 for
    ``MAX_PAYLOAD``: two 1 KiB ``PROCESS`` chunks without IV); payload bytes beyond
    ``max_payload`` are not stored (such a frame is refused by its length alone).

    Throughput: one beat per cycle on ``i``, one byte per cycle on ``payload``; a request
    appears two cycles after its frame's end (its checks are registered first). Ring space is
    counted a cycle late, so a frame's payload may wait with one byte of the ring still free.

    Timing: ``i.ready`` is made of registered flags only (positions in the frame as one-hot
    and threshold flags, counter comparisons registered), so no counter compare or carry
    chain is on the valid/ready path.

    Parameters
    ----------
    max_payload : int
        The largest payload a request may have (the device's ``max payload``).
    key_bytes : int
        The longest key kept (the device's largest key size, 16 to :data:`KEY_BYTES`); the
        bytes of a longer key are not stored (such a request is refused by its key size).
    crc : bool
        Frames end with the CRC-32 (serial); ``False``: UDP datagrams, no CRC.
    more_commands : iterable of int
        Opcodes known besides :class:`~aes_fpga.appliance.spec.Command`'s (a device with a
        secret knows :class:`~aes_fpga.appliance.session_spec.SessionCommand`'s).
    gcm : bool
        Add ``req``'s GCM fields (:func:`request_layout`): the J0 check of the IV field and the
        frame's digest (its CRC-32: the received one, or without ``crc`` one computed here).
    """

    def __init__(self, max_payload=spec.SERIAL_MAX_PAYLOAD, *, key_bytes=KEY_BYTES, crc=True,
                 gcm=False, more_commands=()):
        sizes = sorted(size.nbytes for size in spec.KeySize)
        if key_bytes not in sizes:
            raise ValueError(f"key_bytes: {key_bytes!r} is not a key length; allowed "
                             f"{', '.join(map(str, sizes))}")
        if not spec.MIN_MAX_PAYLOAD <= max_payload <= spec.MAX_PAYLOAD:
            raise ValueError(f"max_payload: {max_payload!r} is outside the protocol's range "
                             f"{spec.MIN_MAX_PAYLOAD} .. {spec.MAX_PAYLOAD}")
        self.key_bytes = key_bytes
        self.max_payload = max_payload
        self.crc = crc
        self.gcm = bool(gcm)
        #: The opcodes taken besides :class:`~aes_fpga.appliance.spec.Command`'s (a device
        #: with a secret: the session opcodes).
        self.commands = (*spec.Command, *more_commands)
        #: Bytes after the payload: the CRC, or none.
        self.trailer = spec.CRC_SIZE if crc else 0
        #: The shortest frame: header and trailer around an empty payload.
        self.min_frame = spec.HEADER_SIZE + self.trailer
        self.ring_bytes = max_payload - HEAD_SIZE
        self.depth = 1 << (self.ring_bytes - 1).bit_length()
        super().__init__({
            "i": In(stream.Signature(DECODER_LAYOUT)),
            "req": Out(stream.Signature(request_layout(key_bytes, self.gcm))),
            "payload": Out(stream.Signature(8)),
        })

    def elaborate(self, platform):
        m = Module()
        f = self._frame_state(m)
        self._receive(m, f)
        self._check(m, f)
        self._stream(m, f)
        return m

    def _frame_state(self, m):
        """The ring and the registers that follow a frame through it, in a namespace the other
        stages share."""
        f = SimpleNamespace()
        depth = self.depth
        m.submodules.ring = ring = Memory(shape=8, depth=depth, init=[])
        f.wport = ring.write_port()
        f.rport = ring.read_port()
        f.ptr_w = ptr_w = depth.bit_length()    # ring pointers carry one wrap bit
        f.wp = Signal(ptr_w)                    # next byte of the frame being received
        f.rd = Signal(ptr_w)                    # next byte to stream; everything before is free
        f.frame_start = Signal(ptr_w)

        # ---- receive --------------------------------------------------------------------
        trailer, min_frame = self.trailer, self.min_frame
        # The last ``trailer`` bytes so far, a delay line: the CRC at the frame's end.
        f.tail = Signal(8 * trailer)
        f.header = [Signal(8, name=f"header{n}") for n in range(spec.HEADER_SIZE)]
        f.head = [Signal(8, name=f"head{n}") for n in range(HEAD_SIZE)]
        key_bytes = self.key_bytes
        f.key = Signal(8 * key_bytes)
        f.key_held = Signal()   # the key register belongs to the request presented
        f.key_start = key_start = spec.LOAD_KEY_HEADER.size
        # Frames lie in the ring one after another: the frame being received from
        # ``frame_start`` to ``wp``, the request presented (if any) from ``rd`` to
        # ``frame_start``; with none presented, ``rd == frame_start``. ``stored`` and
        # ``left`` count those two parts, so that no pointer difference is on a path.
        f.stored = Signal(ptr_w)    # ring bytes of the frame so far
        f.left = Signal(ptr_w)      # ring bytes of the request presented not yet streamed
        f.stored_full = Signal()    # stored == ring_bytes: the rest is not kept
        f.ring_full = Signal()      # stored + left may reach depth this cycle

        # Where in the frame the next byte is, as flags rather than compares of a position
        # counter: ``at`` is one-hot over the first ``span`` content bytes (``at[k]``: ``k``
        # bytes so far), ``ge[k]``: at least ``k`` bytes so far. (One flip-flop per position
        # of the header and the fields kept, instead of compares on the byte's path.)
        span = min_frame + max(HEAD_SIZE, key_start + key_bytes) + 1
        if self.gcm:
            span = max(span, min_frame + J0_END + 1)
        f.at = Signal(span, init=1)
        bounds = {trailer, min_frame, min_frame + HEAD_SIZE, min_frame + key_start,
                  min_frame + key_start + key_bytes} - {0}
        f.ge = {k: Signal(name=f"ge{k}") for k in sorted(bounds)}
        # Payload bytes so far (the content beyond min_frame), for the length check.
        f.plen = Signal(range(spec.MAX_FRAME + 1 + 8))
        f.is_load_key = Signal()    # the command byte is LOAD_KEY
        if self.gcm:
            f.j0 = Signal()         # payload bytes 16 .. 19 so far are J0's 00 00 00 01
        return f

    def _receive(self, m, f):
        """Each byte of the frame into its place: the CRC, the header and ``head`` registers,
        the key register or the ring."""
        trailer, min_frame, key_start, key_bytes = (self.trailer, self.min_frame, f.key_start,
                                                    self.key_bytes)
        at, ge, key, tail, is_load_key = f.at, f.ge, f.key, f.tail, f.is_load_key
        command_at = next(offset for name, offset, _ in spec.HEADER if name == "command")
        f.beat = beat = self.i.payload
        # The byte leaving the delay line is a header or payload byte (a CRC byte never
        # leaves it); without a CRC every byte leaves as it comes.
        leaves = ~beat.end & (ge[trailer] if trailer else Const(1))
        f.body_byte = body_byte = tail[-8:] if trailer else beat.data
        in_payload = ge[min_frame]
        to_key = leaves & is_load_key & ge[min_frame + key_start] \
            & ~ge[min_frame + key_start + key_bytes]
        to_ring = leaves & ~is_load_key & ge[min_frame + HEAD_SIZE] & ~f.stored_full

        f.req_valid = Signal()
        f.checking = Signal()       # the frame ended last cycle: its status is being made
        end_ok = beat.end & ~beat.drop
        m.d.comb += self.i.ready.eq(~(end_ok & (f.req_valid | f.checking))
                                    & ~(to_key & f.key_held)
                                    & ~(to_ring & f.ring_full))
        f.take = take = self.i.valid & self.i.ready
        f.write = write = Signal()
        m.d.comb += write.eq(take & to_ring)

        if self.crc or self.gcm:
            m.submodules.crc = f.rx_crc = rx_crc = \
                crc.catalog.CRC32_ETHERNET(data_width=8).create()
            m.d.comb += [
                rx_crc.data.eq(body_byte),
                rx_crc.valid.eq(take & leaves),
                rx_crc.start.eq(at[trailer]),
            ]
        m.d.comb += [
            f.wport.addr.eq(f.wp[:-1]),
            f.wport.data.eq(body_byte),
            f.wport.en.eq(write),
        ]
        with m.If(take & ~beat.end):
            m.d.sync += at.eq(at << 1)
            if trailer:
                m.d.sync += tail.eq(Cat(beat.data, tail[:-8]))
            for k, flag in ge.items():
                with m.If(at[k - 1]):
                    m.d.sync += flag.eq(1)
            with m.If(in_payload):
                m.d.sync += f.plen.eq(f.plen + 1)
        with m.If(take & leaves):
            for n, reg in enumerate(f.header):
                with m.If(at[trailer + n]):
                    m.d.sync += reg.eq(body_byte)
            with m.If(at[trailer + command_at]):
                m.d.sync += is_load_key.eq(body_byte == spec.Command.LOAD_KEY)
            if self.gcm:
                # J0's last 4 bytes: 00 00 00 01, checked byte by byte as they pass.
                suffix = spec.GCM_J0_SUFFIX
                for n, want in enumerate(suffix):
                    at_n = at[min_frame + J0_END - len(suffix) + n]
                    match = body_byte == want
                    with m.If(at_n):
                        m.d.sync += f.j0.eq(match if n == 0 else match & f.j0)
            for n, reg in enumerate(f.head):
                # A LOAD_KEY's key bytes go to the key register only.
                keep = ~is_load_key if n >= key_start else Const(1)
                with m.If(at[min_frame + n] & keep):
                    m.d.sync += reg.eq(body_byte)
        # The key register's one clear (a dropped frame's bytes, an answered request's key)
        # and one write, as two plain conditions: it maps to flip-flops with reset and enable.
        f.key_clear = key_clear = Signal()
        with m.If(key_clear):
            m.d.sync += key.eq(0)
        with m.Elif(take & to_key):
            # Key byte n goes to byte n from the top (FIPS-197 order).
            for n in range(key_bytes):
                with m.If(at[min_frame + key_start + n]):
                    m.d.sync += key.word_select(key_bytes - 1 - n, 8).eq(body_byte)

    def _check(self, m, f):
        """The frame's end: check it (spec steps 2 to 4) and present it on ``req``."""
        # The checks are registered every cycle from the frame's registers; in the cycle
        # after a frame's end they are those of that frame, and make its status.
        header, head, take, beat = f.header, f.head, f.take, f.beat
        fields = field_values(spec.HEADER, lambda n: header[n])
        command = fields["command"]
        crc_bad = Signal()
        length_ne = Signal()
        length_big = Signal()
        command_bad = Signal()
        if self.crc:
            m.d.sync += crc_bad.eq(f.rx_crc.crc != f.tail)
        m.d.sync += [
            length_ne.eq(fields["length"] != f.plen),
            length_big.eq(fields["length"] > self.max_payload),
            command_bad.eq(~Cat(*[command == c for c in self.commands]).any()),
        ]
        status = first_failure([
            (crc_bad, spec.Status.BAD_CRC),
            (length_ne | length_big, spec.Status.BAD_LENGTH),
            (command_bad, spec.Status.UNKNOWN_COMMAND),
        ], spec.Status.OK)
        r_status = Signal(8)
        r_header = [Signal(8, name=f"r_header{n}") for n in range(spec.HEADER_SIZE)]
        r_head = [Signal(8, name=f"r_head{n}") for n in range(HEAD_SIZE)]
        if self.gcm:
            r_j0 = Signal()
            r_digest = Signal(32)
        m.d.sync += f.checking.eq(0)
        with m.If(f.checking):
            m.d.sync += [f.req_valid.eq(1), r_status.eq(status)]
        with m.If(take & beat.end):
            # Payload bytes a frame does not have read as zero in ``head``, not as the last
            # frame's; a frame cut short leaves no key bytes in the delay line.
            m.d.sync += [f.at.eq(1), f.plen.eq(0), f.tail.eq(0), f.stored.eq(0),
                         f.stored_full.eq(0),
                         *[flag.eq(0) for flag in f.ge.values()],
                         *[h.eq(0) for h in head]]
            with m.If(beat.drop):
                # Forgotten: its ring space back, its key bytes (if any) gone.
                m.d.sync += f.wp.eq(f.frame_start)
            with m.Else():
                m.d.sync += [f.checking.eq(1), f.frame_start.eq(f.wp), f.left.eq(f.stored),
                             f.key_held.eq(f.is_load_key),
                             *[r.eq(h) for r, h in zip(r_header, header, strict=True)],
                             *[r.eq(h) for r, h in zip(r_head, head, strict=True)]]
                if self.gcm:
                    # (the frame's CRC as received, checked against the one computed; without
                    # a CRC on the wire, the one computed)
                    digest = f.tail if self.crc else f.rx_crc.crc
                    m.d.sync += [r_j0.eq(f.j0), r_digest.eq(digest)]
        with m.Elif(f.write):
            m.d.sync += [f.wp.eq(f.wp + 1), f.stored.eq(f.stored + 1),
                         f.stored_full.eq(f.stored == self.ring_bytes - 1)]

        r_fields = field_values(spec.HEADER, lambda n: r_header[n])
        m.d.comb += [
            self.req.valid.eq(f.req_valid),
            self.req.payload.status.eq(r_status),
            *[self.req.payload[name].eq(value) for name, value in r_fields.items()],
            *[self.req.payload.head[n].eq(r_head[n]) for n in range(HEAD_SIZE)],
            self.req.payload.key.eq(f.key),
        ]
        if self.gcm:
            m.d.comb += [self.req.payload.j0.eq(r_j0), self.req.payload.digest.eq(r_digest)]

    def _stream(self, m, f):
        """Stream the payload of the request presented; give its ring space back when it is
        taken; count the ring full."""
        # ``rd`` is the next byte; the read port holds it while ``out_valid``. ``rd_next``
        # is ``rd + 1``, kept so the read address is a choice between registers.
        rd, rport, left, ptr_w, depth = f.rd, f.rport, f.left, f.ptr_w, self.depth
        rd_next = Signal(ptr_w, init=1)
        out_valid = Signal()
        fire = self.payload.valid & self.payload.ready
        m.d.comb += [
            self.payload.valid.eq(out_valid),
            self.payload.payload.eq(rport.data),
            rport.en.eq(~out_valid | fire),
            rport.addr.eq(Mux(fire, rd_next, rd)[:ptr_w - 1]),
        ]
        with m.If(rport.en):
            m.d.sync += out_valid.eq(f.req_valid & Mux(fire, left != 1, left != 0))
        with m.If(fire):
            m.d.sync += [rd.eq(rd_next), rd_next.eq(rd_next + 1), left.eq(left - 1)]
        taken = self.req.valid & self.req.ready
        with m.If(taken):
            # Done with it: the rest of its ring space back, its key gone.
            m.d.sync += [f.req_valid.eq(0), rd.eq(f.frame_start),
                         rd_next.eq(f.frame_start + 1), out_valid.eq(0), f.key_held.eq(0),
                         left.eq(0)]

        # ``ring_full`` is the sum ``stored + left`` compared a cycle late, so that no adder is
        # on ``i.ready``: in one cycle the sum grows by one byte at most (a frame dropped or a
        # request taken only make it smaller), so stopping at ``depth - 1`` a cycle ago never
        # lets it pass ``depth`` (and leaves one byte of the ring unused at worst).
        dropped = f.take & f.beat.end & f.beat.drop
        if 2 * self.ring_bytes >= depth:    # (else the two parts never fill the ring)
            m.d.sync += f.ring_full.eq(f.stored + left >= depth - 1)
        # The key register is cleared when a dropped frame leaves key bytes in it (none held)
        # or when the request holding a key has been taken.
        m.d.comb += f.key_clear.eq(Mux(f.key_held, taken, dropped))
