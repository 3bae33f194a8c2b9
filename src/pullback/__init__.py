"""pullback: source-to-source automatic differentiation for Python and NumPy.

>>> import numpy as np, pullback as pb
>>> pb.grad(lambda x: np.sum(x * x))(np.array([1.0, 2.0]))
array([2., 4.])
"""
from .api import (custom_jvp, custom_vjp, differentiable, grad, jacfwd, jvp, linearize,
                  value_and_grad, vjp)
from .api import check_grads, checkpoint, forward
from .reverse_jacobians import jacobian, jacrev
from .sources import source
from .runtime.gradient_stops import stop_gradient
from .api import hessian, hvp
from .pytrees import register_dataclass, register_pytree_node, register_pytree_node_class
from .errors import (NoRuleError, NonDifferentiableError, NotTraceableError, PullbackError,
                     SourceUnavailableError, UnsupportedSyntaxError)
from .version import __version__  # noqa: F401  (pullback.__version__)

__all__ = ["grad", "value_and_grad", "vjp", "jvp", "linearize", "jacfwd", "differentiable",
           "custom_vjp", "custom_jvp", "source", "hessian", "hvp",
           "PullbackError", "UnsupportedSyntaxError", "NoRuleError",
           "SourceUnavailableError", "NonDifferentiableError", "NotTraceableError"]
__all__ += ["jacrev", "jacobian", "check_grads", "checkpoint", "forward", "stop_gradient"]
__all__ += ["register_pytree_node", "register_pytree_node_class", "register_dataclass"]
