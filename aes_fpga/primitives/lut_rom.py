"""A combinational ROM in LUTs, one output bit a tree of LUT6 and wide-function multiplexers."""

from amaranth.hdl import Const, Instance, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..platform import is_xilinx_7series

__all__ = ["LutRom"]


class LutRom(wiring.Component):
    """``data = table[addr]``, combinational (latency 0).

    On a Xilinx 7-series platform each output bit is built from LUT6 instances holding 64
    entries each, joined by MUXF7/MUXF8 (an 8-bit address: 4 LUT6, 2 MUXF7, 1 MUXF8 per bit) and,
    for a 9-bit address, a LUT3 multiplexer. As instances they keep their shape through synthesis:
    left as logic, the mapper merges ROM bits into the XORs that read them and, to save a level,
    builds a new 8-input function for each combination, copying the ROM several times over.
    Elsewhere it is the portable constant lookup.

    Parameters
    ----------
    table : sequence of int
        The contents, ``2 ** addr_width`` entries (6 to 9 address bits).
    width : int
        Bits per entry.
    """

    def __init__(self, table, width):
        table = list(table)
        addr_width = max(len(table) - 1, 1).bit_length()
        if len(table) != 1 << addr_width or not 6 <= addr_width <= 9:
            raise ValueError(f"table: {len(table)} entries; allowed 64, 128, 256 or 512")
        if not isinstance(width, int) or width < 1 or any(not 0 <= v < 1 << width for v in table):
            raise ValueError(f"width: {width!r} does not hold every entry of the table")
        self.table = table
        self.width = width
        super().__init__({"addr": In(addr_width), "data": Out(width)})

    def elaborate(self, platform):
        m = Module()
        if not is_xilinx_7series(platform):
            contents = Const(sum(v << (self.width * a) for a, v in enumerate(self.table)),
                             self.width * len(self.table))
            m.d.comb += self.data.eq(contents.word_select(self.addr, self.width))
            return m
        for k in range(self.width):
            level = []
            for j in range(len(self.table) // 64):
                o = Signal(name=f"lut{k}_{j}")
                init = sum(((self.table[64 * j + a] >> k) & 1) << a for a in range(64))
                m.submodules[f"lut{k}_{j}"] = Instance(
                    "LUT6", p_INIT=Const(init, 64), o_O=o,
                    **{f"i_I{b}": self.addr[b] for b in range(6)})
                level.append(o)
            m.d.comb += self.data[k].eq(mux_tree(m, k, level, self.addr[6:]))
        return m


def mux_tree(m, k, level, select):
    """Bit ``k`` of a wide 7-series multiplexer: the LUT6 outputs ``level`` (a power of two of
    them) chosen by ``select`` (its bits in order) through MUXF7, MUXF8 and then LUT3s (there is
    no MUXF9 in a slice); returns the output."""
    for n, prim in enumerate(("MUXF7", "MUXF8", "LUT3")):
        if len(level) == 1:
            break
        nxt = []
        for j in range(0, len(level), 2):
            name = f"{prim.lower()}_{k}_{j // 2}"
            o = Signal(name=name)
            if prim == "LUT3":   # O = I2 ? I1 : I0
                m.submodules[name] = Instance(
                    "LUT3", p_INIT=Const(0xCA, 8), i_I0=level[j], i_I1=level[j + 1],
                    i_I2=select[n], o_O=o)
            else:
                m.submodules[name] = Instance(
                    prim, i_I0=level[j], i_I1=level[j + 1], i_S=select[n], o_O=o)
            nxt.append(o)
        level = nxt
    return level[0]
