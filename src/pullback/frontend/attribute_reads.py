"""Reads of an attribute by its constant name, written as one: ``getattr(obj,
"w")`` is ``obj.w``, and ``vars(obj)["w"]`` and ``obj.__dict__["w"]`` are
``obj.w`` after a check where the statement runs (``instance_attribute``),
so that an object carrying a gradient is differentiated through them.
``frontend.writes`` runs it first.

>>> from pullback.testing import function_from_source
>>> from pullback.backend.codegen import unparse
>>> from pullback.frontend.function_scans import _front
>>> f = function_from_source('''
... def f(p):
...     s = getattr(p, "w") + vars(p)["b"]
...     return s
... ''')
>>> parsed, namer = _front(f, structured=True)
>>> attribute_reads(parsed.tree, namer, parsed)
>>> print(unparse(parsed.tree).strip())
def f(p):
    instance_attribute(p, 'b')
    s = p.w + p.b
    return s
"""
from __future__ import annotations

import gast

from ..ir.build import closure_name as _helper, located, name as _name
from ..rules.registry import nondifferentiable
from ..runtime.arguments import instance_attribute

__all__ = ["attribute_reads"]

nondifferentiable(instance_attribute)


def attribute_reads(tree, namer, parsed):
    """Reads of an attribute by its constant name, written as one:
    ``getattr(obj, "w")`` (the builtin, no default) is ``obj.w``, and
    ``vars(obj)["w"]`` and ``obj.__dict__["w"]`` are ``obj.w`` after a check,
    where the statement runs, that the two are one (``instance_attribute``:
    ``w`` is in the object's ``__dict__``, its class has no data descriptor
    ``w`` and no ``__getattribute__`` of its own); so an object that carries
    a gradient is differentiated through them (they were refused as calls
    with no rule)::

        s = getattr(p, "w") + vars(p)["b"]  ->  instance_attribute(p, 'b')
                                                s = p.w + p.b
    """
    import builtins
    import keyword
    local = {n.id for n in gast.walk(tree) if isinstance(n, gast.Name)
             and isinstance(n.ctx, (gast.Store, gast.Del))} | {
        a.id for a in gast.walk(tree.args) if isinstance(a, gast.Name)}

    def builtin(name):
        return name not in local and name not in parsed.closure and parsed.globals.get(
            name, getattr(builtins, name)) is getattr(builtins, name)
    plain = {n for n in ("getattr", "vars") if builtin(n)}
    if not plain and not any(isinstance(n, gast.Attribute) and n.attr == "__dict__"
                             for n in gast.walk(tree)):
        return

    def name_of(node):
        if isinstance(node, gast.Constant) and isinstance(node.value, str) \
                and node.value.isidentifier() and not keyword.iskeyword(node.value) \
                and not node.value.startswith("__"):
            return node.value
        return None

    def instance_dict(node):        # `vars(obj)`, `obj.__dict__`: obj
        if isinstance(node, gast.Call) and isinstance(node.func, gast.Name) \
                and node.func.id == "vars" and "vars" in plain and len(node.args) == 1 \
                and not node.keywords and not isinstance(node.args[0], gast.Starred):
            return node.args[0]
        if isinstance(node, gast.Attribute) and node.attr == "__dict__" \
                and isinstance(node.ctx, gast.Load):
            return node.value
        return None

    checks = []

    class Reads(gast.NodeTransformer):
        def visit_Call(self, node):
            self.generic_visit(node)
            if isinstance(node.func, gast.Name) and node.func.id == "getattr" \
                    and "getattr" in plain and len(node.args) == 2 and not node.keywords \
                    and not isinstance(node.args[0], gast.Starred) and name_of(node.args[1]):
                return gast.copy_location(gast.Attribute(
                    value=node.args[0], attr=node.args[1].value, ctx=gast.Load()), node)
            return node

        def visit_Subscript(self, node):
            self.generic_visit(node)
            obj = instance_dict(node.value)
            attr = name_of(node.slice)
            if obj is None or attr is None or not isinstance(node.ctx, gast.Load) \
                    or not isinstance(obj, gast.Name):
                return node
            checks.append((obj.id, attr))
            return gast.copy_location(gast.Attribute(value=gast.Name(
                id=obj.id, ctx=gast.Load(), annotation=None, type_comment=None), attr=attr,
                ctx=gast.Load()), node)

        def visit_FunctionDef(self, node):
            return node                 # (lifted already; their own transform)

        visit_Lambda = visit_ClassDef = visit_FunctionDef

    def block(stmts):
        out = []
        for st in stmts:
            if isinstance(st, (gast.FunctionDef, gast.ClassDef)):
                out.append(st)
                continue
            for field in ("body", "orelse", "finalbody"):
                if getattr(st, field, None):
                    setattr(st, field, block(getattr(st, field)))
            if isinstance(st, gast.Try):
                for h in st.handlers:
                    h.body = block(h.body)
            heads = [st] if not isinstance(st, (gast.If, gast.For, gast.While, gast.Try,
                                                gast.With)) else \
                [st.test] if isinstance(st, gast.If) else \
                [st.iter] if isinstance(st, gast.For) else []
            for head in heads:
                checks.clear()
                new = Reads().visit(head)
                if head is not st and new is not head:
                    setattr(st, "test" if isinstance(st, gast.If) else "iter", new)
                if checks:
                    helper = _helper(namer, parsed, "instance_attribute", instance_attribute)
                    for obj, attr in checks:
                        out.append(located(gast.Expr(value=gast.Call(
                            func=_name(helper), args=[_name(obj), gast.Constant(attr, None)],
                            keywords=[])), st))
            out.append(st)
        return out
    tree.body = block(tree.body)
