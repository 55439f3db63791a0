"""The appliance in simulation as a host link.

:class:`SimLink` runs the appliance gateware in a compiled simulation (:mod:`aes_fpga.sim.cxxsim`)
behind the same ``write``/``read_until`` interface as a serial port, so
:class:`aes_fpga.appliance.Device` drives it unchanged. The choice of a link by name
(``--port sim``, ``model``, ``udp://...``, a serial port) is
:func:`aes_fpga.appliance.links.open_link`, host side; it loads this module only for ``sim``.
"""

__all__ = ["SimLink", "sim_appliance", "SIM_GCM", "SIM_NOISE_SEED"]


#: The GHASH of the simulated appliances' GCM (``--port sim`` and the Ethernet appliance's).
SIM_GCM = "bram"
#: The seed of the simulated appliance's noise source (``--port sim``): its rings are their
#: simulation model, a seeded pseudo-random generator (:class:`~aes_fpga.primitives.NoiseModel`),
#: so its ``RANDOM`` words are the same in every run and no secret.
SIM_NOISE_SEED = 1


def sim_appliance(key_slots=4):
    """The appliance that ``--port sim`` simulates, and its name for the simulator cache:
    a :class:`~aes_fpga.appliance.ProtocolEngine` (the UART bypassed) around the default core,
    with GCM (:data:`SIM_GCM`) and an entropy source (:class:`~aes_fpga.entropy.EntropySource`,
    its noise the model seeded with :data:`SIM_NOISE_SEED`), so ``INFO`` and ``STATS`` report it
    and ``RANDOM`` serves its words; its byte stream is held until the source's start-up is
    over (:class:`~aes_fpga.sim.startup.StartupHold`), as a board's is long over when a host
    first talks to it, so every run sees the same.
    Returns ``(make, cache_key)``; ``make()`` builds it (only needed when no simulator of it is
    cached yet, so a warm start imports no gateware at all)."""

    def make():
        from ..appliance.gateware.engine import ProtocolEngine
        from ..entropy import EntropySource
        from ..primitives import NoiseModel
        from .startup import StartupHold
        # The engine's rx is back-pressured, so nothing is lost whatever the window; four
        # requests in flight keep it busy while the host turns replies round.
        return StartupHold(ProtocolEngine(
            key_slots=key_slots, window=4, gcm=SIM_GCM,
            entropy=EntropySource(model=NoiseModel(seed=SIM_NOISE_SEED))))

    return make, (f"StartupHold(ProtocolEngine(key_slots={key_slots}, window=4, gcm={SIM_GCM}, "
                  f"entropy=EntropySource(seed={SIM_NOISE_SEED})))")


class SimLink:
    """The appliance gateware, simulated (see :mod:`aes_fpga.sim.cxxsim`).

    ``device``: the byte-stream component to simulate (or a function that makes one); by
    default :func:`sim_appliance` with ``key_slots``, or for example a
    :class:`~aes_fpga.sim.linkbench.SerialLine` around a UART appliance. ``cache_key`` names it for
    the compiled-simulator cache and ``config`` sets its ``config`` input (see
    :func:`aes_fpga.sim.cxxsim.open_device`). ``timing``: the run's
    :class:`~aes_fpga.sim.cxxsim.FrameTiming`, once closed.
    """

    def __init__(self, device=None, *, key_slots=4, engine="auto", progress=None,
                 cache_key=None, config=None):
        if device is None:
            device, cache_key = sim_appliance(key_slots)
        from .cxxsim import open_device
        kwargs = {} if progress is None else {"progress": progress}
        self._link = open_device(device, engine=engine, cache_key=cache_key, config=config,
                                 **kwargs)
        self.engine = self._link.engine
        self.name = f"simulated appliance ({self.engine})"

    @property
    def timing(self):
        return self._link.timing

    def write(self, data):
        self._link.write(data)

    def read_until(self, delimiter=b"\0", timeout=1.0):
        return self._link.read_until(delimiter, timeout=timeout)

    def close(self):
        self._link.close()
