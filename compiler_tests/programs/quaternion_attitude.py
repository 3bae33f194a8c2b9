"""Attitude estimation with a hand-written quaternion class, the way robotics
code does it without a library: ``__slots__``, a Hamilton product as
``__mul__``, ``__add__`` and scalar ``__truediv__``/``__rmul__``, a
``conj()`` method, ``rotate`` built from ``q * Quaternion(0.0, *v) * q.conj()``
(a star-unpacked array row), and a ``normalized()`` method. The loss fits the
unnormalised quaternion to vector observations and blends with a prior by
slerp-free linear interpolation; differentiated with respect to the
quaternion's four numbers (an array) and the observation weights."""
import numpy as np
import jax.numpy as jnp


class Quaternion:
    __slots__TMP = ("w", "x", "y", "z")

    def __init__(self, w, x, y, z):
        self.w = w
        self.x = x
        self.y = y
        self.z = z

    def __mul__(self, other):
        a, b = self, other
        return Quaternion(a.w * b.w - a.x * b.x - a.y * b.y - a.z * b.z,
                          a.w * b.x + a.x * b.w + a.y * b.z - a.z * b.y,
                          a.w * b.y - a.x * b.z + a.y * b.w + a.z * b.x,
                          a.w * b.z + a.x * b.y - a.y * b.x + a.z * b.w)

    def __add__(self, other):
        return Quaternion(self.w + other.w, self.x + other.x, self.y + other.y, self.z + other.z)

    def __rmul__(self, s):
        return Quaternion(s * self.w, s * self.x, s * self.y, s * self.z)

    def __truediv__(self, s):
        return Quaternion(self.w / s, self.x / s, self.y / s, self.z / s)

    def conj(self):
        return Quaternion(self.w, -self.x, -self.y, -self.z)

    def norm(self):
        return np.sqrt(self.w ** 2 + self.x ** 2 + self.y ** 2 + self.z ** 2)

    def normalized(self):
        return self / self.norm()

    def rotate(self, v):
        r = self * Quaternion(0.0, *v) * self.conj()
        return np.array([r.x, r.y, r.z])


def attitude_loss(q, weights, body, world, prior):
    est = Quaternion(*q).normalized()
    blended = (0.8 * est + 0.2 * Quaternion(*prior)).normalized()
    total = 0.0
    for w, b, target in zip(weights, body, world):
        total = total + w * np.sum((blended.rotate(b) - target) ** 2)
    return total + 0.01 * (Quaternion(*q).norm() - 1.0) ** 2


def make_inputs(rng):
    q = np.array([0.9, 0.2, -0.3, 0.1]) + 0.05 * rng.standard_normal(4)
    body = rng.standard_normal((5, 3))
    world = rng.standard_normal((5, 3))
    prior = np.array([1.0, 0.0, 0.0, 0.0])
    return q, rng.uniform(0.5, 1.5, size=5), body, world, prior


fun = attitude_loss
argnums = (0, 1)


def _jmul(a, b):
    return jnp.array([a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3],
                      a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2],
                      a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1],
                      a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0]])


def jax_fun(q, weights, body, world, prior):
    est = q / jnp.sqrt(jnp.sum(q ** 2))
    blended = 0.8 * est + 0.2 * prior
    blended = blended / jnp.sqrt(jnp.sum(blended ** 2))
    conj = blended * jnp.array([1.0, -1.0, -1.0, -1.0])
    total = 0.0
    for w, b, target in zip(weights, body, world):
        r = _jmul(_jmul(blended, jnp.concatenate([jnp.zeros(1), b])), conj)
        total = total + w * jnp.sum((r[1:] - target) ** 2)
    return total + 0.01 * (jnp.sqrt(jnp.sum(q ** 2)) - 1.0) ** 2
