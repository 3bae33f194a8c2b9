"""Forward rules (issue 15): every registered rule has one, or is listed here
as reverse-only with the reason; the rules added for ``np.linalg``'s
decompositions, ``cumprod``, ``ptp``, ``average``, ``cov``, ``corrcoef``,
``interp``, ``partition``, ``nanmax``/``nanmin`` and SciPy's special
functions are checked against ``jax.jvp`` (float64) where JAX has the
function, and by central differences where the derivative follows NumPy's
own conventions (the phase of ``eig``'s complex eigenvectors).  Every rule
is also checked on ``test_rules``' whole table by ``test_forward.py``'s
``test_forward_rule`` (the dot product against central differences).
"""
import inspect

import numpy as np
import pytest
import scipy
import scipy.integrate  # noqa: F401  (registers SciPy's rules: the list below names them)
import scipy.linalg  # noqa: F401
import scipy.signal  # noqa: F401
import scipy.special  # noqa: F401
import scipy.stats  # noqa: F401

import pullback as pb
from pullback.forward.rules import how
from pullback.rules import registry
from pullback.testing import function_from_source

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import jax.scipy.special as jsp  # noqa: E402
from jax import tree_util  # noqa: E402

# -- every rule has a forward rule, or is listed with why it has none ----------------------

REVERSE_ONLY = {
    "odeint": "scipy.integrate.odeint: its adjoint is an ODE solved backwards; a forward "
              "rule needs the sensitivity equations, and registry.jvp's tangent parameter "
              "`t` clashes with odeint's own `t` (not written yet)",
}


def _label(prim, rule):
    module = getattr(prim, "__module__", None) or ""
    return rule.name if module.startswith("scipy") else repr(prim)


def test_every_rule_has_a_forward_rule_or_is_listed():
    registry.load_lazy()
    missing = {}
    for prim, rule in registry.RULES.items():
        if how(rule, prim)[0] is None:
            missing.setdefault(_label(prim, rule), prim)
    unlisted = sorted(k for k, p in missing.items()
                      if not (getattr(p, "__module__", "") or "").startswith("scipy")
                      or k not in REVERSE_ONLY)
    assert not unlisted, f"rules without a forward rule, not listed as reverse-only: {unlisted}"
    stale = sorted(set(REVERSE_ONLY) - set(missing))
    assert not stale, f"listed as reverse-only but now have a forward rule: {stale}"


def test_the_list_can_fail():
    # a rule registered without a forward rule is caught by the check above
    rule = registry.lookup(np.linalg.svd)
    assert how(rule, np.linalg.svd)[0] == "inline"
    bare = registry.Rule(rule.fn, "svd", rule.diff, rule.params, rule.broadcasts,
                         rule.signature)
    assert how(bare, np.linalg.svd)[0] is None


# -- against jax.jvp -----------------------------------------------------------------------


def _check(text, args, jax_fn, rtol=1e-8, seed=0, wrt=None):
    """pb.jvp of ``text`` (NumPy) against jax.jvp of ``jax_fn`` at ``args``."""
    f = function_from_source(text, {"scipy": scipy})
    rng = np.random.default_rng(seed)
    wrt = tuple(range(len(args))) if wrt is None else wrt
    if len(wrt) < len(args):
        # the others are constants: a function of the varied ones calls f
        names = list(inspect.signature(f).parameters)
        consts = {f"c_{names[i]}": a for i, a in enumerate(args) if i not in wrt}
        call = ", ".join(names[i] if i in wrt else f"c_{names[i]}" for i in range(len(args)))
        f = function_from_source(f"def g({', '.join(names[i] for i in wrt)}):\n"
                                 f"    return f({call})\n", {"f": f, **consts})
    tangents = tuple(rng.standard_normal(np.shape(args[i])) for i in wrt)
    before = [np.copy(a) for a in args] + [np.copy(t) for t in tangents]

    def gj(*d):
        full = [jnp.asarray(a) for a in args]
        for i, v in zip(wrt, d):
            full[i] = v
        return jax_fn(*full)

    out, dot = pb.jvp(f, tuple(args[i] for i in wrt), tangents)
    jout, jdot = jax.jvp(gj, tuple(jnp.asarray(args[i]) for i in wrt), tangents)
    for x, y in zip(tree_util.tree_leaves(out), tree_util.tree_leaves(jout)):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-9, atol=1e-10)
    for x, y in zip(tree_util.tree_leaves(dot), tree_util.tree_leaves(jdot)):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=rtol, atol=1e-9)
    for b, a in zip(before, list(args) + list(tangents)):
        np.testing.assert_array_equal(a, b)


def _spd(rng, n):
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    return (q * np.linspace(1.0, 3.0, n)) @ q.T


def _sym(rng, n):
    """Symmetric with eigenvalues well apart."""
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    return (q * (np.arange(n) * 1.3 - 1.0)) @ q.T


R = np.random.default_rng(7)


def test_eigh_and_eigvalsh_against_jax():
    a = _sym(R, 4)
    # the eigenvectors' signs are a convention: compare v * v (the same for either);
    # JAX symmetrizes the tangent, NumPy reads the lower triangle: a symmetric one
    _check("def f(a):\n    w, v = np.linalg.eigh(a + a.T)\n    return w, v * v\n", [a],
           lambda a: (jnp.linalg.eigh(a + a.T)[0], jnp.linalg.eigh(a + a.T)[1] ** 2), rtol=1e-7)
    # NumPy's lower triangle: the tangent of the matrix read from it
    _check("def f(a):\n    return np.linalg.eigvalsh(a)\n", [a],
           lambda a: jnp.linalg.eigvalsh(jnp.tril(a) + jnp.tril(a, -1).T), rtol=1e-7)


def test_svd_against_jax():
    a = R.standard_normal((5, 3))
    _check("def f(a):\n    return np.linalg.svd(a, compute_uv=False)\n", [a],
           lambda a: jnp.linalg.svd(a, compute_uv=False))
    _check("def f(a):\n    u, s, vh = np.linalg.svd(a, full_matrices=False)\n"
           "    return u * u, s, vh * vh\n", [a],
           lambda a: tuple(p ** 2 if i != 1 else p for i, p in
                           enumerate(jnp.linalg.svd(a, full_matrices=False))), rtol=1e-7)
    b = R.standard_normal((3, 5))
    _check("def f(a):\n    u, s, vh = np.linalg.svd(a, full_matrices=False)\n"
           "    return u * u, s, vh * vh\n", [b],
           lambda a: tuple(p ** 2 if i != 1 else p for i, p in
                           enumerate(jnp.linalg.svd(a, full_matrices=False))), rtol=1e-7)


def test_qr_pinv_lstsq_against_jax():
    a = R.standard_normal((5, 3))
    _check("def f(a):\n    q, r = np.linalg.qr(a)\n    return q, r\n", [a],
           lambda a: tuple(jnp.linalg.qr(a)))
    _check("def f(a):\n    return np.linalg.qr(a, mode='r')\n", [a],
           lambda a: jnp.linalg.qr(a, mode="r"))
    _check("def f(a):\n    return np.linalg.pinv(a)\n", [a], jnp.linalg.pinv, rtol=1e-7)
    _check("def f(a):\n    return np.linalg.pinv(a.T)\n", [a], lambda a: jnp.linalg.pinv(a.T),
           rtol=1e-7)
    b = R.standard_normal(5)
    _check("def f(a, b):\n    return np.linalg.lstsq(a, b)[0]\n", [a, b],
           lambda a, b: jnp.linalg.lstsq(a, b)[0], rtol=1e-7)
    _check("def f(a, b):\n    x, res, rank, s = np.linalg.lstsq(a, b)\n    return res, s\n",
           [a, b], lambda a, b: (jnp.sum((b - a @ jnp.linalg.lstsq(a, b)[0]) ** 2)[None],
                                 jnp.linalg.svd(a, compute_uv=False)), rtol=1e-7)


def test_matrix_power_and_multi_dot_against_jax():
    a = np.eye(3) + 0.3 * R.standard_normal((3, 3))
    for n in (0, 1, 3, -2):
        _check(f"def f(a):\n    return np.linalg.matrix_power(a, {n})\n", [a],
               lambda a, n=n: jnp.linalg.matrix_power(a, n), rtol=1e-8)
    x, y, z = R.standard_normal((2, 3)), R.standard_normal((3, 4)), R.standard_normal(4)
    _check("def f(x, y, z):\n    return np.linalg.multi_dot([x, y, z])\n", [x, y, z],
           lambda x, y, z: jnp.linalg.multi_dot([x, y, z]))
    # the list held in a name, one factor without a tangent
    _check("def f(x, y, z):\n    ms = [x, y, z]\n    return np.linalg.multi_dot(ms)\n",
           [x, y, z], lambda x, y, z: jnp.linalg.multi_dot([x, y, z]), wrt=(0, 2))


def test_statistics_against_jax():
    x = R.standard_normal((3, 6))
    w = np.array([1.0, 2.0, 0.5, 1.5, 3.0, 1.0])
    _check("def f(x):\n    return np.cumprod(x, axis=1)\n", [x],
           lambda x: jnp.cumprod(x, axis=1))
    z = x.copy()
    z[1, 2] = 0.0
    _check("def f(x):\n    return np.cumprod(x)\n", [z], lambda x: jnp.cumprod(x))
    _check("def f(x):\n    return np.ptp(x, axis=1)\n", [x], lambda x: jnp.ptp(x, axis=1))
    _check("def f(x, w):\n    return np.average(x, axis=1, weights=w)\n", [x, w],
           lambda x, w: jnp.average(x, axis=1, weights=w), wrt=(0,))
    _check("def f(x):\n    return np.cov(x)\n", [x], jnp.cov)
    _check("def f(x, w):\n    return np.cov(x, rowvar=False, aweights=w[:3], ddof=0)\n", [x, w],
           lambda x, w: jnp.cov(x, rowvar=False, aweights=w[:3], ddof=0), wrt=(0,))
    _check("def f(x):\n    return np.corrcoef(x)\n", [x], jnp.corrcoef, rtol=1e-7)
    # (the order within either side of the kth element is NumPy's own)
    _check("def f(x):\n    return np.partition(x, 2, axis=1)[:, 2]\n", [x],
           lambda x: jnp.partition(x, 2, axis=1)[:, 2])
    n = x.copy()
    n[0, 1] = np.nan
    _check("def f(x):\n    return np.nanmax(x, axis=1), np.nanmin(x)\n", [n],
           lambda x: (jnp.nanmax(x, axis=1), jnp.nanmin(x)))


def test_interp_against_jax():
    xp = np.array([0.0, 1.0, 2.5, 3.0])
    x = np.array([-0.5, 0.3, 1.7, 2.9, 3.4])
    fp = R.standard_normal(4)
    for kw in ("", ", left=-1.0", ", right=2.0, left=0.5"):
        _check(f"def f(x, xp, fp):\n    return np.interp(x, xp, fp{kw})\n", [x, xp, fp],
               lambda x, xp, fp, kw=kw: jnp.interp(x, xp, fp, **eval(f"dict({kw[2:]})")),
               wrt=(0, 2))


def test_eig_against_jax():
    a = R.standard_normal((4, 4))      # complex eigenvalues in pairs
    ref, theirs = np.linalg.eigvals(a), np.asarray(jnp.linalg.eigvals(jnp.asarray(a)))
    order = np.array([int(np.argmin(np.abs(theirs - r))) for r in ref])   # NumPy's order
    _check("def f(a):\n    return np.linalg.eigvals(a)\n", [a],
           lambda a: jnp.linalg.eigvals(a)[order], rtol=1e-7)
    _check("def f(a):\n    return np.linalg.eig(a)[0]\n", [a],
           lambda a: jnp.linalg.eigvals(a)[order], rtol=1e-7)


def test_scipy_special_against_jax():
    x = R.uniform(0.5, 2.5, 5)
    y = R.uniform(0.5, 2.5, 5)
    _check("def f(x):\n    return scipy.special.digamma(x)\n", [x], jsp.digamma)
    _check("def f(x, y):\n    return scipy.special.betaln(x, y)\n", [x, y], jsp.betaln)
    _check("def f(x):\n    return scipy.special.polygamma(1, x)\n", [x],
           lambda x: jsp.polygamma(1, x))
    _check("def f(x):\n    return scipy.special.gammainc(1.5, x)\n", [x],
           lambda x: jsp.gammainc(1.5, x), rtol=1e-7)
    _check("def f(x):\n    return scipy.special.softmax(x), scipy.special.log_softmax(x)\n",
           [x], lambda x: (jax.nn.softmax(x), jax.nn.log_softmax(x)))
    m = R.standard_normal((3, 4))
    _check("def f(m, b):\n    return scipy.special.logsumexp(m, axis=1, b=b)\n",
           [m, R.uniform(0.5, 2.0, (3, 4))],
           lambda m, b: jsp.logsumexp(m, axis=1, b=b))
    _check("def f(m):\n    return scipy.special.logsumexp(m, return_sign=True)\n", [m],
           lambda m: jsp.logsumexp(m, return_sign=True))
    _check("def f(x, y):\n    return scipy.signal.correlate(x, y)\n", [x, y],
           lambda x, y: jnp.correlate(x, y, mode="full"))


def test_angle_and_builtin_max_by_finite_differences():
    f = function_from_source("def f(x, y):\n    z = x + 1j * y\n"
                             "    return np.angle(z) + max(x[0], y[1], 0.1)\n")
    x, y = np.array([0.3, -1.2]), np.array([0.7, 0.4])
    tx, ty = np.array([1.0, -0.5]), np.array([0.25, 2.0])
    _, dot = pb.jvp(f, (x, y), (tx, ty))
    h = 1e-6
    fd = (f(x + h * tx, y + h * ty) - f(x - h * tx, y - h * ty)) / (2 * h)
    np.testing.assert_allclose(dot, fd, rtol=1e-7)


# -- conventions: NumPy's phase of eig's complex eigenvectors; refusals ----------------------


def test_eig_complex_eigenvectors_follow_numpys_phase():
    rng = np.random.default_rng(3)
    for a in (rng.standard_normal((4, 4)),
              rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))):
        f = function_from_source("def f(a):\n    w, v = np.linalg.eig(a)\n    return v\n")
        t = rng.standard_normal(a.shape) + (1j * rng.standard_normal(a.shape)
                                            if np.iscomplexobj(a) else 0)
        v, dot = pb.jvp(f, (a,), (t,))
        assert np.iscomplexobj(v)
        h = 1e-6
        fd = (np.linalg.eig(a + h * t)[1] - np.linalg.eig(a - h * t)[1]) / (2 * h)
        np.testing.assert_allclose(dot, fd, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("text,arg,what", [
    ("u, s, vh = np.linalg.svd(a)\n    return np.abs(u)", "c33", "singular vectors of a complex"),
    ("w, v = np.linalg.eigh(a)\n    return np.abs(v)", "h33", "eigenvectors of a complex Hermitian"),
    ("q, r = np.linalg.qr(a)\n    return r", "r35", "np.linalg.qr"),
    ("return np.linalg.svd(a)[0]", "r53", "full_matrices=True"),
    ("return np.linalg.svd(a, hermitian=True)[1]", "s33", "hermitian=True"),
])
def test_refused_where_the_derivative_is_not_unique(text, arg, what):
    rng = np.random.default_rng(5)
    a = {"c33": rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3)),
         "h33": (lambda m: m + m.conj().T)(rng.standard_normal((3, 3))
                                           + 1j * rng.standard_normal((3, 3))),
         "r35": rng.standard_normal((3, 5)), "r53": rng.standard_normal((5, 3)),
         "s33": _sym(rng, 3)}[arg]
    f = function_from_source(f"def f(a):\n    {text}\n")
    with pytest.raises(pb.NonDifferentiableError, match="forward mode has no rule") as err:
        pb.jvp(f, (a,), (np.ones_like(a),))
    assert what in str(err.value)
    # complex singular values alone are differentiated
    if arg == "c33":
        g = function_from_source("def g(a):\n    return np.linalg.svd(a, compute_uv=False)\n")
        _, dot = pb.jvp(g, (a,), (np.ones_like(a),))
        h = 1e-6
        fd = (np.linalg.svd(a + h, compute_uv=False)
              - np.linalg.svd(a - h, compute_uv=False)) / (2 * h)
        np.testing.assert_allclose(dot, fd, rtol=1e-6)
