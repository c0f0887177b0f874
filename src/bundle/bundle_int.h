/*
 * bundle_int.h (internal) -- what the bundle loader keeps with a model it
 * loaded (inf_model.bundle), and its entry point for other engine files.
 */
#ifndef INF_BUNDLE_INT_H
#define INF_BUNDLE_INT_H

#include "bundle/format.h"
#include "ops/ops.h"

typedef struct inf__bundle_facts {
    inf_target target;
    int max_batch;
    uint8_t source_sha256[32];
    const char *source_name;
    uint64_t source_bytes;
    const uint8_t *sections[INF__BS_LAST + 1];
    uint64_t section_bytes[INF__BS_LAST + 1];
    bool has_section[INF__BS_LAST + 1];
    int n_prepacked;                   /* GEMM panel sets used in place (PREPACK) */
    int n_convpacked;                  /* convolution weights used in place (CONVPACK) */
    int n_panels_only;                 /* of n_prepacked, matrices stored as their panels alone */
    const void *image;                 /* the whole bundle; weights are views into it */
    size_t image_size;
    void (*release)(void *image, size_t size); /* how the model gives the image back, or NULL */
} inf__bundle_facts;

/* Loads a checked bundle image; on success the model owns the image through
 * release (called by inf_model_free; NULL: the caller keeps it alive). */
inf_status inf__bundle_load_image(const void *data, size_t size, const char *what,
                                  void (*release)(void *, size_t), inf_model **out, inf_error *err);

/* Loads a bundle from a read-only mmap of a whole file (inf_model_load maps
 * the file once to look at its magic and hands the mapping over); on
 * success the model unmaps it when freed, on failure the caller still owns it. */
inf_status inf__bundle_load_mapped(void *mapping, size_t size, const char *path, inf_model **out, inf_error *err);

/* Loads a bundle from bytes the caller keeps only for the call: copied into
 * an aligned block the model owns (inf_model_load_buffer). */
inf_status inf__bundle_load_copy(const void *data, size_t size, const char *what, inf_model **out, inf_error *err);

/* The kernel symbols (ops.def impl names) model's nodes run, subgraphs
 * included, each once; returns how many (at most cap written). */
int inf__bundle_kernel_symbols(const inf_model *model, const char **out, int cap);

/* inf_bundle_write, plus the packed panels a recording load collected
 * (ops.h inf__prepack_log; NULL: none), kept where still valid. */
inf_status inf__bundle_write_prepacked(const inf_model *model, const inf_bundle_write_options *opts,
                                       const inf__prepack_log *prepacked, void **out, size_t *size, inf_error *err);

#endif /* INF_BUNDLE_INT_H */
