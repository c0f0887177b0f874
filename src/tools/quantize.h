/*
 * quantize.h -- `infera quantize`: FP32 ONNX -> standard ONNX INT8 model.
 *
 * DESIGN: three files.
 *   quantize.c        chooses the nodes (Gemm, MatMul, Conv; not --exclude'd,
 *                     not without a constant weight unless both inputs are
 *                     activations of a static MatMul and --quantize-attention:
 *                     attention's Q x K^T and P x V, both inputs then per-tensor
 *                     uint8), computes the weight
 *                     and activation parameters and rewrites the model through
 *                     the ONNX editor (infera/model_write.h) in QDQ or QOperator form.
 *   quantize_calib.c  static mode: runs the FP32 model -- with the tensors to
 *                     calibrate added as graph outputs -- over the calibration
 *                     data and turns what it sees into ranges (minmax,
 *                     percentile, entropy).
 *   quantize_feed.c   the calibration data as batches of model inputs: real
 *                     records (any batch source through the pipeline: the
 *                     spec or the default mapping) or a tensor file (.npy/.pb).
 *   quantize_sensitivity.c  --sensitivity / --min-sqnr: each node quantized
 *                     alone (one calibration shared by every run), its
 *                     outputs compared with the FP32 model's on the
 *                     calibration data; nodes below --min-sqnr stay FP32.
 *   cli/cmd_quantize.c  the command line.
 * Conventions (those of ONNX Runtime's quantizer, so both runtimes read the
 * result the same way): activations uint8 asymmetric (the range always
 * contains 0; scale = (hi - lo) / 255, zero point round(-lo / scale));
 * weights int8 symmetric in [-127, 127] (zero point 0), per tensor or per
 * output channel; biases int32 with scale x_scale * w_scale.
 */
#ifndef INF_TOOLS_QUANTIZE_H
#define INF_TOOLS_QUANTIZE_H

#include <stdbool.h>
#include <stddef.h>

#include "infera/infera.h"
#include "infera/model.h"
#include "infera/model_write.h"

typedef enum inf__quant_method {
    INF_QUANT_MINMAX = 0,
    INF_QUANT_PERCENTILE,
    INF_QUANT_ENTROPY,
} inf__quant_method;

typedef struct inf__quantize_options {
    const char *in_path, *out_path;
    bool static_mode;         /* false: dynamic (activations quantized at run time) */
    const char *calibration;  /* static: a batch source URI, or a .npy / .pb tensor file */
    const char *spec;         /* pipeline spec for the calibration records; NULL = default mapping */
    int calibration_rows;     /* most records read; 0 = all */
    inf__quant_method method;
    bool per_channel;
    bool reduce_range;        /* weights in [-64, 64] (7 bits): exact in vpmaddubsw's int16 pair sums, the
                               * instruction ONNX Runtime's kernels use on CPUs without VNNI */
    bool quantize_attention;  /* static: also MatMuls of two activations (attention's Q x K^T, P x V) */
    bool qoperator;           /* false: QDQ */
    const char *const *exclude; /* node names kept in FP32 */
    int n_exclude;
} inf__quantize_options;

typedef struct inf__quantize_report {
    int n_quantized, n_excluded, n_candidates;             /* nodes with a constant weight */
    int n_act_quantized, n_act_excluded, n_act_candidates; /* MatMuls of two activations (static mode) */
    int n_calibrated_tensors;
    long long calibration_rows;
    long long calibration_nonfinite;         /* NaN / infinite activation values left out of the ranges */
    size_t bytes_before, bytes_after;        /* file sizes */
    size_t weight_bytes_before, weight_bytes_after;
} inf__quantize_report;

/* Quantizes opts->in_path into opts->out_path.  Errors name the model, the
 * node, the calibration source or the spec field, and why (INF_EINVAL for a
 * model with nothing to quantize or an empty calibration source). */
inf_status inf__tools_quantize(const inf__quantize_options *opts, inf__quantize_report *report, inf_error *err);

/* ---- runs that share one calibration (the sensitivity analysis) ----
 * Activation ranges by tensor name, measured once on the calibration data:
 * every selection of nodes quantizes a subset of the tensors the full run
 * does, and a tensor's range depends only on the FP32 model, so the runs
 * reuse them. */
typedef struct inf__quant_ranges {
    int n;
    char **names;
    float *lo, *hi;
    long long rows, nonfinite; /* what calibration saw */
} inf__quant_ranges;
void inf__quant_ranges_free(inf__quant_ranges *r);

/* Which candidates one run quantizes, besides --exclude's choice. */
typedef struct inf__quant_select {
    const char *only;        /* non-NULL: only the candidate writing this tensor (its first output) */
    const char *const *skip; /* candidates (by the tensor they write) kept FP32 too */
    int n_skip;
    inf__quant_ranges *ranges; /* non-NULL: used when they cover every tensor to calibrate; else those
                                  * measured are stored there */
} inf__quant_select;

/* A quantized node, as a run lists them. */
typedef struct inf__quant_node {
    char *name, *op_type, *output;
} inf__quant_node;
void inf__quant_nodes_free(inf__quant_node *nodes, int n);

/* The quantization of opts->in_path (opts->out_path unused) per sel (NULL:
 * --exclude only), in memory: *out the edited model, *nodes (may be NULL) the
 * nodes quantized, in graph order.  report's file sizes are left 0. */
inf_status inf__tools_quantize_edit(const inf__quantize_options *opts, const inf__quant_select *sel,
                                    inf__quantize_report *report, inf_model_edit **out, inf__quant_node **nodes,
                                    int *n_nodes, inf_error *err);
/* Writes ed to opts->out_path and fills report's sizes. */
inf_status inf__tools_quantize_save(const inf__quantize_options *opts, const inf_model_edit *ed,
                                    inf__quantize_report *report, inf_error *err);

/* ---- the sensitivity analysis (quantize_sensitivity.c) ---- */
typedef struct inf__quant_fidelity {
    double sqnr_db; /* 10 log10(sum ref^2 / sum (q - ref)^2) over every float output; +inf when equal */
    double max_abs_err;
    double top1; /* argmax agreement over the last dim of the outputs whose last dim is > 1; < 0: none */
    long long top1_rows;
} inf__quant_fidelity;

typedef struct inf__quant_sensitivity_row {
    inf__quant_node node;
    inf__quant_fidelity fid; /* the model with this node alone quantized */
    bool excluded;           /* by --min-sqnr */
} inf__quant_sensitivity_row;

typedef struct inf__quant_sensitivity {
    inf__quant_sensitivity_row *rows; /* worst SQNR first */
    int n_rows;
    inf__quant_fidelity all; /* every candidate quantized */
    inf__quant_fidelity out; /* OUT as written (all, unless --min-sqnr excluded nodes) */
    int n_min_sqnr_excluded;
    long long records;      /* records compared on */
    char **skipped_outputs; /* outputs left out of the comparison (not float32) */
    int n_skipped_outputs;
} inf__quant_sensitivity;
void inf__quant_sensitivity_free(inf__quant_sensitivity *s);

/* As inf__tools_quantize, and the per-node analysis into *sens; with
 * use_min_sqnr the nodes whose alone-quantized SQNR is below min_sqnr_db are
 * kept FP32 in OUT.  Needs opts->calibration (any mode). */
inf_status inf__tools_quantize_sensitivity(const inf__quantize_options *opts, bool use_min_sqnr, double min_sqnr_db,
                                           inf__quantize_report *report, inf__quant_sensitivity *sens, inf_error *err);

/* ---- calibration data (quantize_feed.c) ---- */
enum { INF__QUANT_FEED_ROWS = 64 }; /* the most rows of one batch */
typedef inf_status (*inf__quant_batch_fn)(void *ctx, const inf_tensor *const *inputs, int rows, inf_error *err);
/* Feeds opts->calibration (records mapped by opts->spec or the default
 * mapping, or a .npy / .pb tensor file; at most opts->calibration_rows rows)
 * to fn as batches of model's inputs, from the start; *rows (may be NULL)
 * receives the rows fed.  INF_EINVAL for an empty source. */
inf_status inf__tools_quant_feed(const inf__quantize_options *opts, const inf_model *model, inf__quant_batch_fn fn,
                                 void *ctx, long long *rows, inf_error *err);

/* ---- calibration (quantize_calib.c) ----
 * Ranges [lo[i], hi[i]] of the n float tensors called names[i] over the
 * calibration data (opts: in_path, calibration, spec, calibration_rows,
 * method); *rows receives the records used. */
inf_status inf__tools_calibrate(const inf__quantize_options *opts, const char *const *names, int n, float *lo,
                                float *hi, long long *rows, long long *nonfinite, inf_error *err);

#endif /* INF_TOOLS_QUANTIZE_H */
