"""Errors that name the user's file, line and construct, and say the fix."""
from __future__ import annotations

__all__ = ["PullbackError", "UnsupportedSyntaxError", "NoRuleError",
           "SourceUnavailableError", "NonDifferentiableError", "NotTraceableError", "Location"]


class Location:
    """Where a construct sits in the user's source."""

    def __init__(self, filename, lineno, col_offset=0, end_col_offset=None, line="",
                 end_lineno=None):
        self.filename = filename
        self.lineno = lineno
        self.col_offset = col_offset or 0
        self.end_col_offset = end_col_offset
        self.line = line
        self.end_lineno = end_lineno

    def render(self):
        text = self.line.rstrip("\n")
        stripped = text.lstrip()
        indent = len(text) - len(stripped)
        width = 1
        end = self.end_col_offset
        if self.end_lineno is not None and self.end_lineno != self.lineno:
            end = len(text)      # a construct over several lines: underline this one
        if end is not None and end > self.col_offset:
            # never wider than the quoted line
            width = max(min(end, len(text)) - self.col_offset, 1)
        caret = " " * (4 + max(self.col_offset - indent, 0)) + "^" * width
        return f'  File "{self.filename}", line {self.lineno}\n    {stripped}\n{caret}'


class PullbackError(Exception):
    """Base of every error pullback raises about the user's code.

    The message names the file and line, quotes the line with a caret under the
    construct, and says what to write instead.
    """

    def __init__(self, message, location=None, hint=None):
        self.message = message
        self.location = location
        self.hint = hint
        super().__init__(self._format())

    @property
    def lineno(self):
        return self.location.lineno if self.location else None

    @property
    def filename(self):
        return self.location.filename if self.location else None

    def _format(self):
        parts = [self.message]
        if self.location is not None:
            parts.append(self.location.render())
        if self.hint:
            parts.append(self.hint)
        return "\n".join(parts)


class UnsupportedSyntaxError(PullbackError):
    """A Python construct pullback does not differentiate."""


class NoRuleError(PullbackError):
    """A call to a function that has no differentiation rule and no source."""


class SourceUnavailableError(PullbackError):
    """The function's source cannot be retrieved (builtin, REPL lambda, ...)."""


class NotTraceableError(PullbackError):
    """A derivative called under ``jax.jit`` whose generated code JAX cannot
    trace (a Python branch on a traced value, a write into an array, a helper
    with no jax.numpy form): ``pb.source`` names the reason in its header."""


class NonDifferentiableError(PullbackError):
    """A value that carries no gradient is used where one is needed."""
