"""A wide multiplexer built from LUT6 4:1 multiplexers and the slice's MUXF7/MUXF8."""

from amaranth.hdl import Const, Instance, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..platform import is_xilinx_7series
from .lut_rom import mux_tree

__all__ = ["LutMux"]

# LUT6 with I0, I1 the select and I2..I5 the data: O = I[2 + 2 I1 + I0]
_MUX4_INIT = sum(((a >> (2 + (a & 3))) & 1) << a for a in range(64))


class LutMux(wiring.Component):
    """``o = i.word_select(sel, width)``, combinational (latency 0).

    On a Xilinx 7-series platform each output bit is a LUT6 4:1 multiplexer per four inputs,
    joined by MUXF7/MUXF8 and, for 32 inputs, a LUT3 (16 inputs: 4 LUT6, 2 MUXF7, 1 MUXF8; 32
    inputs: 8 LUT6, 4 MUXF7, 2 MUXF8, 1 LUT3), one LUT level with a LUT3 more for 32. Left as
    logic, ABC builds a tree of LUT6 4:1 multiplexers (5 LUT6 for 16 inputs, 11 for 32). Elsewhere
    it is the portable multiplexer.

    Parameters
    ----------
    count : int
        Inputs: 4, 8, 16 or 32.
    width : int
        Bits per input.
    """

    def __init__(self, count, width):
        if count not in (4, 8, 16, 32):
            raise ValueError(f"count: {count!r}; allowed 4, 8, 16 or 32")
        if not isinstance(width, int) or width < 1:
            raise ValueError(f"width: {width!r} must be a positive integer")
        self.count = count
        self.width = width
        super().__init__({"i": In(count * width), "sel": In(range(count)), "o": Out(width)})

    def elaborate(self, platform):
        m = Module()
        if not is_xilinx_7series(platform):
            m.d.comb += self.o.eq(self.i.word_select(self.sel, self.width))
            return m
        for k in range(self.width):
            level = []
            for j in range(self.count // 4):
                o = Signal(name=f"lut{k}_{j}")
                data = [self.i[(4 * j + n) * self.width + k] for n in range(4)]
                m.submodules[f"lut{k}_{j}"] = Instance(
                    "LUT6", p_INIT=Const(_MUX4_INIT, 64), o_O=o,
                    i_I0=self.sel[0], i_I1=self.sel[1], i_I2=data[0], i_I3=data[1],
                    i_I4=data[2], i_I5=data[3])
                level.append(o)
            m.d.comb += self.o[k].eq(mux_tree(m, k, level, self.sel[2:]))
        return m
