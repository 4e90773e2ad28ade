"""What comes out: the result records every target and solver reports, with their one JSON
convention and one `speedup` (`records`), the SQLite results
store shared by `solve` and `bench` (`store`), and the bench report with its plots
(`report`). Imports only `util` and `errors`.
"""

from __future__ import annotations

from zomboss.results.records import KernelResult, Record, speedup
from zomboss.results.report import (
    WrittenReport,
    compare_rows,
    compare_summary,
    markdown,
    point_latest,
    read_best,
    read_table,
    rows_of,
    run_folder,
    write_report,
)
from zomboss.results.store import Store

__all__ = [
    "KernelResult",
    "Record",
    "Store",
    "WrittenReport",
    "compare_rows",
    "compare_summary",
    "markdown",
    "point_latest",
    "read_best",
    "read_table",
    "rows_of",
    "run_folder",
    "speedup",
    "write_report",
]
