"""Static shape checks of Python source: ``ein.check("model.py")``, what
``einc check model.py`` does (docs/python-check.md), as a Python call.

The file is read by Python's own ``ast`` (in a child process) and never
imported or run. What the checker does not understand makes a value's shape
unknown, never an error; an error means the code and its jaxtyping
annotations provably disagree.
"""

import json as _json
import os as _os

from . import _ein

__all__ = ["Check", "check"]


class Check:
    """What checking one Python file found.

    ``ok``: no error; ``errors``: how many; ``diagnostics``: the errors and
    notes as einc prints them (``FILE:LINE:COL: error: ...``, the line, a
    caret); ``report``: the report's text (functions checked fully or partly,
    einops and torch calls checked and skipped, entry checks), and
    ``summary``: the same report as a dict (``einc check --json``); ``str()``
    is the diagnostics followed by the report, as einc prints them.
    """

    def __init__(self, path, result):
        self.path = path
        self.ok = result["ok"]
        self.errors = result["errors"]
        self.diagnostics = result["diagnostics"]
        self.report = result["report"]
        self.summary = _json.loads(result["json"]) if result["json"] else None

    def __bool__(self):
        return self.ok

    def __str__(self):
        return self.diagnostics + self.report

    def __repr__(self):
        state = "ok" if self.ok else f"{self.errors} error{'s' * (self.errors != 1)}"
        return f"<ein.Check {self.path!r}: {state}>"


def check(path=None, *, source=None, verbose=False):
    """Checks the Python file at ``path`` (or the text ``source``, named
    ``path`` or ``<source>`` in diagnostics) and returns a :class:`Check`.

    Raises ``ein.Error`` when the file cannot be read or no Python
    interpreter can be run to parse it (``python3``, or ``$EIN_PYTHON``).
    """
    if source is None:
        if path is None:
            raise TypeError("ein.check: give a path or source=")
        path = _os.fspath(path)
        return Check(path, _ein.check_python(path, verbose))
    name = "<source>" if path is None else _os.fspath(path)
    return Check(name, _ein.check_python_source(source, name, verbose))
