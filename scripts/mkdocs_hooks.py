"""MkDocs hook (mkdocs.yml ``hooks:``): the code's docstrings use Sphinx roles for the readers of
the source (``:class:`~truecall.errors.ProtocolError```); on the site they read as the name in code
type, as Sphinx shows them (``~`` keeps only the last part)."""

from __future__ import annotations

import re
from typing import Any

_ROLE = re.compile(r":(?:class|meth|func|mod|attr|exc|data|obj):<code>(~?)([^<]+)</code>")


def _name(match: re.Match[str]) -> str:
    short, target = match.group(1), match.group(2)
    return f"<code>{target.rsplit('.', 1)[-1] if short else target}</code>"


def on_page_content(html: str, **kwargs: Any) -> str:
    return _ROLE.sub(_name, html)
