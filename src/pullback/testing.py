"""Helpers for tests and docstring examples: functions from source text, and
each pass's result on them.

>>> f = function_from_source('''
... def f(x):
...     return x * 2.0
... ''')
>>> f(1.5)
3.0
"""
from __future__ import annotations

import itertools
import textwrap

import numpy as np

from .backend import codegen
from .frontend import parse as frontend
from .normalize import normalize as normalize_
from .analyses import activity, defuse, kinds as kinds_, op_resolver

__all__ = ["function_from_source", "normal_form", "analyses", "adjoint_source"]

_counter = itertools.count()


def function_from_source(text, globals_=None):
    """Define the function written in ``text`` with its source retrievable (as
    if it lived in a file), in a namespace holding ``np`` and ``math``."""
    import math
    text = textwrap.dedent(text).lstrip("\n")
    filename = f"<pullback example {next(_counter)}>"
    codegen.register_source(filename, text)
    ns = {"np": np, "math": math, **(globals_ or {})}
    exec(compile(text, filename, "exec"), ns)
    name = text.split("def ", 1)[1].split("(", 1)[0].strip()
    return ns[name]


def normal_form(fn):
    """The normal form of ``fn`` (a ``normalize.Normal``), after the passes
    that come before normalize."""
    from .frontend import closures, desugar, structure
    from .ir.naming import Namer
    parsed = frontend.parse(fn)
    namer = Namer.for_tree(parsed.tree, parsed.globals.keys())
    desugar.desugar(parsed.tree, namer, parsed)
    closures.lift_closures(parsed.tree, namer, parsed)
    structure.structure(parsed.tree, namer, parsed)
    return normalize_.normalize(parsed, namer)


def analyses(fn, wrt=None, param_kinds=None):
    """Normal form, ops, def-use chains, kinds and activity of ``fn``."""
    normal = normal_form(fn)
    parsed = frontend.parse(fn)
    ops = op_resolver.resolve(normal, parsed)
    param_kinds = param_kinds or {p: kinds_.NUMBER for p in normal.params}
    kinds = kinds_.infer(normal.tree, param_kinds, ops)
    chains = defuse.chains(normal.tree)
    wrt = normal.params if wrt is None else wrt
    act = activity.analyze(normal.tree, chains, wrt, normal.returned,
                           lambda s: ops[id(s)].names(), lambda s: ops[id(s)].mutates)
    return normal, ops, chains, kinds, act


def structured(fn):
    """``fn``'s source after the structure pass (early exits as flags)."""
    from .frontend import structure
    from .ir.naming import Namer
    parsed = frontend.parse(fn)
    namer = Namer.for_tree(parsed.tree, parsed.globals.keys())
    return codegen.unparse(structure.structure(parsed.tree, namer, parsed))


def desugared(fn):
    """``fn``'s source after the desugar pass (index loops, comprehensions)."""
    from .frontend import desugar
    from .ir.naming import Namer
    parsed = frontend.parse(fn)
    namer = Namer.for_tree(parsed.tree, parsed.globals.keys())
    return codegen.unparse(desugar.desugar(parsed.tree, namer, parsed))


def blocks_lowered(fn):
    """``fn``'s source after its ``try`` and ``with`` statements are lowered."""
    from .frontend import exceptions
    from .ir.naming import Namer
    parsed = frontend.parse(fn)
    namer = Namer.for_tree(parsed.tree, parsed.globals.keys())
    return codegen.unparse(exceptions.lower_blocks(parsed.tree, namer, parsed))


def pinned(fn):
    """``fn``'s source after its reads of lists that grow are pinned."""
    from .frontend import grown_lists
    from .ir.naming import Namer
    parsed = frontend.parse(fn)
    namer = Namer.for_tree(parsed.tree, parsed.globals.keys())
    grown_lists.pin_list_indices(parsed.tree, namer, parsed)
    return codegen.unparse(parsed.tree)


def lifted(fn):
    """``fn``'s source after closure lifting, followed by the lifted functions."""
    from .frontend import closures
    from .ir.naming import Namer
    parsed = frontend.parse(fn)
    namer = Namer.for_tree(parsed.tree, parsed.globals.keys())
    extra = closures.lift_closures(parsed.tree, namer, parsed)
    return "\n\n".join([codegen.unparse(parsed.tree)] +
                       [codegen.unparse(tree) for _, tree in extra])


def adjoint_source(fn, *args):
    """The adjoint ``pb.source`` generates for ``fn`` at ``args``, without its
    ``# line`` comments (for the rule modules' examples)."""
    import re
    from .sources import source
    text = source(fn, *args)
    return "def " + re.sub(r" *#.*\n", "", text).split("def ", 2)[2].rstrip("\n")
