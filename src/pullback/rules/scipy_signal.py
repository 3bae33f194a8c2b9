"""Rules for ``scipy.signal.convolve`` and ``correlate`` (registered only when
SciPy imports), in any number of dimensions and every ``mode``.

The cotangent of each input is ``g`` placed in the full result and
convolved ('valid') with the other input reversed along every axis
(``runtime.signal_conv_grad``); ``method`` only changes how the primal is
computed.  Before/after::

    y = convolve(a, k, mode="same")    full = zeros(len(a) + len(k) - 1)
                                       full[(len(k) - 1) // 2:][:len(a)] = y_bar
                                       a_bar = convolve(full, k[::-1], "valid")

Complex inputs follow JAX's convention: ``convolve`` is holomorphic (no
conjugation); ``correlate(a, v) == convolve(a, conj(v[::-1]))``, so ``v``'s
cotangent is the conjugated reverse of that of ``conj(v[::-1])``.
"""
import scipy.signal as signal

from pullback.rules.registry import multilinear, vjp
from pullback.runtime import signal_conv_grad


@vjp(signal.convolve)
def convolve(g, ans, in1, in2, mode="full", method="auto"):
    return (signal_conv_grad(g, in1, in2, mode, "in1"),
            signal_conv_grad(g, in1, in2, mode, "in2"))


@vjp(signal.correlate)
def correlate(g, ans, in1, in2, mode="full", method="auto"):
    return (signal_conv_grad(g, in1, in2, mode, "in1", True),
            signal_conv_grad(g, in1, in2, mode, "in2", True))


# forward: linear in each input apart (correlate conjugates in2, which is
# still linear over the reals: the tangent is correlate(in1, in2_dot))
multilinear(signal.convolve, signal.correlate)
