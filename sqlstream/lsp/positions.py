"""Offsets in a document's text and LSP positions (line, character).

LSP counts characters in UTF-16 code units by default (``PositionEncodingKind``); a
client may offer UTF-8 or UTF-32 instead. :class:`Lines` converts both ways in time
proportional to the length of one line (a bisection over line starts), so a file with
hundreds of findings is converted in well under a millisecond per finding. A lone
surrogate (a JSON string may hold one) counts as one UTF-16 unit, as a JavaScript client
counts it, and as three UTF-8 bytes (U+FFFD, what it is decoded as).
"""

from __future__ import annotations

import bisect


class Lines:
    """Line starts of ``text`` and conversions for ``encoding`` (``utf-16``, ``utf-8`` or
    ``utf-32``: the unit LSP's ``character`` counts)."""

    def __init__(self, text: str, encoding: str = "utf-16") -> None:
        self.text = text
        self.encoding = encoding
        self.starts = [0]
        position = text.find("\n")
        while position != -1:
            self.starts.append(position + 1)
            position = text.find("\n", position + 1)

    def _units(self, chars: str) -> int:
        if self.encoding == "utf-32" or chars.isascii():
            return len(chars)
        if self.encoding == "utf-8":
            return len(chars.encode("utf-8", "surrogatepass"))
        return len(chars.encode("utf-16-le", "surrogatepass")) // 2

    def position(self, offset: int) -> tuple[int, int]:
        """``(line, character)``, both 0-based, of character ``offset`` (clamped to the text)."""
        offset = max(0, min(offset, len(self.text)))
        line = bisect.bisect_right(self.starts, offset) - 1
        return line, self._units(self.text[self.starts[line] : offset])

    def offset(self, line: int, character: int) -> int:
        """The character offset of LSP position ``(line, character)`` (clamped to the line)."""
        if line >= len(self.starts):
            return len(self.text)
        start = self.starts[max(0, line)]
        stop = self.starts[line + 1] - 1 if line + 1 < len(self.starts) else len(self.text)
        segment = self.text[start:stop]
        if self.encoding == "utf-32" or segment.isascii():
            return start + min(character, len(segment))
        units = 0
        for index, char in enumerate(segment):
            if units >= character:
                return start + index
            units += self._units(char)
        return stop
