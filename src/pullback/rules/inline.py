"""Inline rules: a rule's body, instantiated at one call site.

A rule is an ordinary function (see ``rules/registry.py``).  Here its body is
parsed once and copied into the adjoint with its parameters replaced by the
call site's names, its locals renamed apart, constants folded, and the
module-level names it uses bound for the generated code.  Only the
contributions asked for are produced, with the local assignments they need.

>>> import gast, numpy as np
>>> from pullback.rules.registry import lookup
>>> from pullback.ir.naming import Namer
>>> from pullback.backend.codegen import unparse
>>> name = lambda n: gast.Name(id=n, ctx=gast.Load(), annotation=None, type_comment=None)
>>> rule = lookup(np.max)
>>> subst = {"g": name("m_bar"), "ans": name("m"), "a": name("x"),
...          "axis": gast.Constant(value=None, kind=None),
...          "keepdims": gast.Constant(value=False, kind=None)}
>>> stmts, exprs = instantiate(rule, subst, ["a"], Namer(), lambda n, v: n)
>>> for s in stmts: print(unparse(s))
max_winners = x == unreduce(m, x)
>>> print(unparse(exprs["a"]))
unreduce(m_bar, x) * max_winners / np.sum(max_winners, axis=None, keepdims=True, dtype=np.result_type(m))
"""
from __future__ import annotations

import builtins
import functools
import inspect
import textwrap

import gast

from ..errors import PullbackError

__all__ = ["instantiate"]


@functools.lru_cache(maxsize=None)
def _template(fn):
    src = textwrap.dedent(inspect.getsource(fn))
    tree = gast.parse(src).body[0]
    code = fn.__code__
    params = list(code.co_varnames[:code.co_argcount + code.co_kwonlyargcount])
    if not isinstance(tree, gast.FunctionDef) or tree.name != fn.__name__ or [
            a.id for a in tree.args.args + tree.args.kwonlyargs] != params:
        # inspect reads the file as it is now: a rule module edited on disk
        # since it was imported would give another function's body
        raise RuntimeError(
            f"The source of rule {fn.__qualname__} in {code.co_filename} no longer matches "
            "the loaded rule (the file changed after it was imported); restart Python.")
    body = tree.body
    if body and isinstance(body[0], gast.Expr) and isinstance(body[0].value, gast.Constant):
        body = body[1:]
    *assigns, ret = body
    if not isinstance(ret, gast.Return) or not all(
            isinstance(a, gast.Assign) and len(a.targets) == 1
            and isinstance(a.targets[0], gast.Name) for a in assigns):
        raise PullbackError(f"Rule {fn.__name__} must be assignments and one return.")
    params = [a.id for a in tree.args.args + tree.args.kwonlyargs]
    for extra in (tree.args.vararg, tree.args.kwarg):
        if extra is not None:
            params.append(extra.id)
    local_names = [a.targets[0].id for a in assigns]
    bound_names = set(params) | set(local_names)
    globals_used = sorted({n.id for n in gast.walk(tree)
                           if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)
                           and n.id not in bound_names})
    results = ret.value.elts if isinstance(ret.value, gast.Tuple) else [ret.value]
    return assigns, results, local_names, globals_used


def instantiate(rule, subst, wanted, namer, bind_global):
    """Instantiate ``rule`` at a call site.

    ``subst`` maps every parameter (``g``, ``ans`` and the primitive's) to the
    expression to use; ``wanted`` lists the differentiable parameters whose
    contributions are needed; ``bind_global(name, value)`` returns the name by
    which generated code reaches a module-level value the body uses.  Returns
    ``(statements, {param: expression})``.
    """
    assigns, results, local_names, globals_used = _template(rule.fn)
    index = {p: i for i, p in enumerate(rule.diff)}
    exprs = {p: results[index[p]] for p in wanted}
    needed = _needed_locals(assigns, exprs.values())
    renames = {n: namer.fresh(f"{rule.name.rstrip('_')}_{n}") for n in local_names if n in needed}
    mapping = dict(subst)
    values = {}
    for n in globals_used:
        value = rule.fn.__globals__[n] if n in rule.fn.__globals__ else getattr(builtins, n)
        values[n] = value
        mapping[n] = gast.Name(id=bind_global(n, value), ctx=gast.Load(), annotation=None,
                               type_comment=None)
    mapping.update({n: gast.Name(id=r, ctx=gast.Load(), annotation=None, type_comment=None)
                    for n, r in renames.items()})
    defaults = {mapping[n].id: _defaults(v) for n, v in values.items() if callable(v)}
    stmts = []
    for a in assigns:
        name = a.targets[0].id
        if name not in needed:
            continue
        value = _substitute(a.value, mapping, defaults)
        stmts.append(gast.Assign(targets=[gast.Name(id=renames[name], ctx=gast.Store(),
                                                    annotation=None, type_comment=None)],
                                 value=value, type_comment=None))
    out = {p: _substitute(e, mapping, defaults) for p, e in exprs.items()}
    return stmts, out


def parameter_value(rule, p, bound, index_value):
    """The expression a rule's parameter ``p`` stands for at a call site: the
    bound argument (``*args`` as a tuple of them, ``**kwargs`` a dict), else its default: ``()`` for
    an unbound ``*args`` (``a.item()``), ``{}`` for ``**kwargs``, ``None`` for a
    default no literal writes."""
    if p in bound:
        v = bound[p]
        if isinstance(v, dict):            # **kwargs: a dict of them
            return gast.Dict(keys=[gast.Constant(k, None) for k in v],
                             values=[index_value(e) for e in v.values()])
        return gast.Tuple(elts=list(v), ctx=gast.Load()) if isinstance(v, tuple) \
            else index_value(v)
    param = rule.signature.parameters[p]
    if param.kind is param.VAR_POSITIONAL:
        return gast.Tuple(elts=[], ctx=gast.Load())
    if param.kind is param.VAR_KEYWORD:
        return gast.Dict(keys=[], values=[])
    default = param.default
    return gast.Constant(value=default if _is_literal(default) else None, kind=None)


def _is_literal(v):
    if isinstance(v, (tuple, list)):
        return all(_is_literal(e) for e in v)
    return v is None or isinstance(v, (bool, int, float, complex, str))


def _needed_locals(assigns, exprs):
    deps = {a.targets[0].id: {n.id for n in gast.walk(a.value) if isinstance(n, gast.Name)}
            for a in assigns}
    needed, work = set(), [n.id for e in exprs for n in gast.walk(e) if isinstance(n, gast.Name)]
    while work:
        n = work.pop()
        if n in deps and n not in needed:
            needed.add(n)
            work.extend(deps[n])
    return needed


def clone(node, mapping=None):
    """A copy of the gast tree ``node``; with ``mapping``, loaded names it maps
    are replaced by copies of their expressions (much faster than deepcopy)."""
    if isinstance(node, list):
        return [clone(n, mapping) for n in node]
    if not isinstance(node, gast.AST):
        return node
    if mapping and isinstance(node, gast.Name) and isinstance(node.ctx, gast.Load) \
            and node.id in mapping:
        return clone(mapping[node.id])
    new = type(node)(**{f: clone(getattr(node, f, None), mapping) for f in node._fields})
    for a in ("lineno", "col_offset", "end_lineno", "end_col_offset"):
        if hasattr(node, a):
            setattr(new, a, getattr(node, a))
    return new


def _substitute(expr, mapping, defaults):
    expr = simplify(clone(expr, mapping))
    _drop_default_arguments(expr, defaults)
    return expr


def _defaults(fn):
    """Positional parameter defaults of a helper a rule calls, if any."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return []
    return [p.default for p in params
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def _drop_default_arguments(expr, defaults):
    """Leave out trailing constant arguments equal to the callee's defaults:
    ``unreduce(g, a)`` rather than ``unreduce(g, a, None, False)``."""
    for node in gast.walk(expr):
        if not (isinstance(node, gast.Call) and isinstance(node.func, gast.Name)
                and node.func.id in defaults and not node.keywords):
            continue
        ds = defaults[node.func.id]
        while node.args and len(node.args) <= len(ds):
            last, d = node.args[-1], ds[len(node.args) - 1]
            if not (isinstance(last, gast.Constant) and d is not inspect.Parameter.empty
                    and type(last.value) is type(d) and last.value == d):
                break
            node.args.pop()


class _Fold(gast.NodeTransformer):
    """Fold constant subexpressions and drop identities (``x ** 1``, ``g * 1``)
    left by substituting constants into a rule."""

    def generic_visit(self, node):
        node = super().generic_visit(node)
        if isinstance(node, (gast.BinOp, gast.UnaryOp, gast.Compare)) and all(
                isinstance(n, gast.Constant) for n in _operands(node)):
            try:
                value = _evaluate(node)
            except Exception:
                return node
            if isinstance(value, (bool, int, float)):
                return gast.copy_location(gast.Constant(value=value, kind=None), node)
        if isinstance(node, gast.BinOp):
            return _identity(node)
        return node


def _operands(node):
    if isinstance(node, gast.BinOp):
        return [node.left, node.right]
    if isinstance(node, gast.UnaryOp):
        return [node.operand]
    return [node.left] + node.comparators


def _evaluate(node):
    import ast
    expr = gast.gast_to_ast(gast.Expression(body=node))
    ast.fix_missing_locations(expr)
    import warnings
    with warnings.catch_warnings():     # `1 is None` (axis substituted) warns, and is False
        warnings.simplefilter("ignore", SyntaxWarning)
        code = compile(expr, "<fold>", "eval")
    return eval(code, {"__builtins__": {}})


def _is_const(node, value):
    return isinstance(node, gast.Constant) and type(node.value) in (int, float) \
        and not isinstance(node.value, bool) and node.value == value


def _identity(node):
    op, left, right = node.op, node.left, node.right
    if isinstance(op, gast.Pow) and _is_const(right, 1):
        return left
    if isinstance(op, gast.Mult) and _is_const(right, 1):
        return left
    if isinstance(op, gast.Mult) and _is_const(left, 1):
        return right
    if isinstance(op, (gast.Add, gast.Sub)) and _is_const(right, 0):
        return left
    if isinstance(op, gast.Div) and _is_const(right, 1):
        return left
    return node


def simplify(expr):
    """``expr`` with constants folded and trivial identities removed."""
    return _Fold().visit(expr)
