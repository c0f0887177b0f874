/*
 * registry.c -- the _Registry type: a handle on Infera's model registry
 * (include/infera/registry.h) for Python.  It is a thin layer: each method
 * calls one registry function with the GIL released and returns its result as
 * Python values (JSON views as text; infera/registry.py parses them and adds
 * registering from in-memory bytes).  Every registry rule -- access control,
 * audit, validation of the model and its spec -- is the C library's, so a
 * notebook registers exactly what `infera registry register` would.
 */
#include "common.h"

#include <string.h>

typedef struct infpy_registry {
    PyObject_HEAD
    inf_registry *registry;
    PyThread_type_lock lock; /* one call at a time on the handle (it holds one database connection) */
} infpy_registry;

static int registry_init(infpy_registry *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"home", "url", "token", "create", NULL};
    const char *home = NULL, *url = NULL, *token = NULL;
    int create = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|zzzp", kwlist, &home, &url, &token, &create))
        return -1;
    if (self->registry != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Registry already initialised");
        return -1;
    }
    self->lock = PyThread_allocate_lock();
    if (self->lock == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    inf_registry_options o;
    inf_registry_options_from_env(&o);
    if (home != NULL)
        o.home = home, o.url = NULL;
    if (url != NULL)
        o.url = url;
    if (token != NULL)
        o.token = token;
    o.create = create;
    inf_error err = {0};
    inf_status st;
    Py_BEGIN_ALLOW_THREADS
    st = inf_registry_open(&o, &self->registry, &err);
    Py_END_ALLOW_THREADS
    if (st != INF_OK) {
        infpy_raise(&err);
        return -1;
    }
    return 0;
}

static void registry_dealloc(infpy_registry *self)
{
    inf_registry_free(self->registry);
    if (self->lock)
        PyThread_free_lock(self->lock);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int ready(infpy_registry *self)
{
    if (self->registry != NULL)
        return 1;
    PyErr_SetString(PyExc_RuntimeError, "Registry is not initialised");
    return 0;
}

/* Runs call(self->registry, a, b, &out, &err) under the handle's lock with the
 * GIL released; returns the JSON text it produced as str. */
typedef inf_status (*json_view_fn)(inf_registry *r, const char *arg, char **out, inf_error *err);

static inf_status list_view(inf_registry *r, const char *unused, char **out, inf_error *err)
{
    (void)unused;
    return inf_registry_list_json(r, out, err);
}

static PyObject *json_view(infpy_registry *self, json_view_fn fn, const char *arg)
{
    if (!ready(self))
        return NULL;
    char *out = NULL;
    inf_error err = {0};
    inf_status st;
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(self->lock, WAIT_LOCK);
    st = fn(self->registry, arg, &out, &err);
    PyThread_release_lock(self->lock);
    Py_END_ALLOW_THREADS
    if (st != INF_OK)
        return infpy_raise(&err);
    PyObject *text = PyUnicode_FromString(out ? out : "null");
    inf_registry_string_free(out);
    return text;
}

static PyObject *registry_list_json(infpy_registry *self, PyObject *unused)
{
    (void)unused;
    return json_view(self, list_view, NULL);
}

static PyObject *registry_show_json(infpy_registry *self, PyObject *args)
{
    const char *ref;
    if (!PyArg_ParseTuple(args, "s", &ref))
        return NULL;
    return json_view(self, inf_registry_show_json, ref);
}

static PyObject *registry_versions_json(infpy_registry *self, PyObject *args)
{
    const char *name;
    if (!PyArg_ParseTuple(args, "s", &name))
        return NULL;
    return json_view(self, inf_registry_versions_json, name);
}

static PyObject *registry_lineage_json(infpy_registry *self, PyObject *args)
{
    const char *ref;
    if (!PyArg_ParseTuple(args, "s", &ref))
        return NULL;
    return json_view(self, inf_registry_lineage_json, ref);
}

/* A {str: str} dict -> kv array borrowing the dict's UTF-8 buffers (valid
 * while the dict lives and is not changed).  Values are str()-ed first for
 * metrics given as numbers; *keep holds those temporaries. */
static int dict_to_kv(PyObject *dict, const char *what, inf_registry_kv **kv, int *n, PyObject **keep)
{
    *kv = NULL, *n = 0, *keep = NULL;
    if (dict == NULL || dict == Py_None)
        return 0;
    if (!PyDict_Check(dict)) {
        PyErr_Format(PyExc_TypeError, "%s must be a dict", what);
        return -1;
    }
    Py_ssize_t size = PyDict_Size(dict), pos = 0, i = 0;
    *keep = PyList_New(0);
    *kv = PyMem_Calloc(size > 0 ? (size_t)size : 1, sizeof **kv);
    if (*keep == NULL || *kv == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    PyObject *key, *value;
    while (PyDict_Next(dict, &pos, &key, &value)) {
        PyObject *k = PyObject_Str(key), *v = PyObject_Str(value);
        if (k == NULL || v == NULL || PyList_Append(*keep, k) < 0 || PyList_Append(*keep, v) < 0) {
            Py_XDECREF(k);
            Py_XDECREF(v);
            return -1;
        }
        (*kv)[i].key = PyUnicode_AsUTF8(k);
        (*kv)[i].value = PyUnicode_AsUTF8(v);
        Py_DECREF(k);
        Py_DECREF(v);
        if ((*kv)[i].key == NULL || (*kv)[i].value == NULL)
            return -1;
        i++;
    }
    *n = (int)i;
    return 0;
}

static PyObject *registry_register(infpy_registry *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"name", "model_path", "pipeline_path", "description", "training_data",
                             "meta", "metrics", "derived_from", NULL};
    const char *name, *model_path, *pipeline_path = NULL, *description = NULL, *training_data = NULL,
                                   *derived_from = NULL;
    PyObject *meta = NULL, *metrics = NULL;
    if (!ready(self) || !PyArg_ParseTupleAndKeywords(args, kw, "ss|zzzOOz", kwlist, &name, &model_path,
                                                     &pipeline_path, &description, &training_data, &meta,
                                                     &metrics, &derived_from))
        return NULL;
    inf_registry_register_info info;
    memset(&info, 0, sizeof info);
    info.model_path = model_path, info.pipeline_path = pipeline_path, info.description = description;
    info.training_data = training_data, info.derived_from = derived_from;
    inf_registry_kv *meta_kv = NULL, *metric_kv = NULL;
    PyObject *keep_meta = NULL, *keep_metrics = NULL, *result = NULL;
    if (dict_to_kv(meta, "meta", &meta_kv, &info.n_meta, &keep_meta) == 0 &&
        dict_to_kv(metrics, "metrics", &metric_kv, &info.n_metrics, &keep_metrics) == 0) {
        info.meta = meta_kv, info.metrics = metric_kv;
        int64_t version = 0;
        inf_error err = {0};
        inf_status st;
        Py_BEGIN_ALLOW_THREADS
        PyThread_acquire_lock(self->lock, WAIT_LOCK);
        st = inf_registry_register(self->registry, name, &info, &version, &err);
        PyThread_release_lock(self->lock);
        Py_END_ALLOW_THREADS
        result = st == INF_OK ? PyLong_FromLongLong(version) : infpy_raise(&err);
    }
    PyMem_Free(meta_kv);
    PyMem_Free(metric_kv);
    Py_XDECREF(keep_meta);
    Py_XDECREF(keep_metrics);
    return result;
}

static PyObject *registry_resolve(infpy_registry *self, PyObject *args)
{
    const char *ref;
    if (!ready(self) || !PyArg_ParseTuple(args, "s", &ref))
        return NULL;
    inf_registry_resolved v;
    memset(&v, 0, sizeof v);
    inf_error err = {0};
    inf_status st;
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(self->lock, WAIT_LOCK);
    st = inf_registry_resolve(self->registry, ref, &v, &err);
    PyThread_release_lock(self->lock);
    Py_END_ALLOW_THREADS
    if (st != INF_OK)
        return infpy_raise(&err);
    PyObject *out = Py_BuildValue("{s:s,s:L,s:z,s:s,s:s,s:z}", "name", v.name, "version", (long long)v.version,
                                  "alias", v.alias[0] ? v.alias : NULL, "sha256", v.sha256, "artifact_path",
                                  v.artifact_path, "pipeline", v.pipeline);
    inf_registry_resolved_clear(&v);
    return out;
}

static PyObject *registry_alias_set(infpy_registry *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"name", "version", "alias", "protect", NULL};
    const char *name, *alias;
    long long version;
    int protect = -1;
    if (!ready(self) || !PyArg_ParseTupleAndKeywords(args, kw, "sLs|i", kwlist, &name, &version, &alias, &protect))
        return NULL;
    inf_error err = {0};
    inf_status st;
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(self->lock, WAIT_LOCK);
    st = inf_registry_alias_set(self->registry, name, (int64_t)version, alias, protect, &err);
    PyThread_release_lock(self->lock);
    Py_END_ALLOW_THREADS
    if (st != INF_OK)
        return infpy_raise(&err);
    Py_RETURN_NONE;
}

static PyObject *registry_alias_remove(infpy_registry *self, PyObject *args)
{
    const char *name, *alias;
    if (!ready(self) || !PyArg_ParseTuple(args, "ss", &name, &alias))
        return NULL;
    inf_error err = {0};
    inf_status st;
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(self->lock, WAIT_LOCK);
    st = inf_registry_alias_remove(self->registry, name, alias, &err);
    PyThread_release_lock(self->lock);
    Py_END_ALLOW_THREADS
    if (st != INF_OK)
        return infpy_raise(&err);
    Py_RETURN_NONE;
}

static PyObject *registry_record_use(infpy_registry *self, PyObject *args)
{
    const char *name, *kind, *source, *destination = NULL, *job_id = NULL;
    long long version;
    if (!ready(self) || !PyArg_ParseTuple(args, "sLss|zz", &name, &version, &kind, &source, &destination, &job_id))
        return NULL;
    inf_registry_use use = {name, (int64_t)version, kind, source, destination, job_id};
    inf_error err = {0};
    inf_status st;
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(self->lock, WAIT_LOCK);
    st = inf_registry_record_use(self->registry, &use, &err);
    PyThread_release_lock(self->lock);
    Py_END_ALLOW_THREADS
    if (st != INF_OK)
        return infpy_raise(&err);
    Py_RETURN_NONE;
}

static PyObject *registry_info(infpy_registry *self, PyObject *unused)
{
    (void)unused;
    if (!ready(self))
        return NULL;
    return Py_BuildValue("{s:s,s:z,s:O}", "location", inf_registry_location(self->registry), "principal",
                         inf_registry_principal(self->registry), "auth",
                         inf_registry_auth_enabled(self->registry) ? Py_True : Py_False);
}

static PyMethodDef registry_methods[] = {
    {"_list_json", (PyCFunction)registry_list_json, METH_NOARGS, "list() as JSON text"},
    {"_show_json", (PyCFunction)registry_show_json, METH_VARARGS, "show(ref) as JSON text"},
    {"_versions_json", (PyCFunction)registry_versions_json, METH_VARARGS, "versions(name) as JSON text"},
    {"_lineage_json", (PyCFunction)registry_lineage_json, METH_VARARGS, "lineage(ref) as JSON text"},
    {"_register", (PyCFunction)(void (*)(void))registry_register, METH_VARARGS | METH_KEYWORDS,
     "register(name, model_path, ...) -> new version"},
    {"resolve", (PyCFunction)registry_resolve, METH_VARARGS,
     "resolve(ref) -> {name, version, alias, sha256, artifact_path, pipeline}"},
    {"_alias_set", (PyCFunction)(void (*)(void))registry_alias_set, METH_VARARGS | METH_KEYWORDS,
     "point alias at name@version"},
    {"_alias_remove", (PyCFunction)registry_alias_remove, METH_VARARGS, "remove name's alias"},
    {"_record_use", (PyCFunction)registry_record_use, METH_VARARGS,
     "_record_use(name, version, kind, source, destination=None, job_id=None): a lineage use"},
    {"_info", (PyCFunction)registry_info, METH_NOARGS, "{location, principal, auth}"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject infpy_RegistryType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "infera._Registry",
    .tp_basicsize = sizeof(infpy_registry),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "A handle on Infera's model registry (use infera.Registry).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)registry_init,
    .tp_dealloc = (destructor)registry_dealloc,
    .tp_methods = registry_methods,
};
