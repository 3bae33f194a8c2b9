"""Rules for the dicts a function builds and changes (``frontend.dict_stores``).

``d[k] = v`` into a dict the function holds alone is ``d = dict_set(d, k,
v)``, a new dict; ``{**p, "b": v}``, ``dict(p, b=v)``, ``p | q`` and
``d.update(q)`` are ``dict_merge(...)``.  The cotangent of a new dict is a
dict (entries nothing reached are missing or None: zero); an entry a store
replaced gets zero, the stored value the new dict's entry::

    d = dict_set(d, "b", v)          ->    grads = dict_set_grads(d_new_bar, d, "b", v)
                                           d_bar, v_bar = grads[0], grads[1]

Both are linear in the dicts and values they are given (forward mode: the
same call on the tangents), and so are the cotangent helpers in the
cotangent (derivatives of derivatives).
"""
from __future__ import annotations

from ..runtime import control
from ..runtime.control import (dict_item_grads, dict_merge_grads, dict_set_grads,
                               dict_setdefault_grads, dict_stored_grad, dict_without)
from .registry import facts, linear, nondifferentiable, vjp
from .runtime_helpers import _declare

__all__ = []


@vjp(control.dict_set, nondiff=("key",), discrete=("key",))
def dict_set(g, ans, d, key, value):
    grads = dict_set_grads(g, d, key, value)
    return grads[0], grads[1]


@vjp(control.dict_setdefault, nondiff=("key",), discrete=("key",))
def dict_setdefault(g, ans, d, key, value):
    grads = dict_setdefault_grads(g, d, key, value)
    return grads[0], grads[1]


@vjp(control.dict_merge)
def dict_merge(g, ans, *parts):
    grads = dict_merge_grads(g, parts)
    return grads


@vjp(control.dict_store, nondiff=("key",), discrete=("key",))
def dict_store(g, ans, d, key, value):
    value_bar = dict_stored_grad(g, key, value)
    return dict_without(g, key), value_bar


@vjp(control.dict_item, nondiff=("key",), discrete=("key",))
def dict_item(g, ans, d, key):
    return dict_item_grads(g, key)


linear(control.dict_set, control.dict_setdefault, control.dict_merge, control.dict_store,
       control.dict_item)
nondifferentiable(control.item_rebinds, control.loop_keys, control.pick_index,
                  control.dict_set_in_place)
_declare(control.dict_set_grads, (0,))
_declare(control.dict_setdefault_grads, (0,))
_declare(control.dict_merge_grads, (0,))
_declare(control.dict_stored_grad, (0,))
_declare(control.dict_without, (0,))
_declare(control.dict_item_grads, (0,))
# (a new dict, or the one a previous store's adjoint made, that nothing else holds)
facts(control.dict_without, control.dict_item_grads, owned=True)
