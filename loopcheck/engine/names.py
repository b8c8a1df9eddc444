"""Import-alias resolution: turn the names a script uses into qualified names.

``from torch import optim`` then ``optim.Adam`` → ``torch.optim.Adam``;
``from torch.nn.utils import clip_grad_norm_ as clip`` then ``clip`` →
``torch.nn.utils.clip_grad_norm_``. Only ``import`` statements are followed (no type
inference); a name that was not imported qualifies to itself. A star import of a project
module binds the names that module imported (``from utils import *`` where ``utils.py``
does ``import torch``): :meth:`loopcheck.engine.project.Project.bind_stars` adds them.
"""

from __future__ import annotations

import libcst as cst


_NAME, _ATTRIBUTE = cst.Name, cst.Attribute
#: ``str`` methods that map a string to one other string and change nothing: a test on one
#: (``mode.lower() == "train"``) is decided by applying it to the literal or constant it is
#: compared with (the builder's ``decide_test``, the dataflow's correlated tests).
STR_TRANSFORMS = frozenset({"lower", "upper", "casefold", "strip"})


def dotted_name(expr: cst.BaseExpression) -> str | None:
    """Return ``"a.b.c"`` for a Name/Attribute chain, ``None`` for anything else.

    Args:
        expr: any LibCST expression, e.g. ``self.model.fc``.
    """
    # ``type(...) is``: both classes are final, and ``isinstance`` on LibCST's abstract-base
    # classes takes the slow path for every other node (the hottest test of the builder)
    t = type(expr)
    if t is _NAME:
        return expr.value
    if t is not _ATTRIBUTE:
        return None
    parts: list[str] = []
    while type(expr) is _ATTRIBUTE:
        parts.append(expr.attr.value)
        expr = expr.value
    if type(expr) is not _NAME:
        return None
    parts.append(expr.value)
    return ".".join(reversed(parts))


def names_variable(node: cst.Name, table: dict) -> bool:
    """Whether the ``Name`` node ``node`` stands for a variable (read, bound or declared there)
    rather than spelling another thing that shares the name: the attribute of an
    :class:`~libcst.Attribute` (``model.layers``), the keyword of an argument
    (``dict(layers=3)``), the module of ``from layers import x`` or the dotted path of ``import
    a.layers``, the imported name of ``import layers as l`` (``l`` is bound, not ``layers``).
    ``table``: child → parent node (:func:`~loopcheck.engine.walk.parent_table`)."""
    up = table.get(node)
    t = type(up)
    if t is cst.Attribute:
        return up.value is node
    if t is cst.Arg:
        return up.keyword is not node
    if t is cst.ImportFrom:
        return False  # (the module's name; the names it binds are under ImportAlias)
    if t is cst.ImportAlias:
        return up.asname is None
    return True


def _module_path(node: cst.BaseExpression | None) -> str:
    return dotted_name(node) if node is not None else ""  # type: ignore[return-value]


def _asname(alias: cst.ImportAlias) -> str | None:
    asname = alias.asname
    return asname.name.value if asname is not None and isinstance(asname.name, cst.Name) else None


class ImportMap:
    """Local name → qualified name, collected from the import statements of one file.

    Imports anywhere in the file (module level or inside functions) are merged: training
    scripts rarely rebind an imported name to something else, and a wrong alias can only
    make a call unrecognised, never invent one. Relative imports (``from .utils import f``)
    are made absolute with the file's package (``pkg.utils.f``) when it is known; star imports
    are remembered as modules to look names up in.

    Args:
        package: the dotted package the file belongs to (``"pkg.sub"`` for
            ``pkg/sub/train.py``, ``""`` for a top-level module), ``None`` when unknown
            (relative imports are then ignored).
    """

    def __init__(self, package: str | None = None) -> None:
        self.aliases: dict[str, str] = {}
        self.package = package
        self.stars: list[str] = []
        #: the project module files whose imports the star imports took (file -> its stamp
        #: then), filled by :meth:`loopcheck.engine.project.Project.bind_stars`
        self.star_sources: dict = {}

    def add(self, node: cst.Import | cst.ImportFrom) -> None:
        """Record the aliases one ``import``/``from ... import`` statement binds."""
        if isinstance(node, cst.Import):
            for alias in node.names:
                self.add_import(_module_path(alias.name), _asname(alias))
            return
        names = None if isinstance(node.names, cst.ImportStar) else [
            (_module_path(alias.name), _asname(alias)) for alias in node.names
        ]
        self.add_from(_module_path(node.module), len(node.relative), names)

    def add_import(self, module: str, asname: str | None) -> None:
        """``import module`` (binds its top package) or ``import module as asname``."""
        if asname is not None:
            self.aliases[asname] = module
        else:
            top = module.split(".")[0]
            self.aliases.setdefault(top, top)

    def add_from(self, module: str, level: int, names: list[tuple[str, str | None]] | None) -> None:
        """``from <level dots><module> import name [as asname], ...``; ``names`` ``None`` for
        ``import *``."""
        base = module
        if level:
            if self.package is None:
                return
            parts = self.package.split(".") if self.package else []
            up = level - 1
            if up > len(parts):
                return
            base = ".".join(parts[: len(parts) - up] + ([base] if base else []))
        if names is None:
            if base:
                self.stars.append(base)
            return
        for name, asname in names:
            self.aliases[asname or name] = f"{base}.{name}" if base else name

    def qualify(self, dotted: str | None) -> str | None:
        """Qualify a dotted local name: ``"nn.utils.clip_grad_norm_"`` → ``"torch.nn.utils.clip_grad_norm_"``."""
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        target = self.aliases.get(head)
        if target is None:
            return dotted
        return f"{target}.{rest}" if rest else target
