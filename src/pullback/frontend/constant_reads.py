"""Reads of module constants where a default is given: ``act=np.tanh`` in a
nested ``def layer(h, *, act=np.tanh)`` reads a global (or a closure value,
or a builtin) and its attributes, which are constants to the transform (its
bindings are checked at every call, so a rebinding transforms again); a
default computed from the function's own names is not one.

>>> import gast, numpy as np
>>> from types import SimpleNamespace
>>> parsed = SimpleNamespace(globals={"np": np}, closure={})
>>> node = gast.parse("np.tanh").body[0].value
>>> constant_read(node, parsed, {"x"}) is np.tanh
True
>>> constant_read(gast.parse("x.T").body[0].value, parsed, {"x"}) is None
True
"""
from __future__ import annotations

import gast

from ..analyses.callable_facts import static_value

__all__ = ["constant_read"]


def constant_read(node, parsed, local):
    """The object the dotted name ``node`` reads, where its root is no name
    of ``local`` (the function's own) and it resolves now; else None."""
    root = node
    while isinstance(root, gast.Attribute):
        root = root.value
    if not isinstance(root, gast.Name) or root.id in local:
        return None
    return static_value(node, parsed)
