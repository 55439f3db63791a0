"""Regenerate the README's measured figures from the commands that produce them.

A maintainer's tool, not part of the installed package. Every generated part of ``README.md``
sits between two marker lines, the first naming the command that produces it
(:mod:`readme_markers`)::

    <!-- figures:core-cycles begin: aes-fpga bench --core drab-locus --key-size N ... -->
    | key | latency (cycles) | ...
    <!-- figures:core-cycles end -->

The text between the markers (and the command in the begin marker) is rewritten from
:data:`readme_sections.SECTIONS`; the rest of the file is left as it is, byte for byte. Only
deterministic figures (cycle counts, Yosys utilisation) belong inside markers: wall-clock times
vary from run to run and machine to machine, so the README states them in plain text, with the
machine.

Usage::

    python tools/readme_figures.py                      # rerun everything, rewrite README.md
    python tools/readme_figures.py --check              # compare only: exit 1, printing a
                                                        # unified diff per differing section
    python tools/readme_figures.py --only core-cycles key-load
    python tools/readme_figures.py --readme OTHER.md    # another file (default: the README.md
                                                        # beside tools/)

Exit status: 0 when the sections were written (or, with ``--check``, all equal), 1 when
``--check`` found a difference, 2 when the README's markers are malformed or a command failed.
The commands run in this process (``aes_fpga.cli.main`` with its standard output captured), so
each figure comes from exactly the code path a user's command takes. A full run synthesizes with
Yosys ten times and simulates the serial appliance: several minutes; progress goes to
standard error.
"""

import argparse
import difflib
import sys
import time
from pathlib import Path

# Run as a script, this folder is on the module path (the tests put it there).
from readme_markers import (
    FiguresError,
    Span,
    parse_sections,
    render_section,
    replace_sections,
    section_text,
)
from readme_sections import (
    ETHERNET_BENCHES,
    SECTIONS,
    Runner,
    cycles_row,
    ethernet_bench_row,
    table_row,
)

__all__ = ["SECTIONS", "FiguresError", "Runner", "Span", "parse_sections", "replace_sections",
           "section_text", "table_row", "cycles_row", "ethernet_bench_row", "ETHERNET_BENCHES",
           "generate", "check", "main", "DEFAULT_README"]

#: The repository's README, beside this folder.
DEFAULT_README = Path(__file__).resolve().parent.parent / "README.md"


def generate(names, runner, log=None):
    """Run the sections ``names``; returns name -> ``(command, body)``."""
    log = log or runner.log
    start, out = time.monotonic(), {}
    for i, name in enumerate(names, 1):
        section = SECTIONS[name]
        t = time.monotonic()
        log(f"readme_figures: [{i}/{len(names)}] {name}: {section.command}")
        out[name] = (section.command, section.generate(runner))
        log(f"readme_figures: [{i}/{len(names)}] {name}: {time.monotonic() - t:.1f} s "
            f"(total {time.monotonic() - start:.1f} s)")
    return out


def check(text, new, readme_name="README.md"):
    """``(name, unified diff)`` for each section in ``new`` that differs from ``text`` (an
    empty list: all equal)."""
    spans = {s.name: s for s in parse_sections(text, SECTIONS)}
    diffs = []
    for name, (command, body) in new.items():
        old = section_text(text, spans[name])
        fresh = render_section(name, command, body)
        if old != fresh:
            diffs.append((name, "".join(difflib.unified_diff(
                old.splitlines(keepends=True), fresh.splitlines(keepends=True),
                fromfile=f"{readme_name} (section {name}, line {spans[name].begin + 1})",
                tofile=f"{name} as generated now"))))
    return diffs


def _read(path):
    # Bytes, not read_text(): universal newlines would turn CRLF into LF outside the sections.
    return path.read_bytes().decode("utf-8")


def main(argv=None, *, sections=None, runner=None):
    """The command line; ``sections`` (name -> ``(command, body)``) and ``runner`` replace the
    generation step, for tests."""
    parser = argparse.ArgumentParser(
        prog="python tools/readme_figures.py",
        description="Rerun the commands behind the README's generated figures and rewrite the "
                    "sections between their '<!-- figures:NAME begin: COMMAND -->' and "
                    "'<!-- figures:NAME end -->' markers.")
    parser.add_argument("--check", action="store_true",
                        help="compare only, write nothing; exit 1 and print a unified diff for "
                             "every section that differs")
    parser.add_argument("--only", nargs="+", metavar="NAME", choices=list(SECTIONS),
                        help=f"only these sections ({', '.join(SECTIONS)})")
    parser.add_argument("--readme", type=Path, default=DEFAULT_README,
                        help="the Markdown file (default: the repository's README.md)")
    args = parser.parse_args(argv)

    def fail(message):
        print(f"readme_figures: error: {message}", file=sys.stderr)
        return 2

    try:
        text = _read(args.readme)
        # Malformed markers are reported before minutes are spent generating anything.
        present = [s.name for s in parse_sections(text, SECTIONS)]
    except (OSError, FiguresError) as e:
        return fail(e)
    names = list(dict.fromkeys(args.only)) if args.only else list(SECTIONS)
    missing = [n for n in names if n not in present]
    if missing:
        return fail(f"{args.readme} has no section {', '.join(map(repr, missing))} (markers "
                    f"'<!-- figures:NAME begin: COMMAND -->' ... '<!-- figures:NAME end -->')")

    if sections is None:
        work = args.readme.resolve().parent / "build"
        work.mkdir(exist_ok=True)
        try:
            sections = generate(names, runner or Runner(
                work, root=args.readme.resolve().parent))
        except FiguresError as e:
            return fail(e)
    new = {n: sections[n] for n in names}

    if args.check:
        diffs = check(text, new, args.readme.name)
        for _, d in diffs:
            sys.stdout.write(d if d.endswith("\n") else d + "\n")
        if diffs:
            print(f"readme_figures: {len(diffs)} section(s) differ from what the commands print "
                  f"now: {', '.join(n for n, _ in diffs)}; run python tools/readme_figures.py "
                  f"to update {args.readme}", file=sys.stderr)
            return 1
        print(f"readme_figures: {len(new)} section(s) up to date", file=sys.stderr)
        return 0

    # Read the file again: it may have been edited while the commands ran.
    try:
        text = _read(args.readme)
        updated = replace_sections(text, new, SECTIONS)
    except (OSError, FiguresError) as e:
        return fail(e)
    if updated != text:
        args.readme.write_bytes(updated.encode("utf-8"))
    changed = len(check(text, new, args.readme.name))
    print(f"readme_figures: {len(new)} section(s) generated, {changed} changed in {args.readme}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
