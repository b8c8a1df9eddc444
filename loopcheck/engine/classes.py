"""What kind of class a class is: whether it is an ``nn.Module``.

Asked by the IR builder (:mod:`loopcheck.engine.builder`: a module built inside another
module's ``__init__`` is a submodule, whose construction is not inlined) and by the value and
module rules (:mod:`loopcheck.engine.values`, :mod:`loopcheck.rules.modules`). Kept apart from
both so that the builder, which :mod:`loopcheck.engine.values` imports, can ask too.
"""

from __future__ import annotations

from loopcheck.engine.knowledge import knowledge

#: Library containers: whether they change in train/eval mode, and what they return, depends on
#: the modules they hold (``nn.Sequential`` returns its last layer's output).
CONTAINERS = frozenset({
    "torch.nn.Sequential", "torch.nn.ModuleList", "torch.nn.ModuleDict", "torch.nn.ParameterList",
    "torch.nn.ParameterDict", "torch.nn.Parameter", "torch.nn.parameter.Parameter", "torch.nn.Identity",
})


def is_module_class(cls, _seen: frozenset = frozenset()) -> bool:
    """Whether a class is an ``nn.Module``: a project class (a
    :class:`~loopcheck.engine.builder.ClassRef`) deriving from one, or a library class (its
    qualified name) the knowledge says builds a model or derives from ``torch.nn.Module``.
    A project class's bases in other modules are looked up in its project (read, not built)."""
    kb = knowledge()
    if isinstance(cls, str):
        if cls in CONTAINERS:
            return True
        summary = kb.callable(cls)
        if summary is not None and summary.returns is not None and summary.returns.role == "model":
            return True
        return kb.is_subclass(cls, "torch.nn.Module")
    if cls in _seen or cls.info is None:
        return False
    for base in cls.info.bases:
        ref = cls.module.class_ref(base) or cls.module.class_ref(base, qualified=True)
        if is_module_class(ref if ref is not None else base, _seen | {cls}):
            return True
    return False
