"""infera.dask: distributed batch scoring on a Dask cluster.

    import dask.dataframe as dd, infera.dask
    ddf = dd.read_parquet("transactions/")              # or read_csv, from_pandas ...
    out = infera.dask.score(ddf, "fraud@production", home="/srv/infera-data")
    out.to_parquet("scores/")                            # or .compute()

Each partition goes through infera.Pipeline.score -- the C pipeline and engine
of `infera batch` -- on the worker that holds it.  A worker process opens a
model (and its spec) once, on its first partition, and keeps it in the
process-wide cache below for every later partition and job; the partitions'
prediction records carry the lineage stamp (model_name, model_version,
pipeline_hash) like every runner's output.  For a registry model the job is
recorded once in the registry's lineage (kind "batch", source "dask:<job>")
by the client, not once per partition.

Rows the pipeline rejects are left out of the predictions; rejects() returns
them (row position, field, reason) so a job can account for every row.
Scaling: partitions are independent, so throughput grows with worker
processes until the source is the bottleneck (docs/scale-out.md).
"""
import os
import threading
import uuid

import pandas

from . import _infera
from .pipeline import Pipeline

# Process-wide cache of opened pipelines, keyed by what opens them: each Dask
# worker process (and the client) opens a model once.  Each entry carries a
# lock held for a whole partition, since a Pipeline keeps the last call's
# accepted/rejected rows (a worker may run several threads).
_OPEN_PIPELINES = {}
_OPEN_LOCK = threading.Lock()


def _pipeline(model, spec, home, url, threads):
    key = (model, spec, home, url, threads)
    with _OPEN_LOCK:
        entry = _OPEN_PIPELINES.get(key)
        if entry is None:
            m = _infera.Model(model, threads=threads, home=home, url=url)
            p = Pipeline(spec, model=m) if spec is not None else Pipeline(model, model=m)
            entry = _OPEN_PIPELINES[key] = (p, threading.Lock())
        return entry


def _score_partition(frame, model, spec, home, url, threads, text):
    p, lock = _pipeline(model, spec, home, url, threads)
    with lock:
        return p.score(frame, text=text, as_frame=True)


def _reject_partition(frame, model, spec, home, url, threads, text):
    p, lock = _pipeline(model, spec, home, url, threads)
    with lock:
        p.features(frame, text=text)
        rows = [(frame.index[i], field, reason) for i, field, reason in p.rejected]
    return pandas.DataFrame.from_records(rows, columns=["row", "field", "reason"])


def _meta(ddf, model, spec, home, url, threads, text):
    """The output's columns and dtypes, from scoring the first rows on the client."""
    head = ddf.head(16, npartitions=-1, compute=True)
    out = _score_partition(head, model, spec, home, url, threads, text)
    return out.iloc[0:0]


def _record_job(model, home, url, job_id):
    """Records the job once in the registry's lineage (registry references only)."""
    from .registry import Registry
    if os.path.exists(model) or "/" in model or model.lower().endswith((".onnx", ".json", ".ubj")):
        return
    reg = Registry(home=home, url=url, create=False)
    resolved = reg.resolve(model)
    reg._r._record_use(resolved["name"], resolved["version"], "batch", "dask:" + job_id, None, job_id)


def score(ddf, model, spec=None, home=None, url=None, threads=1, text=False, record_lineage=True):
    """A lazy Dask DataFrame of prediction records for ddf's rows.

    model: a path or a registry reference (NAME, NAME@VERSION, NAME@ALIAS;
    home/url name the registry, else INFERA_HOME / INFERA_REGISTRY on each
    worker); spec: a spec file (default: the registry entry's spec, or the
    model's default mapping).  text=True types string cells as CSV cells.
    threads: engine threads per worker process (1 lets Dask's processes own
    the cores).  The partitions of the result line up with ddf's."""
    model = os.fspath(model)
    spec = os.fspath(spec) if spec is not None else None
    home = os.fspath(home) if home is not None else None
    args = (model, spec, home, url, threads, bool(text))
    meta = _meta(ddf, *args)
    out = ddf.map_partitions(_score_partition, *args, meta=meta, align_dataframes=False)
    if record_lineage:
        _record_job(model, home, url, "dask-" + uuid.uuid4().hex[:12])
    return out


def rejects(ddf, model, spec=None, home=None, url=None, threads=1, text=False):
    """A lazy Dask DataFrame (row, field, reason) of the rows score() leaves
    out; row is the row's index label in ddf."""
    model = os.fspath(model)
    spec = os.fspath(spec) if spec is not None else None
    args = (model, spec, os.fspath(home) if home is not None else None, url, threads, bool(text))
    meta = pandas.DataFrame({"row": pandas.Series(dtype=ddf.index.dtype), "field": pandas.Series(dtype="object"),
                             "reason": pandas.Series(dtype="object")})
    return ddf.map_partitions(_reject_partition, *args, meta=meta, align_dataframes=False)
