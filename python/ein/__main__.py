"""``python -m ein check FILE.py...``: the static shape check of Python
source, as ``einc check FILE.py`` prints it; exit status 1 when an error was
found, 2 for a usage error."""

import sys

from ._check import check
from ._ein import Error

USAGE = "usage: python -m ein check [--verbose] FILE.py..."


def main(argv):
    if not argv or argv[0] != "check":
        print(USAGE, file=sys.stderr)
        return 2
    verbose = "--verbose" in argv[1:]
    unknown = [a for a in argv[1:] if a.startswith("-") and a != "--verbose"]
    files = [a for a in argv[1:] if not a.startswith("-")]
    if unknown or not files:
        if unknown:
            print(f"python -m ein check: unknown option '{unknown[0]}'", file=sys.stderr)
        print(USAGE, file=sys.stderr)
        return 2
    status = 0
    for path in files:
        try:
            result = check(path, verbose=verbose)
        except Error as err:
            print(str(err), file=sys.stderr)
            status = 1
            continue
        sys.stderr.write(result.diagnostics)
        sys.stdout.write(result.report)
        if not result.ok:
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
