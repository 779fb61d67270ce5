"""What a rendering already shows of its text: the real lines it quotes, however it marks them.

A fill adds lines to a rendering (``organs.stomach.core.relevance``, a log's own excerpt under its templates); a
line the rendering quotes already, as an example, a counted line or a kept row, says nothing new there.
"""

from __future__ import annotations

import re

from organs.stomach.core.distill.log.display import ALERT_MARK, ASK_MARK
from organs.stomach.core.distill.table import KEPT_MARK

__all__ = ["shown_lines"]

# What a rendering puts around a real line it quotes: an example's lead, a count, and the note after it (a log's
# template notes, a table row's ``◂`` reasons).
_QUOTE_LEAD = re.compile(r"^\s*(?:e\.g\. |! ?×[\d,]+ |×[\d,]+ )?")
_QUOTE_NOTE = re.compile(
    rf"(?:{re.escape(ASK_MARK)}|{re.escape(ALERT_MARK)}| \(last [^)]*\))$|{re.escape(KEPT_MARK)}.*$"
)


def shown_lines(rendering: str) -> set[str]:
    """The rendering's lines, stripped, and each as the real line it quotes (lead and note taken off)."""
    shown = set()
    for line in rendering.split("\n"):
        shown.add(line.strip())
        shown.add(_QUOTE_NOTE.sub("", _QUOTE_LEAD.sub("", line, count=1)).strip())
    return shown
