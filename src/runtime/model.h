/*
 * model.h -- the runtime core's first half (issue 19): a model reference
 * (shared/DESIGN.md §4: a path to an .onnx / XGBoost file, or NAME,
 * NAME@VERSION, NAME@ALIAS in the registry) turned into a loaded model, its
 * pipeline and the lineage stamp, and the per-thread session + pipeline
 * executor pair the runners score with (the second half is score.h).
 *
 * Used by every runner that scores records: batch (src/batch/), stream
 * (src/stream/) and the SQL extensions (src/sql/), so they resolve, map and
 * stamp records the same way (bit-identical predictions, one lineage).
 *
 * A path is what inf_registry_ref_is_path says (contains '/', ends in .onnx,
 * .json or .ubj, or names an existing file); its pipeline is `pipeline_path`
 * when given, else the spec beside it (`<model>.pipeline.json`, as `infera
 * serve` reads it), else the default pipeline.  A registry reference loads
 * the version's artifact (SHA-256 checked by the registry) and the version's
 * pipeline spec when it has one (`pipeline_path` overrides it).
 *
 * THE LINEAGE STAMP (model_name, model_version of every prediction row and
 * lineage record), one rule (inf__rt_model_stamp):
 *   registry model  name = the registry name, version = its version number
 *   file model      name = the file stem, version = "sha256:" + the first 12
 *                   hex digits of the file -- content-addressed like a
 *                   registry artifact, so the same file stamps the same
 *                   version in every process and every mode.
 * `infera serve` stamps a file model's version by this rule too (its KServe
 * version, in responses, metrics and prediction rows); its model_name is the
 * served name, which is the file stem unless `--model NAME=PATH` names it.
 */
#ifndef INF_RUNTIME_MODEL_H
#define INF_RUNTIME_MODEL_H

#include <stdint.h>

#include "infera/pipeline.h"
#include "infera/registry.h"
#include "infera/session.h"

typedef struct inf__rt_model {
    inf_model *model;       /* owned */
    inf_pipeline *pipeline; /* owned; borrows model */
    inf_registry *registry; /* owned; NULL for a path reference */
    int from_registry;
    int64_t version_num;    /* registry version, 0 for a path */
    char name[160];
    char version[64];
    char sha256[65];        /* of the model file / artifact */
    char source[4200];      /* the file loaded */
    int precision;          /* session option precision of its sessions (inf__rt_model_options.precision) */
} inf__rt_model;

/* The lineage stamp of a file model (see above): name from the path's
 * stem, version from its SHA-256 (64 hex digits).  name: 160 bytes,
 * version: 64 bytes. */
void inf__rt_model_stamp(const char *path, const char *sha256_hex, char name[160], char version[64]);
/* The SHA-256 of a model file (64 hex digits; a regular file within the
 * model size limit, as inf_model_load requires). */
inf_status inf__rt_file_sha256(const char *path, char out[65], inf_error *err);

typedef struct inf__rt_model_options {
    const char *pipeline_path; /* spec file overriding the registry's (may be NULL) */
    const char *id_column;     /* may be NULL */
    const char *home;          /* registry home; NULL = INFERA_HOME or ./infera-data */
    const char *registry_url;  /* postgresql://... registry; NULL = INFERA_REGISTRY or embedded */
    int keep_registry;         /* 1: keep the registry handle open in ref->registry (lineage) */
    int precision;             /* inf_precision of the sessions inf__rt_model_session makes; 0 = fp32 */
} inf__rt_model_options;

/* Resolves and loads ref.  On failure everything is released and err names
 * the reference and why (INF_ENOENT unknown file/model/version, INF_EFORMAT
 * bad model or spec, INF_ETYPE spec vs model, INF_EAUTH/INF_EDENIED). */
inf_status inf__rt_model_open(const char *ref, const inf__rt_model_options *opts, inf__rt_model *out,
                               inf_error *err);
void inf__rt_model_close(inf__rt_model *m);

/* A session over m's model (n_threads kernel threads, planned for max_batch
 * rows; 0 = the defaults) and an executor of m's pipeline: the pair a
 * scoring thread uses (score.h).  On failure neither is left allocated and
 * err says why. */
inf_status inf__rt_model_session(const inf__rt_model *m, int n_threads, int max_batch, inf_session **session,
                                 inf_pipeline_exec **exec, inf_error *err);

#endif /* INF_RUNTIME_MODEL_H */
