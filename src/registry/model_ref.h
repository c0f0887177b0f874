/*
 * model_ref.h -- turning a model reference (shared/DESIGN.md §4: a path to an
 * .onnx file, or NAME, NAME@VERSION, NAME@ALIAS in the registry) into a
 * loaded model and its pipeline, with the identity that lineage needs.
 *
 * Shared by the runners: batch (src/batch/), stream (src/stream/) and the SQL
 * extensions (src/sql/sqlite_ext.c, src/sql/pg/infera_pg.c), so every runner
 * resolves and maps records the same way (bit-identical predictions).  It
 * lives with the registry because a reference is resolved through it.
 *
 * A path is what inf_registry_ref_is_path says (contains '/', ends in .onnx,
 * .json or .ubj, or names an existing file); its pipeline is `pipeline_path` when given, else the spec beside
 * it (`<model>.pipeline.json`, as `infera serve` reads it), else the default pipeline.  A registry reference loads the version's artifact (SHA-256
 * checked by the registry) and the version's pipeline spec when it has one
 * (`pipeline_path` overrides it).  Identity of a path model: name = file stem,
 * version = "sha256:<first 12 hex of the file>".
 */
#ifndef INF_REGISTRY_MODEL_REF_H
#define INF_REGISTRY_MODEL_REF_H

#include <stdint.h>

#include "infera/pipeline.h"
#include "infera/registry.h"
#include "infera/session.h"

typedef struct inf__model_ref {
    inf_model *model;       /* owned */
    inf_pipeline *pipeline; /* owned; borrows model */
    inf_registry *registry; /* owned; NULL for a path reference */
    int from_registry;
    int64_t version_num;    /* registry version, 0 for a path */
    char name[160];
    char version[64];
    char sha256[65];        /* of the model file / artifact */
    char source[4200];      /* the file loaded */
} inf__model_ref;

typedef struct inf__model_ref_options {
    const char *pipeline_path; /* spec file overriding the registry's (may be NULL) */
    const char *id_column;     /* may be NULL */
    const char *home;          /* registry home; NULL = INFERA_HOME or ./infera-data */
    const char *registry_url;  /* postgresql://... registry; NULL = INFERA_REGISTRY or embedded */
    int keep_registry;         /* 1: keep the registry handle open in ref->registry (lineage) */
} inf__model_ref_options;

/* Resolves and loads ref.  On failure everything is released and err names
 * the reference and why (INF_ENOENT unknown file/model/version, INF_EFORMAT
 * bad model or spec, INF_ETYPE spec vs model, INF_EAUTH/INF_EDENIED). */
inf_status inf__model_ref_open(const char *ref, const inf__model_ref_options *opts, inf__model_ref *out,
                               inf_error *err);
void inf__model_ref_close(inf__model_ref *m);

/* llm_ref.c: a GGUF model reference (a file, or NAME[@VERSION|@ALIAS] in the
 * registry, artifact SHA-256 checked) -> the path of the file. */
inf_status inf__llm_ref_resolve(const char *ref, char *path, size_t size, inf_error *err);
/* The same with a registry home / URL (NULL: the environment's). */
inf_status inf__llm_ref_resolve_at(const char *ref, const char *home, const char *registry_url, char *path,
                                   size_t size, inf_error *err);

#endif /* INF_REGISTRY_MODEL_REF_H */
