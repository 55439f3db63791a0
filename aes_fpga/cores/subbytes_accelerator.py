"""SUBBYTES-ACCELERATOR: the SubBytes step of AES for a soft CPU, after Robaina, Ramos & Neves's
LP-SB (a low-power AES co-design).

Not an AES core (the CPU runs the rest of the cipher), so not in :data:`aes_fpga.cores.CORES`
nor in the cores' shared suite. The CPU writes a word of ``lanes`` bytes on ``req`` and reads
the S-box of each byte on ``resp``; every lane has its own combinational S-box
(:class:`~aes_fpga.primitives.LutRom` of the model's S-box) and the result is registered.

The paper's two low-power techniques, both switched by ``low_power``:

- operand isolation: the S-box inputs are ``req.payload`` ANDed with the transfer strobe
  (``req.valid & req.ready``), so the S-box logic sees no toggling while the CPU's bus carries
  other traffic; without it they follow the bus every cycle;
- clock gating: the result register is a :class:`~aes_fpga.primitives.GatedRegister` (BUFGCE on
  7-series, a clock enable elsewhere) clocked only on a transfer; without it the register takes
  the S-box output on every cycle it does not hold an unread result, as the paper's baseline
  (BL-SB) register is clocked on every edge.

Both variants give the same results at the same time: latency 1 cycle (a request accepted at an
edge is on ``resp`` from that edge), one word per cycle, ``req.ready`` low only while a result
waits for ``resp.ready`` (back-pressure stalls acceptance; nothing is dropped).
"""

from amaranth.hdl import Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .. import model
from ..primitives import GatedRegister, LutRom

__all__ = ["SubBytesAccelerator", "sub_word"]


def sub_word(word, lanes):
    """The reference: the S-box of each of the ``lanes`` bytes of ``word``."""
    return sum(model.SBOX[(word >> (8 * i)) & 0xFF] << (8 * i) for i in range(lanes))


class SubBytesAccelerator(wiring.Component):
    """SubBytes of ``lanes`` bytes per request (see the module docstring).

    Parameters
    ----------
    lanes : int
        Bytes per request, 1 to 16 (4: a 32-bit CPU bus word; 16: the paper's whole state).
    low_power : bool
        Operand isolation and clock gating (LP-SB) or neither (the baseline, BL-SB).

    Ports: ``req`` (in) and ``resp`` (out), streams of ``data`` words of ``8 lanes`` bits,
    byte ``i`` in bits ``8i + 7 .. 8i``.
    """

    def __init__(self, *, lanes=4, low_power=True):
        if not isinstance(lanes, int) or not 1 <= lanes <= 16:
            self._MustUse__used = True      # refused: no warning that it was never elaborated
            raise ValueError(f"lanes: {lanes!r} is out of range; allowed 1 to 16")
        self.lanes = lanes
        self.low_power = bool(low_power)
        layout = data.StructLayout({"data": 8 * lanes})
        super().__init__({"req": In(stream.Signature(layout)),
                          "resp": Out(stream.Signature(layout))})

    def latency(self):
        """Cycles from a request accepted to its result on ``resp``: 1."""
        return 1

    def elaborate(self, platform):
        m = Module()
        width = 8 * self.lanes
        take = Signal()
        m.d.comb += [self.req.ready.eq(~self.resp.valid | self.resp.ready),
                     take.eq(self.req.valid & self.req.ready)]

        # Named so that the toggle counts (aes_fpga.sim.power) can group them.
        sbox_in = Signal(width, name="sbox_in")
        sbox_out = Signal(width, name="sbox_out")
        if self.low_power:
            m.d.comb += sbox_in.eq(self.req.payload.data & take.replicate(width))
        else:
            m.d.comb += sbox_in.eq(self.req.payload.data)
        for i in range(self.lanes):
            rom = m.submodules[f"sbox{i}"] = LutRom(model.SBOX, 8)
            m.d.comb += [rom.addr.eq(sbox_in[8 * i:8 * i + 8]),
                         sbox_out[8 * i:8 * i + 8].eq(rom.data)]

        m.submodules.result = result = GatedRegister(width)
        # Baseline: the register is clocked whenever it holds nothing unread (its value is
        # then don't-care until a transfer), as a free-running register would be.
        m.d.comb += [result.d.eq(sbox_out),
                     result.en.eq(take if self.low_power else self.req.ready),
                     self.resp.payload.data.eq(result.q)]
        with m.If(take):
            m.d.sync += self.resp.valid.eq(1)
        with m.Elif(self.resp.ready):
            m.d.sync += self.resp.valid.eq(0)
        return m
