"""Configuration files, found as ruff finds its own.

loopcheck reads ``[tool.loopcheck]`` in ``pyproject.toml``, or the top-level keys of
``.loopcheck.toml`` / ``loopcheck.toml``. Each checked file uses the closest such file in
its own directory or above (in one directory ``.loopcheck.toml`` wins over
``loopcheck.toml``, which wins over ``pyproject.toml``; a ``pyproject.toml`` without a
``[tool.loopcheck]`` table is passed over). Closer files replace farther ones whole; they
are not merged. ``--config PATH`` uses one file for everything, ``--isolated`` none.

Keys (all optional)::

    select = ["LC1", "LC301"]        # codes, names or prefixes ("ALL": all; default: all but preview)
    extend-select = ["LC6"]          # added to select
    preview = true                   # also enable the rules in preview (default false)
    ignore = ["LC401"]               # removed from the selection
    per-file-ignores = { "tests/**" = ["LC401"] }
    extend-per-file-ignores = { "notebooks/**" = ["LC302"] }   # added to per-file-ignores
    fixable = ["ALL"]                # the rules whose fixes are shown and applied (default: all)
    extend-fixable = ["LC301"]       # added to fixable
    unfixable = ["LC101"]            # removed from fixable: their findings have no fix
    extend = "../pyproject.toml"     # inherit that file's settings (this file's win)
    exclude = [".git", "build"]      # replaces the default list of excluded names
    extend-exclude = ["notebooks/scratch"]   # added to it
    respect-gitignore = true
    max-file-size = 1048576          # bytes; larger files are skipped with a warning (0: no limit)

Patterns (``exclude``, ``per-file-ignores``) are gitignore-style and relative to the
directory of the configuration file (to the current directory for ``--config`` and when no
file applies): a pattern without a slash matches a name at any depth, ``dir/*.py`` only
under that directory, ``**`` any number of directories, ``!pattern`` negates (in
``per-file-ignores``: applies to the files that do *not* match).

Options given on the command line take precedence, as in ruff: ``--select`` replaces the
file's ``select``, ``extend-select`` and ``ignore``; ``--extend-select`` and ``--ignore``
change the file's selection; within one of the two, a more specific code wins over a prefix
(``select = ["LC101"]`` with ``ignore = ["LC1"]`` keeps LC101). ``--exclude`` replaces
``exclude``, ``--extend-exclude`` adds to it, ``--[no-]respect-gitignore`` replaces
``respect-gitignore``, ``--max-file-size`` replaces ``max-file-size``.

Rules in preview (``preview=True`` in :mod:`loopcheck.catalog`) are enabled, as in ruff, only
when preview is on (``preview = true``, ``--preview``; ``--no-preview`` turns it off) or when
``select``/``extend-select`` name them by exact code or name (``"LC401"``,
``"loss-tensor-kept"``): a prefix (``"LC4"``) or ``"ALL"`` alone does not enable them.
``--preview``/``--no-preview`` replaces ``preview``.

``extend = "path"`` (as ruff): the settings of that file (``~`` and ``$VARS`` expanded, a
relative path taken from this file's directory; itself possibly extending another) are
inherited, and this file's own keys win: ``select``/``extend-select``/``ignore`` and
``fixable``/``extend-fixable``/``unfixable`` apply after the extended file's as a further
layer, ``extend-exclude`` and ``extend-per-file-ignores`` add to its own, every other key
given replaces its value. The extended file's anchored patterns (``dir/*.py``) are rebased to
this file's directory, its ``src`` directories taken from its own.

``--config KEY=VALUE`` (ruff's inline override: ``--config "select = ['LC1']"``) applies a
TOML ``key = value`` of these keys on top of every configuration file, as if written in it,
below the command line's own options.

A pattern pathspec cannot compile (``[z-a]``, ``build\\``, a lone ``!``) is an error that
names it, as is a file TOML cannot read (one nested thousands of levels deep included).
"""

from __future__ import annotations

import difflib
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pathspec

from loopcheck.catalog import BY_NAME, INFOS, PREVIEW

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

CONFIG_NAMES = (".loopcheck.toml", "loopcheck.toml", "pyproject.toml")

# Names skipped while walking directories unless ``exclude`` replaces them (as in ruff).
DEFAULT_EXCLUDE = (
    ".bzr", ".direnv", ".eggs", ".env", ".git", ".hg", ".ipynb_checkpoints", ".loopcheck_cache",
    ".mypy_cache", ".nox", ".pytest_cache", ".pytype", ".ruff_cache", ".svn", ".tox", ".venv",
    "__pycache__", "__pypackages__", "_build", "build", "dist", "env", "node_modules",
    "site-packages", "venv",
)

#: Files larger than this many bytes are skipped with a warning (``max-file-size``): 1 MiB,
#: ten times the largest training script of the corpus; analysis cost grows with the size.
DEFAULT_MAX_FILE_SIZE = 1024 * 1024


class ConfigError(Exception):
    """A configuration file cannot be read, or holds an unknown key or a bad value."""


def canonical_selector(selector: str) -> str:
    """A selector as the selection compares it: a rule's name (``loss-tensor-kept``, any case,
    ``_`` for ``-``) becomes its code, anything else is upper-cased (``lc4`` -> ``LC4``)."""
    selector = selector.strip()
    info = BY_NAME.get(selector.lower().replace("_", "-"))
    return info.code if info is not None else selector.upper()


def is_exact(selector: str) -> bool:
    """Whether ``selector`` names one rule by its full code or its name (which enables a rule
    in preview without preview on), not a prefix or ``ALL``."""
    return canonical_selector(selector) in INFOS


def match_codes(prefix: str) -> set[str]:
    """The rule codes a code, name or prefix names (``ALL``: every rule), preview rules
    included (:func:`select_codes` decides whether those are enabled).

    Raises:
        ValueError: the prefix names no rule.
    """
    prefix = canonical_selector(prefix)
    if prefix == "ALL":
        return set(INFOS)
    found = {c for c in INFOS if c.startswith(prefix)}
    if not prefix or not found:
        raise ValueError(f"unknown rule code or prefix {prefix!r}")
    return found


@dataclass(frozen=True)
class Options:
    """Raw settings from one layer (a configuration file, or the command line).

    ``None`` means "not given"; lists are tuples of strings as written.
    """

    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    exclude: tuple[str, ...] | None = None
    extend_exclude: tuple[str, ...] = ()
    respect_gitignore: bool | None = None
    src: tuple[str, ...] | None = None
    max_file_size: int | None = None
    preview: bool | None = None
    extend_per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    fixable: tuple[str, ...] | None = None
    extend_fixable: tuple[str, ...] = ()
    unfixable: tuple[str, ...] = ()
    #: The selection layers of the files this one extends, farthest first (each with its
    #: own ``select``/``fixable`` keys), applied before this one's.
    base: tuple[Options, ...] = ()


# --- reading and validating a file ----------------------------------------------------


def _string_list(key: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{key}: expected a list of strings, got {_show(value)}")
    return tuple(value)


def _code_list(key: str, value: Any) -> tuple[str, ...]:
    codes = _string_list(key, value)
    for code in codes:
        try:
            match_codes(code)
        except ValueError as err:
            raise ConfigError(f"{key}: {err}") from None
    return tuple(canonical_selector(c) for c in codes)


def pattern_error(pattern: str) -> str | None:
    """Why pathspec cannot compile the gitignore-style ``pattern``, or ``None`` if it can."""
    try:
        pathspec.GitIgnoreSpec.from_lines([pattern])
    except re.error as err:  # its message gives a position in the translated regex
        return err.msg
    except Exception as err:  # noqa: BLE001 - pathspec raises ValueError and its own errors
        return str(err) or type(err).__name__
    return None


def check_patterns(key: str, patterns) -> None:
    """Raise a :class:`ConfigError` naming the first pattern of ``patterns`` pathspec cannot
    compile (``key``: the setting or option they come from)."""
    for pattern in patterns:
        why = pattern_error(pattern)
        if why is not None:
            raise ConfigError(f"{key}: invalid pattern {pattern!r} ({why})")


def _pattern_list(key: str, value: Any) -> tuple[str, ...]:
    patterns = _string_list(key, value)
    check_patterns(key, patterns)
    return patterns


#: The largest ``max-file-size`` (a file size the operating system can give: ``2**63 - 1``).
MAX_FILE_SIZE_LIMIT = 2**63 - 1


def _size(key: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"{key}: expected a number of bytes (0 for no limit), got {_show(value)}")
    if value > MAX_FILE_SIZE_LIMIT:
        raise ConfigError(f"{key}: {value} is too large (at most {MAX_FILE_SIZE_LIMIT}; 0 for no limit)")
    return value


def _bool(key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{key}: expected true or false, got {_show(value)}")
    return value


def _per_file_ignores(key: str, value: Any) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if not isinstance(value, dict):
        raise ConfigError(f"{key}: expected a table of glob = [codes], got {_show(value)}")
    for glob in value:
        if not glob.lstrip("!"):
            raise ConfigError(f"{key}: invalid pattern {glob!r} (empty)")
    check_patterns(key, [glob[1:] if glob.startswith("!") else glob for glob in value])
    return tuple((glob, _code_list(f"{key}.{glob!r}", codes)) for glob, codes in value.items())


def _show(value: Any) -> str:
    kind = {bool: "a boolean", str: "a string", int: "an integer", float: "a number",
            list: "a list", dict: "a table"}.get(type(value), type(value).__name__)
    return f"{kind} ({value!r})" if not isinstance(value, (list, dict)) else kind


KEYS: dict[str, tuple[str, Callable[[str, Any], Any]]] = {
    "select": ("select", _code_list),
    "extend-select": ("extend_select", _code_list),
    "ignore": ("ignore", _code_list),
    "per-file-ignores": ("per_file_ignores", _per_file_ignores),
    "exclude": ("exclude", _pattern_list),
    "extend-exclude": ("extend_exclude", _pattern_list),
    "respect-gitignore": ("respect_gitignore", _bool),
    "src": ("src", _string_list),
    "max-file-size": ("max_file_size", _size),
    "preview": ("preview", _bool),
    "extend-per-file-ignores": ("extend_per_file_ignores", _per_file_ignores),
    "fixable": ("fixable", _code_list),
    "extend-fixable": ("extend_fixable", _code_list),
    "unfixable": ("unfixable", _code_list),
}
#: Keys read by :func:`load_options` itself, not by :func:`parse_options`.
FILE_KEYS = ("extend",)


def parse_options(table: dict[str, Any]) -> Options:
    """Validate one configuration table.

    Raises:
        ConfigError: an unknown key or a bad value; the message names the key.
    """
    values = {}
    for key, value in table.items():
        if key not in KEYS:
            close = difflib.get_close_matches(key, [*KEYS, *FILE_KEYS], n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ConfigError(f"unknown key {key!r}{hint}; known keys: {', '.join([*KEYS, *FILE_KEYS])}")
        attr, check = KEYS[key]
        values[attr] = check(key, value)
    return Options(**values)


def load_options(path: Path, _chain: tuple[str, ...] = ()) -> Options | None:
    """The options of one configuration file, with those of the file it ``extend``s
    (:func:`inherit`); ``None`` for a pyproject.toml without a ``[tool.loopcheck]`` table.

    Raises:
        ConfigError: the file cannot be read or parsed, or its table is invalid, or its
            ``extend`` names no configuration or a cycle; the message starts with the
            file's path.
    """
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"{path}: cannot read: {err}") from None
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{path}: invalid TOML: {err}") from None
    except RecursionError:  # tomllib recurses once per nested array or inline table
        raise ConfigError(f"{path}: invalid TOML: arrays or tables nested too deeply") from None
    if path.name == "pyproject.toml":
        tool = data.get("tool", {})
        if not isinstance(tool, dict) or "loopcheck" not in tool:
            return None
        table, where = tool["loopcheck"], "[tool.loopcheck]"
        if not isinstance(table, dict):
            raise ConfigError(f"{path}: {where} must be a table")
    else:
        table, where = data, ""
    sep = f" {where} " if where else " "
    table = dict(table)
    extend = table.pop("extend", None)
    try:
        options = parse_options(table)
    except ConfigError as err:
        raise ConfigError(f"{path}:{sep}{err}") from None
    if extend is None:
        return options
    if not isinstance(extend, str) or not extend.strip():
        raise ConfigError(f"{path}:{sep}extend: expected the path of a configuration file, got {_show(extend)}")
    parent_path = Path(os.path.expandvars(os.path.expanduser(extend)))
    if not parent_path.is_absolute():
        parent_path = path.parent / parent_path
    chain = (*_chain, os.path.realpath(path))
    if os.path.realpath(parent_path) in chain:
        raise ConfigError(f"{path}:{sep}extend: {extend!r} extends this file again (a cycle)")
    if not parent_path.is_file():
        raise ConfigError(f"{path}:{sep}extend: no such file {extend!r}")
    parent = load_options(parent_path, chain)
    if parent is None:
        raise ConfigError(f"{path}:{sep}extend: {extend!r} has no [tool.loopcheck] table")
    return inherit(rebase(parent, parent_path.parent, path.parent), options)


def rebase_pattern(pattern: str, old: Path, new: Path) -> str | None:
    """A gitignore-style ``pattern`` relative to directory ``old`` written relative to ``new``
    instead; ``None`` when it cannot match anything under ``new``. A pattern without a slash
    before its end (``*.py``, ``build/``) or starting with ``**/`` matches at any depth and
    stays as it is."""
    negated = pattern.startswith("!")
    body = pattern[1:] if negated else pattern
    old, new = Path(os.path.abspath(old)), Path(os.path.abspath(new))
    if old == new or "/" not in body.rstrip("/") or body.startswith("**/"):
        return pattern
    rel = body.lstrip("/")
    try:
        down = old.relative_to(new).as_posix()  # ``old`` under ``new``: prefix it
        moved = f"{down}/{rel}"
    except ValueError:
        try:
            up = new.relative_to(old).as_posix() + "/"  # ``new`` under ``old``: strip it
        except ValueError:
            return None
        if not rel.startswith(up) or rel == up:
            return None
        moved = rel[len(up):]
    return ("!" if negated else "") + "/" + moved


def _rebase_patterns(patterns, old: Path, new: Path) -> tuple[str, ...]:
    return tuple(p for p in (rebase_pattern(q, old, new) for q in patterns) if p is not None)


def _rebase_table(table, old: Path, new: Path) -> tuple:
    out = []
    for glob, codes in table:
        moved = rebase_pattern(glob, old, new)
        if moved is not None:
            out.append((moved, codes))
    return tuple(out)


def rebase(options: Options, old: Path, new: Path) -> Options:
    """``options`` of a file in directory ``old`` as if written in directory ``new``: its
    patterns rebased (:func:`rebase_pattern`), its ``src`` made absolute."""
    from dataclasses import replace

    return replace(
        options,
        exclude=None if options.exclude is None else _rebase_patterns(options.exclude, old, new),
        extend_exclude=_rebase_patterns(options.extend_exclude, old, new),
        per_file_ignores=_rebase_table(options.per_file_ignores, old, new),
        extend_per_file_ignores=_rebase_table(options.extend_per_file_ignores, old, new),
        src=None if options.src is None else tuple(os.path.abspath(os.path.join(old, s)) for s in options.src),
    )


def _selection(options: Options) -> Options:
    """The selection keys of ``options`` alone (one layer of :func:`select_codes`)."""
    return Options(select=options.select, extend_select=options.extend_select, ignore=options.ignore,
                   fixable=options.fixable, extend_fixable=options.extend_fixable, unfixable=options.unfixable)


def inherit(parent: Options, child: Options) -> Options:
    """``child``'s options on top of ``parent``'s (``extend``, and ``--config KEY=VALUE`` on a
    file's options): ``parent``'s selection becomes an earlier layer, ``extend-exclude`` and
    ``extend-per-file-ignores`` are joined, every other key ``child`` gives replaces
    ``parent``'s."""
    def pick(name: str):
        value = getattr(child, name)
        return value if value is not None else getattr(parent, name)

    return Options(
        select=child.select, extend_select=child.extend_select, ignore=child.ignore,
        per_file_ignores=child.per_file_ignores or parent.per_file_ignores,
        exclude=pick("exclude"),
        extend_exclude=(*parent.extend_exclude, *child.extend_exclude),
        respect_gitignore=pick("respect_gitignore"),
        src=pick("src"),
        max_file_size=pick("max_file_size"),
        preview=pick("preview"),
        extend_per_file_ignores=(*parent.extend_per_file_ignores, *child.extend_per_file_ignores),
        fixable=child.fixable, extend_fixable=child.extend_fixable, unfixable=child.unfixable,
        base=(*parent.base, _selection(parent), *child.base),
    )


def parse_override(text: str) -> Options:
    """``--config KEY=VALUE``: one TOML ``key = value`` of the configuration's keys.

    Raises:
        ConfigError: not TOML, an unknown key or a bad value.
    """
    try:
        table = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError) as err:
        raise ConfigError(f"--config {text!r}: neither a configuration file nor a TOML `key = value` ({err})") from None
    if "extend" in table:
        raise ConfigError(f"--config {text!r}: extend cannot be given on the command line")
    try:
        return parse_options(table)
    except ConfigError as err:
        raise ConfigError(f"--config {text!r}: {err}") from None


def config_in(directory: Path) -> tuple[Path, Options] | None:
    """The configuration file of ``directory`` itself (not its parents), with its options."""
    for name in CONFIG_NAMES:
        path = directory / name
        try:
            found = path.is_file()
        except OSError:  # an unreadable directory: the search reports it when it reads it
            found = False
        if found:
            options = load_options(path)
            if options is not None:
                return path, options
    return None


def find_config(start: Path) -> Path | None:
    """The closest configuration file in ``start`` (a directory) or above it."""
    start = start.resolve()
    for directory in (start, *start.parents):
        found = config_in(directory)
        if found is not None:
            return found[0]
    return None


# --- resolved settings ----------------------------------------------------------------


def _spec(patterns) -> pathspec.GitIgnoreSpec:
    return pathspec.GitIgnoreSpec.from_lines(list(patterns))


def directory_prefix(relative: str) -> str:
    """A relative directory as the start of its entries' relative paths, in the form pathspec
    matches: ``"a/b/"``; ``""`` for the directory itself (``""`` or ``"."``)."""
    return "" if relative in ("", ".") else relative.replace(os.sep, "/") + "/"


@dataclass
class Settings:
    """What applies to the files of one directory tree.

    Attributes:
        base: the directory patterns are relative to.
        codes: the enabled rule codes (before per-file-ignores).
        exclude: the compiled ``exclude`` + ``extend-exclude`` patterns.
        per_file_ignores: ``(pattern, negated, codes)`` triples.
        respect_gitignore: skip what ``.gitignore`` files exclude.
        config_path: the file these settings come from (``None``: defaults).
        src: extra directories the project's modules are looked up in (absolute).
        max_file_size: files larger than this many bytes are skipped (0: no limit).
        preview: preview is on (``preview``/``--preview``): prefixes enable rules in preview too.
        fixable: the codes whose fixes are shown and applied (``fixable``/``unfixable``).
    """

    base: Path
    codes: frozenset[str]
    exclude: pathspec.GitIgnoreSpec
    per_file_ignores: list[tuple[pathspec.GitIgnoreSpec, bool, frozenset[str]]] = field(default_factory=list)
    respect_gitignore: bool = True
    config_path: Path | None = None
    src: tuple[Path, ...] = ()
    max_file_size: int = DEFAULT_MAX_FILE_SIZE
    preview: bool = False
    fixable: frozenset[str] = frozenset(INFOS)

    def _relative(self, path: Path) -> str:
        path = Path(os.path.abspath(path))
        try:
            return path.relative_to(self.base).as_posix()
        except ValueError:
            return path.as_posix().lstrip("/")

    def is_excluded(self, path: Path, is_dir: bool = False) -> bool:
        """Whether ``exclude``/``extend-exclude`` match ``path`` or a directory above it."""
        rel = self._relative(path)
        return bool(rel) and self.exclude.match_file(rel + ("/" if is_dir else ""))

    def entry_prefix(self, directory: Path) -> str:
        """What the paths :meth:`is_excluded` matches for the entries of ``directory`` start
        with: its path relative to :attr:`base` and a slash (``"models/"``; ``""`` at the base),
        so that ``exclude.match_file(prefix + name)`` judges an entry without building its path."""
        return directory_prefix(self._relative(directory))

    def excludes_name(self, name: str, is_dir: bool = False) -> bool:
        """Whether a pattern matches ``name`` itself (used inside a directory that was
        named explicitly although excluded: its entries are judged by their own names)."""
        return self.exclude.match_file(name + ("/" if is_dir else ""))

    def codes_for(self, path: Path) -> frozenset[str]:
        """The codes enabled for one file, after its per-file-ignores."""
        if not self.per_file_ignores:
            return self.codes
        rel = self._relative(path)
        codes = set(self.codes)
        for spec, negated, ignored in self.per_file_ignores:
            if spec.match_file(rel) != negated:
                codes -= ignored
        return frozenset(codes)


def _codes(prefixes) -> set[str]:
    return set().union(*(match_codes(p) for p in prefixes)) if prefixes else set()


def _specificity(prefix: str) -> int:
    prefix = canonical_selector(prefix)
    return -1 if prefix == "ALL" else len(prefix)


def default_codes(preview: bool = False) -> set[str]:
    """The codes enabled when nothing is selected: every rule, those in preview only with
    ``preview``."""
    return set(INFOS) if preview else set(INFOS) - PREVIEW


def select_codes(layers: list[Options], start: set[str] | None = None, preview: bool = False) -> set[str]:
    """The enabled codes after applying layers of ``select``/``extend-select``/``ignore``.

    As in ruff: within a layer, a more specific prefix wins over a less specific one
    (``select = ["LC101"]`` with ``ignore = ["LC1"]`` keeps LC101) and ``ignore`` wins at
    equal specificity; a layer that sets ``select`` replaces what the earlier layers chose,
    a layer that does not adds its ``extend-select`` and removes its ``ignore``. Without
    ``preview``, a rule in preview is enabled only by its exact code or name, never by a
    prefix, ``ALL`` or the default (``start``: the codes before the first layer; default:
    :func:`default_codes`).
    """
    current = default_codes(preview) if start is None else set(start)
    for layer in layers:
        updates: dict[str, bool] = {}
        enabling = [*(layer.select or ()), *layer.extend_select]
        for level in sorted({_specificity(p) for p in (*enabling, *layer.ignore)}):
            for p in enabling:
                if _specificity(p) == level:
                    codes = match_codes(p)
                    if not preview and not is_exact(p):
                        codes -= PREVIEW
                    updates.update(dict.fromkeys(codes, True))
            for p in layer.ignore:
                if _specificity(p) == level:
                    updates.update(dict.fromkeys(match_codes(p), False))
        if layer.select is not None:
            current = {code for code, on in updates.items() if on}
        else:
            current |= {code for code, on in updates.items() if on}
            current -= {code for code, on in updates.items() if not on}
    return current


def fixable_codes(layers: list[Options]) -> set[str]:
    """The codes whose fixes apply after layers of ``fixable``/``extend-fixable``/``unfixable``
    (every rule by default), with :func:`select_codes`'s precedence."""
    as_selection = [Options(select=o.fixable, extend_select=o.extend_fixable, ignore=o.unfixable) for o in layers]
    return select_codes(as_selection, start=set(INFOS), preview=True)


def resolve(file: Options, cli: Options, base: Path, config_path: Path | None = None,
            overrides: Options | None = None) -> Settings:
    """Settings from a configuration file's options (with ``--config KEY=VALUE``'s
    ``overrides`` on top) overridden by the command line's."""
    if overrides is not None:
        file = inherit(file, overrides)
    preview = cli.preview if cli.preview is not None else bool(file.preview)
    layers = [*file.base, file, cli]
    codes = select_codes(layers, preview=preview)
    exclude = cli.exclude if cli.exclude is not None else file.exclude
    if exclude is None:
        exclude = DEFAULT_EXCLUDE
    exclude = (*exclude, *file.extend_exclude, *cli.extend_exclude)
    per_file = []
    for glob, prefixes in (*file.per_file_ignores, *file.extend_per_file_ignores, *cli.extend_per_file_ignores):
        negated = glob.startswith("!")
        per_file.append((_spec([glob[1:] if negated else glob]), negated, frozenset(_codes(prefixes))))
    respect = cli.respect_gitignore if cli.respect_gitignore is not None else file.respect_gitignore
    max_size = cli.max_file_size if cli.max_file_size is not None else file.max_file_size
    check_patterns("--exclude/--extend-exclude", (*(cli.exclude or ()), *cli.extend_exclude))
    return Settings(
        base=Path(os.path.abspath(base)),
        codes=frozenset(codes),
        exclude=_spec(exclude),
        per_file_ignores=per_file,
        respect_gitignore=True if respect is None else respect,
        config_path=config_path,
        src=tuple(Path(os.path.abspath(os.path.join(base, p))) for p in (file.src or ())),
        max_file_size=DEFAULT_MAX_FILE_SIZE if max_size is None else max_size,
        preview=preview,
        fixable=frozenset(fixable_codes(layers)),
    )


class Resolver:
    """Gives each directory its settings: from the closest configuration file, or one
    fixed file (``--config``), or none (``isolated``), always overridden by ``cli``.

    Raises (from :meth:`for_directory`):
        ConfigError: a configuration file on the way is invalid.
    """

    def __init__(self, cli: Options, config: Path | None = None, isolated: bool = False,
                 cwd: Path | None = None, overrides: Options | None = None) -> None:
        self.cli = cli
        self.overrides = overrides
        self.cwd = Path(os.path.abspath(cwd or Path.cwd()))
        self._cache: dict[Path, Settings] = {}
        self._by_name: dict[str, Settings] = {}  # for_file's, by the directory's absolute name
        self.fixed: Settings | None = None
        if config is not None:
            options = load_options(config)
            if options is None:
                raise ConfigError(f"{config}: no [tool.loopcheck] table")
            self.fixed = resolve(options, cli, self.cwd, config, overrides)
        elif isolated:
            self.fixed = resolve(Options(), cli, self.cwd, overrides=overrides)
        self._default: Settings | None = None

    @property
    def default(self) -> Settings:
        """The settings where no configuration file applies."""
        if self._default is None:
            self._default = self.fixed or resolve(Options(), self.cli, self.cwd, overrides=self.overrides)
        return self._default

    def for_directory(self, directory: Path) -> Settings:
        """The settings of the files directly in ``directory``."""
        if self.fixed is not None:
            return self.fixed
        directory = Path(os.path.abspath(directory))
        chain = []
        settings = None
        d = directory
        while True:
            if d in self._cache:
                settings = self._cache[d]
                break
            chain.append(d)
            found = config_in(d)
            if found is not None:
                path, options = found
                settings = resolve(options, self.cli, d, path, self.overrides)
                break
            if d.parent == d:
                settings = self.default
                break
            d = d.parent
        for d in chain:
            self._cache[d] = settings
        return settings

    def for_file(self, path: Path) -> Settings:
        """The settings of one file (those of its directory)."""
        directory = os.path.dirname(os.path.abspath(path))
        settings = self._by_name.get(directory)
        if settings is None:
            settings = self._by_name[directory] = self.for_directory(Path(directory))
        return settings
