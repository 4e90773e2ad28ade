"""`clingo` on PATH: the clingo application shipped inside the clingo Python package.

The pip distribution of clingo has the solver but no `clingo` executable; this exposes
its standard driver so `zomboss kb build --out g.lp && clingo g.lp` works after install.
"""

from __future__ import annotations

import sys

from clingo.application import Application, clingo_main


class _Clingo(Application):
    program_name = "clingo"


def main() -> None:
    sys.exit(clingo_main(_Clingo(), sys.argv[1:]))
