"""What the cost tests count: lines of Python run, not time, so that a
loaded machine cannot change the result."""
import sys


def lines_run(f, *args):
    """How many lines of Python (the generated code's and the runtime's) one
    call of ``f`` runs."""
    count = [0]

    def tracer(frame, event, arg):
        if event == "line":
            count[0] += 1
        return tracer
    sys.settrace(tracer)
    try:
        f(*args)
    finally:
        sys.settrace(None)
    return count[0]
