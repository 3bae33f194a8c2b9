"""Risk-adjusted portfolio weights as quants write them: long-only weights
from a softmax of scores, the wealth path by ``np.cumprod`` of gross returns,
the running peak by ``np.maximum.accumulate``, the maximum drawdown and a
Sharpe ratio with ``np.std(ddof=1)``, annualised with ``math.sqrt``; the
objective trades Sharpe off against drawdown and turnover from the previous
weights."""
import math

import numpy as np
import jax
import jax.numpy as jnp

PERIODS_PER_YEAR = 252


def softmax(scores, temperature):
    z = scores / temperature
    z = z - z.max()
    w = np.exp(z)
    return w / w.sum()


def max_drawdown(wealth):
    peak = np.maximum.accumulate(wealth)
    return np.max(1.0 - wealth / peak)


def objective(scores, temperature, returns, previous, risk_aversion=2.0, cost=0.01):
    weights = softmax(scores, temperature)
    portfolio = returns @ weights
    wealth = np.cumprod(1.0 + portfolio)
    sharpe = portfolio.mean() / portfolio.std(ddof=1) * math.sqrt(PERIODS_PER_YEAR)
    turnover = np.abs(weights - previous).sum()
    return -sharpe + risk_aversion * max_drawdown(wealth) + cost * turnover


def make_inputs(rng):
    returns = 0.0005 + 0.01 * rng.standard_normal((30, 4))
    return rng.standard_normal(4), 0.7, returns, np.full(4, 0.25) + 0.01 * rng.standard_normal(4)


fun = objective
argnums = (0, 1, 2)


def jax_fun(scores, temperature, returns, previous):
    z = scores / temperature
    w = jnp.exp(z - z.max())
    w = w / w.sum()
    r = returns @ w
    wealth = jnp.cumprod(1.0 + r)
    peak = jax.lax.cummax(wealth)
    sharpe = r.mean() / r.std(ddof=1) * math.sqrt(PERIODS_PER_YEAR)
    return -sharpe + 2.0 * jnp.max(1.0 - wealth / peak) + 0.01 * jnp.abs(w - previous).sum()
