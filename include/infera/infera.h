/*
 * infera.h -- the public entry point of libinfera.
 *
 * Infera loads ONNX models (ai.onnx and ai.onnx.ml), compiles them once into a
 * session and runs them many times on CPU.  This header holds what every other
 * public header shares: the version, export macro, status codes and error
 * reports, and the replaceable allocator.
 *
 * A short tour (#include <infera/session.h>, which includes the rest):
 *
 *     inf_model *model = NULL;
 *     inf_error err;
 *     if (inf_model_load("mlp.onnx", NULL, &model, &err) != INF_OK) {
 *         fprintf(stderr, "%s\n", err.message);      // names file, node, why
 *         return 1;
 *     }
 *     inf_session *s = NULL;
 *     inf_session_new(model, NULL, &s, &err);
 *     const inf_tensor *in[1] = { &x };              // caller-owned input
 *     inf_tensor *const *out;                        // borrowed from s
 *     inf_session_run(s, in, &out, &err);            // allocates nothing when warm
 *     ...
 *     inf_session_free(s);
 *     inf_model_free(model);
 *
 * Conventions (see shared/STYLE.md): public names are inf_<object>_<verb>;
 * fallible functions return inf_status (0 = INF_OK, errors negative) and
 * take an optional inf_error * last, which receives a one-line message naming
 * what failed and why.  Freeing NULL is always a no-op.
 */
#ifndef INFERA_INFERA_H
#define INFERA_INFERA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define INFERA_VERSION_MAJOR 0
#define INFERA_VERSION_MINOR 1
#define INFERA_VERSION_PATCH 0
#define INFERA_VERSION_STRING "0.1.0"

#if defined(INF_BUILDING_LIBRARY)
#define INF_API __attribute__((visibility("default")))
#else
#define INF_API
#endif

/* One list feeds the enum, inf_strerror, inf_status_name and the HTTP codes
 * of the runners.  XX(NAME, value, http_status, "message") */
#define INF_STATUS_MAP(XX)                                                        \
    XX(OK, 0, 200, "success")                                                     \
    XX(ENOMEM, -1, 503, "out of memory")                                          \
    XX(EINVAL, -2, 400, "invalid argument")                                       \
    XX(EIO, -3, 500, "input/output error")                                        \
    XX(ENOENT, -4, 404, "not found")                                              \
    XX(EFORMAT, -5, 400, "malformed data")                                        \
    XX(EMODEL, -6, 400, "invalid model")                                          \
    XX(EUNSUPPORTED, -7, 501, "not supported")                                    \
    XX(ESHAPE, -8, 400, "shape mismatch")                                         \
    XX(ETYPE, -9, 400, "type mismatch")                                           \
    XX(ERANGE, -10, 400, "value out of range")                                    \
    XX(EINTERNAL, -11, 500, "internal error")                                     \
    XX(EBUSY, -12, 503, "busy")                                                   \
    XX(ETIMEDOUT, -13, 504, "timed out")                                          \
    XX(EDENIED, -14, 403, "permission denied")                                    \
    XX(EAUTH, -15, 401, "authentication required")                                \
    XX(EEXIST, -16, 409, "already exists")

typedef enum inf_status {
#define INF_STATUS_ENUM(name, value, http, msg) INF_##name = value,
    INF_STATUS_MAP(INF_STATUS_ENUM)
#undef INF_STATUS_ENUM
} inf_status;

/* The short message of a status ("out of memory"); never NULL. */
INF_API const char *inf_strerror(inf_status status);
/* The symbolic name of a status ("INF_ENOMEM"); never NULL. */
INF_API const char *inf_status_name(inf_status status);
/* The HTTP status code a runner answers with for this status. */
INF_API int inf_status_http_code(inf_status status);
/* 1 when the records being scored can cause this failure by their values,
 * shapes or types (INF_EINVAL, INF_EFORMAT, INF_ESHAPE, INF_ETYPE,
 * INF_ERANGE: an index out of range, a shape the data decides), 0 for the
 * infrastructure's (memory, I/O, a store, an internal error).  The batch and
 * stream runners score a batch that fails with a data error again one
 * record at a time, and reject only the records that fail alone. */
INF_API int inf_status_is_data_error(inf_status status);

/* An error report: the status and a one-line message saying what failed
 * (file, model, node, input), and why.  Functions taking an inf_error * fill
 * it only on failure; passing NULL is allowed. */
#define INF_ERROR_MESSAGE_MAX 512
typedef struct inf_error {
    inf_status status;
    char message[INF_ERROR_MESSAGE_MAX];
} inf_error;

/* Fills err (when not NULL) with status and a printf-formatted message, and
 * returns status: `return inf_error_set(err, INF_EIO, "%s: cannot read", path);`.
 * For code built on the library (runners, extensions) to report errors the
 * same way the library does. */
INF_API inf_status inf_error_set(inf_error *err, inf_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The library's version string, e.g. "0.1.0". */
INF_API const char *inf_version(void);

/* ---- Input files ----
 * Every reader of a file a user names (model, pipeline spec, tensor file,
 * external data; the engine, the registry, the runners) opens it here, so
 * one rule holds everywhere: only a REGULAR file is read (a FIFO, a device
 * such as /dev/zero, a directory or a socket is refused, and opening never
 * blocks), and a file larger than max_bytes (0: no limit) is refused with
 * INF_ERANGE.  `what` names the file's role in errors ("model", "spec").
 *
 * inf_file_open: on success *fd is an open, blocking, read-only descriptor
 * (the caller closes it) and *size the file's size. */
INF_API inf_status inf_file_open(const char *path, const char *what, uint64_t max_bytes, int *fd, uint64_t *size,
                                 inf_error *err);
/* The same for `relative`, a file name inside folder dir (a model's external
 * data): refuses an absolute name, a ".." component and any name whose real
 * path (symlinks resolved) is not inside dir's real path (INF_EDENIED; the
 * message does not reveal where a symlink points). */
INF_API inf_status inf_file_open_within(const char *dir, const char *relative, const char *what, uint64_t max_bytes,
                                        int *fd, uint64_t *size, inf_error *err);
/* Reads a whole file opened as inf_file_open does; *data (NUL-terminated, for
 * text) is released with inf_file_free. */
INF_API inf_status inf_file_read(const char *path, const char *what, uint64_t max_bytes, void **data, size_t *size,
                                 inf_error *err);
INF_API void inf_file_free(void *data);
/* Size limits of the readers: a model file (protobuf itself stops at 2 GiB;
 * larger weights live in external data), a pipeline spec. */
#define INF_FILE_MAX_MODEL_BYTES ((uint64_t)4 << 30)
#define INF_FILE_MAX_SPEC_BYTES ((uint64_t)64 << 20)

/* ---- Allocator ----
 * Every allocation libinfera makes goes through one function pair that an
 * embedding application may replace, once, before any other call.
 * realloc(ud, NULL, n) allocates, realloc(ud, p, 0) frees and returns NULL.
 * A failed allocation is reported as INF_ENOMEM; the library never aborts. */
typedef void *(*inf_realloc_fn)(void *user_data, void *ptr, size_t size);
INF_API void inf_set_allocator(inf_realloc_fn fn, void *user_data);

/* Counters of the allocator, for tests and metrics. */
typedef struct inf_alloc_stats {
    uint64_t n_allocs;   /* successful allocations and growths */
    uint64_t n_frees;
    uint64_t n_failed;   /* allocations that returned NULL */
    int64_t bytes_live;  /* bytes currently held (approximate for realloc) */
} inf_alloc_stats;
INF_API void inf_alloc_get_stats(inf_alloc_stats *out);

/* Fault injection for tests: make allocation number n (counted from this
 * call, 1-based) and every later one fail; 0 disables it. */
INF_API void inf_alloc_fail_after(uint64_t n);

#ifdef __cplusplus
}
#endif

#endif /* INFERA_INFERA_H */
