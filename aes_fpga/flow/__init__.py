"""Tool flows: Yosys synthesis and utilisation reports, post-synthesis netlist simulation,
clocking (MMCM settings), and board builds up to a bitstream."""
