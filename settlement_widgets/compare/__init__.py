"""One intent through every method, measured side by side; read, shown and published.

``wire`` reads a comparison's JSON strictly into a read-only view the widgets and the
endpoint use; ``published`` hands the last comparison of a network to the Jupyter server.
"""

from __future__ import annotations

from .published import comparison_path, publish_comparison, read_published
from .wire import ComparisonView, parse_comparison

__all__ = [
    "ComparisonView",
    "comparison_path",
    "parse_comparison",
    "publish_comparison",
    "read_published",
]
