"""A mixture of Gaussians with per-component Cholesky factors of the
precision, batched the way einsum-literate code does it: ``np.einsum`` with
an ellipsis for the whitening (``'...kij,...kj->...ki'``) over any leading
batch shape (here a 2-D grid of points), the log-determinant from the
factors' diagonals with ``np.diagonal(..., axis1=-2, axis2=-1)``,
component log-weights normalised with ``scipy.special.logsumexp`` and the
log-likelihood reduced over the last axis. Differentiated with respect to
the means, the factors and the logits."""
import numpy as np
from scipy.special import logsumexp
import jax.numpy as jnp
from jax.scipy.special import logsumexp as jlogsumexp


def log_density(points, means, chol, logits):
    diff = points[..., None, :] - means                   # (..., K, d)
    z = np.einsum('...kij,...kj->...ki', chol, diff)      # whitened
    maha = np.einsum('...ki,...ki->...k', z, z)
    log_det = np.sum(np.log(np.abs(np.diagonal(chol, axis1=-2, axis2=-1))), axis=-1)
    d = points.shape[-1]
    log_w = logits - logsumexp(logits)
    comp = log_w + log_det - 0.5 * maha - 0.5 * d * np.log(2 * np.pi)
    return logsumexp(comp, axis=-1)


def nll(means, chol, logits, points):
    return -np.mean(log_density(points, means, chol, logits))


def make_inputs(rng):
    K, d = 3, 2
    means = rng.standard_normal((K, d))
    chol = np.tril(0.3 * rng.standard_normal((K, d, d))) + np.eye(d)
    points = rng.standard_normal((4, 5, d))
    return means, chol, rng.standard_normal(K), points


fun = nll
argnums = (0, 1, 2)


def jax_fun(means, chol, logits, points):
    diff = points[..., None, :] - means
    z = jnp.einsum('...kij,...kj->...ki', chol, diff)
    maha = jnp.sum(z * z, axis=-1)
    log_det = jnp.sum(jnp.log(jnp.abs(jnp.diagonal(chol, axis1=-2, axis2=-1))), axis=-1)
    comp = logits - jlogsumexp(logits) + log_det - 0.5 * maha - 0.5 * 2 * jnp.log(2 * jnp.pi)
    return -jnp.mean(jlogsumexp(comp, axis=-1))
