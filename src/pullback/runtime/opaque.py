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
>>> from pullback.runtime.opaque import call, adjoint
>>> xs = [np.array([1.0]), np.array([2.0])]
>>> out, res = call(operator.itemgetter(1), (xs,), {}, (0,))
>>> out is xs[1], adjoint(res, np.array([5.0]))
(True, ([array([0.]), array([5.])],))
"""
from __future__ import annotations

import functools
import gc
import numbers
import sys
import types
import weakref

import numpy as np

from .backends import is_foreign
from .arguments import unseen_method_write

__all__ = ["is_library_code", "call", "adjoint", "forward", "checked_method_call", "checked_call",
           "entered_value",
           "is_iterator", "is_bag", "is_library_object", "items_cotangent", "bag_cotangent"]

_EXCLUDED = ("numpy", "scipy", "jax", "jaxlib", "math", "pullback", "cmath")
_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ()))
_NODES = 200_000          # the most objects one call's inputs and result are walked through


def is_library_code(obj):
    """Whether ``obj`` (a function, a class, a callable) is library code: the
    standard library's or an installed package's (its module's file under
    ``site-packages``/``dist-packages``), not NumPy, SciPy, JAX or ``math``
    (their functions have rules or are refused with ``NoRuleError``) and
    not pullback's own."""
    if isinstance(obj, types.BuiltinMethodType) and not isinstance(
            getattr(obj, "__self__", None), (types.ModuleType, type(None))):
        module = type(obj.__self__).__module__       # `d.values`: the object's type's
    elif isinstance(obj, (types.FunctionType, types.BuiltinFunctionType, type)):
        module = getattr(obj, "__module__", None)
    elif isinstance(obj, types.MethodType):
        return is_library_code(obj.__func__)
    else:
        module = type(obj).__module__
    if not isinstance(module, str) or not module:
        return False
    top = module.split(".")[0]
    if top in _EXCLUDED:
        return False
    if top in _STDLIB:
        return True
    path = getattr(sys.modules.get(module), "__file__", None) or ""
    return "site-packages" in path or "dist-packages" in path


def is_library_object(x):
    """An object neither a number, an array nor a structure pullback knows (one
    a library call made: ``inspect.BoundArguments``): its cotangent is a dict
    by attribute (``FieldGrads``), or by identity for what it hides."""
    return not (_is_leaf(x) or isinstance(x, _ATOMS) or isinstance(
        x, (tuple, list, dict, numbers.Number, np.ndarray)) or hasattr(x, "__array__"))


# -- walking values -----------------------------------------------------------------

def _is_leaf(v):
    t = type(v)
    if t is float or t is complex or t is np.ndarray and v.dtype.kind in "fc":
        return True
    if isinstance(v, (bool, np.bool_)):
        return False
    if isinstance(v, (float, complex, np.floating, np.complexfloating)):
        return True
    if isinstance(v, np.ndarray):
        return v.dtype.kind in "fc"
    return is_foreign(v)


_ATOMS = (type(None), bool, int, str, bytes, range, slice, type(Ellipsis), type,
          types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.CodeType,
          types.MethodDescriptorType, types.WrapperDescriptorType, np.integer, np.bool_,
          np.dtype, weakref.ref)
_UNWALKABLE = (types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType,
               types.FrameType)


class Unwalkable(Exception):
    """A generator or a frame among the values: what it holds is not data."""


class _Walk:
    """The leaves reachable from one value: ``(path, leaf)`` pairs."""

    def __init__(self):
        self.nodes = 0

    def leaves(self, value, path=()):
        out = []
        self._walk(value, path, out, set(), None)
        return out

    def _walk(self, v, path, out, stack, bag):
        if _is_leaf(v):
            out.append((path if bag is None else bag + (("@", id(v)),), v))
            return
        if isinstance(v, _ATOMS) or (isinstance(v, np.ndarray) and v.dtype.kind not in "O"):
            return
        if isinstance(v, _UNWALKABLE):
            raise Unwalkable(type(v).__name__)
        i = id(v)
        if i in stack:
            return
        self.nodes += 1
        if self.nodes > _NODES:
            raise Unwalkable(f"more than {_NODES} objects")
        stack.add(i)
        try:
            for key, child, in_bag in _children(v, bag is not None):
                if in_bag and bag is None:
                    self._walk(child, path, out, stack, path)
                else:
                    self._walk(child, path + (key,) if bag is None else path, out, stack, bag)
        finally:
            stack.discard(i)


def _children(v, in_bag):
    """``(key, child, whether child is in a bag)`` of one container."""
    if isinstance(v, (tuple, list)):
        return [(k, c, False) for k, c in enumerate(v)]
    if isinstance(v, dict):
        out = [(k, c, False) for k, c in list(v.items())]
        return out + _fields(v) if type(v).__flags__ & (1 << 9) else out   # a heap subclass
    if isinstance(v, types.MappingProxyType):
        return [(k, v[k], False) for k in v]
    if isinstance(v, np.ndarray):          # an object array: its items by position
        return [(k, c, False) for k, c in enumerate(v.ravel().tolist())]
    fields = _fields(v)
    if not _has_hidden_state(v):
        return fields
    skip = (getattr(v, "__dict__", None), type(v))
    hidden = [(None, r, True) for r in gc.get_referents(v)
              if not any(r is s for s in skip)]
    return fields + hidden


def _fields(v):
    out = []
    d = getattr(v, "__dict__", None)
    if isinstance(d, dict):
        out.extend((k, c, False) for k, c in list(d.items()))
    for cls in type(v).__mro__:
        for name in cls.__dict__.get("__slots__", ()) if isinstance(
                cls.__dict__.get("__slots__", ()), (tuple, list)) else \
                (cls.__dict__.get("__slots__"),):
            if name in ("__dict__", "__weakref__"):
                continue
            try:
                out.append((name, object.__getattribute__(v, name), False))
            except AttributeError:
                pass
    return out


def _has_hidden_state(v):
    """Whether ``v`` keeps values Python does not show as attributes (an
    instance of a C type other than ``object``: an iterator, a deque, a set)."""
    for cls in type(v).__mro__:
        if cls is object:
            continue
        if not cls.__flags__ & (1 << 9):       # Py_TPFLAGS_HEAPTYPE: not a C type
            return True
    return False


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
        for a in reversed(self.changed):
            a.flags.writeable = True


def _name_of(fn):
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) \
        or type(fn).__name__


def _refuse(fn, why, hint):
    from ..errors import NonDifferentiableError
    raise NonDifferentiableError(
        f"pullback ran this call of `{_name_of(fn)}` (library code, which it does not "
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


def call(fn, args, kwargs, mask):
    """``fn(*args, **kwargs)``, checked to have only moved the values in
    ``mask`` (positions, keyword names, ``-1`` for a C method's object), and
    the residual ``adjoint`` reads."""
    receiver = _receiver(fn)
    keys, values = _inputs(fn, args, kwargs, receiver)
    _check_callbacks(fn, values)
    walk = _Walk()
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


# -- the adjoint --------------------------------------------------------------------

def _at(ct, key):
    if ct is None:
        return None
    if isinstance(ct, dict):
        return ct.get(key)
    if isinstance(ct, (list, tuple)) and isinstance(key, int) and not isinstance(key, bool):
        return ct[key] if -len(ct) <= key < len(ct) else None
    if isinstance(ct, numbers.Number) and not isinstance(ct, np.ndarray):
        return None       # a zero standing for a whole structure
    if isinstance(key, str):
        return getattr(ct, key, None)
    return None


def _ct_at(ct, path):
    for key in path:
        ct = _at(ct, key)
        if ct is None:
            return None
    return ct


def adjoint(res, ct):
    """One cotangent per entry of the call's mask: each leaf of the result
    sends its cotangent to the place of the argument it is."""
    from .core import add_cotangents, project
    routes, held, _, fn = res
    acc = [{} for _ in held]
    for path, k, inpath in routes:
        g = _ct_at(ct, path)
        if g is None:
            continue
        acc[k][inpath] = add_cotangents(acc[k].get(inpath), g)
    return tuple(_build(v, a, (), project) for v, a in zip(held, acc))


def _build(value, acc, path, project):
    """The cotangent of ``value`` with ``acc`` (path -> cotangent) placed."""
    from .core import is_instance, zeros_like
    if path in acc:
        return project(acc[path], value)
    if not any(p[:len(path)] == path for p in acc):
        if _is_leaf(value) or isinstance(value, (tuple, list, dict)) or is_instance(value):
            return zeros_like(value)
        return 0.0 if isinstance(value, _ATOMS) else {}
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(_build(c, acc, path + (k,), project)
                             for k, c in enumerate(value)))
    if isinstance(value, (tuple, list)):
        return type(value)(_build(c, acc, path + (k,), project) for k, c in enumerate(value)) \
            if type(value) in (tuple, list) else [_build(c, acc, path + (k,), project)
                                                  for k, c in enumerate(value)]
    if isinstance(value, (dict, types.MappingProxyType)):
        return {k: _build(value[k], acc, path + (k,), project) for k in list(value)}
    out = {}
    for key, child, in_bag in _children(value, False):
        if not in_bag:
            out[key] = _build(child, acc, path + (key,), project)
    for p, g in acc.items():
        if len(p) == len(path) + 1 and p[:len(path)] == path and isinstance(p[-1], tuple):
            out[p[-1]] = g          # a bag's leaf, by identity
    return out


def is_iterator(x):
    """An iterator (``iter(x) is x``): reading it consumes it."""
    return not isinstance(x, (tuple, list, dict, np.ndarray)) and hasattr(x, "__next__")


def is_bag(x):
    """An iterable that is not a tuple, a list, a dict or an array (an iterator,
    a view such as ``d.values()``, a set, a deque): its cotangent is keyed by
    the identity of the values it holds (module docstring)."""
    return not isinstance(x, (tuple, list, dict, np.ndarray)) and not _is_leaf(x)


def items_cotangent(iterable, ans, g):
    """The cotangent of ``iterable`` that ``list(...)`` / ``tuple(...)`` read into
    ``ans``, from ``g`` (the cotangent of ``ans``): for a tuple, a list or an
    array, ``pack_like(iterable, g)``; for a bag (an iterator, consumed by the
    time the adjoint runs, or a view), by the identity of the values it gave
    (the checked call that made it routes each back by identity)."""
    from .core import pack_like
    if not is_bag(iterable):
        return pack_like(iterable, g)
    return bag_cotangent(ans, [_at(g, i) for i in range(len(ans))])


def bag_cotangent(items, cts):
    """``{("@", id(leaf)): cotangent}`` for the leaves of ``items``, each item's
    cotangent in ``cts`` (None: nothing)."""
    from .core import add_cotangents
    out = {}
    walk = _Walk()
    for item, gi in zip(items, cts):
        if gi is None:
            continue
        for path, leaf in walk.leaves(item):
            part = _ct_at(gi, path)
            if part is not None:
                key = ("@", id(leaf))
                out[key] = add_cotangents(out.get(key), part)
    return out


# -- forward mode ---------------------------------------------------------------------

def forward(fn, args, kwargs, mask, tangents):
    """``fn(*args, **kwargs)`` and the tangent of its result: each leaf of the
    result has the tangent of the argument's leaf it is (zero for constants)."""
    out, (routes, held, _, _) = call(fn, args, kwargs, mask)
    placed = {}
    if any(isinstance(key, tuple) for path, _, inpath in routes for key in path + inpath):
        from ..errors import NonDifferentiableError
        raise NonDifferentiableError(
            f"forward mode cannot follow tangents through `{_name_of(fn)}`, whose argument or "
            "result is an object that holds values it does not show (an iterator).",
            None, "Make a list of it first (`list(...)`), or use reverse mode (pb.grad).")
    for path, k, inpath in routes:
        t = _ct_at(tangents[k], inpath)
        if t is not None:
            placed[path] = t
    if () in placed:
        return out, placed[()]
    if not placed:
        return out, _tangent(out, placed, ())
    return out, _tangent(out, placed, ())


class _Fields(dict):
    """The tangent of an object a library call made: its attributes' tangents,
    read as attributes too (``b_dot.arguments``, as the tangent code reads a field)."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def _zero_tangent(x):
    """Zeros of ``x``'s shape for a float leaf, the same structure for a
    container, None for what has no tangent (``forward_support.zeros_tangent``)."""
    if _is_leaf(x):
        return np.zeros_like(x) if isinstance(x, np.ndarray) else type(x)(0)
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*(_zero_tangent(v) for v in x))
    if isinstance(x, (tuple, list)):
        return type(x)(_zero_tangent(v) for v in x) if type(x) in (tuple, list) \
            else [_zero_tangent(v) for v in x]
    if isinstance(x, dict):
        return {k: _zero_tangent(v) for k, v in x.items()}
    return None


def _tangent(value, placed, path):
    zeros_tangent = _zero_tangent
    if path in placed:
        return placed[path]
    if not any(p[:len(path)] == path for p in placed):
        return zeros_tangent(value) if _is_leaf(value) or isinstance(
            value, (tuple, list, dict)) else {}
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(_tangent(c, placed, path + (k,)) for k, c in enumerate(value)))
    if isinstance(value, (tuple, list)):
        return (tuple if isinstance(value, tuple) else list)(
            _tangent(c, placed, path + (k,)) for k, c in enumerate(value))
    if isinstance(value, (dict, types.MappingProxyType)):
        return {k: _tangent(value[k], placed, path + (k,)) for k in list(value)}
    out = _Fields((key, _tangent(c, placed, path + (key,)))
                  for key, c, in_bag in _children(value, False) if not in_bag)
    for p, t in placed.items():
        if len(p) == len(path) + 1 and p[:len(path)] == path and isinstance(p[-1], tuple):
            out[p[-1]] = t
    return out


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
            _refuse(fn, f"it is given `{_name_of(f)}`, a function of yours that it calls as "
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


# -- `with cm as v`: what __enter__ returns -----------------------------------------------

def entered_value(cm, names=""):
    """``v`` of ``with cm as v`` where ``cm`` was built from the function's own
    values (``with open(path) as fh``): entered as ``control.context_enter``
    does, and checked to hold no float, complex or float array, since what
    ``__enter__`` returns is taken to carry no gradient (a file, a lock)."""
    from . import control
    value = control.context_enter(cm)
    try:
        leaves = _Walk().leaves(value)
    except Unwalkable:
        leaves = [((), None)]
    if leaves:
        from ..errors import UnsupportedSyntaxError
        raise UnsupportedSyntaxError(
            f"pullback cannot differentiate a context manager built from {names or 'values of this function'} "
            f"whose `as` value (what `{type(cm).__name__}.__enter__` returned) holds numbers.",
            None, "What `__enter__` returns carries no gradient: build the context manager "
            "from module-level values, or compute the value in the block.")
    return value


# -- calls whose result carries no gradient ------------------------------------------

def checked_call(mask, fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` as a statement (or with a result no gradient
    reaches) given values being differentiated (``mask``: the positions and
    keywords that hold them; ``analyses.opaque_calls`` writes it so): library
    code runs checked (``call``), so that what it changes in its arguments
    keeps each differentiated value at its place; anything else runs as it is
    (pullback's other checks are where they were)."""
    f, lead, keywords = fn, (), {}
    while True:         # what the dispatcher unwraps: partials, bound methods
        if isinstance(f, functools.partial):
            lead, keywords, f = f.args + lead, {**f.keywords, **keywords}, f.func
        elif isinstance(f, types.MethodType):
            lead, f = (f.__self__,) + lead, f.__func__
        else:
            break
    if isinstance(f, type) or not callable(f) or not is_library_code(f):
        return fn(*args, **kwargs)
    if set(keywords) & set(kwargs):
        return fn(*args, **kwargs)      # (Python raises)
    n = len(lead)
    mask = tuple(k + n if isinstance(k, int) and k >= 0 else k for k in mask)
    return call(f, lead + args, {**keywords, **kwargs}, mask)[0]


def checked_method_call(mask, strict, obj, name, *args, **kwargs):
    """``obj.name(*args, **kwargs)`` as a statement, as ``checked_call``
    (``-1`` in ``mask``: ``obj`` holds values being differentiated).  With
    ``strict`` (``obj`` holds them and its class was not known when the
    function was transformed: ``b = sig.bind(*args); b.apply_defaults()``), a
    method that is not library code is refused, as ``analyses.attributes``
    refuses it where the class is known: it would change ``obj`` unseen."""
    method = getattr(obj, name)
    fn, lead = method, ()
    if isinstance(method, types.MethodType):
        fn, lead = method.__func__, (method.__self__,)
    if is_library_code(fn):
        if lead:
            mask = tuple(0 if k == -1 else k + 1 if isinstance(k, int) else k for k in mask)
        return call(fn, lead + args, kwargs, mask)[0]
    if not strict:
        if any(k != -1 for k in mask) and lead:     # (a value given: kept out of `obj`)
            unseen_method_write(lead[0], name)
        return method(*args, **kwargs)
    from ..errors import UnsupportedSyntaxError
    cls = type(obj).__name__
    raise UnsupportedSyntaxError(
        f"pullback cannot differentiate this call of `{name}`: its result is unused, so it "
        f"runs as plain Python, and the object (a {cls}) holds differentiated values: "
        "whatever the call changes in it would go unseen, and the reads of it after the "
        "call would be differentiated as if the call had not run.", None,
        f"Make `{name}` return a new {cls} (or the new values) instead of changing `self`, "
        f"and bind it: `obj = obj.{name}(...)`; a method called for its result is "
        "differentiated.")
