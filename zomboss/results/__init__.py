"""What comes out: the result records every target reports (`records`), the SQLite results
store shared by `solve` and `bench` (`store`), and the bench report with its plots
(`report`). Imports only `util` and `errors`.
"""

from __future__ import annotations

from zomboss.results.records import KernelResult
from zomboss.results.report import compare_rows, compare_summary, markdown, rows_of, write_report
from zomboss.results.store import Store

__all__ = ["KernelResult", "Store", "compare_rows", "compare_summary", "markdown", "rows_of", "write_report"]
