"""Reading source files as Python does, and writing fixes back without losing a byte.

Reading (:func:`decode_source`, :func:`read_source`) follows ``tokenize.open``: a UTF-8 BOM
or a PEP 263 coding cookie (``# -*- coding: latin-1 -*-``) on one of the first two lines
chooses the codec, UTF-8 otherwise. Line endings are left as they are in
:attr:`SourceText.text`; the analysis works on :attr:`SourceText.program`, the same text with
every line ending (``\\r\\n``, a lone ``\\r``) made ``\\n``, so that rows and columns are those
of the file and LibCST never sees a line ending it would not give back.

Writing (:func:`render_fixed`, :func:`write_atomic`) puts a fixed program back in the file's
own shape: only the changed characters are replaced in the original text, a new line break
takes the file's own line ending, and the text is encoded in the file's codec with its BOM.
The bytes go to a temporary file in the same directory, which is flushed, ``fsync``-ed,
given the original's permission bits, and moved over the original with ``os.replace``, but
only if the file still holds the bytes that were read: a file changed in the meantime, or
one that cannot be written, keeps its content, and the caller reports it.
"""

from __future__ import annotations

import codecs
import errno
import io
import os
import re
import stat
import tempfile
import tokenize
from dataclasses import dataclass
from pathlib import Path

_LINE_END = re.compile(r"\r\n|\r|\n")
PEP_263 = "https://peps.python.org/pep-0263/"


class SourceError(ValueError):
    """A file's bytes are not text loopcheck can check: undecodable (no or a wrong coding
    cookie, an unknown codec), or too large. The message says why, for the user."""


class Skipped(SourceError):
    """A file that is not checked, with a warning saying why (not an error): too large, or a
    line too long for the parser to read in bounded time and memory."""


class FileTooLarge(Skipped):
    """The file is larger than the ``max-file-size`` setting (:attr:`size` bytes)."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(
            f"{size:,} bytes is over the max-file-size of {limit:,} bytes; raise max-file-size "
            "(or --max-file-size) to check it"
        )
        self.size = size
        self.limit = limit


#: The longest line loopcheck parses, in characters, while ``max-file-size`` is on: a longer
#: one is generated data (a literal of a million numbers, minified code), not a training
#: loop. LibCST's parse of such a line is about ten times slower than CPython's and takes
#: hundreds of megabytes, so such a file is skipped, with a warning, before it is parsed.
MAX_LINE_LENGTH = 100_000


class LineTooLong(Skipped):
    """A line of the file is longer than :data:`MAX_LINE_LENGTH` characters."""

    def __init__(self, row: int, length: int) -> None:
        super().__init__(
            f"line {row} is {length:,} characters long, over the {MAX_LINE_LENGTH:,} a line loopcheck parses "
            "(generated data?); set max-file-size = 0 (or --max-file-size 0) to check it"
        )
        self.row = row
        self.length = length


def check_line_lengths(text: str) -> None:
    """Raise :class:`LineTooLong` for the first line of ``text`` longer than
    :data:`MAX_LINE_LENGTH` (a text shorter than that has none: nothing is split)."""
    if len(text) <= MAX_LINE_LENGTH:
        return
    start = 0
    row = 1
    while True:
        end = text.find("\n", start)
        stop = len(text) if end < 0 else end
        if stop - start > MAX_LINE_LENGTH:
            raise LineTooLong(row, stop - start)
        if end < 0:
            return
        start, row = end + 1, row + 1


class FileChanged(OSError):
    """The file no longer holds the bytes that were read: it was left as it is."""


@dataclass
class SourceText:
    """A file's decoded text and what it takes to write it back as it was.

    Attributes:
        text: the decoded text, BOM removed, line endings as in the file.
        encoding: the codec it was decoded with (``"utf-8"``, ``"iso-8859-1"``, ...).
        bom: the file starts with a UTF-8 byte order mark.
        data: the bytes as read (to notice a change before writing over them).
    """

    text: str
    encoding: str = "utf-8"
    bom: bool = False
    data: bytes | None = None

    @property
    def program(self) -> str:
        """:attr:`text` with ``\\n`` for every line ending (what the analysis reads)."""
        return normalize_newlines(self.text)

    @property
    def newline(self) -> str:
        """The file's line ending: the most frequent one (the first seen on a tie), ``\\n``
        for a file with none."""
        counts: dict[str, int] = {}
        for m in _LINE_END.finditer(self.text):
            counts[m.group()] = counts.get(m.group(), 0) + 1
        return max(counts, key=counts.__getitem__) if counts else "\n"

    def encode(self, text: str) -> bytes:
        """``text`` in this file's codec, with its BOM.

        Raises:
            UnicodeEncodeError: ``text`` holds a character the codec cannot write.
        """
        return (codecs.BOM_UTF8 if self.bom else b"") + text.encode(self.encoding)


def normalize_newlines(text: str) -> str:
    """``text`` with ``\\r\\n`` and lone ``\\r`` line endings made ``\\n`` (rows unchanged)."""
    if "\r" not in text:
        return text
    return _LINE_END.sub("\n", text)


def _bad_utf8(data: bytes, err: UnicodeDecodeError) -> str:
    line = data.count(b"\n", 0, err.start) + 1
    byte = data[err.start:err.start + 1]
    return (
        f"Non-UTF-8 code starting with '\\x{byte.hex()}' on line {line}, but no encoding declared; "
        f"see {PEP_263} for details"
    )


def _first_lines(data: bytes) -> bytes:
    """The first two lines of ``data`` (where a coding cookie may be): without ``coding`` in
    them, no BOM, the file is UTF-8 (``tokenize.detect_encoding`` costs 20 µs a file)."""
    first = data.find(b"\n")
    second = data.find(b"\n", first + 1) if first >= 0 else -1
    return data if second < 0 else data[:second]


def decode_source(data: bytes, notebook: bool = False) -> SourceText:
    """Decode a file's bytes as Python (``tokenize.open``) or, for a notebook, as JSON (UTF-8).

    Args:
        data: the file's bytes.
        notebook: the file is a Jupyter notebook (JSON: UTF-8, a BOM tolerated).

    Returns:
        The text, with the codec and BOM to write it back.

    Raises:
        SourceError: the bytes do not decode: a message as CPython's (``Non-UTF-8 code
            starting with ... on line N, but no encoding declared``, ``unknown encoding:
            foobar`` when the bytes are not UTF-8 either, ...). A codec Python does not know
            (one a package registers at import, ``coding: future_fstrings``) is read as UTF-8.
    """
    bom = data.startswith(codecs.BOM_UTF8)
    if notebook:
        try:
            return SourceText(data[3:].decode("utf-8") if bom else data.decode("utf-8"), "utf-8", bom, data)
        except UnicodeDecodeError as err:
            raise SourceError(f"not UTF-8 (byte 0x{data[err.start:err.start + 1].hex()} at offset {err.start})") from None
    try:
        encoding = "utf-8" if not bom and b"coding" not in _first_lines(data) else \
            tokenize.detect_encoding(io.BytesIO(data).readline)[0]
    except SyntaxError as err:  # an unknown codec, a cookie that contradicts the BOM, bad UTF-8 early on
        msg = str(err.msg if hasattr(err, "msg") else err)
        if msg.startswith("unknown encoding") and not bom:
            # a codec a package registers when it is imported (``coding: future_fstrings``)
            # transforms UTF-8 source: read the text as the UTF-8 it is, as ruff does
            try:
                return SourceText(data.decode("utf-8"), "utf-8", False, data)
            except UnicodeDecodeError:
                pass
        if msg.startswith("invalid or missing encoding declaration"):
            try:
                data.decode("utf-8")
            except UnicodeDecodeError as uerr:
                raise SourceError(_bad_utf8(data, uerr)) from None
        raise SourceError(msg) from None
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as err:
        if encoding in ("utf-8", "utf-8-sig"):
            raise SourceError(_bad_utf8(data, err)) from None
        line = data.count(b"\n", 0, err.start) + 1
        raise SourceError(f"line {line} is not valid {encoding} (the file's coding cookie)") from None
    except LookupError as err:
        raise SourceError(str(err)) from None
    if encoding == "utf-8-sig":
        return SourceText(text, "utf-8", True, data)
    return SourceText(text, encoding, False, data)


def read_source(path: Path, max_size: int | None = None, notebook: bool | None = None) -> SourceText:
    """Read and decode one file (see :func:`decode_source`), refusing what is not a regular
    file before opening it: a FIFO, socket or device is never read.

    Args:
        path: the file.
        max_size: the largest size to read, in bytes (``None`` or 0: no limit).
        notebook: read as a notebook (default: a name ending in ``.ipynb``).

    Raises:
        OSError: the file cannot be read (``ELOOP`` for a symlink loop, ``EACCES``, ...), or it
            is not a regular file (``errno.EINVAL``, message ``not a regular file``).
        FileTooLarge: it is larger than ``max_size``.
        LineTooLong: with a ``max_size``, a line of a Python file is longer than
            :data:`MAX_LINE_LENGTH` characters.
        SourceError: its bytes do not decode.
    """
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise OSError(errno.EINVAL, "not a regular file (a FIFO, socket or device is not read)", str(path))
    if max_size and st.st_size > max_size:
        raise FileTooLarge(st.st_size, max_size)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)  # never wait on a FIFO swapped in meanwhile
    fd = os.open(path, flags)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file (a FIFO, socket or device is not read)", str(path))
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = _read_at_most(f, max_size + 1, st.st_size) if max_size else f.read()
    finally:
        os.close(fd)
    if max_size and len(data) > max_size:
        raise FileTooLarge(len(data), max_size)
    is_notebook = notebook if notebook is not None else path.name.endswith(".ipynb")
    source = decode_source(data, is_notebook)
    if max_size and not is_notebook:
        check_line_lengths(source.program)
    return source


def _read_at_most(f, limit: int, expected: int) -> bytes:
    """Up to ``limit`` bytes of ``f``, read in pieces the size the file had (``expected``),
    so that a limit far above the file's size (``max-file-size = 10**15``) allocates no more
    than the file holds."""
    chunks, total = [], 0
    while total < limit:
        chunk = f.read(min(limit - total, max(expected + 1, 1 << 16)))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


# ------------------------------------------------------------------------------ writing


def _line_starts(text: str) -> list[int]:
    return [0] + [m.end() for m in _LINE_END.finditer(text)]


def render_fixed(source: SourceText, program: str, fixed_program: str) -> str:
    """The file's text after fixes, keeping every byte the fixes did not change.

    ``program`` is :attr:`SourceText.program` as checked and ``fixed_program`` the same after
    fixes (both with ``\\n`` line endings). The changed characters are found line by line and
    replaced in :attr:`SourceText.text`: line endings, form feeds and a missing final newline
    stay as they were, and a line break the fixes add is the file's own
    (:attr:`SourceText.newline`).
    """
    from loopcheck.fixes.model import edits_between

    if fixed_program == program:
        return source.text
    if source.text == program:  # "\n" line endings only: nothing to map
        return fixed_program
    newline = source.newline
    starts = _line_starts(source.text)

    def offset(row: int, column: int) -> int:
        if row > len(starts):
            return len(source.text)
        return min(starts[row - 1] + column - 1, len(source.text))

    out, pos = [], 0
    for e in sorted(edits_between(program, fixed_program), key=lambda e: (e.row, e.column)):
        start, end = offset(e.row, e.column), offset(e.end_row, e.end_column)
        out.append(source.text[pos:start])
        out.append(e.content.replace("\n", newline) if newline != "\n" else e.content)
        pos = end
    out.append(source.text[pos:])
    return "".join(out)


def _is_read_only(st: os.stat_result) -> bool:
    return not st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)


def _write_in_place(target: Path, data: bytes, expected: bytes | None, path: Path) -> None:
    """Rewrite a hard-linked file through its own inode (a rename would leave the other links
    on the old text): opened for update and locked (``flock``, where there is one, against
    another loopcheck), checked against ``expected`` through the same descriptor, then
    written, truncated and ``fsync``-ed. A write that fails part way puts the bytes read back
    where it can (a full disk cannot shrink a file that was already that long)."""
    with open(target, "r+b") as f:
        try:
            import fcntl

            fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        except (ImportError, OSError):
            pass
        now = f.read()
        if expected is not None and now != expected:
            raise FileChanged(errno.EAGAIN, "the file changed since it was read; not fixed", str(path))
        try:
            f.seek(0)
            f.write(data)
            f.truncate()
            f.flush()
            os.fsync(f.fileno())
        except OSError:
            try:
                f.seek(0)
                f.write(now)
                f.truncate()
                f.flush()
            except OSError:
                pass
            raise


def write_atomic(path: Path, data: bytes, expected: bytes | None) -> None:
    """Replace the content of ``path`` with ``data``, all or nothing.

    The bytes are written to a temporary file in the same directory, flushed and
    ``fsync``-ed, given the original's permission bits (and owner, where allowed), and moved
    over the original with ``os.replace``; a symbolic link is followed (its target is
    rewritten, the link kept). A file with several hard links is rewritten in place instead
    (:func:`_write_in_place`), so that every link keeps naming the fixed file. Just before the move, the file is read again: if it no longer
    holds ``expected`` (a concurrent edit), nothing is written. On any failure the temporary
    file is removed and the original is left as it was.

    Args:
        path: the file to rewrite.
        data: its new bytes.
        expected: the bytes it held when it was read (``None``: do not check).

    Raises:
        FileChanged: the file changed since it was read.
        PermissionError: the file is read-only (no write permission bit: even for root).
        OSError: the temporary file cannot be created, written or moved (a read-only
            directory, a full disk, ...).
    """
    target = Path(os.path.realpath(path))
    st = os.stat(target)
    if _is_read_only(st) or not os.access(target, os.W_OK):
        raise PermissionError(errno.EACCES, "the file is read-only", str(path))
    if st.st_nlink > 1:
        _write_in_place(target, data, expected, path)
        return
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".loopcheck-tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, stat.S_IMODE(st.st_mode))
        try:
            os.chown(tmp, st.st_uid, st.st_gid)
        except (OSError, AttributeError):  # not the owner's to give: keep ours
            pass
        if expected is not None:
            with open(target, "rb") as f:
                now = f.read()
            if now != expected:
                raise FileChanged(errno.EAGAIN, "the file changed since it was read; not fixed", str(path))
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:  # make the rename itself durable
        dir_fd = os.open(target.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)
