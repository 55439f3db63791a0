"""What Vivado reports: utilisation and worst negative slack, read from its report files."""

import re

__all__ = ["parse_vivado_utilization", "parse_vivado_wns"]


def parse_vivado_utilization(report_text):
    """LUT/FF/RAMB36/RAMB18/DSP48E1 from a Vivado ``report_utilization`` file."""
    rows = {
        "lut": r"Slice LUTs\*?", "ff": r"Slice Registers", "ramb36": r"RAMB36/FIFO\*?",
        "ramb18": r"RAMB18", "dsp": r"DSPs",
    }
    out = {}
    for key, label in rows.items():
        m = re.search(rf"^\|\s*{label}\s*\|\s*([\d.]+)\s*\|", report_text, re.M)
        if m:
            out[key] = float(m.group(1)) if "." in m.group(1) else int(m.group(1))
    return out


def parse_vivado_wns(report_text):
    """Worst negative slack (ns) from a Vivado ``report_timing_summary`` file."""
    m = re.search(r"WNS\(ns\)\s+TNS\(ns\).*?\n\s*-+.*?\n\s*(-?[\d.]+)", report_text, re.S)
    return float(m.group(1)) if m else None
