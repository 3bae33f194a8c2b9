"""What every test of a refusal checks: a ``PullbackError`` naming the
function's file and the line holding a construct, quoting that line with a
caret, and saying what to write instead."""
import inspect

import pullback as pb


def line_of(fn, text):
    """The file line number of the first source line of ``fn`` containing text."""
    lines, first = inspect.getsourcelines(fn)
    for i, line in enumerate(lines):
        if text in line:
            return first + i
    raise AssertionError(text)


def check_error(err, fn, text, cls, hint_words):
    """``err`` is a ``cls`` naming the file of ``fn`` and its line holding
    ``text``, quotes that line with a caret, and says ``hint_words``."""
    assert isinstance(err, pb.PullbackError) and isinstance(err, cls), repr(err)
    assert err.filename == fn.__code__.co_filename
    assert err.lineno == line_of(fn, text), str(err)
    msg = str(err)
    assert f"line {err.lineno}" in msg
    assert text.strip() in msg            # the line is quoted
    assert "^" in msg                     # with a caret under the construct
    for w in hint_words:
        assert w in msg, (w, msg)
