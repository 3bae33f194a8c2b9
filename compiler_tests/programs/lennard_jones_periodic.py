"""The potential energy of a small Lennard-Jones fluid in a periodic box,
as molecular-dynamics course code computes it: pair indices from
``np.triu_indices``, displacements wrapped by the minimum-image convention
``d - L * np.round(d / L)``, a cutoff applied with ``np.where`` (shifted so
the energy is continuous), and the virial pressure; the loss is energy plus
a pressure penalty, differentiated with respect to the positions (giving
the negative forces) and the well depth and size (Python floats)."""
import numpy as np
import jax.numpy as jnp

BOX = 3.0
CUTOFF = 1.4


def pair_displacements(positions, box=BOX):
    i, j = np.triu_indices(len(positions), k=1)
    d = positions[i] - positions[j]
    return d - box * np.round(d / box)


def lj(r2, epsilon, sigma):
    s6 = (sigma ** 2 / r2) ** 3
    return 4.0 * epsilon * (s6 ** 2 - s6)


def energy_and_virial(positions, epsilon, sigma):
    d = pair_displacements(positions)
    r2 = np.sum(d ** 2, axis=1)
    shift = lj(CUTOFF ** 2, epsilon, sigma)
    inside = r2 < CUTOFF ** 2
    e = np.sum(np.where(inside, lj(r2, epsilon, sigma) - shift, 0.0))
    s6 = (sigma ** 2 / r2) ** 3
    virial = np.sum(np.where(inside, 24.0 * epsilon * (2.0 * s6 ** 2 - s6), 0.0))
    return e, virial


def objective(positions, epsilon, sigma, target_pressure=0.5, temperature=1.0):
    e, virial = energy_and_virial(positions, epsilon, sigma)
    n = len(positions)
    pressure = (n * temperature + virial / 3.0) / BOX ** 3
    return e / n + (pressure - target_pressure) ** 2


def make_inputs(rng):
    g = np.arange(2) * 1.5 + 0.2
    lattice = np.array([[a, b, c] for a in g for b in g for c in g])
    return lattice + 0.05 * rng.standard_normal(lattice.shape), 1.0, 0.9


fun = objective
argnums = (0, 1, 2)


def jax_fun(positions, epsilon, sigma):
    i, j = np.triu_indices(len(positions), k=1)
    d = positions[i] - positions[j]
    d = d - BOX * jnp.round(d / BOX)
    r2 = jnp.sum(d ** 2, axis=1)

    def ljj(r2):
        s6 = (sigma ** 2 / r2) ** 3
        return 4.0 * epsilon * (s6 ** 2 - s6)
    inside = r2 < CUTOFF ** 2
    e = jnp.sum(jnp.where(inside, ljj(r2) - ljj(CUTOFF ** 2), 0.0))
    s6 = (sigma ** 2 / r2) ** 3
    virial = jnp.sum(jnp.where(inside, 24.0 * epsilon * (2.0 * s6 ** 2 - s6), 0.0))
    n = len(positions)
    pressure = (n * 1.0 + virial / 3.0) / BOX ** 3
    return e / n + (pressure - 0.5) ** 2
