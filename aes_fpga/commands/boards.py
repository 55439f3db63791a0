"""``aes-fpga boards``: the boards, their parts (and the open flow's), clocks and the designs
``build`` offers on each."""

from .common import print_json
from .options import add_json

__all__ = ["add_arguments", "run", "board_rows"]


def add_arguments(p):
    add_json(p, "print JSON instead of a table")


def board_rows():
    """One row per board, as ``boards --json`` prints them."""
    from ..boards import BOARDS
    from ..designs.table import DESIGN_NEEDS, designs_for

    rows = []
    for b in BOARDS.values():
        p = b.platform()
        clk = p.lookup(p.default_clk)
        designs = designs_for(b)
        # Only frontends a design exists for: the ones `build --design` can build on the board.
        frontends = list(dict.fromkeys(DESIGN_NEEDS[d] for d in designs if d in DESIGN_NEEDS))
        rows.append({"board": b.name, "description": b.description, "family": b.family,
                     "part": b.part, "open_flow_part": b.open_flow_part,
                     "clock_mhz": clk.clock.frequency / 1e6, "designs": designs,
                     "frontends": frontends, "open_flow": b.open_flow, "notes": b.notes})
    return rows


def run(args):
    from ..flow.report import OPEN_FLOW_PART_NOTE

    rows = board_rows()
    if args.json:
        print_json(rows)
        return 0
    print(f"{'board':<18}{'family':<8}{'part':<22}{'open-flow part':<20}{'clock':>7}  "
          f"designs (--design)")
    for r in rows:
        flow = ("none (Vivado only)" if r["open_flow_part"] is None else
                "same" if r["open_flow_part"] == r["part"] else f"{r['open_flow_part']} *")
        print(f"{r['board']:<18}{r['family']:<8}{r['part']:<22}{flow:<20}"
              f"{r['clock_mhz']:>6.2f}M  {','.join(r['designs'])}")
    if any(r["open_flow_part"] not in (None, r["part"]) for r in rows):
        print(f"* {OPEN_FLOW_PART_NOTE}")
    return 0
