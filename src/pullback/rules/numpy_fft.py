"""Rules for ``np.fft``: the complex, real and inverse transforms in one, two
and n dimensions, and the shifts.

Every transform is linear, so its cotangent is its transpose applied to
``g``, in JAX's convention (the adjoint under ``Re sum(a * b)``, no
conjugation): the complex transforms are symmetric (``fft``'s transpose is
``fft`` with the same ``norm``), ``rfft``'s is the real part of the ``fft``
of ``g`` zero-padded to ``n``, ``irfft``'s is ``ifft(g)`` on the kept bins
with the interior ones doubled.  ``n``/``s`` crop or zero-pad the input
before transforming, so the cotangent is zero-padded or cropped back;
``axes`` may repeat an axis (the steps are transposed one by one, in
reverse, as NumPy runs them).  The helper is ``runtime.fft_grad``.

Conventions where the derivative is not obvious: ``irfft`` ignores the
imaginary parts of bin 0 and (for even ``n``) of bin ``n/2``, so their
cotangent is real (it is the exact derivative of NumPy's function; JAX's is
the same).  ``rfft`` of a real input has a real cotangent.  ``out=`` is a
destination, never differentiated.

Before, a transform; after, its rule in the adjoint (Parseval: the gradient
is ``2 n x``):

>>> import numpy as np, pullback as pb
>>> from pullback.testing import adjoint_source, function_from_source
>>> f = function_from_source('''
... def f(x):
...     return np.sum(np.abs(np.fft.fft(x)) ** 2)
... ''')
>>> print(adjoint_source(f, np.array([1.0, 2.0, 0.5])))
def f_adjoint(residuals, out_bar):
    abs_fft_x_pow_2, abs_fft_x, fft_x, x = residuals
    abs_fft_x_pow_2_bar = unreduce(out_bar, abs_fft_x_pow_2)
    abs_fft_x_bar = abs_fft_x_pow_2_bar * 2 * abs_fft_x
    fft_x_bar = abs_grad(abs_fft_x_bar, fft_x)
    x_bar = fft_grad(fft_x_bar, x, 'fft', None, -1)
    return (project(x_bar, x, copy=True),)
>>> x = np.array([1.0, 2.0, 0.5])
>>> np.allclose(pb.grad(f)(x), 2 * len(x) * x)
True
"""
import numpy as np

from pullback.rules.registry import facts, vjp, linear
from pullback.runtime import fft_grad, unarray

# --- one dimension ---


@vjp(np.fft.fft)
def fft(g, ans, a, n=None, axis=-1, norm=None, out=None):
    return fft_grad(g, a, "fft", n, axis, norm)


@vjp(np.fft.ifft)
def ifft(g, ans, a, n=None, axis=-1, norm=None, out=None):
    return fft_grad(g, a, "ifft", n, axis, norm)


@vjp(np.fft.rfft)
def rfft(g, ans, a, n=None, axis=-1, norm=None, out=None):
    return fft_grad(g, a, "rfft", n, axis, norm)


@vjp(np.fft.irfft)
def irfft(g, ans, a, n=None, axis=-1, norm=None, out=None):
    return fft_grad(g, a, "irfft", n, axis, norm)


# --- two and n dimensions (s: the lengths along axes) ---


@vjp(np.fft.fftn)
def fftn(g, ans, a, s=None, axes=None, norm=None, out=None):
    return fft_grad(g, a, "fft", s, axes, norm)


@vjp(np.fft.ifftn)
def ifftn(g, ans, a, s=None, axes=None, norm=None, out=None):
    return fft_grad(g, a, "ifft", s, axes, norm)


@vjp(np.fft.rfftn)
def rfftn(g, ans, a, s=None, axes=None, norm=None, out=None):
    return fft_grad(g, a, "rfft", s, axes, norm)


@vjp(np.fft.irfftn)
def irfftn(g, ans, a, s=None, axes=None, norm=None, out=None):
    return fft_grad(g, a, "irfft", s, axes, norm)


@vjp(np.fft.fft2)
def fft2(g, ans, a, s=None, axes=(-2, -1), norm=None, out=None):
    return fft_grad(g, a, "fft", s, axes, norm)


@vjp(np.fft.ifft2)
def ifft2(g, ans, a, s=None, axes=(-2, -1), norm=None, out=None):
    return fft_grad(g, a, "ifft", s, axes, norm)


@vjp(np.fft.rfft2)
def rfft2(g, ans, a, s=None, axes=(-2, -1), norm=None, out=None):
    return fft_grad(g, a, "rfft", s, axes, norm)


@vjp(np.fft.irfft2)
def irfft2(g, ans, a, s=None, axes=(-2, -1), norm=None, out=None):
    return fft_grad(g, a, "irfft", s, axes, norm)


# --- shifts (permutations: the inverse shift moves g back) ---


@vjp(np.fft.fftshift)
def fftshift(g, ans, x, axes=None):
    return unarray(np.fft.ifftshift(g, axes), x)


@vjp(np.fft.ifftshift)
def ifftshift(g, ans, x, axes=None):
    return unarray(np.fft.fftshift(g, axes), x)

# --- forward rules: every transform here is linear ---

linear(np.fft.fft, np.fft.ifft, np.fft.rfft, np.fft.irfft, np.fft.fftn, np.fft.ifftn,
       np.fft.rfftn, np.fft.irfftn, np.fft.fft2, np.fft.ifft2, np.fft.rfft2, np.fft.irfft2,
       np.fft.fftshift, np.fft.ifftshift)


# -- facts (rules/registry.py: facts): complex values from real arrays ------------
facts(np.fft.fft, np.fft.ifft, np.fft.rfft, np.fft.fftn, np.fft.ifftn, np.fft.rfftn,
      np.fft.fft2, np.fft.ifft2, np.fft.rfft2, complex_output=True)
