"""Run a typestate machine over the event IR: a fixpoint over a finite set of states.

A :class:`Machine` has an initial state, a transfer function per typed event and,
optionally, a hook for the arms of an ``if``. :func:`run` interprets the structured IR
with sets of states: ``if`` joins its arms, a loop iterates its body until the states at
its head stop changing (so the last iteration flows back into the first; a loop is taken
to run at least once; a loop that binds the machine's object anew on each iteration runs its
body once, see :meth:`Machine.rebinds`; a path on the first pass of a counted loop takes only
the arm its counter's first value gives an ``if`` of that counter, :attr:`If.first_pass`, and a
machine may tell the states that go round a loop from the others, :meth:`Machine.goes_round`), ``break``,
``continue`` and ``return`` carry their states to where they land, and an inlined
function's ``return`` ends only that function. The result gives, for every typed event,
the set of states in which it can run; rules decide from that set.
"""

from __future__ import annotations

import ast
import weakref
from dataclasses import dataclass, field
from typing import Hashable, Iterable, NamedTuple

import libcst as cst

from loopcheck.engine.attr_facts import assigned_ends, ends, owner, truth_test
from loopcheck.engine.builder import NO_VALUE, decide_test, literal_value
from loopcheck.engine.events import Event, sets_mode
from loopcheck.engine.ir import Assign, Call, If, Inline, Jump, Loop, Node, Seq, Try, parts, walk_events
from loopcheck.engine.names import STR_TRANSFORMS
from loopcheck.engine.walk import names_in

State = Hashable


#: What :meth:`Machine.branch` returns for an arm the path cannot take.
NOT_TAKEN = object()


class Machine:
    """Base class of a rule's state machine; states must be hashable.

    ``kinds``: the event kinds :meth:`transfer` reacts to (``None``: all). Parts of the
    program without such events (and without jumps) are skipped.

    ``subjects``: the symbols of the object the machine follows (its name and aliases); in an
    ``if`` arm where the test says that object is not there (``if opt is not None:``), the
    state becomes :meth:`absent`, when the machine has such a state. When they are all locals
    of inlined calls, the other inlined calls are not run for this machine (see
    :meth:`_Interpreter._local_call`).
    """

    kinds: frozenset[str] | None = None
    subjects: frozenset[str] = frozenset()
    #: ``transfer`` changes the state only on events whose subject is one of ``subjects``.
    only_own_events: bool = False
    #: The machine's findings are orderings of its own events, which hold on the paths where
    #: those events complete: where a call raises whose event would have changed the state
    #: (:meth:`transfer` gives another state) or acts on the machine's object (:meth:`acts`),
    #: the path is not followed to the handlers of an enclosing ``try`` (a ``scaler.update()``
    #: that raised out of memory did not update, and an ``except RuntimeError: continue`` that
    #: swallowed it is not a run the program makes as written). A path that raises elsewhere
    #: (a call that is none of the machine's, a loop's fetch of its next item, an explicit
    #: ``raise``) still reaches the handlers.
    own_events_complete: bool = False

    def initial(self) -> State:
        raise NotImplementedError

    def absent(self) -> State | None:
        """The state of a path on which the object does not exist (``None``: no such state)."""
        return None

    def transfer(self, state: State, event: Event) -> State:
        """The state after ``event`` runs in ``state``; :data:`NOT_TAKEN` when the state says
        the event raises there (``model.cuda()`` on a path that knows the process cannot use
        CUDA): the path ends at it, and goes on only to the handlers of an enclosing ``try``
        (:meth:`raised`)."""
        return state

    def raised(self, state: State, event: Event) -> State:
        """The state where ``event`` raised, to the handlers of an enclosing ``try``; default: the
        state before it (an event that raises has not happened). A machine whose event may
        have done part of its work before it raised says what that part leaves. (It is asked
        for every typed event of a call; for a machine whose own events complete,
        :attr:`own_events_complete`, its answers are kept only when no event of the call
        changes the state or :meth:`acts` on the machine's object, and dropped otherwise: such
        a call is taken not to raise, :meth:`_Interpreter._raising`.)"""
        return state

    def acts(self, state: State, event: Event) -> bool:
        """Whether ``event`` acts on the machine's object in ``state`` where :meth:`transfer`
        gives the state back (the states do not tell one run of the event from several: a
        backward adding to gradients already filled). Read for :attr:`own_events_complete`
        only, an event that changes the state being one of the machine's own; default: no."""
        return False

    def branch(self, state: State, node: If, taken: bool) -> State:
        """The state on entering the body (``taken``) or the else-arm of ``node``;
        :data:`NOT_TAKEN` when the state says the path cannot take that arm (``if
        was_training:`` with the mode saved in ``was_training`` known)."""
        return state

    def enter(self, state: State, call: Inline) -> State:
        """The state on entering the body of an inlined call (each time it runs): a machine
        that follows an object by a local variable of that function knows the variable is
        unbound there until the body assigns it."""
        return state

    def rebinds(self, loop: Loop) -> bool:
        """Whether each iteration of ``loop`` may give the machine's names another object
        (``for opt in optimizers:``): the body is then run once, from the states on entry to
        the loop, for the object of each iteration (the previous iteration's states are
        another object's)."""
        return False

    def loop_entry(self, state: State, loop: Loop) -> State:
        """The state at the start of each iteration of ``loop``, once its ``for`` target is
        bound to the next element (default: unchanged). A machine that follows an object by a
        name the target binds says there what the new element is."""
        return state

    def goes_round(self, state: State, loop: Loop) -> State:
        """The state of a path that has ended a pass of ``loop`` (its body's end, or a
        ``continue``) and goes round to the next one (default: unchanged); the paths that leave
        the loop keep theirs. A machine that tells a state reached on a later pass from one
        reached on the first says so here."""
        return state

    def branches_on(self, node: If) -> bool:
        """Whether ``node`` is opaque to the machine for its test alone: :meth:`branch` may
        return anything but the state it is given there (default: whenever a subclass
        overrides :meth:`branch`). Read by :meth:`_Interpreter._correlated_tests` only; a
        machine that decides only some tests (``if was_training:``) says which, so that the
        others cost nothing. It may also answer ``False`` for an ``if`` its :meth:`branch`
        decides when that ``if`` holds an event of its kinds, which makes it opaque anyway (the
        gradient machine); so ``False`` does not mean that :meth:`branch` gives the state back."""
        return type(self).branch is not Machine.branch


@dataclass
class _Out:
    normal: set = field(default_factory=set)
    brk: set = field(default_factory=set)
    cont: set = field(default_factory=set)
    ret: set = field(default_factory=set)
    exc: set = field(default_factory=set)  # states that raised: to an enclosing try's handlers, else gone
    #: inside the body of a ``try`` with handlers only (:attr:`_Interpreter._catching`): the
    #: states before each call or statement that may raise (its own effect not applied), from
    #: which an exception may reach those handlers
    raised: set = field(default_factory=set)


@dataclass
class Flow:
    """The result of :func:`run`: ``at[event]`` is the set of states reaching the event;
    ``exit`` the states at the end of the unit."""

    at: dict[Event, set] = field(default_factory=dict)
    exit: set = field(default_factory=set)

    def states(self, event: Event) -> set:
        return self.at.get(event, set())


MAX_LOOP_ITERATIONS = 50

#: The name a test of a module's mode attribute (:attr:`~loopcheck.engine.ir.If.mode_of`:
#: ``if model.training:``) mentions besides its own, and that an event which may set a
#: module's mode (:func:`~loopcheck.engine.events.sets_mode`) re-binds: ``model.eval()``
#: changes ``model.training`` without assigning any name of the test, so a path that
#: remembered the test's outcome forgets it there.
MODE_NAME = "<mode>"


_REPEATED: "weakref.WeakKeyDictionary[Seq, dict]" = weakref.WeakKeyDictionary()


def _ifs_by_call(node: Node, fid: str = ""):
    """``(if, fid)`` for each ``If`` under ``node``: ``fid`` names the innermost inlined call
    that holds it (``""``: the entry point's own code)."""
    if isinstance(node, If):
        yield node, fid
    inner = node.fid if isinstance(node, Inline) else fid
    for part in parts(node):
        yield from _ifs_by_call(part, inner)


#: Arithmetic operators whose value over integers is one integer: an expression of them over
#: plain names and integer literals has one value while none of its names is re-bound.
_ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.FloorDivide, cst.Modulo)


def _arithmetic(expr: cst.BaseExpression) -> bool:
    """Whether ``expr`` is built of plain names and integer literals by :data:`_ARITHMETIC`
    operators only (``t``, ``t % 2``, ``(i + 1) % k``): nothing but a re-binding of one of its
    names changes its value (no call, attribute or subscript)."""
    t = type(expr)
    if t is cst.Name or t is cst.Integer:
        return True
    if t is cst.BinaryOperation:
        return type(expr.operator) in _ARITHMETIC and _arithmetic(expr.left) and _arithmetic(expr.right)
    return False


def _parity(expr: cst.BaseExpression) -> bool:
    """Whether ``expr`` is ``x % 2`` (``x`` an :func:`_arithmetic` expression), which takes
    the values 0 and 1 only where ``x`` is an integer."""
    return (type(expr) is cst.BinaryOperation and type(expr.operator) is cst.Modulo
            and type(expr.right) is cst.Integer and expr.right.evaluated_value == 2)


def equality_test(test: cst.BaseExpression) -> tuple[str, str | None, object, bool] | None:
    """``(subject, transform, literal, parity)`` of a test ``subject == literal`` or
    ``subject.lower() == literal`` (``transform``: the :data:`STR_TRANSFORMS` method, else
    ``None``); ``subject`` is a plain name (an attribute, ``cfg.mode``, may be changed by a
    call that has ``cfg``: not read), or an :func:`_arithmetic` expression over plain names
    compared with an integer (``t % 2 == 1``), given by its syntax tree (:func:`test_text`) so
    that its spelling does not matter; the literal a string or a number. ``parity``: the
    subject is ``x % 2`` (:func:`_parity`). ``None`` for any other test."""
    if type(test) is not cst.Comparison or len(test.comparisons) != 1:
        return None
    comp = test.comparisons[0]
    if type(comp.operator) is not cst.Equal:
        return None
    left, transform = test.left, None
    if type(left) is cst.Call and not left.args and type(left.func) is cst.Attribute and left.func.attr.value in STR_TRANSFORMS:
        left, transform = left.func.value, left.func.attr.value
    right = comp.comparator
    if type(right) is cst.SimpleString:
        value: object = right.evaluated_value
    elif type(right) is cst.Integer:
        value = right.evaluated_value
    else:
        return None
    if type(left) is cst.Name:
        return left.value, transform, value, False
    if transform is None and type(value) is int and type(left) is cst.BinaryOperation and _arithmetic(left):
        bare = left.with_changes(lpar=[], rpar=[])
        return test_text(cst.Module([]).code_for_node(bare)), None, value, _parity(left)
    return None


def exclusive(a: tuple, b: tuple) -> bool:
    """Whether two :func:`equality_test` tests are of one subject and cannot both be true:
    ``mode == "train"`` and ``mode == "valid"``; ``mode.lower() == "valid"`` and ``mode ==
    "train"`` (``"train".lower()`` is not ``"valid"``); ``t % 2 == 1`` and ``t % 2 == 0``.
    Two different transforms decide nothing."""
    (subject, f, x), (other, g, y) = a[:3], b[:3]
    if subject != other:
        return False
    if f == g:
        return x != y
    if g is not None:
        f, x, g, y = g, y, f, x
    return g is None and isinstance(x, str) and isinstance(y, str) and getattr(y, f)() != x


def complementary(a: tuple, b: tuple) -> bool:
    """Whether two :func:`equality_test` tests of one ``x % 2`` subject cannot both be false:
    ``t % 2 == 1`` and ``t % 2 == 0``, the only values of an integer modulo 2."""
    (subject, f, x, parity), (other, g, y, _) = a, b
    return parity and subject == other and f is None and g is None and {x, y} == {0, 1}


_EQUALITY: "weakref.WeakKeyDictionary[Seq, dict]" = weakref.WeakKeyDictionary()
_NEGATED: "weakref.WeakKeyDictionary[Seq, frozenset]" = weakref.WeakKeyDictionary()
_COMPOUND: "weakref.WeakKeyDictionary[Seq, dict]" = weakref.WeakKeyDictionary()


def test_operands(test: cst.BaseExpression) -> tuple[bool, bool, list[cst.BaseExpression]] | None:
    """``(conjunction, negated, operands)`` of a test ``a and b`` (``conjunction`` true) or
    ``a or b`` (false), its negations taken off (:func:`test_polarity`: ``not (a and b)`` is
    negated); ``a and b and c`` has three operands. ``None`` for another test.

    Such a test is lowered as the tests of its operands, in order: ``if a and b:`` is ``if a:
    if b:``, its else-arm reached where ``a`` is false or ``a`` is true and ``b`` false
    (``or`` dually), so that a test of ``a`` alone elsewhere lines up with it."""
    core, negated = test_polarity(test)
    if type(core) is not cst.BooleanOperation:
        return None
    op = type(core.operator)
    operands: list[cst.BaseExpression] = []

    def flatten(e: cst.BaseExpression) -> None:
        if type(e) is cst.BooleanOperation and type(e.operator) is op:
            flatten(e.left)
            flatten(e.right)
        else:
            operands.append(e)

    flatten(core)
    return op is cst.And, negated, operands


def compound_tests(unit: Seq) -> dict[int, tuple[bool, bool, tuple]]:
    """``id(If) → (conjunction, negated, keys)`` for the ``if``s whose test is an ``and`` or an
    ``or`` (:func:`test_operands`) one of whose operands is a repeated test: ``keys`` holds, per
    operand, its key in :func:`repeated_tests` (``(id(If), position)``), or ``None`` where
    that operand is not repeated."""
    repeated_tests(unit)
    return _COMPOUND[unit]


#: a comparison operator -> the one it negates (``x is not y`` is ``not (x is y)``)
_NEGATED_OPERATORS = {cst.IsNot: cst.Is, cst.NotEqual: cst.Equal, cst.NotIn: cst.In}


def test_polarity(test: cst.BaseExpression) -> tuple[cst.BaseExpression, bool]:
    """``(core, negated)``: the test with its negations taken off, and whether there was an odd
    number of them. ``not x`` is ``x`` negated; ``x is not y`` is ``x is y`` negated (``if
    scaler is not None:`` and ``if scaler is None:`` are one test, each arm of one the other arm
    of the other). Likewise ``x != y`` is ``x == y`` negated and ``x not in y`` is ``x in y``
    negated (Python's defaults: ``__ne__`` inverts ``__eq__``), so that ``if (i + 1) % k == 0:``
    in a loop and ``if (i + 1) % k != 0:`` after it are one test. Parentheses around the core
    are dropped. Other tests are their own core."""
    negated = False
    while type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        test, negated = test.expression, not negated
    if type(test) is cst.Comparison and len(test.comparisons) == 1 and type(test.comparisons[0].operator) in _NEGATED_OPERATORS:
        positive = _NEGATED_OPERATORS[type(test.comparisons[0].operator)]()
        test = test.with_changes(comparisons=[test.comparisons[0].with_changes(operator=positive)])
        negated = not negated
    if getattr(test, "lpar", None):
        test = test.with_changes(lpar=[], rpar=[])
    return test, negated


def test_text(code: str) -> str:
    """The text that stands for a test's expression ``code`` (the source of
    :func:`test_polarity`'s core) when tests are compared: its syntax tree as Python reads it
    (``ast.dump``), so that the spelling of one expression does not make two tests
    (``phase == 'train'`` and ``phase == "train"``, ``i%k==0`` and ``i % k == 0``, a test
    split over lines); ``code`` itself when Python's parser does not read it."""
    try:
        return ast.dump(ast.parse(f"({code})", mode="eval"))
    except (SyntaxError, ValueError):
        return code


def _core_type(test: cst.BaseExpression) -> type:
    """The node type of :func:`test_polarity`'s core, without building it."""
    while type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        test = test.expression
    return type(test)


def negated_tests(unit: Seq) -> frozenset[int]:
    """The ``id(If)``s of :func:`repeated_tests` whose test is the negation of its text there
    (:func:`test_polarity`): their body runs where that text is false."""
    repeated_tests(unit)
    return _NEGATED[unit]


def equality_tests(unit: Seq) -> dict[int, tuple]:
    """``id(If) → equality_test(...)`` for the ``if``s of :func:`repeated_tests` that test a
    subject against a literal, where another test of the same subject can exclude them."""
    repeated_tests(unit)
    return _EQUALITY[unit]


def repeated_tests(unit: Seq) -> dict[int, tuple[str, frozenset[str]]]:
    """``id(If) → (test text, names)`` for the ``if`` tests that occur more than once in the
    unit, and the equality tests of a subject that another equality test of it can exclude
    (:func:`exclusive`: ``mode == "valid"`` then ``mode == "train"``): only those can
    correlate, so only those are remembered (which keeps the number of states small). A test
    and its negation (:func:`test_polarity`: ``x is None``, ``x is not None``) have one text;
    :func:`negated_tests` says which ``if``s hold the negation."""
    key = unit
    if key not in _REPEATED:
        # the text of a test is generated only where another test has its kind and its names
        # (equal texts have both): most tests are alone, and generating the text is not free
        tests: list[tuple[int, cst.BaseExpression, frozenset[str]]] = []
        shapes: dict[tuple[type, frozenset[str]], int] = {}  # (node type, names) -> how many tests
        names_of: dict[int, frozenset[str]] = {}  # by test node, as ``code`` below
        calls: dict = {}  # id(If) (an operand's key) -> the innermost inlined call that holds it
        compound: dict[int, tuple] = {}  # id(If) -> test_operands' (conjunction, negated, keys)
        # a test of a loop's counter: its next pass knows it false (_Interpreter._advance)
        counted: set[int] = set()
        for node, fid in _ifs_by_call(unit):
            calls[id(node)] = fid
            if node.counts is not None:
                counted.add(id(node))
            test = node.test
            if test is None:
                continue
            split = test_operands(test) if _core_type(test) is cst.BooleanOperation else None
            if split is None:
                parts_of = [(id(node), test)]
            else:  # ``a and b``: the tests of its operands (test_operands)
                parts_of = [((id(node), j), operand) for j, operand in enumerate(split[2])]
                compound[id(node)] = (split[0], split[1], tuple(k for k, _ in parts_of))
            for at, part in parts_of:
                calls[at] = fid
                names = names_of.get(id(part))
                if names is None:
                    names = frozenset(names_in(part))
                    if node.mode_of is not None:  # (a mode event changes it: MODE_NAME)
                        names |= {MODE_NAME}
                    names_of[id(part)] = names
                tests.append((at, part, names))
                shape = (_core_type(part), names)
                shapes[shape] = shapes.get(shape, 0) + 1
        texts: dict[int, tuple[str, frozenset[str]]] = {}
        count: dict[str, int] = {}
        code: dict[int, str] = {}  # by test node (a function inlined twice has its tests twice)
        module = cst.Module([])
        # the equality tests of one name, in one call of a function: the same name in another
        # call (a callee's parameter, another call of the same function) is another variable
        equal: dict[int, tuple] = {}
        for at, test, names in tests:
            if _core_type(test) is cst.Comparison and (found := equality_test(test_polarity(test)[0])) is not None:
                equal[at] = (f"{calls.get(at, '')}|{found[0]}", *found[1:])
        by_subject: dict[str, list[tuple]] = {}
        for found in equal.values():
            by_subject.setdefault(found[0], []).append(found)
        equal = {
            at: found for at, found in equal.items()
            if any(exclusive(found, other) for other in by_subject[found[0]])
        }
        negated: set[int] = set()
        polarity: dict[int, bool] = {}  # by test node, as ``code``
        for at, test, names in tests:
            if shapes[_core_type(test), names] > 1 or at in equal or at in counted:
                if id(test) not in code:
                    core, polarity[id(test)] = test_polarity(test)
                    code[id(test)] = test_text(module.code_for_node(core))
                text = code[id(test)]
                texts[at] = (text, names)
                count[text] = count.get(text, 0) + 1
                if polarity[id(test)]:
                    negated.add(at)
        _REPEATED[key] = repeated = {
            k: v for k, v in texts.items() if count[v[0]] > 1 or k in equal or k in counted}
        _EQUALITY[key] = equal
        _NEGATED[key] = frozenset(k for k in negated if k in repeated)
        _COMPOUND[key] = {
            at: (conj, neg, tuple(k if k in repeated else None for k in keys))
            for at, (conj, neg, keys) in compound.items() if any(k in repeated for k in keys)}
    return _REPEATED[key]


MAX_STATES = 32


def _bound(states: set, forgotten: int = 0) -> tuple[set, int]:
    """Forget remembered conditions while they multiply the states past ``MAX_STATES``, or past
    twice the machine's own states when those alone are more; returns the states and the bits
    of the tests forgotten, ``forgotten`` included.

    First the tests of ``forgotten`` (forgotten once, a test stays forgotten for the rest of
    the machine's run: the states cannot multiply again through it, and a loop head's states
    only grow, so its iteration ends), then one test at a time: the one whose forgetting leaves
    the fewest states (its outcomes split the fewest machine states: a flag tested around
    logging), the last-numbered on a tie. A test whose outcomes go with different machine
    states (``if phase == "train": model.train() else: model.eval()``) merges nothing when
    forgotten, so it is kept while other tests can go; forgetting every condition at once made
    the step under a later ``if phase == "train":`` reachable from the ``eval()`` of the other
    arm."""
    if forgotten and any(conds & forgotten for _, conds in states):
        keep = ~forgotten
        states = {(ms, conds & keep) for ms, conds in states}
    if len(states) <= MAX_STATES:
        return states, forgotten
    # the conditions may double the machine's own states: a machine with more states than
    # MAX_STATES alone (an optimizer built in one of seven ``elif`` arms, on one of two devices,
    # in one of two dtypes) keeps the tests that tell its states apart (``if args.half:`` on each
    # pass of the epoch loop), where forgetting them all made paths that take both arms of one
    # run constant
    limit = max(MAX_STATES, 2 * len({ms for ms, _ in states}))
    while len(states) > limit:
        present = 0
        for _, conds in states:
            present |= conds
        if not present:
            break  # the machine states alone are that many
        best, mask = None, 0
        for i in range((present.bit_length() + 1) // 2 - 1, -1, -1):  # last-numbered first
            bits = 3 << 2 * i
            if not present & bits:
                continue
            keep = ~bits
            fewer = {(ms, conds & keep) for ms, conds in states}
            if best is None or len(fewer) < len(best):
                best, mask = fewer, bits
        states, forgotten = best, forgotten | mask
    return states, forgotten


@dataclass
class _Summary:
    kinds: set = field(default_factory=set)  # event kinds inside
    jumps: bool = False  # break/continue/return inside (that leave it)
    names: set = field(default_factory=set)  # plain names assigned inside
    fids: set = field(default_factory=set)  # the inlined calls inside (``Inline.fid``), its own included
    #: the ways a path through it may leave it (:func:`_ways`): ``"normal"`` (on to what
    #: follows), ``"break"``, ``"continue"``, ``"return"``, ``"raise"``
    ways: frozenset = frozenset({"normal"})


_SUMMARIES: "weakref.WeakKeyDictionary[Seq, dict[int, _Summary]]" = weakref.WeakKeyDictionary()


def _base_name(sym: str) -> str:
    return sym.rpartition(":")[2].split(".")[0]


def summaries(unit: Seq) -> dict[int, _Summary]:
    """``id(node) → _Summary`` for every node of the unit but jumps."""
    if unit in _SUMMARIES:
        return _SUMMARIES[unit]
    table: dict[int, _Summary] = {}
    _summarize(unit, table)
    _SUMMARIES[unit] = table
    return table


def _summarize(node: Node, table: dict[int, _Summary]) -> _Summary:
    """The :class:`_Summary` of ``node``, stored in ``table`` with those of its parts (a function
    of the module rather than a closure of :func:`summaries`: a nested function that calls
    itself is a reference cycle, which keeps what it captured until the garbage collector
    walks it, see :func:`loopcheck.check.settle_gc`)."""
    sm = _Summary()
    if isinstance(node, (Call, Assign)):
        sm.kinds = {ev.kind for ev in node.typed}
        if any(sets_mode(ev) for ev in node.typed):
            sm.names.add(MODE_NAME)
        if isinstance(node, Assign) and node.target:
            sm.names.add(_base_name(node.target))
        elif isinstance(node, Call):
            sm.names.update(_base_name(t) for t in node.targets if t)
        table[id(node)] = sm  # (for the names an event re-binds: every machine asks)
        return sm
    if isinstance(node, Jump):
        sm.jumps = True
        sm.ways = frozenset({node.kind})
        return sm
    if isinstance(node, Loop):
        sm.names.update(node.info.targets)
    subs = []
    for part in parts(node):
        sub = _summarize(part, table)
        subs.append(sub)
        sm.kinds |= sub.kinds
        sm.names |= sub.names
        sm.jumps = sm.jumps or sub.jumps
        sm.fids |= sub.fids
    sm.ways = _ways(node, [sub.ways for sub in subs])
    if isinstance(node, Loop):
        sm.jumps = _returns(node) or "normal" not in sm.ways
    elif isinstance(node, Inline):
        # its ``return`` ends only the call; a call whose every path raises (a call inside it
        # whose arguments cannot bind: ``TypeError``) leaves it by the exception, and what
        # follows it in the caller never runs
        sm.jumps = "normal" not in sm.ways
        sm.fids.add(node.fid)
    table[id(node)] = sm
    return sm


_NORMAL = frozenset({"normal"})


def _ways(node: Node, inner: list[frozenset]) -> frozenset:
    """The ways a path through the compound ``node`` may leave it (``"normal"``: on to what
    follows it; ``"break"``, ``"continue"``, ``"return"``, ``"raise"``: by that jump), from
    the ways of its parts (``inner``, in :func:`~loopcheck.engine.ir.parts` order), whatever
    its tests decide. A call or an assignment goes on (an exception a call may raise is not
    a path the analysis follows, unless the builder ended the path there with a ``raise``:
    :meth:`~loopcheck.engine.builder.UnitBuilder.call_cannot_bind`).

    A block goes on when each of its items does; an ``if`` leaves as either arm; a loop, taken
    to run its body at least once as :class:`_Interpreter` takes it, goes on after a pass that
    goes on or breaks (not past ``while True`` but by a ``break``), and leaves as a
    ``return`` or ``raise`` in its body; a ``try`` with handlers goes on through them (any call of its body may raise), and its
    ``finally`` block's own jumps replace the others when that block never goes on; an
    inlined call goes on where its body does or returns (a ``break`` cannot leave a function).
    ``"normal" not in`` the result: no path goes past ``node``."""
    if isinstance(node, Seq):
        out: set = set()
        for ways in inner:
            out |= ways - _NORMAL
            if "normal" not in ways:
                return frozenset(out)
        return frozenset(out | _NORMAL)
    if isinstance(node, If):
        return inner[0] | inner[1]
    if isinstance(node, Loop):
        body, orelse = inner
        out = set(body & {"return", "raise"})
        if "break" in body:
            out.add("normal")
        if body & {"normal", "continue"} and not node.infinite:
            out |= orelse  # the loop ends when its iterable does, and its ``else`` block runs
        return frozenset(out)
    if isinstance(node, Try):
        body, handlers, orelse, final = inner[0], inner[1:-2], inner[-2], inner[-1]
        out = set(body - _NORMAL)
        if handlers:
            out.discard("raise")
            for ways in handlers:
                out |= ways
        if "normal" in body:
            out |= orelse
        if "normal" not in final:
            return final
        return frozenset(out | (final - _NORMAL))
    if isinstance(node, Inline):
        body = inner[0]
        out = set(body - {"return", "break", "continue"})
        if "return" in body:
            out.add("normal")
        return frozenset(out)
    return _NORMAL


@dataclass
class _IfTable:
    """The ``if``s of a unit, for :meth:`_Interpreter._correlated_tests` (computed once per
    unit, each machine then reads it in time proportional to the ``if``s, not the unit).

    Attributes:
        ifs: every ``If`` in program order (an ``if`` before the ones inside it).
        end: ``ifs[i + 1:end[i]]`` are the ``if``s inside ``ifs[i]``.
        repeated: ``(i, again, key)`` for each repeated test (:func:`repeated_tests`, ``key``
            its key there) of an ``if`` (one per repeated operand of an ``and``/``or`` test):
            ``again``: it runs again with its test remembered, inside a loop whose targets
            the test does not mention (a new item forgets it).
    """

    ifs: list = field(default_factory=list)
    end: list = field(default_factory=list)
    repeated: list = field(default_factory=list)


_IF_TABLES: "weakref.WeakKeyDictionary[Seq, _IfTable]" = weakref.WeakKeyDictionary()


def _if_table(unit: Seq) -> _IfTable:
    """:class:`_IfTable` of ``unit``."""
    if unit in _IF_TABLES:
        return _IF_TABLES[unit]
    table, tests = _IfTable(), repeated_tests(unit)
    _index_ifs(unit, (), table, tests, compound_tests(unit))
    _IF_TABLES[unit] = table
    return table


def _index_ifs(node: Node, loops: tuple, table: _IfTable, tests: dict, compound: dict) -> None:
    """Add the ``if`` statements of ``node`` to ``table`` (:func:`_if_table`); ``loops``: the
    targets of the loops around it; ``tests``: :func:`repeated_tests` of the unit;
    ``compound``: its :func:`compound_tests`."""
    if isinstance(node, If):
        i = len(table.ifs)
        table.ifs.append(node)
        table.end.append(0)
        keys = compound[id(node)][2] if id(node) in compound else (id(node),)
        for key in keys:
            if key in tests:
                names = tests[key][1]
                again = node.counts is not None or any(names.isdisjoint(targets) for targets in loops)
                table.repeated.append((i, again, key))
    inner = (*loops, frozenset(node.info.targets)) if isinstance(node, Loop) else loops
    for part in parts(node):
        _index_ifs(part, inner, table, tests, compound)
    if isinstance(node, If):
        table.end[i] = len(table.ifs)


@dataclass
class _FactTable:
    """The facts of attribute values a unit can know (:mod:`loopcheck.engine.attr_facts`), for
    :class:`_Interpreter`: each ``(attribute, literal)`` that an assignment gives an attribute
    some ``if`` tests is fact number ``j``; a path that knows it has its bit in its conditions.

    Attributes:
        arms: ``id(If) →`` ``(j, arm)`` pairs: the arm the ``if`` takes where fact ``j`` holds.
        ifs: those ``if``s, in program order.
        effects: ``id(raw event) → (facts it ends, fact it makes)``, as masks of bit ``2 * j``
            for fact ``j`` (shifted past a machine's remembered tests by the interpreter).
        loops: ``id(Loop) →`` the facts its targets end on each iteration (a mask too).
        nodes: the ``id``s of the compound nodes that hold such an ``if``, an event that makes
            a fact, or a loop that ends one: the interpreter runs them.
        kills: ``id(node) →`` the facts the events inside it end (a mask): a part the
            interpreter passes over ends them all (most calls end facts: running each one
            would cost what skipping the parts without a machine's events saves).
        guards: ``id(If) → (arm, made, aliased)`` for a *raising guard*, an ``if`` on the truth
            of one attribute (:func:`~loopcheck.engine.attr_facts.truth_test`: ``if
            args.fp16:``) one of whose arms never goes on to what follows it (it raises,
            returns or ends the program: ``raise NotImplementedError(...)``): a path entering
            the other arm, ``arm``, knows the attribute's truth (:class:`Truth`), fact mask
            ``made``; ``aliased``: ``(alias, made)`` mask pairs, the truth of the same attribute
            reached through another name that an assignment made hold the tested object
            (``self.args = args``, :class:`Alias`), known where the path knows that alias.
            Also an ``if`` whose test compares attributes with literals
            (:attr:`~loopcheck.engine.ir.If.learns`) one of whose arms only raises or ends the
            program (:func:`_learned_guards`): ``made`` holds what the other arm says of each.
        needs: ``j →`` the mask of the alias facts (:class:`Alias`) a guard's fact ``j`` is made
            under, which a machine following ``j`` follows too.
        starts: ``(symbol, value) → j``: the fact that the local variable a counted loop starts
            at holds ``value`` (:attr:`~loopcheck.engine.ir.If.first_pass_given`), made by
            ``symbol = value`` and ended by the variable's other bindings (every one a plain
            assignment: :func:`~loopcheck.engine.builder._plain_int_bindings`).
        values: how many facts there are.
        keys: the attribute symbol of each fact, by number.
    """

    arms: dict = field(default_factory=dict)
    ifs: list = field(default_factory=list)
    effects: dict = field(default_factory=dict)
    loops: dict = field(default_factory=dict)
    nodes: set = field(default_factory=set)
    kills: dict = field(default_factory=dict)
    guards: dict = field(default_factory=dict)
    needs: dict = field(default_factory=dict)
    starts: dict = field(default_factory=dict)
    values: int = 0
    keys: list = field(default_factory=list)


class Truth(NamedTuple):
    """A fact's value where the path knows only the truth of the attribute (past a raising
    guard, :attr:`_FactTable.guards`): it decides a test of that truth alone (``if x.a:``,
    ``if not x.a:``), never a comparison (a falsy value may be ``0``, ``None`` or ``""``)."""

    truthy: bool


class Unequal(NamedTuple):
    """A fact's value where the path knows only that the attribute does not hold ``value``
    (past a raising guard whose arm that goes on says so: ``if args.head != "y": ...`` goes on
    in its body, ``args.head in ("a", "b")``): it decides a comparison of the attribute with
    that literal alone (``args.head == "y"`` false, ``!=`` true), nothing else."""

    value: object


class Alias(NamedTuple):
    """A fact's value saying the attribute symbol holds the object another symbol names
    (``trainer.args`` after ``self.args = args``, ``source`` the symbol ``args``); it decides
    no test."""

    source: str


@dataclass(frozen=True)
class _Kill:
    """An item of :meth:`_Interpreter._live`: the facts (a mask of :attr:`_FactTable.kills`)
    that the passed-over items before the next live one end."""

    mask: int


def _receivers_of(skipped: list, item: Node) -> bool:
    """Whether the calls passed over just before ``item`` (a call with typed events) all
    compute its receiver (``scaler.scale(loss)`` of ``scaler.scale(loss).backward()``): they
    are part of that call, which raises as its events do (:meth:`Machine.raised`), not in the
    state before it."""
    if not isinstance(item, Call) or not item.typed:
        return False
    chain = set()
    inner = item.inner
    while inner is not None:
        chain.add(id(inner))
        inner = inner.inner
    return all(id(s) in chain for s in skipped)


#: An item of :meth:`_Interpreter._live` where items that cannot change the states were passed
#: over: they may still raise, from the states there, to the handlers of an enclosing ``try``.
_PASSED = object()


_FACTS: "weakref.WeakKeyDictionary[Seq, _FactTable]" = weakref.WeakKeyDictionary()
#: The most attributes whose facts one machine follows in a unit; with more (a framework's
#: trainer inlined whole, with its control flags), it follows none: each attribute a path may
#: know something of or not multiplies the states, and not knowing one only keeps both arms of
#: its ``if``s. (The facts of one attribute mostly exclude each other: an assignment ends them
#: all and makes one; past a guard ``args.head != "a"`` and ``args.head == "b"`` are known together.)
MAX_FACTS = 8


def fact_table(unit: Seq) -> _FactTable:
    """:class:`_FactTable` of ``unit`` (empty when no ``if`` tests an attribute that the unit
    assigns a literal, or that a raising guard tests before another ``if`` tests it)."""
    if unit in _FACTS:
        return _FACTS[unit]
    table = _FactTable()
    _FACTS[unit] = table
    ifs, given, learning = [], [], []
    for node, _ in _ifs_by_call(unit):
        if node.fact is not None:
            ifs.append(node)
        if node.first_pass_given is not None:
            given.append(node.first_pass_given)
        if node.learns and (node.fact is None or truth_test(node.test) is None):  # (a truth alone: _guard_facts)
            learning.append(node)
    if not ifs and not given:
        return table
    tested = {node.fact[0] for node in ifs} | {sym for _, _, sym, _ in given}
    facts: dict[tuple, int] = {}  # (attribute, type, value) -> j
    values: list[tuple[str, object]] = []
    made: dict[int, int] = {}
    raws = list(walk_events(unit))

    def fact(key: str, value: object) -> int:
        at = (key, type(value), value)
        if at not in facts:
            facts[at] = len(values)
            values.append((key, value))
        return facts[at]

    for raw in raws:
        if type(raw) is Assign and raw.op == "=" and raw.target in tested:
            value = literal_value(raw.value)
            if value is not NO_VALUE:
                made[id(raw)] = fact(raw.target, value)
    also = _guard_facts(unit, ifs, raws, tested, table, fact, made)
    _learned_guards(unit, ifs, learning, table, fact)
    if not values:
        return table
    for _, _, sym, value in given:
        j = facts.get((sym, int, value))
        if j is not None:
            table.starts[(sym, value)] = j
    for node in ifs:
        sym, name = node.fact
        truth = truth_test(node.test)
        arms = tuple((j, _decided(node.test, name, value, truth))
                     for j, (key, value) in enumerate(values) if key == sym)
        if any(arm is not None for _, arm in arms):
            table.arms[id(node)] = arms
            table.ifs.append(node)
    keys = {key for key, _ in values} | {key for sources in also.values() for key in sources}
    starts = {sym for _, _, sym, _ in given}
    for raw in raws:
        if type(raw) is Assign:
            hit = {key for key in keys if raw.target and assigned_ends(key, raw.target, raw.op)}
            if raw.built:  # ``trainer = Trainer(args)``: the object its inlined ``__init__`` built
                hit = {key for key in hit if not key.startswith(raw.target + ".")}
        else:
            hit = {key for key in keys for t in raw.targets if t and assigned_ends(key, t, "=")}
            # (a call re-binds no local variable a loop starts at: only its assignments end it)
            hit |= {key for key in keys - starts for c in raw.clobbers if ends(key, c)}
        j = made.get(id(raw), -1)
        if hit or j >= 0:
            ended = 0
            for i, (key, value) in enumerate(values):
                if type(value) is Alias and type(raw) is Assign and raw.op == "=" and raw.value_sym == value.source:
                    continue  # the same object assigned again (``self.args = args`` elsewhere): still held
                if key in hit or not hit.isdisjoint(also.get(i, ())):
                    ended |= 1 << 2 * i
            table.effects[id(raw)] = (ended, 1 << 2 * j if j >= 0 else 0)
    table.values = len(values)
    table.keys = [key for key, _ in values]
    _mark_fact_nodes(unit, table, keys, values)
    return table


def _decided(test: cst.BaseExpression, name: str, value: object, truth: bool | None) -> bool | None:
    """The outcome of ``test``, an ``if``'s test of the one attribute ``name``
    (:attr:`~loopcheck.engine.ir.If.fact`; ``truth``: :func:`~loopcheck.engine.attr_facts.truth_test`
    of it), on a path that knows fact ``value`` of the attribute: a literal it holds
    (:func:`~loopcheck.engine.builder.decide_test`), its :class:`Truth` (a test of that truth
    alone), a literal it does not hold (:class:`Unequal`: a comparison with that literal alone);
    ``None`` when the fact does not decide it (an :class:`Alias` decides nothing)."""
    t = type(value)
    if t is Truth:
        return value.truthy == truth if truth is not None else None
    if t is Unequal:
        return _unequal_decides(test, value.value)
    if t is Alias:
        return None
    return decide_test(test, {name: value})


def _unequal_decides(test: cst.BaseExpression, value: object) -> bool | None:
    """The outcome of ``test`` (``x == lit``, ``x != lit``, under any number of ``not``) where
    ``x`` is known not to hold ``value``: decided when ``lit`` is ``value`` (of its type); also
    ``x is lit`` and ``x is not lit`` for ``None``, ``True`` and ``False``, the one object of
    that value."""
    negated = False
    while type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        test, negated = test.expression, not negated
    if type(test) is not cst.Comparison or len(test.comparisons) != 1:
        return None
    comp = test.comparisons[0]
    op = type(comp.operator)
    if op in (cst.Is, cst.IsNot) and (value is None or type(value) is bool):
        op = cst.Equal if op is cst.Is else cst.NotEqual
    if op not in (cst.Equal, cst.NotEqual):
        return None
    right = literal_value(comp.comparator)
    if right is NO_VALUE or type(right) is not type(value) or right != value:
        return None
    return (op is cst.NotEqual) != negated


def _learned_guards(unit: Seq, ifs: list, learning: list, table: _FactTable, fact) -> None:
    """Note the raising guards among ``learning`` (``if``s with :attr:`~loopcheck.engine.ir.If.learns`
    whose test is not the truth of one attribute alone, which :func:`_guard_facts` reads): an
    ``if`` one of whose arms ends every path by raising or ending the program (``else: raise
    NotImplementedError``, ``sys.exit(1)``; a ``return`` is not enough, its caller goes on
    after the call), the other going on. A path entering that other arm knows what the arm
    says of each attribute another ``if`` tests (``args.data == "x" and args.head == "y"``:
    both hold), as facts :func:`fact` numbers: the literal the attribute holds, a literal it
    does not hold (:class:`Unequal`), or its :class:`Truth`. The facts end where any fact of
    their attribute ends (:func:`~loopcheck.engine.attr_facts.ends`)."""
    if not learning:
        return
    summaries_of = summaries(unit)
    for node in learning:
        dead = [arm for arm, seq in ((True, node.body), (False, node.orelse))
                if summaries_of[id(seq)].ways == _RAISES]
        if len(dead) != 1:
            continue
        arm = not dead[0]
        mask = 0
        for taken, sym, _, kind, value in node.learns:
            if taken is not arm or not any(n is not node and n.fact[0] == sym for n in ifs):
                continue
            value = Truth(value) if kind == "truth" else Unequal(value) if kind == "!=" else value
            mask |= 1 << 2 * fact(sym, value)
        if mask:
            table.guards[id(node)] = (arm, mask, ())


#: The ways out of an arm that never goes on to what follows its ``if``, nor to its caller.
_RAISES = frozenset({"raise"})


def _guard_facts(unit: Seq, ifs: list, raws: list, tested: set, table: _FactTable, fact, made: dict) -> dict:
    """Note the raising guards of ``unit`` (:attr:`_FactTable.guards`) whose attribute another
    ``if`` tests, by the symbol the guard tests or through an alias: a plain assignment ``T =
    O`` (``self.args = args``, the value a plain name whose symbol is the tested attribute's
    object ``O``) makes fact :class:`Alias` of ``T``, ended by what re-binds ``T`` or ``O``
    (or may change ``T``: a call given its holder), and a guard on ``O.a`` then also makes
    the truth of ``T.a`` on a path that knows that alias. ``fact(key, value)`` numbers a fact;
    ``made`` gets the alias assignments. Returns ``j →`` the other keys whose changes end fact
    ``j`` too: the alias's object, and for the truth of ``T.a`` the guard's ``O.a``."""
    summaries_of = summaries(unit)
    also: dict[int, tuple[str, ...]] = {}
    guards = []
    for node in ifs:
        truth = truth_test(node.test)
        if truth is None:
            continue
        dead = [arm for arm, seq in ((True, node.body), (False, node.orelse))
                if "normal" not in summaries_of[id(seq)].ways]
        if len(dead) != 1:
            continue
        guards.append((node, not dead[0], truth))
    if not guards:
        return also
    aliases: dict[str, list] = {}  # object symbol O -> the plain assignments ``T = O``
    for raw in raws:
        if (type(raw) is Assign and raw.op == "=" and raw.target and raw.value_sym
                and raw.value_sym != raw.target and id(raw) not in made):
            aliases.setdefault(raw.value_sym, []).append(raw)
    for node, arm, truth in guards:
        key = node.fact[0]
        obj, attr = owner(key), key.rpartition(".")[2]
        truthy = arm == truth  # the attribute's truth on the arm that goes on
        others = [n for n in ifs if n is not node and truth_test(n.test) is not None]
        mask, aliased = 0, []
        if any(n.fact[0] == key for n in others):
            mask = 1 << 2 * fact(key, Truth(truthy))
        for raw in aliases.get(obj, ()):
            alias_key = f"{raw.target}.{attr}"
            if alias_key not in tested or not any(n.fact[0] == alias_key for n in others):
                continue
            a = fact(raw.target, Alias(obj))
            made[id(raw)] = a
            also[a] = (obj,)
            j = fact(alias_key, Truth(truthy))
            also[j] = (*also.get(j, ()), key)
            table.needs[j] = table.needs.get(j, 0) | 1 << 2 * a
            aliased.append((1 << 2 * a, 1 << 2 * j))
        if mask or aliased:
            table.guards[id(node)] = (arm, mask, tuple(aliased))
    return also


def _mark_fact_nodes(node: Node, table: _FactTable, keys: set, values: list) -> tuple[bool, int]:
    """``(whether node must run, the facts its events end)``: note :attr:`_FactTable.nodes`,
    :attr:`_FactTable.kills` and the facts a loop's targets end (:attr:`_FactTable.loops`)."""
    if isinstance(node, (Call, Assign)):
        effect = table.effects.get(id(node))
        if effect is None:
            return False, 0
        if effect[0]:
            table.kills[id(node)] = effect[0]
        return bool(effect[1]), effect[0]
    hit = isinstance(node, If) and (id(node) in table.arms or id(node) in table.guards)
    if isinstance(node, Loop) and node.info.targets:
        targets = set(node.info.targets)
        ended = 0
        for i, (key, _) in enumerate(values):
            if _base_name(key) in targets:
                ended |= 1 << 2 * i
        if ended:
            table.loops[id(node)] = ended
            hit = True
    kills = 0
    for part in parts(node):
        inner, ended = _mark_fact_nodes(part, table, keys, values)
        hit = hit or inner
        kills |= ended
    if hit:
        table.nodes.add(id(node))
    if kills:
        table.kills[id(node)] = kills
    return hit, kills


def _returns(node: Node) -> bool:
    """Whether a ``return`` inside ``node`` leaves it (break/continue stay in their loop)."""
    if isinstance(node, Jump):
        return node.kind == "return"
    return any(_returns(p) for p in parts(node))


_PATHS: "weakref.WeakKeyDictionary[Seq, dict]" = weakref.WeakKeyDictionary()


def _paths(unit: Seq) -> dict[int, tuple]:
    """``id(raw event) →`` its place in the unit: ``(node, index)`` pairs from the unit down,
    ``index`` the position in :func:`~loopcheck.engine.ir.parts` of ``node`` (a ``Seq``'s
    items) of the part that holds it. An event inlined twice keeps its first place."""
    if unit in _PATHS:
        return _PATHS[unit]
    table: dict[int, tuple] = {}
    stack: list[tuple[Node, tuple]] = [(unit, ())]
    while stack:
        node, path = stack.pop()
        if type(node) in (Call, Assign):
            table.setdefault(id(node), path)
            continue
        inner = node.items if type(node) is Seq else parts(node)
        for i in range(len(inner) - 1, -1, -1):  # (program order: the first place wins)
            stack.append((inner[i], (*path, (node, i))))
    _PATHS[unit] = table
    return table


def _leaves(node: Node, sm: dict) -> bool:
    """Whether a jump inside ``node`` may leave it (a part of the IR, a ``Jump`` itself)."""
    return type(node) is Jump or (type(node) not in (Call, Assign) and sm[id(node)].jumps)


def always_follows(unit: Seq, first: Call | Assign, then: Call | Assign) -> bool:
    """Whether ``then`` runs after every run of ``first``, in the same run of the block that
    holds both, whatever the tests decide: both sit in one block (``Seq``), ``first`` inside
    an earlier item of it, ``then`` in a later one, reached from that item's start through
    blocks and inlined calls only (no ``if`` arm, loop body or handler); and no ``break``,
    ``continue``, ``return`` or ``raise`` may leave a part between them (after ``first`` in
    the blocks that hold it, the items in between, before ``then``). An exception raised by a
    call is not a path the analysis follows."""
    paths = _paths(unit)
    a, b = paths.get(id(first)), paths.get(id(then))
    if a is None or b is None:
        return False
    k = 0
    while k < len(a) and k < len(b) and a[k] == b[k]:
        k += 1
    if k == len(a) or k == len(b):
        return False
    block, i = a[k]
    j = b[k][1]
    if type(block) is not Seq or b[k][0] is not block or i >= j:
        return False
    sm = summaries(unit)
    if any(_leaves(item, sm) for item in block.items[i + 1:j]):
        return False
    for node, at in a[k + 1:]:  # the rest of each block that holds ``first``
        if type(node) is Seq and any(_leaves(item, sm) for item in node.items[at + 1:]):
            return False
    for node, at in b[k + 1:]:  # down to ``then``: blocks and inlined calls only
        if type(node) is Inline:
            continue
        if type(node) is not Seq or any(_leaves(item, sm) for item in node.items[:at]):
            return False
    return True


#: per unit, per (machine kinds, remembered test names): ``id(Seq) →`` its live items
_LIVE: "weakref.WeakKeyDictionary[Seq, dict]" = weakref.WeakKeyDictionary()


def forget(unit: Seq) -> None:
    """Drop what this module derived from ``unit``'s IR and keeps for it (its repeated tests,
    summaries, facts, ...): that IR was changed in place
    (:func:`~loopcheck.engine.accumulation.lower_accumulate_blocks`)."""
    for table in (_REPEATED, _EQUALITY, _NEGATED, _COMPOUND, _SUMMARIES, _IF_TABLES, _FACTS, _PATHS, _LIVE):
        table.pop(unit, None)


class _Interpreter:
    """Interprets the IR over pairs ``(machine state, known conditions)``.

    The known conditions make the analysis see that two ``if``s on the same test agree
    (``if phase == "train": model.train() ... if phase == "train": optimizer.step()``): a
    condition is remembered after a branch on it, and forgotten when a name it mentions is
    assigned or is the target of a loop starting a new iteration. A test and its negation
    (:func:`test_polarity`: ``if scaler is not None:`` then ``if scaler is None:``) are one
    condition, whose arms they take in opposite order.

    The conditions of a path are one integer: the remembered tests are numbered, and bit
    ``2 * i`` says the ``i``-th test was true on the path, bit ``2 * i + 1`` that it was false
    (an integer hashes and compares at once, where a set of ``(test, outcome)`` pairs was
    compared element by element in every set of states built).
    """

    def __init__(self, machine: Machine, unit: Seq) -> None:
        self.m = machine
        self.flow = Flow()
        self._memo: dict[tuple, _Out] = {}
        self._summaries = summaries(unit)
        self._tests = self._correlated_tests(unit)
        self._test_names: frozenset[str] = frozenset().union(*(names for _, names in self._tests.values()))
        self._assigned: dict[int, frozenset[str]] = {}  # id(raw event) -> the test names it re-binds
        self._negated = negated_tests(unit)  # id(If) -> its test is the negation of its text
        numbers: dict[str, int] = {}  # test text -> its number
        self._number: dict = {}  # id(If) (an operand's key) -> the number of its test
        self._name_bits: dict[str, int] = {}  # name -> the bits of the tests that mention it
        for key, (text, names) in self._tests.items():
            i = self._number[key] = numbers.setdefault(text, len(numbers))
            for name in names:
                self._name_bits[name] = self._name_bits.get(name, 0) | (3 << 2 * i)
        # number -> the bits of "true" of the tests that cannot be true with it (mode == "valid"
        # for mode == "train")
        self._excludes: dict[int, int] = {}
        # number -> the bits of "false" of the tests that cannot be false with it (t % 2 == 0
        # for t % 2 == 1)
        self._complements: dict[int, int] = {}
        equal = equality_tests(unit)
        tested = [k for k in self._tests if k in equal]
        for k in tested:
            for other in tested:
                n, o = self._number[k], self._number[other]
                if exclusive(equal[k], equal[other]):
                    self._excludes[n] = self._excludes.get(n, 0) | 1 << 2 * o
                if complementary(equal[k], equal[other]):
                    self._complements[n] = self._complements.get(n, 0) | 1 << 2 * o + 1
        # id(cst.For) -> the "true" bits of the tests of its counter (If.counts), each test
        # number's every ``if`` being one of that loop's
        self._advance: dict[int, int] = {}
        loops_of: dict[int, set] = {}  # number -> the loops its ifs count (None: not a counter test)
        for node, _ in _ifs_by_call(unit):
            if id(node) in self._number:
                loops_of.setdefault(self._number[id(node)], set()).add(
                    id(node.counts) if node.counts is not None else None)
        for n, loops in loops_of.items():
            if len(loops) == 1 and None not in loops:
                (loop,) = loops
                self._advance[loop] = self._advance.get(loop, 0) | 1 << 2 * n
        self._bits_of: dict[frozenset[str], int] = {}  # names -> the bits of the tests they name
        # id(If) of an ``and``/``or`` test -> (conjunction, negated, ((number, negated), ...) per
        # operand, number None where not remembered)
        self._compound: dict[int, tuple] = {}
        for at, (conj, neg, keys) in compound_tests(unit).items():
            operands = tuple((self._number.get(k), k in self._negated) for k in keys)
            if any(n is not None for n, _ in operands):
                self._compound[at] = (conj, neg, operands)
        self._branches = type(machine).branch is not Machine.branch  # else an arm keeps the state
        self._enters = type(machine).enter is not Machine.enter  # else a call's body starts in its caller's states
        self._local_of, self._idle = self._local_call(machine, unit)
        self._inside = 0  # how deep the interpretation is in those calls
        # inside the body of a ``try`` with handlers: the states before each item that may
        # raise are collected (_Out.raised), the handlers' entry states
        self._catching = False
        # id(Seq) -> its items that can change the states, shared by the machines alike
        self._facts = fact_table(unit)
        self._fact_base = 2 * len(numbers)
        self._fact_keep = 0  # the facts this machine follows (_opaque_fact_arms)
        self._fact_arms = self._opaque_fact_arms(unit)
        self._start_facts = self._followed_starts(unit)  # id(cst.For) -> the fact its first pass needs
        # after the facts: bit ``pass_base + 2 * n`` says test ``n`` of a loop's counter was
        # true on an earlier pass of the run of that loop the path is in (_next_pass)
        self._pass_base = (self._fact_base + self._fact_keep.bit_length() + 1) & ~1
        # after those: bit ``first_base + 2 * k`` says the path is on the first pass of the run
        # of the k-th loop of _first_bits it is in (If.first_pass)
        self._first_bits = self._first_pass_loops(unit, self._pass_base + 2 * len(numbers))
        self._fact_nodes = self._facts.nodes if self._fact_arms or self._start_facts else frozenset()
        self._fact_masks: dict[int, tuple[int, int]] = {}  # id(raw event) -> (bits it ends, bit it makes)
        shared = _LIVE.setdefault(unit, {})
        self._live_items: dict[int, tuple] = shared.setdefault(
            (machine.kinds, self._test_names, bool(self._fact_nodes)), {})
        self._loop_names: dict[int, frozenset[str]] = {}  # id(Loop) -> its targets in the tests
        self._forgotten = 0  # the bits of the tests forgotten to stay within MAX_STATES (_bound)
        # the facts of attribute values (_FactTable): fact j is bit 2 * (base + j) of the
        # conditions, after the remembered tests' bits

    def _opaque_fact_arms(self, unit: Seq) -> dict:
        """The entries of :attr:`_FactTable.arms` worth following for this machine: the ``if``s
        whose arms can leave different states (events of its kinds, a jump, a test it decides),
        as :meth:`_correlated_tests` keeps tests; the facts of no such ``if`` are not followed
        (following them would only multiply the states). None past :data:`MAX_FACTS`."""
        arms = self._facts.arms
        if not arms:
            return {}
        kinds, m = self.m.kinds, self.m
        branches = type(m).branch is not Machine.branch
        out = {}
        for node in self._facts.ifs:
            sm = self._summaries[id(node)]
            if sm.jumps or (sm.kinds if kinds is None else sm.kinds & kinds) or (branches and m.branches_on(node)):
                out[id(node)] = arms[id(node)]
        if not out:
            return {}
        followed = {j for pairs in out.values() for j, _ in pairs}
        # (the alias a guard's fact is made under: :attr:`_FactTable.needs`)
        needs = self._facts.needs
        followed |= {a for j in followed if j in needs for a in range(self._facts.values) if needs[j] >> 2 * a & 1}
        if len({self._facts.keys[j] for j in followed}) > MAX_FACTS:
            return {}
        self._fact_keep = 0  # (relative to the base, as the table's masks)
        for j in followed:
            self._fact_keep |= 1 << 2 * j
        return out

    def _followed_starts(self, unit: Seq) -> dict[int, int]:
        """``id(cst.For) →`` the fact (relative to the base, as the table's masks) that a path
        must know where it enters that loop to be on the first pass that decides an ``if`` of
        the loop's counter (:attr:`~loopcheck.engine.ir.If.first_pass_given`, ``if epoch !=
        0:`` in ``for epoch in range(start_epoch, n):`` after ``start_epoch = 0``), for the
        ``if``s whose arms can leave different states for this machine; each such fact is
        followed (:attr:`_fact_keep`). A loop whose ``if``s need different facts needs none
        (its first pass is not followed)."""
        starts = self._facts.starts
        if not starts:
            return {}
        kinds, m = self.m.kinds, self.m
        branches = type(m).branch is not Machine.branch
        out: dict[int, int] = {}
        for node, _ in _ifs_by_call(unit):
            given = node.first_pass_given
            if given is None or (given[2], given[3]) not in starts:
                continue
            sm = self._summaries[id(node)]
            if not (sm.jumps or (sm.kinds if kinds is None else sm.kinds & kinds) or (branches and m.branches_on(node))):
                continue
            fact = 1 << 2 * starts[(given[2], given[3])]
            out[id(given[0])] = fact if out.get(id(given[0]), fact) == fact else 0
        out = {k: v for k, v in out.items() if v}
        for fact in out.values():
            self._fact_keep |= fact
        return out

    def _first_pass_loops(self, unit: Seq, base: int) -> dict[int, int]:
        """``id(cst.For) →`` its bit of the conditions (from bit ``base`` on), for the loops
        whose first pass decides the test of an ``if`` (:attr:`~loopcheck.engine.ir.If.first_pass`)
        whose arms can leave different states for this machine (events of its kinds, a jump, a
        test it decides): a path that enters such a loop has the bit on its first pass, and
        loses it when the loop goes round or is left (:meth:`_exec`); in the arm that the first
        pass cannot take, the paths with the bit end (:meth:`_arm`)."""
        kinds, m = self.m.kinds, self.m
        branches = type(m).branch is not Machine.branch
        bits: dict[int, int] = {}
        for node, _ in _ifs_by_call(unit):
            if node.first_pass is not None:
                loop = node.first_pass[0]
            elif node.first_pass_given is not None and id(node.first_pass_given[0]) in self._start_facts:
                loop = node.first_pass_given[0]
            else:
                continue
            if id(loop) in bits:
                continue
            sm = self._summaries[id(node)]
            if sm.jumps or (sm.kinds if kinds is None else sm.kinds & kinds) or (branches and m.branches_on(node)):
                bits[id(loop)] = 1 << (base + 2 * len(bits))
        return bits

    @staticmethod
    def _without(states: set, bit: int) -> set:
        """``states`` without condition bit ``bit``."""
        if not any(conds & bit for _, conds in states):
            return states
        return {(ms, conds & ~bit) for ms, conds in states}

    def _killed(self, states: set, node_id: int) -> set:
        """``states`` past a part of the IR not run: without the facts its events end."""
        mask = self._facts.kills.get(node_id)
        return self._end_facts(states, mask) if mask else states

    def _end_facts(self, states: set, mask: int) -> set:
        """``states`` without the facts of ``mask`` (relative to the base, as the table's)."""
        bits = (mask & self._fact_keep) << self._fact_base
        if not bits or not any(conds & bits for _, conds in states):
            return states
        keep = ~bits
        return {(ms, conds & keep) for ms, conds in states}

    def _merge_facts(self, states: set) -> set:
        """``states`` where those that differ only in the facts they know are one, knowing
        the facts they all know: a fact is carried past a join only with a difference in the
        machine's state or in the remembered tests (``args.evaluate = True`` on the branch
        that moved the model), which keeps the states few."""
        facts = self._fact_keep << self._fact_base
        if not any(conds & facts for _, conds in states):
            return states
        groups: dict = {}
        for ms, conds in states:
            key = (ms, conds & ~facts)
            groups[key] = groups.get(key, facts) & conds
        if len(groups) == len(states):
            return states
        return {(ms, rest | known) for (ms, rest), known in groups.items()}

    def _fact_effect(self, raw: Call | Assign, states: set) -> set:
        """``states`` after ``raw`` ends the facts it may change and makes the one it assigns."""
        masks = self._fact_masks.get(id(raw))
        if masks is None:
            ended, made = self._facts.effects[id(raw)]
            keep, base = self._fact_keep, self._fact_base  # (only the facts this machine follows)
            masks = self._fact_masks[id(raw)] = ((ended & keep) << base, (made & keep) << base)
        clear, made = masks
        if not clear and not made:
            return states
        keep = ~clear
        return {(ms, (conds & keep) | made) for ms, conds in states}

    def _correlated_tests(self, unit: Seq) -> dict[int, tuple[str, frozenset[str]]]:
        """The repeated tests (:func:`repeated_tests`) worth remembering for this machine.

        An ``if`` is *opaque* to the machine when its arms can leave different states: they
        hold events of the machine's kinds, a jump, an inlined call whose locals the machine
        follows, a test the machine decides (:meth:`Machine.branches_on`) or says its object
        is absent on, or they re-bind a name of a remembered test. A transparent ``if`` gives
        both arms the same machine states, so which arm a path took changes nothing after it.
        Remembering a test can only matter where two of its runs are opaque: two ``if``s on
        it, or one inside a loop (its next iteration). Tests with fewer are forgotten at once:
        the states they would split are the same, and the states at every event of the
        machine's kinds are those of remembering every repeated test, or fewer where the
        conditions had multiplied past :data:`MAX_STATES` and were dropped (yolov5's ``train.py``
        has hundreds of ``if RANK in {-1, 0}:`` around logging). The least such set: tests
        are added while an ``if`` that re-binds a name of a kept test makes another one's
        runs opaque."""
        tests = repeated_tests(unit)
        if not tests:
            return tests
        m, summaries_of, table = self.m, self._summaries, _if_table(unit)
        kinds = m.kinds
        subjects = m.subjects
        fids = {s.partition(":")[0] for s in subjects if ":" in s}
        branches = type(m).branch is not Machine.branch
        # ``inside[i]``: the ifs before the i-th (in program order) that the machine decides or
        # says its object is absent on; an ``if`` holds such an ``if`` when the count grows
        # over the ``if``s inside it
        inside = [0]
        for node in table.ifs:
            own = bool(node.absent_in and any(sym in subjects for sym, _ in node.absent_in)) or (
                branches and m.branches_on(node))
            inside.append(inside[-1] + own)
        # the equality tests of one subject count as one test (one excludes another)
        equal = equality_tests(unit)
        group = {k: ("==", equal[k][0]) if k in equal else text for k, (text, _) in tests.items()}
        # per ``if`` of a repeated test: (its group, runs again with the test remembered,
        # opaque but for names, names it re-binds)
        found: list[tuple[object, bool, bool, set]] = []
        for i, again, key in table.repeated:
            node = table.ifs[i]
            sm = summaries_of[id(node)]
            hit = sm.kinds if kinds is None else sm.kinds & kinds
            deep = inside[table.end[i]] > inside[i] or not fids.isdisjoint(sm.fids)
            found.append((group[key], again, deep or sm.jumps or bool(hit), sm.names))

        names_of: dict[object, frozenset[str]] = {}
        for k, (_, names) in tests.items():
            names_of[group[k]] = names_of.get(group[k], frozenset()) | names
        kept: set = set()
        while True:  # the least set of tests that is closed: grows, so it ends
            names = frozenset().union(*(names_of[t] for t in kept))
            runs: dict[object, int] = {}
            for text, in_loop, opaque, rebinds in found:
                if opaque or not rebinds.isdisjoint(names):
                    runs[text] = runs.get(text, 0) + 1 + in_loop
            now = {text for text, n in runs.items() if n > 1}
            if now == kept:
                break
            kept = now
        return {k: v for k, v in tests.items() if group[k] in kept}

    def _local_call(self, machine: Machine, unit: Seq) -> tuple[frozenset[str], frozenset | None]:
        """For a machine that follows local variables of inlined calls only (every subject
        ``f3_1:...``, each ``f3_1`` an ``Inline`` of the unit): the ``fid``s of those calls, and the
        states the object can have outside them (before: the initial state; after: absent;
        ``None``: any, for a machine that reacts to its own object's events only).
        Outside those calls, an inlined call that contains none of them cannot name the object,
        so it passes those states through unchanged and is not run (a training function
        inlined at several call sites was interpreted once per site for each site's objects);
        its events then have no states of this machine. Empty when this does not apply."""
        subjects = machine.subjects
        absent = machine.absent()
        if not subjects or any(":" not in sym for sym in subjects):
            return frozenset(), frozenset()
        if absent is None and not machine.only_own_events:
            return frozenset(), frozenset()
        fids = frozenset(sym.partition(":")[0] for sym in subjects)
        if not fids <= self._summaries[id(unit)].fids:
            return frozenset(), frozenset()
        return fids, None if machine.only_own_events else frozenset({machine.initial(), absent})

    def _name_mask(self, names: frozenset[str]) -> int:
        """The bits of the remembered tests that mention one of ``names``."""
        bits = self._bits_of.get(names)
        if bits is None:
            bits = 0
            for name in names:
                bits |= self._name_bits.get(name, 0)
            self._bits_of[names] = bits
        return bits

    def _forget(self, states: set, names: frozenset[str]) -> set:
        """``states`` without the conditions on ``names`` (names of remembered tests)."""
        bits = self._name_mask(names)
        if not any(conds & bits for _, conds in states):
            return states
        keep = ~bits
        return {(ms, conds & keep) for ms, conds in states}

    def _next_pass(self, states: set, advance: int, targets: frozenset[str]) -> set:
        """``states`` at the end of a pass of a loop, taken to its next pass: a test of the
        loop's counter (``advance``: the "true" bits of those tests) known true on this pass or
        an earlier one of the same run is false there and on every later pass, the counter
        taking another integer on each; what else the conditions said of the loop's targets is
        forgotten (:meth:`_forget`)."""
        keep = ~(self._name_mask(targets) | advance | advance << 1)
        out = set()
        for ms, conds in states:
            was = conds & advance | conds >> self._pass_base & advance  # true now or before
            out.add((ms, conds & keep | was << 1 | was << self._pass_base))
        return out

    def _new_run(self, states: set, advance: int) -> set:
        """``states`` without what they said of earlier passes of a loop (``advance``: the
        "true" bits of the tests of its counter): a run of it starts, or has ended."""
        passed = advance << self._pass_base
        if not any(conds & passed for _, conds in states):
            return states
        return {(ms, conds & ~passed) for ms, conds in states}

    def _rebinds(self, raw: Call | Assign) -> frozenset[str]:
        """The names of the repeated tests that ``raw`` assigns (their conditions are forgotten)."""
        hit = self._assigned.get(id(raw))
        if hit is None:
            hit = self._assigned[id(raw)] = self._test_names.intersection(self._summaries[id(raw)].names)
        return hit

    def events(self, raw: Call | Assign, states: set, raised: set | None = None) -> set:
        """``states`` after the typed events of ``raw``; ``raised``, when given, gets the states
        where each of them raises (:meth:`Machine.raised`: by default the state before it, an
        event that raises has not happened; a call without events, the state before it). The
        call that holds an event raises there: evaluating its receiver and arguments is part
        of it (``scaler.scale(loss).backward()`` raises in its ``backward()``). A machine whose
        own events complete (:attr:`Machine.own_events_complete`) raises nothing where the call
        changes its state (:meth:`_raising`)."""
        if raised is None:
            for ev in raw.typed:
                self.flow.at.setdefault(ev, set()).update(ms for ms, _ in states)
                # (NOT_TAKEN: the machine knows the event raises on that path, which ends there)
                states = {(after, conds) for ms, conds in states
                          if (after := self.m.transfer(ms, ev)) is not NOT_TAKEN}
        else:
            if not raw.typed:
                raised |= states
            else:
                states = self._raising(raw, states, raised)
        names = self._rebinds(raw)
        if names:
            states = self._forget(states, names)
        if self._fact_nodes and id(raw) in self._facts.effects:
            states = self._fact_effect(raw, states)
        return states

    def _raising(self, raw: Call | Assign, states: set, raised: set) -> set:
        """``states`` after the typed events of ``raw``, adding to ``raised`` the states where
        each of them raises (:meth:`Machine.raised`). Where the machine's own events complete
        (:attr:`Machine.own_events_complete`) and the call changes a state (one of its events
        does, or acts on the machine's object, :meth:`Machine.acts`: ``scaler.step(optimizer)``
        is the scaler's step and the optimizer's), the call
        raises nothing from that state: a raise of the call itself is no path to report on. A
        state in which the machine knows an event raises (:data:`NOT_TAKEN`) raises there
        whatever the call does, and its path ends."""
        m = self.m
        complete = m.own_events_complete
        at = self.flow.at
        out = set()
        for ms, conds in states:
            raises, changed = [], False
            for ev in raw.typed:
                at.setdefault(ev, set()).add(ms)
                raises.append((m.raised(ms, ev), conds))
                after = m.transfer(ms, ev)
                if after is NOT_TAKEN:
                    changed = False  # (it surely raises: not a call that failed by chance)
                    break
                changed = changed or after != ms or m.acts(ms, ev)
                ms = after
            if not (complete and changed):
                raised.update(raises)
            if after is not NOT_TAKEN:
                out.add((ms, conds))
        return out

    def _known(self, states: set, number: int | None, negated: bool, taken: bool) -> set:
        """``states`` that can find remembered test ``number`` (``None``: none) ``taken`` (true or
        false; ``negated``: the ``if`` holds the negation of its text), each now knowing it."""
        if number is None or self._forgotten >> 2 * number & 3:
            return states  # (not remembered, or forgotten for the rest of the run)
        outcome = taken != negated  # the test's text is true in this arm
        known = 1 << (2 * number + (not outcome))
        against = 1 << (2 * number + outcome)
        if outcome:  # a path that knew a test this one excludes true cannot take it either
            against |= self._excludes.get(number, 0)
        else:  # nor one that knew its complement false (t % 2 == 0 false: t % 2 == 1 is true)
            against |= self._complements.get(number, 0)
        # a path that knew the other outcome cannot take this arm
        if any(conds & against or not conds & known for _, conds in states):
            return {(ms, conds | known) for ms, conds in states if not conds & against}
        return states

    def _arm(self, node: If, states: set, taken: bool) -> set:
        number = self._number.get(id(node))
        decided = node.first_pass or node.first_pass_given
        if decided is not None and self._first_bits:
            # the arm the loop's first pass cannot take: no path on that pass enters it
            loop, outcome = decided[:2]
            first = self._first_bits.get(id(loop), 0)
            if first and taken is not outcome and any(conds & first for _, conds in states):
                states = {(ms, conds) for ms, conds in states if not conds & first}
        gone = node.absent_in and any(arm is taken and sym in self.m.subjects for sym, arm in node.absent_in)
        absent = self.m.absent() if gone else None
        if absent is not None:
            states = {(absent, conds) for _, conds in states}
        if self._fact_nodes and id(node) in self._fact_arms:  # a path that knows the attribute's value
            base = self._fact_base
            against = 0
            for j, arm in self._fact_arms[id(node)]:
                if arm is not None and arm is not taken:
                    against |= 1 << (base + 2 * j)
            if any(conds & against for _, conds in states):
                states = {(ms, conds) for ms, conds in states if not conds & against}
        if self._fact_nodes and id(node) in self._facts.guards:
            states = self._guarded(node, states, taken)
        if number is not None:
            states = self._known(states, number, id(node) in self._negated, taken)
        elif self._compound and id(node) in self._compound:
            # ``if a and b:`` as ``if a: if b:``: the body where every operand is true, the
            # else-arm where the first k are true and the next false, for some k (``or`` dually)
            conj, negated, operands = self._compound[id(node)]
            number = -1  # (the states are a new set)
            if (taken != negated) == conj:  # every operand has the outcome ``conj``
                for n, neg in operands:
                    states = self._known(states, n, neg, conj)
            else:
                out, cur = set(), states
                for n, neg in operands:
                    out |= self._known(cur, n, neg, not conj)
                    cur = self._known(cur, n, neg, conj)
                    if not cur:
                        break
                states = out
        if self._branches:  # NOT_TAKEN: the machine knows this arm is not taken on that path
            branch = self.m.branch
            out = set()
            for ms, conds in states:
                ms = branch(ms, node, taken)
                if ms is not NOT_TAKEN:
                    out.add((ms, conds))
            return out
        return states if absent is not None or number is not None else set(states)

    def _guarded(self, node: If, states: set, taken: bool) -> set:
        """``states`` entering arm ``taken`` of a raising guard (:attr:`_FactTable.guards`): on
        the arm that goes on, each knows the truth of the tested attribute, and of the same
        attribute through each alias it knows (only the facts this machine follows)."""
        arm, made, aliased = self._facts.guards[id(node)]
        if taken is not arm:
            return states
        base, keep = self._fact_base, self._fact_keep
        made = (made & keep) << base
        aliased = tuple(((a & keep) << base, (j & keep) << base) for a, j in aliased if a & keep and j & keep)
        if not made and not aliased:
            return states
        out = set()
        for ms, conds in states:
            conds |= made
            for a, j in aliased:
                if conds & a:
                    conds |= j
            out.add((ms, conds))
        return out

    def exec(self, node: Node, states: set) -> _Out:
        """Run ``node`` from ``states``; compound nodes are memoized on their input states
        (a loop re-runs its body until nothing changes, nested loops would multiply the work)."""
        if not states:
            return _Out()
        if isinstance(node, (Call, Assign)):  # (only those that can change a state: see _live)
            if self._catching:
                raised: set = set()
                return _Out(self.events(node, states, raised), raised=raised)
            return _Out(self.events(node, states))
        if not isinstance(node, Jump):
            sm = self._summaries[id(node)]
            plain = not sm.jumps and not (sm.names & self._test_names) and id(node) not in self._fact_nodes
            kinds = self.m.kinds
            if plain and kinds is not None and not (sm.kinds & kinds):
                # (a machine's own object is built by an event it reacts to)
                return _Out(self._killed(states, id(node)) if self._fact_nodes else states,
                            raised=set(states) if self._catching else set())
            if (
                self._local_of and not self._inside and (plain or isinstance(node, Inline) and not sm.jumps)
                and self._local_of.isdisjoint(sm.fids) and id(node) not in self._fact_nodes
                and (self._idle is None or all(ms in self._idle for ms, _ in states))
            ):
                # outside the calls whose locals this machine follows (an inlined call's own
                # names are its locals: the conditions it would forget are not about them)
                return _Out(self._killed(states, id(node)) if self._fact_nodes else states,
                            raised=set(states) if self._catching else set())
        key = (id(node), frozenset(states), self._catching)
        hit = self._memo.get(key)
        if hit is None:
            hit = self._exec(node, states)
            self._memo[key] = hit
        return hit

    def _live(self, node: Seq) -> tuple:
        """The items of ``node`` that can change this machine's states: not a call or an
        assignment without typed events that re-binds no remembered test's name, nor a part
        without jumps, remembered names or events of the machine's kinds (the checks
        :meth:`exec` makes, made once per block instead of once per run of it)."""
        live = self._live_items.get(id(node))
        if live is not None:
            return live
        kinds, tested = self.m.kinds, self._test_names
        items = []
        facts = self._fact_nodes
        kills = self._facts.kills if facts else {}
        passed = 0  # the facts the items passed over since the last live one end
        # the items passed over since the last live one (they may raise: _PASSED)
        skipped: list = []
        for item in node.items:
            if isinstance(item, (Call, Assign)):
                if not item.typed and (not tested or not self._rebinds(item)) and not (
                        facts and self._facts.effects.get(id(item), (0, 0))[1]):
                    passed |= kills.get(id(item), 0)
                    skipped.append(item)
                    continue
            elif kinds is not None and not isinstance(item, Jump):
                sm = self._summaries[id(item)]
                if not sm.jumps and not (sm.names & tested) and not (sm.kinds & kinds) and id(item) not in facts:
                    passed |= kills.get(id(item), 0)
                    skipped.append(item)
                    continue
            if skipped and not _receivers_of(skipped, item):
                items.append(_PASSED)
            skipped = []
            if passed:
                items.append(_Kill(passed))
                passed = 0
            items.append(item)
        if skipped:
            items.append(_PASSED)
        if passed:
            items.append(_Kill(passed))
        live = self._live_items[id(node)] = tuple(items)
        return live

    def _exec(self, node: Node, states: set) -> _Out:
        if isinstance(node, Seq):
            out = _Out()
            cur = states
            for item in self._live(node):
                if item is _PASSED:
                    if self._catching:
                        out.raised |= cur
                    continue
                if type(item) is _Kill:
                    cur = self._end_facts(cur, item.mask)
                    continue
                r = self.exec(item, cur)
                out.brk |= r.brk
                out.cont |= r.cont
                out.ret |= r.ret
                out.exc |= r.exc
                out.raised |= r.raised
                cur = r.normal
                if not cur:
                    break
            out.normal = cur
            return out
        if isinstance(node, If):
            a = self.exec(node.body, self._arm(node, states, True))
            b = self.exec(node.orelse, self._arm(node, states, False))
            joined = a.normal | b.normal
            if self._fact_nodes and len(joined) > 1:
                joined = self._merge_facts(joined)
            joined, self._forgotten = _bound(joined, self._forgotten)
            return _Out(joined, a.brk | b.brk, a.cont | b.cont, a.ret | b.ret, a.exc | b.exc, a.raised | b.raised)
        if isinstance(node, Loop):
            targets = self._loop_names.get(id(node))
            if targets is None:  # the loop's targets that remembered tests mention
                targets = self._loop_names[id(node)] = frozenset(node.info.targets) & self._test_names
            head = set(states)
            body = _Out()
            ended = ~(self._facts.loops[id(node)] << self._fact_base) if (
                self._fact_nodes and id(node) in self._facts.loops) else 0
            advance = self._advance.get(id(node.info.node), 0)
            if advance:
                head = self._new_run(head, advance)
            rebinds = self.m.rebinds(node)
            # a run of the loop starts: its first pass (not for a loop run once per object, whose
            # one pass stands for every pass)
            first = self._first_bits.get(id(node.info.node), 0) if self._first_bits and not rebinds else 0
            if first:
                need = self._start_facts.get(id(node.info.node), 0) << self._fact_base
                # (a loop that starts at a variable: the paths on which it holds the value
                # that decides the tests, :attr:`If.first_pass_given`)
                head = {(ms, conds | first if not need or conds & need else conds) for ms, conds in head}
            back: set = set()  # the states that go round (a counter test known true: _next_pass)
            raised: set = set()  # (the head only grows: the last pass's are the most, but not always)
            passed: set = set()  # the states at the end of a pass (the first pass over, if it was)
            for _ in range(1 if node.once or rebinds else MAX_LOOP_ITERATIONS):
                start = self._forget(head, targets) if targets else head
                if advance and back:
                    start = start | self._next_pass(back, advance & ~self._forgotten, targets)
                if ended:  # a new item for the loop's targets: the facts of their attributes end
                    start = {(ms, conds & ended) for ms, conds in start}
                if self._catching:  # fetching the next item may raise (a data loader's worker)
                    raised |= start
                if type(self.m).loop_entry is not Machine.loop_entry:
                    start = {(self.m.loop_entry(ms, node), conds) for ms, conds in start}
                body = self.exec(node.body, start)
                raised |= body.raised
                passed = body.normal | body.cont  # (a pass is over: not the first any more)
                if first:
                    passed = self._without(passed, first)
                again = passed
                if type(self.m).goes_round is not Machine.goes_round:
                    again = {(self.m.goes_round(ms, node), conds) for ms, conds in passed}
                if advance:
                    new_back, self._forgotten = _bound(back | again, self._forgotten)
                    if new_back == back:
                        break
                    back = new_back
                    continue
                new_head, self._forgotten = _bound(head | again, self._forgotten)
                if new_head == head:
                    break
                head = new_head
            # Loops are taken to run at least once: a training loop over an empty loader is
            # not a path worth reporting, and the zero-trip path invents states that no run has.
            exits = set() if node.infinite else passed
            if advance:
                exits = self._new_run(exits, advance)
            after = self.exec(node.orelse, exits) if node.orelse.items else _Out(exits)
            broken = self._new_run(body.brk, advance) if advance else body.brk
            ret, exc = body.ret, body.exc
            if first:  # (the run is over: the paths that leave it are on no pass of it)
                broken, ret, exc = self._without(broken, first), self._without(ret, first), self._without(exc, first)
                raised = self._without(raised, first)
            return _Out(after.normal | broken, after.brk, after.cont, after.ret | ret, after.exc | exc,
                        raised | after.raised)
        if isinstance(node, Jump):
            if node.kind == "break":
                return _Out(brk=set(states))
            if node.kind == "continue":
                return _Out(cont=set(states))
            if node.kind == "raise":
                return _Out(exc=set(states))
            return _Out(ret=set(states))
        if isinstance(node, Try):
            # A handler is entered where the body raised: at one of its calls (in the state
            # Machine.raised gives: before it by default; none for a call of the machine's own
            # events when they complete, Machine.own_events_complete), at a loop's fetch of its
            # next item, or at an explicit ``raise``; never
            # from the state after the body completed, which goes to the ``else`` block. (The
            # calls of an ``if``'s test are items before it; a test without calls raises
            # nothing here.)
            outer = self._catching
            self._catching = outer or bool(node.handlers)
            try:
                body = self.exec(node.body, states)
            finally:
                self._catching = outer
            handler_in = body.raised | body.exc
            out = _Out(brk=set(body.brk), cont=set(body.cont), ret=set(body.ret),
                       exc=set(body.exc) if not node.handlers else set(),
                       raised=set(body.raised) if not node.handlers else set())
            if node.orelse.items:
                after = self.exec(node.orelse, body.normal)
                normal = set(after.normal)
                out.brk |= after.brk
                out.cont |= after.cont
                out.ret |= after.ret
                out.exc |= after.exc
                out.raised |= after.raised
            else:
                normal = set(body.normal)
            for h in node.handlers:
                r = self.exec(h, handler_in)
                normal |= r.normal
                out.brk |= r.brk
                out.cont |= r.cont
                out.ret |= r.ret
                out.exc |= r.exc
                out.raised |= r.raised
            out.normal = normal
            if node.final.items:
                out = self._finally(node.final, out)
            return out
        if isinstance(node, Inline):
            mine = node.fid in self._local_of
            self._inside += mine
            if self._enters:
                enter = self.m.enter
                states = {(enter(ms, node), conds) for ms, conds in states}
            try:
                r = self.exec(node.body, states)
            finally:
                self._inside -= mine
            out, exc, raised = r.normal | r.ret, r.exc, r.raised  # an exception goes on in the caller
            if node.own & self._test_names:
                # the call's own variables are gone: what its tests said of them is forgotten, as
                # a re-binding forgets it (VideoDataset(...) built three times remembered its
                # tests of ``self`` across the calls, multiplying the states past MAX_STATES)
                out, exc = self._forget(out, node.own), self._forget(exc, node.own)
                raised = self._forget(raised, node.own)
            absent = self.m.absent()
            inner = self._summaries[id(node)].fids  # this call and the calls made inside it
            if absent is not None and self.m.subjects and all(s.partition(":")[0] in inner for s in self.m.subjects):
                out = {(absent, conds) for _, conds in out}  # locals of the call: gone when it returns
                exc = {(absent, conds) for _, conds in exc}
                raised = {(absent, conds) for _, conds in raised}
            return _Out(out, exc=exc, raised=raised)
        raise TypeError(node)

    def _finally(self, final: Seq, out: _Out) -> _Out:
        """The ways out of a ``try`` (or a ``with`` whose exits it runs) after its ``finally``
        block: the block runs on each of them, and a path that leaves by ``break``,
        ``continue``, ``return`` or an exception goes on that way once it completes (a jump
        inside the block itself takes its own way)."""
        res = _Out()
        for way in ("normal", "brk", "cont", "ret", "exc", "raised"):
            states = getattr(out, way)
            if not states:
                continue
            r = self.exec(final, states)
            getattr(res, way).update(r.normal)
            res.brk |= r.brk
            res.cont |= r.cont
            res.ret |= r.ret
            res.exc |= r.exc
            res.raised |= r.raised
        return res


def run(machine: Machine, unit: Seq, initial: Iterable[State] | None = None) -> Flow:
    """Interpret ``unit`` with ``machine``, starting from ``initial`` (default: the
    machine's initial state)."""
    interp = _Interpreter(machine, unit)
    start = set(initial) if initial is not None else {machine.initial()}
    out = interp.exec(unit, {(s, 0) for s in start})
    interp.flow.exit = {ms for ms, _ in out.normal | out.ret}
    return interp.flow
