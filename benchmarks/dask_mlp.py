"""The Dask row (issue 18): the MLP gradient (``problems.mlp``) over a batch
split into 4 chunks on a ``dask.distributed`` cluster of 2 worker processes,
against the same gradient on NumPy arrays in this process.

    python benchmarks/dask_mlp.py            # 4,096 x 784 batch, 256 hidden, 10 classes
    python benchmarks/dask_mlp.py --quick    # 1,024 x 784

Also timed: the same lazy gradient computed in this process by Dask's
threaded scheduler (what the cluster adds is then the difference).  The
batch (``x``, ``y``) is persisted on the workers first, as a cluster's
dataset is; the weights travel with each graph.  A Dask call is
``pb.grad`` on the dask arrays (it builds the lazy gradient graph: no
computing) and ``client.compute`` of the four gradients; both are timed,
the build apart.  The gradients are checked against NumPy's (1e-10), and the
task stream says which workers ran the tasks.  Every thread pool is pinned
to one thread, on the workers too, so that 2 workers use 2 cores and NumPy 1.
The last line (``@@ {json}``) is what ``run.py`` reads.
"""
from __future__ import annotations

import os

for _k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_k, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "src"))

import pullback as pb  # noqa: E402
from problems import mlp  # noqa: E402


def data(batch, hidden=256, classes=10, features=784, seed=0):
    rng = np.random.default_rng(seed)
    w1 = rng.normal(size=(features, hidden)) / np.sqrt(features)
    b1 = rng.normal(size=hidden) * 0.1
    w2 = rng.normal(size=(hidden, classes)) / np.sqrt(hidden)
    b2 = rng.normal(size=classes) * 0.1
    x = rng.normal(size=(batch, features))
    y = np.eye(classes)[rng.integers(0, classes, batch)]
    return w1, b1, w2, b2, x, y


def median_time(call, budget, least=3):
    times, start = [], time.perf_counter()
    while len(times) < least or time.perf_counter() - start < budget:
        t = time.perf_counter()
        call()
        times.append(time.perf_counter() - t)
    return statistics.median(times), len(times)


def measure(batch, budget):
    import dask
    import dask.array as da
    from dask.distributed import Client, LocalCluster, get_task_stream

    args = data(batch)
    grad = pb.grad(mlp, argnums=(0, 1, 2, 3))
    want = grad(*args)
    numpy_t, numpy_n = median_time(lambda: grad(*args), budget)
    w1, b1, w2, b2, x, y = args
    chunk = batch // 4
    local = (w1, b1, w2, b2, da.from_array(x, chunks=(chunk, x.shape[1])),
             da.from_array(y, chunks=(chunk, y.shape[1])))
    threads_t, _ = median_time(lambda: dask.compute(*grad(*local), scheduler="threads"),
                               budget / 2)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                               dashboard_address=None)
        client = Client(cluster)
    try:
        xd = da.from_array(x, chunks=(chunk, x.shape[1])).persist()
        yd = da.from_array(y, chunks=(chunk, y.shape[1])).persist()
        dask.distributed.wait([xd, yd])
        dargs = (w1, b1, w2, b2, xd, yd)

        def dask_call():
            return client.compute(list(grad(*dargs)), sync=True)
        got = dask_call()                                # warm: the transform, the workers
        err = max(float(np.max(np.abs(g - w))) for g, w in zip(got, want))
        build_t, _ = median_time(lambda: grad(*dargs), budget / 4)
        with get_task_stream(client) as stream:
            dask_t, dask_n = median_time(dask_call, budget)
        per_worker = {}
        for task in stream.data:
            per_worker[task["worker"]] = per_worker.get(task["worker"], 0) + 1
    finally:
        client.close()
        cluster.close()
    return {"batch": batch, "chunks": 4, "workers": 2, "numpy": numpy_t, "numpy_calls": numpy_n,
            "dask": dask_t, "dask_calls": dask_n, "build": build_t, "threads": threads_t,
            "max_abs_error": err, "ok": err < 1e-10,
            "tasks_per_worker": sorted(per_worker.values(), reverse=True)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="a 1,024-row batch, short timings")
    a = ap.parse_args()
    batch, budget = (1024, 2.0) if a.quick else (4096, 6.0)
    r = measure(batch, budget)
    print(f"MLP gradient, {r['batch']} x 784 batch, 256 hidden: NumPy {r['numpy'] * 1e3:.1f} ms, "
          f"Dask (4 chunks, 2 workers) {r['dask'] * 1e3:.1f} ms "
          f"(graph build {r['build'] * 1e3:.1f} ms; in-process threads "
          f"{r['threads'] * 1e3:.1f} ms), ratio {r['dask'] / r['numpy']:.2f}; "
          f"tasks per worker {r['tasks_per_worker']}; max |error| {r['max_abs_error']:.1e}",
          file=sys.stderr)
    print("@@ " + json.dumps(r))


if __name__ == "__main__":
    main()
