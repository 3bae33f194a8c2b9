"""The reverse pass: the primal with its saved residuals, and the adjoint."""
