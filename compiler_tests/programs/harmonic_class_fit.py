"""A harmonic regression with per-class noise scales, fitted by a binned
error profile, written as a signal-processing notebook writes it: the
frequencies a geometric grid ``np.logspace`` between two learned octaves,
the design matrix assembled with ``np.block`` from cosine and sine blocks
and a constant column, predictions by ``np.matvec``, each sample's scale
picked from the class scales by ``np.choose``, the squared residuals binned
over the sample positions by ``np.histogram(..., weights=...)`` with a fixed
range, and a ridge penalty ``np.vecdot(coef, coef)``; the fractional part
of each frequency (``np.modf``) keeps them off whole cycles per unit.
Differentiated with respect to the coefficients, the two octaves and the
class scales."""
import numpy as np
import jax.numpy as jnp

N_FREQ = 4
BINS = 5


def design(x, freqs):
    phase = x[:, None] * freqs
    return np.block([[np.cos(phase), np.sin(phase), np.ones((len(x), 1))]])


def objective(coef, lo, hi, scales, x, y, labels):
    freqs = np.logspace(lo, hi, N_FREQ, base=2.0)
    pred = np.matvec(design(x, freqs), coef)
    resid = (pred - y) * np.choose(labels, [scales[0], scales[1], scales[2]], mode="clip")
    binned, edges = np.histogram(x, bins=BINS, range=(-3.0, 3.0), weights=resid ** 2)
    profile = np.sum(binned * np.linspace(1.0, 2.0, BINS)) / len(x)
    frac, whole = np.modf(freqs)
    return (profile + 1e-2 * np.vecdot(coef, coef) + 0.1 * np.sum((frac - 0.5) ** 2)
            - np.sum(np.log(scales)) * len(x) / 3.0)


def make_inputs(rng):
    n = 30
    x = rng.uniform(-2.9, 2.9, n)
    labels = rng.integers(0, 3, n)
    y = np.cos(1.3 * x) - 0.5 * np.sin(2.4 * x) + 0.1 * rng.standard_normal(n)
    coef = 0.3 * rng.standard_normal(2 * N_FREQ + 1)
    return coef, -0.4, 1.55, np.array([0.8, 1.1, 1.4]), x, y, labels


fun = objective
argnums = (0, 1, 2, 3)


def jax_fun(coef, lo, hi, scales, x, y, labels):
    freqs = jnp.logspace(lo, hi, N_FREQ, base=2.0)
    phase = x[:, None] * freqs
    X = jnp.block([[jnp.cos(phase), jnp.sin(phase), jnp.ones((x.shape[0], 1))]])
    scale = jnp.choose(labels, [scales[0], scales[1], scales[2]], mode="clip")
    resid = (jnp.matvec(X, coef) - y) * scale
    binned, _ = jnp.histogram(x, bins=BINS, range=(-3.0, 3.0), weights=resid ** 2)
    profile = jnp.sum(binned * jnp.linspace(1.0, 2.0, BINS)) / x.shape[0]
    frac = jnp.modf(freqs)[0]
    return (profile + 1e-2 * jnp.vecdot(coef, coef) + 0.1 * jnp.sum((frac - 0.5) ** 2)
            - jnp.sum(jnp.log(scales)) * x.shape[0] / 3.0)
