"""A core behind AXI4-Stream ports, as Xilinx IP names them: :class:`AxisCore`.

Ports (``K`` = ``key_slots``, ``S`` = bits of a slot number, ``ceil(log2 K)``, 0 for one slot;
``T`` = ``tag_width``):

=====================  ===  ======  ==========================================================
port                   dir  bits    meaning
=====================  ===  ======  ==========================================================
aclk                   in   1       the clock (rising edge)
aresetn                in   1       reset, active low, synchronous to ``aclk``
s_axis_key_tvalid      in   1       key stream
s_axis_key_tready      out  1
s_axis_key_tdata       in   256     the key, FIPS-197 byte 0 in bits 7:0 (byte n in
                                    8n+7:8n); a 128/192-bit key fills bytes 0-15/0-23
s_axis_key_tuser       in   3+S     bits 1:0 key length (0 AES-128, 1 AES-192, 2 AES-256),
                                    bit 2 zeroize (the slot's round keys overwritten with 0),
                                    bits 3+: the slot
s_axis_tvalid          in   1       request stream
s_axis_tready          out  1
s_axis_tdata           in   128     the block, FIPS-197 byte 0 in bits 7:0
s_axis_tuser           in   1+S     bit 0 the operation (0 encrypt, 1 decrypt), bits 1+: slot
s_axis_tid             in   T       an opaque tag, returned with the result (absent if T = 0)
m_axis_tvalid          out  1       result stream
m_axis_tready          in   1
m_axis_tdata           out  128     the result, FIPS-197 byte 0 in bits 7:0
m_axis_tid             out  T       the request's tag (absent if T = 0)
key_rejected           out  1       a one-cycle pulse: a key of a length the core was not
                                    built for was taken and dropped
=====================  ===  ======  ==========================================================

The byte order is AXI4-Stream's: byte lane 0 (``tdata[7:0]``) is the first byte, so a byte
stream written in FIPS-197 order (plaintext byte 0 first) lands as the core expects; the core's
own (native) ports hold byte 0 in the most significant bits, and the wrapper only reverses the
byte lanes (wires, no logic).

Handshakes, latency and throughput are the core's, unchanged: each AXI4-Stream port is the
native stream's ``valid``/``ready``/payload wired through, so a transfer happens on the cycle
``tvalid`` and ``tready`` are both high, and back-pressure on ``m_axis_tready`` stalls
``s_axis_tready`` as the core's ``o`` stalls its ``i``. Every stream holds its payload while
valid and not ready.
"""

from amaranth.hdl import ClockDomain, DomainRenamer, Module
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from ..cores.interface import KeyBits
from ..params import Op

__all__ = ["AxisCore", "key_user_layout", "request_user_layout", "reverse_bytes", "axis_ports",
           "axis_around"]


def _slot_shape(key_slots):
    return range(key_slots)


def key_user_layout(key_slots):
    """``s_axis_key_tuser``: key length code, zeroize, slot (least significant first)."""
    return data.StructLayout({"key_bits": KeyBits, "zeroize": 1,
                              "slot": _slot_shape(key_slots)})


def request_user_layout(key_slots):
    """``s_axis_tuser``: the operation, then the slot (least significant first)."""
    return data.StructLayout({"op": Op, "slot": _slot_shape(key_slots)})


def reverse_bytes(value, nbytes):
    """``value`` with its ``nbytes`` byte lanes in reverse order (an Amaranth value or an
    int): native (byte 0 most significant) to AXI4-Stream (byte 0 in bits 7:0) and back."""
    if isinstance(value, int):
        return int.from_bytes(value.to_bytes(nbytes, "big"), "little")
    from amaranth.hdl import Cat
    return Cat(*(value[8 * (nbytes - 1 - n):8 * (nbytes - n)] for n in range(nbytes)))


def axis_ports(key_slots, tag_width):
    """The members of :class:`AxisCore`'s signature, in port order."""
    tid = {"s_axis_tid": In(tag_width)} if tag_width else {}
    mtid = {"m_axis_tid": Out(tag_width)} if tag_width else {}
    return {
        "aclk": In(1), "aresetn": In(1),
        "s_axis_key_tvalid": In(1), "s_axis_key_tready": Out(1),
        "s_axis_key_tdata": In(256), "s_axis_key_tuser": In(key_user_layout(key_slots)),
        "s_axis_tvalid": In(1), "s_axis_tready": Out(1),
        "s_axis_tdata": In(128), "s_axis_tuser": In(request_user_layout(key_slots)), **tid,
        "m_axis_tvalid": Out(1), "m_axis_tready": In(1), "m_axis_tdata": Out(128), **mtid,
        "key_rejected": Out(1),
    }


def axis_around(m, wrapper, name, inner):
    """``inner`` as submodule ``name`` of ``m`` in a domain ``axis`` local to ``wrapper``
    (clocked by its ``aclk``, reset by its active-low ``aresetn``), and ``wrapper``'s
    ``s_axis_key_*`` stream wired to ``inner.key`` (key bytes lane 0 first)."""
    m.domains.axis = cd = ClockDomain("axis", local=True)
    m.d.comb += [cd.clk.eq(wrapper.aclk), cd.rst.eq(~wrapper.aresetn)]
    m.submodules[name] = DomainRenamer("axis")(inner)
    key, user = inner.key, wrapper.s_axis_key_tuser
    m.d.comb += [
        key.valid.eq(wrapper.s_axis_key_tvalid),
        wrapper.s_axis_key_tready.eq(key.ready),
        key.payload.key.eq(reverse_bytes(wrapper.s_axis_key_tdata, 32)),
        key.payload.key_bits.eq(user.key_bits),
        key.payload.zeroize.eq(user.zeroize),
        key.payload.slot.eq(user.slot),
    ]


class AxisCore(wiring.Component):
    """``core`` (any core with a ``key`` stream, :mod:`aes_fpga.cores.interface`) behind
    AXI4-Stream ports (the table in this module's docstring).

    The core runs in a clock domain of the wrapper's own (the core's ``sync`` renamed
    ``axis``, local, so a design around the wrapper keeps its own ``sync``): its clock is
    ``aclk`` and its reset ``~aresetn`` (synchronous, as the core's own). Latency, throughput and
    back-pressure are exactly the core's (``latency``, ``blocks_per_cycle`` are passed
    through): the streams are wired through, only the byte lanes are reversed.

    Parameters
    ----------
    core : wiring.Component
        The core; it becomes the submodule ``core``.
    """

    def __init__(self, core):
        if not hasattr(core, "key"):
            self._MustUse__used = True      # refused: it is never to be elaborated
            raise ValueError(f"{type(core).__name__} has no key stream; only a core with the "
                             "common key/i/o interface has AXI4-Stream ports")
        self.core = core
        self.key_slots = core.key_slots
        self.tag_width = core.tag_width
        self.key_sizes = core.key_sizes
        super().__init__(axis_ports(core.key_slots, core.tag_width))

    def latency(self, key_bits):
        """The core's: cycles from a request accepted to its result valid."""
        return self.core.latency(key_bits)

    def blocks_per_cycle(self, key_bits):
        """The core's sustained throughput."""
        return self.core.blocks_per_cycle(key_bits)

    def elaborate(self, platform):
        m = Module()
        # The core's sync domain, renamed and local: it reaches the core only, so a design
        # around the wrapper keeps a sync domain of its own.
        core = self.core
        axis_around(m, self, "core", core)
        i, o = core.i, core.o
        m.d.comb += [
            i.valid.eq(self.s_axis_tvalid),
            self.s_axis_tready.eq(i.ready),
            i.payload.block.eq(reverse_bytes(self.s_axis_tdata, 16)),
            i.payload.op.eq(self.s_axis_tuser.op),
            i.payload.slot.eq(self.s_axis_tuser.slot),
            self.m_axis_tvalid.eq(o.valid),
            o.ready.eq(self.m_axis_tready),
            self.m_axis_tdata.eq(reverse_bytes(o.payload.block, 16)),
            self.key_rejected.eq(core.key_rejected),
        ]
        if self.tag_width:
            m.d.comb += [i.payload.tag.eq(self.s_axis_tid), self.m_axis_tid.eq(o.payload.tag)]
        return m
