"""AES cores. All share the stream interface of :mod:`aes_fpga.cores.interface`.

:data:`CORES` is the library's table of cores by name (the names the command line, the board
builds and the appliance use); :func:`make_core` makes one. A core reports its own figures:
``core.latency(key_bits)`` and ``core.blocks_per_cycle(key_bits)``.

Importing this package loads no HDL: the table names each core's module, which loads when the
core is first made or its class first named (``from aes_fpga.cores import DrabLocus``).
"""

from dataclasses import dataclass, field

from .._lazy import lazy_namespace

__all__ = ["CORES", "DEFAULT_CORE", "CoreEntry", "make_core", "core_class", "DrabLocus",
           "DrabLocusDatapath", "Compact8", "LutRound", "TTableBasic", "TTableRound",
           "TTableUnrolled", "KeySchedule", "Op", "KeyBits"]


@dataclass(frozen=True)
class CoreEntry:
    """One core of the table: where its class lives and what it is."""

    module: str
    cls: str
    description: str
    #: Options the default (not ``slow``) test runs build the core with, for a core whose
    #: default build is too big to simulate in seconds; the slow runs build the default.
    quick_options: dict = field(default_factory=dict)


#: Cores by name.
CORES = {
    "drab-locus": CoreEntry(
        "drab_locus", "DrabLocus", "DRAB-LOCUS core: key schedule + 12-stage BRAM/DSP48E1 ring"),
    "drab-locus-datapath": CoreEntry(
        "drab_locus", "DrabLocusDatapath",
        "DRAB-LOCUS ring alone (round keys written through its rk stream)"),
    "compact8": CoreEntry(
        "compact8", "Compact8", "8-bit datapath, serial MixColumns, 16 Nr cycles per block"),
    "ttable-basic": CoreEntry(
        "ttable.basic", "TTableBasic",
        "T-table basic module: one column per cycle, 2 T-table BRAMs + 4 XOR lanes, 2 blocks"),
    "ttable-round": CoreEntry(
        "ttable.round", "TTableRound",
        "T-table round module: 4 columns of 2 T-table BRAMs + 4 cascaded XOR lanes, 8 blocks"),
    "ttable-unrolled": CoreEntry(
        "ttable.unrolled", "TTableUnrolled",
        "T-table unrolled: round modules in a row, one block per cycle (unroll= fewer rounds)",
        quick_options={"unroll": 2}),
    "lut-round": CoreEntry(
        "lut_round", "LutRound",
        "LUT-ROUND core: one round per cycle in LUTs, round keys expanded beside the rounds"),
}

#: The core a design gets when none is named.
DEFAULT_CORE = "drab-locus"

# Where each name of the package is defined: every core of the table, and the parts they share.
_WHERE = {**{entry.cls: f".{entry.module}" for entry in CORES.values()},
          "KeySchedule": ".key_schedule", "Op": ".interface", "KeyBits": ".interface"}


def core_class(name=DEFAULT_CORE):
    """The class of the core called ``name`` (a key of :data:`CORES`)."""
    try:
        entry = CORES[name]
    except (KeyError, TypeError):
        raise ValueError(f"core: {name!r} is not known; choose from {', '.join(CORES)}") \
            from None
    return __getattr__(entry.cls)


def make_core(name=DEFAULT_CORE, **options):
    """Make the core called ``name`` with ``options`` (``key_slots``, ``key_sizes``,
    ``tag_width``, ...: the core class's keyword arguments)."""
    return core_class(name)(**options)


__getattr__, __dir__ = lazy_namespace(__name__, _WHERE)
