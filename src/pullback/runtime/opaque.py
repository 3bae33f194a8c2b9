"""Library calls that only move data, checked when they run.

A call into library code (the standard library, an installed package: no
rule, no source pullback follows) that is given values being differentiated
runs as plain Python, and is then checked to have only *moved* them:

    b = sig.bind(*args)            ->  b, b_res = dynamic_call(sig.bind, (0,), True, *args)
    b.apply_defaults()             ->  checked_method_call(b, 'apply_defaults')
    ...                                # adjoint:
                                       args_bar = dynamic_adjoint(b_res, b_bar)[0]

- every float, complex or float array reachable in the result is *the same
  object* (``is``) as one reachable from the call's inputs: an input being
  differentiated sends its cotangent back to the place it came from, any
  other input (a default, a constant) is a constant;
- no array being differentiated was written into during the call (they are
  read-only while it runs, and any array an earlier checked call was given,
  so a library that kept a reference cannot write into it later either);
- an input the call changed in place (``b.apply_defaults()``, ``d.pop(k)``,
  ``list(it)`` consuming an iterator) keeps each differentiated value at the
  place it had: values may leave it, and constants may come in, but a value
  being differentiated that moves inside it, or comes in from elsewhere, is
  refused (a later read would send its cotangent to the wrong place).

Anything else (a new float or array in the result, ``x * 2.0`` computed by
the library, a write into an array, a copy made by ``copy.deepcopy``, a view,
which is a new object) is refused when the call runs, with a
``PullbackError`` naming the call and what to write instead.

Why identity is the right test.  An object that *is* an input's leaf has that
leaf's value, whatever the library did to get it there, so the call is, on
those leaves, a selection: its derivative sends each output cotangent to the
leaf it is, and nothing to the others (ties and choices made by comparing
values are not differentiated, as ``argmax``).  A float or an array the
library made is a new object even when it equals an input (``x + 0.0``,
``np.array(x)``, a view ``x[1:]``: CPython caches small ints, never floats),
so nothing computed passes.  Ints, bools, strings and ``None`` carry no
gradient.  Where one object sits at two places of the inputs and at least one
of them is differentiated, the library could have taken it from either: that
call is refused rather than guessed.

How places are named.  A place is a path of keys from the call's argument:
indices of tuples and lists, keys of dicts and mappings, attribute names of
objects (``__dict__`` and ``__slots__``) - the keys the cotangent of that
value is indexed by, where pullback reads it (``b.arguments`` gives ``b``'s
cotangent an ``"arguments"`` entry).  An object whose contents Python does
not expose (an ``itertools.chain``, an iterator, a set) is a bag: its
leaves are found through the garbage collector's references, and named by
identity (``("@", id(leaf))``, kept alive by the residual), so a bag whose
items move around (an iterator being consumed) still routes exactly.  An
object reached by a library call is followed through its attributes; one
of the user's own classes, a NumPy array and scalars are as elsewhere.

The paths a result is read by later may be those of a later state of the
object (``b.arguments`` after ``b.apply_defaults()``): the changed-input
rule above keeps every differentiated leaf at its path, so the path a
cotangent arrives at is the path the leaf had when it was made.  Which leaves
of a result are differentiated is remembered for the result's lifetime
(``_PROVENANCE``), so that a constant the library keeps in the object
(``b``'s signature and its defaults) may later move (``apply_defaults`` copies
the defaults into ``b.arguments``).

Not caught: a library that mutates a list or dict it kept a reference to from
an earlier call, during a later call not given it (arrays are caught: they
stay read-only during every later checked call); writes through a buffer
(``memoryview``, ctypes) the library took before the call.  A function of the
user's passed to the library as a callback runs as plain Python; what it
computes from a differentiated value can reach the result only as a new
object (refused), and a callback that stores or changes anything
(``nonlocal``, ``global``, an attribute or item store, a changing method
such as ``append``) is refused before the call runs.

>>> import numpy as np, operator
>>> from pullback.runtime.opaque import call
>>> xs = [np.array([1.0]), np.array([2.0])]
>>> out, (routes, held, _, _) = call(operator.itemgetter(1), (xs,), {}, (0,))
>>> out is xs[1], routes            # the result is the argument's item 1
(True, (((), 0, (1,)),))

Walking values to their leaves is ``runtime.leaves``; sending cotangents
and tangents along the routes ``call`` found is ``runtime.opaque_routes``;
calls run for their effect are ``runtime.checked_calls``.
"""
from __future__ import annotations

import functools
import numbers
import sys
import types
import weakref
from collections.abc import Mapping

import numpy as np

from .leaves import ATOMS, Unwalkable, Walk, is_leaf
from .origin import module_name

__all__ = ["is_library_code", "is_library_object", "call", "callee_name", "is_numpy_code",
           "call_protected"]

_EXCLUDED = ("numpy", "scipy", "jax", "jaxlib", "math", "pullback", "cmath")
_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ()))


def is_library_code(obj):
    """Whether ``obj`` (a function, a class, a callable) is library code: the
    standard library's or an installed package's (its module's file under
    ``site-packages``/``dist-packages``), not NumPy, SciPy, JAX or ``math``
    (their functions have rules or are refused with ``NoRuleError``) and
    not pullback's own."""
    module = _module_of(obj)
    if not module:
        return False
    top = module.split(".")[0]
    if top in _EXCLUDED:
        return False
    if top in _STDLIB:
        return True
    path = getattr(sys.modules.get(module), "__file__", None) or ""
    return "site-packages" in path or "dist-packages" in path


def _module_of(obj):
    """The module ``obj`` (a function, a method, a class or a callable object)
    comes from, or None."""
    if isinstance(obj, types.BuiltinMethodType) and not isinstance(
            getattr(obj, "__self__", None), (types.ModuleType, type(None))):
        return module_name(type(obj.__self__))     # `d.values`: the object's type's
    if isinstance(obj, (types.FunctionType, types.BuiltinFunctionType, type)):
        return module_name(obj)
    if isinstance(obj, types.MethodType):
        return _module_of(obj.__func__)
    return module_name(type(obj))


def is_numpy_code(obj):
    """Whether ``obj`` is NumPy's or SciPy's own function or method (a Cython
    method by its own ``__module__`` too), which ``is_library_code`` leaves out."""
    modules = (_module_of(obj), module_name(obj))
    return any(m and m.split(".")[0] in ("numpy", "scipy") for m in modules)


def is_library_object(x):
    """An object neither a number, an array nor a structure pullback knows (one
    a library call made: ``inspect.BoundArguments``): its cotangent is a dict
    by attribute (``FieldGrads``), or by identity for what it hides."""
    return not (is_leaf(x) or isinstance(x, ATOMS) or isinstance(
        x, (tuple, list, dict, numbers.Number, np.ndarray)) or hasattr(x, "__array__"))


# -- the call ---------------------------------------------------------------------

#: id(result) -> (weak reference to it, the ids of its differentiated leaves)
_PROVENANCE = {}
#: arrays given to a checked call: read-only during every later one
_GIVEN = weakref.WeakValueDictionary()


def _remember(obj, diff):
    try:
        ref = weakref.ref(obj, lambda _, k=id(obj): _PROVENANCE.pop(k, None))
    except TypeError:
        return
    _PROVENANCE[id(obj)] = (ref, diff)


def _differentiated_ids(value, leaves):
    """The ids of the leaves of ``value`` (an input being differentiated) that
    may carry a gradient: all, unless ``value`` was made by a checked call,
    which knows which of its leaves were differentiated."""
    found = _PROVENANCE.get(id(value))
    if found is not None and found[0]() is value:
        return {id(leaf) for _, leaf in leaves if id(leaf) in found[1]}
    return {id(leaf) for _, leaf in leaves}


class _Protect:
    """Arrays made read-only while a call runs, restored exactly after."""

    def __init__(self, arrays):
        self.changed = []
        seen = set()
        for a in arrays:
            while isinstance(a, np.ndarray):
                if id(a) not in seen:
                    seen.add(id(a))
                    if a.flags.writeable:
                        a.flags.writeable = False
                        self.changed.append(a)
                a = a.base

    def restore(self):
        # an array's base first: NumPy refuses a view write access while its base has none
        # (rows of one matrix, each protected with the matrix above it)
        for a in sorted(self.changed, key=_depth):
            a.flags.writeable = True


def _depth(a):
    """How many arrays lie under ``a`` (its base, its base's base, ...)."""
    n = 0
    while isinstance(a.base, np.ndarray):
        a, n = a.base, n + 1
    return n


def callee_name(fn):
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) \
        or type(fn).__name__


def _refuse(fn, why, hint):
    from ..errors import NonDifferentiableError
    raise NonDifferentiableError(
        f"pullback ran this call of `{callee_name(fn)}` (library code, which it does not "
        f"differentiate) as plain Python and checked that it only moved the values being "
        f"differentiated: {why}", None, hint)


_HINT_NEW = ("Compute the value in your own function with NumPy (which has rules), "
             "or give the library function a rule with pb.custom_vjp.")


def _inputs(fn, args, kwargs, receiver):
    keys = list(range(len(args))) + list(kwargs)
    values = list(args) + list(kwargs.values())
    if receiver:
        keys.append(-1)
        values.append(fn.__self__)
    return keys, values


def _receiver(fn):
    """A method of a C type bound to its object (``od.move_to_end``): the
    object is an input of the call too (``-1``, as the receiver of a method)."""
    return isinstance(fn, types.BuiltinMethodType) and not isinstance(
        getattr(fn, "__self__", None), (types.ModuleType, type(None)))


def call_protected(fn, args, kwargs, mask):
    """``fn(*args, **kwargs)`` for NumPy's or SciPy's own code reached as a
    call whose result carries no gradient (``fn0 = getattr(np, "sin")`` called
    for nothing, ``rng.shuffle(y)``): run as it is, with the differentiated
    arrays it is given read-only while it runs, so that one written into in
    place is refused rather than changed unseen."""
    keys, values = _inputs(fn, args, kwargs, _receiver(fn))
    given = []
    for k in mask:
        if k in keys:
            try:
                leaves = Walk().leaves(values[keys.index(k)])
            except Unwalkable:
                continue
            given.extend(leaf for _, leaf in leaves if isinstance(leaf, np.ndarray))
    guard = _Protect(given)
    try:
        return fn(*args, **kwargs)
    except ValueError as err:
        if "read-only" in str(err):
            _refuse(fn, f"it wrote into an array being differentiated ({err}).",
                    "Pass a copy (`x.copy()`) if the function may change it, or compute "
                    "the change in your own function (`y = y[rng.permutation(len(y))]` "
                    "for a shuffle).")
        raise
    finally:
        guard.restore()


def call(fn, args, kwargs, mask):
    """``fn(*args, **kwargs)``, checked to have only moved the values in
    ``mask`` (positions, keyword names, ``-1`` for a C method's object), and
    the residual ``adjoint`` reads."""
    receiver = _receiver(fn)
    keys, values = _inputs(fn, args, kwargs, receiver)
    _check_callbacks(fn, values)
    walk = Walk()
    try:
        before = [walk.leaves(v) for v in values]
    except Unwalkable as err:
        _refuse(fn, f"one of its arguments holds a {err}, whose contents pullback cannot "
                    "check.", "Pass a list or a tuple of the values instead.")
    masked = {keys.index(k) for k in mask if k in keys}
    diff, where = set(), {}
    for j, leaves in enumerate(before):
        if j in masked:
            diff |= _differentiated_ids(values[j], leaves)
        for path, leaf in leaves:
            where.setdefault(id(leaf), []).append((j, path))
    given = [leaf for j in masked for _, leaf in before[j] if isinstance(leaf, np.ndarray)
             and id(leaf) in diff]
    guard = _Protect(given + list(_GIVEN.values()))
    try:
        out = fn(*args, **kwargs)
    except ValueError as err:
        if "read-only" in str(err):
            _refuse(fn, f"it wrote into an array being differentiated ({err}).",
                    "Pass a copy (`x.copy()`) if the library may change it, and compute "
                    "the change in your own function.")
        raise
    finally:
        guard.restore()
    for a in given:
        _GIVEN[id(a)] = a
    try:
        for j, v in enumerate(values):
            _check_changed(fn, v, before[j], walk.leaves(v), diff, where)
        result = walk.leaves(out)
    except Unwalkable as err:
        _refuse(fn, f"it returned a {err}, whose contents pullback cannot check.",
                "Make a list of it in the library call's place (`list(...)`).")
    routes, out_diff = [], set()
    for path, leaf in result:
        places = where.get(id(leaf))
        if places is None:
            _refuse(fn, f"its result holds a new {_what(leaf)} (at {_show(path)}), computed "
                        "or copied by the library, not one of the values it was given.",
                    _HINT_NEW + " A copy (`copy.deepcopy`) or a view (`x[1:]`) is new too: "
                    "copy or slice in your own function, where pullback follows it.")
        if not any(j in masked and id(leaf) in diff for j, _ in places):
            continue
        if len(places) > 1:
            _refuse(fn, f"its result holds (at {_show(path)}) a value that sits at "
                        f"{len(places)} places of its arguments "
                        f"({', '.join(_show((keys[j],) + p) for j, p in places[:3])}), so "
                        "pullback cannot tell which one it took.",
                    "Pass each value once (or pass a copy, `x.copy()`, where one value "
                    "is given twice).")
        j, inpath = places[0]
        routes.append((path, mask.index(keys[j]), inpath))
        out_diff.add(id(leaf))
    if routes and isinstance(out, Mapping) and not isinstance(out, (dict, types.MappingProxyType)):
        # a ChainMap, a UserDict: read by key, its gradient would be kept by key, which
        # the routes (through `maps`, `data`) do not read: dropped, a zero gradient
        _refuse(fn, f"it returned a {type(out).__name__}, a mapping that is not a dict, whose "
                    "items pullback cannot send gradients back from.",
                "Build a dict in your own function (`{**defaults, **overrides}` for a "
                "ChainMap(overrides, defaults)).")
    _remember(out, out_diff)
    held = tuple(values[keys.index(k)] if k in keys else None for k in mask)
    keep = tuple(leaf for _, leaf in result)
    return out, (tuple(routes), held, keep, fn)


def _check_changed(fn, value, before, after, diff, where):
    """The changed-input rule (module docstring)."""
    if len(before) == len(after) and all(
            p == q and a is b for (p, a), (q, b) in zip(before, after)):
        return
    old = {p: leaf for p, leaf in before}
    for path, leaf in after:
        was = old.get(path)
        if was is leaf:
            continue
        if was is not None and id(was) in diff:
            _refuse(fn, f"it changed an argument in place, replacing the value being "
                        f"differentiated at {_show(path)} (a later read there would send its "
                        "gradient to the old value).",
                    "Build the new value in your own function (a new list or dict), rather "
                    "than have the library change the one you have.")
        if id(leaf) in diff:
            _refuse(fn, f"it changed an argument in place, moving a value being "
                        f"differentiated to {_show(path)}.",
                    "Build the new value in your own function (`ys = sorted_copy(xs)`, a "
                    "new list or dict), rather than have the library rearrange it.")
        if id(leaf) not in where:
            _refuse(fn, f"it changed an argument in place, storing a new {_what(leaf)} at "
                        f"{_show(path)}.", _HINT_NEW)


def _what(leaf):
    if isinstance(leaf, np.ndarray):
        return f"array (shape {leaf.shape})"
    return f"{type(leaf).__name__} ({leaf!r})"


def _show(path):
    if not path:
        return "the top"
    parts = []
    for k in path:
        if isinstance(k, tuple) and k[:1] == ("@",):
            parts.append("[an item it holds]")
        elif isinstance(k, str) and k.isidentifier():
            parts.append(f".{k}" if parts else k)
        else:
            parts.append(f"[{k!r}]")
    return "".join(parts)


# -- callbacks --------------------------------------------------------------------------

def _check_callbacks(fn, values):
    """Refuse a function of the user's given to the library (a key, a callback)
    that stores or changes anything: it runs as plain Python, where such a
    change would go unseen."""
    for v in values:
        while isinstance(v, functools.partial):      # a nested function, lifted
            v = v.func
        f = v.__func__ if isinstance(v, types.MethodType) else v
        if not isinstance(f, types.FunctionType) or is_library_code(f):
            continue
        why = _changes(f)
        if why:
            _refuse(fn, f"it is given `{callee_name(f)}`, a function of yours that it calls as "
                        f"plain Python, and that {why}, which pullback would not see.",
                    "Give the library a function that only computes and returns a value, "
                    "or write the loop yourself.")


_CHANGING = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "update",
                       "setdefault", "popitem", "sort", "reverse", "fill", "put", "add",
                       "discard", "itemset", "resize", "setflags", "partition", "at"})


def _changes(f):
    import ast
    import inspect
    import textwrap
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(f)))
    except (OSError, TypeError, SyntaxError):
        return "whose source pullback cannot read"
    for node in ast.walk(tree):
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            return f"declares `{node.names[0]}` {type(node).__name__.lower()}"
        targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else \
            [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
        if any(isinstance(t, (ast.Attribute, ast.Subscript)) for t in targets):
            return f"stores into something (line {node.lineno} of its source)"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in _CHANGING:
            return f"calls `.{node.func.attr}(...)` (line {node.lineno} of its source)"
    return None
