"""Markdown text that shows what a roster says, never runs it.

Unit names, roster descriptions and error messages come from user files. In a
Markdown file (``summary.md``, ``index.md``), ``<script>`` or ``<img onerror=...>``
would be live HTML on most renderers, ``[x](javascript:...)`` a link, and a ``|``
or a line break would break a table. :func:`md_text` escapes HTML (as
``report.html`` does) and the Markdown punctuation that builds links, emphasis and
tables; :func:`md_cell` also keeps a table cell on one line.
"""

from __future__ import annotations

import html
import re
from typing import Any
from urllib.parse import quote

__all__ = ["md_text", "md_cell", "md_link"]

# Markdown punctuation that builds links and images ([...]), code, emphasis and tables; an
# underscore inside a word is never emphasis in CommonMark, so names like win_rate stay readable
_SPECIAL = re.compile(r"([\\`*\[\]|])")


def md_text(value: Any) -> str:
    """``value`` as Markdown text that renders literally (HTML escaped, link/emphasis marks escaped)."""
    text = html.escape(str(value), quote=False)
    return _SPECIAL.sub(r"\\\1", text)


def md_cell(value: Any) -> str:
    """:func:`md_text` on one line (for table cells)."""
    return md_text(" ".join(str(value).split()))


def md_link(text: Any, target: str) -> str:
    """A link whose text is escaped and whose target is percent-encoded (a relative path stays a path)."""
    return f"[{md_cell(text)}]({quote(target, safe='/.#')})"
