"""Bond pricing off a zero curve, as a quant desk's script writes it: zero
rates at knot maturities interpolated with ``np.interp`` (flat beyond the
last knot), discount factors, coupon schedules built with ``np.arange``, a
Nelson-Siegel prior on the knots evaluated with ``np.polyval`` of a decay
polynomial, an annuity by ``np.trapezoid`` and a price-error loss over a
list of ``(maturity, coupon, price)`` bonds. Differentiated with respect to
the zero rates at the knots and the curve's parallel shift."""
import numpy as np
import jax.numpy as jnp

KNOTS = np.array([0.5, 1.0, 2.0, 3.0, 5.0, 7.0])


def discount(t, zero_rates, shift):
    r = np.interp(t, KNOTS, zero_rates) + shift
    return np.exp(-r * t)


def bond_price(maturity, coupon, zero_rates, shift, freq=2):
    times = np.arange(1.0 / freq, maturity + 1e-9, 1.0 / freq)
    cash = np.full(len(times), coupon / freq)
    cash[-1] += 1.0
    return np.sum(cash * discount(times, zero_rates, shift))


def curve_loss(zero_rates, shift, bonds, ns_coeffs):
    err = 0.0
    for maturity, coupon, price in bonds:
        err = err + (bond_price(maturity, coupon, zero_rates, shift) - price) ** 2
    prior = np.polyval(ns_coeffs, np.exp(-KNOTS / 2.0))
    grid = np.linspace(0.5, 7.0, 27)
    annuity = np.trapezoid(discount(grid, zero_rates, shift), grid)
    return 1e4 * err + np.sum((zero_rates - prior) ** 2) + 1e-3 * annuity


def make_inputs(rng):
    zero = 0.03 + 0.002 * np.arange(6) + 0.001 * rng.standard_normal(6)
    bonds = [(1.0, 0.02, 0.99), (2.5, 0.03, 1.005), (4.0, 0.035, 1.01), (6.5, 0.04, 1.02)]
    return zero, 0.0005, bonds, np.array([0.01, -0.02, 0.045])


fun = curve_loss
argnums = (0, 1)
jax_jit = False             # the bond list holds maturities that size the schedules


def jax_fun(zero_rates, shift, bonds, ns_coeffs):
    def disc(t):
        return jnp.exp(-(jnp.interp(t, jnp.asarray(KNOTS), zero_rates) + shift) * t)

    err = 0.0
    for maturity, coupon, price in bonds:
        times = np.arange(0.5, maturity + 1e-9, 0.5)
        cash = np.full(len(times), coupon / 2.0)
        cash[-1] += 1.0
        err = err + (jnp.sum(cash * disc(times)) - price) ** 2
    prior = jnp.polyval(ns_coeffs, jnp.exp(-jnp.asarray(KNOTS) / 2.0))
    grid = jnp.linspace(0.5, 7.0, 27)
    annuity = jnp.trapezoid(disc(grid), grid)
    return 1e4 * err + jnp.sum((zero_rates - prior) ** 2) + 1e-3 * annuity
