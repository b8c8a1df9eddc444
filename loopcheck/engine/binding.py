"""Whether a call binds its arguments to the parameters of the function it runs.

Python binds a call's arguments before the function's first statement runs, and raises
``TypeError`` when they do not fit: more positional arguments than positional parameters
(``set_up(argv)`` for ``def set_up():``), a keyword no parameter takes (``model(x,
labels=y)`` for ``def forward(self, x):``), a parameter given twice, or a parameter without
a default given nothing (``Learner(conf, True)`` for ``def __init__(self, conf):``). Such a
call raises on every run, so nothing after it in its block runs: the builder ends the path
there, as it does after ``sys.exit()`` (:meth:`loopcheck.engine.builder.UnitBuilder.call_cannot_bind`).
Inside an inlined
function, such a call ends the caller's path as well when every path of the function reaches
one (:func:`loopcheck.engine.dataflow._ways`).

Only what the call's text and the function's signature fix is decided: a call that spreads
``*args`` or ``**kwargs`` binds or not by values the analysis does not see, and is taken to
bind.
"""

from __future__ import annotations

import libcst as cst


def binds(func: cst.FunctionDef, call: cst.Call, bound_self: bool) -> bool:
    """Whether the arguments of ``call`` bind to the parameters of ``func`` (Python's rules;
    see the module docstring). ``bound_self``: the call passes the first parameter implicitly
    (a method called on an instance, a class's constructor running ``__init__``). ``True``
    when the call spreads ``*args``/``**kwargs`` (not decided)."""
    if any(a.star for a in call.args):
        return True
    p = func.params
    positional = [x.name.value for x in (*p.posonly_params, *p.params)]
    if bound_self:
        if not positional:
            return type(p.star_arg) is cst.Param  # ``def f(*args)`` takes self in args
        positional = positional[1:]
    defaults = {x.name.value for x in (*p.posonly_params, *p.params, *p.kwonly_params) if x.default is not None}
    posonly = {x.name.value for x in p.posonly_params}
    keywordable = {*positional, *(x.name.value for x in p.kwonly_params)} - posonly
    given_positionally = [a for a in call.args if a.keyword is None]
    if len(given_positionally) > len(positional) and type(p.star_arg) is not cst.Param:
        return False  # too many positional arguments
    filled = set(positional[: len(given_positionally)])
    for a in call.args:
        if a.keyword is None:
            continue
        name = a.keyword.value
        if name not in keywordable:
            if p.star_kwarg is None:
                return False  # no parameter takes this keyword
            continue  # into ``**kwargs`` (a positional-only name too)
        if name in filled:
            return False  # given twice
        filled.add(name)
    required = [*positional, *(x.name.value for x in p.kwonly_params)]
    return all(name in filled or name in defaults for name in required)
