"""The application: the `zomboss` command line (`cli`, with its argument types in `arguments`
and its progress lines in `display`), `kb check` on files (`check`), the suite bench (`bench`)
and the `clingo` driver (`clingo_cli`). The top of the data flow: it may
import every package, and no package imports it.
"""

from __future__ import annotations

from zomboss.app.cli import main

__all__ = ["main"]
