"""Functions pullback differentiates from rewritten source, and runs as that
source compiled without derivatives where nothing in a call carries a
gradient.

A rewritten ``__init__`` (``instances.fields_function``) or a method's state
function (``method_state.state_function``) shares its code object with the
user's function, so a call the primal runs as plain Python (no argument
carries a gradient) must not run that code: ``Followed`` stands for the
function in generated code; ``analyses.ops`` differentiates its ``function``
(parsed with the rewrite), and calling it runs the rewritten code::

    super().__init__("actnorm")     ->    self_Bijector = Bijector_init('actnorm')
                                          (Bijector_init: Followed, whose plain
                                          call builds the object, as the
                                          rewritten code says)

>>> import types
>>> def init(self, w):
...     self.w = w
>>> Followed(types.FunctionType(init.__code__, {}, "Box_init")).__name__
'Box_init'
"""
from __future__ import annotations

import itertools
import linecache
import textwrap
import types

__all__ = ["Followed"]


class Followed:
    """A function pullback differentiates from rewritten source
    (``function``, whose code is the user's method with a
    ``__pullback_rewrite__`` hook) and that runs, where no argument carries a
    gradient, as the same rewritten code compiled without derivatives."""

    def __init__(self, function, follow=None):
        self.function = function
        self.follow = follow        # a pass to run on the rewritten code first
        self._plain = None
        self.__name__ = function.__name__
        self.__qualname__ = function.__qualname__

    def __call__(self, *args, **kwargs):
        if self._plain is None:
            self._plain = _compile_plain(self.function, self.follow)
        return self._plain(*args, **kwargs)

    def __repr__(self):
        return f"<pullback followed function {self.function.__qualname__}>"


_counter = itertools.count()


def _compile_plain(fn, follow):
    from ..backend.codegen import unparse
    from ..ir.naming import Namer
    from .parse import parse
    parsed = parse(fn)
    if follow is not None:
        follow(parsed.tree, Namer.for_tree(parsed.tree, parsed.globals.keys()), parsed)
    tree = parsed.tree
    tree.decorator_list = []
    names = sorted(parsed.closure)
    body = textwrap.indent(unparse(tree), "    ")
    src = f"def __pullback_make__({', '.join(names)}):\n{body}\n    return {tree.name}\n"
    filename = f"<pullback plain {fn.__qualname__} #{next(_counter)}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    code = compile(src, filename, "exec")
    make = types.FunctionType(next(c for c in code.co_consts if isinstance(c, types.CodeType)),
                              fn.__globals__)
    values = []
    for n in names:
        try:
            values.append(parsed.closure[n].cell_contents)
        except ValueError:
            values.append(None)
    return make(*values)
