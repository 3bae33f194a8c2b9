"""Monte-Carlo pricing of an arithmetic Asian call under geometric Brownian
motion, with its pathwise Greeks taken by differentiating the pricer (delta,
vega, rho): fixed standard normals passed in as the random numbers, log-price
paths by ``np.cumsum``, the payoff with ``np.maximum``, a control variate
from the geometric average whose price is known in closed form
(``math.erf``-based normal CDF), and ``logging`` calls in the pricer."""
import logging
import math

import numpy as np
import jax.numpy as jnp
from jax.scipy.special import erf as jerf

log = logging.getLogger(__name__)


def norm_cdf(x):
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def geometric_asian_price(spot, strike, rate, vol, maturity, n_steps):
    """Closed form for the discretely monitored geometric average."""
    dt = maturity / n_steps
    mu = math.log(spot) + (rate - 0.5 * vol ** 2) * dt * (n_steps + 1) / 2.0
    var = vol ** 2 * dt * (n_steps + 1) * (2 * n_steps + 1) / (6.0 * n_steps)
    d2 = (mu - math.log(strike)) / math.sqrt(var)
    d1 = d2 + math.sqrt(var)
    return math.exp(-rate * maturity) * (math.exp(mu + 0.5 * var) * norm_cdf(d1)
                                          - strike * norm_cdf(d2))


def simulate_paths(spot, rate, vol, maturity, normals):
    n_paths, n_steps = normals.shape
    dt = maturity / n_steps
    increments = (rate - 0.5 * vol ** 2) * dt + vol * math.sqrt(dt) * normals
    return spot * np.exp(np.cumsum(increments, axis=1))


def asian_call(spot, rate, vol, normals, strike=100.0, maturity=1.0):
    log.debug("pricing %d paths", normals.shape[0])
    paths = simulate_paths(spot, rate, vol, maturity, normals)
    discount = np.exp(-rate * maturity)
    arithmetic = discount * np.maximum(paths.mean(axis=1) - strike, 0.0)
    geometric = discount * np.maximum(np.exp(np.log(paths).mean(axis=1)) - strike, 0.0)
    exact = geometric_asian_price(spot, strike, rate, vol, maturity, normals.shape[1])
    price = np.mean(arithmetic - geometric) + exact
    log.info(f"price {float(price):.4f} (control variate {exact:.4f})")
    return price


def make_inputs(rng):
    return 104.0, 0.03, 0.25, rng.standard_normal((64, 12))


fun = asian_call
argnums = (0, 1, 2)
fd_step = 1e-6


def jax_fun(spot, rate, vol, normals):
    strike, maturity = 100.0, 1.0
    n_paths, n_steps = normals.shape
    dt = maturity / n_steps
    paths = spot * jnp.exp(jnp.cumsum((rate - 0.5 * vol ** 2) * dt
                                      + vol * math.sqrt(dt) * normals, axis=1))
    discount = jnp.exp(-rate * maturity)
    arithmetic = discount * jnp.maximum(paths.mean(axis=1) - strike, 0.0)
    geometric = discount * jnp.maximum(jnp.exp(jnp.log(paths).mean(axis=1)) - strike, 0.0)
    mu = jnp.log(spot) + (rate - 0.5 * vol ** 2) * dt * (n_steps + 1) / 2.0
    var = vol ** 2 * dt * (n_steps + 1) * (2 * n_steps + 1) / (6.0 * n_steps)
    d2 = (mu - math.log(strike)) / jnp.sqrt(var)
    d1 = d2 + jnp.sqrt(var)
    cdf = lambda z: 0.5 * (1.0 + jerf(z / math.sqrt(2.0)))   # noqa: E731
    exact = jnp.exp(-rate * maturity) * (jnp.exp(mu + 0.5 * var) * cdf(d1) - strike * cdf(d2))
    return jnp.mean(arithmetic - geometric) + exact
