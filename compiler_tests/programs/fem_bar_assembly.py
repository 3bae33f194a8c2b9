"""Sizing of an elastic bar by finite elements, written as in an FEM course:
2x2 element stiffness matrices from a helper, global assembly with
``K[np.ix_(dofs, dofs)] += ke`` in a loop over
``enumerate(zip(areas, moduli, lengths))``, the clamped node removed by
indexing the free degrees of freedom, ``np.linalg.solve`` for the
displacements written back with ``u[free] = ...``, and the compliance
``loads @ u`` plus a volume penalty. Differentiated with respect to the
element areas and Young's moduli (the sensitivities of topology
optimisation)."""
import numpy as np
import jax.numpy as jnp


def element_stiffness(E, A, L):
    k = E * A / L
    return k * np.array([[1.0, -1.0], [-1.0, 1.0]])


def assemble(areas, moduli, lengths):
    n_nodes = len(lengths) + 1
    K = np.zeros((n_nodes, n_nodes))
    for e, (A, E, L) in enumerate(zip(areas, moduli, lengths)):
        dofs = [e, e + 1]
        K[np.ix_(dofs, dofs)] += element_stiffness(E, A, L)
    return K


def compliance(areas, moduli, lengths, loads, penalty=0.3):
    K = assemble(areas, moduli, lengths)
    free = np.arange(1, K.shape[0])          # node 0 is clamped
    u = np.zeros(K.shape[0])
    u[free] = np.linalg.solve(K[np.ix_(free, free)], loads[free])
    volume = np.sum(areas * lengths)
    return loads @ u + penalty * volume


def make_inputs(rng):
    n = 6
    areas = rng.uniform(0.5, 1.5, n)
    moduli = rng.uniform(1.0, 3.0, n)
    lengths = rng.uniform(0.2, 0.5, n)
    loads = rng.uniform(-1.0, 1.0, n + 1)
    return areas, moduli, lengths, loads


fun = compliance
argnums = (0, 1)


def jax_fun(areas, moduli, lengths, loads):
    n = len(lengths) + 1
    K = jnp.zeros((n, n))
    for e in range(len(lengths)):
        k = moduli[e] * areas[e] / lengths[e]
        K = K.at[e:e + 2, e:e + 2].add(k * jnp.array([[1.0, -1.0], [-1.0, 1.0]]))
    u = jnp.zeros(n).at[1:].set(jnp.linalg.solve(K[1:, 1:], loads[1:]))
    return loads @ u + 0.3 * jnp.sum(areas * lengths)
