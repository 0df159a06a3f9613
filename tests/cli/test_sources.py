"""Reading source bytes into text: encodings, BOM, line endings, bad files."""

from __future__ import annotations

import hashlib
import io

from jaxmem.findings import Confidence, Severity
from jaxmem.sources import read_source

from .conftest import write


def test_utf8_is_read_as_is(tmp_path):
    path = write(tmp_path, "a.py", "name = 'naïve'\n")
    source = read_source(str(path))
    assert source.text == "name = 'naïve'\n"
    assert source.problem is None
    assert source.digest == hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_utf8_bom_is_dropped(tmp_path):
    path = write(tmp_path, "a.py", b"\xef\xbb\xbfx = 1\n")
    assert read_source(str(path)).text == "x = 1\n"


def test_a_pep263_cookie_selects_the_encoding(tmp_path):
    data = "# -*- coding: latin-1 -*-\nname = 'café'\n".encode("latin-1")
    path = write(tmp_path, "a.py", data)
    source = read_source(str(path))
    assert source.problem is None
    assert source.text == "# -*- coding: latin-1 -*-\nname = 'café'\n"


def test_latin1_without_cookie_is_a_jxm900_naming_byte_and_line(tmp_path):
    path = write(tmp_path, "a.py", "x = 1\nname = 'café'\n".encode("latin-1"))
    source = read_source(str(path))
    assert source.text is None
    finding = source.problem
    assert finding.code == "JXM900"
    assert finding.severity is Severity.ERROR
    assert finding.confidence is Confidence.HIGH
    assert finding.path == str(path)
    assert (finding.span.line, finding.span.col) == (2, 11)
    assert "cannot decode byte 0xe9 as utf-8" in finding.message
    assert "coding" in finding.message


def test_an_unknown_cookie_is_a_jxm900(tmp_path):
    path = write(tmp_path, "a.py", b"# coding: klingon\nx = 1\n")
    finding = read_source(str(path)).problem
    assert finding.code == "JXM900"
    assert "bad encoding declaration" in finding.message
    assert "klingon" in finding.message


def test_crlf_line_endings_are_kept(tmp_path):
    path = write(tmp_path, "a.py", b"x = 1\r\ny = 2\r\n")
    assert read_source(str(path)).text == "x = 1\r\ny = 2\r\n"


def test_an_empty_file_is_empty_text(tmp_path):
    path = write(tmp_path, "a.py", b"")
    source = read_source(str(path))
    assert source.text == ""
    assert source.problem is None


def test_nul_bytes_are_a_jxm900(tmp_path):
    path = write(tmp_path, "a.py", b"x = 1\ny = \x00\n")
    finding = read_source(str(path)).problem
    assert finding.code == "JXM900"
    assert (finding.span.line, finding.span.col) == (2, 4)
    assert "NUL byte" in finding.message


def test_an_unreadable_path_is_a_jxm900_not_an_exception(tmp_path):
    folder = tmp_path / "looks_like_a_file.py"
    folder.mkdir()
    finding = read_source(str(folder)).problem
    assert finding.code == "JXM900"
    assert finding.message.startswith("not a regular file (a folder)")


def test_stdin_is_read_and_named_by_stdin_filename():
    source = read_source("-", stdin_filename="train.py", stdin=io.BytesIO(b"x = 1\n"))
    assert (source.path, source.text) == ("train.py", "x = 1\n")
    unnamed = read_source("-", stdin=io.BytesIO(b"x = 1\n"))
    assert unnamed.path == "<stdin>"


def test_a_non_utf8_first_line_names_the_byte(tmp_path):
    path = write(tmp_path, "a.py", "# café\nx = 1\n".encode("latin-1"))
    finding = read_source(str(path)).problem
    assert (finding.span.line, finding.span.col) == (1, 5)
    assert "cannot decode byte 0xe9 as utf-8" in finding.message
