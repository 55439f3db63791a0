"""A build as a sequence of stages: each one timed, announced and recorded with its outcome, and
the external tools it runs logged into the build folder.

A stage is a function; it returns a one-line detail (or nothing) when done, or raises
:class:`Stop` to end the build there: a tool is ``"missing"`` (everything before it has run) or
has ``"failed"``.
"""

import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Stage", "StageRunner", "Stop", "missing", "run_tool"]


@dataclass
class Stage:
    """One stage of a build: its name, outcome, duration and a detail line."""
    name: str
    status: str           # "done", "skipped", "missing", "failed"
    seconds: float = 0.0
    detail: str = ""


class Stop(Exception):
    """Raised by a stage to end the build: ``status`` is ``"missing"`` or ``"failed"``,
    ``detail`` says why."""

    def __init__(self, status, detail):
        super().__init__(detail)
        self.status = status
        self.detail = detail


class StageRunner:
    """Runs the stages of one build in order, numbering them and telling ``progress`` (a
    callable taking one line) when each starts and ends; :attr:`stages` holds every
    :class:`Stage` run."""

    def __init__(self, build_dir, progress):
        self.build_dir = build_dir
        self.progress = progress
        self.stages = []
        self.count = 0

    def run(self, name, func):
        """Run stage ``func`` under ``name``; whether it is done (the build goes on)."""
        self.count += 1
        start = time.monotonic()
        self.progress(f"[{self.count}] {name} ...")
        try:
            detail = func() or ""
            status = "done"
        except Stop as stop:
            status, detail = stop.status, stop.detail
        seconds = time.monotonic() - start
        self.stages.append(Stage(name, status, seconds, detail))
        self.progress(f"[{self.count}] {name}: {status} ({seconds:.1f} s)"
                      + (f": {detail}" if detail and status != "done" else ""))
        return status == "done"


def run_tool(cmd, cwd, log_name, stdout_file=None, timeout=None):
    """Run ``cmd`` in folder ``cwd``, its output logged to ``cwd/log_name`` (its standard output
    to ``cwd/stdout_file`` when given); raises :class:`Stop` ("failed", with the log's last
    lines) when it fails or runs longer than ``timeout`` seconds."""
    with open(cwd / log_name, "w") as log:
        out = open(cwd / stdout_file, "w") if stdout_file else log
        try:
            proc = subprocess.run(cmd, cwd=cwd, stdout=out, stderr=log,
                                  stdin=subprocess.DEVNULL, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise Stop("failed", f"{Path(cmd[0]).name} had not finished after {timeout:g} s "
                                 f"and was stopped; a router can go round in circles on one "
                                 f"placement (set AES_FPGA_ROUTE_TIMEOUT to wait longer)"
                       ) from None
        finally:
            if stdout_file:
                out.close()
    if proc.returncode != 0:
        tail = "\n".join((cwd / log_name).read_text(errors="replace").splitlines()[-15:])
        raise Stop("failed", f"{Path(cmd[0]).name} exited with status {proc.returncode}; "
                             f"see {cwd / log_name}\n{tail}")


def missing(report, tool, what):
    """Stop the build because ``tool`` (described as ``what``) is not installed, recording it
    as the report's ``missing_tool``."""
    report["missing_tool"] = tool
    raise Stop("missing", f"{what} not found; set ${tool.upper().replace('-', '_')} or put "
                          f"it on PATH")
