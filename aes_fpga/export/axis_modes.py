"""The mode engine behind AXI4-Stream ports: :class:`AxisModes`, in the style of
:class:`~aes_fpga.export.axis.AxisCore`.

Ports (``S`` = bits of a slot number, 0 for one slot; ``T`` = ``tag_width``; GCM fields only in
a GCM build):

=====================  ===  ======  ==========================================================
port                   dir  bits    meaning
=====================  ===  ======  ==========================================================
aclk, aresetn          in   1       clock; reset, active low, synchronous to ``aclk``
s_axis_key_*                        the key stream, as :class:`AxisCore`'s
s_axis_tvalid/tready                message stream (:func:`~aes_fpga.modes.mode_request_layout`)
s_axis_tdata           in   128     the block, FIPS-197 byte 0 in bits 7:0
s_axis_tuser           in   4+S     least significant first: ``first`` (the message's first
                       (+7)         beat: IV, counter or J0 in tdata), ``mode`` (2 bits: 0
                                    ECB, 1 CBC, 2 CTR, 3 GCM), ``op``, ``slot``; GCM: ``aad``,
                                    ``final``, ``nbytes`` (5 bits, 1 to 16)
s_axis_tid             in   T       tag of a beat, returned with its result (absent if T = 0)
m_axis_tvalid/tready                result stream
m_axis_tdata           out  128     the result, FIPS-197 byte 0 in bits 7:0
m_axis_tid             out  T       the beat's tag
m_axis_tuser           out  1       GCM only: ``auth_ok`` (a decryption's final beat)
key_rejected           out  1       the core's pulse: a key of a length it was not built for
=====================  ===  ======  ==========================================================

``nbytes`` counts bytes from FIPS-197 byte 0, so from byte lane 0 (``tdata[7:0]``) up. The
engine's handshakes, latency and throughput are unchanged: every stream is wired through, only
the byte lanes of the data are reversed.
"""

from amaranth.hdl import Module
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from ..params import Mode, Op
from .axis import axis_around, key_user_layout, reverse_bytes

__all__ = ["AxisModes", "modes_user_layout", "modes_axis_ports"]


def modes_user_layout(key_slots, gcm=False):
    """``s_axis_tuser`` of :class:`AxisModes`: first, mode, op, slot; with ``gcm`` also aad,
    final and nbytes (least significant first)."""
    fields = {"first": 1, "mode": Mode, "op": Op, "slot": range(key_slots)}
    if gcm:
        fields.update({"aad": 1, "final": 1, "nbytes": range(17)})
    return data.StructLayout(fields)


def modes_axis_ports(key_slots, tag_width, gcm=False):
    """The members of :class:`AxisModes`'s signature, in port order."""
    tid = {"s_axis_tid": In(tag_width)} if tag_width else {}
    mtid = {"m_axis_tid": Out(tag_width)} if tag_width else {}
    muser = {"m_axis_tuser": Out(data.StructLayout({"auth_ok": 1}))} if gcm else {}
    return {
        "aclk": In(1), "aresetn": In(1),
        "s_axis_key_tvalid": In(1), "s_axis_key_tready": Out(1),
        "s_axis_key_tdata": In(256), "s_axis_key_tuser": In(key_user_layout(key_slots)),
        "s_axis_tvalid": In(1), "s_axis_tready": Out(1),
        "s_axis_tdata": In(128), "s_axis_tuser": In(modes_user_layout(key_slots, gcm)), **tid,
        "m_axis_tvalid": Out(1), "m_axis_tready": In(1), "m_axis_tdata": Out(128), **mtid,
        **muser, "key_rejected": Out(1),
    }


class AxisModes(wiring.Component):
    """``engine`` (a :class:`~aes_fpga.modes.ModeEngine`) behind AXI4-Stream ports (the
    table in this module's docstring), in a local clock domain ``axis`` driven by ``aclk``
    and ``~aresetn``, as :class:`~aes_fpga.export.axis.AxisCore` does for a core."""

    def __init__(self, engine):
        self.engine = engine
        self.gcm, self.ghash = engine.gcm, engine.ghash
        core = engine.core
        self.key_slots, self.tag_width, self.key_sizes = (core.key_slots, engine.tag_width,
                                                          core.key_sizes)
        super().__init__(modes_axis_ports(core.key_slots, engine.tag_width,
                                          engine.gcm is not None))

    @property
    def tag_latency(self):
        """The engine's (GCM builds)."""
        return self.engine.tag_latency

    def latency(self, key_bits):
        """The engine's: the streams are wired through."""
        return self.engine.latency(key_bits)

    def elaborate(self, platform):
        m = Module()
        axis_around(m, self, "engine", self.engine)
        i, o = self.engine.i, self.engine.o
        user = self.s_axis_tuser
        m.d.comb += [
            i.valid.eq(self.s_axis_tvalid),
            self.s_axis_tready.eq(i.ready),
            i.payload.data.eq(reverse_bytes(self.s_axis_tdata, 16)),
            i.payload.first.eq(user.first), i.payload.mode.eq(user.mode),
            i.payload.op.eq(user.op), i.payload.slot.eq(user.slot),
            self.m_axis_tvalid.eq(o.valid),
            o.ready.eq(self.m_axis_tready),
            self.m_axis_tdata.eq(reverse_bytes(o.payload.data, 16)),
        ]
        if hasattr(self.engine.core, "key_rejected"):
            m.d.comb += self.key_rejected.eq(self.engine.core.key_rejected)
        if self.gcm is not None:
            m.d.comb += [i.payload.aad.eq(user.aad), i.payload.final.eq(user.final),
                         i.payload.nbytes.eq(user.nbytes),
                         self.m_axis_tuser.auth_ok.eq(o.payload.auth_ok)]
        if self.tag_width:
            m.d.comb += [i.payload.tag.eq(self.s_axis_tid), self.m_axis_tid.eq(o.payload.tag)]
        return m
