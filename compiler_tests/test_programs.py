"""The program corpus of issue 12 (``compiler_tests/programs/``): realistic
NumPy model code, each program differentiated with ``pb.value_and_grad`` and
checked

- against central finite differences of the plain NumPy program (float64);
- against ``jax.grad`` of the same program written with ``jax.numpy``
  (float64, to 1e-8 relative), where the module gives one;
- for a value equal to the plain NumPy call's, gradients shaped, typed and
  structured like their inputs, and ``pb.grad`` agreeing with
  ``value_and_grad``;
- for inputs left unchanged.

A program that pullback is expected to refuse for a documented reason (higher
order, today) must raise a ``pb.PullbackError`` naming its file and one of its
lines; a number coming back is a failure.

``XFAIL`` lists the programs that fail today because of the patterns issue 12
names; each mark is strict, so it turns into a failure the moment the fix
lands: remove it then.

``python compiler_tests/test_programs.py`` prints a table: for each program,
passes / wrong gradient / value differs / refused / crashed.
"""
import copy
import importlib
import inspect
import os
import sys
import zlib

import numpy as np
import pytest

import pullback as pb

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import programs  # noqa: E402

try:
    import jax
    from jax import tree_util
except ImportError:                                   # pragma: no cover
    jax = None
    tree_util = None

FD_RTOL = 1e-5
JAX_RTOL = 1e-8
FD_MAX_COORDS = 40          # per leaf; larger leaves are sampled


def load(name):
    return importlib.import_module(f"programs.{name}")


def inputs_of(name, module, variant=""):
    rng = np.random.default_rng(zlib.crc32((name + variant).encode()))
    return tuple(module.make_inputs(rng))


# ---------------------------------------------------------------- pytrees


def flatten(tree):
    leaves, treedef = tree_util.tree_flatten(tree)
    return leaves, treedef


def unflatten(treedef, leaves):
    return tree_util.tree_unflatten(treedef, leaves)


def same_leaf(a, b):
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=True)
    return a == b or (a != a and b != b)


def assert_unchanged(before, after, what):
    la, ta = flatten(before)
    lb, tb = flatten(after)
    assert ta == tb, f"{what}: the structure of the inputs changed"
    for i, (a, b) in enumerate(zip(la, lb)):
        assert same_leaf(a, b), f"{what}: input leaf {i} was changed"


# --------------------------------------------------------------- checks


def with_leaves(args, argnums, treedef, leaves):
    """`args` with the differentiated arguments rebuilt from `leaves`."""
    new = list(args)
    rebuilt = unflatten(treedef, leaves)
    for k, i in enumerate(argnums):
        new[i] = rebuilt[k]
    return tuple(new)


def perturbed(leaf, idx, delta):
    if isinstance(leaf, np.ndarray):
        out = leaf.copy()
        out[idx] += delta
        return out
    return leaf + delta


def central_difference(f, args, argnums, treedef, leaves, li, idx, step):
    x = leaves[li]
    x0 = float(x[idx]) if isinstance(x, np.ndarray) else float(x)
    h = step * max(1.0, abs(x0))
    plus = list(leaves)
    minus = list(leaves)
    plus[li] = perturbed(x, idx, h)
    minus[li] = perturbed(x, idx, -h)
    fp = f(*with_leaves(args, argnums, treedef, plus))
    fm = f(*with_leaves(args, argnums, treedef, minus))
    return (float(fp) - float(fm)) / (2.0 * h)


def check_finite_differences(name, module, args, grads):
    argnums = module.argnums
    step = getattr(module, "fd_step", 1e-5)
    leaves, treedef = flatten(tuple(args[i] for i in argnums))
    gleaves, gdef = flatten(tuple(grads))
    assert gdef == treedef, f"{name}: gradient structure {gdef} != input structure {treedef}"
    rng = np.random.default_rng(0)
    rows = []
    for li, (x, g) in enumerate(zip(leaves, gleaves)):
        if isinstance(x, np.ndarray):
            if not np.issubdtype(x.dtype, np.floating):
                continue
            coords = list(np.ndindex(x.shape))
            if len(coords) > FD_MAX_COORDS:
                pick = rng.choice(len(coords), FD_MAX_COORDS, replace=False)
                coords = [coords[k] for k in sorted(pick)]
            for idx in coords:
                fd = central_difference(module.fun, args, argnums, treedef, leaves, li, idx, step)
                rows.append((li, idx, float(np.asarray(g)[idx]), fd))
        elif isinstance(x, float):
            fd = central_difference(module.fun, args, argnums, treedef, leaves, li, (), step)
            rows.append((li, (), float(g), fd))
    scale = max([abs(fd) for *_, fd in rows] + [1e-3])
    bad = [(li, idx, g, fd) for li, idx, g, fd in rows
           if not abs(g - fd) <= FD_RTOL * abs(fd) + 1e-6 * scale]
    assert not bad, (f"{name}: {len(bad)} of {len(rows)} gradient entries differ from central "
                     f"differences (leaf, index, pullback, differences): {bad[:6]}")


def check_jax(name, module, args, value, grads):
    if tree_util is None:
        pytest.skip("jax is not installed")
    import jax.numpy as jnp
    argnums = module.argnums
    with jax.enable_x64(True):
        jargs = tree_util.tree_map(lambda a: jnp.asarray(a) if isinstance(a, np.ndarray) else a,
                                   list(args))
        f = jax.value_and_grad(module.jax_fun, argnums=argnums)
        if getattr(module, "jax_jit", True):
            f = jax.jit(f)
        jval, jgrads = f(*jargs)
        jgrads = tree_util.tree_map(np.asarray, jgrads)
    np.testing.assert_allclose(float(jval), float(value), rtol=1e-10,
                               err_msg=f"{name}: the JAX version computes another value")
    mine, _ = flatten(tuple(grads))
    theirs, _ = flatten(tuple(jgrads))
    assert len(mine) == len(theirs)
    for i, (a, b) in enumerate(zip(mine, theirs)):
        scale = 1.0 + float(np.max(np.abs(b), initial=0.0))
        np.testing.assert_allclose(np.asarray(a, dtype=float), b, rtol=JAX_RTOL, atol=JAX_RTOL * scale,
                                   err_msg=f"{name}: pullback != jax.grad at gradient leaf {i}")


def check_projection(name, module, args, grads):
    for k, i in enumerate(module.argnums):
        xs, _ = flatten(args[i])
        gs, _ = flatten(grads[k])
        for x, g in zip(xs, gs):
            if isinstance(x, np.ndarray):
                assert isinstance(g, np.ndarray) and g.shape == x.shape and g.dtype == x.dtype, \
                    f"{name}: argument {i}: gradient {type(g)} {np.shape(g)} for {x.dtype}{x.shape}"
                assert not np.shares_memory(g, x), f"{name}: a gradient shares memory with its input"
            elif isinstance(x, float):
                assert isinstance(g, float), f"{name}: argument {i}: {type(g)} for a Python float"


def check_program(name):
    """Every check of one program that pullback should differentiate; then the
    same again after each of the module's `variants` (state rebound between
    calls, new inputs)."""
    check_once(name, "")
    module = load(name)
    if hasattr(module, "variants"):
        gen = module.variants()
        try:
            for label in gen:
                check_once(name, label)
        finally:
            gen.close()


def check_once(name, variant):
    module = load(name)
    args = inputs_of(name, module, variant)
    name = f"{name} ({variant})" if variant else name
    before = copy.deepcopy(args)
    expected = module.fun(*copy.deepcopy(args))
    value, grads = pb.value_and_grad(module.fun, argnums=module.argnums)(*args)
    assert_unchanged(before, args, f"{name}: pb.value_and_grad")
    assert type(value) is type(expected) and value == expected, \
        f"{name}: value {value!r} != the plain NumPy call's {expected!r}"
    check_projection(name, module, args, grads)
    check_finite_differences(name, module, args, grads)
    if getattr(module, "jax_fun", None) is not None:
        check_jax(name, module, args, value, grads)
    again = pb.grad(module.fun, argnums=module.argnums)(*args)
    assert_unchanged(before, args, f"{name}: pb.grad")
    for a, b in zip(flatten(tuple(again))[0], flatten(tuple(grads))[0]):
        np.testing.assert_array_equal(a, b, err_msg=f"{name}: pb.grad != pb.value_and_grad")


def check_refusal(name):
    """A program pullback must refuse: a PullbackError naming one of its lines."""
    module = load(name)
    args = inputs_of(name, module)
    before = copy.deepcopy(args)
    errors = getattr(module, "refusal_errors", (pb.PullbackError,))
    with pytest.raises(errors) as info:
        pb.grad(module.fun, argnums=module.argnums)(*args)
    assert_unchanged(before, args, f"{name}: refused call")
    message = str(info.value)
    path = inspect.getsourcefile(module)
    source = open(path).read().splitlines()
    linenos = [n for n, text in enumerate(source, 1)
               if any(snippet in text for snippet in module.refuses)]
    assert os.path.basename(path) in message, f"{name}: the error does not name the file:\n{message}"
    assert any(f"line {n}" in message for n in linenos), \
        f"{name}: the error names none of lines {linenos}:\n{message}"


# ---------------------------------------------------------------- xfails

# Programs that fail today because of the patterns issues 12 and 13 name (refusals,
# each with its line; none gives a number). Strict: the moment the fix lands, the
# test passes, the xfail fails; remove the entry then. Empty since the four the
# corpus' round of 2026-12-02 found were made to work (updates, classes, itemstores).
# The third round's (each a refusal naming its line; none gives a number):
XFAIL = {
    # The fourth round's (corpus, 2026-12-02): programs in styles not designed for the
    # compiler; each fails in both modes today, none with a number.
    # The fifth round's (corpus, 2026-12-02): none gives a number.
    # The sixth round's (corpus): none gives a number.
    # The seventh round's (corpus7): refusals naming their line; none gives a number.
    "quaternion_attitude": "`self / self.norm()`: operators of the user's class refused; then __slots__ crashes",
    "multitask_defaultdict": "`d.setdefault(k, []).append(r)` is refused; then stores into `defaultdict(float)`",
    "walrus_newton_implicit": "an assignment expression (`:=`) in a loop test is refused",
    "dataclass_weightnorm": "a dataclass with `__call__` built from the weights is refused; then `match`",
    "batch_container_protocol": "`params[\"w\"]` of a class's own `__getitem__` refused; then `for` over `__iter__`",
}

DIFFERENTIATED = [n for n in programs.NAMES if not hasattr(load(n), "refuses")]
REFUSED = [n for n in programs.NAMES if hasattr(load(n), "refuses")]


def params(names):
    return [pytest.param(n, marks=pytest.mark.xfail(strict=True, reason="issue 13: " + XFAIL[n]))
            if n in XFAIL else n for n in names]


def test_corpus_size():
    assert len(programs.NAMES) >= 25
    for name in programs.NAMES:
        path = inspect.getsourcefile(load(name))
        assert len(open(path).read().splitlines()) >= 20, name


@pytest.mark.parametrize("name", params(DIFFERENTIATED))
def test_program(name):
    check_program(name)


@pytest.mark.parametrize("name", params(REFUSED))
def test_program_refused(name):
    check_refusal(name)


# ----------------------------------------------------------------- survey


def classify(name):
    """One row of the table: what happens today to program `name`."""
    module = load(name)
    refused_expected = hasattr(module, "refuses")
    args = inputs_of(name, module)
    try:
        value, grads = pb.value_and_grad(module.fun, argnums=module.argnums)(*args)
    except pb.PullbackError as e:
        line = str(e).splitlines()[0]
        if refused_expected:
            try:
                check_refusal(name)
                return "refused as expected", line
            except AssertionError as a:
                return "refused, but the error names no line", str(a).splitlines()[0]
        return "refused", line
    except Exception as e:                                        # noqa: BLE001
        return "crashed", f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    if refused_expected:
        return "WRONG: a number came back (must be refused)", f"value {value!r}"
    try:
        check_program(name)
        return "passes", ""
    except AssertionError as a:
        text = str(a).strip().splitlines()
        return "WRONG (silently)", text[0] if text else ""
    except pb.PullbackError as e:
        return "refused (pb.grad)", str(e).splitlines()[0]
    except Exception as e:                                        # noqa: BLE001
        return "crashed (later check)", f"{type(e).__name__}: {str(e).splitlines()[0]}"


if __name__ == "__main__":
    for name in programs.NAMES:
        result, detail = classify(name)
        mark = "xfail" if name in XFAIL else ""
        print(f"| {name} | {result} | {detail[:160]} | {mark} |")
