"""9.8, 9.9, 10.3 ``--fix`` never loses a byte: it writes through a temporary file, fsync and
``os.replace``, keeps permissions, leaves a file it cannot write (or that changed meanwhile)
as it was while fixing the others, and keeps line endings, BOM, codec, form feeds and a
missing final newline. Every comparison is of bytes."""

from __future__ import annotations

import errno
import os
import stat

import pytest

import loopcheck.workspace.files
from loopcheck.workspace.files import SourceText, render_fixed, write_atomic

from .helpers import BAD, BACKWARD, CLIP, FIXED, cli


def swap(data: bytes, nl: bytes = b"\n") -> bytes:
    """The fix at the byte level: the clip line moved after the backward line, each line
    keeping its own line ending."""
    clip = CLIP.rstrip("\n").encode()
    backward = BACKWARD.rstrip("\n").encode()
    lines = data.splitlines(keepends=True)
    i = next(k for k, line in enumerate(lines) if line.startswith(clip))
    j = next(k for k, line in enumerate(lines) if line.startswith(backward))
    moved = lines.pop(i)
    lines.insert(j, moved)
    return b"".join(lines)


CASES = {
    "crlf": BAD.replace("\n", "\r\n").encode(),
    "lone_cr": BAD.replace("\n", "\r").encode(),
    "bom": b"\xef\xbb\xbf" + BAD.encode(),
    "latin1_cookie": ("# -*- coding: latin-1 -*-\n# café\n" + BAD).encode("latin-1"),
    "koi8_cookie": ("# -*- coding: koi8-r -*-\nGREETING = 'привет'\n" + BAD).encode("koi8-r"),
    "form_feed": ("x = 1\n\x0c\ny = 2\n\x0cz = 3\n" + BAD).encode(),
    "no_final_newline": BAD.rstrip("\n").encode(),
    "tabs_and_trailing_blanks": BAD.replace("import torch\n", "import torch   \n# \tnote\t\n").encode(),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_fix_keeps_every_byte_it_does_not_change(tmp_path, monkeypatch, case):
    monkeypatch.chdir(tmp_path)
    data = CASES[case]
    (tmp_path / "t.py").write_bytes(data)
    result = cli("--fix", "--output-format", "concise", "t.py")
    assert result.exit_code == 0, result.output
    assert result.stdout == "Found 1 error (1 fixed, 0 remaining).\n"
    assert (tmp_path / "t.py").read_bytes() == swap(data)


def test_mixed_line_endings_stay_and_new_line_breaks_take_the_files_own(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    lines = BAD.splitlines(keepends=True)
    data = "".join(line.replace("\n", "\r\n") if k % 3 == 0 else line for k, line in enumerate(lines)).encode()
    (tmp_path / "t.py").write_bytes(data)
    assert cli("--fix", "t.py").exit_code == 0
    out = (tmp_path / "t.py").read_bytes()
    assert out.replace(b"\r\n", b"\n") == FIXED.encode()
    untouched = [line for line in data.splitlines(keepends=True) if not line.startswith(CLIP.rstrip("\n").encode())]
    assert all(line in out for line in untouched)  # each other line with its own ending


def test_fix_of_standard_input_keeps_bytes_too():
    data = CASES["crlf"]
    result = cli("--fix", "-", "--stdin-filename", "t.py", input=data)
    assert result.exit_code == 0
    assert result.stdout_bytes == swap(data)


def test_fix_replaces_the_file_and_keeps_its_permissions(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "t.py"
    path.write_text(BAD)
    path.chmod(0o640)
    inode = path.stat().st_ino
    assert cli("--fix", "t.py").exit_code == 0
    assert path.read_text() == FIXED
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert path.stat().st_ino != inode  # a new file moved over the old one, not a rewrite in place
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.py"]  # no temporary file left


def test_a_symlink_keeps_being_a_symlink(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "real.py").write_text(BAD)
    (tmp_path / "link.py").symlink_to("real.py")
    assert cli("--fix", "link.py").exit_code == 0
    assert (tmp_path / "link.py").is_symlink()
    assert (tmp_path / "real.py").read_text() == FIXED


def test_a_read_only_file_is_left_intact_and_the_others_are_fixed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(BAD)
    ro = tmp_path / "b.py"
    ro.write_text(BAD)
    ro.chmod(0o444)  # read-only even for root: no write permission bit
    (tmp_path / "c.py").write_text(BAD)
    result = cli("--fix", "--output-format", "concise", ".")
    assert result.exit_code == 2
    assert result.stderr == "loopcheck: cannot fix b.py: the file is read-only; it was left as it is\n"
    assert (tmp_path / "a.py").read_text() == FIXED and (tmp_path / "c.py").read_text() == FIXED
    assert ro.read_text() == BAD
    lines = result.stdout.splitlines()
    assert [line[:16] for line in lines if ": LC" in line] == ["b.py:9:5: LC101 "]
    assert "Found 3 errors (2 fixed, 1 remaining)." in lines


def test_a_full_disk_leaves_the_original_intact(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(BAD)
    (tmp_path / "b.py").write_text(BAD)
    real_fsync = os.fsync
    calls = []

    def fsync(fd):
        calls.append(fd)
        if len(calls) == 1:  # the first file's temporary copy
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_fsync(fd)

    monkeypatch.setattr(loopcheck.workspace.files.os, "fsync", fsync)
    result = cli("--fix", "--output-format", "concise", ".")
    assert result.exit_code == 2
    assert result.stderr == "loopcheck: cannot fix a.py: No space left on device; it was left as it is\n"
    assert (tmp_path / "a.py").read_text() == BAD
    assert (tmp_path / "b.py").read_text() == FIXED
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.py", "b.py"]


def test_a_file_changed_since_it_was_read_is_left_alone(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "t.py"
    path.write_text(BAD)
    real_mkstemp = loopcheck.workspace.files.tempfile.mkstemp
    concurrent = BAD + "print('an edit made meanwhile')\n"

    def mkstemp(*args, **kwargs):
        path.write_text(concurrent)  # another writer, between the read and the replace
        return real_mkstemp(*args, **kwargs)

    monkeypatch.setattr(loopcheck.workspace.files.tempfile, "mkstemp", mkstemp)
    result = cli("--fix", "t.py")
    assert result.exit_code == 2
    assert result.stderr == "loopcheck: cannot fix t.py: it changed since it was read; it was left as it is\n"
    assert path.read_text() == concurrent
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.py"]


def test_write_atomic_and_render_fixed_directly(tmp_path):
    path = tmp_path / "t.py"
    path.write_bytes(b"old\r\n")
    write_atomic(path, b"new\r\n", b"old\r\n")
    assert path.read_bytes() == b"new\r\n"
    with pytest.raises(loopcheck.workspace.files.FileChanged):
        write_atomic(path, b"newer\r\n", b"old\r\n")
    assert path.read_bytes() == b"new\r\n"
    src = SourceText("a = 1\r\nb = 2\r\n\x0cc = 3")
    assert render_fixed(src, src.program, "a = 1\nx = 0\nb = 2\n\x0cc = 3") == "a = 1\r\nx = 0\r\nb = 2\r\n\x0cc = 3"
