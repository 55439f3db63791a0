"""Dual-port block RAM/ROM with a synchronous read and an optional output register per port."""

from amaranth.hdl import Cat, ClockSignal, Const, Instance, Module, Shape, Signal, unsigned
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ..platform import is_lattice_ecp5, is_xilinx_7series

__all__ = ["DualPortBRAM", "xilinx_bram_plan", "ecp5_bram_plan", "ecp5_init_offset"]

# Port widths of RAMB18E1/RAMB36E1 in true-dual-port mode: width -> (data bits, parity bits,
# low address bits that the width leaves unused).
_TDP_WIDTHS = {1: (1, 0, 0), 2: (2, 0, 1), 4: (4, 0, 2), 9: (8, 1, 3), 18: (16, 2, 4),
               36: (32, 4, 5)}
# primitive -> (address bus width, data bits, 18 Kb units it costs, TDP widths it offers)
_PRIMITIVES = {
    "RAMB18E1": (14, 16384, 1, (1, 2, 4, 9, 18)),
    "RAMB36E1": (16, 32768, 2, (1, 2, 4, 9, 18, 36)),
}


def xilinx_bram_plan(width, depth):
    """Choose the RAMB primitive and port width that hold ``depth`` x ``width`` most cheaply.

    Returns ``(primitive, port_width, columns)``: ``columns`` primitives side by side, each holding
    ``port_width`` bits of every word. Cost is counted in 18 Kb units; ties go to fewer instances.
    """
    best = None
    for prim, (_abits, dbits, units, widths) in _PRIMITIVES.items():
        for pw in widths:
            data, _parity, _shift = _TDP_WIDTHS[pw]
            if depth > dbits // data:
                continue
            columns = -(-width // pw)
            key = (columns * units, columns)
            if best is None or key < best[0]:
                best = (key, (prim, pw, columns))
    if best is None:
        raise ValueError(f"depth: {depth} words do not fit one column of RAMB36E1 "
                         f"(at most 32768 words of 1 bit); split the memory")
    return best[1]


# DP16KD (ECP5) true-dual-port widths -> low address bits the width leaves unused. (36 bits
# exist only in the pseudo-dual-port PDPW16KD.) Every width holds 16384 data bits; 9 and 18
# add the parity bits (18432 in all).
_DP16KD_SHIFT = {1: 0, 2: 1, 4: 2, 9: 3, 18: 4}


def ecp5_bram_plan(width, depth):
    """Choose the DP16KD port width that holds ``depth`` x ``width`` in the fewest blocks.

    Returns ``(port_width, columns)``: ``columns`` DP16KD side by side, each holding
    ``port_width`` bits of every word; ties go to the narrower port.
    """
    best = None
    for pw in _DP16KD_SHIFT:
        words = (16384 if pw < 9 else 18432) // pw
        if depth > words:
            continue
        columns = -(-width // pw)
        if best is None or columns < best[1]:
            best = (pw, columns)
    if best is None:
        raise ValueError(f"depth: {depth} words do not fit one column of DP16KD "
                         f"(at most 16384 words of 1 bit); split the memory")
    return best


def ecp5_init_offset(word, port_width):
    """Bit position of ``word``'s lowest bit in the DP16KD initial contents, the INITVAL_00 ..
    INITVAL_3F parameters read as one 20480-bit number.

    The array is 1024 rows of 18 bits, each row stored in 20 (two pad bits); a row is two
    9-bit halves. An 18-bit word is a row, a 9-bit word a half; 1, 2 and 4-bit words fill the
    low 8 bits of each half, the parity bit left unused. (Found from Yosys's own DP16KD mapping,
    which tests/test_primitives_ecp5.py checks the simulation model against.)
    """
    if port_width == 18:
        return 20 * word
    if port_width == 9:
        return 20 * (word // 2) + 9 * (word % 2)
    byte, bit = divmod(word * port_width, 8)
    return 20 * (byte // 2) + 9 * (byte % 2) + bit


class DualPortBRAM(wiring.Component):
    """Dual-port block RAM (or ROM) with a synchronous read and an optional output register.

    Each port ``x`` in ``a``/``b`` has an address ``addr_x``, a clock enable ``en_x`` (reset value
    1) and read data ``rdata_x``; a writable port also has ``wdata_x`` and ``we_x``.

    Latency: ``rdata_x`` shows the word at the address presented ``1 + out_reg_x`` cycles earlier
    (the first cycle is the array read, the second the output register). ``en_x`` low freezes both
    the read latch and the output register of that port, so a port can stall without losing data.
    A write returns the old contents on the same port (read-first). Writing one address from both
    ports in the same cycle, or reading an address the other port writes in that cycle, is
    undefined, as on the hardware.

    On a Xilinx 7-series platform the memory is built from RAMB18E1/RAMB36E1 instances in
    true-dual-port mode whose own DOA_REG/DOB_REG is the output register, so the second stage costs
    no fabric flip-flop. On a Lattice ECP5 platform it is built from DP16KD instances whose
    output register (REGMODE "OUTREG", clock-enabled by OCE) is the second stage: Yosys's own
    mapping would leave the block at "NOREG" and put the register in the fabric, after the
    block's slow read. Elsewhere it is an :class:`amaranth.lib.memory.Memory` plus a register.

    Parameters
    ----------
    width : int
        Word width in bits (1 or more).
    depth : int
        Number of words (1 or more).
    init : sequence of int
        Initial contents (ROM contents when neither port writes); missing words are zero.
    out_reg : bool or (bool, bool)
        Output register on both ports, or on (a, b) separately.
    writable : bool or (bool, bool)
        Write port on both ports, or on (a, b) separately.
    data : MemoryData, optional
        Where the portable build (no vendor platform) keeps its words, so that a simulation can
        read them (``ctx.get(data[n])``): made by the caller with this ``width`` and ``depth``;
        its own initial contents are used, and ``init`` must then be empty.
    style : str
        ``"block"`` (default): block RAM as described. ``"distributed"``: for small memories, the
        same ports and latency built from address registers and an asynchronous read, which
        Yosys maps to LUT RAM (RAM32M/RAM64M) with no data flip-flops. Its reads show the word as
        it is when the data appears, so a write to a word in flight to the output is seen
        (block RAM would show the older word), and before the first read it shows word 0
        (block RAM shows zero).
    """

    def __init__(self, *, width, depth, init=(), out_reg=True, writable=False, style="block",
                 data=None):
        if style not in ("block", "distributed"):
            raise ValueError(f"style: {style!r} is not known; allowed 'block' or 'distributed'")
        self.style = style
        if not isinstance(width, int) or width < 1:
            raise ValueError(f"width: {width!r} must be an integer of 1 or more")
        if not isinstance(depth, int) or depth < 1:
            raise ValueError(f"depth: {depth!r} must be an integer of 1 or more")
        init = list(init)
        if data is not None:
            if init:
                raise ValueError("init: not with data (the data's own contents are used)")
            if Shape.cast(data.shape) != unsigned(width) or data.depth != depth:
                raise ValueError(f"data: {data.depth} words of {data.shape!r} do not match "
                                 f"width {width} and depth {depth}")
            init = [int(v) for v in data.init]
        self.data = data
        if len(init) > depth:
            raise ValueError(f"init: {len(init)} words given for a memory of depth {depth}")
        for i, v in enumerate(init):
            if not 0 <= v < (1 << width):
                raise ValueError(f"init: word {i} = {v:#x} does not fit width {width}")
        self.width = width
        self.depth = depth
        self.init = init + [0] * (depth - len(init))
        self.out_reg = (out_reg, out_reg) if isinstance(out_reg, bool) else tuple(out_reg)
        self.writable = (writable, writable) if isinstance(writable, bool) else tuple(writable)
        self.abits = max(1, (depth - 1).bit_length())
        members = {}
        for x, wr in zip("ab", self.writable, strict=True):
            members[f"addr_{x}"] = In(self.abits)
            members[f"en_{x}"] = In(1, init=1)
            members[f"rdata_{x}"] = Out(width)
            if wr:
                members[f"wdata_{x}"] = In(width)
                members[f"we_{x}"] = In(1)
        super().__init__(members)

    def latency(self, port="a"):
        """Cycles from address to read data on ``port``."""
        return 1 + self.out_reg["ab".index(port)]

    def elaborate(self, platform):
        if self.style == "distributed":
            return self._elaborate_portable(distributed=True)
        if is_xilinx_7series(platform):
            return self._elaborate_xilinx()
        if is_lattice_ecp5(platform):
            return self._elaborate_ecp5()
        return self._elaborate_portable()

    def _port(self, x):
        return (getattr(self, f"addr_{x}"), getattr(self, f"en_{x}"), getattr(self, f"rdata_{x}"),
                getattr(self, f"wdata_{x}", None), getattr(self, f"we_{x}", None))

    def _elaborate_portable(self, distributed=False):
        m = Module()
        if self.data is not None:
            m.submodules.mem = mem = Memory(data=self.data)
        else:
            m.submodules.mem = mem = Memory(shape=unsigned(self.width), depth=self.depth,
                                            init=self.init)
        for x, reg in zip("ab", self.out_reg, strict=True):
            addr, en, rdata, wdata, we = self._port(x)
            if wdata is not None:
                wp = mem.write_port(domain="sync")
                m.d.comb += [wp.addr.eq(addr), wp.data.eq(wdata), wp.en.eq(we & en)]
            if distributed:
                # The latency lives in the address path: a few flip-flops, no data register.
                a = addr
                for stage in range(1 + reg):
                    a_r = Signal.like(addr, name=f"addr_{x}_r{stage}")
                    with m.If(en):
                        m.d.sync += a_r.eq(a)
                    a = a_r
                rp = mem.read_port(domain="comb")
                m.d.comb += [rp.addr.eq(a), rdata.eq(rp.data)]
                continue
            # Not transparent: a port's own write returns the old word, as READ_FIRST does.
            rp = mem.read_port(domain="sync")
            m.d.comb += [rp.addr.eq(addr), rp.en.eq(en)]
            if reg:
                out = Signal(self.width, name=f"out_reg_{x}")
                with m.If(en):
                    m.d.sync += out.eq(rp.data)
                m.d.comb += rdata.eq(out)
            else:
                m.d.comb += rdata.eq(rp.data)
        return m

    def _elaborate_xilinx(self):
        m = Module()
        prim, pw, columns = xilinx_bram_plan(self.width, self.depth)
        abus, _, _, _ = _PRIMITIVES[prim]
        data, parity, shift = _TDP_WIDTHS[pw]
        dbus, pbus = (16, 2) if prim == "RAMB18E1" else (32, 4)
        webus = (2, 4) if prim == "RAMB18E1" else (4, 8)
        for col in range(columns):
            lo = col * pw
            hi = min(lo + pw, self.width)
            words = [(v >> lo) & ((1 << (hi - lo)) - 1) for v in self.init]
            params = _init_params(words, data, parity)
            params.update({
                "p_RAM_MODE": "TDP",
                "p_READ_WIDTH_A": pw, "p_READ_WIDTH_B": pw,
                "p_WRITE_WIDTH_A": pw, "p_WRITE_WIDTH_B": pw,
                "p_WRITE_MODE_A": "READ_FIRST", "p_WRITE_MODE_B": "READ_FIRST",
                "p_DOA_REG": int(self.out_reg[0]), "p_DOB_REG": int(self.out_reg[1]),
                "p_SIM_DEVICE": "7SERIES",
            })
            ports = {}
            for x, X, xclk in (("a", "A", "ARDCLK"), ("b", "B", "BWRCLK")):
                addr, en, rdata, wdata, we = self._port(x)
                rd = "ARD" if x == "a" else "BWR"
                # Unused address bits (below the port width's granule, and the cascade bit of a
                # RAMB36E1) are tied high, as the primitive's documentation asks.
                used = abus - shift - (1 if prim == "RAMB36E1" else 0)
                a_full = [Const((1 << shift) - 1, shift)] if shift else []
                a_full.append(addr if used >= self.abits else addr[:used])
                if used > self.abits:
                    a_full.append(Const(0, used - self.abits))
                if prim == "RAMB36E1":
                    a_full.append(Const(1, 1))
                do = Signal(dbus, name=f"do{x}_c{col}")
                dop = Signal(pbus, name=f"dop{x}_c{col}")
                di = Signal(dbus, name=f"di{x}_c{col}")
                dip = Signal(pbus, name=f"dip{x}_c{col}")
                wev = Signal(webus["ab".index(x)], name=f"we{x}_c{col}")
                if wdata is not None:
                    m.d.comb += Cat(di[:data], dip[:parity])[:hi - lo].eq(wdata[lo:hi])
                    # Every byte-write enable of the port follows the one write enable.
                    m.d.comb += wev[:webus[0]].eq(Cat(*([we] * webus[0])))
                m.d.comb += rdata[lo:hi].eq(Cat(do[:data], dop[:parity])[:hi - lo])
                ports.update({
                    f"i_CLK{xclk}": ClockSignal(),
                    f"i_EN{rd}EN": en,
                    f"i_REGCE{'AREGCE' if x == 'a' else 'B'}": en,
                    f"i_RSTRAM{'ARSTRAM' if x == 'a' else 'B'}": Const(0),
                    f"i_RSTREG{'ARSTREG' if x == 'a' else 'B'}": Const(0),
                    f"i_ADDR{rd}ADDR": Cat(*a_full),
                    f"i_DI{X}DI": di,
                    f"i_DIP{X}DIP": dip,
                    f"i_WE{'A' if x == 'a' else 'BWE'}": wev,
                    f"o_DO{X}DO": do,
                    f"o_DOP{X}DOP": dop,
                })
            if prim == "RAMB36E1":
                ports.update({
                    "i_CASCADEINA": Const(0), "i_CASCADEINB": Const(0),
                    "i_INJECTDBITERR": Const(0), "i_INJECTSBITERR": Const(0),
                })
                params.update({"p_RAM_EXTENSION_A": "NONE", "p_RAM_EXTENSION_B": "NONE",
                               "p_EN_ECC_READ": "FALSE", "p_EN_ECC_WRITE": "FALSE"})
            m.submodules[f"bram_c{col}"] = Instance(prim, **params, **ports)
        return m


    def _elaborate_ecp5(self):
        m = Module()
        pw, columns = ecp5_bram_plan(self.width, self.depth)
        shift = _DP16KD_SHIFT[pw]
        for col in range(columns):
            lo = col * pw
            hi = min(lo + pw, self.width)
            space = 0
            for i, v in enumerate(self.init):
                space |= ((v >> lo) & ((1 << (hi - lo)) - 1)) << ecp5_init_offset(i, pw)
            params = {f"p_INITVAL_{k:02X}": Const((space >> (320 * k)) & ((1 << 320) - 1), 320)
                      for k in range(64) if (space >> (320 * k)) & ((1 << 320) - 1)}
            params.update({
                "p_DATA_WIDTH_A": pw, "p_DATA_WIDTH_B": pw,
                "p_REGMODE_A": "OUTREG" if self.out_reg[0] else "NOREG",
                "p_REGMODE_B": "OUTREG" if self.out_reg[1] else "NOREG",
                "p_WRITEMODE_A": "READBEFOREWRITE", "p_WRITEMODE_B": "READBEFOREWRITE",
                "p_RESETMODE": "SYNC", "p_GSR": "DISABLED",
                "p_CSDECODE_A": "0b000", "p_CSDECODE_B": "0b000",
            })
            ports = {}
            for x in "ab":
                X = x.upper()
                addr, en, rdata, wdata, we = self._port(x)
                # The word address sits above the bits the width leaves unused; in 18-bit mode
                # the lowest two are the byte write enables, both on.
                ad = Signal(14, name=f"ad{x}_c{col}")
                m.d.comb += ad[shift:shift + self.abits].eq(addr)
                if pw == 18:
                    m.d.comb += ad[:2].eq(0b11)
                di = Signal(18, name=f"di{x}_c{col}")
                do = Signal(18, name=f"do{x}_c{col}")
                if wdata is not None:
                    m.d.comb += di[:hi - lo].eq(wdata[lo:hi])
                m.d.comb += rdata[lo:hi].eq(do[:hi - lo])
                ports.update({
                    f"i_CLK{X}": ClockSignal(),
                    # CE clocks the array read (and gates the write), OCE the output register.
                    f"i_CE{X}": en, f"i_OCE{X}": en,
                    f"i_WE{X}": we if we is not None else Const(0),
                    f"i_RST{X}": Const(0),
                    **{f"i_CS{X}{k}": Const(0) for k in range(3)},
                    **{f"i_AD{X}{k}": ad[k] for k in range(14)},
                    **{f"i_DI{X}{k}": di[k] for k in range(18)},
                    **{f"o_DO{X}{k}": do[k] for k in range(18)},
                })
            m.submodules[f"bram_c{col}"] = Instance("DP16KD", **params, **ports)
        return m


def _init_params(words, data, parity):
    """INIT_xx/INITP_xx parameters: word i's data bits start at bit i*data of the data array,
    its parity bits at bit i*parity of the parity array, 256 bits per parameter."""
    dmask = (1 << data) - 1
    dspace = 0
    pspace = 0
    for i, w in enumerate(words):
        dspace |= (w & dmask) << (i * data)
        if parity:
            pspace |= (w >> data) << (i * parity)
    params = {}
    for name, space in (("INIT", dspace), ("INITP", pspace)):
        k = 0
        while space >> (256 * k):
            params[f"p_{name}_{k:02X}"] = Const((space >> (256 * k)) & ((1 << 256) - 1), 256)
            k += 1
    return params
