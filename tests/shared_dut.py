"""One instance of a design per maker and arguments for the whole test run.

The stream drivers (``run_streams`` and ``run_core`` of :mod:`aes_fpga.sim.traffic`) keep a
component's simulation on the component and reset it to its initial state (every
signal and memory) when it is simulated again, instead of elaborating and compiling it again,
which costs about as much as a thousand simulated cycles of a core. Tests that make the same
design many times make it through :func:`shared` to use that.
"""

import functools

__all__ = ["shared"]


def shared(make, *args, **kwargs):
    """``make(*args, **kwargs)``, made once per run for equal (hashable) arguments."""
    return _made(make, args, tuple(sorted(kwargs.items())))


@functools.cache
def _made(make, args, kwargs):
    return make(*args, **dict(kwargs))
