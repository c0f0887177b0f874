/*
 * fit.c -- _infera._fit_spec: learns a spec template's transform parameters
 * (inf_pipeline_fit, the code behind `infera fit-spec`) from the records of a
 * batch source URI.  infera.Pipeline.fit writes in-memory records to a
 * temporary JSONL or CSV file and calls this, so a notebook fits exactly what
 * the CLI fits.
 */
#include "common.h"

#include <string.h>

PyObject *infpy_fit_spec(PyObject *module, PyObject *args, PyObject *kw)
{
    (void)module;
    static char *kwlist[] = {"template", "source", "as_of", "history", NULL};
    const char *template_json, *source, *as_of = NULL, *history = NULL;
    Py_ssize_t len;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "s#s|zz", kwlist, &template_json, &len, &source, &as_of, &history))
        return NULL;
    inf_pipeline_options opts;
    inf_pipeline_options_init(&opts);
    char *out = NULL;
    inf_error err = {0};
    inf_status st;
    Py_BEGIN_ALLOW_THREADS
    st = inf_pipeline_fit(template_json, (size_t)len, source, as_of, history, &opts, &out, &err);
    Py_END_ALLOW_THREADS
    if (st != INF_OK)
        return infpy_raise(&err);
    PyObject *text = PyUnicode_FromString(out);
    inf_pipeline_string_free(out);
    return text;
}
