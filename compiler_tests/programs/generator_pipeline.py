"""A forecasting loss written as a pipeline of generators, the way data
people chain lazy stages: ``sliding_windows`` yields slices of the series,
``standardised`` yields each window centred and scaled, ``pairs`` yields
(prediction, target) from a linear filter over all but the last value, and
the loss is ``sum(...)`` of a generator expression over the pipeline divided
by the count. Differentiated with respect to the filter taps and the series
itself."""
import numpy as np
import jax.numpy as jnp


def sliding_windows(series, width):
    for start in range(len(series) - width + 1):
        yield series[start:start + width]


def standardised(windows, eps=1e-3):
    for w in windows:
        yield (w - w.mean()) / (w.std() + eps)


def pairs(windows, taps):
    for w in windows:
        yield w[:-1] @ taps, w[-1]


def forecast_loss(taps, series):
    width = len(taps) + 1
    stream = pairs(standardised(sliding_windows(series, width)), taps)
    count = len(series) - width + 1
    return sum((pred - target) ** 2 for pred, target in stream) / count


def make_inputs(rng):
    t = np.arange(30)
    series = np.sin(0.4 * t) + 0.3 * rng.standard_normal(30)
    return 0.3 * rng.standard_normal(4), series


fun = forecast_loss
argnums = (0, 1)


def jax_fun(taps, series):
    width = taps.shape[0] + 1
    count = series.shape[0] - width + 1
    total = 0.0
    for s in range(count):
        w = series[s:s + width]
        w = (w - w.mean()) / (w.std() + 1e-3)
        total = total + (w[:-1] @ taps - w[-1]) ** 2
    return total / count
