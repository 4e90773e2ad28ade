"""The application: the `zomboss` command line (`cli`, with its argument types in `arguments`
and its progress lines in `display`), `kb check` on files (`check`) and the suite bench
(`bench`). The top of the data flow but for the Python API (`zomboss.api`, which calls it): it
may import every package, and no package but that one imports it.
"""

from __future__ import annotations

from zomboss.app.cli import main

__all__ = ["main"]
