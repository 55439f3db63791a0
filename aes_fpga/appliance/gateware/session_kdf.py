"""AES-CMAC (SP 800-38B) and the sessions' SP 800-108 counter-mode KDF in gateware.

:class:`Cmac` runs the CMAC chain on a core of the library (any core with the common stream
interface of :mod:`aes_fpga.cores.interface`, made a submodule, as
:class:`~aes_fpga.modes.ModeEngine` does); :class:`SessionKdf` puts in front of it the fixed
input of :func:`aes_fpga.cmac_model.kdf_counter` as the sessions derive their cryptograms and
keys (:mod:`aes_fpga.appliance.session_spec`, "Key derivation"): three message blocks per
output block. Both are checked byte for byte against :mod:`aes_fpga.cmac_model` in simulation
(``tests/test_session_kdf.py``).

Why a core of its own: a handshake costs 18 chained encryptions under the device secret, which
the mode engine's core (loaded with the host's keys, in the middle of a message perhaps) would
have to interleave with its traffic through an arbiter, a key slot of its own and the engine's
queue; the chain needs no throughput (one block per core latency), so the smallest core does
it: ``Compact8(key_sizes=(256,))``. A whole handshake's derivations (the key load, the subkeys,
18 blocks) take ``pytest -m slow -s tests/test_session_kdf.py -k whole`` cycles (it prints
them). Area on xc7a35t, measured with
``python -c "from aes_fpga.flow.synth import synthesize; from aes_fpga.cores import Compact8;
from aes_fpga.appliance.gateware.session_kdf import SessionKdf;
print(synthesize(SessionKdf(Compact8(key_sizes=(256,)))).total)"``: 682 LUT, 844 FF, 2 RAMB18,
of which the compact8 (``Compact8(key_sizes=(256,), tag_width=0)`` alone) is 360 LUT, 588 FF and
the two RAMB18. Sharing the engine's core instead would save those but cost a 128-bit request
multiplexer, a key slot for the secret in every core and a change to the engine's queue, and
put the handshake's 18 blocks into the engine's traffic.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ... import cmac_model
from ...cores.interface import Op, key_layout

__all__ = ["Cmac", "SessionKdf", "cmac_input_layout", "kdf_request_layout",
           "kdf_output_layout", "double", "padding_table"]

_BLOCK_BITS = 128


def cmac_input_layout():
    """One message block into :class:`Cmac`: ``block`` (FIPS-197 byte order, first byte most
    significant), ``last`` (the message's last block) and ``length``, its bytes (1 .. 16; 0
    only for the empty message's one block; read with ``last`` only, every other block is
    whole)."""
    return data.StructLayout({"block": _BLOCK_BITS, "last": 1, "length": range(17)})


def double(v):
    """``v`` (a 128-bit value) times x in GF(2^128), SP 800-38B's subkey doubling."""
    return Cat(Const(0, 1), v[:127]) ^ Mux(v[127], Const(cmac_model.RB, 128), 0)


def padding_table():
    """``{length: (mask, pad)}`` for a last block of ``length`` bytes (0 .. 16): the block
    ``& mask | pad`` is it cut to its first bytes and padded ``0x80 0x00 ...`` (SP 800-38B
    §6.2); a whole block is unchanged."""
    return {n: (((1 << 8 * n) - 1) << (_BLOCK_BITS - 8 * n),
                (1 << (_BLOCK_BITS - 1 - 8 * n)) if n < 16 else 0) for n in range(17)}


class Cmac(wiring.Component):
    """AES-CMAC on ``core``: the tag of each message that comes in on ``i``.

    After every key taken on ``key`` (passed on to the core), the component encrypts the zero
    block once for the subkeys (SP 800-38B §6.1) and holds ``L = E_K(0)``; ``K1`` and ``K2`` are
    doublings of it, computed by wiring. Each block of a message then goes into the core XORed
    with the chain value (the last also with ``K1``, or padded and with ``K2``), and the next
    waits for its result: CMAC is a chain.

    Latency: the core's per block and one cycle to take its result; the tag leaves from a
    register (valid ``latency + 1`` cycles after the last block is taken). Throughput: one
    block per core latency and a cycle, plus whatever the core waits before it takes a
    request (a compact8 waits for its next round slot). Back-pressure: ``i`` is not ready
    while a block is in the core or a tag waits on ``o``; nothing is lost.

    Parameters
    ----------
    core : a core with the common interface
        Made a submodule; the component is its only user. Requests use slot 0.
    padding : bool
        Messages may end with a short block (the padding and ``K2``); ``False``: every message
        is whole blocks (``length`` is not read), which saves the padding's multiplexers.
    """

    def __init__(self, core, *, padding=True):
        self.padding = padding
        if "key" not in core.signature.members:
            self._MustUse__used = core._MustUse__used = True
            raise ValueError(f"core: {type(core).__name__} takes no key stream; Cmac needs a "
                             f"core that loads its own keys")
        self.core = core
        super().__init__({
            "key": In(stream.Signature(key_layout(core.key_slots))),
            "i": In(stream.Signature(cmac_input_layout())),
            "o": Out(stream.Signature(data.StructLayout({"tag": _BLOCK_BITS}))),
            #: High while the subkeys are being computed after a key load.
            "busy": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.core = core = self.core
        wiring.connect(m, wiring.flipped(self.key), core.key)

        chain = Signal(_BLOCK_BITS)          # the CBC-MAC chain value, 0 between messages
        l_key = Signal(_BLOCK_BITS)          # E_K(0^128)
        subkeys_due = Signal(init=1)         # a key was taken: E_K(0) is owed
        last = Signal()                      # the block in the core ends its message
        k1 = double(l_key)
        k2 = double(k1)

        req = self.i.payload
        final = req.block ^ k1
        if self.padding:
            mask, pad = Signal(_BLOCK_BITS), Signal(_BLOCK_BITS)
            with m.Switch(req.length):
                for n, (mask_value, pad_value) in padding_table().items():
                    with m.Case(n):
                        m.d.comb += [mask.eq(mask_value), pad.eq(pad_value)]
            final = Mux(req.length == 16, final, (req.block & mask | pad) ^ k2)
        block_in = chain ^ Mux(req.last, final, req.block)

        m.d.comb += [
            core.i.payload.op.eq(Op.ENCRYPT),
            core.i.payload.slot.eq(0),
            core.o.ready.eq(1),
            self.o.payload.tag.eq(chain),
        ]
        with m.If(self.key.valid & self.key.ready):     # a zeroized slot's too: E_0(0)
            m.d.sync += subkeys_due.eq(1)

        with m.FSM():
            with m.State("IDLE"):
                m.d.comb += self.busy.eq(subkeys_due)
                with m.If(subkeys_due):
                    m.d.comb += [core.i.payload.block.eq(0), core.i.valid.eq(~self.key.valid)]
                    with m.If(core.i.valid & core.i.ready):
                        m.d.sync += subkeys_due.eq(0)
                        m.next = "SUBKEY"
                with m.Else():
                    m.d.comb += [core.i.payload.block.eq(block_in),
                                 core.i.valid.eq(self.i.valid & ~self.key.valid),
                                 self.i.ready.eq(core.i.ready & ~self.key.valid)]
                    with m.If(self.i.valid & self.i.ready):
                        m.d.sync += last.eq(req.last)
                        m.next = "BLOCK"
            with m.State("SUBKEY"):
                m.d.comb += self.busy.eq(1)
                with m.If(core.o.valid):
                    m.d.sync += l_key.eq(core.o.payload.block)
                    m.next = "IDLE"
            with m.State("BLOCK"):
                with m.If(core.o.valid):
                    m.d.sync += chain.eq(core.o.payload.block)
                    with m.If(last):
                        m.next = "TAG"
                    with m.Else():
                        m.next = "IDLE"
            with m.State("TAG"):
                m.d.comb += self.o.valid.eq(1)
                with m.If(self.o.ready):
                    m.d.sync += chain.eq(0)
                    m.next = "IDLE"
        return m


def kdf_request_layout():
    """A :class:`SessionKdf` request: the derivation ``constant`` (the label's last byte,
    :class:`~aes_fpga.appliance.session_spec.Derivation`), the 32-byte ``context`` (host
    challenge then device challenge, first byte most significant) and ``blocks`` of output
    (1: 128 bits, a cryptogram; 2: 256 bits, a key)."""
    return data.StructLayout({"constant": 8, "context": 256, "blocks": range(1, 3)})


def kdf_output_layout():
    """One 128-bit block of KDF output; ``last`` on the request's last."""
    return data.StructLayout({"block": _BLOCK_BITS, "last": 1})


class SessionKdf(wiring.Component):
    """The sessions' KDF (:func:`aes_fpga.cmac_model.kdf_counter` with the 12-byte label
    ``0^11 || constant``, the 32-byte context and ``L`` = 128 or 256) on a :class:`Cmac`.

    Each request on ``i`` gives ``blocks`` beats on ``o``: block ``j`` is the CMAC of the
    three blocks ``[j]_8 || label || 0x00 || context || [L]_16``. The key (the device secret)
    comes in on ``key``, once, before the first request; requests wait while its subkeys are
    computed.

    Latency: three chained core encryptions per output block (see :class:`Cmac`).
    Throughput: one request at a time.
    Back-pressure on ``o`` holds the chain; ``i`` is taken with the request's last block.

    Parameters
    ----------
    core : a core with the common interface
        The core the CMAC runs on (made a submodule).
    """

    def __init__(self, core):
        # (Its messages are three whole blocks: no padding.)
        self.cmac = Cmac(core, padding=False)
        super().__init__({
            "key": In(stream.Signature(key_layout(core.key_slots))),
            "i": In(stream.Signature(kdf_request_layout())),
            "o": Out(stream.Signature(kdf_output_layout())),
            "busy": Out(1),
        })

    @staticmethod
    def message_blocks(constant, context, blocks, index):
        """The three 128-bit blocks of the fixed input with counter ``index``, as Amaranth
        values (the byte layout of :func:`aes_fpga.cmac_model.kdf_fixed_input`)."""
        length = Mux(blocks == 2, Const(256, 16), Const(128, 16))
        # Bytes, most significant first: [i] 0^11 constant 00 context[32] L[2] = 48 bytes
        # (Cat starts at the least significant end).
        message = Cat(length, context, Const(0, 8), constant, Const(0, 88),
                      index, Const(0, 8 - len(index)))
        return [message[384 - 128 * (k + 1):384 - 128 * k] for k in range(3)]

    def elaborate(self, platform):
        m = Module()
        m.submodules.cmac = cmac = self.cmac
        wiring.connect(m, wiring.flipped(self.key), cmac.key)
        req = self.i.payload
        index = Signal(2, init=1)            # the output block being made, 1 or 2
        part = Signal(range(4))              # the message block going in next; 3: all in
        blocks = self.message_blocks(req.constant, req.context, req.blocks, index)
        m.d.comb += [
            self.busy.eq(cmac.busy),
            cmac.i.payload.block.eq(Mux(part == 0, blocks[0],
                                        Mux(part == 1, blocks[1], blocks[2]))),
            cmac.i.payload.last.eq(part == 2),
            cmac.i.payload.length.eq(16),
            cmac.i.valid.eq(self.i.valid & (part != 3)),
            self.o.payload.block.eq(cmac.o.payload.tag),
            self.o.payload.last.eq(index == req.blocks),
            self.o.valid.eq(cmac.o.valid),
            cmac.o.ready.eq(self.o.ready),
            self.i.ready.eq(self.o.valid & self.o.ready & self.o.payload.last),
        ]
        with m.If(cmac.i.valid & cmac.i.ready):
            m.d.sync += part.eq(Mux(part == 2, 3, part + 1))
        with m.If(self.o.valid & self.o.ready):
            m.d.sync += part.eq(0)
            m.d.sync += index.eq(Mux(self.o.payload.last, 1, index + 1))
        return m
