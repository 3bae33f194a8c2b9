"""A corpus of realistic NumPy programs, written the way people write model
code (issue 12): classes with methods, closures, function-valued and default
arguments, decorators, ``functools.partial``, lists of layer tuples, dicts of
parameters, helper functions and loops.

Each module exposes

- ``fun``: what is handed to ``pb.grad`` (a function, a bound method, a
  decorated function or a ``functools.partial``);
- ``make_inputs(rng)``: the arguments, a tuple;
- ``argnums``: a tuple, the arguments to differentiate;
- ``jax_fun`` (where JAX can express the program): the same program written
  with ``jax.numpy``, called with the same arguments;
- ``refuses`` (only where pullback is expected to refuse the program today for
  a documented reason): source snippets of the lines an error may name.
- ``fd_step`` (optional): the relative step of the central differences.

``compiler_tests/test_programs.py`` checks every one.
"""
import pkgutil

NAMES = sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))
