"""Properties of the user's classes read inside a differentiated function,
followed as calls of their getter.

``m.weight`` for a ``@property`` runs the getter's code on ``m``'s
attributes, so the gradient must go through that code: the read becomes a
call of the getter, a user function taking the object (which carries the
gradient, as ``self`` does in a method call).  The class must be known when
transforming: ``m`` bound once by ``m = Scaled(w)`` (a class the function
names), or ``self`` in a method of the class (checked when the function runs:
an object whose class overrides the property is refused)::

    class Scaled:                              def energy(self):
        @property                                  same_property(self, 'weight', Scaled_weight_prop)
        def weight(self):                ->        return np.sum(Scaled_weight(self) ** 2)
            return self._w * self.scale
        def energy(self):
            return np.sum(self.weight ** 2)

Where the class is known only when the function runs (``q`` returned by a
classmethod factory, an argument), a read of a name that is a property of a
class the function can reach (one it names, or their subclasses) is
dispatched then: ``runtime.objects.property_getter`` picks the getter of
``q``'s class, which the dispatcher differentiates as any function it is
handed, or a reader of a stored attribute of that name::

    q = Normal.from_natural(a, b)      ->      q = Normal.from_natural(a, b)
    return q.mean                              return getter(q, 'mean')(q)

Names of an array's own attributes (``shape``, ``T``, ``size``) are
dispatched so only on objects that a call of a user's function made
(``b = make(w)``) and on parameters given an object (neither a number, an
array nor a container); elsewhere they stay field reads, decided when they
run.  Other reads of a property where the object
carries a gradient are refused when the adjoint runs
(``runtime.core.FieldGrads``).

>>> import numpy as np, pullback as pb
>>> class Scaled:
...     def __init__(self, w):
...         self._w = w
...         self.scale = 3.0
...     @property
...     def weight(self):
...         return self._w * self.scale
>>> owner_class(Scaled.weight.fget) is Scaled
True
>>> property_getter(Scaled(1.0), "weight") is Scaled.weight.fget
True
"""
from __future__ import annotations

import types

import gast
import numpy as np

from ..ir.build import closure_name as _helper
from ..runtime.cached_properties import cached_names, followed_cached
from ..runtime.objects import plain_metaclass, property_getter
from ..runtime.opaque import is_library_code
from ..runtime.origin import module_name

__all__ = ["follow_properties", "owner_class", "same_property", "static_value"]


def follow_properties(tree, namer, parsed, param_kinds=None):
    """Rewrite, in the FunctionDef ``tree``, reads of properties of objects
    whose class is known into calls of the getters (module docstring).
    ``param_kinds`` (name -> ``analyses.kinds.Kind``): the parameters given
    neither numbers, arrays nor containers are objects too."""
    known = _built_here(tree, parsed)
    # objects followed through the methods that change them (method_state):
    # rebound to the changed object, of the same class
    known.update(getattr(parsed, "state_objects", {}))
    owner = owner_class(parsed.fn)
    me = tree.args.args[0].id if owner is not None and tree.args.args else None
    if me is not None and _stored_once(tree).get(me, 0) \
            and getattr(parsed.fn, "__pullback_state_of__", None) is None:
        me = None                   # `self` rebound: its class is not known
    later = _run_time_names(parsed) \
        if getattr(parsed.fn, "__pullback_attribute_read__", None) is None else set()
    # an array's own attribute names (`b.T`, `b.shape`) only on objects a user function
    # made (`b = make(w)`); elsewhere they stay field reads (analyses.settle_attributes)
    made = _factory_made(tree, parsed) | {p for p, k in (param_kinds or {}).items()
                                          if getattr(k, "shape", None) == "unknown"} \
        if later & _ARRAY_FIELDS else set()
    later = (later - _ARRAY_FIELDS) | {(n, b) for n in later & _ARRAY_FIELDS for b in made}
    if not known and me is None and not later:
        return
    local = set(_stored_once(tree)) | {a.id for a in tree.args.args + tree.args.kwonlyargs}
    checks = {}

    class Reads(gast.NodeTransformer):
        def visit_Call(self, node):
            if isinstance(node.func, gast.Attribute):
                # `q.kl(p)`: a method call, not a read of `q.kl` as a value
                node.func.value = self.visit(node.func.value)
                node.args = [self.visit(a) for a in node.args]
                node.keywords = [self.visit(k) for k in node.keywords]
                return node
            return self.generic_visit(node)

        def visit_Attribute(self, node):
            self.generic_visit(node)
            if not (isinstance(node.ctx, gast.Load) and isinstance(node.value, gast.Name)):
                return node
            name = node.value.id
            cls = known.get(name) or (owner if name == me else None)
            if cls is None and name in local and (node.attr in later
                                                  or (node.attr, name) in later):
                return _read_when_run(namer, parsed, node)
            if cls is not None and followed_cached(cls, node.attr):
                return _read_when_run(namer, parsed, node)     # (a cached value is read)
            prop = _property(cls, node.attr) if cls is not None else None
            if prop is None:
                return node
            if name == me and name not in known and _overridden(cls, node.attr, prop):
                # (an abstract property, or one a subclass overrides: `self`'s class picks)
                return _read_when_run(namer, parsed, node)
            getter = _helper(namer, parsed, f"{cls.__name__}_{node.attr}", prop.fget)
            if name == me and name not in known:
                checks[node.attr] = (cls, prop)
            call = gast.Call(func=gast.Name(id=getter, ctx=gast.Load(), annotation=None,
                                            type_comment=None),
                             args=[gast.Name(id=name, ctx=gast.Load(), annotation=None,
                                             type_comment=None)], keywords=[])
            for n in gast.walk(call):
                gast.copy_location(n, node)
            return call

        def visit_FunctionDef(self, node):
            return node if node is not tree else self.generic_visit(node)

        def visit_Lambda(self, node):
            return node

    Reads().visit(tree)
    if not checks:
        return
    check = _helper(namer, parsed, "same_property", same_property)
    first = tree.body[0]
    pre = []
    for attr, (cls, prop) in checks.items():
        held = _helper(namer, parsed, f"{cls.__name__}_{attr}_prop", prop)
        stmt = gast.Expr(value=gast.Call(
            func=gast.Name(id=check, ctx=gast.Load(), annotation=None, type_comment=None),
            args=[gast.Name(id=me, ctx=gast.Load(), annotation=None, type_comment=None),
                  gast.Constant(attr, None),
                  gast.Name(id=held, ctx=gast.Load(), annotation=None, type_comment=None)],
            keywords=[]))
        for n in gast.walk(stmt):
            gast.copy_location(n, first)
        pre.append(stmt)
    tree.body[:0] = pre


def _read_when_run(namer, parsed, node):
    """``q.mean`` -> ``property_getter(q, 'mean')(q)``: the getter, or a
    reader of the stored attribute, picked by ``q``'s class when it runs."""
    pick = _helper(namer, parsed, "getter", property_getter)
    obj = node.value.id
    getter = gast.Call(func=gast.Name(id=pick, ctx=gast.Load(), annotation=None,
                                      type_comment=None),
                       args=[gast.Name(id=obj, ctx=gast.Load(), annotation=None,
                                       type_comment=None),
                             gast.Constant(node.attr, None)], keywords=[])
    call = gast.Call(func=getter, args=[gast.Name(id=obj, ctx=gast.Load(), annotation=None,
                                                  type_comment=None)], keywords=[])
    for n in gast.walk(call):
        gast.copy_location(n, node)
    return call


def _run_time_names(parsed):
    """The names of the properties (with a ``def`` getter) of the user's
    classes the function can reach: those it names (globals, captured values)
    and their subclasses.  A read ``obj.name`` of one of them, on an object
    whose class is not known when transforming, is dispatched when it runs."""
    values = list(parsed.globals.values())
    for cell in parsed.closure.values():
        try:
            values.append(cell.cell_contents)
        except ValueError:
            continue
    seen, names = set(), set()
    todo = [v for v in values if isinstance(v, type)]
    while todo:
        cls = todo.pop()
        if cls in seen or is_library_code(cls) or module_name(cls) in _NOT_USERS:
            continue
        seen.add(cls)
        names.update(k for c in cls.__mro__ for k, v in vars(c).items()
                     if type(v) is property and isinstance(v.fget, types.FunctionType))
        names.update(cached_names(cls))
        todo.extend(type.__subclasses__(cls))
    return names


_NOT_USERS = ("builtins", "numpy", "scipy", "jax", "math")
_ARRAY_FIELDS = frozenset(a for a in dir(np.ndarray) if not callable(getattr(np.ndarray, a)))


def _factory_made(tree, parsed):
    """The local names bound only by calls of the user's own functions
    (``b = make(w)``, ``q = Normal.from_natural(a, b)``): objects whose class
    is known when the call runs."""
    counts = _stored_once(tree)
    calls = {}
    for n in gast.walk(tree):
        if isinstance(n, gast.Assign) and len(n.targets) == 1 \
                and isinstance(n.targets[0], gast.Name):
            calls.setdefault(n.targets[0].id, []).append(n.value)
    return {name for name, values in calls.items()
            if len(values) == counts.get(name) and all(
                isinstance(v, gast.Call) and _user_function(static_value(v.func, parsed))
                for v in values)}


def static_value(node, parsed):
    """What the expression ``node`` (a name, or attributes of one) names
    in the function's globals and captured values, or None."""
    if isinstance(node, gast.Attribute):
        base = static_value(node.value, parsed)
        if not isinstance(base, (types.ModuleType, type, np.ufunc)):
            return None     # (reading another object's attribute may run its code)
        try:
            return getattr(base, node.attr, None)
        except Exception:   # (a module's lazy __getattr__ failing to import)
            return None
    if not isinstance(node, gast.Name):
        return None
    cell = parsed.closure.get(node.id)
    if cell is not None:
        try:
            return cell.cell_contents
        except ValueError:
            return None
    return parsed.globals.get(node.id)


def _user_function(fn):
    fn = getattr(fn, "__func__", fn)
    return isinstance(fn, types.FunctionType) and not is_library_code(fn) \
        and module_name(fn).split(".")[0] not in _NOT_USERS + ("pullback",)


def same_property(obj, attr, prop):
    """Refuse, when a method runs, an object whose class resolves ``attr`` to
    another property than the one the method was transformed with."""
    for c in type(obj).__mro__:
        if attr in vars(c):
            if vars(c)[attr] is prop:
                return
            break
    from ..errors import NonDifferentiableError
    raise NonDifferentiableError(
        f"`{type(obj).__name__}` overrides `.{attr}`, which a method of its base class reads "
        "as the base's property; pullback differentiated the method with the base's.",
        hint=f"Call the method on an object of the base class, or read `.{attr}` in a method "
             f"of {type(obj).__name__} itself.")


def _overridden(cls, attr, prop):
    """Whether ``prop``, ``cls``'s property ``attr``, is abstract or a subclass of
    ``cls`` defines ``attr`` again: a method of ``cls`` reading ``self.attr``
    reads the one of ``self``'s class."""
    if getattr(prop.fget, "__isabstractmethod__", False):
        return True
    todo, seen = list(type.__subclasses__(cls)), set()
    while todo:
        c = todo.pop()
        if c in seen:
            continue
        seen.add(c)
        if attr in vars(c):
            return True
        todo.extend(type.__subclasses__(c))
    return False


def owner_class(fn):
    """The class whose body defines the function ``fn`` (by its qualified
    name, in its module), or None."""
    qual = getattr(fn, "__qualname__", "")
    parts = qual.split(".")
    if len(parts) < 2 or "<locals>" in parts:
        return None
    obj = getattr(fn, "__globals__", {}).get(parts[0])
    for p in parts[1:-1]:
        obj = getattr(obj, p, None)
    if not isinstance(obj, type) or vars(obj).get(parts[-1]) is None:
        return None
    defined = vars(obj)[parts[-1]]
    if isinstance(defined, property):
        defined = defined.fget
    return obj if getattr(defined, "__code__", None) is getattr(fn, "__code__", 0) else None


def _property(cls, attr):
    for c in cls.__mro__:
        if attr in vars(c):
            d = vars(c)[attr]
            if isinstance(d, property) and type(d) is property \
                    and isinstance(d.fget, types.FunctionType):
                return d
            return None
    return None


def _stored_once(tree):
    counts = {}
    for n in gast.walk(tree):
        if isinstance(n, gast.Name) and isinstance(n.ctx, (gast.Store, gast.Del)):
            counts[n.id] = counts.get(n.id, 0) + 1
    return counts


def _built_here(tree, parsed):
    """Local name -> class, for names bound once by ``m = C(...)`` with ``C``
    a class the function names (a global or a captured value)."""
    counts = _stored_once(tree)
    params = {a.id for a in tree.args.args + tree.args.kwonlyargs}
    out = {}
    for n in gast.walk(tree):
        if isinstance(n, gast.Assign) and len(n.targets) == 1 \
                and isinstance(n.targets[0], gast.Name) and isinstance(n.value, gast.Call) \
                and isinstance(n.value.func, gast.Name):
            name, func = n.targets[0].id, n.value.func.id
            if counts.get(name) != 1 or name in params or func in counts or func in params:
                continue
            value = parsed.globals.get(func)
            cell = parsed.closure.get(func)
            if cell is not None:
                try:
                    value = cell.cell_contents
                except ValueError:
                    value = None
            if isinstance(value, type) and plain_metaclass(value) \
                    and value.__new__ is object.__new__:
                out[name] = value
    return out
