/*
 * module.c -- the _infera extension module: registers the types (Model,
 * Pipeline, Registry), the _fit_spec function, the exception infera.Error
 * and the C library's version, and holds the conversions shared by the types (errors, dtype tables, values
 * -> Python objects).
 */
#define PY_ARRAY_UNIQUE_SYMBOL infera_ARRAY_API
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <string.h>

#include "common.h"

PyObject *infpy_Error = NULL;

PyObject *infpy_raise(const inf_error *err)
{
    PyObject *exc = PyObject_CallFunction(infpy_Error, "s", err->message[0] ? err->message : inf_strerror(err->status));
    if (exc == NULL)
        return NULL;
    PyObject_SetAttrString(exc, "status", PyUnicode_FromString(inf_status_name(err->status)));
    PyObject *code = PyLong_FromLong(err->status);
    if (code) {
        PyObject_SetAttrString(exc, "code", code);
        Py_DECREF(code);
    }
    PyErr_SetObject(infpy_Error, exc);
    Py_DECREF(exc);
    return NULL;
}

static const struct {
    inf_dtype dtype;
    int npy;
} dtype_table[] = {
    {INF_DTYPE_F32, NPY_FLOAT32}, {INF_DTYPE_F64, NPY_FLOAT64}, {INF_DTYPE_F16, NPY_FLOAT16},
    {INF_DTYPE_I8, NPY_INT8},     {INF_DTYPE_U8, NPY_UINT8},    {INF_DTYPE_I16, NPY_INT16},
    {INF_DTYPE_U16, NPY_UINT16},  {INF_DTYPE_I32, NPY_INT32},   {INF_DTYPE_U32, NPY_UINT32},
    {INF_DTYPE_I64, NPY_INT64},   {INF_DTYPE_U64, NPY_UINT64},  {INF_DTYPE_BOOL, NPY_BOOL},
    {INF_DTYPE_C64, NPY_COMPLEX64}, {INF_DTYPE_C128, NPY_COMPLEX128},
};

int infpy_npy_type(inf_dtype dtype)
{
    for (size_t i = 0; i < sizeof dtype_table / sizeof dtype_table[0]; i++)
        if (dtype_table[i].dtype == dtype)
            return dtype_table[i].npy;
    return -1;
}

inf_dtype infpy_inf_dtype(int npy_type)
{
    for (size_t i = 0; i < sizeof dtype_table / sizeof dtype_table[0]; i++)
        if (PyArray_EquivTypenums(dtype_table[i].npy, npy_type))
            return dtype_table[i].dtype;
    return INF_DTYPE_UNDEFINED;
}

static PyObject *tensor_to_array(const inf_tensor *t)
{
    npy_intp dims[INF_MAX_DIMS];
    for (int d = 0; d < t->ndim; d++)
        dims[d] = (npy_intp)t->dims[d];
    if (t->dtype == INF_DTYPE_STRING) {
        PyObject *arr = PyArray_SimpleNew(t->ndim, dims, NPY_OBJECT);
        if (arr == NULL)
            return NULL;
        int64_t n = inf_tensor_numel(t);
        PyObject **cells = (PyObject **)PyArray_DATA((PyArrayObject *)arr);
        char **strs = (char **)t->data;
        for (int64_t i = 0; i < n; i++) {
            PyObject *s = PyUnicode_DecodeUTF8(strs[i] ? strs[i] : "", strs[i] ? (Py_ssize_t)strlen(strs[i]) : 0,
                                               "replace");
            if (s == NULL) {
                Py_DECREF(arr);
                return NULL;
            }
            Py_XDECREF(cells[i]);
            cells[i] = s;
        }
        return arr;
    }
    int npy = infpy_npy_type(t->dtype);
    if (npy < 0) {
        PyErr_Format(infpy_Error, "output of type %s has no numpy equivalent", inf_dtype_name(t->dtype));
        return NULL;
    }
    PyObject *arr = PyArray_SimpleNew(t->ndim, dims, npy);
    if (arr != NULL && inf_tensor_nbytes(t) > 0)
        memcpy(PyArray_DATA((PyArrayObject *)arr), t->data, inf_tensor_nbytes(t));
    return arr;
}

/* A map's keys and values (1-D tensors) -> {key: value}. */
static PyObject *map_to_dict(const inf_tensor *v)
{
    if (v->n_items < 2)
        return PyDict_New();
    PyObject *keys = tensor_to_array(v->items[0]);
    PyObject *vals = keys ? tensor_to_array(v->items[1]) : NULL;
    PyObject *dict = vals ? PyDict_New() : NULL;
    PyObject *klist = dict ? PySequence_List(keys) : NULL;
    PyObject *vlist = klist ? PySequence_List(vals) : NULL;
    int ok = vlist != NULL;
    for (Py_ssize_t i = 0; ok && i < PyList_GET_SIZE(klist) && i < PyList_GET_SIZE(vlist); i++)
        ok = PyDict_SetItem(dict, PyList_GET_ITEM(klist, i), PyList_GET_ITEM(vlist, i)) == 0;
    Py_XDECREF(keys);
    Py_XDECREF(vals);
    Py_XDECREF(klist);
    Py_XDECREF(vlist);
    if (!ok) {
        Py_XDECREF(dict);
        return NULL;
    }
    return dict;
}

PyObject *infpy_value_to_python(const inf_tensor *v)
{
    if (v == NULL || v->kind == INF_KIND_NONE)
        Py_RETURN_NONE;
    if (v->kind == INF_KIND_MAP)
        return map_to_dict(v);
    if (v->kind == INF_KIND_SEQUENCE) {
        PyObject *list = PyList_New(v->n_items);
        for (int i = 0; list && i < v->n_items; i++) {
            PyObject *item = infpy_value_to_python(v->items[i]);
            if (item == NULL) {
                Py_DECREF(list);
                return NULL;
            }
            PyList_SET_ITEM(list, i, item);
        }
        return list;
    }
    return tensor_to_array(v);
}

static PyMethodDef module_functions[] = {
    {"_fit_spec", (PyCFunction)(void (*)(void))infpy_fit_spec, METH_VARARGS | METH_KEYWORDS,
     "_fit_spec(template_json, source_uri, as_of=None, history=None) -> fitted spec JSON"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef infera_module = {
    PyModuleDef_HEAD_INIT, "_infera",
    "Infera's C library (libinfera, libinfera_runtime) for Python: Model, Pipeline, Registry, Error.", -1,
    module_functions,
};

PyMODINIT_FUNC PyInit__infera(void)
{
    import_array();
    if (PyType_Ready(&infpy_ModelType) < 0 || PyType_Ready(&infpy_PipelineType) < 0 ||
        PyType_Ready(&infpy_RegistryType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&infera_module);
    if (m == NULL)
        return NULL;
    infpy_Error = PyErr_NewExceptionWithDoc("infera.Error",
                                            "An error reported by Infera; the message is Infera's, "
                                            ".status its symbolic name (INF_EMODEL, ...), .code the number.",
                                            PyExc_RuntimeError, NULL);
    if (infpy_Error == NULL || PyModule_AddObjectRef(m, "Error", infpy_Error) < 0 ||
        PyModule_AddObjectRef(m, "Model", (PyObject *)&infpy_ModelType) < 0 ||
        PyModule_AddObjectRef(m, "_Pipeline", (PyObject *)&infpy_PipelineType) < 0 ||
        PyModule_AddObjectRef(m, "_Registry", (PyObject *)&infpy_RegistryType) < 0 ||
        PyModule_AddStringConstant(m, "version", inf_version()) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
