/*
 * infer_bind.c -- the protocol-neutral half of decoding an inference
 * request: binding a decoded input (name, datatype, shape) to the model's
 * input, turning a raw little-endian blob into its data, and the checks
 * that need the whole request (every required input present, requested
 * outputs known).  The HTTP codec (kserve_v2.c: JSON and the binary tensor
 * data extension) and the gRPC codec (grpc_codec.c: typed contents and
 * raw_input_contents) both call these, so a request is validated by the same
 * rules, with the same messages, whichever protocol carried it.
 *
 * Every function fills err (status and a message naming the input, the
 * field and the expected value) and returns its status; nothing here keeps
 * state.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "serve/serve.h"

static inf_status failf(inf_error *err, inf_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static inf_status failf(inf_error *err, inf_status st, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        err->status = st;
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return st;
}

void inf__serve_shape_str(char *buf, size_t size, int ndim, const int64_t *dims) {
    size_t k = (size_t)snprintf(buf, size, "[");
    for (int d = 0; d < ndim && k < size; d++)
        k += (size_t)snprintf(buf + k, size - k, "%s%lld", d ? "," : "", (long long)dims[d]);
    if (k < size) snprintf(buf + k, size - k, "]");
}

inf_status inf__serve_bind_input(const inf_model *model, srv_input *in, const char *dtype_name, int has_shape,
                                 const uint8_t *seen, inf_error *err) {
    const char *nm = in->name;
    if (!nm) return failf(err, INF_EINVAL, "an input has no 'name'");
    int idx = inf_model_find_input(model, nm);
    if (idx < 0) {
        char names[256] = "";
        size_t k = 0;
        for (int i = 0; i < inf_model_n_inputs(model) && k < sizeof names - 1; i++)
            k += (size_t)snprintf(names + k, sizeof names - k, "%s'%s'", i ? ", " : "",
                                  inf_model_input(model, i)->name);
        return failf(err, INF_EINVAL, "unknown input '%s' (the model's inputs: %s)", nm, names);
    }
    if (seen[idx]) return failf(err, INF_EINVAL, "input '%s' is given twice", nm);
    in->model_index = idx;
    const inf_value_info *vi = inf_model_input(model, idx);
    if (!dtype_name) return failf(err, INF_EINVAL, "input '%s': missing 'datatype'", nm);
    in->dtype = inf__serve_dtype_from_kserve(dtype_name, strlen(dtype_name));
    if (in->dtype == INF_DTYPE_UNDEFINED)
        return failf(err, INF_ETYPE, "input '%s': unknown datatype '%s'", nm, dtype_name);
    if (vi->kind != INF_KIND_TENSOR)
        return failf(err, INF_EUNSUPPORTED,
                     "input '%s': the model expects a sequence or map, which KServe cannot express", nm);
    if (vi->dtype != INF_DTYPE_UNDEFINED && vi->dtype != in->dtype)
        return failf(err, INF_ETYPE, "input '%s': datatype %s does not match the model's %s", nm, dtype_name,
                     inf__serve_kserve_dtype(vi->dtype) ? inf__serve_kserve_dtype(vi->dtype)
                                                        : inf_dtype_name(vi->dtype));
    if (!has_shape) return failf(err, INF_EINVAL, "input '%s': missing 'shape'", nm);
    if (vi->ndim >= 0) {
        int bad = vi->ndim != in->ndim;
        int bad_dim = -1;
        for (int d = 0; !bad && d < in->ndim; d++)
            if (vi->dims[d] >= 0 && vi->dims[d] != in->dims[d]) bad = 1, bad_dim = d;
        if (bad) {
            char got[96], want[96];
            inf__serve_shape_str(got, sizeof got, in->ndim, in->dims);
            inf__serve_shape_str(want, sizeof want, vi->ndim, vi->dims);
            if (bad_dim >= 0)
                return failf(err, INF_ESHAPE, "input '%s': shape %s does not match the model's %s (dimension %d)", nm,
                             got, want, bad_dim);
            return failf(err, INF_ESHAPE, "input '%s': shape %s has rank %d but the model's %s has rank %d", nm, got,
                         in->ndim, want, vi->ndim);
        }
    }
    return INF_OK;
}

inf_status inf__serve_input_numel(const srv_input *in, int64_t *numel, inf_error *err) {
    int64_t n = 1;
    for (int d = 0; d < in->ndim; d++) {
        if (in->dims[d] && n > (INT64_C(1) << 40) / in->dims[d])
            return failf(err, INF_ERANGE, "input '%s': shape is too large", in->name);
        n *= in->dims[d];
    }
    *numel = n;
    return INF_OK;
}

/* BYTES: numel elements, each a 4-byte little-endian length and its bytes. */
static inf_status strings_from_blob(srv_input *in, const uint8_t *blob, size_t bs, int64_t numel, const char *size_what,
                                    inf_error *err) {
    if ((uint64_t)numel > bs / 4) /* 4 length bytes per element at least */
        return failf(err, INF_EFORMAT, "input '%s': %s %zu cannot hold %lld BYTES elements (4-byte length each)",
                     in->name, size_what, bs, (long long)numel);
    in->strings = calloc((size_t)(numel ? numel : 1), sizeof(char *));
    in->data = malloc((size_t)(numel ? numel : 1) * sizeof(char *));
    in->n_strings = numel;
    if (!in->strings || !in->data) return failf(err, INF_ENOMEM, "input '%s': out of memory", in->name);
    size_t off = 0;
    for (int64_t k = 0; k < numel; k++) {
        if (bs - off < 4)
            return failf(err, INF_EFORMAT, "input '%s': BYTES element %lld: truncated length prefix", in->name,
                         (long long)k);
        uint32_t len = (uint32_t)blob[off] | (uint32_t)blob[off + 1] << 8 | (uint32_t)blob[off + 2] << 16 |
                       (uint32_t)blob[off + 3] << 24;
        off += 4;
        if (len > bs - off)
            return failf(err, INF_EFORMAT, "input '%s': BYTES element %lld: length %u exceeds the blob", in->name,
                         (long long)k, len);
        if (memchr(blob + off, 0, len)) return failf(err, INF_EINVAL, INF__SERVE_NUL_MSG, in->name, (long long)k);
        char *v = malloc((size_t)len + 1);
        if (!v) return failf(err, INF_ENOMEM, "input '%s': out of memory", in->name);
        memcpy(v, blob + off, len);
        v[len] = 0;
        off += len;
        in->strings[k] = v;
        ((char **)in->data)[k] = v;
    }
    if (off != bs)
        return failf(err, INF_EFORMAT, "input '%s': %zu bytes left over after %lld BYTES elements", in->name, bs - off,
                     (long long)numel);
    return INF_OK;
}

inf_status inf__serve_input_from_blob(srv_input *in, const uint8_t *blob, size_t bs, int64_t numel,
                                      const char *dtype_name, const char *size_what, inf_error *err) {
    if (in->dtype == INF_DTYPE_STRING) return strings_from_blob(in, blob, bs, numel, size_what, err);
    size_t want = (size_t)numel * inf_dtype_size(in->dtype);
    if (bs != want) {
        char sh[96];
        inf__serve_shape_str(sh, sizeof sh, in->ndim, in->dims);
        return failf(err, INF_ESHAPE, "input '%s': %s %zu but %s %s needs %zu bytes", in->name, size_what, bs,
                     dtype_name, sh, want);
    }
    size_t align = inf_dtype_size(in->dtype);
    if (((uintptr_t)blob % (align ? align : 1)) == 0) {
        in->data = (void *)blob;
        in->borrowed_data = 1;
    } else {
        in->data = malloc(want ? want : 1);
        if (!in->data) return failf(err, INF_ENOMEM, "input '%s': out of memory", in->name);
        memcpy(in->data, blob, want);
    }
    return INF_OK;
}

inf_status inf__serve_infer_check_complete(const inf_model *model, srv_infer_request *req, const uint8_t *seen,
                                           inf_error *err) {
    for (int i = 0; i < inf_model_n_inputs(model); i++) {
        const inf_value_info *vi = inf_model_input(model, i);
        if (!seen[i] && !vi->is_optional)
            return failf(err, INF_EINVAL, "missing input '%s' (%s)", vi->name,
                         inf__serve_kserve_dtype(vi->dtype) ? inf__serve_kserve_dtype(vi->dtype) : "?");
    }
    for (int i = 0; i < req->n_outputs; i++) {
        srv_output_req *o = &req->outputs[i];
        if (!o->name) return failf(err, INF_EINVAL, "outputs[%d] has no 'name'", i);
        o->model_index = inf_model_find_output(model, o->name);
        if (o->model_index < 0) return failf(err, INF_EINVAL, "unknown output '%s'", o->name);
    }
    return INF_OK;
}
