"""nextpnr: the ECP5 options of a part, the route timeout, and what nextpnr reports.

Both nextpnr flows (the build's, :mod:`aes_fpga.flow.build`, and the routed figures',
:mod:`aes_fpga.flow.route`) are read by one function, :func:`parse_nextpnr_report`: Fmax per
clock, the critical path and the utilisation from nextpnr's ``--report`` file (the Fmax lines of
its log when there is no report file).
"""

import json
import os
import re

__all__ = ["ROUTE_TIMEOUT_S", "route_timeout", "nextpnr_ecp5_args", "parse_nextpnr_fmax",
           "parse_nextpnr_report"]

#: The longest a place and route may take before it is stopped, in seconds. Routing these
#: designs takes minutes, but nextpnr's default router can go round in circles on an unlucky
#: placement for hours (the uart appliance's at seed 1 once still had hundreds of overused
#: wires after 35 minutes, where seeds 2 and 3 routed in 20 s): a stop with an error naming
#: the seed, rather than a hang. ``$AES_FPGA_ROUTE_TIMEOUT`` (seconds) overrides it.
ROUTE_TIMEOUT_S = 1200


def route_timeout():
    """:data:`ROUTE_TIMEOUT_S`, or ``$AES_FPGA_ROUTE_TIMEOUT`` when set."""
    text = os.environ.get("AES_FPGA_ROUTE_TIMEOUT")
    try:
        return float(text) if text else ROUTE_TIMEOUT_S
    except ValueError:
        raise ValueError(f"AES_FPGA_ROUTE_TIMEOUT: {text!r} is not a number of seconds") from None


def nextpnr_ecp5_args(platform):
    """Device, package and speed options of nextpnr-ecp5 for an ECP5 platform."""
    device = platform.device.upper()
    m = re.match(r"^LFE5U(M5G|M)?-(\d+)F$", device)
    if m is None:
        raise ValueError(f"device: {platform.device!r} is not an ECP5 device nextpnr knows; "
                         f"expected LFE5U-, LFE5UM- or LFE5UM5G- with 12F, 25F, 45F or 85F")
    prefix = {None: "", "M": "um-", "M5G": "um5g-"}[m.group(1)]
    packages = {"BG256": "CABGA256", "MG285": "CSFBGA285", "BG381": "CABGA381",
                "BG554": "CABGA554", "BG756": "CABGA756"}
    if platform.package not in packages:
        raise ValueError(f"package: {platform.package!r} is not known; allowed "
                         f"{', '.join(packages)}")
    return [f"--{prefix}{m.group(2)}k", "--package", packages[platform.package],
            "--speed", str(platform.speed)]



_FMAX_RE = re.compile(r"Max frequency for clock\s+'([^']+)':\s+([\d.]+) MHz")


def parse_nextpnr_fmax(log_text):
    """``{clock: MHz}`` from nextpnr's timing report (the last figure per clock)."""
    return {clk: float(mhz) for clk, mhz in _FMAX_RE.findall(log_text)}


def parse_nextpnr_report(report_text=None, log_text=""):
    """What nextpnr says of a routed design, from its ``--report`` JSON (``report_text``), or
    from its log when there is no report (older nextpnr builds): a dict with

    ``fmax_by_clock``: ``{clock: achieved MHz}``; ``constraint_by_clock``: ``{clock: MHz}`` the
    clock was constrained to (report only); ``fmax_mhz``: the lowest achieved figure;
    ``critical_paths``: per clock pair, ``from``/``to`` clocks, total delay (ns), and the
    path's first and last cell and its logic and routing shares; ``utilization``: nextpnr's
    own ``{bel type: {"used", "available"}}``.
    """
    out = {"fmax_by_clock": {}, "constraint_by_clock": {}, "fmax_mhz": None,
           "critical_paths": [], "utilization": {}}
    if report_text:
        rep = json.loads(report_text)
        for clk, f in rep.get("fmax", {}).items():
            out["fmax_by_clock"][clk] = round(float(f["achieved"]), 2)
            if "constraint" in f:
                out["constraint_by_clock"][clk] = round(float(f["constraint"]), 2)
        for cp in rep.get("critical_paths", []):
            steps = cp.get("path", [])
            delays = {}
            for st in steps:
                kind = st.get("type", "?")
                delays[kind] = delays.get(kind, 0.0) + float(st.get("delay", 0.0))
            total = sum(delays.values())
            out["critical_paths"].append({
                "from": cp.get("from"), "to": cp.get("to"),
                "delay_ns": round(total, 3),
                "logic_ns": round(delays.get("logic", 0.0), 3),
                "routing_ns": round(delays.get("routing", 0.0), 3),
                "start": steps[0]["from"]["cell"] if steps else None,
                "end": steps[-1]["to"]["cell"] if steps else None,
                "steps": len(steps),
            })
        out["utilization"] = {bel: {"used": u["used"], "available": u["available"]}
                              for bel, u in rep.get("utilization", {}).items() if u["used"]}
    if not out["fmax_by_clock"]:
        out["fmax_by_clock"] = parse_nextpnr_fmax(log_text)
    if out["fmax_by_clock"]:
        out["fmax_mhz"] = min(out["fmax_by_clock"].values())
    return out

