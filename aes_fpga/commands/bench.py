"""``aes-fpga bench``: a core simulated cycle by cycle under saturating traffic, every result
checked (latency and throughput); with ``--design uart`` or ``ethernet``, a CTR (or GCM) message
through the simulated appliance (link efficiency, latency)."""

from ..sim.modebench import MODES
from .common import announced, fail, make_core, note, print_json
from .options import (
    add_baud,
    add_clock_mhz,
    add_core_options,
    add_design,
    add_device_key_file,
    add_ghash,
    add_json,
    add_phy,
    int_in,
)

__all__ = ["add_arguments", "run"]


#: The secured serial bench's message: inside a session a record carries 992 data bytes, and
#: the time counted runs to the last reply's end, a record's frame after the last request's:
#: ``n`` records take about ``n + 1`` frames' time, so the figure approaches the wire format's
#: ceiling (about 0.955) as 1 - 1/(n + 1). At 64 KiB (67 records) that is 1.5 % below it, at
#: 256 KiB (265 records) 0.4 %: the session target (0.95 of baud/10) is stated for a message
#: long enough that the one frame's wait is not what it measures.
UART_SESSION_SIZE = 1 << 18
#: The modes an appliance bench runs (``--design uart|ethernet --mode``): CTR, the default, and
#: GCM on an appliance built with the bram GHASH.
APPLIANCE_MODES = ("ctr", "gcm")


def add_arguments(p):
    add_core_options(p, "simulate")
    add_json(p)
    add_design(p, ("core", "uart", "ethernet"),
               "core: the core alone (default); uart: a CTR message through the simulated "
               "serial appliance, UART PHYs and line included; ethernet: a CTR message through "
               "the simulated Ethernet appliance at the MII, RMII or RGMII pins (payload "
               "throughput against the line rate, and the latency of a 16-byte request)", "core")
    add_phy(p, "the PHY interface simulated (rgmii: at 1000 Mbit/s, the stack at 125 MHz)")
    p.add_argument("--core-mhz", type=int_in(1, 125), default=125,
                   help="--design ethernet --phy rgmii: the core's clock beside the 125 MHz "
                        "stack (1 to 125, default 125: the core in the stack's clock domain; "
                        "below, in a domain of its own behind asynchronous FIFOs)")
    add_baud(p, "--design uart: line rates to measure", default=[3_000_000, 12_000_000],
             nargs="+")
    p.add_argument("--size", type=int_in(1, 1 << 24), default=None,
                   help="--design uart|ethernet: message bytes (1 to 16777216, default 65536 "
                        f"for uart, {UART_SESSION_SIZE} for uart with --device-key-file, "
                        "1048576 for ethernet)")
    p.add_argument("--flow-control", action="store_true",
                   help="--design uart: RTS/CTS on the simulated line")
    p.add_argument("--key-size", type=int, default=128, choices=(128, 192, 256),
                   help="AES key size in bits (default 128)")
    p.add_argument("--blocks", type=int_in(1, 100000), default=240,
                   help="blocks to encrypt and decrypt, alternating (1 to 100000, default 240); "
                        "with --mode, the message's blocks (2 or more)")
    p.add_argument("--mode", choices=tuple(MODES), default=None,
                   help="--design core: the core inside the mode engine, one message of "
                        "--blocks blocks encrypted in this mode (GCM: with a GHASH of "
                        "--ghash), every result checked against cryptography; --design "
                        "uart|ethernet: ctr (default) or gcm, the message in that mode through "
                        "an appliance built with it (GCM: the bram GHASH, no AAD)")
    add_ghash(p, "--mode gcm: the GHASH multiplier", "bram")
    add_clock_mhz(p, "clock frequency for the Gbps figure; with --design uart, the simulated "
                     "clock")
    add_device_key_file(p, "--design uart|ethernet: the appliance is built with it (a secured "
                           "device) and the message runs inside a session; ethernet also "
                           "reports the handshake's device time. The file must be its owner's "
                           "only (chmod 600)")



def run(args):
    if args.design != "core":
        refusal = _appliance_refusal(args)
        if refusal is not None:
            return fail("bench", refusal)
    elif args.mode is not None:
        return _run_mode(args)
    if args.device_key_file is not None and args.design == "core":
        return fail("bench", "--device-key-file: a core has no sessions; it is for --design "
                             "uart or ethernet")
    secret = None
    if args.device_key_file is not None:
        from ..appliance.device_key import KeyFileError, load_key_file
        try:
            secret = load_key_file(args.device_key_file)
        except KeyFileError as e:
            return fail("bench", e)
    if args.design == "uart":
        return _run_uart(args, secret)
    if args.design == "ethernet":
        return _run_ethernet(args, secret)
    return _run_core(args)


def _appliance_refusal(args):
    """What ``--design uart|ethernet`` cannot run with ``args``'s mode options, or ``None``."""
    if args.mode is not None and args.mode not in APPLIANCE_MODES:
        return (f"--mode: the {args.design} design runs {' or '.join(APPLIANCE_MODES)} "
                f"messages; {args.mode} is for --design core")
    if args.ghash != "bram":
        return (f"--ghash: the simulated {args.design} appliance has the bram GHASH; "
                f"--ghash {args.ghash} is for --design core")
    if args.mode == "gcm" and args.device_key_file is not None:
        return ("--mode: inside a session the bench runs CTR records; gcm is for an open "
                "device (without --device-key-file)")
    return None


def _key_size_refused(args):
    """The refusal of a ``--key-size`` the core is not built for."""
    return fail("bench", f"key_size: {args.key_size} is not among the core's key sizes "
                         f"{','.join(map(str, args.key_sizes))}")


def _print_rows(rows):
    """A report's ``(label, value)`` lines, aligned."""
    for label, value in rows:
        print(f"  {label:<38}{value}")


def _run_core(args):
    from ..sim.traffic import bench

    if args.key_size not in args.key_sizes:
        return _key_size_refused(args)
    try:
        core = make_core(args)
    except ValueError as e:
        return fail("bench", e)
    # Cores without the key schedule take round keys on ``rk`` instead of a key on ``key``.
    load = "key" if hasattr(core, "key") else "rk"
    try:
        with announced(f"simulating {args.blocks} blocks: {args.core}, AES-{args.key_size}, "
                       f"key loaded via {load}"):
            # An encryption-only core (its ``ops``) ignores the op field: send encryptions.
            ops = getattr(core, "ops", None)
            pattern = "encrypt" if ops is not None and len(ops) == 1 else "alternate"
            r = bench(core, key_bytes=args.key_size // 8, blocks=args.blocks, load=load,
                      op_pattern=pattern)
    except RuntimeError as e:
        # A benchmark that computed wrong answers (traffic.WrongResult, a RuntimeError) or
        # stalled has no figures to report.
        return fail("bench", e, 1)
    report = {"core": args.core, "key_size": args.key_size, "key_slots": args.key_slots,
              "tag_width": args.tag_width, "load": r["load"], "op_pattern": r["op_pattern"],
              "latency_cycles": r["latency_cycles"], "latency_min": r["latency_min"],
              "latency_max": r["latency_max"], "blocks": r["blocks"], "cycles": r["cycles"],
              "blocks_per_cycle": r["blocks_per_cycle"], "clock_mhz": args.clock_mhz,
              "gbps_at_mhz": r["blocks_per_cycle"] * 128 * args.clock_mhz / 1000,
              "verified": r["verified"]}
    if args.json:
        print_json(report)
        return 0
    lat = report["latency_cycles"]
    lat = f"{lat}" if lat is not None else f"{report['latency_min']} to {report['latency_max']}"
    print(f"{args.core}, AES-{args.key_size}: {report['blocks']} blocks of saturating traffic "
          f"(encrypt/decrypt alternating), cycle-accurate simulation")
    _print_rows((
        ("latency (accepted -> result)", f"{lat} cycles"),
        ("cycles (first accept .. last result)", f"{report['cycles']}"),
        ("throughput", f"{report['blocks_per_cycle']:.4f} blocks/cycle"),
        (f"at {args.clock_mhz:g} MHz", f"{report['gbps_at_mhz']:.3f} Gbps"),
        ("results", f"{report['blocks']} of {report['blocks']} match the AES model")))
    return 0


def _run_mode(args):
    from ..sim.cxxsim import mark_used
    from ..sim.modebench import MODES, bench_mode

    if args.mode == "gcm" and args.ghash == "none":
        return fail("bench", "--ghash: none leaves GCM out; --mode gcm needs bram or lut")
    if args.blocks < 2:
        return fail("bench", f"blocks: {args.blocks} is out of range for --mode; allowed 2 "
                             "to 100000")
    if args.key_size not in args.key_sizes:
        return _key_size_refused(args)
    try:
        core = make_core(args)
        if not hasattr(core, "key"):
            mark_used(core)         # refused before it is built: no unused-elaboratable warning
            return fail("bench", f"core: {args.core} takes round keys, not a key; the mode "
                                 "engine needs a core with a key stream")
        with announced(f"simulating a {args.blocks}-block {args.mode.upper()} message: "
                       f"{args.core}, AES-{args.key_size}, in the mode engine"):
            r = bench_mode(core, MODES[args.mode], key_bits=args.key_size, blocks=args.blocks,
                           ghash=args.ghash, ghash_digit=args.ghash_digit)
    except ValueError as e:
        return fail("bench", e)
    except RuntimeError as e:       # a wrong result (traffic.WrongResult) or a stall
        return fail("bench", e, 1)
    report = {"core": args.core, "key_slots": args.key_slots, **r,
              "clock_mhz": args.clock_mhz,
              "gbps_at_mhz": round(r["blocks_per_cycle"] * 128 * args.clock_mhz / 1000, 4)}
    if args.json:
        print_json(report)
        return 0
    print(f"{args.core}, AES-{args.key_size}, {args.mode.upper()} encryption in the mode "
          f"engine: one message of {r['blocks']} blocks after a one-block message (key "
          f"loaded{', H computed' if args.mode == 'gcm' else ''}), cycle-accurate simulation")
    rows = [("cycles (first beat .. last block)", f"{r['cycles']}"),
            ("first block after", f"{r['first_result_cycles']} cycles"),
            ("throughput", f"{r['blocks_per_cycle']:.4f} blocks/cycle"),
            (f"at {args.clock_mhz:g} MHz", f"{report['gbps_at_mhz']:.3f} Gbps")]
    if args.mode == "gcm":
        rows += [("GHASH", f"{r['ghash']}, {r['ghash_cycles_per_block']} cycles per block"),
                 ("tag after the last block", f"{r['tag_latency_cycles']} cycles")]
    rows.append(("results", f"every one matches {r['verified']}"))
    _print_rows(rows)
    return 0


def _run_uart(args, secret):
    from ..appliance.gateware.uart import uart_divider
    from ..sim.linkbench import bench_sim_wall_time, bench_uart

    size = args.size if args.size is not None else \
        (65536 if secret is None else UART_SESSION_SIZE)
    try:
        for baud in args.baud:      # refuse an impossible rate before simulating anything
            uart_divider(args.clock_mhz * 1e6, baud)
    except ValueError as e:
        return fail("bench", e)
    runs, mode = [], args.mode or "ctr"
    try:
        for baud in args.baud:
            note(f"simulating {size} bytes of {mode.upper()} over the serial line at {baud} baud, "
                 f"{args.clock_mhz:g} MHz ...")
            r = bench_uart(baud=baud, clk_freq=args.clock_mhz * 1e6, size=size,
                           core=make_core(args), flow_control=args.flow_control, progress=note,
                           device_key=secret, mode=mode)
            note(f"  {r['wall_s']:.1f} s ({r['cycles_per_s'] / 1e6:.2f} M cycles/s, "
                 f"{r['simulator']})")
            runs.append(r)
        sim = None
        if secret is None and mode == "ctr":    # (--port sim is the open device)
            note(f"encrypting {size} bytes of CTR through --port sim ...")
            sim = bench_sim_wall_time(size=size, progress=note)
    except ValueError as e:         # a core option out of range
        return fail("bench", e)
    except RuntimeError as e:       # a wrong answer (traffic.WrongResult) or a stall
        return fail("bench", e, 1)
    report = {"design": "uart", "core": args.core, "key_sizes": list(args.key_sizes),
              "key_slots": args.key_slots, "bytes": size, "mode": mode,
              "session": secret is not None, "serial_line": runs, "sim_port": sim}
    if args.json:
        print_json(report)
        return 0
    inside = ", inside a session (every request and reply a record)" if secret else ""
    print(f"uart appliance ({args.core}): {size} bytes, {mode.upper()}{inside}, simulated with "
          f"the UART PHYs and the line in the loop, host pipelining up to the device's window")
    head = ("baud", "window", "cycles", "payload B/s", "baud/10", "efficiency")
    print("  " + "".join(f"{h:>14}" for h in head))
    for r in runs:
        print("  " + "".join(f"{v:>14}" for v in (
            f"{r['baud']:.0f}", r["window"], r["cycles"], f"{r['payload_bytes_per_s']:.0f}",
            f"{r['raw_bytes_per_s']:.0f}", f"{r['efficiency']:.4f}")))
    print(f"  results checked against {runs[0]['checked_with']}")
    if sim is not None:
        print(f"--port sim ({sim['simulator']}): {size} bytes in {sim['wall_s']:.2f} s")
    return 0


#: What each PHY interface carries a cycle, for the reports.
_LINE_SYMBOL = {"mii": "a nibble", "rmii": "a dibit", "rgmii": "a byte"}


def _run_ethernet(args, secret):
    from ..sim.ethbench import bench_ethernet, bench_ethernet_gcm

    size = args.size if args.size is not None else 1 << 20
    if secret is not None:
        return _run_ethernet_session(args, secret, size)
    gcm = args.mode == "gcm"
    try:
        r = (bench_ethernet_gcm if gcm else bench_ethernet)(
            size, phy=args.phy, core_mhz=args.core_mhz, progress=note)
    except ValueError as e:         # a GCM message of one chunk or less
        return fail("bench", e)
    except RuntimeError as e:       # a wrong answer, a missing reply, no compiler
        return fail("bench", e, 1)
    if args.json:
        print_json(r)
        return 0
    symbol = _LINE_SYMBOL[r["phy"]]
    core = f", core at {r['core_mhz']} MHz" if "core_mhz" in r else ""
    print(f"ethernet appliance over {r['phy'].upper()} at {r['line_mbit_s']} Mbit/s (simulated, "
          f"{symbol} a cycle{core}): {size} bytes of {r['mode'].upper()} in {r['datagrams']} "
          f"datagrams of {r['chunk']} bytes{' (one message, no AAD)' if gcm else ''}, "
          f"full duplex")
    print(f"  payload throughput {r['payload_fraction_of_line_rate']:.4f} of the line rate "
          f"(the wire format's ceiling with {r['chunk']}-byte chunks: "
          f"{r['ceiling_fraction']:.4f})")
    if not gcm:
        print(f"  round trip of a 16-byte request: {r['latency_cycles_16_bytes']} "
              f"{r['phy'].upper()} clock cycles ({r['latency_us']} us at "
              f"{r['phy_clock_mhz']} MHz)")
    print(f"  results checked against {r['checked_with']}")
    return 0


def _run_ethernet_session(args, secret, size):
    from ..sim.sessionbench import bench_ethernet_session

    if args.phy not in ("mii", "rmii"):
        return fail("bench", f"--phy: {args.phy} is not simulated with a device key; choose mii "
                             "or rmii")
    try:
        r = bench_ethernet_session(secret, size, core=args.core, phy=args.phy,
                                   progress=note)
    except RuntimeError as e:       # a wrong answer, a missing reply, no compiler
        return fail("bench", e, 1)
    if args.json:
        print_json(r)
        return 0
    symbol = _LINE_SYMBOL[r["phy"]]
    print(f"secured ethernet appliance ({args.core}) over {r['phy'].upper()} at "
          f"{r['line_mbit_s']} Mbit/s (simulated, {symbol} a cycle), inside a session: "
          f"{size} bytes of CTR in {r['records']} records of {r['chunk']} bytes, full duplex")
    fraction = r["payload_fraction_of_line_rate"]
    dropped = f"; {r['dropped']} records dropped (device slower than the line)" \
        if r["dropped"] else ""
    print(f"  payload throughput {fraction:.4f} of the line rate (the records' ceiling: "
          f"{r['ceiling_fraction']:.4f}){dropped}")
    print(f"  session handshake: {r['handshake_device_cycles']} cycles of device time "
          f"({r['handshake_device_us']} us at {r['phy_clock_mhz']} MHz); round trips "
          f"{' + '.join(map(str, r['handshake_round_trip_cycles']))} cycles")
    print(f"  results checked against {r['checked_with']}")
    return 0
