"""Designing an FIR equaliser the signal-processing way: the taps convolved
with a zero-padded input (``np.pad`` with ``mode="edge"``, ``np.convolve``
with ``mode="valid"``), a time-domain error plus a spectral-magnitude error
from ``np.fft.rfft`` on a Hann window (``np.hanning``), and a smoothness
penalty from ``np.diff``. Differentiated with respect to the taps and the
gain."""
import numpy as np
import jax.numpy as jnp


def equalise(taps, gain, signal):
    k = len(taps)
    padded = np.pad(signal, (k // 2, k - 1 - k // 2), mode="edge")
    return gain * np.convolve(padded, taps, mode="valid")


def spectrum(x):
    return np.abs(np.fft.rfft(x * np.hanning(len(x))))


def design_loss(taps, gain, signal, target):
    out = equalise(taps, gain, signal)
    time_err = np.mean((out - target) ** 2)
    spec_err = np.mean((np.log1p(spectrum(out)) - np.log1p(spectrum(target))) ** 2)
    return time_err + 0.3 * spec_err + 0.05 * np.sum(np.diff(taps) ** 2)


def make_inputs(rng):
    t = np.arange(32)
    signal = np.sin(0.3 * t) + 0.3 * rng.standard_normal(32)
    target = np.sin(0.3 * t + 0.2) + 0.1 * np.cos(1.1 * t)
    return 0.2 * rng.standard_normal(5), 1.1, signal, target


fun = design_loss
argnums = (0, 1)


def jax_fun(taps, gain, signal, target):
    k = len(taps)

    def spec(x):
        return jnp.abs(jnp.fft.rfft(x * jnp.hanning(len(x))))

    padded = jnp.pad(signal, (k // 2, k - 1 - k // 2), mode="edge")
    out = gain * jnp.convolve(padded, taps, mode="valid")
    time_err = jnp.mean((out - target) ** 2)
    spec_err = jnp.mean((jnp.log1p(spec(out)) - jnp.log1p(spec(target))) ** 2)
    return time_err + 0.3 * spec_err + 0.05 * jnp.sum(jnp.diff(taps) ** 2)
