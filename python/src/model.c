/*
 * model.c -- infera.Model: a loaded model and one session over it.
 *
 * Model(ref, threads=1, home=None, url=None, precision="fp32") loads a file path or a registry
 * reference (NAME, NAME@VERSION, NAME@ALIAS; registry from `home` (SQLite),
 * `url` (PostgreSQL) or INFERA_HOME / INFERA_REGISTRY) through the public API and compiles one session.
 * run({"x": ndarray}) binds each input to the array's own memory when it is
 * C-contiguous and of the input's dtype (zero copy), otherwise to a converted
 * copy; the GIL is released during inf_session_run; outputs are copied into
 * new numpy arrays.  Thread safety: the session is guarded by a lock, so
 * threads may share one Model (their runs are serialised); for parallel runs
 * use one Model per thread.  precision="bf16" asks for the session option
 * precision bf16 (MatMul/Gemm in bfloat16, float32 sums; CPUs with
 * AVX512_BF16 only, else an error; docs/sessions.md).
 */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The stamp the runners put on a file model's predictions: the file name up
 * to its first '.', and "sha256:" + the first 12 hex digits of its SHA-256
 * (as src/runtime/model.c does), so score() matches `infera batch`. */
static int stamp_file_model(infpy_model *m, const char *path, inf_error *err)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return inf_error_set(err, INF_EIO, "model '%s': cannot open to hash it", path), -1;
    inf_sha256 c;
    inf_sha256_init(&c);
    unsigned char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        inf_sha256_update(&c, buf, n);
    int bad = ferror(f);
    fclose(f);
    if (bad)
        return inf_error_set(err, INF_EIO, "model '%s': read error", path), -1;
    uint8_t d[32];
    char hex[65];
    inf_sha256_final(&c, d);
    inf_sha256_to_hex(d, hex);
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    snprintf(m->reg_name, sizeof m->reg_name, "%.*s", (int)strcspn(base, "."), base);
    snprintf(m->reg_version, sizeof m->reg_version, "sha256:%.12s", hex);
    return 0;
}

int infpy_model_open(infpy_model *m, const char *ref, const char *home, const char *url, int threads, int precision,
                     inf_error *err)
{
    inf_status st;
    if (inf_registry_ref_is_path(ref)) {
        st = inf_model_load(ref, NULL, &m->model, err);
        if (st == INF_OK && stamp_file_model(m, ref, err) < 0)
            return -1;
    } else {
        inf_registry_options ro;
        inf_registry_options_from_env(&ro);
        if (home != NULL)
            ro.home = home, ro.url = NULL;
        if (url != NULL)
            ro.url = url;
        inf_registry *reg = NULL;
        st = inf_registry_open(&ro, &reg, err);
        if (st == INF_OK) {
            inf_registry_resolved res;
            memset(&res, 0, sizeof res);
            st = inf_registry_load_model(reg, ref, NULL, &m->model, &res, err);
            if (st == INF_OK && res.pipeline != NULL) {
                m->pipeline_json = strdup(res.pipeline);
                if (m->pipeline_json == NULL)
                    st = inf_error_set(err, INF_ENOMEM, "%s: out of memory copying the pipeline spec", ref);
            }
            if (st == INF_OK) {
                snprintf(m->reg_name, sizeof m->reg_name, "%s", res.name);
                snprintf(m->reg_version, sizeof m->reg_version, "%lld", (long long)res.version);
            }
            inf_registry_resolved_clear(&res);
        }
        inf_registry_free(reg);
    }
    if (st != INF_OK)
        return -1;
    inf_session_options so;
    inf_session_options_init(&so);
    so.n_threads = threads;
    so.precision = precision;
    return inf_session_new(m->model, &so, &m->session, err) == INF_OK ? 0 : -1;
}

static int model_init(infpy_model *m, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"ref", "threads", "home", "url", "precision", NULL};
    PyObject *ref_obj = NULL;
    int threads = 1;
    const char *home = NULL, *url = NULL, *precision_name = "fp32";
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|izzs", kwlist, PyUnicode_FSConverter, &ref_obj, &threads, &home,
                                     &url, &precision_name))
        return -1;
    int precision = inf_precision_from_name(precision_name);
    if (precision < 0) {
        Py_DECREF(ref_obj);
        PyErr_Format(PyExc_ValueError, "precision must be \"fp32\" or \"bf16\", got \"%s\"", precision_name);
        return -1;
    }
    if (m->model != NULL) {
        Py_DECREF(ref_obj);
        PyErr_SetString(PyExc_RuntimeError, "Model already initialised");
        return -1;
    }
    const char *ref = PyBytes_AS_STRING(ref_obj);
    m->lock = PyThread_allocate_lock();
    if (m->lock == NULL) {
        Py_DECREF(ref_obj);
        PyErr_NoMemory();
        return -1;
    }
    inf_error err = {0};
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = infpy_model_open(m, ref, home, url, threads, precision, &err);
    Py_END_ALLOW_THREADS
    m->ref = PyUnicode_DecodeFSDefault(ref);
    Py_DECREF(ref_obj);
    if (rc != 0) {
        infpy_raise(&err);
        return -1;
    }
    return 0;
}

static void model_dealloc(infpy_model *m)
{
    inf_session_free(m->session);
    inf_model_free(m->model);
    free(m->pipeline_json);
    if (m->lock)
        PyThread_free_lock(m->lock);
    Py_XDECREF(m->ref);
    Py_TYPE(m)->tp_free((PyObject *)m);
}

static int model_ready(infpy_model *m)
{
    if (m->session == NULL) {
        PyErr_SetString(infpy_Error, "Model is not initialised");
        return 0;
    }
    return 1;
}

int infpy_model_run_locked(infpy_model *m, const inf_tensor *const *inputs, inf_tensor *const **outputs,
                           inf_error *err)
{
    inf_status st;
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(m->lock, WAIT_LOCK);
    st = inf_session_run(m->session, inputs, outputs, err);
    Py_END_ALLOW_THREADS
    if (st != INF_OK) {
        PyThread_release_lock(m->lock);
        return -1;
    }
    return 0;
}

void infpy_model_unlock(infpy_model *m)
{
    PyThread_release_lock(m->lock);
}

/* {"name": value, ...} of the model's outputs, copied; call with the lock held. */
static PyObject *outputs_to_dict(infpy_model *m, inf_tensor *const *outs)
{
    PyObject *result = PyDict_New();
    int n = inf_model_n_outputs(m->model);
    for (int i = 0; result && i < n; i++) {
        PyObject *v = infpy_value_to_python(outs[i]);
        if (v == NULL || PyDict_SetItemString(result, inf_model_output(m->model, i)->name, v) < 0) {
            Py_XDECREF(v);
            Py_CLEAR(result);
            break;
        }
        Py_DECREF(v);
    }
    return result;
}

/* Binds input i to a numpy view of obj: *arr keeps the array alive. */
static int bind_input(infpy_model *m, int i, PyObject *obj, PyArrayObject **arr, inf_tensor *t)
{
    const inf_value_info *info = inf_model_input(m->model, i);
    if (info->kind != INF_KIND_TENSOR || info->dtype == INF_DTYPE_STRING) {
        PyErr_Format(infpy_Error, "input '%s': only numeric tensor inputs are supported from Python", info->name);
        return -1;
    }
    int npy = info->dtype == INF_DTYPE_UNDEFINED ? NPY_NOTYPE : infpy_npy_type(info->dtype);
    if (npy < 0) {
        PyErr_Format(infpy_Error, "input '%s': type %s has no numpy equivalent", info->name,
                     inf_dtype_name(info->dtype));
        return -1;
    }
    PyArray_Descr *descr = npy == NPY_NOTYPE ? NULL : PyArray_DescrFromType(npy);
    *arr = (PyArrayObject *)PyArray_FromAny(obj, descr, 0, 0, NPY_ARRAY_IN_ARRAY | NPY_ARRAY_FORCECAST, NULL);
    if (*arr == NULL)
        return -1;
    inf_dtype dt = infpy_inf_dtype(PyArray_TYPE(*arr));
    int nd = PyArray_NDIM(*arr);
    if (dt == INF_DTYPE_UNDEFINED || nd > INF_MAX_DIMS) {
        PyErr_Format(infpy_Error, "input '%s': unsupported array (dtype or more than %d dimensions)", info->name,
                     INF_MAX_DIMS);
        return -1;
    }
    int64_t dims[INF_MAX_DIMS];
    for (int d = 0; d < nd; d++)
        dims[d] = PyArray_DIM(*arr, d);
    inf_tensor_init_view(t, dt, nd, dims, PyArray_DATA(*arr));
    return 0;
}

static PyObject *model_run(infpy_model *m, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"inputs", NULL};
    PyObject *feeds;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!", kwlist, &PyDict_Type, &feeds) || !model_ready(m))
        return NULL;
    int n = inf_model_n_inputs(m->model);
    if (n > 64) {
        PyErr_SetString(infpy_Error, "models with more than 64 inputs are not supported from Python");
        return NULL;
    }
    PyArrayObject *arrs[64] = {0};
    inf_tensor tensors[64];
    const inf_tensor *ptrs[64];
    PyObject *result = NULL;
    Py_ssize_t used = 0;
    for (int i = 0; i < n; i++) {
        const char *name = inf_model_input(m->model, i)->name;
        PyObject *obj = PyDict_GetItemString(feeds, name);
        ptrs[i] = NULL;
        if (obj == NULL) {
            if (inf_model_input(m->model, i)->is_optional)
                continue;
            PyErr_Format(infpy_Error, "input '%s' is missing (the model's inputs: %d)", name, n);
            goto done;
        }
        used++;
        if (bind_input(m, i, obj, &arrs[i], &tensors[i]) < 0)
            goto done;
        ptrs[i] = &tensors[i];
    }
    if (used != PyDict_GET_SIZE(feeds)) {
        PyErr_Format(infpy_Error, "inputs name %zd values but the model has %d inputs: unknown names given",
                     PyDict_GET_SIZE(feeds), n);
        goto done;
    }
    inf_error err = {0};
    inf_tensor *const *outs;
    if (infpy_model_run_locked(m, ptrs, &outs, &err) < 0) {
        infpy_raise(&err);
        goto done;
    }
    result = outputs_to_dict(m, outs);
    infpy_model_unlock(m);
done:
    for (int i = 0; i < n; i++)
        Py_XDECREF(arrs[i]);
    return result;
}

static PyObject *value_info_dict(const inf_value_info *v)
{
    PyObject *shape = PyList_New(v->ndim < 0 ? 0 : v->ndim);
    for (int d = 0; shape && d < v->ndim; d++) {
        PyObject *dim = v->dims[d] >= 0 ? PyLong_FromLongLong(v->dims[d])
                        : v->dim_names[d] ? PyUnicode_FromString(v->dim_names[d])
                                          : Py_NewRef(Py_None);
        PyList_SET_ITEM(shape, d, dim);
    }
    static const char *kinds[] = {"tensor", "sequence", "map", "none"};
    PyObject *d = Py_BuildValue("{s:s,s:s,s:N,s:s,s:O}", "name", v->name, "dtype", inf_dtype_name(v->dtype), "shape",
                                v->ndim < 0 ? Py_NewRef(Py_None) : shape, "kind",
                                kinds[v->kind < 4 ? v->kind : 0], "optional", v->is_optional ? Py_True : Py_False);
    if (v->ndim < 0)
        Py_XDECREF(shape);
    return d;
}

static PyObject *infos_list(infpy_model *m, int n, const inf_value_info *(*get)(const inf_model *, int))
{
    if (!model_ready(m))
        return NULL;
    PyObject *list = PyList_New(n);
    for (int i = 0; list && i < n; i++) {
        PyObject *d = value_info_dict(get(m->model, i));
        if (d == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, d);
    }
    return list;
}

static PyObject *model_inputs(infpy_model *m, void *unused)
{
    (void)unused;
    return infos_list(m, m->model ? inf_model_n_inputs(m->model) : 0, inf_model_input);
}

static PyObject *model_outputs(infpy_model *m, void *unused)
{
    (void)unused;
    return infos_list(m, m->model ? inf_model_n_outputs(m->model) : 0, inf_model_output);
}

static PyObject *model_repr(infpy_model *m)
{
    return PyUnicode_FromFormat("infera.Model(%R)", m->ref ? m->ref : Py_None);
}

static PyMethodDef model_methods[] = {
    {"run", (PyCFunction)(void (*)(void))model_run, METH_VARARGS | METH_KEYWORDS,
     "run(inputs: dict[str, ndarray]) -> dict[str, ndarray]\n\nRuns the model; the GIL is released during the run."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef model_getset[] = {
    {"inputs", (getter)model_inputs, NULL, "The model's inputs: list of {name, dtype, shape, kind, optional}.", NULL},
    {"outputs", (getter)model_outputs, NULL, "The model's outputs: list of {name, dtype, shape, kind, optional}.",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject infpy_ModelType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "infera.Model",
    .tp_basicsize = sizeof(infpy_model),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Model(ref, threads=1, home=None, url=None, precision=\"fp32\"): an ONNX/XGBoost model file or a "
              "registry reference NAME[@VERSION|@ALIAS], compiled into one session (precision \"bf16\": MatMul/Gemm "
              "in bfloat16 on AVX512_BF16 CPUs).  Runs on one Model are serialised by a lock.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)model_init,
    .tp_dealloc = (destructor)model_dealloc,
    .tp_repr = (reprfunc)model_repr,
    .tp_methods = model_methods,
    .tp_getset = model_getset,
};
