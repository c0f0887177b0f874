/*
 * nms.c -- ONNX NonMaxSuppression, opsets 10-17.
 *
 * Inputs: boxes [B, S, 4] and scores [B, C, S] (float32; float16/float64
 * accepted), then optional max_output_boxes_per_class (int64, default 0:
 * select nothing), iou_threshold (float, default 0) and score_threshold
 * (float; absent means no score filter).  center_point_box 0 reads boxes as
 * two opposite corners [y1, x1, y2, x2] in any order, 1 as
 * [x_center, y_center, width, height].
 *
 * Output selected_indices int64 [K, 3] of (batch, class, box), batch-major,
 * then class, then by decreasing score (ties: lower box index first), as
 * onnxruntime orders them.  Per (batch, class): candidates are the boxes
 * with score > score_threshold; each is kept unless its IoU with an already
 * kept box is > iou_threshold; at most max_output_boxes_per_class are kept.
 * Boxes with zero area, or no overlap, have IoU 0.
 *
 * Memory: one scratch block for the candidate order (3 int64 per box) and
 * one for the selections (B * C * min(S, max) triples).
 *
 * Deviations: none known.
 */
#include <math.h>

#include "ops/ref/data_move.h"

typedef struct nms_box {
    double x0, y0, x1, y1; /* x0 <= x1, y0 <= y1 */
} nms_box;

static nms_box nms_read_box(const inf_tensor *boxes, int64_t i, bool center) {
    double v[4];
    for (int k = 0; k < 4; k++) v[k] = inf__tensor_get_f64(boxes, i * 4 + k);
    nms_box b;
    if (center) {
        b.x0 = v[0] - v[2] / 2, b.x1 = v[0] + v[2] / 2;
        b.y0 = v[1] - v[3] / 2, b.y1 = v[1] + v[3] / 2;
    } else {
        b.y0 = fmin(v[0], v[2]), b.y1 = fmax(v[0], v[2]);
        b.x0 = fmin(v[1], v[3]), b.x1 = fmax(v[1], v[3]);
    }
    return b;
}

static bool nms_suppresses(const nms_box *a, const nms_box *b, double threshold) {
    double ix0 = fmax(a->x0, b->x0), ix1 = fmin(a->x1, b->x1);
    double iy0 = fmax(a->y0, b->y0), iy1 = fmin(a->y1, b->y1);
    if (!(ix1 > ix0 && iy1 > iy0)) return false;
    double inter = (ix1 - ix0) * (iy1 - iy0);
    double area_a = (a->x1 - a->x0) * (a->y1 - a->y0), area_b = (b->x1 - b->x0) * (b->y1 - b->y0);
    double uni = area_a + area_b - inter;
    if (!(area_a > 0 && area_b > 0 && uni > 0)) return false;
    return inter / uni > threshold;
}

/* Stable merge sort of idx[0..n) by decreasing score. */
static void nms_sort(const inf_tensor *scores, int64_t base, int64_t *idx, int64_t *tmp,
                     int64_t n) {
    for (int64_t w = 1; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int64_t a = lo, b = mid, k = lo;
            while (a < mid && b < hi)
                tmp[k++] = inf__tensor_get_f64(scores, base + idx[b]) >
                                   inf__tensor_get_f64(scores, base + idx[a])
                               ? idx[b++]
                               : idx[a++];
            while (a < mid) tmp[k++] = idx[a++];
            while (b < hi) tmp[k++] = idx[b++];
        }
        memcpy(idx, tmp, sizeof(int64_t) * (size_t)n);
    }
}

static inf_status nms_scalar(inf__kernel_ctx *ctx, int i, const char *name, bool want_int,
                             double dflt, bool *present, double *out) {
    const inf_tensor *t;
    inf_status st = move_input(ctx, i, name, false, &t);
    *present = false;
    *out = dflt;
    if (st != INF_OK || !t || inf_tensor_numel(t) == 0) return st;
    if (inf_tensor_numel(t) != 1 ||
        (want_int ? !inf__dtype_is_int(t->dtype) : !inf__dtype_is_float(t->dtype)))
        return inf__kernel_error(ctx, INF_ESHAPE, "input %s: expected one %s value", name,
                                 want_int ? "int64" : "float");
    *present = true;
    *out = want_int ? (double)inf__tensor_get_i64(t, 0) : inf__tensor_get_f64(t, 0);
    return INF_OK;
}

typedef struct nms_args {
    int64_t max_out;
    double iou, score;
    bool has_score;
    bool center;
} nms_args;

/* Selects the boxes of (batch b, class c) into sel (box indices); returns the count. */
static int64_t nms_select(const nms_args *a, const inf_tensor *boxes, const inf_tensor *scores,
                          int64_t b, int64_t c, int64_t S, int64_t C, int64_t *order, int64_t *tmp,
                          int64_t *sel) {
    int64_t base = (b * C + c) * S, n = 0, k = 0;
    for (int64_t i = 0; i < S; i++)
        if (!a->has_score || inf__tensor_get_f64(scores, base + i) > a->score) order[n++] = i;
    nms_sort(scores, base, order, tmp, n);
    for (int64_t j = 0; j < n && k < a->max_out; j++) {
        nms_box cand = nms_read_box(boxes, b * S + order[j], a->center);
        bool keep = true;
        for (int64_t m = 0; m < k && keep; m++) {
            nms_box kept = nms_read_box(boxes, b * S + sel[m], a->center);
            keep = !nms_suppresses(&kept, &cand, a->iou);
        }
        if (keep) sel[k++] = order[j];
    }
    return k;
}

static inf_status nms_run(inf__kernel_ctx *ctx) {
    const inf_tensor *boxes, *scores;
    inf_status st;
    nms_args a = {0};
    double max_out;
    bool present;
    if ((st = move_input(ctx, 0, "boxes", true, &boxes)) != INF_OK ||
        (st = move_input(ctx, 1, "scores", true, &scores)) != INF_OK ||
        (st = nms_scalar(ctx, 2, "max_output_boxes_per_class", true, 0, &present, &max_out)) !=
            INF_OK ||
        (st = nms_scalar(ctx, 3, "iou_threshold", false, 0, &present, &a.iou)) != INF_OK ||
        (st = nms_scalar(ctx, 4, "score_threshold", false, 0, &a.has_score, &a.score)) != INF_OK)
        return st;
    if (!inf__dtype_is_float(boxes->dtype) || !inf__dtype_is_float(scores->dtype) ||
        boxes->ndim != 3 || scores->ndim != 3 || boxes->dims[2] != 4 ||
        scores->dims[0] != boxes->dims[0] || scores->dims[2] != boxes->dims[1])
        return inf__kernel_error(ctx, INF_ESHAPE,
                                 "inputs: expected float boxes [B, S, 4] and scores [B, C, S]");
    a.center = inf__attr_int(ctx->node, "center_point_box", 0) != 0;
    int64_t B = boxes->dims[0], S = boxes->dims[1], C = scores->dims[1];
    a.max_out = max_out < 0 ? 0 : max_out > (double)S ? S : (int64_t)max_out;

    int64_t *order = NULL, *all = NULL, n_all = 0;
    size_t cap = (size_t)(B * C * a.max_out);
    if (S > 0 && !(order = inf__kernel_scratch(ctx, sizeof(int64_t) * 3 * (size_t)S)))
        return INF_ENOMEM;
    if (cap > 0 && !(all = inf__kernel_scratch(ctx, sizeof(int64_t) * 3 * cap))) return INF_ENOMEM;
    for (int64_t b = 0; b < B && a.max_out > 0; b++)
        for (int64_t c = 0; c < C; c++) {
            int64_t *sel = order + 2 * S;
            int64_t k = nms_select(&a, boxes, scores, b, c, S, C, order, order + S, sel);
            for (int64_t m = 0; m < k; m++, n_all++) {
                all[3 * n_all] = b;
                all[3 * n_all + 1] = c;
                all[3 * n_all + 2] = sel[m];
            }
        }
    int64_t dims[2] = {n_all, 3};
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, INF_DTYPE_I64, 2, dims, &y)) != INF_OK) return st;
    if (n_all) memcpy(y->data, all, sizeof(int64_t) * 3 * (size_t)n_all);
    return INF_OK;
}

const inf__op_impl op_nms = {NULL, nms_run};
