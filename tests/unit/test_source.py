"""Reading bytes into text: PEP 263 cookies, BOMs, bad bytes."""
import codecs

import pytest

from syncfree_lint.source import SourceError, decode_source, detect_encoding


def test_utf8_default_and_bom_dropped():
    assert decode_source(codecs.BOM_UTF8 + b"x = 1\n") == "x = 1\n"
    assert detect_encoding(b"x = 1\n") == "utf-8"


def test_coding_cookie_on_second_line():
    data = "#!/usr/bin/env python\n# -*- coding: latin-1 -*-\ns = 'caf\xe9'\n".encode("latin-1")
    assert detect_encoding(data) == "iso8859-1"
    assert "café" in decode_source(data)


def test_cookie_after_code_is_ignored():
    assert detect_encoding(b"x = 1\n# coding: latin-1\n") == "utf-8"


def test_undecodable_bytes_give_position():
    with pytest.raises(SourceError) as info:
        decode_source(b"x = 1\ny = '\xff'\n")
    assert info.value.line == 2 and info.value.col == 6


def test_unknown_cookie_and_bom_conflict():
    with pytest.raises(SourceError, match="unknown encoding"):
        decode_source(b"# coding: klingon\n")
    with pytest.raises(SourceError, match="conflicts"):
        decode_source(codecs.BOM_UTF8 + b"# coding: latin-1\n")


def test_nul_byte():
    with pytest.raises(SourceError, match="NUL"):
        decode_source(b"x = 1\n\x00\n")
