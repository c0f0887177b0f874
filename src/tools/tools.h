/*
 * tools.h -- the model-compression tools: `infera evaluate`, `infera prune`,
 * `infera distill` (shared/DESIGN.md §4, docs/compression.md).
 *
 * A runner layer: it reads records through the same sources and pipeline as
 * `infera batch` (include/infera/io.h, pipeline.h; a model reference is
 * opened with runtime/model.h like every runner), runs sessions
 * (session.h) and rewrites ONNX files through include/infera/model_write.h.
 * It never calls a kernel: the little linear algebra that training and
 * least-squares compensation need is plain C here (linalg.c).
 *
 *   collect.c   run a model over a (labelled) source, keep inputs/outputs/labels
 *   metrics.c   quality metrics, computed as scikit-learn does
 *   evaluate.c  task detection, label mapping, metrics of one model on a source
 *   linalg.c    Cholesky solve for least squares, a seeded RNG
 *   prune.c     magnitude pruning (unstructured) and neuron removal with
 *               least-squares compensation (structured)
 *   distill.c   student MLP training (mini-batch Adam, soft targets)
 *   mlp_onnx.c  writing the student as an ONNX graph
 */
#ifndef INF_TOOLS_H
#define INF_TOOLS_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "infera/io.h"
#include "infera/model_write.h"
#include "infera/pipeline.h"
#include "infera/session.h"

/* ---- collect.c ---- */

/* One model output over the collected rows: numeric outputs as float64
 * [n, width]; string outputs as text [n] (width 1). */
typedef struct inf__tool_output {
    char name[128];
    inf_dtype dtype;
    int width;
    int from_map; /* a ZipMap output (a sequence of one map per row): width = the map's values, float */
    char **keys;  /* from_map: the map's keys as text (the class of each column), width of them */
    double *v;  /* numeric: n * width */
    char **s;   /* string tensors: n texts */
} inf__tool_output;

typedef struct inf__tool_rows {
    int n;                  /* rows scored (accepted by the pipeline, with a label when one is asked for) */
    int n_read;             /* records read from the source */
    int n_rejected;         /* rejected by the pipeline */
    char ignored_note[600]; /* the default mapping's note on numeric fields it ignored (runtime/score.h), "" if none */
    int n_unlabelled;       /* label null/empty: left out */
    int x_cols;             /* want_x: width of model input 0 */
    double *x;              /* want_x: model input 0 as float64 [n, x_cols] */
    char **y;               /* label text per row (label asked for) */
    int n_out;
    inf__tool_output *out;  /* n_out: every tensor output of the session's model */
} inf__tool_rows;

typedef struct inf__tool_collect_options {
    const char *label;  /* label column: taken out of the records before the pipeline; NULL = none */
    int want_x;         /* keep model input 0 (one 2-D numeric input required) */
    int64_t max_rows;   /* stop after this many scored rows; 0 = all */
    int batch_rows;     /* rows per source batch; 0 = 1024 */
} inf__tool_collect_options;

/* Reads every record of src_uri, maps it with pipeline p (of the model the
 * session runs, or of a model with the same inputs) and runs session on it.
 * Errors: the source (name, why), a missing label column ("label column
 * 'y' is not in SRC: fields a, b, c"), an empty source, a failed run. */
inf_status inf__tool_collect(const char *src_uri, const inf_pipeline *p, inf_session *session,
                             const inf__tool_collect_options *o, inf__tool_rows *out, inf_error *err);
void inf__tool_rows_free(inf__tool_rows *r);
/* The output called name, or NULL. */
const inf__tool_output *inf__tool_rows_output(const inf__tool_rows *r, const char *name);

/* ---- metrics.c ---- */

enum { INF__TASK_BINARY = 0, INF__TASK_MULTICLASS = 1, INF__TASK_REGRESSION = 2 };
extern const char *const inf__task_names[3];

#define INF__N_METRICS 9
/* Metric names in report order; per task, which apply (classification: the
 * first six, regression: the last three).  NaN = undefined (e.g. AUC with
 * one class present): printed as null. */
extern const char *const inf__metric_names[INF__N_METRICS];
/* 1 when a larger value is better (accuracy ... auc, r2), 0 (logloss, rmse, mae). */
int inf__metric_higher_is_better(int metric);
int inf__metric_applies(int task, int metric);
int inf__metric_find(const char *name);

typedef struct inf__metrics {
    int task;
    double v[INF__N_METRICS];
} inf__metrics;

/* y in {0,1}; p1 = P(class 1). */
void inf__metrics_binary(const int *y, const double *p1, int n, inf__metrics *out);
/* y in [0, C); P = [n, C] probabilities. */
int inf__metrics_multiclass(const int *y, const double *P, int n, int C, inf__metrics *out);
void inf__metrics_regression(const double *y, const double *pred, int n, inf__metrics *out);
/* Binary ROC-AUC with ties (mid-ranks): NaN when one class is absent. */
double inf__roc_auc(const int *y, const double *score, int n);

/* ---- evaluate.c ---- */

typedef struct inf__eval_result {
    int rows, rejected, unlabelled;
    inf__metrics m;
    char scores_from[200]; /* which output was scored and how ("probabilities[:,1]") */
    char ignored_note[600]; /* inf__tool_rows' ignored_note */
} inf__eval_result;

/* Whether an output of this name holds the scores, the probabilities a
 * classifier's quality is judged on: a name with "prob" in it (any case);
 * when no float output has one, the first float output does.  The one rule
 * of evaluate, distill and the quality of logged predictions (quality.c). */
static inline bool inf__tools_scores_name(const char *name) {
    return strcasestr(name, "prob") != NULL;
}
/* Quality of the session's model on the labelled rows of src_uri (through
 * p).  task_override: -1 = detect (see docs/compression.md). */
inf_status inf__evaluate(const char *src_uri, const inf_pipeline *p, inf_session *session, const char *label,
                         int task_override, inf__eval_result *out, inf_error *err);
/* Turns collected rows into the task's arrays: class index per row (y_class)
 * and class probabilities [n, C] (classification), or y/pred (regression). */
typedef struct inf__task_data {
    int task, n, C;
    int *y_class;    /* classification */
    double *P;       /* [n, C]; binary: C = 2 */
    double *y, *pred;/* regression */
    char score_output[128]; /* the output scored (probabilities, logits or values) */
    char label_output[128]; /* the model's label output ("" when none) */
    inf_dtype label_dtype;
    int64_t *class_labels;  /* int label output: label value of each class index (C), else NULL */
    char scores_from[200];
} inf__task_data;
inf_status inf__task_data_build(const inf__tool_rows *r, int task_override, int need_labels, inf__task_data *out,
                                inf_error *err);
void inf__task_data_free(inf__task_data *t);

/* ---- linalg.c ---- */
/* Solves (A + ridge*I) x = b for symmetric positive definite A [n, n] in
 * place, for nrhs right-hand sides b [n, nrhs] (row-major).  -1 when A is
 * not positive definite even with the ridge. */
int inf__cholesky_solve(double *A, int n, double *B, int nrhs, double ridge);
typedef struct inf__rng {
    uint64_t s;
} inf__rng;
uint64_t inf__rng_next(inf__rng *r);
double inf__rng_uniform(inf__rng *r); /* [0, 1) */
double inf__rng_normal(inf__rng *r);

/* ---- prune.c ---- */
typedef struct inf__prune_options {
    double sparsity;       /* fraction removed, (0, 1) */
    int structured;
    const char *calibration; /* source URI (may be NULL) */
    const inf_pipeline *pipeline; /* maps calibration records (the model's) */
    int calibration_rows;  /* 0 = 5000 */
    int threads;
} inf__prune_options;
typedef struct inf__prune_report {
    int n_layers;          /* weights pruned (unstructured) / hidden layers narrowed (structured) */
    int64_t params_before, params_after, zeros_after;
    int neurons_before, neurons_after;
    int compensated;       /* layers compensated by least squares */
    char detail[2048];     /* per layer, one line each */
} inf__prune_report;
inf_status inf__prune(const char *in_path, const char *out_path, const inf__prune_options *o,
                      inf__prune_report *rep, inf_error *err);

/* ---- distill.c ---- */
typedef struct inf__distill_options {
    int hidden[16];
    int n_hidden;
    int epochs;         /* max; default 100 */
    double temperature; /* default 2 */
    double holdout;     /* default 0.2 */
    uint64_t seed;      /* default 1 */
    double lr;          /* default 1e-3 */
    int batch;          /* default 64 */
    int patience;       /* epochs without holdout improvement; default 8 */
    const char *label;  /* optional label column: quality on the holdout */
    int quiet;
} inf__distill_options;
typedef struct inf__distill_report {
    int rows_train, rows_holdout, epochs_run, best_epoch, task;
    double holdout_loss;
    double agreement;       /* top-1 agreement with the teacher on the holdout */
    double mean_abs_diff;   /* mean |p_student - p_teacher| (classification: per class prob; regression: output) */
    int has_quality;
    inf__metrics teacher_q, student_q; /* on the holdout, against the labels */
    int64_t parameters;
    char zipmap_output[128]; /* the teacher's scores were a ZipMap output: the student writes a float tensor */
} inf__distill_report;
inf_status inf__distill(const char *src_uri, const inf_pipeline *p, inf_session *teacher, const inf_model *teacher_model,
                        const inf__distill_options *o, const char *out_path, inf__distill_report *rep, inf_error *err);

/* ---- mlp_onnx.c ---- */
typedef struct inf__mlp {
    int n_layers;        /* dense layers (hidden + output) */
    int dims[18];        /* dims[0] = inputs, dims[n_layers] = outputs */
    float *W[17];        /* [dims[l], dims[l+1]] */
    float *b[17];
    float *mean, *scale; /* input standardisation: (x - mean) * scale; NaN -> 0 after it */
} inf__mlp;
/* How the student's last layer becomes the teacher's outputs. */
typedef struct inf__mlp_outputs {
    const inf_model *teacher;
    int task;                 /* binary (with C columns: 1 = sigmoid, 2 = softmax), multiclass, regression */
    const char *prob_output;  /* teacher output the probabilities / values go to */
    const char *label_output; /* teacher label output ("" / NULL: none) */
    inf_dtype label_dtype;
    const int64_t *class_labels; /* label value per class (NULL: the index) */
    bool logits;                 /* the teacher's scores are logits: the student writes its own (no Softmax) */
} inf__mlp_outputs;
inf_status inf__mlp_write_onnx(const inf__mlp *mlp, const inf__mlp_outputs *o, const char *path, inf_error *err);

#endif /* INF_TOOLS_H */
