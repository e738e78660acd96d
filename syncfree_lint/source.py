"""Reading source files: bytes to text honouring PEP 263 cookies and BOMs."""
from __future__ import annotations

import codecs
import re

_COOKIE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")
_BLANK = re.compile(rb"^[ \t\f]*(?:[#\r\n]|$)")


class SourceError(Exception):
    """The file cannot be turned into text; carries a 1-based line and column."""

    def __init__(self, message: str, line: int = 1, col: int = 1) -> None:
        super().__init__(message)
        self.line = line
        self.col = col


def detect_encoding(data: bytes) -> str:
    """Return the encoding Python would use for ``data`` (PEP 263 and BOM)."""
    bom = data.startswith(codecs.BOM_UTF8)
    if bom:
        data = data[3:]
    lines = data.split(b"\n", 2)[:2]
    for index, line in enumerate(lines):
        match = _COOKIE.match(line)
        if match:
            name = match.group(1).decode("ascii", "replace")
            try:
                enc = codecs.lookup(name).name
            except LookupError:
                raise SourceError(f"unknown encoding in coding cookie: {name!r}", index + 1, 1)
            if bom and enc != "utf-8":
                raise SourceError(f"encoding cookie {name!r} conflicts with the UTF-8 BOM", index + 1, 1)
            return enc
        if not _BLANK.match(line):
            break
    return "utf-8"


def decode_source(data: bytes) -> str:
    """Decode ``data`` to text; the BOM is dropped. Raises SourceError with the position."""
    encoding = detect_encoding(data)
    body = data[3:] if data.startswith(codecs.BOM_UTF8) else data
    try:
        text = body.decode(encoding)
    except UnicodeDecodeError as exc:
        line = body[: exc.start].count(b"\n") + 1
        col = exc.start - (body.rfind(b"\n", 0, exc.start) + 1) + 1
        raise SourceError(f"cannot decode as {encoding}: {exc.reason} (byte 0x{body[exc.start]:02x})", line, col)
    if "\x00" in text:
        index = text.index("\x00")
        line = text.count("\n", 0, index) + 1
        raise SourceError("source contains a NUL byte", line, index - text.rfind("\n", 0, index))
    return text
