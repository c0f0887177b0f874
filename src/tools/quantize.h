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
 *                     calibrate added as graph outputs -- over real records
 *                     (any batch source through the pipeline: the spec or the
 *                     default mapping) or a tensor file (.npy/.pb), and
 *                     turns what it sees into ranges (minmax, percentile,
 *                     entropy).
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

/* ---- calibration (quantize_calib.c) ----
 * Ranges [lo[i], hi[i]] of the n float tensors called names[i] over the
 * calibration data (opts: in_path, calibration, spec, calibration_rows,
 * method); *rows receives the records used. */
inf_status inf__tools_calibrate(const inf__quantize_options *opts, const char *const *names, int n, float *lo,
                                float *hi, long long *rows, long long *nonfinite, inf_error *err);

#endif /* INF_TOOLS_QUANTIZE_H */
