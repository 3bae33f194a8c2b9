"""Helpers that generated code calls.

Generated primal and adjoint functions import only NumPy and this package,
so an ahead-of-time artifact runs without the compiler.  Every helper is
cheap when it has nothing to do (equal shapes, matching dtype) because
adjoints call them on hot paths.

- ``core``: projection onto the primal (shape, realness, dtype, type), zeros,
  structures (tuples, dicts, namedtuples, dataclasses);
- ``rule_support``: the helpers rule bodies call (ties, splits; products in
  ``dot_support``, reads by index in ``index_support``);
- ``accumulation``: owned buffers, indexed adds, writes into arrays;
- ``scipy_support``, ``scipy_solvers``: the SciPy rules' helpers (special
  functions and distributions; linalg, signal, odeint), SciPy imported when one runs;
- ``arguments``: checks on the arguments of a function that writes into them;
- ``objects``: an object with one attribute replaced, for methods that store into
  ``self`` (``frontend.method_state``);
- ``calls``: calls into pullback itself (a callee known only at run time,
  a callee's handle), through hooks the driver installs.
- ``control`` (not re-exported here, reached as ``runtime.control``): ``with
  np.errstate`` blocks, ``try`` bodies and calls with starred arguments, as
  the front end writes them.
- ``forward_support``: what generated tangent functions (forward mode) and the
  forward rules call; not re-exported here (imported as
  ``pullback.runtime.forward_support``).
"""
from . import control  # noqa: F401
from .accumulation import *  # noqa: F401,F403
from .accumulation import __all__ as _accumulation
from .arguments import *  # noqa: F401,F403
from .arguments import __all__ as _arguments
from .calls import *  # noqa: F401,F403
from .calls import __all__ as _calls
from .core import *  # noqa: F401,F403
from .core import __all__ as _core
from .statement_checks import *  # noqa: F401,F403
from .statement_checks import __all__ as _statement_checks
from .structures import *  # noqa: F401,F403
from .structures import __all__ as _structures
from .fft_support import *  # noqa: F401,F403
from .fft_support import __all__ as _fft_support
from .layout_support import *  # noqa: F401,F403
from .layout_support import __all__ as _layout_support
from .linalg_support import *  # noqa: F401,F403
from .objects import *  # noqa: F401,F403
from .objects import __all__ as _objects
from .linalg_support import __all__ as _linalg_support
from .rule_support import *  # noqa: F401,F403
from .rule_support import __all__ as _rule_support
from .scipy_support import *  # noqa: F401,F403
from .scipy_support import __all__ as _scipy_support
from .scipy_solvers import *  # noqa: F401,F403
from .scipy_solvers import __all__ as _scipy_solvers
from .series_support import *  # noqa: F401,F403
from .series_support import __all__ as _series_support
from .select_support import *  # noqa: F401,F403
from .select_support import __all__ as _select_support
from .special_support import *  # noqa: F401,F403
from .special_support import __all__ as _special_support
from .callback_support import *  # noqa: F401,F403
from .callback_support import __all__ as _callback_support
from .array_api_support import *  # noqa: F401,F403
from .array_api_support import __all__ as _array_api_support
from .vectorize_support import *  # noqa: F401,F403
from .vectorize_support import __all__ as _vectorize_support
from .weighted_choices import *  # noqa: F401,F403
from .weighted_choices import __all__ as _weighted_choices

from .dict_support import dict_merge_grads, dict_set_grads, dict_setdefault_grads  # noqa: F401
from .dict_support import dict_item_grads, dict_stored_grad, dict_without  # noqa: F401

_dict_rules = ["dict_set_grads", "dict_setdefault_grads", "dict_merge_grads",  # rules.dicts
               "dict_item_grads", "dict_stored_grad", "dict_without"]
from .opaque_routes import items_cotangent  # noqa: F401,E402  (rules.math_rules' `sequence`)

__all__ = (_core + _structures + _statement_checks + _rule_support + _accumulation + _linalg_support
           + _layout_support + _fft_support + _scipy_support + _scipy_solvers + _calls + _arguments
           + _objects + _dict_rules + ["items_cotangent"]
           + _series_support + _select_support + _special_support + _callback_support
           + _array_api_support + _vectorize_support
           + _weighted_choices)
from .assorted_support import *  # noqa: F401,F403,E402  (block, choose, histogram, sets...)
__all__ += assorted_support.__all__  # noqa: F405
from .dot_support import *  # noqa: F401,F403,E402  (split from rule_support)
from .index_support import *  # noqa: F401,F403,E402
__all__ += dot_support.__all__ + index_support.__all__  # noqa: F405
