"""``aes-fpga power``: a toggle-count power proxy, switching activity in simulation with and
without the low-power techniques."""

from .common import announced, fail, print_json
from .options import add_json, add_seed, fraction, int_in

__all__ = ["add_arguments", "run"]

#: What each toggle count of the report is.
TOGGLES = (("data_toggles", "data toggles, all design signals"),
           ("sbox_input_toggles", "S-box input toggles"),
           ("sbox_output_toggles", "S-box output toggles"),
           ("register_clock_edges", "clock edges at the result register"))


def add_arguments(p):
    p.add_argument("--core", default="subbytes-accelerator", choices=("subbytes-accelerator",),
                   help="the design (default subbytes-accelerator: SubBytes for a soft CPU, "
                        "with operand isolation and clock gating, against its baseline)")
    p.add_argument("--lanes", type=int_in(1, 16), default=4,
                   help="bytes per request (1 to 16, default 4)")
    p.add_argument("--cycles", type=int_in(1, 1_000_000), default=2000,
                   help="cycles to simulate (1 to 1000000, default 2000)")
    p.add_argument("--duty", type=fraction, default=0.22,
                   help="share of idle cycles on which the CPU makes a request (0 to 1, "
                        "default 0.22, the paper's SubBytes activity)")
    add_seed(p, "seed of the traffic")
    add_json(p)


def run(args):
    from ..sim.power import subbytes_toggles

    runs = {}
    try:
        for label, low_power in (("baseline", False), ("low-power", True)):
            with announced(f"simulating {args.cycles} cycles of {args.core} ({label}: "
                           f"{'operand isolation + clock gating' if low_power else 'neither'}"
                           f", {args.lanes} lanes)"):
                runs[label] = subbytes_toggles(low_power=low_power, lanes=args.lanes,
                                               cycles=args.cycles, duty=args.duty,
                                               seed=args.seed)
    except ValueError as e:
        return fail("power", e)
    except RuntimeError as e:       # a wrong S-box result
        return fail("power", e, 1)
    base, low = runs["baseline"], runs["low-power"]
    reduction = {k: (1 - low[k] / base[k]) * 100 if base[k] else 0.0 for k, _ in TOGGLES}
    report = {"core": args.core, "lanes": args.lanes, "cycles": args.cycles, "duty": args.duty,
              "seed": args.seed, "method": "bit toggles of the design's signals in Amaranth's "
              "simulator (zero delay), not of the mapped netlist", "runs": runs,
              "reduction_percent": reduction}
    if args.json:
        print_json(report)
        return 0
    print(f"{args.core}, {args.lanes} lanes: {args.cycles} cycles of soft-CPU traffic (a "
          f"request on {args.duty:.0%} of the idle cycles, seed {args.seed}); {base['words']} "
          f"words, every result checked against the S-box")
    print("toggle counts of the design's signals in simulation (a power proxy, not mW)")
    print(f"  {'':<38}{'baseline':>10}{'low-power':>11}{'change':>9}")
    for k, label in TOGGLES:
        print(f"  {label:<38}{base[k]:>10}{low[k]:>11}{-reduction[k]:>8.1f}%")
    return 0
