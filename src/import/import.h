/*
 * import.h -- model formats other than ONNX, translated into the engine's IR
 * (graph/graph.h) so that every runner treats them as ONNX models.
 *
 * xgboost.c: an XGBoost JSON or UBJSON model (Booster.save_model("model.json")
 * or "model.ubj"; ubjson.c reads UBJSON into the same cJSON tree) becomes
 * one ai.onnx.ml TreeEnsembleClassifier / TreeEnsembleRegressor node with the
 * outputs of its ONNX-ML form (label + probabilities, or variable).
 * Called by inf_model_load_buffer (onnx/decode.c), which detects the format.
 */
#ifndef INF_IMPORT_H
#define INF_IMPORT_H

#include "core/core.h"
#include "infera/model.h"

/* Does the buffer look like an XGBoost model: a JSON object with a
 * "learner" member near its start, or a UBJSON object with a "learner" key? */
bool inf__import_is_xgboost_json(const void *data, size_t size);

/* Builds a model from an XGBoost JSON or UBJSON document.  Errors start with
 * "<memory>: " (the loader substitutes the file name) and say what is wrong
 * or unsupported (INF_EFORMAT, INF_EUNSUPPORTED, INF_EMODEL, INF_ENOMEM). */
inf_status inf__import_xgboost_json(const void *data, size_t size, inf_model **out, inf_error *err);

/* ubjson.c: is this a UBJSON object (starts with '{' and an integer length
 * marker)?  And the document as a cJSON tree (free with cJSON_Delete), or
 * NULL with the reason and byte offset in why. */
bool inf__import_is_ubjson_object(const void *data, size_t size);
struct cJSON;
struct cJSON *inf__ubjson_parse(const void *data, size_t size, char *why, size_t why_len);

#endif /* INF_IMPORT_H */
