"""The Python half of bench/python/throughput.sh (a file, not stdin: Dask's
worker processes re-import the main module)."""
import sys
import time

import pandas

import infera


def main():
    csv_path, spec, model, cli_ms, rows = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
    cli = rows / (cli_ms / 1000)
    p = infera.Pipeline(spec)
    for kind, frame, text in (("pandas-typed", pandas.read_csv(csv_path), False),
                              ("strings as CSV cells", pandas.read_csv(csv_path, dtype=str, keep_default_na=False),
                               True)):
        best = 0
        for _ in range(2):
            t = time.perf_counter()
            p.features(frame, text=text)
            best = max(best, rows / (time.perf_counter() - t))
        print("features, %d rows: CLI %.0f rows/s (csv file -> npy), Python %.0f rows/s (DataFrame %s -> ndarray): "
              "%.2fx" % (rows, cli, best, kind, best / cli))
    try:
        import dask.dataframe as dd
        import distributed
        import infera.dask as infera_dask
    except ImportError:
        print("dask: not installed (python3-dask, python3-distributed)")
        return
    ddf = dd.from_pandas(pandas.read_csv(csv_path, dtype=str, keep_default_na=False), npartitions=16).persist()
    res = {}
    for workers in (1, 2, 1, 2):
        cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                           dashboard_address=None, silence_logs=40)
        with distributed.Client(cluster):
            part = ddf.persist()
            distributed.wait(part)  # the rows are on the workers before the clock starts (loading is not scoring)
            infera_dask.score(part.partitions[0:workers], model, spec=spec, text=True, record_lineage=False).compute()
            t = time.perf_counter()
            # scored on the workers; only each partition's row count comes back (shipping 1 M prediction
            # rows to the client would measure the client's unpickling, not the scoring)
            scored = infera_dask.score(part, model, spec=spec, text=True, record_lineage=False)
            n = int(scored.map_partitions(len).compute().sum())
            res.setdefault(workers, []).append(n / (time.perf_counter() - t))
        cluster.close()
    one, two = max(res[1]), max(res[2])
    print("dask score, %d rows: 1 worker process %.0f rows/s, 2 worker processes %.0f rows/s: %.2fx"
          % (rows, one, two, two / one))


if __name__ == "__main__":
    main()
