"""What comes out: the result records every target and solver reports, with their one JSON
convention and one `speedup` (`records`), the SQLite results
store shared by `solve` and `bench` (`store`), and the bench report with its plots
(`report`). Imports only `util` and `errors`.
"""

from __future__ import annotations

from zomboss.results.records import KernelResult, Record, speedup
from zomboss.results.report import compare_rows, compare_summary, markdown, read_best, rows_of, write_report
from zomboss.results.store import Store

__all__ = [
    "KernelResult",
    "Record",
    "Store",
    "compare_rows",
    "compare_summary",
    "markdown",
    "read_best",
    "rows_of",
    "speedup",
    "write_report",
]
