"""A few lines of progress for long one-time steps (compiling a simulator, preparing Yosys)."""

import threading
import time

__all__ = ["Ticker", "format_bytes", "byte_bar"]


class Ticker:
    """Says what a long step is doing, then every ``every`` seconds that it still is, so a
    first run is never silent for long. ``progress`` takes one line of text (``None``: say
    nothing)."""

    def __init__(self, progress, what, every=2.0):
        self.progress = progress or (lambda line: None)
        self.what, self.every = what, every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.wait(self.every):
            self.progress(f"  ... {time.monotonic() - self.start:.0f} s")

    def __enter__(self):
        self.start = time.monotonic()
        self.progress(self.what)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def format_bytes(n):
    """``n`` bytes with binary prefixes, as every progress line here says it: ``17 B``,
    ``1.5 KiB``, ``5.0 MiB``."""
    units = ["B", "KiB", "MiB", "GiB", "TiB"]
    while n >= 1024 and len(units) > 1:
        n /= 1024
        units.pop(0)
    return f"{n:.0f} B" if units[0] == "B" else f"{n:.1f} {units[0]}"


def byte_bar(total, desc, stream, *, disable=False):
    """A ``tqdm`` progress bar over ``total`` bytes that counts in the units of
    :func:`format_bytes` (``2.9 MiB/5.0 MiB [00:05<00:04, 553.5 KiB/s]``), not tqdm's own
    decimal-looking ``2.86MB``; it leaves no line behind when closed."""
    from tqdm import tqdm

    class Bar(tqdm):
        @property
        def format_dict(self):
            d = super().format_dict
            rate = d["rate"]
            if rate is None and d["elapsed"]:
                rate = d["n"] / d["elapsed"]
            return {**d, "n_bytes": format_bytes(d["n"]), "total_bytes": format_bytes(d["total"]),
                    "rate_bytes": "?" if rate is None else f"{format_bytes(rate)}/s"}

    return Bar(total=total, desc=desc, file=stream, disable=disable, leave=False,
               dynamic_ncols=True,
               bar_format="{l_bar}{bar}| {n_bytes}/{total_bytes} [{elapsed}<{remaining}, "
                          "{rate_bytes}]")
