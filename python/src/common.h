/*
 * common.h -- shared pieces of the infera CPython extension (_infera):
 * the exception type, the error conversion and the numpy <-> inf_tensor
 * tables used by model.c and pipeline.c.  module.c owns the module object.
 */
#ifndef INFERA_PY_COMMON_H
#define INFERA_PY_COMMON_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NO_IMPORT_ARRAY
#define PY_ARRAY_UNIQUE_SYMBOL infera_ARRAY_API
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include <infera/session.h>
#include <infera/pipeline.h>
#include <infera/registry.h>

extern PyObject *infpy_Error;     /* infera.Error, a RuntimeError */
extern PyTypeObject infpy_ModelType;
extern PyTypeObject infpy_PipelineType;
extern PyTypeObject infpy_RegistryType;

/* _fit_spec(template, source, as_of=None, history=None) -> fitted spec JSON (fit.c). */
PyObject *infpy_fit_spec(PyObject *module, PyObject *args, PyObject *kw);

/* Raises infera.Error(message) with .status (symbolic name) and .code; returns NULL. */
PyObject *infpy_raise(const inf_error *err);
/* numpy type number of an element type, or -1 when numpy has none here. */
int infpy_npy_type(inf_dtype dtype);
/* Element type of a numpy type number, or INF_DTYPE_UNDEFINED. */
inf_dtype infpy_inf_dtype(int npy_type);
/* A Python object (ndarray, list, dict, None) holding a copy of value v. */
PyObject *infpy_value_to_python(const inf_tensor *v);

/* Model internals that pipeline.c uses. */
typedef struct infpy_model {
    PyObject_HEAD
    inf_model *model;
    inf_session *session;
    PyThread_type_lock lock;     /* one run at a time on the session */
    char *pipeline_json;         /* registry entry's spec, or NULL */
    char reg_name[129];          /* registry entry's name and version ("" for a file) */
    char reg_version[24];
    PyObject *ref;
} infpy_model;
/* Runs the model on inputs under the model's lock with the GIL released;
 * on success *outputs are the session's (valid while the lock is held:
 * the caller calls infpy_model_unlock after using them). */
int infpy_model_run_locked(infpy_model *m, const inf_tensor *const *inputs, inf_tensor *const **outputs,
                           inf_error *err);
void infpy_model_unlock(infpy_model *m);
/* Loads a model from a path or a registry reference (NAME[@VERSION|@ALIAS], the
 * registry from `home`, `url`, or INFERA_HOME/INFERA_REGISTRY). */
int infpy_model_open(infpy_model *m, const char *ref, const char *home, const char *url, int threads, int precision,
                     inf_error *err);
#endif
