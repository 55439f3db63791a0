"""T-table AES cores after Drimer, Güneysu & Paar (block RAM T-tables + DSP48E1 XOR cascades).

Three cores, as the paper's three modules: :class:`TTableBasic` (§4.1, one column per cycle, two
blocks interleaved), :class:`TTableRound` (§4.2, four basic constructs, eight blocks) and
:class:`TTableUnrolled` (§4.2, round stages in a row, one block per cycle). All three do
AES-128/192/256, encryption and decryption, with key slots, tags and back-pressure.

The package: :mod:`.construct` (the T-table and the basic construct), :mod:`.common` (what
the datapaths and cores share: options, the zero key's round keys, the eight-place ring of the
basic and round modules, the output FIFO, the core behind the key schedule), and one module a
datapath with its core: :mod:`.basic`, :mod:`.round`, :mod:`.unrolled`. Importing the package
loads none of them: each name it offers loads its module when first asked for.

Every round column is ``e_j = T0[a(0,j)] ^ T1[a(1,j+1)] ^ T2[a(2,j+2)] ^ T3[a(3,j+3)] ^ K_j``,
``T_k`` being ``T0`` rotated right by ``k`` bytes, so one block RAM holding ``T0`` serves every row:
the rotation is routing. A basic construct (one output column) is two dual-port block RAMs
(four lookups) whose outputs feed four cascaded XOR lanes (DSP48E1 on Xilinx), the round key
entering the first lane:

====  ==================================================================================
c+k   row ``k`` lookup address (``k`` = 0..3): ``{op, last round, byte}``, the byte delayed
      ``k`` cycles (the paper's 8/16/24-bit input registers)
c+k+2 block RAM read + its output register
c+k+4 the lane's two input registers (A1/A2; the paper's T and D stages)
c+k+5 XOR with the previous lane (``k`` > 0) or with the round key (``k`` = 0)
c+8   column result = next round's row-0 address
====  ==================================================================================

One block RAM (1024 x 32: encryption ``T0`` and last-round ``T0'`` = S-box byte in row 0, and
the same for decryption, equivalent inverse cipher, FIPS-197 §5.3.5) holds every table a column
needs, so decryption costs no extra block RAM: the paper's variant switches tables by
reconfiguration, here the op is an address bit. The inverse cipher reads row ``k`` from column
``j - k`` instead of ``j + k``: for rows 1 and 3 a byte-wide 2:1 switch after the delay
registers, which every column's row byte passes once whichever column reads it (row 2 is the
same column both ways). Placed after the registers, the switch stays one LUT a bit of its own;
before them, Yosys merged it with the entry switch below into eight-input functions of several
LUTs and wide multiplexers a bit.

The paper leaves the key schedule out (§5.1 only sketches one); here
:class:`~aes_fpga.cores.key_schedule.KeySchedule` (a word-serial schedule,
decryption keys with InvMixColumns applied) writes the round keys through the ``rk`` stream into
a block-RAM round-key memory, and the initial AddRoundKey is fabric logic folded into the
2:1 input switch (the paper's "regular logic" option), so the datapath has 16 lanes, not 20.
"""

from ..._lazy import lazy_namespace

__all__ = ["TTableBasic", "TTableBasicDatapath", "TTableRound", "TTableRoundDatapath",
           "TTableUnrolled", "TTableUnrolledDatapath", "t_table", "ROUND_STAGES"]

# Where each name of the package is defined.
_WHERE = {"TTableBasic": ".basic", "TTableBasicDatapath": ".basic",
          "TTableRound": ".round", "TTableRoundDatapath": ".round",
          "TTableUnrolled": ".unrolled", "TTableUnrolledDatapath": ".unrolled",
          "t_table": ".construct", "ROUND_STAGES": ".construct"}

__getattr__, __dir__ = lazy_namespace(__name__, _WHERE)
