"""Where in the user's code a runtime event happened: the innermost frame of the user's files.

A hook that torch calls (an optimizer step hook, a module forward hook, a wrapper around
``clip_grad_norm_``) runs many frames below the line that caused it: torch's own frames, then
a framework's (Lightning, transformers, accelerate), then the user's script. :func:`UserCode.site`
walks the call stack outward and returns the first frame whose file is the user's, as a
:class:`Site` with the exact span of the call being executed there (Python 3.11's
``co_positions()``; the whole line on 3.10).

Which files are the user's (:class:`UserCode`): the longest of these prefixes decides —
the target's own directory or package (always the user's), the standard library,
``site-packages``/``dist-packages`` and loopcheck itself (never the user's); any other real file
is the user's. Pseudo-files (``<frozen runpy>``, ``<string>``) never are.
"""

from __future__ import annotations

import itertools
import os
import site as site_module
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Site:
    """A span in a user's file where an event happened.

    Attributes:
        filename: absolute path of the file.
        line, end_line: 1-based lines of the call expression.
        col, end_col: 0-based UTF-8 byte offsets in those lines (as ``co_positions()`` gives
            them), ``None`` when unknown; :meth:`columns` turns them into 1-based characters.
        func: the name of the function the frame runs (``<module>`` at module level).
        via: the library the event happened inside when the user's line only calls into it
            (``"lightning"`` for a backward run by ``trainer.fit()``), ``None`` when the user's
            line made the call itself (only torch in between).
    """

    filename: str
    line: int
    end_line: int
    col: int | None
    end_col: int | None
    func: str = ""
    via: str | None = None

    @property
    def key(self) -> tuple[str, int, int | None]:
        """Identity of the place (file, line, column) used to merge repeated events."""
        return (self.filename, self.line, self.col)

    def columns(self, lines: list[str]) -> tuple[int, int, int]:
        """``(column, end_row, end_column)``, 1-based characters, end exclusive.

        Args:
            lines: the file's lines (index 0 is line 1), used to turn byte offsets into
                characters and to span the whole line when no offsets are known.
        """
        text = lines[self.line - 1] if 0 < self.line <= len(lines) else ""
        if self.col is None:
            stripped = len(text) - len(text.lstrip())
            return stripped + 1, self.line, len(text.rstrip()) + 1
        col = len(text.encode("utf-8")[: self.col].decode("utf-8", "ignore")) + 1
        end_text = lines[self.end_line - 1] if 0 < self.end_line <= len(lines) else ""
        end = self.end_col if self.end_col is not None else len(end_text.encode("utf-8"))
        end_col = len(end_text.encode("utf-8")[:end].decode("utf-8", "ignore")) + 1
        return col, self.end_line, end_col


_SITES: dict[tuple, tuple] = {}


def frame_site(frame, via: str | None = None) -> Site:
    """The :class:`Site` of the instruction ``frame`` is executing (a call, for outer frames).

    One :class:`Site` object per place: the hot path (a site per optimizer step, per backward,
    per top-level forward) costs a dictionary lookup once the place was seen."""
    code = frame.f_code
    key = (id(code), frame.f_lasti, via)
    hit = _SITES.get(key)
    if hit is not None and hit[0] is code:
        return hit[1]
    pos = _positions(code, frame.f_lasti)
    line = pos[0] or frame.f_lineno
    site = Site(code.co_filename, line, pos[1] or line, pos[2], pos[3], code.co_name, via)
    _SITES[key] = (code, site)  # the code object is kept, so its id stays unique
    return site


def package_of(filename: str) -> str | None:
    """The top-level package a library file belongs to (``lightning`` for
    ``.../site-packages/lightning/pytorch/loops/fit_loop.py``), or ``None``."""
    parts = filename.replace("\\", "/").split("/")
    for marker in ("site-packages", "dist-packages"):
        if marker in parts:
            i = len(parts) - 1 - parts[::-1].index(marker)
            if i + 1 < len(parts):
                name = parts[i + 1]
                return name[:-3] if name.endswith(".py") else name
    return None


def _positions(code, lasti: int) -> tuple:
    """``(line, end_line, col, end_col)`` of the instruction at byte offset ``lasti``."""
    if hasattr(code, "co_positions") and lasti >= 0:
        return next(itertools.islice(code.co_positions(), lasti // 2, None), (None, None, None, None))
    return (None, None, None, None)


# Libraries whose frames between an event and the user's line do not make it "inside a framework".
_QUIET_PACKAGES = {"torch", "loopcheck", "functorch", "typing_extensions", "contextlib"}


def _real(path: str) -> str:
    return os.path.normcase(os.path.realpath(path))


def library_roots() -> list[str]:
    """Directories whose files are never the user's: the standard library, every
    ``site-packages`` of this interpreter, and the loopcheck package."""
    roots = set()
    paths = sysconfig.get_paths()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        if paths.get(key):
            roots.add(paths[key])
    try:
        roots.update(site_module.getsitepackages())
    except AttributeError:  # some virtualenv versions
        pass
    user_site = getattr(site_module, "getusersitepackages", lambda: None)()
    if user_site:
        roots.add(user_site)
    roots.update(p for p in sys.path if p and os.path.basename(p) in ("site-packages", "dist-packages"))
    roots.add(str(Path(__file__).resolve().parent.parent))  # loopcheck itself
    return sorted(_real(r) for r in roots)


class UserCode:
    """Decides which files are the user's and finds the innermost user frame of the stack.

    Args:
        include: directories that are always the user's (the traced script's directory, or
            the traced module's package), even when they lie under ``site-packages``.
    """

    def __init__(self, include: list[str] | tuple[str, ...] = ()) -> None:
        self.include = [_real(p) for p in include]
        self.exclude = library_roots()
        self._cache: dict[str, bool] = {}
        self._kinds: dict[str, object] = {}

    def is_user(self, filename: str) -> bool:
        """Whether ``filename`` (a ``co_filename``) is one of the user's files."""
        hit = self._cache.get(filename)
        if hit is None:
            hit = self._cache[filename] = self._decide(filename)
        return hit

    def _decide(self, filename: str) -> bool:
        if not filename or filename.startswith("<") or not os.path.isfile(filename):
            return False
        real = _real(filename)
        best, verdict = -1, True
        for roots, answer in ((self.include, True), (self.exclude, False)):
            for root in roots:
                if (real == root or real.startswith(root.rstrip(os.sep) + os.sep)) and len(root) > best:
                    best, verdict = len(root), answer
        return verdict

    def site(self) -> Site | None:
        """The :class:`Site` of the innermost user frame on the caller's stack, or ``None``.

        Its ``via`` names the library (other than torch) whose frames lie between the user's
        line and the event, if any: the outermost one, the library the user called."""
        f = sys._getframe(1)
        kinds = self._kinds
        via = None
        while f is not None:
            name = f.f_code.co_filename
            kind = kinds.get(name)
            if kind is None:
                kind = self._kind(name)
            if kind is True:
                return frame_site(f, via)
            if kind:
                via = kind
            f = f.f_back
        return None

    def _kind(self, filename: str):
        """``True`` for a user file, else the library it belongs to (``""``: none worth naming)."""
        if self.is_user(filename):
            kind = True
        else:
            pkg = package_of(filename) or ""
            kind = "" if pkg in _QUIET_PACKAGES else pkg
        self._kinds[filename] = kind
        return kind

    def frames(self) -> list:
        """Every user frame on the caller's stack, innermost first."""
        out = []
        f = sys._getframe(1)
        while f is not None:
            if self.is_user(f.f_code.co_filename):
                out.append(f)
            f = f.f_back
        return out
