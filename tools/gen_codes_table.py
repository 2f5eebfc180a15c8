#!/usr/bin/env python
"""Print the finding codes table, generated from :mod:`sqlstream.diagnostics.codes`, or
rewrite the generated part of the docs' finding-codes page; with codes, print what each means::

    .venv/bin/python tools/gen_codes_table.py                       # print the table
    .venv/bin/python tools/gen_codes_table.py --page docs/codes.md  # rewrite the page's table and sections
    .venv/bin/python tools/gen_codes_table.py SS301 SS350           # severity, title, doc

``tests/diagnostics/test_codes.py`` fails when the page is not the generated one. Exit
status 2: an unknown code, or a page without the generated-text markers.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sqlstream.diagnostics.codes import CODES, markdown_table, replace_table


def main(argv: list[str] | None = None) -> int:
    """Run the command with ``argv`` (default: ``sys.argv[1:]``); return the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--page", type=Path, help="rewrite the generated part of this page")
    parser.add_argument("codes", nargs="*", metavar="CODE", help="print what these codes mean")
    args = parser.parse_args(argv)
    if args.page is not None:
        try:
            text = replace_table(args.page.read_text(encoding="utf-8"))
        except ValueError as error:
            print(f"{args.page}: {error}", file=sys.stderr)
            return 2
        args.page.write_text(text, encoding="utf-8")
    for name in args.codes:
        record = CODES.get(name.upper())
        if record is None:
            print(f"unknown code {name!r}; codes: {', '.join(CODES)}", file=sys.stderr)
            return 2
        print(f"{record.code} ({record.severity}): {record.title}\n\n{record.doc}\n")
    if args.page is None and not args.codes:
        print(markdown_table(), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
