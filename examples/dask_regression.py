"""Logistic regression on a Dask cluster: the gradient of the negative
log-likelihood over a dataset in 8 chunks, computed by two worker processes.

The loss is ordinary NumPy code.  Given chunked ``dask.array`` data,
``pb.grad`` returns lazy dask arrays (building the graph, computing
nothing); ``client.compute`` runs them on the cluster.  The weights stay
NumPy arrays (and ``b`` a Python float); their gradients are lazy too,
because they are sums over the chunked batch.  Needs the ``dask`` extra (``pip install 'pullback[dask]'``):

    python examples/dask_regression.py
"""
import warnings

import numpy as np

import pullback as pb


def nll(w, b, x, y):
    """Mean negative log-likelihood of labels ``y`` (0 or 1) under
    ``sigmoid(x @ w + b)``, written stably with ``logaddexp``."""
    z = x @ w + b
    return np.mean(np.logaddexp(0.0, z) - y * z)


def main(rows=400_000, features=16, chunk=50_000):
    import dask.array as da
    from dask.distributed import Client, LocalCluster, get_task_stream

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # the dashboard's port, if taken
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                               dashboard_address=None)
        client = Client(cluster)
    try:
        # the dataset: made on the workers, chunk by chunk (never in this process)
        rs = da.random.RandomState(0)
        x = rs.normal(size=(rows, features), chunks=(chunk, features)).persist()
        w_true = np.linspace(-1.0, 1.0, features)
        y = (rs.uniform(size=rows, chunks=chunk) < 1 / (1 + np.exp(-(x @ w_true)))) * 1.0
        y = y.persist()
        print(f"data: {rows:,} x {features} floats ({x.nbytes / 2**20:.0f} MiB) in "
              f"{x.numblocks[0]} chunks on {len(client.scheduler_info()['workers'])} workers")

        w, b = np.zeros(features), 0.0
        gw, gb = pb.grad(nll, argnums=(0, 1))(w, b, x, y)      # lazy: nothing computed yet
        print(f"pb.grad returned lazy {type(gw).__module__}.{type(gw).__name__}s: "
              f"{gw.shape} for w, {gb.shape} for the Python float b")
        with get_task_stream(client) as stream:
            gw, gb = client.compute([gw, gb], sync=True)
        print("gradient wrt w:", np.array2string(gw, precision=4, max_line_width=100))
        print(f"gradient wrt b: {gb:.6f}")
        ran = {}
        for task in stream.data:
            ran[task["worker"]] = ran.get(task["worker"], 0) + 1
        for worker, n in sorted(ran.items()):
            print(f"  {n:4d} tasks ran on worker {worker}")

        # the same gradient on NumPy arrays, to compare
        xn, yn = client.compute([x, y], sync=True)
        want = pb.grad(nll, argnums=(0, 1))(w, b, xn, yn)
        err = max(np.max(np.abs(gw - want[0])), abs(gb - want[1]))
        print(f"max |dask - numpy| = {err:.1e}")
        return err, ran
    finally:
        client.close()
        cluster.close()


if __name__ == "__main__":
    main()
