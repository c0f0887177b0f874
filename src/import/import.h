/*
 * import.h -- model formats other than ONNX, translated into the engine's IR
 * (graph/graph.h) so that every runner treats them as ONNX models.
 *
 * xgboost.c: an XGBoost JSON model (Booster.save_model("model.json")) becomes
 * one ai.onnx.ml TreeEnsembleClassifier / TreeEnsembleRegressor node with the
 * outputs of its ONNX-ML form (label + probabilities, or variable).
 * Called by inf_model_load_buffer (onnx/decode.c), which detects the format.
 */
#ifndef INF_IMPORT_H
#define INF_IMPORT_H

#include "core/core.h"
#include "infera/model.h"

/* Does the buffer look like an XGBoost JSON model (a JSON object with a
 * "learner" member near its start)? */
bool inf__import_is_xgboost_json(const void *data, size_t size);

/* Builds a model from an XGBoost JSON document.  Errors start with
 * "<memory>: " (the loader substitutes the file name) and say what is wrong
 * or unsupported (INF_EFORMAT, INF_EUNSUPPORTED, INF_EMODEL, INF_ENOMEM). */
inf_status inf__import_xgboost_json(const void *data, size_t size, inf_model **out, inf_error *err);

#endif /* INF_IMPORT_H */
