"""The table command's CSV flags, read by ``pipeline/migrate_table.py``; the CSV reader itself is
shared by every source that reads CSV: ``transforms/sources/csv_rows.py``.

Example::

    delimiter_option("tab")   # "\\t"
"""

from __future__ import annotations

from transforms.sources.csv_rows import delimiter_option, encoding_option

__all__ = ["delimiter_option", "encoding_option"]
