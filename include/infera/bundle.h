/*
 * bundle.h -- compiled model bundles (`infera compile`) and the fixed-memory
 * edge runtime (libinfera_edge.a).
 *
 * A bundle is one file holding a model after load-time optimisation: the
 * graph IR, its weights (64-byte aligned, used in place from the mapped file
 * or a linked-in array), the max batch it was compiled for, the pipeline spec
 * (bytes) when the model has one, and the SHA-256 of the source model.  It
 * needs neither protobuf nor a JSON parser to load, and it checks itself:
 * magic, format version, target and a CRC32C over every byte.  The format is
 * documented in docs/edge.md.
 *
 * inf_model_load() recognises a bundle by its magic, so every command and
 * API that takes a model takes a bundle too.
 */
#ifndef INFERA_BUNDLE_H
#define INFERA_BUNDLE_H

#include "infera/infera.h"
#include "infera/model.h"
#include "infera/session.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The processors a bundle can be made for.  x86_64 runs on every x86-64
 * CPU; x86_64-avx2 refuses to load on a CPU without AVX2/FMA; aarch64 on
 * 64-bit ARM.  The kernels are picked at run time as for an ONNX model, so a
 * bundle computes bit for bit what its source model computes on that host. */
typedef enum inf_target {
    INF_TARGET_X86_64 = 1,
    INF_TARGET_X86_64_AVX2 = 2,
    INF_TARGET_AARCH64 = 3,
} inf_target;

/* "x86_64", "x86_64-avx2", "aarch64"; NULL for an unknown value. */
INF_API const char *inf_target_name(inf_target target);
/* The target named name, or 0 when unknown. */
INF_API inf_target inf_target_from_name(const char *name);
/* The target this build runs as by default (the host's baseline). */
INF_API inf_target inf_target_host(void);

/* Non-zero when data starts with the bundle magic (8 bytes). */
INF_API int inf_bundle_is_bundle(const void *data, size_t size);

typedef struct inf_bundle_write_options {
    inf_target target;           /* 0 = inf_target_host() */
    int max_batch;               /* the largest batch it will run; inf_session_new_in warms up at it (0 = 1) */
    const char *source_name;     /* file name of the source model (lineage), may be NULL */
    const uint8_t *source_sha256; /* 32 bytes: SHA-256 of the source model file, may be NULL */
    const char *pipeline;        /* pipeline spec JSON (stored as bytes), may be NULL */
    size_t pipeline_len;
} inf_bundle_write_options;

/* Serialises a loaded (optimised) model into a bundle image in memory;
 * free *out with inf_bundle_buffer_free. */
INF_API inf_status inf_bundle_write(const inf_model *model, const inf_bundle_write_options *opts, void **out,
                                    size_t *size, inf_error *err);
INF_API void inf_bundle_buffer_free(void *data);

/* Loads a bundle file (mapped read-only; weights are used in place).  Errors
 * name the file and why: not a bundle, truncated, corrupted (checksum),
 * another format version, another target. */
INF_API inf_status inf_bundle_load(const char *path, inf_model **out, inf_error *err);
/* Loads a bundle held in memory WITHOUT copying it: data must be 64-byte
 * aligned and stay valid and unchanged until inf_model_free (a linked-in
 * array from `infera compile --c-source`).  name is used in errors. */
INF_API inf_status inf_bundle_load_static(const void *data, size_t size, const char *name, inf_model **out,
                                          inf_error *err);

typedef struct inf_bundle_info {
    uint32_t format_version;
    inf_target target;
    int max_batch;
    char source_sha256[65];      /* hex; "" when unknown */
    const char *source_name;     /* owned by the model */
    const char *pipeline;        /* pipeline spec bytes (not NUL-terminated), NULL if none */
    size_t pipeline_len;
    int n_prepacked;             /* weight matrices whose packed panels the load used in place */
    int n_convpacked;            /* convolution weights packed for their kernel, used in place likewise */
    int n_panels_only;           /* of n_prepacked, matrices stored as their panels alone (format 2) */
} inf_bundle_info;

/* Fills *out and returns 1 when model was loaded from a bundle; 0 otherwise. */
INF_API int inf_model_bundle_info(const inf_model *model, inf_bundle_info *out);

/* ---- fixed memory region (edge runtime) ----
 * inf_session_new_in loads a bundle and compiles its session with every
 * byte taken from [buffer, buffer + size): it installs a region allocator
 * (inf_set_allocator), loads the bundle in place, creates the session and
 * runs it once on zero inputs of the model's declared shapes (symbolic
 * dimensions = max_batch, else 1), so that later runs with inputs of those
 * shapes allocate nothing.  When the region is too small it fails with
 * INF_ENOMEM saying how much was in use.  The region allocator stays
 * installed (it is process-wide): one region per process.  Free the pair
 * with inf_session_free and inf_model_free (memory returns to the region). */
INF_API inf_status inf_session_new_in(void *buffer, size_t size, const void *bundle, size_t bundle_size,
                                      const inf_session_options *opts, inf_model **model, inf_session **session,
                                      inf_error *err);
/* Bytes of the region at buffer (as given to inf_session_new_in) in use
 * now, and at most since it was set up. */
INF_API size_t inf_region_bytes_used(const void *buffer);
INF_API size_t inf_region_bytes_peak(const void *buffer);

#ifdef __cplusplus
}
#endif

#endif /* INFERA_BUNDLE_H */
