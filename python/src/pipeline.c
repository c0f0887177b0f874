/*
 * pipeline.c -- infera._Pipeline: the C half of infera.Pipeline.
 *
 * Holds an inf_pipeline (a spec file, a registry entry's spec, or the default
 * mapping) over an optional infera.Model, and one executor guarded by a
 * lock.  Records arrive already normalised by the Python layer as a list of
 * column names and a list of row tuples; each cell is typed the way JSON
 * records are (None/NaN -> null, bool, int, float, str; datetime-like values
 * via isoformat()), or, with text=True, strings are typed the way CSV cells
 * are (the CLI's CSV reader: "" -> null, "12" -> int, "1.5" -> float ...),
 * so that CSV rows read in Python give what `infera features` gives.
 *
 *   _prepare(columns, data, text, by_column) -> (features float64 [accepted, n_cols],
 *                                     feature column names, accepted rows, rejected)
 *   _score(columns, data, text, by_column)   -> (prediction column names, prediction rows,
 *                                     accepted rows, rejected)
 * where rejected is a list of (row index, field, message), and data is a
 * list of row tuples, or (by_column, a DataFrame's columns) one 1-D numpy
 * array per column, whose numbers are read without a Python object per cell.
 */
#include "common.h"

#include <math.h>
#include <string.h>

typedef struct {
    PyObject_HEAD
    PyObject *model; /* infpy_model or NULL (features only) */
    inf_pipeline *pipeline;
    inf_pipeline_exec *exec;
    inf_record_batch *in, *out;
    PyThread_type_lock lock;
} infpy_pipeline;

static int pipeline_init(infpy_pipeline *p, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"spec", "model", NULL};
    PyObject *spec_obj = NULL, *model = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O", kwlist, &spec_obj, &model))
        return -1;
    if (p->pipeline != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Pipeline already initialised");
        return -1;
    }
    if (model != Py_None && !PyObject_TypeCheck(model, &infpy_ModelType)) {
        PyErr_SetString(PyExc_TypeError, "model must be an infera.Model or None");
        return -1;
    }
    infpy_model *m = model == Py_None ? NULL : (infpy_model *)model;
    const inf_model *im = m ? m->model : NULL;
    p->lock = PyThread_allocate_lock();
    if (p->lock == NULL || inf_record_batch_new(&p->in) != INF_OK || inf_record_batch_new(&p->out) != INF_OK) {
        PyErr_NoMemory();
        return -1;
    }
    inf_error err = {0};
    inf_status st;
    inf_pipeline_options opts;
    inf_pipeline_options_init(&opts);
    if (m && m->reg_name[0]) { /* stamp predictions with the registry entry, as the runners do */
        opts.model_name = m->reg_name;
        opts.model_version = m->reg_version;
    }
    if (spec_obj == Py_None && m && m->pipeline_json) { /* the registry entry's own spec */
        st = inf_pipeline_load_string(m->pipeline_json, strlen(m->pipeline_json), im, &opts, &p->pipeline, &err);
    } else if (spec_obj == Py_None) {
        if (im == NULL) {
            PyErr_SetString(PyExc_TypeError, "a Pipeline needs a spec, a model, or both");
            return -1;
        }
        st = inf_pipeline_default(im, &opts, &p->pipeline, &err);
    } else {
        PyObject *path = NULL;
        if (!PyUnicode_FSConverter(spec_obj, &path))
            return -1;
        st = inf_pipeline_load(PyBytes_AS_STRING(path), im, &opts, &p->pipeline, &err);
        Py_DECREF(path);
    }
    if (st == INF_OK)
        st = inf_pipeline_exec_new(p->pipeline, &p->exec, &err);
    if (st != INF_OK) {
        infpy_raise(&err);
        return -1;
    }
    if (inf_pipeline_is_default(p->pipeline))
        inf_pipeline_exec_map_each_batch(p->exec, 1);
    p->model = Py_XNewRef(model == Py_None ? NULL : model);
    return 0;
}

static void pipeline_dealloc(infpy_pipeline *p)
{
    inf_pipeline_exec_free(p->exec);
    inf_pipeline_free(p->pipeline);
    inf_record_batch_free(p->in);
    inf_record_batch_free(p->out);
    if (p->lock)
        PyThread_free_lock(p->lock);
    Py_XDECREF(p->model); /* after the pipeline, which borrows the model */
    Py_TYPE(p)->tp_free((PyObject *)p);
}

static int set_str(inf_record_batch *b, int r, int f, PyObject *s, int text)
{
    Py_ssize_t n;
    const char *u = PyUnicode_AsUTF8AndSize(s, &n);
    if (u == NULL)
        return -1;
    return (text ? inf_record_batch_set_text(b, r, f, u, (size_t)n) : inf_record_batch_set_string(b, r, f, u, (size_t)n)) ==
                   INF_OK
               ? 0
               : -2;
}

/* One cell; -1 with a Python error set, -2 out of memory in the batch. */
static int set_cell(inf_record_batch *b, int r, int f, PyObject *v, int text)
{
    if (v == Py_None)
        return 0;
    if (PyBool_Check(v) || PyArray_IsScalar(v, Bool))
        return inf_record_batch_set_bool(b, r, f, PyObject_IsTrue(v)) == INF_OK ? 0 : -2;
    if (PyLong_Check(v) || PyArray_IsScalar(v, Integer)) {
        long long i = PyLong_AsLongLong(v);
        if (i == -1 && PyErr_Occurred())
            return -1;
        return inf_record_batch_set_int(b, r, f, i) == INF_OK ? 0 : -2;
    }
    if (PyFloat_Check(v) || PyArray_IsScalar(v, Floating)) {
        double d = PyFloat_AsDouble(v);
        if (d == -1.0 && PyErr_Occurred())
            return -1;
        if (isnan(d)) /* pandas' missing value */
            return 0;
        return inf_record_batch_set_float(b, r, f, d) == INF_OK ? 0 : -2;
    }
    if (PyUnicode_Check(v))
        return set_str(b, r, f, v, text);
    if (PyBytes_Check(v))
        return inf_record_batch_set_string(b, r, f, PyBytes_AS_STRING(v), (size_t)PyBytes_GET_SIZE(v)) == INF_OK ? 0
                                                                                                                 : -2;
    PyObject *iso = PyObject_CallMethod(v, "isoformat", NULL);
    if (iso == NULL) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "record value of type %s is not supported (None, bool, int, float, str, "
                     "datetime)", Py_TYPE(v)->tp_name);
        return -1;
    }
    int rc = PyUnicode_Check(iso) ? set_str(b, r, f, iso, 0) : -1;
    if (rc == -1 && !PyErr_Occurred())
        PyErr_SetString(PyExc_TypeError, "isoformat() did not return a str");
    Py_DECREF(iso);
    return rc;
}

/* Declares the batch's fields (the id field first when the spec has one);
 * field[c] receives column c's field index. */
static int declare_fields(infpy_pipeline *p, PyObject *columns, int *field)
{
    inf_record_batch_clear(p->in);
    const char *id = inf_pipeline_id_column(p->pipeline);
    if (id && inf_record_batch_set_id_field(p->in, id) != INF_OK)
        return PyErr_NoMemory(), -1;
    for (Py_ssize_t c = 0; c < PyList_GET_SIZE(columns); c++) {
        const char *name = PyUnicode_AsUTF8(PyList_GET_ITEM(columns, c));
        if (name == NULL)
            return -1;
        if (inf_record_batch_add_field(p->in, name, &field[c]) != INF_OK)
            return PyErr_NoMemory(), -1;
    }
    return 0;
}

/* Row-major records: rows is a list of sequences, cell c under columns[c]. */
static int fill_rows(infpy_pipeline *p, const int *field, Py_ssize_t nc, PyObject *rows, int text)
{
    for (Py_ssize_t r = 0; r < PyList_GET_SIZE(rows); r++) {
        PyObject *row = PySequence_Fast(PyList_GET_ITEM(rows, r), "a row must be a sequence");
        if (row == NULL)
            return -1;
        int ri, rc = inf_record_batch_add_row(p->in, &ri) == INF_OK ? 0 : -2;
        Py_ssize_t n = PySequence_Fast_GET_SIZE(row);
        for (Py_ssize_t c = 0; rc == 0 && c < n && c < nc; c++)
            rc = set_cell(p->in, ri, field[c], PySequence_Fast_GET_ITEM(row, c), text);
        Py_DECREF(row);
        if (rc == -2)
            return PyErr_NoMemory(), -1;
        if (rc < 0)
            return -1;
    }
    return 0;
}

/* One column given as a 1-D numpy array (a DataFrame's column): numbers and
 * booleans are read from the array's memory without a Python object per
 * cell; object arrays go cell by cell like rows do. */
static int fill_column(infpy_pipeline *p, int f, PyArrayObject *a, int text)
{
    npy_intp n = PyArray_DIM(a, 0);
    int type = PyArray_TYPE(a), rc = 0;
    for (npy_intp r = 0; rc == 0 && r < n; r++) {
        const char *cell = PyArray_GETPTR1(a, r);
        switch (type) {
        case NPY_FLOAT64: {
            double d;
            memcpy(&d, cell, sizeof d);
            rc = isnan(d) ? 0 : inf_record_batch_set_float(p->in, (int)r, f, d) == INF_OK ? 0 : -2;
            break;
        }
        case NPY_FLOAT32: {
            float d;
            memcpy(&d, cell, sizeof d);
            rc = isnan(d) ? 0 : inf_record_batch_set_float(p->in, (int)r, f, d) == INF_OK ? 0 : -2;
            break;
        }
        case NPY_INT64: {
            int64_t i;
            memcpy(&i, cell, sizeof i);
            rc = inf_record_batch_set_int(p->in, (int)r, f, i) == INF_OK ? 0 : -2;
            break;
        }
        case NPY_INT32: {
            int32_t i;
            memcpy(&i, cell, sizeof i);
            rc = inf_record_batch_set_int(p->in, (int)r, f, i) == INF_OK ? 0 : -2;
            break;
        }
        case NPY_BOOL:
            rc = inf_record_batch_set_bool(p->in, (int)r, f, *cell != 0) == INF_OK ? 0 : -2;
            break;
        case NPY_OBJECT: {
            PyObject *v;
            memcpy(&v, cell, sizeof v);
            rc = set_cell(p->in, (int)r, f, v, text);
            break;
        }
        default: { /* other dtypes (datetime64, unsigned, ...): through the scalar object */
            PyObject *v = PyArray_GETITEM(a, cell);
            rc = v ? set_cell(p->in, (int)r, f, v, text) : -1;
            Py_XDECREF(v);
        }
        }
    }
    if (rc == -2)
        return PyErr_NoMemory(), -1;
    return rc;
}

/* Column-major records: data is a list of 1-D arrays of one length. */
static int fill_columns(infpy_pipeline *p, const int *field, Py_ssize_t nc, PyObject *data, int text)
{
    if (PyList_GET_SIZE(data) != nc) {
        PyErr_SetString(PyExc_ValueError, "one array per column is needed");
        return -1;
    }
    npy_intp nr = 0;
    for (Py_ssize_t c = 0; c < nc; c++) {
        PyObject *a = PyList_GET_ITEM(data, c);
        if (!PyArray_Check(a) || PyArray_NDIM((PyArrayObject *)a) != 1 ||
            (c > 0 && PyArray_DIM((PyArrayObject *)a, 0) != nr)) {
            PyErr_SetString(PyExc_ValueError, "columns must be 1-D arrays of one length");
            return -1;
        }
        nr = PyArray_DIM((PyArrayObject *)a, 0);
    }
    if (nr > INT32_MAX / 2) {
        PyErr_SetString(PyExc_ValueError, "too many records in one call");
        return -1;
    }
    for (npy_intp r = 0; r < nr; r++) {
        int ri;
        if (inf_record_batch_add_row(p->in, &ri) != INF_OK)
            return PyErr_NoMemory(), -1;
    }
    for (Py_ssize_t c = 0; c < nc; c++)
        if (fill_column(p, field[c], (PyArrayObject *)PyList_GET_ITEM(data, c), text) < 0)
            return -1;
    return 0;
}

/* Fills p->in from columns (list of str) and data: a list of row sequences,
 * or (by_column) a list of one 1-D array per column. */
static int fill_batch(infpy_pipeline *p, PyObject *columns, PyObject *data, int text, int by_column)
{
    Py_ssize_t nc = PyList_GET_SIZE(columns);
    if (!by_column && PyList_GET_SIZE(data) > INT32_MAX / 2) {
        PyErr_SetString(PyExc_ValueError, "too many records in one call");
        return -1;
    }
    int *field = PyMem_Calloc(nc > 0 ? (size_t)nc : 1, sizeof *field);
    if (field == NULL)
        return PyErr_NoMemory(), -1;
    int rc = declare_fields(p, columns, field);
    if (rc == 0)
        rc = by_column ? fill_columns(p, field, nc, data, text) : fill_rows(p, field, nc, data, text);
    PyMem_Free(field);
    return rc;
}

static PyObject *rejected_list(infpy_pipeline *p)
{
    int n = inf_pipeline_n_rejected(p->exec);
    PyObject *list = PyList_New(n);
    for (int i = 0; list && i < n; i++) {
        const char *field, *msg;
        int row = inf_pipeline_rejected(p->exec, i, &field, &msg);
        PyObject *t = Py_BuildValue("(izs)", row, field, msg);
        if (t == NULL) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, i, t);
    }
    return list;
}

static PyObject *accepted_list(infpy_pipeline *p)
{
    int n = inf_pipeline_n_accepted(p->exec);
    PyObject *list = PyList_New(n);
    for (int k = 0; list && k < n; k++)
        PyList_SET_ITEM(list, k, PyLong_FromLong(inf_pipeline_accepted_row(p->exec, k)));
    return list;
}

/* Parses (columns, data, text, by_column), fills the batch and prepares it;
 * the pipeline lock is held on success (the caller releases it). */
static int prepare_locked(infpy_pipeline *p, PyObject *args, const inf_tensor *const **inputs)
{
    PyObject *columns, *rows;
    int text = 0, by_column = 0;
    if (!PyArg_ParseTuple(args, "O!O!|pp", &PyList_Type, &columns, &PyList_Type, &rows, &text, &by_column))
        return -1;
    if (p->exec == NULL) {
        PyErr_SetString(infpy_Error, "Pipeline is not initialised");
        return -1;
    }
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(p->lock, WAIT_LOCK);
    Py_END_ALLOW_THREADS
    if (fill_batch(p, columns, rows, text, by_column) < 0) {
        PyThread_release_lock(p->lock);
        return -1;
    }
    inf_error err = {0};
    inf_status st;
    Py_BEGIN_ALLOW_THREADS
    st = inf_pipeline_prepare(p->exec, p->in, inputs, &err);
    Py_END_ALLOW_THREADS
    if (st != INF_OK) {
        PyThread_release_lock(p->lock);
        infpy_raise(&err);
        return -1;
    }
    return 0;
}

/* The feature matrix as `infera features` writes it: the records of
 * inf_pipeline_features_to_records (each value cast through its model
 * input's dtype, as the model receives it), as float64; null = NaN. */
static PyObject *features_array(infpy_pipeline *p, PyObject **names, inf_error *err)
{
    inf_record_batch_reset(p->out);
    if (inf_pipeline_features_to_records(p->exec, p->out, err) != INF_OK)
        return infpy_raise(err);
    int nf = inf_pipeline_exec_n_feature_columns(p->exec), nr = inf_record_batch_n_rows(p->out);
    npy_intp dims[2] = {nr, nf};
    PyObject *arr = PyArray_SimpleNew(2, dims, NPY_FLOAT64);
    *names = PyList_New(nf);
    if (arr == NULL || *names == NULL) {
        Py_XDECREF(arr);
        Py_CLEAR(*names);
        return NULL;
    }
    double *x = PyArray_DATA((PyArrayObject *)arr);
    for (int c = 0; c < nf; c++) {
        const char *name = inf_pipeline_exec_feature_column(p->exec, c);
        PyList_SET_ITEM(*names, c, PyUnicode_FromString(name));
        int f = inf_record_batch_find_field(p->out, name);
        for (int r = 0; r < nr; r++) {
            double v = NAN;
            if (f < 0 || inf_value_to_double(inf_record_batch_get(p->out, r, f), &v) != 0)
                v = NAN;
            x[(size_t)r * (size_t)nf + (size_t)c] = v;
        }
    }
    return arr;
}

static PyObject *pipeline_prepare(infpy_pipeline *p, PyObject *args)
{
    if (prepare_locked(p, args, NULL) < 0)
        return NULL;
    inf_error err = {0};
    PyObject *names = NULL;
    PyObject *arr = features_array(p, &names, &err);
    PyObject *result = arr ? Py_BuildValue("(OONN)", arr, names, accepted_list(p), rejected_list(p)) : NULL;
    PyThread_release_lock(p->lock);
    Py_XDECREF(arr);
    Py_XDECREF(names);
    return result;
}

static PyObject *value_to_python(const inf_value *v)
{
    char buf[40];
    switch (v->type) {
    case INF_FIELD_BOOL: return PyBool_FromLong(v->u.b);
    case INF_FIELD_INT: return PyLong_FromLongLong(v->u.i);
    case INF_FIELD_FLOAT: return PyFloat_FromDouble(v->u.f);
    case INF_FIELD_STRING: return PyUnicode_DecodeUTF8(v->u.s.ptr, v->u.s.len, "replace");
    case INF_FIELD_TIMESTAMP: return PyUnicode_FromString(inf_format_timestamp(v->u.ts, buf, sizeof buf));
    default: Py_RETURN_NONE;
    }
}

static PyObject *batch_to_python(const inf_record_batch *b)
{
    int nf = inf_record_batch_n_fields(b), nr = inf_record_batch_n_rows(b);
    PyObject *names = PyList_New(nf), *rows = PyList_New(nr);
    for (int f = 0; names && f < nf; f++)
        PyList_SET_ITEM(names, f, PyUnicode_FromString(inf_record_batch_field_name(b, f)));
    for (int r = 0; rows && r < nr; r++) {
        PyObject *row = PyTuple_New(nf);
        for (int f = 0; row && f < nf; f++)
            PyTuple_SET_ITEM(row, f, value_to_python(inf_record_batch_get(b, r, f)));
        PyList_SET_ITEM(rows, r, row);
    }
    if (names == NULL || rows == NULL || PyErr_Occurred()) {
        Py_XDECREF(names);
        Py_XDECREF(rows);
        return NULL;
    }
    return Py_BuildValue("(NN)", names, rows);
}

static PyObject *pipeline_score(infpy_pipeline *p, PyObject *args)
{
    if (p->model == NULL) {
        PyErr_SetString(infpy_Error, "score needs a model: Pipeline(spec, model=...) or Pipeline(model_ref)");
        return NULL;
    }
    const inf_tensor *const *x;
    if (prepare_locked(p, args, &x) < 0)
        return NULL;
    infpy_model *m = (infpy_model *)p->model;
    inf_error err = {0};
    PyObject *preds = NULL;
    inf_record_batch_reset(p->out);
    if (inf_pipeline_n_accepted(p->exec) > 0) {
        inf_tensor *const *y;
        if (infpy_model_run_locked(m, x, &y, &err) < 0) {
            PyThread_release_lock(p->lock);
            return infpy_raise(&err);
        }
        inf_status st = inf_pipeline_finish(p->exec, y, p->out, &err);
        infpy_model_unlock(m);
        if (st != INF_OK) {
            PyThread_release_lock(p->lock);
            return infpy_raise(&err);
        }
    }
    preds = batch_to_python(p->out);
    PyObject *result = preds ? Py_BuildValue("(NNN)", preds, accepted_list(p), rejected_list(p)) : NULL;
    PyThread_release_lock(p->lock);
    return result;
}

static PyObject *pipeline_info(infpy_pipeline *p, PyObject *unused)
{
    (void)unused;
    if (p->pipeline == NULL) {
        PyErr_SetString(infpy_Error, "Pipeline is not initialised");
        return NULL;
    }
    const char *id = inf_pipeline_id_column(p->pipeline);
    return Py_BuildValue("{s:s,s:s,s:z,s:O}", "name", inf_pipeline_name(p->pipeline), "hash",
                         inf_pipeline_hash(p->pipeline), "id_column", id, "default",
                         inf_pipeline_is_default(p->pipeline) ? Py_True : Py_False);
}

static PyMethodDef pipeline_methods[] = {
    {"_prepare", (PyCFunction)pipeline_prepare, METH_VARARGS,
     "_prepare(columns, rows, text=False) -> (features, feature_columns, accepted, rejected)"},
    {"_score", (PyCFunction)pipeline_score, METH_VARARGS,
     "_score(columns, rows, text=False) -> ((columns, rows), accepted, rejected)"},
    {"_info", (PyCFunction)pipeline_info, METH_NOARGS, "_info() -> {name, hash, id_column, default}"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject infpy_PipelineType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "infera._Pipeline",
    .tp_basicsize = sizeof(infpy_pipeline),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "_Pipeline(spec_path_or_None, model=None): the C half of infera.Pipeline.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)pipeline_init,
    .tp_dealloc = (destructor)pipeline_dealloc,
    .tp_methods = pipeline_methods,
};
