"""The README's generated sections: the marker lines around them, found and rewritten.

A generated section of a Markdown file sits between two marker lines, the first naming the
command that produces it::

    <!-- figures:core-cycles begin: aes-fpga bench --core drab-locus --key-size N ... -->
    | key | latency (cycles) | ...
    <!-- figures:core-cycles end -->

:func:`replace_sections` rewrites the text between the markers (and the command in the begin
marker); the rest of the file is kept byte for byte.
"""

import re
from dataclasses import dataclass

__all__ = [
    "FiguresError",
    "Span",
    "parse_sections",
    "render_section",
    "replace_sections",
    "section_text",
]

_MARKER_START = "<!-- figures:"
_MARKER = re.compile(r"<!-- figures:(?P<name>[a-z0-9][a-z0-9-]*) (?P<kind>begin|end)"
                     r"(?::[ ]?(?P<command>.*?))? -->")



class FiguresError(Exception):
    """The README's markers are malformed, or a command behind a section failed."""


@dataclass(frozen=True)
class Span:
    """One marked section: ``lines[begin]`` is its begin marker, ``lines[end]`` its end marker
    (indices into ``text.splitlines(keepends=True)``)."""
    name: str
    command: str
    begin: int
    end: int


def parse_sections(text, known=None):
    """The marked sections of ``text``, in order; raises :class:`FiguresError` naming the first
    problem: a malformed marker, a section without its end marker, an end marker without its
    begin marker, a section marked twice, or (when ``known`` is given) a name not in ``known``.
    """
    spans, open_ = [], None
    for i, line in enumerate(text.splitlines(keepends=True)):
        stripped = line.rstrip("\r\n")
        if not stripped.lstrip().startswith(_MARKER_START):
            continue
        m = _MARKER.fullmatch(stripped)
        if m is None:
            raise FiguresError(f"line {i + 1}: malformed figures marker {stripped!r}; expected "
                               f"'<!-- figures:NAME begin: COMMAND -->' or "
                               f"'<!-- figures:NAME end -->' alone on its line")
        name, kind = m["name"], m["kind"]
        if known is not None and name not in known:
            raise FiguresError(f"line {i + 1}: section {name!r} is not known; known sections: "
                               f"{', '.join(known)}")
        if kind == "begin":
            if open_ is not None:
                raise FiguresError(f"section {open_[0]!r} (line {open_[2] + 1}) has no end "
                                   f"marker before section {name!r} begins on line {i + 1}")
            if any(s.name == name for s in spans):
                raise FiguresError(f"line {i + 1}: section {name!r} is marked twice")
            open_ = (name, m["command"] or "", i)
        else:
            if m["command"] is not None:
                raise FiguresError(f"line {i + 1}: the end marker of section {name!r} names a "
                                   f"command; only begin markers do")
            if open_ is None or open_[0] != name:
                raise FiguresError(f"line {i + 1}: end marker of section {name!r} without its "
                                   f"begin marker")
            spans.append(Span(name, open_[1], open_[2], i))
            open_ = None
    if open_ is not None:
        raise FiguresError(f"section {open_[0]!r} (line {open_[2] + 1}) has no end marker "
                           f"'<!-- figures:{open_[0]} end -->'")
    return spans


def _begin_marker(name, command):
    return f"<!-- figures:{name} begin: {command} -->"



def section_text(text, span):
    """The begin marker and body of ``span`` in ``text``, as written."""
    lines = text.splitlines(keepends=True)
    return "".join(lines[span.begin:span.end])


def render_section(name, command, body):
    """The begin marker and ``body`` of section ``name`` as written into the file."""
    body = body if body.endswith("\n") or not body else body + "\n"
    return _begin_marker(name, command) + "\n" + body


def replace_sections(text, new, known=None):
    """``text`` with the sections named in ``new`` (name -> ``(command, body)``) rewritten: the
    begin marker names ``command``, ``body`` goes between the markers. Everything outside the
    rewritten sections, their end markers included, is kept byte for byte."""
    spans = {s.name: s for s in parse_sections(text, known)}
    missing = [name for name in new if name not in spans]
    if missing:
        raise FiguresError(f"the README has no section {', '.join(map(repr, missing))} "
                           f"(markers '<!-- figures:NAME begin: ... -->')")
    lines = text.splitlines(keepends=True)
    out, pos = [], 0
    for span in sorted(spans.values(), key=lambda s: s.begin):
        if span.name not in new:
            continue
        out += lines[pos:span.begin]
        command, body = new[span.name]
        out.append(render_section(span.name, command, body))
        pos = span.end
    out += lines[pos:]
    return "".join(out)


