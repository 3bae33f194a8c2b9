"""Unpacking, iterators, tuple and namedtuple results (issue 13): ``ws, bs =
zip(*pairs)``, ``first, *rest = zip(...)``, ``list(zip(...))`` and
``tuple(enumerate(...))``, ``next`` on a generator, loops over the items of a
dict a call returns.  Each gradient is checked against central differences in
reverse mode (``pb.grad``, every argument) and forward mode (``pb.jvp`` along
a fixed direction), and against exact values where they are short."""
import collections
import dataclasses

import numpy as np
import pytest

import pullback as pb

X = np.array([0.3, -1.2, 2.1, 0.7])


def _perturbed(args, i, flat, h):
    out = list(args)
    if np.ndim(args[i]):
        a = np.array(args[i], dtype=float)
        a.flat[flat] += h
        out[i] = a
    else:
        out[i] = args[i] + h
    return out


def fd_grads(f, args, h=1e-6):
    """Every argument's gradient by central differences."""
    grads = []
    for i, a in enumerate(args):
        g = np.zeros(np.shape(a))
        for k in range(max(np.size(a), 1)):
            up, down = f(*_perturbed(args, i, k, h)), f(*_perturbed(args, i, k, -h))
            if np.ndim(a):
                g.flat[k] = (up - down) / (2 * h)
            else:
                g = (up - down) / (2 * h)
        grads.append(g)
    return grads


def fd_tangent(f, args, tangents, h=1e-6):
    up = [a + h * t for a, t in zip(args, tangents)]
    down = [a - h * t for a, t in zip(args, tangents)]
    return (f(*up) - f(*down)) / (2 * h)


def check_both_modes(f, *args, rtol=1e-7):
    """pb.grad and pb.jvp of ``f`` against central differences; the inputs unchanged."""
    kept = [np.copy(a) for a in args]
    want = fd_grads(f, args)
    got = pb.grad(f, argnums=tuple(range(len(args))))(*args)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=1e-8)
    tangents = tuple(np.linspace(0.5, 1.5, np.size(a)).reshape(np.shape(a)) if np.ndim(a)
                     else 0.7 for a in args)
    value, t = pb.jvp(f, args, tangents)
    np.testing.assert_allclose(value, f(*args), rtol=1e-12)
    np.testing.assert_allclose(t, fd_tangent(f, args, tangents), rtol=rtol, atol=1e-8)
    for a, k in zip(args, kept):
        np.testing.assert_array_equal(a, k)
    return got


# ------------------------------------------------------------ iterators unpacked

def zip_star_unpacked(x, b):
    pairs = [(x, b), (x * 2, b * 3)]
    ws, bs = zip(*pairs)
    return np.sum(ws[1]) * bs[0] + bs[1]


def zip_unpacked_starred(x, b):
    first, *rest = zip([x, x * b], [b, 2.0])
    return np.sum(first[0]) * rest[0][1] + np.sum(rest[0][0])


def list_of_zip(x, b):
    pairs = [(x, b), (x * 2, b * 3), (x * x, b)]
    cols = list(zip(*pairs))
    return np.sum(cols[0][2] * cols[1][1]) + cols[1][0] ** 2


def tuple_of_enumerate(x, b):
    items = tuple(enumerate([x, x * b, b], 1))
    i, last = items[2]
    return i * last + np.sum(items[1][1]) * items[0][0]


def reversed_unpacked(x, b):
    u, v, w = reversed([x, b, x * b])
    return np.sum(u * v) + np.sum(w) * v


def enumerate_unpacked(x, b):
    (i, u), (j, v) = enumerate([x * b, np.sin(x)])
    return np.sum(u) * j + np.sum(v ** 2) * (i + 1)


def zip_of_a_name_unpacked(x, b):
    xs, bs = [x, 2 * x], (b, b * b)
    (u, c), (v, e) = zip(xs, bs)
    return np.sum(u * v) * c + e


def zip_kept_then_unpacked(x, b):
    t = zip([x, x * 2], [b, b * 3])
    ws, bs = t
    return np.sum(ws[1] * bs[0]) + ws[0] * bs[1] @ x


def enumerate_kept_then_unpacked_in_a_loop(x, b):
    total = 0.0
    for k in range(2):
        e = enumerate([x * b, x + k])
        (i, u), (j, v) = e
        total = total + np.sum(u * v) * (j + k)
    return total


def test_zip_star_unpacked_exact():
    # 2 b sum(x) + 3 b: d/dx = 2 b, d/db = 2 sum(x) + 3
    gx, gb = pb.grad(zip_star_unpacked, argnums=(0, 1))(X, 0.5)
    np.testing.assert_allclose(gx, np.full(4, 1.0), rtol=1e-12)
    np.testing.assert_allclose(gb, 2 * np.sum(X) + 3, rtol=1e-12)
    _, t = pb.jvp(zip_star_unpacked, (X, 0.5), (np.ones(4), 1.0))
    np.testing.assert_allclose(t, 2 * 0.5 * 4 + 2 * np.sum(X) + 3, rtol=1e-12)


@pytest.mark.parametrize("f", [zip_star_unpacked, zip_unpacked_starred, list_of_zip,
                               tuple_of_enumerate, reversed_unpacked, enumerate_unpacked,
                               zip_of_a_name_unpacked, zip_kept_then_unpacked,
                               enumerate_kept_then_unpacked_in_a_loop])
def test_iterators_unpacked_both_modes(f):
    check_both_modes(f, X, 0.5)


# ------------------------------------------------ methods that store nothing

State = collections.namedtuple("State", ["q", "p"])


def summary(state, scale):
    d = state._asdict()
    e = d.copy()
    moved = state._replace(q=state.q * scale)
    return len(e) + moved.q


def unused_summaries(a, q0):
    s = State(q=q0, p=a * 2.0)
    info = summary(s, a)                # not used by the output: runs as plain Python
    return s.q ** 2 * s.p + 0.0 * (info > 100)


def test_replace_asdict_and_copy_of_a_parameter_store_nothing():
    # 2 a q0^2: d/da = 2 q0^2, d/dq0 = 4 a q0 (was refused: 'may store into it')
    g = check_both_modes(unused_summaries, 1.5, 0.8)
    np.testing.assert_allclose(g, (2 * 0.64, 4 * 1.5 * 0.8), rtol=1e-12)


# ------------------------------ namedtuple and dataclass gradients added into by field

Walker = collections.namedtuple("Walker", ["q", "p", "t"])


@dataclasses.dataclass(frozen=True)
class Frame:
    w: np.ndarray
    c: float


def walk(state, a):
    q, p, t = state
    return state._replace(q=q * a, p=p + q, t=t + 1.0)


def shifted(frame, a):
    return Frame(frame.w * a, frame.c + a)


def fields_read_in_a_loop(a, q0):
    s = Walker(q=q0, p=0.5, t=0.0)
    loss = 0.0
    for k in range(3):
        s = walk(s, a)
        loss = loss + s.q ** 2 * s.p + s[1]
    return loss


def fields_read_in_branches(a, q0):
    s = walk(Walker(q=q0, p=a, t=0.0), a)
    if a > 1.0:
        u = s.q * s.p
        s = walk(s, q0)
    else:
        u = s.p
    return u + s.q * s[0] + s.p


def dataclass_fields_read_between(a, x):
    f = shifted(Frame(x, a), a)
    first = np.sum(f.w ** 2) * f.c
    f = shifted(f, 2.0)
    return first + np.sum(f.w) * f.c


@pytest.mark.parametrize("f, args", [
    (fields_read_in_a_loop, (1.3, 0.8)), (fields_read_in_a_loop, (0.7, -0.4)),
    (fields_read_in_branches, (1.5, 0.8)), (fields_read_in_branches, (0.5, 0.8)),
    (dataclass_fields_read_between, (0.6, X))])
def test_gradients_of_structures_a_callee_returns_added_into_by_field(f, args):
    check_both_modes(f, *args)


# ------------------------------------------------------------ next() on iterators made here

def rows_scaled(data, c):
    for row in data:
        yield row * c


def first_then_rest(w, data):
    rows = rows_scaled(data, 2.0)
    first = next(rows)
    rest = list(rows)
    return np.sum(first * w) * 3.0 + sum(np.sum(r * w) for r in rest)


def next_with_a_default_in_a_while(w, data):
    it = iter(data * w)
    total, k = 0.0, 1.0
    v = next(it, None)
    while v is not None:
        total = total + k * v ** 2
        k = k + 1.0
        v = next(it, None)
    return total


def next_of_a_generator_expression(w, data):
    squares = (v * w for v in data)
    a = next(squares)
    b = next(squares)
    return a * b + sum(squares) * np.sin(a)


def loop_over_the_rest(w, data):
    pairs = zip(data, data[::-1])
    head = next(pairs)
    out = head[0] * head[1] * w
    for u, v in pairs:
        out = out + np.cos(u * w) * v
    return out + sum(d for d in tuple(rows_scaled(data, w)))


def next_in_a_branch(w, data):
    rows = rows_scaled(data, w)
    first = next(rows)
    if first > 0:
        second = next(rows)
    else:
        second = first * 2.0
    return first * second + sum(rows)


def made_again_in_a_loop(w, data):
    out = 0.0
    for e in range(2):
        it = iter(data * (w + e))
        a = next(it)
        rest = list(it)
        out = out + a * sum(rest)
    return out


@pytest.mark.parametrize("f", [first_then_rest, next_with_a_default_in_a_while,
                               next_of_a_generator_expression, loop_over_the_rest,
                               next_in_a_branch, made_again_in_a_loop])
def test_next_on_an_iterator_made_in_the_function(f):
    check_both_modes(f, 0.5, X)
    check_both_modes(f, -0.8, X[::-1].copy())


def test_next_on_a_generator_exact():
    # 3 * 2 w d_0 + 2 w (d_1 + ... ): d/dw = 6 d_0 + 2 (d_1 + d_2 + d_3), d/dd_0 = 6 w
    gw, gd = pb.grad(first_then_rest, argnums=(0, 1))(0.5, X)
    np.testing.assert_allclose(gw, 6 * X[0] + 2 * np.sum(X[1:]), rtol=1e-12)
    np.testing.assert_allclose(gd, [3.0, 1.0, 1.0, 1.0], rtol=1e-12)


def next_past_the_end(w, data):
    it = iter([w, w * 2.0])
    return next(it) + next(it) + next(it)


def iterator_passed_on(w, data):
    rows = rows_scaled(data, w)
    first = next(rows)
    return first + sum_of(rows)


def sum_of(xs):
    return sum(xs)


def loop_that_breaks(w, data):
    rows = rows_scaled(data, w)
    first = next(rows)
    for r in rows:
        if r > 1.0:
            break
    return first + next(rows, 0.0)


def test_next_past_the_end_raises_stop_iteration():
    with pytest.raises(StopIteration):
        pb.grad(next_past_the_end)(0.5, X)


@pytest.mark.parametrize("f, line", [(iterator_passed_on, "sum_of(rows)"),
                                     (loop_that_breaks, "for r in rows:")])
def test_other_uses_of_an_iterator_next_reads_are_refused(f, line):
    with pytest.raises(pb.PullbackError) as err:
        pb.grad(f)(0.5, X)
    assert line in str(err.value) and "next()" in str(err.value)


# ------------------------------------------- loops over a dict a call returns, enumerate(d)

def make_dict(x, w):
    d = {"a": x * w, "b": np.sin(x)}
    d["c"] = x ** 2
    return d


def make_dict_comprehension(x, w):
    return {k: x * c + w for k, c in zip("pqr", (1.0, 2.0, 3.0))}


def items_of_a_call(x, w):
    total = 0.0
    for k, v in make_dict(x, w).items():
        total = total + np.sum(v) * len(k) * w
    return total


def keys_of_a_call(x, w):
    total = 0.0
    for k in make_dict(x, w):
        total = total + np.sum(make_dict(x, 2.0)[k] * w)
    return total


def values_of_a_call_comprehension(x, w):
    return sum(np.sum(v * v) for v in make_dict_comprehension(x, w).values())


def enumerate_a_dict(x, w):
    d = {"a": x * 2.0, "b": np.sin(x), "c": w * x}
    total = 0.0
    for i, k in enumerate(d):
        total = total + (i + 1.0) * np.sum(d[k]) * w
    return total


def enumerate_a_dict_a_call_returns(x, w):
    d = make_dict(x, w)
    total = 0.0
    for i, k in enumerate(d, 1):
        if i == 2:
            continue
        total = total + i * np.sum(d[k] ** 2)
    return total + i


def enumerate_items_of_a_call(x, w):
    out = 0.0
    for i, (k, v) in enumerate(make_dict_comprehension(x, w).items()):
        out = out + i * np.sum(np.cos(v))
    return out


@pytest.mark.parametrize("f", [items_of_a_call, keys_of_a_call, values_of_a_call_comprehension,
                               enumerate_a_dict, enumerate_a_dict_a_call_returns,
                               enumerate_items_of_a_call])
def test_loops_over_dicts_both_modes(f):
    check_both_modes(f, X, 0.5)


def test_enumerate_a_dict_exact():
    # 1 * 2 sum(x) w + 2 sum(sin x) w + 3 w^2 sum(x): d/dw = 2 sum(x) + 2 sum(sin x) + 6 w sum(x)
    g = pb.grad(enumerate_a_dict, argnums=1)(X, 0.5)
    np.testing.assert_allclose(g, 2 * np.sum(X) + 2 * np.sum(np.sin(X)) + 3 * np.sum(X),
                               rtol=1e-12)


def enumerate_a_dict_argument(p, w):
    total = 0.0
    for i, k in enumerate(p):
        total = total + i * np.sum(p[k]) * w
    return total


def maybe_a_dict(x, flag):
    if flag:
        return {"a": x}
    return [x, x]


def loop_over_a_call_that_may_return_a_dict(x, w):
    total = 0.0
    for k in maybe_a_dict(x, True):
        total = total + w
    return total


@pytest.mark.parametrize("f, args, line", [
    (enumerate_a_dict_argument, ({"a": X, "b": X * 2}, 0.5), "for i, k in enumerate(p):"),
    (loop_over_a_call_that_may_return_a_dict, (X, 0.5), "for k in maybe_a_dict(x, True):")])
def test_loops_over_a_dict_not_known_from_the_source_are_refused_naming_the_line(f, args, line):
    for run in (lambda: pb.grad(f, argnums=1)(*args),
                lambda: pb.jvp(f, args, (np.zeros_like(X) if f is not enumerate_a_dict_argument
                                         else {"a": X, "b": X}, 1.0))):
        with pytest.raises(pb.PullbackError) as err:
            run()
        assert line in str(err.value) and "items()" in str(err.value)


def counter():
    i = 0
    while True:
        yield i
        i += 1


def indices_from_an_endless_generator(x, w):
    c = counter()
    a = next(c)
    b = next(c)
    return x[a] * x[b] * w


def test_next_on_an_endless_generator_of_indices_runs_as_python():
    # (not read into a list: it may not end) x0 x1 w
    g = check_both_modes(indices_from_an_endless_generator, X, 3.0)
    np.testing.assert_allclose(g[0], [3.0 * X[1], 3.0 * X[0], 0.0, 0.0], rtol=1e-12)
