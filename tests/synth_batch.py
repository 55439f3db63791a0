"""Many small designs through one Yosys run: what a test file's mapping checks synthesize.

Each ``synth_xilinx`` run pays several seconds before it looks at the design (starting Yosys,
parsing the cell libraries), which for the small primitives is nearly all of it.
:func:`synthesize_batch` converts each design on its own, exactly as
:func:`aes_fpga.flow.synth.synthesize` does, with its case name as the top module name, puts
them in one RTLIL file under a top module that instantiates each once, marks every case module
``keep_hierarchy`` and runs :func:`aes_fpga.flow.synth.synth_script` (the script of
``synthesize``, ``-flatten`` included) on the whole. Flattening then stops at the case modules:
each is flattened inside as its own run would be, and Yosys optimises within modules, so each
case module comes out as the single run's top module (checked by each batch's slow
``test_batch_cells_equal_flattened_runs``). The result goes through the synthesis cache like
any other run.
"""

import json
import re
from pathlib import Path

from amaranth.back import rtlil

from aes_fpga.flow.synth import (
    DEFAULT_PART,
    SynthResult,
    cached_yosys_outputs,
    count_cells,
    synth_script,
    synthesize,
)
from aes_fpga.flow.timing import analyse_netlist
from aes_fpga.flow.yosys import run_yosys
from aes_fpga.platform import part_platform

__all__ = ["synthesize_batch", "assert_batch_equals_single_runs", "depth_reports",
           "assert_batch_depths_equal_single_runs"]

_TOP = "batch"
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _case_netlist(netlist_text, name):
    """Module ``name`` of a ``write_verilog`` netlist and the modules below it (named
    ``\\name.…`` by Amaranth): the netlist of that case alone."""
    picked = [m.group(0) for m in re.finditer(r"^module (\S+?)\s*\(.*?^endmodule\n",
                                               netlist_text, re.M | re.S)
              if m.group(1) == name or m.group(1).startswith(f"\\{name}.")]
    if not picked:
        raise ValueError(f"module {name} not found in the batch netlist")
    return "".join(picked)


def synthesize_batch(designs, workdir, part=DEFAULT_PART, *, cache=None):
    """Synthesize ``designs`` (``{case name: component}``; names are Verilog identifiers) in one
    Yosys run in ``workdir``.

    Returns ``{case name: SynthResult}``: each result's ``total`` is that case module's cells
    (what ``synthesize(component, part).total`` gives) and its ``workdir`` (``workdir/<name>``)
    holds ``netlist.v``, the case's netlist with the case name as the top module, for
    :func:`aes_fpga.flow.postsynth.simulate_netlist` with ``name=<case name>``.
    """
    bad = [n for n in designs if not _NAME.match(n) or n == _TOP]
    if bad:
        raise ValueError(f"case names {bad} are not Verilog identifiers (or are {_TOP!r})")
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    platform = part_platform(part)
    texts = [rtlil.convert(component, name=name, platform=platform)
             for name, component in designs.items()]
    # The top instantiates each case once, with nothing connected; `keep` stops the unused
    # instances from being cleaned away.
    instances = "".join(f"  attribute \\keep 1\n  cell \\{name} \\{name}\n  end\n"
                        for name in designs)
    texts.append(f"attribute \\top 1\nmodule \\{_TOP}\n{instances}end\n")
    rtlil_text = "\n".join(texts)
    (workdir / "top.il").write_text(rtlil_text)
    # Only the batch top is a top: each case's own RTLIL marks it as one.
    script = synth_script(part, _TOP, setup=[
        f"setattr -mod -unset top {' '.join(designs)}",
        f"setattr -mod -set keep_hierarchy 1 {' '.join(designs)}"])
    (workdir / "synth.ys").write_text(script + "\n")
    from_cache = cached_yosys_outputs(
        (f"part={part}", script, rtlil_text), ("stat.json", "netlist.v", "netlist.json"), workdir,
        lambda: run_yosys(["-s", "synth.ys"], cwd=workdir), cache=cache)
    stat = json.loads((workdir / "stat.json").read_text())["modules"]
    netlist = (workdir / "netlist.v").read_text()
    results = {}
    for name in designs:
        module = stat.get(name, stat.get(f"\\{name}"))
        if module is None:
            raise ValueError(f"case {name} is not a module of the batch netlist "
                             f"(modules: {sorted(stat)})")
        folder = workdir / name
        folder.mkdir(exist_ok=True)
        (folder / "netlist.v").write_text(_case_netlist(netlist, name))
        results[name] = SynthResult(part=part, total=count_cells(module.get(
            "num_cells_by_type", {})), workdir=folder, from_cache=from_cache)
    return results


def assert_batch_equals_single_runs(designs, batch, workdir, part=DEFAULT_PART):
    """``batch`` (what :func:`synthesize_batch` gave for ``designs``) has the cells of one
    :func:`~aes_fpga.flow.synth.synthesize` run per design (each in ``workdir/<name>``), case
    by case: the batch measures what it stands in for."""
    single = {name: synthesize(component, part, workdir=Path(workdir) / name)
              for name, component in designs.items()}
    assert set(single) == set(batch)
    for name, res in single.items():
        assert batch[name].total == res.total, name


def depth_reports(designs, workdir, part=DEFAULT_PART):
    """``{case name: report}``: :func:`~aes_fpga.flow.timing.analyse_netlist` (every end point)
    of each case module of one :func:`synthesize_batch` run. ABC maps each case module alone,
    as the case's own run would."""
    synthesize_batch(designs, workdir, part)
    netlist = json.loads((Path(workdir) / "netlist.json").read_text())
    return {name: analyse_netlist(netlist, top=name, worst=1000) for name in designs}


def assert_batch_depths_equal_single_runs(designs, reports, part=DEFAULT_PART):
    """``reports`` (what :func:`depth_reports` gave for ``designs``) count what one
    :func:`~aes_fpga.flow.synth.synthesize` run per design counts: the same histogram and the
    same levels and CARRY4 cells at every end point (which of two equally deep starts a path
    names may differ between runs)."""
    def by_end(report):
        return {str(p.end): (p.levels, p.carry4) for p in report.paths}

    assert set(reports) == set(designs)
    for name, component in designs.items():
        single = analyse_netlist(synthesize(component, part).netlist_json, worst=1000)
        assert single.histogram == reports[name].histogram, name
        assert by_end(single) == by_end(reports[name]), name
