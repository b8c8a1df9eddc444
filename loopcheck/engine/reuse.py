"""Take the IR of an unchanged function from the last check of the same document.

The language server checks every version of an edited document, and building the IR of each
entry point (:mod:`loopcheck.engine.builder`) is most of a check: on a 2,000-line script, 244
functions and methods are built again after each keystroke, though the keystroke changed one
of them. The reparse (:mod:`loopcheck.server.reparse`) keeps the node objects of the statements an
edit did not touch, and LibCST nodes are immutable, so a function whose node is the same
object has the same text. Its IR is the same too when everything else its build read is
the same; :class:`UnitMemo` keeps each entry point's IR with a
:class:`~loopcheck.engine.builder.UnitRecord` of what its build read and changed, and takes
it again only when:

* the module's *shape* is the same (:func:`module_shape`: its imports, global names and the
  integers its run constants hold, functions, classes with their bases and method names, its
  name and path, whether it is part of a project), so that every name resolves to the same
  place;
* every function of the module the build resolved a call to is still in the module (the same
  node object), which also covers the functions nested in them;
* the project still answers ``None`` to every name the build looked up in it (it read no
  other module: a build that did is not kept), and no closure another entry point returned
  is now found under a name the build looked up;
* the inlining cap (:data:`~loopcheck.engine.builder.MAX_EVENTS_PER_UNIT`, counted over the
  whole check) stopped nothing in the old build and stops nothing now.

The builder's shared state is then brought where the build would have left it (the functions
inlined, the ``self.<method>()`` calls, the nodes' module, the latest raw event of each call,
the event count), and the IR's references to the old module index are moved to the new one.
Each entry point names its frames by its own number (``f<tag>_<n>``), so a taken IR has the
symbols a new build would give it. The result is the check of a fresh process (the test suite
compares the findings of both on random edits of real training scripts).
"""

from __future__ import annotations

from loopcheck.engine.builder import MAX_EVENTS_PER_UNIT, ModuleIndex, UnitBuilder, UnitRecord, literal_constants


def module_shape(index: ModuleIndex) -> tuple:
    """What the builder resolves names with, apart from the function bodies: equal shapes
    resolve every name of an unchanged function to the same place."""
    imports = index.imports
    return (
        tuple(sorted(imports.aliases.items())), imports.package, tuple(imports.stars),
        tuple(sorted(literal_constants(index).items())),  # ``range(num_epochs)``, ``if use_amp:``
        tuple(index.functions), frozenset(index.globals),
        tuple((name, tuple(info.methods), info.bases) for name, info in index.classes.items()),
        index.name, str(index.path), index.project is None,
    )


def _functions(index: ModuleIndex) -> set:
    out = set(index.functions.values())
    for info in index.classes.values():
        out.update(info.methods.values())
    return out


class UnitMemo:
    """The entry points built by the last check of one document (see the module docstring).

    One per document, carried from one check to the next (the language server keeps it in
    :attr:`Reparser.tables <loopcheck.server.reparse.Reparser.tables>`, which a full parse empties);
    not thread-safe. Between :meth:`start` and :meth:`finish`, :meth:`take` answers the IR of
    an entry point of the last check and :meth:`keep` stores one of this check.

    Attributes:
        taken, built: entry points taken again and built anew by the last check (for tests
            and measurement).
    """

    def __init__(self) -> None:
        # the last finished check: its module's shape, functions and methods, entry points
        self._shape: tuple | None = None
        self._functions: set = set()
        self._records: dict[tuple, UnitRecord] = {}
        # the check under way: the same
        self._next_shape: tuple | None = None
        self._current: set = set()
        self._next: dict[tuple, UnitRecord] = {}
        self._answers: dict = {}
        self.taken = self.built = 0

    def __len__(self) -> int:
        return len(self._records)

    def start(self, index: ModuleIndex) -> None:
        """Begin a check of the module ``index`` describes."""
        self._next_shape = module_shape(index)
        if self._next_shape != self._shape:
            self._records = {}
        self._current = _functions(index)
        self._next = {}
        self._answers = {}  # (qualified name, near) -> whether the project answers None, this check
        self.taken = self.built = 0

    def take(self, builder: UnitBuilder, key: tuple) -> object | None:
        """The IR of entry point ``key`` (``(function, grad mode, tag)``) from the last check,
        with ``builder``'s state brought where building it would have left it; ``None`` when
        it must be built."""
        record = self._records.get(key)
        if record is None or not record.reusable or not self._unchanged(builder, record):
            return None
        builder.replay(record)
        self._next[key] = record
        self.taken += 1
        return record.ir

    def _unchanged(self, builder: UnitBuilder, record: UnitRecord) -> bool:
        old_functions, current = self._functions, self._current
        if any(f not in current and f in old_functions for f in record.reads):
            return False
        if record.start + record.events > MAX_EVENTS_PER_UNIT or builder.n_events + record.events > MAX_EVENTS_PER_UNIT:
            return False
        if any(sym in builder.func_values for sym in record.misses):
            return False
        if not record.lookups:
            return True
        project, answers = builder.index.project, self._answers
        if project is None:
            return False
        for asked in record.lookups:
            answer = answers.get(asked, answers)
            if answer is answers:
                answer = answers[asked] = project.lookup(*asked) is None
            if not answer:
                return False
        return True

    def keep(self, key: tuple, record: UnitRecord) -> None:
        """Store entry point ``key``'s build of this check for the next one."""
        self._next[key] = record
        self.built += 1

    def release(self) -> None:
        """Forget every entry point (see :meth:`UnitRecord.release
        <loopcheck.engine.builder.UnitRecord.release>`)."""
        for record in (*self._records.values(), *self._next.values()):
            record.release()
        self._records, self._next, self._shape = {}, {}, None

    def finish(self) -> None:
        """End the check: the entry points it took or built replace the last check's. (A check
        that ends without it, interrupted, leaves the last finished check's entry points.)"""
        kept = set(map(id, self._next.values()))
        for record in self._records.values():
            if id(record) not in kept:
                record.release()
        self._shape, self._functions, self._records = self._next_shape, self._current, self._next
        self._next = {}
