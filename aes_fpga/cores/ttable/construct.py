"""The T-table and the basic construct every T-table core is built of (§3 and §4.1 of the
paper): two dual-port block RAMs holding the table, whose four lookups feed four cascaded XOR
lanes, the round key entering the first.

A construct computes one column ``e_j = T0[a0] ^ T1[a1] ^ T2[a2] ^ T3[a3] ^ K_j`` in
:data:`ROUND_STAGES` cycles from its row-0 address (see :mod:`aes_fpga.cores.ttable`): row ``k``'s
port is addressed ``k`` cycles after row 0's, its word is rotated right by ``k`` bytes (``T_k``
is routing), and lane ``k`` adds it to the cascade.
"""

from ... import model
from ...hw import rot_bytes_right
from ...primitives import DualPortBRAM, XorLane

__all__ = ["ROUND_STAGES", "t_table", "row_byte", "basic_construct"]

#: Pipeline stages of one round: lookup, BRAM register, two lane input registers, four XORs.
ROUND_STAGES = 8


def t_table():
    """The 1024 x 32 table of every T-table core: address ``{op, last, a}``.

    Words are row 0 in bits 31:24: ``op`` 0: ``[2s, s, s, 3s]`` (``s = S[a]``), or ``[s, 0, 0,
    0]`` in the last round; ``op`` 1: ``[14v, 9v, 13v, 11v]`` (``v = InvS[a]``), or ``[v, 0, 0,
    0]`` in the last round."""
    table = []
    for sbox, coeffs in ((model.SBOX, (2, 1, 1, 3)), (model.INV_SBOX, (14, 9, 13, 11))):
        for last in (False, True):
            for a in range(256):
                s = sbox[a]
                if last:
                    table.append(s << 24)
                else:
                    word = 0
                    for c in coeffs:
                        word = (word << 8) | model.gf_mul(s, c)
                    table.append(word)
    return table


def row_byte(word, k):
    """Row ``k`` (0 = bits 31:24) of a 32-bit column."""
    return word[24 - 8 * k:32 - 8 * k]


def basic_construct(module, prefix, table, addresses, key):
    """One basic construct added to ``module``: the two T-table block RAMs (submodules
    ``{prefix}t0`` and ``{prefix}t1``, ports a and b serving rows 0 to 3) and the four
    cascaded XOR lanes (``{prefix}x0`` to ``{prefix}x3``).

    Parameters
    ----------
    module : Module
        Where the construct's submodules and connections go.
    prefix : str
        Start of the submodules' names.
    table : list of int
        The block RAMs' contents, :func:`t_table`.
    addresses : list of Value
        Row ``k``'s 10-bit lookup address ``{op, last, byte}``, valid ``k`` cycles after
        row 0's.
    key : Value
        The round key word, taken by lane 0's key register 3 cycles after row 0's address.

    Returns
    -------
    Value
        The column: the last lane's output, :data:`ROUND_STAGES` cycles after row 0's address.
    """
    ports = []
    for h in range(2):
        rom = DualPortBRAM(width=32, depth=1024, init=table)
        module.submodules[f"{prefix}t{h}"] = rom
        ports += [(rom, "a"), (rom, "b")]
    lookups = []
    for k, (rom, x) in enumerate(ports):
        module.d.comb += getattr(rom, f"addr_{x}").eq(addresses[k])
        lookups.append(rot_bytes_right(getattr(rom, f"rdata_{x}"), k))
    prev = None
    for k in range(4):
        lane = XorLane(32, a_regs=2, c_regs=1, cascade_in=k > 0)
        module.submodules[f"{prefix}x{k}"] = lane
        module.d.comb += lane.a.eq(lookups[k])
        if k == 0:
            module.d.comb += lane.c.eq(key)
        else:
            module.d.comb += lane.pcin.eq(prev.pcout)
        prev = lane
    return prev.p
