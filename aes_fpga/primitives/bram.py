"""Dual-port block RAM/ROM with a synchronous read and an optional output register per port."""

from amaranth.hdl import Cat, ClockSignal, Const, Instance, Module, Signal, unsigned
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ..platform import is_xilinx_7series

__all__ = ["DualPortBRAM", "xilinx_bram_plan"]

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
    no fabric flip-flop; elsewhere it is an :class:`amaranth.lib.memory.Memory` plus a register.

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
    style : str
        ``"block"`` (default): block RAM as described. ``"distributed"``: for small memories, the
        same ports and latency built from address registers and an asynchronous read, which
        Yosys maps to LUT RAM (RAM32M/RAM64M) with no data flip-flops. Its reads show the word as
        it is when the data appears, so a write to a word in flight to the output is seen
        (block RAM would show the older word), and before the first read it shows word 0
        (block RAM shows zero).
    """

    def __init__(self, *, width, depth, init=(), out_reg=True, writable=False, style="block"):
        if style not in ("block", "distributed"):
            raise ValueError(f"style: {style!r} is not known; allowed 'block' or 'distributed'")
        self.style = style
        if not isinstance(width, int) or width < 1:
            raise ValueError(f"width: {width!r} must be an integer of 1 or more")
        if not isinstance(depth, int) or depth < 1:
            raise ValueError(f"depth: {depth!r} must be an integer of 1 or more")
        init = list(init)
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
        return self._elaborate_portable()

    def _port(self, x):
        return (getattr(self, f"addr_{x}"), getattr(self, f"en_{x}"), getattr(self, f"rdata_{x}"),
                getattr(self, f"wdata_{x}", None), getattr(self, f"we_{x}", None))

    def _elaborate_portable(self, distributed=False):
        m = Module()
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
