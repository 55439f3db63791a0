"""Where aes-fpga keeps what it computes once: compiled simulators and synthesis results."""

import os
from pathlib import Path

__all__ = ["cache_root"]


def cache_root():
    """``$AES_FPGA_CACHE``, else ``aes-fpga`` in ``$XDG_CACHE_HOME`` (``~/.cache`` when
    unset). Each kind of result has a folder of its own below it."""
    root = os.environ.get("AES_FPGA_CACHE")
    if not root:
        xdg = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
        root = Path(xdg) / "aes-fpga"
    return Path(root)
