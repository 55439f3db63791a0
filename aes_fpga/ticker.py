"""A few lines of progress for long one-time steps (compiling a simulator, preparing Yosys)."""

import threading
import time

__all__ = ["Ticker"]


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
