"""DRAB-LOCUS: the 12-stage BRAM/DSP48E1 AES datapath of Grycel & Walls.

Pipeline, for a block presented to the SubBytes block-RAM address at cycle ``t`` (one pass of the
loop = one AES round, 12 cycles):

====  =====================================================================================
t+2   SubBytes / InvSubBytes: 8 dual-port 512x8 ROMs (mode bit = high address bit); read +
      the block RAM's own output register
t+3   ShiftRows / InvShiftRows: a fabric 2:1 switch into 128 flip-flops
t+5   MixColumns products: 8 dual-port 512x32 ROMs in the storage format of the paper's
      Appendix B (enc ``[02a:01a:01a:03a]``, dec ``[0Ea:09a:0Da:0Ba]``); read + output register
t+9   MixColumns sums: per lane (48/48/32 bits) three cascaded XOR lanes (DSP48E1), the third
      operand one fabric register later (128 flip-flops)
t+12  AddRoundKey: XOR lanes with two input registers and an output register; their output
      feeds the SubBytes address again
====  =====================================================================================

The initial AddRoundKey (the request's block and its first key, from a LUT RAM read
asynchronously, into the output register: 1 cycle) and the final AddRoundKey (from the ShiftRows
register in the last pass, 2 cycles) are separate lanes, so a block entering, one recirculating
and one leaving never compete. The initial lane cascades into the main AddRoundKey lane, which
passes it on instead of its own sum in the cycle a new block takes the slot (the DSP48E1's own
operand multiplexers), so the SubBytes address is the main lane's output register alone: no
fabric logic between the two.
Decryption uses the equivalent inverse cipher, so any block in any stage may encrypt or decrypt.

Control: a record per ring slot (valid, op, round, key slot, tag) rotates with the pipeline, so
every stage reads the state of the block it holds at a fixed position. A new block enters only an
empty slot, two cycles before that slot reaches the SubBytes address (the initial AddRoundKey's
latency).
"""

from fractions import Fraction
from types import SimpleNamespace

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from .. import model
from ..hw import inv_shift_rows, rot_bytes_right, shift_rows, state_byte, state_from_bytes
from ..params import KeySize
from ..primitives import DualPortBRAM, XorLane
from .drab_locus_keys import KeySequencer, TableLayout, key_load_cycles, table_port_signature
from .interface import check_core_options, check_key_sizes, core_members, datapath_members
from .ring import RingControl

__all__ = ["DrabLocus", "DrabLocusDatapath", "ResultFIFO", "mix_columns_products",
           "round_key_writes", "LOOP_STAGES", "latency", "key_load_cycles"]

LOOP_STAGES = 12
_LANES = ((80, 48), (32, 48), (0, 32))  # (low bit, width) of the hi, mid and lo lanes
_ENC_MC = (2, 1, 1, 3)       # stored bytes [31:24], [23:16], [15:8], [7:0] for encryption
_DEC_MC = (14, 9, 13, 11)    # and for decryption (equivalent inverse cipher)


def latency(nr):
    """Cycles from request accepted to result, for ``nr`` rounds: 2 + 12 (nr - 1) + 5."""
    return LOOP_STAGES * (nr - 1) + 7


def mix_columns_products():
    """The 512 x 32 MixColumns product table: address ``{op, a}``."""
    table = []
    for coeffs in (_ENC_MC, _DEC_MC):
        for a in range(256):
            word = 0
            for c in coeffs:
                word = (word << 8) | model.gf_mul(a, c)
            table.append(word)
    return table



def round_key_writes(key, op, slot=0):
    """The ``rk`` transfers that load ``key`` for ``op`` into ``slot``: dicts of the
    :func:`~aes_fpga.cores.interface.round_key_write_layout` fields, one per 32-bit word."""
    keys = model.round_keys(key) if op == 0 else model.inv_round_keys(key)
    nr = len(keys) - 1
    return [{"slot": slot, "op": op, "index": r, "word": w, "nr": nr,
             "key": (k >> (96 - 32 * w)) & 0xFFFFFFFF}
            for r, k in enumerate(keys) for w in range(4)]



def _zero_key_contents(key_slots, key_bits=128):
    """Per word column: contents of the round-key and first-key memories holding the schedule
    of the all-zero key in every slot."""
    main = [[0] * (key_slots * 32) for _ in range(4)]
    first = [[0] * (key_slots * 2) for _ in range(4)]
    for slot in range(key_slots):
        for op in (0, 1):
            for w in round_key_writes(bytes(key_bits // 8), op, slot):
                main[w["word"]][(slot << 5) | (op << 4) | w["index"]] = w["key"]
                if w["index"] == 0:
                    first[w["word"]][(slot << 1) | op] = w["key"]
    return main, first


def _key_read(mems, port):
    """The 128-bit key read from the four word memories (word 0 most significant)."""
    return Cat(*[getattr(mems[w], f"rdata_{port}") for w in reversed(range(4))])


class _FirstKeys:
    """The first round key of each {key slot, op}, one memory per 32-bit word, read without a
    clock (LUT RAM: the initial AddRoundKey needs the request's key in the cycle it is accepted)
    and written on the clock edge."""

    def __init__(self, rkm, init):
        self.mems = [Memory(shape=32, depth=len(init[w]), init=init[w]) for w in range(4)]
        self.reads = [mem.read_port(domain="comb") for mem in self.mems]
        self.writes = [mem.write_port() for mem in self.mems]
        for w, mem in enumerate(self.mems):
            rkm.submodules[f"rk_first{w}"] = mem

    def key(self):
        """The 128-bit first key at the read address (word 0 most significant)."""
        return Cat(*[self.reads[w].data for w in reversed(range(4))])


def _key_addr(mems, port, value):
    """The statements setting the address of ``port`` of the four word memories."""
    return [getattr(mem, f"addr_{port}").eq(value) for mem in mems]


class ResultFIFO(wiring.Component):
    """The output FIFO of :class:`DrabLocusDatapath`: first-word fall-through, ``depth``
    words of ``width`` bits in LUT RAM, with :class:`amaranth.lib.fifo.SyncFIFO`'s port names.

    Its fill level is a thermometer code (``filled[k]``: more than ``k`` words), so ``r_rdy``
    is a flip-flop and every register's next value is one LUT after the flip-flops and
    ``w_en``/``r_en``: a binary level compared with zero before its own update (SyncFIFO's) is
    three LUT4 levels on an ECP5. ``w_en`` is never refused: the writer must know there is
    room (the datapath admits a block only when its result will have room).

    Latency: a word written shows on ``r_data`` with ``r_rdy`` the next cycle. Throughput: one
    write and one read a cycle.
    """

    def __init__(self, *, width, depth):
        if not isinstance(depth, int) or depth < 1:
            raise ValueError(f"depth: {depth!r} must be an integer of 1 or more")
        self.depth = depth
        super().__init__({"w_data": In(width), "w_en": In(1), "r_data": Out(width),
                          "r_rdy": Out(1), "r_en": In(1)})

    def elaborate(self, platform):
        m = Module()
        depth = self.depth
        m.submodules.storage = storage = Memory(shape=len(self.w_data), depth=depth, init=[])
        wr, rd = storage.write_port(), storage.read_port(domain="comb")
        produce, consume = Signal(range(depth)), Signal(range(depth))
        filled = Signal(depth)
        do_read = Signal()

        def incr(ptr):
            if depth & (depth - 1) == 0:
                return (ptr + 1)[:len(ptr)]
            return Mux(ptr == depth - 1, 0, ptr + 1)

        m.d.comb += [
            wr.addr.eq(produce), wr.data.eq(self.w_data), wr.en.eq(self.w_en),
            rd.addr.eq(consume), self.r_data.eq(rd.data),
            self.r_rdy.eq(filled[0]), do_read.eq(self.r_en & filled[0]),
        ]
        with m.If(self.w_en):
            m.d.sync += produce.eq(incr(produce))
        with m.If(do_read):
            m.d.sync += consume.eq(incr(consume))
        with m.If(self.w_en ^ do_read):
            m.d.sync += filled.eq(Mux(self.w_en, Cat(1, filled[:-1]), filled[1:]))
        return m


class _RingMetrics:
    """What every DRAB-LOCUS variant reports about itself (reports and builds ask the core)."""

    def latency(self, key_bits):
        """Cycles from a request accepted to its result, for keys of ``key_bits`` bits."""
        return latency(KeySize.from_bits(key_bits).rounds)

    def blocks_per_cycle(self, key_bits):
        """Sustained throughput with keys of ``key_bits`` bits: a ring slot takes a new block
        every ``12 Nr`` cycles and there are 12 slots, so one block per ``Nr`` cycles."""
        return Fraction(LOOP_STAGES, LOOP_STAGES * KeySize.from_bits(key_bits).rounds)


class DrabLocusDatapath(_RingMetrics, wiring.Component):
    """The DRAB-LOCUS datapath with its control and round-key memories.

    Round keys are written through ``rk``, one 32-bit word per transfer (see
    :func:`aes_fpga.cores.interface.round_key_write_layout` and :func:`round_key_writes`); a key
    schedule in front of it fills them. While ``lock`` is high no request for key slot
    ``lock_slot`` is accepted (nor while ``rk`` is valid for that slot), and ``rk`` is accepted
    only once no block of its key slot is in flight, so a key update never meets a block using
    a mix of old and new
    keys; blocks of other key slots keep flowing.

    Latency: ``12 (Nr - 1) + 7`` cycles from acceptance to the result on ``o`` (115/139/163 for
    AES-128/192/256) when ``o`` is ready. Throughput: at most one block per
    cycle enters, into an empty ring slot; a slot is busy for ``12 Nr`` cycles, so saturated
    AES-128 traffic sustains 12 blocks per 120 cycles. Results leave in completion order (in
    order for equal key lengths). Back-pressure: ``o`` is fed from a FIFO of ``fifo_depth``
    entries and a block is accepted only when its result has room, so results are never lost.

    Stages, drawn as in the paper's pipeline (one method each; their cycles are in the module
    docstring): control (the ring of records, the entry, the results), the round-key memories
    and their writes, the initial AddRoundKey, SubBytes, ShiftRows, MixColumns, the main and
    the final AddRoundKey. Each pipeline stage is a submodule named in
    :attr:`RESOURCE_GROUPS`.

    Parameters
    ----------
    key_slots : int
        Independent keys (1 to 64); requests name one.
    tag_width : int
        Width of the opaque request tag (0 to 64).
    fifo_depth : int
        Output FIFO depth, at least 12 for full throughput.
    key_sizes : tuple of int
        Key lengths the round-key writes may carry; with a single one the round count is a
        constant of the hardware (the paper's configuration is ``(128,)``).
    key_tables : bool
        Instead of ``rk``, a ``port`` member (:func:`~.drab_locus_keys.table_port_signature`)
        giving a key schedule port b of the round-key memories, which then also hold that
        schedule's tables (:class:`~.drab_locus_keys.TableLayout`); :class:`DrabLocus` uses it.
    """

    #: Hierarchy paths -> the resource groups of the paper's Table 1 (plus the output FIFO,
    #: which the paper's core does not have); see :func:`aes_fpga.flow.synth.group_modules`.
    RESOURCE_GROUPS = {"": "control", "round_keys": "key schedule", "sub_bytes": "sub bytes",
                       "shift_rows": "shift rows", "mix_columns": "mix columns",
                       "add_round_key": "add round key", "ofifo": "output fifo"}

    def __init__(self, *, key_slots=1, tag_width=8, fifo_depth=16, key_sizes=(128, 192, 256),
                 key_tables=False):
        if not isinstance(fifo_depth, int) or fifo_depth < 1:
            raise ValueError(f"fifo_depth: {fifo_depth!r} must be an integer of 1 or more")
        self.key_sizes = check_key_sizes(key_sizes)
        self.key_slots = key_slots
        self.tag_width = tag_width
        self.fifo_depth = fifo_depth
        self.key_tables = key_tables
        members = datapath_members(key_slots, tag_width)
        if key_tables:
            # port b of the round-key memories, tables included, instead of rk writes
            self.table_layout = TableLayout(key_slots, self.key_sizes)
            del members["rk"]
            members["port"] = In(table_port_signature(self.table_layout.abits))
        super().__init__(members)

    def elaborate(self, platform):
        # One method per stage (see the class docstring). Each adds its logic to m (or to its
        # stage's submodule) and its signals to s for the stages after it; their order is the
        # statements' order in the netlist.
        m = Module()
        s = SimpleNamespace()
        self._ring(m, s)
        self._entry(m, s)
        self._stage_modules(m, s)
        self._round_key_memories(s)
        self._initial_add_round_key(m, s)
        self._sub_bytes(s)
        self._shift_rows(s)
        self._mix_columns(s)
        self._add_round_key(m, s)
        self._final_add_round_key(m, s)
        if self.key_tables:
            self._table_port(m, s)
        else:
            self._round_key_writes(m, s)
        self._results(m, s)
        return m

    def _ring(self, m, s):
        """Control, the ring state: one record per ring slot, rotating with the pipeline.

        ``stage[k]`` describes the block that was at the SubBytes address k cycles ago, so every
        stage reads its block's state at a fixed position (no multiplexers), as the paper's
        shift registers do. At the SubBytes address (stage 0) the round is counted; a block in
        its last pass leaves the ring there (its slot stays empty from stage 1 on)."""
        n = LOOP_STAGES
        s.ring = ring = RingControl(self, map(model.num_rounds, self.key_sizes), tags=False)
        s.stage = stage = ring.records(n)
        s.cur = cur = stage[0]
        s.last = last = Signal()
        m.d.comb += last.eq(cur.valid & (cur.rnd == ring.nr_of(cur)))
        m.d.sync += stage[1].eq(cur)
        with m.If(cur.valid):
            m.d.sync += stage[1].rnd.eq(cur.rnd + 1)
            with m.If(last):
                m.d.sync += stage[1].valid.eq(0)
        for k in range(1, n - 2):
            m.d.sync += stage[k + 1].eq(stage[k])
        m.d.sync += stage[0].eq(stage[n - 1])

    def _entry(self, m, s):
        """Control, the entry: a new block takes the slot at stage 10, which reaches the
        SubBytes address two cycles later, together with the output of the initial
        AddRoundKey; only while its result will have room in the output FIFO."""
        n = LOOP_STAGES
        stage, ring = s.stage, s.ring
        m.submodules.ofifo = s.ofifo = ResultFIFO(
            width=len(self.o.payload.as_value()), depth=self.fifo_depth)
        target = stage[n - 2]
        s.accept = accept = Signal()
        req = self.i.payload
        slot_locked = Signal()
        locked = (ring.locked() if not self.key_tables
                  else self.lock & (self.lock_slot == req.slot))
        # Occupancy: blocks accepted whose results have not been taken from ``o`` (in the ring
        # or in the output FIFO), as a thermometer code (occupied[k]: more than k), so the
        # "room for one more" test is one flip-flop and its update one LUT after ``accept``.
        occupied = Signal(self.fifo_depth)
        taken = Signal()
        m.d.comb += [
            slot_locked.eq(locked),
            self.i.ready.eq(~target.valid & ~slot_locked & ~occupied[-1]),
            accept.eq(self.i.valid & self.i.ready),
            taken.eq(self.o.valid & self.o.ready),
        ]
        with m.If(accept & ~taken):
            m.d.sync += occupied.eq(Cat(1, occupied[:-1]))
        with m.Elif(taken & ~accept):
            m.d.sync += occupied.eq(occupied[1:])
        entry = ring.entry(req, rnd=1)
        with m.If(accept):
            m.d.sync += [getattr(stage[n - 1], f).eq(v) for f, v in entry.items()]
        with m.Else():
            m.d.sync += stage[n - 1].eq(target)

    def _stage_modules(self, m, s):
        """The stages are submodules named as in the paper's Table 1, so that a hierarchical
        synthesis reports them separately (aes-fpga synth --json "modules"); what remains at
        the top level is the control."""
        m.submodules.round_keys = s.rkm = Module()
        m.submodules.sub_bytes = s.sbm = Module()
        m.submodules.shift_rows = s.srm = Module()
        m.submodules.mix_columns = s.mcm = Module()
        m.submodules.add_round_key = s.arkm = Module()

    def _round_key_memories(self, s):
        """Round keys: {key slot, op, index}; port a serves the main AddRoundKey, port b the
        final one and the writes. The first key of each op is also kept in a small LUT RAM,
        {key slot, op}, for the initial AddRoundKey (:class:`_FirstKeys`). One memory per
        32-bit word of the keys, so the key schedule writes word by word. Every slot starts out
        holding the schedule of the all-zero key of the shortest supported length; with
        ``key_tables`` the memories also hold the key schedule's tables above the keys."""
        main_init, first_init = _zero_key_contents(self.key_slots, self.key_sizes[0])
        depth = self.key_slots * 32
        if self.key_tables:
            depth = self.table_layout.depth
            for w in range(4):
                main_init[w] += [0] * (depth - len(main_init[w]))
                for addr, word in self.table_layout.tables(w).items():
                    main_init[w][addr] = word
        s.rk_main = [DualPortBRAM(width=32, depth=depth, init=main_init[w],
                                  writable=(False, True)) for w in range(4)]
        for w in range(4):
            s.rkm.submodules[f"rk_main{w}"] = s.rk_main[w]
        s.rk_first = _FirstKeys(s.rkm, first_init)

    def _initial_add_round_key(self, m, s):
        """Initial AddRoundKey: the request's block and its first key at cycle e, the sum at
        e+1, on to the main AddRoundKey lane's cascade input, which takes it into the SubBytes
        address at e+2.

        The lane's output register is loaded every cycle, whether or not a block was accepted,
        and never reset: the main lane reads it only in the cycle after an acceptance
        (``entered``), so clearing it bought nothing, and the reset, driven by ``accept`` (a
        LUT after the ring's records), had to reach all 128 flip-flops within one cycle: on
        ECP5 that wire was the routed critical path."""
        req = self.i.payload
        s.entered = entered = Signal()
        m.d.sync += entered.eq(s.accept)
        s.init_pcout = []
        first_key = s.rk_first.key()
        for lo, w in _LANES:
            lane = XorLane(w, a_regs=0, c_regs=0)
            s.arkm.submodules[f"ark_init_{lo}"] = lane
            s.arkm.d.comb += [lane.a.eq(req.block[lo:lo + w]), lane.c.eq(first_key[lo:lo + w])]
            s.init_pcout.append(lane.pcout)
        s.rkm.d.comb += [rd.addr.eq(Cat(req.op, req.slot)) for rd in s.rk_first.reads]

    def _sub_bytes(self, s):
        """SubBytes / InvSubBytes (t+2): 8 dual-port 512x8 S-box ROMs, addressed by the main
        AddRoundKey lane's output register (its signals are defined here, driven in
        :meth:`_add_round_key`), which carries the initial AddRoundKey's sum for a block just
        accepted; the op is the high address bit."""
        sbox = list(model.SBOX) + list(model.INV_SBOX)
        s.ark_out = [Signal(w, name=f"ark_{lo}") for lo, w in _LANES]
        sb_in = Signal(128)
        for (lo, w), a in zip(_LANES, s.ark_out, strict=True):
            s.sbm.d.comb += sb_in[lo:lo + w].eq(a)
        s.sb_out = [Signal(8, name=f"sb{i}") for i in range(16)]
        for j in range(8):
            rom = DualPortBRAM(width=8, depth=512, init=sbox)
            s.sbm.submodules[f"sbox{j}"] = rom
            for x, i in (("a", 2 * j), ("b", 2 * j + 1)):
                s.sbm.d.comb += [
                    getattr(rom, f"addr_{x}").eq(Cat(state_byte(sb_in, i), s.cur.op)),
                    s.sb_out[i].eq(getattr(rom, f"rdata_{x}"))]

    def _shift_rows(self, s):
        """ShiftRows / InvShiftRows into fabric flip-flops (t+3)."""
        sb_state = state_from_bytes(s.sb_out)
        s.sr = Signal(128)
        s.srm.d.sync += s.sr.eq(Mux(s.stage[2].op, inv_shift_rows(sb_state),
                                    shift_rows(sb_state)))

    def _mix_columns(self, s):
        """MixColumns / InvMixColumns: the products from 8 dual-port 512x32 ROMs (t+5), their
        sums in three cascaded XOR lanes per lane width (t+9)."""
        products = mix_columns_products()
        prod = [Signal(32, name=f"mc{i}") for i in range(16)]
        for j in range(8):
            rom = DualPortBRAM(width=32, depth=512, init=products)
            s.mcm.submodules[f"mcrom{j}"] = rom
            for x, i in (("a", 2 * j), ("b", 2 * j + 1)):
                s.mcm.d.comb += [
                    getattr(rom, f"addr_{x}").eq(Cat(state_byte(s.sr, i), s.stage[3].op)),
                    prod[i].eq(getattr(rom, f"rdata_{x}"))]
        # Vector r, column c holds the products of s(r,c) rotated right by r bytes, so that
        # every output byte's four addends sit at the same position of the four vectors.
        vecs = [Cat(*reversed([rot_bytes_right(prod[r + 4 * c], r) for c in range(4)]))
                for r in range(4)]
        s.mc_out = []
        for lo, w in _LANES:
            l0 = XorLane(w, a_regs=1, c_regs=1)
            l1 = XorLane(w, a_regs=2, cascade_in=True)
            l2 = XorLane(w, a_regs=2, cascade_in=True)
            s.mcm.submodules[f"mc_{lo}_0"], s.mcm.submodules[f"mc_{lo}_1"] = l0, l1
            s.mcm.submodules[f"mc_{lo}_2"] = l2
            v3 = Signal(w, name=f"mc_v3_{lo}")
            s.mcm.d.sync += v3.eq(vecs[3][lo:lo + w])
            s.mcm.d.comb += [l0.a.eq(vecs[0][lo:lo + w]), l0.c.eq(vecs[1][lo:lo + w]),
                             l1.a.eq(vecs[2][lo:lo + w]), l1.pcin.eq(l0.pcout),
                             l2.a.eq(v3), l2.pcin.eq(l1.pcout)]
            s.mc_out.append(l2.p)

    def _add_round_key(self, m, s):
        """Main AddRoundKey (t+12): key address at t+8, key on C at t+10; the sum feeds the
        SubBytes address. In the cycle after a block is accepted (its slot at t+11) the lane
        takes the initial AddRoundKey's sum from its cascade input instead; an empty slot's
        output is held at zero."""
        k8 = s.stage[8]
        s.rkm.d.comb += _key_addr(s.rk_main, "a", Cat((k8.rnd - 1)[:4], k8.op, k8.kslot))
        round_key = _key_read(s.rk_main, "a")
        # The slot at t+11 holds a block that continues round the ring, or the one just
        # accepted (pass 1, ``entered``), or none (it left the ring in its last pass).
        k11 = s.stage[11]
        for (lo, w), mc, pcin, out in zip(_LANES, s.mc_out, s.init_pcout, s.ark_out,
                                          strict=True):
            lane = XorLane(w, a_regs=2, c_regs=1, pcin_select=True)
            s.arkm.submodules[f"ark_{lo}"] = lane
            s.arkm.d.comb += [lane.a.eq(mc), lane.c.eq(round_key[lo:lo + w]), lane.pcin.eq(pcin),
                              lane.sel_pcin.eq(s.entered), lane.rst_p.eq(~k11.valid),
                              out.eq(lane.p)]

    def _final_add_round_key(self, m, s):
        """Final AddRoundKey (t+4 of the last pass): key address at t+1. Both operands are
        registers already (ShiftRows flip-flops, the BRAM output register), so the lane has
        only its output register; the result enters the output FIFO at t+4 and, the FIFO
        showing its head one cycle after a write, leaves on ``o`` at t+5."""
        s.exit_d = exit_d = Signal(4)
        m.d.sync += exit_d.eq(Cat(s.last, exit_d[:-1]))
        s.final_out = final_out = Signal(128)
        final_key = _key_read(s.rk_main, "b")
        for lo, w in _LANES:
            lane = XorLane(w, a_regs=0, c_regs=0)
            s.arkm.submodules[f"ark_final_{lo}"] = lane
            s.arkm.d.comb += [lane.a.eq(s.sr[lo:lo + w]), lane.c.eq(final_key[lo:lo + w]),
                              final_out[lo:lo + w].eq(lane.p)]
        s.exit_now = exit_now = Signal()
        m.d.comb += exit_now.eq(exit_d[3])

    def _round_key_writes(self, m, s):
        """Round-key writes: once the key slot has drained (:meth:`_slot_busy`), and never in
        a cycle that reads a final key (port b of the round-key memory serves both)."""
        stage, exit_d, rkm = s.stage, s.exit_d, s.rkm
        rk = self.rk.payload
        rk_main, first = s.rk_main, s.rk_first
        k1 = stage[1]
        slot_busy = self._slot_busy(m, s)
        m.d.comb += self.rk.ready.eq(~slot_busy.bit_select(rk.slot, 1) & ~exit_d[0])
        rk_write = Signal()
        m.d.comb += rk_write.eq(self.rk.valid & self.rk.ready)
        for w in range(4):
            this_word = rk_write & (rk.word == w)
            wr = first.writes[w]
            rkm.d.comb += [
                rk_main[w].wdata_b.eq(rk.key), rk_main[w].we_b.eq(this_word),
                wr.addr.eq(Cat(rk.op, rk.slot)), wr.data.eq(rk.key),
                wr.en.eq(this_word & (rk.index == 0)),
            ]
        with rkm.If(rk_write):
            rkm.d.comb += _key_addr(rk_main, "b", Cat(rk.index, rk.op, rk.slot))
        with rkm.Else():
            rkm.d.comb += _key_addr(rk_main, "b", Cat(s.ring.nr_of(k1), k1.op, k1.kslot))
        s.ring.track_nr(m, rk_write)

    def _slot_busy(self, m, s):
        """Per key slot, a flag registered from this cycle's records plus a block accepted now
        (so one cycle conservative): a block of the slot is in a ring stage or on its way out
        (exit_d[j] goes with the record in stage 1 + j, until its final key is read and its
        result is in the FIFO)."""
        stage, exit_d, req = s.stage, s.exit_d, self.i.payload
        slot_busy = Signal(self.key_slots)
        for k in range(self.key_slots):
            holders = ([rec.valid & (rec.kslot == k) for rec in stage]
                       + [exit_d[j] & (stage[1 + j].kslot == k) for j in range(4)]
                       + [s.accept & (req.slot == k)])
            m.d.sync += slot_busy[k].eq(Cat(*holders).any())
        return slot_busy

    def _table_port(self, m, s):
        """Port b for the key schedule (:class:`~.drab_locus_keys.KeySequencer`): its
        addresses except in the cycles the final AddRoundKey reads its key (exit_d[0]), which
        it is told (``free``) and told three cycles ahead (``free3``: a block in its last pass
        at stage 9 is at stage 0 three cycles later, and its final key is read the cycle after
        that; registered, so from stage 9 one cycle earlier). A first key
        it writes also goes into the first-key LUT RAM (and, with several key lengths, its
        round count into the slot's).

        The address is a register (``addr_b``), loaded a cycle ahead with the final key's
        address (a block in its last pass at stage 0, told by a register from stage 11) or
        the schedule's: the block RAMs' addresses are then flip-flops, with no logic and
        one wire each from a register placed beside them."""
        port, rkm, stage = self.port, s.rkm, s.stage
        abits = self.table_layout.abits
        busy3 = Signal()
        k9 = stage[LOOP_STAGES - 3]
        m.d.sync += busy3.eq(k9.valid & (k9.rnd == s.ring.nr_of(k9)))
        slot_busy = self._slot_busy(m, s)
        m.d.comb += [port.free.eq(~s.exit_d[0]), port.free3.eq(~busy3),
                     port.drained.eq(~slot_busy.bit_select(self.lock_slot, 1)),
                     port.rdata.eq(_key_read(s.rk_main, "b"))]
        last_r = Signal()           # ``last``, registered from stage 11 a cycle earlier
        k11 = stage[LOOP_STAGES - 1]
        m.d.sync += last_r.eq(k11.valid & (k11.rnd == s.ring.nr_of(k11)))
        cur = s.cur
        final = Cat(s.ring.nr_of(cur), cur.op, cur.kslot)
        for w in range(4):
            wr = s.rk_first.writes[w]
            addr_b = Signal(abits, name=f"rk_addr_b{w}")
            m.d.sync += addr_b.eq(Mux(last_r, final, port.addr.word_select(w, abits)))
            rkm.d.comb += [
                s.rk_main[w].addr_b.eq(addr_b),
                s.rk_main[w].wdata_b.eq(port.wdata), s.rk_main[w].we_b.eq(port.we[w]),
                wr.addr.eq(Cat(port.op, self.lock_slot)), wr.data.eq(port.wdata),
                wr.en.eq(port.we[w] & port.first),
            ]
        if s.ring.fixed_nr is None:
            with m.If(port.we.any() & port.first):
                m.d.sync += s.ring.slot_nr[self.lock_slot].eq(port.nr)

    def _tags(self, m, s):
        """Control, the tags: not in the records but in a 12-entry LUT RAM indexed by ring
        slot. The record at stage k in cycle t belongs to slot (t - k) mod 12, so a block
        accepted in cycle t (in stage 11 at t + 1) writes slot (t + 2) mod 12, and the result
        leaving with the record at stage 4 reads slot (t + 8) mod 12: a free-running mod-12
        counter and its value plus 6 (mod 12), one LUT a bit."""
        n = LOOP_STAGES
        tags = Memory(shape=max(1, self.tag_width), depth=n, init=[])
        m.submodules.tags = tags
        wr, rd = tags.write_port(), tags.read_port(domain="comb")
        at_entry, at_exit = Signal(range(n), init=2), Signal(range(n))
        m.d.sync += at_entry.eq(Mux(at_entry == n - 1, 0, at_entry + 1))
        m.d.comb += at_exit.eq(Mux(at_entry >= n // 2, at_entry - n // 2, at_entry + n // 2))
        m.d.comb += [wr.addr.eq(at_entry), wr.data.eq(self.i.payload.tag), wr.en.eq(s.accept),
                     rd.addr.eq(at_exit)]
        return rd.data[:self.tag_width]

    def _results(self, m, s):
        """Control, the results: every result goes through the first-word-fall-through output
        FIFO (no bypass multiplexer)."""
        ofifo = s.ofifo
        m.d.comb += [
            ofifo.w_data.eq(Cat(s.final_out, self._tags(m, s))),
            ofifo.w_en.eq(s.exit_now),
            self.o.valid.eq(ofifo.r_rdy),
            self.o.payload.eq(ofifo.r_data),
            ofifo.r_en.eq(self.o.ready),
        ]


class DrabLocus(_RingMetrics, wiring.Component):
    """The DRAB-LOCUS AES core: :class:`~.drab_locus_keys.KeySequencer` in front of
    :class:`DrabLocusDatapath`, whose round-key block RAMs hold its tables (``key_tables``),
    behind the common core interface (``key``, ``i``, ``o``; see
    :mod:`aes_fpga.cores.interface`).

    Latency: ``12 (Nr - 1) + 7`` cycles from request accepted to result valid (115 / 139 / 163).
    Throughput: up to 12 blocks in flight; a ring slot takes a new block every ``12 Nr`` cycles,
    so saturated AES-128 traffic gives 12 blocks per 120 cycles. Encrypt and decrypt, key slots
    and key lengths interleave freely block by block.

    Ordering: results of equal key length leave in request order; a shorter-key block accepted
    later may overtake a longer-key one. Results are matched by ``tag``.

    Key load: :func:`key_load_cycles` (387 / 447 / 528 cycles) when the slot has no block in
    flight and no block leaves the ring meanwhile. A request for a slot accepted before its key
    transfer starts uses the old key; later requests for that slot wait until the new schedule
    is written; other slots keep flowing. Every slot starts with the all-zero key of the
    shortest supported length. A key whose length is not in ``key_sizes`` is dropped with a
    pulse on ``key_rejected``. A key transfer with ``zeroize`` set overwrites every round key
    of its slot with zeros.

    Parameters
    ----------
    key_slots : int
        Independent keys, 1 to 64.
    key_sizes : tuple of int
        Supported key lengths; ``(128,)`` with ``key_slots=1`` is the paper's configuration.
    tag_width : int
        Bits of the opaque request tag returned with each result (0 to 64).
    fifo_depth : int
        Output FIFO depth (at least 12 for full throughput under back-pressure-free traffic).
    """

    #: The control, the key schedule, and the datapath's groups under ``datapath``.
    RESOURCE_GROUPS = {"": "control", "key_schedule": "key schedule",
                       **{f"datapath.{p}" if p else "datapath": g
                          for p, g in DrabLocusDatapath.RESOURCE_GROUPS.items()}}

    def __init__(self, *, key_slots=1, key_sizes=(128, 192, 256), tag_width=8, fifo_depth=16):
        self.key_sizes = check_core_options(self, key_slots, tag_width,
                                            1 if fifo_depth is None else fifo_depth, key_sizes)
        self.key_slots = key_slots
        self.tag_width = tag_width
        self.fifo_depth = fifo_depth
        super().__init__(core_members(key_slots, tag_width))

    def elaborate(self, platform):
        m = Module()
        m.submodules.key_schedule = ks = KeySequencer(key_slots=self.key_slots,
                                                      key_sizes=self.key_sizes)
        m.submodules.datapath = dp = DrabLocusDatapath(
            key_slots=self.key_slots, tag_width=self.tag_width, fifo_depth=self.fifo_depth,
            key_sizes=self.key_sizes, key_tables=True)
        wiring.connect(m, wiring.flipped(self.key), ks.key)
        wiring.connect(m, ks.port, dp.port)
        wiring.connect(m, wiring.flipped(self.i), dp.i)
        wiring.connect(m, dp.o, wiring.flipped(self.o))
        m.d.comb += [dp.lock.eq(ks.lock), dp.lock_slot.eq(ks.lock_slot),
                     self.key_rejected.eq(ks.rejected)]
        return m
