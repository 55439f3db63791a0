"""LUT-ROUND: one AES round per cycle in LUTs and flip-flops (no block RAM, no DSP).

After the encryption core of Daoud, Hussein and Rafla ("Optimization of AES using Vivado HLS",
CATA 2019: AES-128 encryption, LUT/FF only, 1,417 LUT / 830 FF on xc7z020), written as RTL,
with decryption and all three key lengths as parameters.

Datapath: one 128-bit state register. A round is, in one cycle,

- encryption: ``s <- MixColumns(ShiftRows(SubBytes(s))) ^ rk`` (no MixColumns in the last round);
- decryption (the equivalent inverse cipher, FIPS-197 5.3.5, so the round key too is added
  last): ``s <- InvMixColumns(InvShiftRows(InvSubBytes(s))) ^ dk`` (no InvMixColumns in the
  last round), ``dk`` being ``InvMixColumns(K_r)`` in the middle rounds.

The 16 S-boxes are LUT ROMs (:class:`~aes_fpga.primitives.LutRom`: 32 LUT6 each, one level).
When the core decrypts, each is a GF(2^8) inverse ROM between the affine maps (SubBytes =
``A(inv(x))``, InvSubBytes = ``inv(A^-1(y))``, one LUT per bit on either side: 48 LUTs instead
of the 72 of a 512-entry table, and the InvShiftRows/ShiftRows choice rides in the LUT before
it); InvMixColumns is MixColumns after the column map ``[5 0 4 0; 0 5 0 4; ...]``, so both
directions share one MixColumns. Both add the round key last, and the request's block comes in
through that same XOR (``s <- rk ^ (block, the last round's S-box output or MixColumns
output)``), so each state bit is one XOR tree behind the S-boxes and the result register takes
the same value.

Round keys: expanded at key load into a LUT RAM (RAM32M on 7-series), 16 entries of 128 bits per
slot (32 with decryption: ``InvMixColumns(K_r)`` too), and read combinationally at the round's
index (a LUT RAM read is one level, beside the S-boxes), so no key schedule runs beside the
rounds; decryption reads them backwards. The expansion makes one word a cycle, ``w[i] =
w[i-Nk] ^ f(w[i-1])``, in a shift register of the last ``Nk`` words (of the longest supported
key; ``w[i-Nk]`` is copied from it into a register a word ahead), with SubWord a byte a cycle
through one S-box; with decryption it runs a second time for the ``InvMixColumns(K_r)`` entries
(one word's InvMixColumns a cycle, written with the terms its rows share). The key words are
read from the key transfer, which stays valid (payload held) until the last round key is
written.

Resources and depth (Yosys ``synth_xilinx`` with the depth-first ``abc`` mapping, xc7a35t, one
key slot): ``aes-fpga synth --core lut-round --key-sizes 128 --option decrypt=False`` (the
paper's configuration, AES-128 encryption with its key schedule), and ``aes-fpga timing`` with
the same options for the LUT levels. Every build meets its target (measured 2026-11-24; the
slow test in ``tests/test_core_lut_round.py`` holds every build to it):

- encryption-only, at most 1,200 LUT: AES-128 1,116 LUT (incl. 88 as LUT RAM), 501 FF, 3 LUT
  levels (the S-box, then the XOR tree); all three key lengths 1,199 LUT, 638 FF, 3 levels. The
  difference is mostly the expansion's 8-way key-word multiplexer (LUT6 and MUXF7, a
  :class:`~aes_fpga.primitives.LutMux` with its select from a counter) and 3-way tap
  multiplexer; the key length is decoded into registers when a load starts, so it adds no
  level;
- with decryption, at most 2,000 LUT: AES-128 1,867 LUT, 637 FF, 6 levels; all three key
  lengths 1,949 LUT, 774 FF, 6 levels. Decryption's levels are the affine map, the inverse ROM,
  the affine map, P, and MixColumns with the round key.
"""

from fractions import Fraction
from types import SimpleNamespace

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from .. import model
from ..hw import (
    gf_mul_const,
    inv_shift_rows,
    mix_column,
    shift_rows,
    state_byte,
    state_from_bytes,
    xor_all,
)
from ..params import KeySize, Op
from ..primitives import LutMux, LutRom
from .interface import check_key_sizes, key_layout, request_layout, response_layout

__all__ = ["LutRound", "latency", "key_load_cycles"]


def latency(nr):
    """Cycles from request accepted to result valid for ``nr`` rounds: the input AddRoundKey
    cycle, then one cycle per round."""
    return nr + 1


def _sub_words(nr, nk):
    """How many words of the expansion ``w[Nk .. 4 Nr + 3]`` need SubWord."""
    return sum(1 for i in range(nk, 4 * nr + 4) if i % nk == 0 or (nk == 8 and i % 8 == 4))


def key_load_cycles(key_bits, decrypt=True):
    """Cycles from a key transfer's first cycle (the core idle) to its completion: one per word
    of the expansion and 4 more for each word that needs SubWord, plus 2 (start, last write);
    with decryption the expansion runs twice, plus 5 (the writes one cycle later)."""
    size = KeySize.from_bits(key_bits)
    nr, nk = size.rounds, size.nbytes // 4
    words = 4 * (nr + 1) + 4 * _sub_words(nr, nk)
    return 2 * words + 5 if decrypt else words + 2


#: The S-box's affine map A (SubBytes = A(inv(x))), from the S-box itself: gf_inv is its own
#: inverse.
_AFFINE = [model.SBOX[model.gf_inv(x)] for x in range(256)]


def _byte_map(byte, table):
    """``table[byte]`` for an affine map of GF(2)^8 (``table[x] = L x ^ c``): each output bit
    the XOR of the input bits ``L`` selects, inverted where ``c`` has a one."""
    c = table[0]
    return Cat(*[xor_all([Const((c >> k) & 1, 1)]
                         + [byte[j] for j in range(8) if ((table[1 << j] ^ c) >> k) & 1])
                 for k in range(8)])


def _rom(m, addr, table):
    """``table[addr]`` (8-bit entries) from a LUT ROM added to ``m``."""
    rom = LutRom(table, 8)
    m.submodules += rom
    m.d.comb += rom.addr.eq(addr)
    return rom.data


def _imc_pre(word):
    """The column map P with InvMixColumns = MixColumns o P: ``b'_i = 5 b_i ^ 4 b_(i+2)``."""
    b = [word.word_select(3 - i, 8) for i in range(4)]
    return Cat(*reversed([gf_mul_const(b[i], 5) ^ gf_mul_const(b[(i + 2) % 4], 4)
                          for i in range(4)]))


def _inv_mix_column_shared(m, word):
    """InvMixColumns of a 32-bit column as MixColumns after P, written with the terms the rows
    share: with ``t = b0 ^ b1 ^ b2 ^ b3``, ``u = 4 (b0 ^ b2)``, ``v = 4 (b1 ^ b3)`` (so that
    ``u ^ v = 4 t``), row i is ``b_i ^ (u or v) ^ t ^ 2 (b_i ^ b_(i+1)) ^ 8 t``. About 100
    LUTs where the flat XOR of each bit's 11 to 19 input bits takes half as many again."""
    b = [word.word_select(3 - i, 8) for i in range(4)]
    t, u, v, t8 = (Signal(8, name=f"imc_{n}") for n in ("t", "u", "v", "t8"))
    m.d.comb += [t.eq(b[0] ^ b[1] ^ b[2] ^ b[3]), u.eq(gf_mul_const(b[0] ^ b[2], 4)),
                 v.eq(gf_mul_const(b[1] ^ b[3], 4)), t8.eq(gf_mul_const(t, 8))]
    return Cat(*reversed([b[i] ^ (v if i % 2 else u) ^ t ^ gf_mul_const(b[i] ^ b[(i + 1) % 4], 2)
                          ^ t8 for i in range(4)]))


def _nr_sel(sizes, size):
    """The round count of a key length ``size`` (a signal), for the supported ``sizes``: a
    constant when there is only one."""
    if len(sizes) == 1:
        return Const(sizes[0].rounds, 4)
    out = Const(sizes[0].rounds, 4)
    for s in sizes[1:]:
        out = Mux(size == s, s.rounds, out)
    return out


class LutRound(wiring.Component):
    """The LUT-ROUND AES core, behind the common core interface (``key``, ``i``, ``o``; see
    :mod:`aes_fpga.cores.interface`).

    One block at a time. Latency: ``Nr + 1`` cycles from request accepted to result valid (11 /
    13 / 15 for AES-128/192/256): one cycle for the initial AddRoundKey, one per round. The
    last round writes the result into an output register, where it waits until taken, and a
    new request is accepted in the next cycle, so saturated traffic sustains one block per
    ``Nr + 1`` cycles. Back-pressure: the last round of a block waits while the previous result
    is still in the output register, and nothing new is accepted meanwhile; no ready depends on
    another stream's ready or valid, except that a waiting key load goes before requests.
    Results leave in request order.

    Key load: :func:`key_load_cycles` (86 / 86 / 114 cycles for AES-128/192/256 encryption-only,
    173 / 173 / 229 with decryption) from the key transfer's first cycle to its completion
    (``key.ready``), taken only when no block is in flight; requests wait meanwhile. Every
    slot starts with the all-zero key of the shortest supported length. A key whose length is
    not in ``key_sizes`` is dropped at once with a pulse on ``key_rejected``. A key transfer
    with ``zeroize`` set loads the all-zero key of the slot's length instead (its round keys
    are overwritten in the same number of cycles).

    Stages, one method each: the round-key memory; control (the request and result streams,
    the round-key read); the round: SubBytes (with ShiftRows in its addresses), MixColumns,
    AddRoundKey, and the rounds' sequence; the key load: the key input, the expansion's
    registers, SubWord, the next word, the round-key writes and the load's sequence.

    Parameters
    ----------
    key_slots : int
        Independent keys, 1 to 64 (16 round keys each in LUT RAM, 32 with decryption).
    key_sizes : tuple of int
        Supported key lengths, a non-empty subset of (128, 192, 256).
    tag_width : int
        Bits of the opaque request tag returned with each result (0 to 64).
    decrypt : bool
        Build the decryption path too. Without it the core is encryption-only: ``ops`` is
        ``(Op.ENCRYPT,)`` and the ``op`` field of a request is ignored (every block encrypts).
    """

    RESOURCE_GROUPS = {"": "rounds and key schedule"}

    def __init__(self, *, key_slots=1, key_sizes=(128, 192, 256), tag_width=8, decrypt=True):
        sizes = check_key_sizes(key_sizes)
        if not isinstance(decrypt, bool):
            raise ValueError(f"decrypt: {decrypt!r} must be True or False")
        self.key_sizes = sizes
        self.key_slots = key_slots
        self.tag_width = tag_width
        self.decrypt = decrypt
        self.ops = (Op.ENCRYPT, Op.DECRYPT) if decrypt else (Op.ENCRYPT,)
        super().__init__({
            "key": In(stream.Signature(key_layout(key_slots))),
            "i": In(stream.Signature(request_layout(key_slots, tag_width))),
            "o": Out(stream.Signature(response_layout(tag_width))),
            "key_rejected": Out(1),
        })

    def latency(self, key_bits):
        """Cycles from a request accepted to its result, for keys of ``key_bits`` bits."""
        return latency(KeySize.from_bits(key_bits).rounds)

    def blocks_per_cycle(self, key_bits):
        """Sustained throughput with keys of ``key_bits`` bits: one block per ``Nr + 1``."""
        return Fraction(1, latency(KeySize.from_bits(key_bits).rounds))

    def elaborate(self, platform):
        # One method per stage (see the class docstring). Each adds its logic to m and its
        # signals to s for the stages after it; their order is the statements' order in the
        # netlist.
        m = Module()
        s = SimpleNamespace(sizes=[KeySize.from_bits(b) for b in self.key_sizes])
        self._round_key_memory(m, s)
        self._control(m, s)
        self._sub_bytes(m, s)
        self._mix_columns(m, s)
        self._add_round_key(m, s)
        self._round_sequence(m, s)
        self._key_input(m, s)
        self._expansion_registers(m, s)
        self._sub_word(m, s)
        self._next_word(m, s)
        self._round_key_write(m, s)
        self._load_sequence(m, s)
        return m

    def _round_key_memory(self, m, s):
        """Round keys: 16 entries per slot in LUT RAM, read combinationally. With decryption,
        entries 16..31 of a slot hold InvMixColumns(K_r) for the equivalent inverse cipher's
        middle rounds. Also each slot's key length (``ksz``)."""
        sizes, slots = s.sizes, self.key_slots
        keys = model.round_keys(bytes(sizes[0].nbytes))
        init = keys + [0] * (16 - len(keys))
        if self.decrypt:
            init += [model.inv_mix_columns(k) for k in keys] + [0] * (16 - len(keys))
        m.submodules.round_keys = rkm = Memory(shape=128, depth=len(init) * slots,
                                               init=init * slots)
        s.rd = rkm.read_port(domain="comb")
        s.wr = rkm.write_port()
        s.ksz = Array(Signal(KeySize, init=sizes[0], name=f"ksz{n}") for n in range(slots))

    def _control(self, m, s):
        """Control: the block's registers, the request and result streams, and the round key
        read for the next state update (at the request's first key while idle)."""
        dec = self.decrypt
        s.busy = Signal()
        s.last = Signal()
        s.done = Signal()
        s.loading = Signal()
        s.op_dec = Signal()
        s.slot = Signal.like(self.i.payload.slot)
        s.ra = Signal(4)            # index of the round key of the next state update
        s.end = Signal(4)           # index of the last round's key
        s.tag = Signal(self.tag_width)
        s.state = Signal(128)
        s.out_block = Signal(128)
        s.out_tag = Signal(self.tag_width)

        req = self.i.payload
        s.req_dec = (req.op == Op.DECRYPT) if dec else Const(0)
        s.accept = Signal()
        m.d.comb += [
            self.i.ready.eq(~s.busy & ~s.loading & ~self.key.valid),
            s.accept.eq(self.i.valid & self.i.ready),
            self.o.valid.eq(s.done),
            self.o.payload.block.eq(s.out_block),
            self.o.payload.tag.eq(s.out_tag),
        ]
        s.req_nr = _nr_sel(s.sizes, s.ksz[req.slot])
        first = Mux(s.req_dec, s.req_nr, 0) if dec else Const(0, 4)
        s.use_dk = Signal()         # read InvMixColumns(K_ra)
        if dec:
            m.d.comb += s.rd.addr.eq(Mux(s.busy, Cat(s.ra, s.use_dk, s.slot),
                                         Cat(first, 0, req.slot)))
        else:
            m.d.comb += s.rd.addr.eq(Mux(s.busy, Cat(s.ra, s.slot), Cat(first, req.slot)))
        s.rk = s.rd.data

    def _sub_bytes(self, m, s):
        """SubBytes (InvSubBytes) of the state, with ShiftRows (InvShiftRows) in the S-boxes'
        addresses: 16 LUT ROMs.

        With decryption both S-boxes are around one GF(2^8) inverse ROM: SubBytes = A(inv(x)),
        InvSubBytes = inv(A^-1(y)), so the affine maps (5-input XORs) sit before and after it,
        the one before taking the InvShiftRows/ShiftRows choice in the same LUT."""
        s.sub = Signal(128)
        state = s.state
        if self.decrypt:
            inv_table = [model.gf_inv(a) for a in range(256)]
            a_inv = [0] * 256
            for x in range(256):
                a_inv[_AFFINE[x]] = x
            addr = [Mux(s.op_dec, _byte_map(state_byte(inv_shift_rows(state), b), a_inv),
                        state_byte(shift_rows(state), b)) for b in range(16)]
            g = [_rom(m, addr[b], inv_table) for b in range(16)]
            m.d.comb += s.sub.eq(state_from_bytes(Mux(s.op_dec, g[b], _byte_map(g[b], _AFFINE))
                                                  for b in range(16)))
        else:
            m.d.comb += s.sub.eq(state_from_bytes(_rom(m, state_byte(shift_rows(state), b),
                                                       model.SBOX)
                                                  for b in range(16)))

    def _mix_columns(self, m, s):
        """MixColumns of the S-boxes' output; with decryption InvMixColumns is MixColumns after
        the column map P (:func:`_imc_pre`), so both directions share one MixColumns."""
        s.mixed = Signal(128)
        sub = s.sub
        if self.decrypt:
            pre = Signal(128)
            m.d.comb += pre.eq(Mux(s.op_dec, Cat(*reversed([_imc_pre(sub.word_select(3 - c, 32))
                                                            for c in range(4)])), sub))
        else:
            pre = sub
        m.d.comb += s.mixed.eq(Cat(*reversed([mix_column(pre.word_select(3 - c, 32))
                                              for c in range(4)])))

    def _add_round_key(self, m, s):
        """AddRoundKey, last in both directions: the round key XOR the request's block (the
        initial AddRoundKey), the last round's S-box output or MixColumns' output."""
        s.nxt = Signal(128)
        m.d.comb += s.nxt.eq(s.rk ^ Mux(s.accept, self.i.payload.block,
                                        Mux(s.last, s.sub, s.mixed)))

    def _round_sequence(self, m, s):
        """Control, the rounds: a request is taken into the state, one round a cycle follows,
        and the last goes into the output register once it is free."""
        dec = self.decrypt
        req = self.i.payload
        with m.If(self.o.valid & self.o.ready):
            m.d.sync += s.done.eq(0)
        with m.If(s.accept):
            nr = s.req_nr
            m.d.sync += [s.state.eq(s.nxt), s.busy.eq(1), s.slot.eq(req.slot),
                         s.op_dec.eq(s.req_dec), s.tag.eq(req.tag), s.last.eq(0)]
            if dec:
                m.d.sync += [s.ra.eq(Mux(s.req_dec, nr - 1, 1)), s.end.eq(Mux(s.req_dec, 0, nr)),
                             s.use_dk.eq(s.req_dec)]
            else:
                m.d.sync += [s.ra.eq(1), s.end.eq(nr)]
        with m.Elif(s.busy & ~s.last):
            step = Mux(s.op_dec, s.ra - 1, s.ra + 1) if dec else s.ra + 1
            m.d.sync += [s.state.eq(s.nxt), s.ra.eq(step), s.last.eq(step == s.end)]
            if dec:
                m.d.sync += s.use_dk.eq(s.op_dec & (step != 0))
        with m.Elif(s.busy & (~s.done | self.o.ready)):
            m.d.sync += [s.out_block.eq(s.nxt), s.out_tag.eq(s.tag), s.busy.eq(0),
                         s.done.eq(1)]

    def _key_input(self, m, s):
        """Key load, the key input: the expansion a word a cycle, SubWord a byte a cycle.

        The key transfer stays valid (its payload held) until the last round key is written, so
        the key words are read from it as they are needed. win holds the last Nk_max words, the
        newest in the least significant word; round key K_r is its last 4 words just after
        w[4r+3] came in."""
        sizes, kp = s.sizes, self.key.payload
        key_ok = Signal()
        m.d.comb += key_ok.eq(Cat(*(kp.key_bits == sz for sz in sizes)).any())
        s.nw = nw = max(sz.nbytes for sz in sizes) // 4
        s.win = Signal(32 * nw)
        s.wv = [s.win.word_select(nw - 1 - k, 32) for k in range(nw)]
        s.size = Signal(KeySize, init=sizes[0])
        s.i = Signal(6)             # index of the next word
        s.imod = Signal(3)          # i % Nk
        s.j = Signal(3)             # SubWord byte
        s.t = Signal(32)
        s.rc = Signal(8)
        s.fresh = Signal()          # win just took a word
        s.load_end = Signal()
        s.start = Signal()
        busy, loading = s.busy, s.loading
        m.d.comb += [
            s.start.eq(self.key.valid & ~busy & ~loading & (key_ok | kp.zeroize)),
            self.key.ready.eq((~busy & ~loading & ~key_ok & ~kp.zeroize) | s.load_end),
            self.key_rejected.eq(self.key.valid & ~busy & ~loading & ~key_ok & ~kp.zeroize),
        ]

    def _expansion_registers(self, m, s):
        """Key load: the key-length decoding and the per-word flags are registers, set at the
        start of a pass and stepped with each word, so that no comparison sits in front of the
        word's logic (their reset values are those of the shortest key: with one key length
        they are constants)."""
        sizes = s.sizes
        s.nk_m1 = Signal(3, init=sizes[0].nbytes // 4 - 1)        # Nk - 1
        s.tap6 = Signal(init=sizes[0] == KeySize.AES192)          # Nk = 6
        s.tap8 = Signal(init=sizes[0] == KeySize.AES256)          # Nk = 8
        s.nr_p1 = Signal(4, init=sizes[0].rounds + 1)             # Nr + 1
        s.key_phase = Signal()      # i < Nk: the word is a key word
        s.rot = Signal()            # i % Nk = 0
        s.need_sub = Signal()       # the word needs SubWord
        s.wrap = Signal()
        m.d.comb += s.wrap.eq(s.imod == s.nk_m1)

    def _sub_word(self, m, s):
        """Key load, SubWord: byte j of w[i-1], or of RotWord(w[i-1]): byte (j + RotWord) % 4,
        counted in a register of its own so that the S-box address is one 4-way
        multiplexer."""
        s.bsel = Signal(2)
        sbox_addr = Signal(8)
        m.d.comb += sbox_addr.eq(s.wv[s.nw - 1].word_select(~s.bsel, 8))
        s.sb = _rom(m, sbox_addr, model.SBOX)

    def _next_word(self, m, s):
        """Key load, the next word: a key word, or ``w[i-Nk] ^ f(w[i-1])``."""
        nw, wv, kp = s.nw, s.wv, self.key.payload
        # w[i-Nk], from a register loaded when the word before is shifted in (w[i-1] is then
        # the word being shifted in, and w[i+1-Nk] is Nk - 2 words behind it)
        s.back = Signal(32)
        if nw == 8:
            s.back_next = Mux(s.tap8, wv[1], Mux(s.tap6, wv[3], wv[5]))
        elif nw == 6:
            s.back_next = Mux(s.tap6, wv[1], wv[3])
        else:
            s.back_next = wv[1]
        f = Mux(s.need_sub, s.t ^ Cat(Const(0, 24), Mux(s.rot, s.rc, 0)), wv[nw - 1])
        # The key word a key-phase step takes, from a register loaded every cycle with the word
        # ksel selects (a step ahead: ksel is i + 1 while word i is shifted in, 0 before a pass
        # starts and after the load), so that the key-word multiplexer is not part of the new
        # word's logic and has its select straight from flip-flops; zeroize is the register's
        # reset.
        count = 4 if nw == 4 else 8
        s.ksel = Signal(range(count))
        m.submodules.key_mux = key_mux = LutMux(count, 32)
        m.d.comb += [key_mux.i.eq(Cat(kp.key.word_select(7 - k, 32) for k in range(nw))),
                     key_mux.sel.eq(s.ksel)]
        key_word = Signal(32)
        m.d.sync += key_word.eq(Mux(kp.zeroize, 0, key_mux.o))

        s.new = Mux(s.key_phase, key_word, s.back ^ f)

    def _round_key_write(self, m, s):
        """Key load, the round-key writes: K_r once its last word is in."""
        kp, i, nw = self.key.payload, s.i, s.nw
        s.nr_load = nr_load = _nr_sel(s.sizes, s.size)
        s.all_words = Signal()
        m.d.comb += s.all_words.eq((i[:2] == 0) & (i[2:] == s.nr_p1))
        s.second = Signal()         # decryption: the second pass, writing InvMixColumns(K_r)
        s.pass_end = Signal()
        wr, loading, fresh = s.wr, s.loading, s.fresh
        if self.decrypt:
            # The words also go into ow, a cycle later, as they are (first pass) or through
            # InvMixColumns (second pass), and K_r is written from there.
            ow = Signal(128)
            wq = Signal()
            widx = Signal(4)
            with m.If(fresh):
                m.d.sync += ow.eq(Cat(Mux(s.second, _inv_mix_column_shared(m, s.wv[nw - 1]),
                                          s.wv[nw - 1]),
                                      ow[:96]))
            m.d.sync += [wq.eq(loading & fresh & (i[:2] == 0) & (i != 0)),
                         widx.eq((i[2:] - 1)[:4])]
            m.d.comb += [wr.addr.eq(Cat(widx, s.second, kp.slot)), wr.data.eq(ow),
                         wr.en.eq(loading & wq), s.pass_end.eq(loading & wq & (widx == nr_load)),
                         s.load_end.eq(s.pass_end & s.second)]
        else:
            m.d.comb += [wr.addr.eq(Cat((i[2:] - 1)[:4], kp.slot)), wr.data.eq(s.win[:128]),
                         wr.en.eq(loading & fresh & (i[:2] == 0) & (i != 0)),
                         s.load_end.eq(loading & fresh & s.all_words)]

    def _load_sequence(self, m, s):
        """Key load, the sequence: a pass starts, SubWord takes 4 cycles where needed, each
        word shifts into win; with decryption a second pass follows."""
        kp, nw = self.key.payload, s.nw
        i, imod, j, rc, bsel, ksel = s.i, s.imod, s.j, s.rc, s.bsel, s.ksel
        with m.If(s.start):
            sz = Mux(kp.zeroize, s.ksz[kp.slot], kp.key_bits)
            nr_new = _nr_sel(s.sizes, sz)
            m.d.sync += [s.nk_m1.eq(nr_new - 7), s.tap6.eq(nr_new == 12),
                         s.tap8.eq(nr_new == 14), s.nr_p1.eq(nr_new + 1), s.key_phase.eq(1),
                         s.rot.eq(1), s.need_sub.eq(0)]
            m.d.sync += [s.size.eq(sz), s.ksz[kp.slot].eq(sz), i.eq(0), imod.eq(0), j.eq(0),
                         rc.eq(1), s.fresh.eq(0), s.loading.eq(1), s.second.eq(0), bsel.eq(1),
                         ksel.eq(1)]
        with m.Elif(s.loading):
            m.d.sync += s.fresh.eq(0)
            with m.If(s.load_end):
                m.d.sync += [s.loading.eq(0), ksel.eq(0)]
            if self.decrypt:
                with m.Elif(s.pass_end):
                    m.d.sync += [s.key_phase.eq(1), s.rot.eq(1), s.need_sub.eq(0)]
                    m.d.sync += [i.eq(0), imod.eq(0), j.eq(0), rc.eq(1), s.second.eq(1),
                                 bsel.eq(1), ksel.eq(1)]
                with m.Elif(s.all_words):
                    # the last write of the pass is one cycle away
                    m.d.sync += ksel.eq(0)
            with m.Elif(s.need_sub & ~j[2]):
                m.d.sync += [s.t.eq(Cat(s.sb, s.t[:24])), j.eq(j + 1), bsel.eq(bsel + 1)]
            with m.Else():
                wrap, key_phase = s.wrap, s.key_phase
                m.d.sync += [s.win.eq(Cat(s.new, s.win[:32 * (nw - 1)])), i.eq(i + 1),
                             s.fresh.eq(1), s.back.eq(s.back_next),
                             ksel.eq(ksel + 1),
                             j.eq(0), imod.eq(Mux(wrap, 0, imod + 1)), bsel.eq(wrap),
                             key_phase.eq(key_phase & ~wrap), s.rot.eq(wrap),
                             s.need_sub.eq(wrap | (~key_phase & s.tap8 & (imod == 3)))]
                with m.If(s.need_sub & s.rot):
                    m.d.sync += rc.eq(gf_mul_const(rc, 2))
