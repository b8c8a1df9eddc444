"""9.5, 10.3 Encodings: files are read as Python reads them (BOM, coding cookie); a file that
does not decode is one error line and the run goes on; a file name that is not UTF-8, or a
console that cannot show a character, breaks no output format."""

from __future__ import annotations

import json
import os

import pytest

from loopcheck.workspace.files import SourceError, decode_source

from .helpers import BAD, LC101_LINE, cli, cli_process, reported_files

LATIN1 = "# -*- coding: latin-1 -*-\n# café, naïve\n" + BAD
KOI8 = "# -*- coding: koi8-r -*-\nGREETING = 'привет'\n" + BAD


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("name,data,row", [
    ("latin1.py", LATIN1.encode("latin-1"), 11),
    ("koi8.py", KOI8.encode("koi8-r"), 11),
    ("bom.py", b"\xef\xbb\xbf" + BAD.encode(), 9),
    ("vim_cookie.py", ("#!/usr/bin/env python\n# vim: set fileencoding=latin-1 :\n# é\n" + BAD).encode("latin-1"), 12),
])
def test_files_with_a_bom_or_a_coding_cookie_are_checked(project, name, data, row):
    (project / name).write_bytes(data)
    result = cli("--output-format", "concise", name)
    assert result.exit_code == 1, result.output
    assert result.stdout.splitlines()[0].startswith(f"{name}:{row}:5: LC101 ")


def test_a_non_utf8_file_without_a_cookie_is_one_error_line_and_the_run_goes_on(project):
    (project / "bad.py").write_text(BAD)
    (project / "latin.py").write_bytes(("import torch\n# café\n" + BAD).encode("latin-1"))
    (project / "unknown.py").write_bytes(b"# -*- coding: klingon -*-\n" + BAD.encode() + b"# \xff\n")
    (project / "contradiction.py").write_bytes(b"\xef\xbb\xbf# -*- coding: latin-1 -*-\n" + BAD.encode())
    result = cli("--output-format", "concise", ".")
    assert result.exit_code == 2  # unreadable input
    assert reported_files(result.stdout) == ["bad.py"]
    assert result.stdout.splitlines()[0].startswith(LC101_LINE)
    assert "All checks passed!" not in result.stdout
    assert sorted(result.stderr.splitlines()) == [
        "loopcheck: cannot read contradiction.py: encoding problem: utf-8",
        "loopcheck: cannot read latin.py: Non-UTF-8 code starting with '\\xe9' on line 2, but no encoding "
        "declared; see https://peps.python.org/pep-0263/ for details",
        "loopcheck: cannot read unknown.py: unknown encoding: klingon",
    ]


def test_a_codec_a_package_registers_is_read_as_utf8(project):
    # ``coding: future_fstrings`` names a codec registered at import: the text is UTF-8
    (project / "fstrings.py").write_bytes("# -*- coding: future_fstrings -*-\n# café\n".encode() + BAD.encode())
    result = cli("--output-format", "concise", "fstrings.py")
    assert result.exit_code == 1, result.output
    assert reported_files(result.stdout) == ["fstrings.py"]
    assert result.stderr == ""


def test_decode_source_keeps_what_it_needs_to_write_back():
    src = decode_source(b"\xef\xbb\xbfx = 1\r\ny = 2\r\n")
    assert (src.text, src.encoding, src.bom, src.newline) == ("x = 1\r\ny = 2\r\n", "utf-8", True, "\r\n")
    assert src.program == "x = 1\ny = 2\n"
    assert src.encode(src.text) == b"\xef\xbb\xbfx = 1\r\ny = 2\r\n"
    src = decode_source("# coding: latin-1\nx = 'é'\r".encode("latin-1"))
    assert (src.encoding, src.newline, src.program) == ("iso-8859-1", "\n", "# coding: latin-1\nx = 'é'\n")
    with pytest.raises(SourceError, match="on line 3"):
        decode_source(b"x = 1\ny = 2\nz = '\xff'\n")


def _non_utf8_name(project) -> str:
    raw = b"caf\xe9.py"
    try:
        with open(os.path.join(os.fsencode(project), raw), "wb") as f:
            f.write(BAD.encode())
    except (OSError, UnicodeError):
        pytest.skip("this file system does not take a file name that is not UTF-8")
    return os.fsdecode(raw)


@pytest.mark.parametrize("fmt", ["full", "concise", "json", "json-lines", "sarif", "github", "grouped", "pylint",
                                 "azure", "gitlab", "junit", "rdjson"])
def test_a_file_name_that_is_not_utf8_breaks_no_format(project, fmt):
    _non_utf8_name(project)
    result = cli("--output-format", fmt, ".")
    assert result.exit_code == 1, result.output
    assert result.stderr == ""
    out = result.stdout
    if fmt == "json":
        [obj] = json.loads(out)
        assert obj["filename"].endswith("/caf\\xe9.py")  # absolute, as ruff gives it
    elif fmt == "json-lines":
        assert json.loads(out)["filename"].endswith("/caf\\xe9.py")
    elif fmt == "sarif":
        [res] = json.loads(out)["runs"][0]["results"]
        uri = res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        assert uri.startswith("file:///") and uri.endswith("/caf%E9.py")  # absolute, as ruff writes it
    elif fmt == "github":
        assert out.startswith("::error ") and "/caf\\xe9.py,line=9,col=5," in out and "::caf\\xe9.py:9:5: " in out
    elif fmt == "grouped":
        assert out.startswith("caf\\xe9.py:\n  9:5 LC101 ")
    elif fmt == "pylint":
        assert out.startswith("caf\\xe9.py:9: [LC101] ")
    elif fmt == "azure":
        assert out.startswith("##vso[task.logissue type=error;sourcepath=/") and "/caf\\xe9.py;linenumber=9;" in out
    elif fmt == "gitlab":
        assert json.loads(out)[0]["location"]["path"] == "caf\\xe9.py"
    elif fmt == "rdjson":
        assert json.loads(out)["diagnostics"][0]["location"]["path"].endswith("/caf\\xe9.py")
    elif fmt == "junit":
        import xml.etree.ElementTree as ET

        assert ET.fromstring(out.encode()).find("testsuite").get("name") == "caf\\xe9.py"
    elif fmt == "full":
        assert out.startswith("LC101 ") and "--> caf\\xe9.py:9:5" in out
    else:
        assert out.startswith("caf\\xe9.py:9:5: LC101 ")


def test_a_console_that_cannot_show_a_character_does_not_end_the_run(tmp_path):
    """An ASCII console: the non-ASCII source line and file name are written escaped."""
    (tmp_path / "naïve.py").write_text(BAD.replace("1.0)\n", "1.0)  # ✓ café\n"))
    for fmt in ("full", "concise"):
        done = cli_process("--output-format", fmt, ".", cwd=tmp_path, env={"PYTHONIOENCODING": "ascii"})
        assert done.returncode == 1, done.stderr
        out = done.stdout.decode("ascii")
        if fmt == "full":
            assert "--> na\\xefve.py:9:5" in out
            assert "nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # \\u2713 caf\\xe9" in out
        else:
            assert out.startswith("na\\xefve.py:9:5: LC101 ")


@pytest.mark.parametrize("data", [
    b"x = 1\n", b"", b"\xef\xbb\xbfx = 1\n", b"x = '\xc3\xa9'\n", b"x = '\xe9'\n", b"# one\n\xff\n", b"a\rb\xff",
    b"#!/usr/bin/env python\n# -*- coding: latin-1 -*-\nx = '\xe9'\n", b"# coding=klingon\nx = 1\n",
    b"\n\n# coding: latin-1\nx = '\xe9'\n",  # a cookie on line 3 is no cookie
])
def test_a_file_without_a_cookie_decodes_as_tokenize_would_have_it(data, monkeypatch):
    """Without ``coding`` in its first two lines (and no BOM), a file is read as UTF-8 without
    ``tokenize.detect_encoding``: the same text, codec and error as through it."""
    import loopcheck.workspace.files as files

    def read(d):
        try:
            got = files.decode_source(d)
            return got.text, got.encoding, got.bom
        except files.SourceError as err:
            return str(err)

    fast = read(data)
    monkeypatch.setattr(files, "_first_lines", lambda d: b"coding")  # always through tokenize
    assert fast == read(data)
