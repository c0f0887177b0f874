/*
 * conv.c -- reference kernels for Conv and ConvTranspose.
 *
 * ONNX ops:
 *   Conv           opsets 1-17: N-D (1-D, 2-D, 3-D and beyond), group,
 *                  dilations, strides, pads, auto_pad (NOTSET, SAME_UPPER,
 *                  SAME_LOWER, VALID), kernel_shape (checked against W, else
 *                  taken from W), optional bias B.
 *   ConvTranspose  opsets 1-17: the same attributes plus output_padding and
 *                  output_shape (spatial dims, or the full N,C,... shape).
 * dtypes: float32 (im2col / col2im around inf__ops_sgemm from ref/gemm.c),
 *         float64 (the same with plain loops), float16 (computed in float32).
 * Deviations: none.  The im2col buffer and the float32 copies of float16
 *         tensors live in the kernel's scratch memory (inf__kernel_scratch:
 *         one block for the X, W, B copies, one for Y, one for the columns).
 *         A 1x1, stride-1, unpadded Conv skips im2col (X is the column
 *         matrix: one GEMM per image and group); a 2-D depthwise float32
 *         Conv (group == C == M) is computed directly (depthwise_planes;
 *         with AVX2/FMA, inf__conv2d_depthwise_f32_avx2: same bits).  With
 *         AVX2/FMA a float32 1x1, stride-1, unpadded, one-group Conv runs
 *         the pointwise micro-kernel on W as given
 *         (inf__conv2d_pointwise_f32_avx2, ops/x86/pointwise_avx2.c; W is
 *         not packed at load): same bits.
 *         On a CPU with AVX2/FMA, other float32 (and float16, computed in
 *         float32) 1-D/2-D Convs go through inf__conv2d_f32_avx2
 *         (ops/x86/conv_avx2.c): im2col fused into the GEMM's panel packing,
 *         a constant W packed once at init (conv_params.wpack; a W given at
 *         run time is packed into scratch), bias and a fused ReLU/Clip
 *         epilogue applied in the store -- same bits as the im2col path.
 *         Convs with many output channels per group and a deep K
 *         (inf__conv2d_direct_fits: ResNet's 3x3s), and strided stems
 *         (strided_stem: 3x3/2 3 -> 32), take the direct variant
 *         instead (ops/x86/conv_direct_avx2.c: W packed in 16-channel
 *         blocks, X zero-padded into scratch, no im2col) -- same bits too;
 *         stride-1 Convs with a shallow K (inf__conv2d_rows_fits: a stem)
 *         take the rows variant (ops/x86/conv_rows_avx2.c: positions in the
 *         lanes read from the padded rows, W in 4-channel blocks) -- same bits.
 *         3x3, stride-1, dilation-1, one-group Convs with >= 16 input and
 *         output channels (inf__conv2d_winograd_tile: ResNet's stride-1
 *         3x3s) take the Winograd variant (ops/x86/conv_winograd_avx2.c:
 *         F(4x4,3x3) up to 64 x 64 channels, F(2x2,3x3) above; W
 *         transformed to U = G g G^T and packed once at load) -- not the
 *         same bits (within a few 1e-6 of sum |w||x| for F(2x2), 1e-5 for
 *         F(4x4)), but still independent of the batch and the threads.
 *         The selector is inf__conv2d_avx2_variant; docs/convolutions.md has the table.
 *         On path avx512 (inf__cpu_has_avx512) the direct, rows and Winograd
 *         variants run their AVX-512 siblings (ops/x86/ files named _avx512.c: same
 *         packing, scratch and bits), and strided or 1x1 Convs (the
 *         pointwise ones too) with 32-channel groups and K >= 32 take the
 *         direct variant (inf__conv2d_direct_wide).
 *
 * Both ops use one index relation between an "image" (X for Conv, Y for
 * ConvTranspose) and a grid of kernel positions (Y's spatial grid for
 * Conv, X's for ConvTranspose):
 *     img[d] = pos[d] * stride[d] - pad_begin[d] + kpos[d] * dilation[d]
 * Conv:          col[c, k][pos] = img[c][...]  (im2col), Y_g = W_g * col.
 * ConvTranspose: col = W_g^T * X_g, img[c][...] += col[c, k][pos]  (col2im).
 * Positions outside the image read zero / are dropped.
 */
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "core/cpu.h"
#include "ops/ops.h"

enum { AUTO_NOTSET, AUTO_SAME_UPPER, AUTO_SAME_LOWER, AUTO_VALID };
#define MAX_SP (INF_MAX_DIMS - 2)

typedef struct conv_params {
    int auto_pad;
    int64_t group;
    int n_kernel, n_strides, n_dilations, n_pads, n_out_pad, n_out_shape;
    const int64_t *kernel, *strides, *dilations, *pads, *out_pad, *out_shape;
    /* Conv's constant float32 W packed at load for the AVX2 kernel variant
     * wvar (inf__conv2d_avx2_variant: panel, direct or rows), used while the run's W is
     * still that constant */
    const float *wpack;
    const void *wsrc;
    int64_t wm, wkdim;
    int wvar;
    /* ConvMaxPool: the fused MaxPool's kernel_shape and strides (2-D) */
    int64_t pool[4];
    /* attribute channels_last (Conv, ConvAdd; graph/passes/channels_last.c):
     * INF_NHWC_* bits, the operands held [n][h][w][c] */
    int nhwc;
    /* a channels-last 1x1 Conv's constant W as the GEMM's packed B (W^T,
     * [C][M]; inf__ops_sgemm_prepack), or NULL */
    const float *w_rows;
} conv_params;

/* ---- attributes ---- */

#if defined(__x86_64__)
/* The AVX2 kernel variant for a Conv described by c (at load only its
 * channel and kernel fields: a property of W and the attributes):
 *   WINO2 / WINO4  Winograd F(2x2,3x3) / F(4x4,3x3) for 3x3, stride 1,
 *                  dilation 1, one group, enough channels
 *                  (inf__conv2d_winograd_tile: ResNet's stride-1 3x3s;
 *                  ops/x86/conv_winograd_avx2.c, W transformed at load);
 *   WINO2S2        F(2x2,3x3) at stride 2 through the input's even/odd
 *                  phases, for 3x3/2s with >= 32 channels and U within L2
 *                  (inf__conv2d_winograd_tile: ResNet's downsampling 3x3s);
 *   DIRECT         many output channels per group and a deep K or a row
 *                  stride above 2 (ResNet's strided 3x3s; strided 1-D
 *                  front ends), or a strided stem (strided_stem);
 *   ROWS           a shallow K at stride 1 along the row (a stem);
 *   PANEL          the rest (im2col fused into the GEMM's packing).
 * Each packs W its own way; all but Winograd give the im2col path's bits. */
/* A network's strided stem: a spatial kernel at stride 2 along the row
 * over a shallow K (3x3/2 3->32: K = 27), 16 or 32 output channels per
 * group.  The direct kernel ran such shapes in 0.54-0.78x the panel
 * kernel's time (bench/bench_stem, batch 1 and 16), level at K = 9; with
 * 64 output channels the panel kernel was faster (direct 1.06-1.22x). */
static bool strided_stem(const inf__conv2d *c) {
    int64_t kdim = c->cg * c->kh * c->kw;
    return c->sw == 2 && c->kh * c->kw > 1 && kdim < 96 && (c->mg == 16 || c->mg == 32);
}

/* On the avx512 path the direct kernel's 32-channel tile also wins on
 * strided Convs with a K the AVX2 one leaves to the panel kernel -- the bench
 * CNN's 1x1/2 shortcuts (32 -> 64, 64 -> 128; K = 32, 64) ran 0.53-0.83x
 * the panel kernel's time at batch 1 and 16 on Zen 5 -- and on 1x1 Convs,
 * the pointwise ones included: mobile's six pointwise layers (K 32-256,
 * 64-512 channels) ran 0.55-0.71x the pointwise kernel's time
 * (bench/bench_conv, 1 thread, batch 1). */
bool inf__conv2d_direct_wide(const inf__conv2d *c) {
    return (c->sw >= 2 || c->kh * c->kw == 1) && c->mg % 32 == 0 && c->cg * c->kh * c->kw >= 32 &&
           inf__cpu_has_avx512();
}

inf__conv2d_variant inf__conv2d_avx2_variant(const inf__conv2d *c) {
    int64_t kdim = c->cg * c->kh * c->kw;
    int tile = inf__conv2d_winograd_tile(c);
    if (tile)
        return tile == 4 ? INF_CONV2D_WINO4 : tile == INF_WINOGRAD_S2 ? INF_CONV2D_WINO2S2 : INF_CONV2D_WINO2;
    if (inf__conv2d_direct_fits(c->mg, kdim, c->sw) || strided_stem(c) || inf__conv2d_direct_wide(c))
        return INF_CONV2D_DIRECT;
    return inf__conv2d_rows_fits(c->mg, kdim, c->sw) ? INF_CONV2D_ROWS : INF_CONV2D_PANEL;
}

static int wino_tile(int var) {
    return var == INF_CONV2D_WINO4 ? 4 : var == INF_CONV2D_WINO2 ? 2 : var == INF_CONV2D_WINO2S2 ? INF_WINOGRAD_S2 : 0;
}

static int64_t variant_w_floats(int var, const inf__conv2d *c) {
    int64_t kdim = c->cg * c->kh * c->kw;
    if (wino_tile(var)) return inf__conv2d_winograd_w_floats(wino_tile(var), c->cg, c->m);
    if (var == INF_CONV2D_DIRECT) return inf__conv2d_direct_w_floats(c->m, c->group, kdim);
    if (var == INF_CONV2D_ROWS) return inf__conv2d_rows_w_floats(c->m, c->group, kdim);
    return inf__conv2d_packed_w_floats(c->m, c->group, kdim);
}

static void variant_pack_w(int var, const inf__conv2d *c, const float *w, float *dst) {
    int64_t kdim = c->cg * c->kh * c->kw;
    if (wino_tile(var)) inf__conv2d_winograd_pack_w(wino_tile(var), c->cg, c->m, w, dst);
    else if (var == INF_CONV2D_DIRECT) inf__conv2d_direct_pack_w(c->m, c->group, kdim, w, dst);
    else if (var == INF_CONV2D_ROWS) inf__conv2d_rows_pack_w(c->m, c->group, kdim, w, dst);
    else inf__conv2d_pack_w(c->m, c->group, kdim, w, dst);
}

/* The kernel fields of a Conv's inf__conv2d from its W (rank 3 or 4) and
 * attributes (missing strides and dilations are 1; wrong lengths are
 * reported by the run, which picks its variant again). */
static inf__conv2d conv_shape_of_w(const conv_params *p, const inf_tensor *w) {
    int nd = w->ndim - 2, l = nd - 1;
    inf__conv2d c = {.m = w->dims[0], .group = p->group, .cg = w->dims[1], .mg = w->dims[0] / p->group,
                     .kh = nd == 2 ? w->dims[2] : 1, .kw = w->dims[w->ndim - 1], .sh = 1, .sw = 1, .dh = 1, .dw = 1};
    if (p->n_strides == nd) c.sh = nd == 2 ? p->strides[0] : 1, c.sw = p->strides[l];
    if (p->n_dilations == nd) c.dh = nd == 2 ? p->dilations[0] : 1, c.dw = p->dilations[l];
    c.c = c.cg * c.group;
    return c;
}
#endif

#if defined(__x86_64__)
/* ---- packed W kept in a compiled bundle (ops.h inf__convpack_entry) ---- */

/* The geometry variant_pack_w reads: m, group, cg and kdim (kh * kw folded into kh). */
static inf__conv2d pack_shape(const inf__convpack_entry *e) {
    return (inf__conv2d){.m = e->m, .group = e->group, .cg = e->cg, .kh = e->cg ? e->kdim / e->cg : 0, .kw = 1};
}

void inf__ops_conv_pack_again(const inf__convpack_entry *e, float *dst) {
    inf__conv2d c = pack_shape(e);
    variant_pack_w(e->var, &c, e->w, dst);
}

/* The stored packing for exactly this W, variant and geometry, or NULL.  The
 * float count is compared too: it is what the bundle loader could not check
 * (it knows no variants), so a stored entry of another size is never used. */
static const float *convpack_supplied(const inf__prepack_log *log, const inf__convpack_entry *k) {
    for (int i = 0; i < log->n_conv; i++) {
        const inf__convpack_entry *e = &log->conv[i];
        if (e->w == k->w && e->var == k->var && e->m == k->m && e->group == k->group && e->cg == k->cg &&
            e->kdim == k->kdim && e->floats == k->floats)
            return e->packed;
    }
    return NULL;
}

static void convpack_record(inf__prepack_log *log, const inf__convpack_entry *e) {
    if (inf__array_reserve((void **)&log->conv, &log->cap_conv, log->n_conv + 1, sizeof *log->conv)) {
        log->oom = true;
        return;
    }
    log->conv[log->n_conv++] = *e;
}

/* A Conv that will take the pointwise variant (inf__conv2d_pointwise_fits)
 * whatever its input size: 1x1, stride 1, one group, no padding. */
static bool pointwise_at_load(const conv_params *p, const inf__conv2d *c) {
    bool zero_pads = p->auto_pad == AUTO_NOTSET || p->auto_pad == AUTO_VALID;
    for (int i = 0; i < p->n_pads; i++) zero_pads = zero_pads && p->pads[i] == 0;
    return c->group == 1 && c->kh == 1 && c->kw == 1 && c->sh == 1 && c->sw == 1 && zero_pads;
}
#else
void inf__ops_conv_pack_again(const inf__convpack_entry *e, float *dst) { (void)e, (void)dst; }
#endif

/* Set on the thread running graph/passes/conv_add.c while it makes a
 * ConvAdd that takes its Conv's packing (inf__ops_conv_add_take_packing). */
static _Thread_local bool tl_conv_add_packing_follows;

void inf__ops_conv_add_packing_follows(bool follows) { tl_conv_add_packing_follows = follows; }

/* Conv and ConvAdd: packs a constant float32 1-D/2-D W for
 * inf__conv2d_f32_avx2 when the CPU has AVX2/FMA (shapes are checked again
 * at run time).  A ConvAdd the optimizer makes takes the packing of the
 * Conv it replaces instead; one read from a bundle packs here (without a
 * packing, W would be packed per run into scratch). */
static inf_status pack_const_w(const inf__node *node, inf__arena *arena, conv_params *p) {
#if defined(__x86_64__)
    bool conv =
        !strcmp(node->op_type, "Conv") ||
        ((!strcmp(node->op_type, "ConvAdd") || !strcmp(node->op_type, "ConvMaxPool")) && !tl_conv_add_packing_follows);
    const inf_tensor *w = conv ? inf__node_constant_input(node, 1) : NULL;
    if (!inf__cpu_has_avx2_fma() || !w || w->dtype != INF_DTYPE_F32 || !w->data || (w->ndim != 3 && w->ndim != 4))
        return INF_OK;
    int64_t kdim = 1;
    for (int i = 1; i < w->ndim; i++) kdim *= w->dims[i];
    if (w->dims[0] < 1 || kdim < 1 || w->dims[0] % p->group) return INF_OK; /* run reports it */
    if (w->ndim == 4 && w->dims[1] == 1 && w->dims[0] == p->group) return INF_OK; /* depthwise: reads W as given */
    inf__conv2d c = conv_shape_of_w(p, w);
    if (pointwise_at_load(p, &c) && !inf__conv2d_direct_wide(&c)) return INF_OK; /* 1x1: reads W as given */
    int var = inf__conv2d_avx2_variant(&c);
    int64_t floats = variant_w_floats(var, &c);
    inf__convpack_entry key = {w->data, var, c.m, c.group, c.cg, kdim, NULL, floats};
    inf__prepack_log *log = inf__ops_prepack_current();
    const float *packed = log && log->supply ? convpack_supplied(log, &key) : NULL;
    if (!packed) {
        char *raw = inf__arena_alloc(arena, (size_t)floats * sizeof(float) + 64);
        if (!raw) return INF_ENOMEM;
        float *dst = (float *)(((uintptr_t)raw + 63) & ~(uintptr_t)63); /* a cache line: the AVX-512 kernels' rows */
        variant_pack_w(var, &c, w->data, dst);
        packed = key.packed = dst;
        if (log && !log->supply) convpack_record(log, &key);
    }
    p->wpack = packed, p->wsrc = w->data, p->wm = w->dims[0], p->wkdim = kdim, p->wvar = var;
#else
    (void)node, (void)arena, (void)p;
#endif
    return INF_OK;
}

/* A node rewritten into the same op (graph/passes/channels_last.c adds an
 * attribute) keeps the W its params packed, if it is still the node's W. */
static bool reuse_packing(const inf__node *node, conv_params *p) {
    const conv_params *prev = node->prev_params;
    const inf_tensor *w = inf__node_constant_input(node, 1);
    if (!prev || !prev->wpack || !w || prev->wsrc != (const void *)w->data) return false;
    p->wpack = prev->wpack, p->wsrc = prev->wsrc, p->wm = prev->wm, p->wkdim = prev->wkdim, p->wvar = prev->wvar;
    return true;
}

/* A channels-last 1x1 Conv's constant W packed as the GEMM's B (conv_1x1_rows). */
static inf_status pack_w_rows(const inf__node *node, inf__arena *arena, conv_params *p) {
    const inf_tensor *w = inf__node_constant_input(node, 1);
    if (!w || w->dtype != INF_DTYPE_F32 || !w->data || w->ndim != 4 || w->dims[2] != 1 || w->dims[3] != 1 ||
        p->group != 1 || w->dims[0] < 1 || w->dims[1] < 1)
        return INF_OK;
    return inf__ops_sgemm_prepack(arena, true, w->dims[1], w->dims[0], w->data, w->dims[1], &p->w_rows);
}

static inf_status conv_init(inf__node *node, inf__arena *arena, inf_error *err) {
    conv_params *p = inf__op_params(arena, conv_params);
    if (!p) return INF_ENOMEM;
    const char *ap = inf__attr_string(node, "auto_pad", "NOTSET");
    if (!strcmp(ap, "NOTSET")) p->auto_pad = AUTO_NOTSET;
    else if (!strcmp(ap, "SAME_UPPER")) p->auto_pad = AUTO_SAME_UPPER;
    else if (!strcmp(ap, "SAME_LOWER")) p->auto_pad = AUTO_SAME_LOWER;
    else if (!strcmp(ap, "VALID")) p->auto_pad = AUTO_VALID;
    else return inf__node_error(node, err, INF_EMODEL, "unknown auto_pad '%s'", ap);
    p->group = inf__attr_int(node, "group", 1);
    if (p->group < 1)
        return inf__node_error(node, err, INF_EMODEL, "group = %lld, must be >= 1",
                               (long long)p->group);
    p->kernel = inf__attr_ints(node, "kernel_shape", &p->n_kernel);
    p->strides = inf__attr_ints(node, "strides", &p->n_strides);
    p->dilations = inf__attr_ints(node, "dilations", &p->n_dilations);
    p->pads = inf__attr_ints(node, "pads", &p->n_pads);
    p->out_pad = inf__attr_ints(node, "output_padding", &p->n_out_pad);
    p->out_shape = inf__attr_ints(node, "output_shape", &p->n_out_shape);
    inf_status st;
    if ((st = inf__check_window_attrs(node, err, true)) != INF_OK) return st;
    if (p->n_pads % 2)
        return inf__node_error(node, err, INF_EMODEL, "pads has %d values, expected an even count",
                               p->n_pads);
    int64_t nhwc = inf__attr_int(node, "channels_last", 0);
    bool conv = !strcmp(node->op_type, "Conv"), conv_add = !strcmp(node->op_type, "ConvAdd");
    bool conv_pool = !strcmp(node->op_type, "ConvMaxPool");
    if (nhwc < 0 || nhwc > (INF_NHWC_X | INF_NHWC_Y | INF_NHWC_RES) || (nhwc && !conv && !conv_add && !conv_pool) ||
        ((nhwc & INF_NHWC_RES) && !conv_add) || (conv_pool && (nhwc & ~(int64_t)INF_NHWC_Y)))
        return inf__node_error(node, err, INF_EMODEL, "channels_last = %lld: not a set of operands this node has",
                               (long long)nhwc);
    p->nhwc = (int)nhwc;
    if (!strcmp(node->op_type, "ConvMaxPool")) {
        int nk = 0, ns = 0;
        const int64_t *k = inf__attr_ints(node, "pool_kernel", &nk), *s = inf__attr_ints(node, "pool_strides", &ns);
        if (nk != 2 || ns != 2 || k[0] < 1 || k[1] < 1 || s[0] < 1 || s[1] < 1)
            return inf__node_error(node, err, INF_EMODEL, "pool_kernel and pool_strides need 2 positive values each");
        p->pool[0] = k[0], p->pool[1] = k[1], p->pool[2] = s[0], p->pool[3] = s[1];
    }
    node->params = p;
    inf_status pst = reuse_packing(node, p) ? INF_OK : pack_const_w(node, arena, p);
    return pst == INF_OK && p->nhwc ? pack_w_rows(node, arena, p) : pst;
}

/* ---- geometry ---- */

/* The image <-> kernel-position mapping for one op. */
typedef struct patch_map {
    int nd;
    int64_t img[MAX_SP], pos[MAX_SP], k[MAX_SP], s[MAX_SP], d[MAX_SP], pb[MAX_SP];
    int64_t img_total, pos_total, k_total;
} patch_map;

typedef struct conv_geom {
    int64_t n, c, m, group, cg, mg; /* batch, in/out channels, per-group counts */
    int64_t pe[MAX_SP];             /* pad at the end */
    patch_map pm;
    /* ConvAdd, float32, residual of Y's shape: the AVX2 kernel adds it in
     * its store and sets *res_added; otherwise conv_add_run adds it after */
    const float *res;
    bool *res_added;
    /* ConvMaxPool whose pooling the rows kernel does in its store (conv_pool_run) */
    const inf__conv2d_maxpool *pool;
    int nhwc; /* INF_NHWC_* bits of X, Y and res (2-D only) */
} conv_geom;

/* Checks the spatial attribute lengths against rank nd. */
static inf_status check_attr_lengths(inf__kernel_ctx *ctx, const conv_params *p, int nd) {
    const char *bad = NULL;
    int got = 0, want = nd;
    if (p->n_kernel && p->n_kernel != nd) bad = "kernel_shape", got = p->n_kernel;
    else if (p->n_strides && p->n_strides != nd) bad = "strides", got = p->n_strides;
    else if (p->n_dilations && p->n_dilations != nd) bad = "dilations", got = p->n_dilations;
    else if (p->n_pads && p->n_pads != 2 * nd) bad = "pads", got = p->n_pads, want = 2 * nd;
    else if (p->n_out_pad && p->n_out_pad != nd) bad = "output_padding", got = p->n_out_pad;
    if (bad)
        return inf__kernel_error(ctx, INF_ESHAPE, "attribute %s has %d values, X has %d spatial dims (expected %d)",
                                 bad, got, nd, want);
    return INF_OK;
}

/* Shared input checks: X is [N, C, spatial...], W has X's rank and,
 * when given, W's spatial dims equal kernel_shape. */
static inf_status check_xw(inf__kernel_ctx *ctx, const conv_params *p, const inf_tensor *x,
                           const inf_tensor *w, const char *wname) {
    char b1[96], b2[96];
    inf_dtype dt = x->dtype;
    if (dt != INF_DTYPE_F32 && dt != INF_DTYPE_F64 && dt != INF_DTYPE_F16)
        return inf__kernel_error(ctx, INF_ETYPE, "input X: expected float32, float64 or float16, got %s",
                                 inf_dtype_name(dt));
    if (w->dtype != dt)
        return inf__kernel_error(ctx, INF_ETYPE, "input %s: expected X's dtype %s, got %s", wname,
                                 inf_dtype_name(dt), inf_dtype_name(w->dtype));
    if (x->ndim < 3)
        return inf__kernel_error(ctx, INF_ESHAPE, "input X: expected rank >= 3 [N,C,D1,...], got %s",
                                 inf__shape_str(x->ndim, x->dims, b1, sizeof b1));
    if (w->ndim != x->ndim)
        return inf__kernel_error(ctx, INF_ESHAPE, "input %s %s: expected rank %d like X %s", wname,
                                 inf__shape_str(w->ndim, w->dims, b1, sizeof b1), x->ndim,
                                 inf__shape_str(x->ndim, x->dims, b2, sizeof b2));
    int nd = x->ndim - 2;
    inf_status st = check_attr_lengths(ctx, p, nd);
    if (st != INF_OK) return st;
    for (int i = 0; p->n_kernel && i < nd; i++)
        if (p->kernel[i] != w->dims[2 + i])
            return inf__kernel_error(ctx, INF_ESHAPE, "kernel_shape[%d] = %lld but input %s is %s", i,
                                     (long long)p->kernel[i], wname,
                                     inf__shape_str(w->ndim, w->dims, b1, sizeof b1));
    for (int i = 0; i < nd; i++)
        if (w->dims[2 + i] < 1)
            return inf__kernel_error(ctx, INF_ESHAPE, "input %s: empty kernel %s", wname,
                                     inf__shape_str(w->ndim, w->dims, b1, sizeof b1));
    return INF_OK;
}

static inf_status check_bias(inf__kernel_ctx *ctx, const inf_tensor *b, const inf_tensor *x,
                             int64_t m) {
    char buf[96];
    if (!b) return INF_OK;
    if (b->dtype != x->dtype)
        return inf__kernel_error(ctx, INF_ETYPE, "input B: expected X's dtype %s, got %s",
                                 inf_dtype_name(x->dtype), inf_dtype_name(b->dtype));
    if (b->ndim != 1 || b->dims[0] != m)
        return inf__kernel_error(ctx, INF_ESHAPE, "input B: expected shape [%lld], got %s",
                                 (long long)m, inf__shape_str(b->ndim, b->dims, buf, sizeof buf));
    return INF_OK;
}

static void fill_common(const conv_params *p, const inf_tensor *w, int nd, patch_map *pm) {
    pm->nd = nd;
    pm->k_total = 1;
    for (int i = 0; i < nd; i++) {
        pm->k[i] = w->dims[2 + i];
        pm->s[i] = p->n_strides ? p->strides[i] : 1;
        pm->d[i] = p->n_dilations ? p->dilations[i] : 1;
        pm->k_total *= pm->k[i];
    }
}

static inf_status conv_geometry(inf__kernel_ctx *ctx, const conv_params *p, const inf_tensor *x,
                                const inf_tensor *w, conv_geom *g) {
    char b1[96], b2[96];
    inf_status st = check_xw(ctx, p, x, w, "W");
    if (st != INF_OK) return st;
    int nd = x->ndim - 2;
    g->n = x->dims[0], g->c = x->dims[1], g->m = w->dims[0], g->group = p->group;
    if (g->c != w->dims[1] * g->group || g->m % g->group)
        return inf__kernel_error(ctx, INF_ESHAPE,
                                 "X %s has %lld channels, W %s with group %lld needs W[1]*group = %lld "
                                 "channels and W[0] divisible by group",
                                 inf__shape_str(x->ndim, x->dims, b1, sizeof b1), (long long)g->c,
                                 inf__shape_str(w->ndim, w->dims, b2, sizeof b2),
                                 (long long)g->group, (long long)(w->dims[1] * g->group));
    g->cg = g->c / g->group, g->mg = g->m / g->group;
    g->nhwc = p->nhwc;
    if (g->nhwc && (nd != 2 || x->dtype != INF_DTYPE_F32))
        return inf__kernel_error(ctx, INF_ESHAPE, "channels_last operands need a 2-D float32 Conv, X is %s %s",
                                 inf_dtype_name(x->dtype), inf__shape_str(x->ndim, x->dims, b1, sizeof b1));
    patch_map *pm = &g->pm;
    fill_common(p, w, nd, pm);
    pm->img_total = pm->pos_total = 1;
    for (int i = 0; i < nd; i++) {
        int64_t in = x->dims[2 + i], dk = (pm->k[i] - 1) * pm->d[i] + 1, s = pm->s[i], out;
        int64_t pb = 0, pe = 0;
        if (p->auto_pad == AUTO_SAME_UPPER || p->auto_pad == AUTO_SAME_LOWER) {
            out = (in + s - 1) / s;
            int64_t total = (out - 1) * s + dk - in;
            if (total < 0) total = 0;
            pb = p->auto_pad == AUTO_SAME_UPPER ? total / 2 : total - total / 2;
            pe = total - pb;
        } else {
            if (p->auto_pad == AUTO_NOTSET && p->n_pads) pb = p->pads[i], pe = p->pads[nd + i];
            int64_t span = in + pb + pe - dk;
            out = span < 0 ? 0 : span / s + 1;
        }
        if (out < 1)
            return inf__kernel_error(ctx, INF_ESHAPE,
                                     "X %s: spatial dim %d (%lld, padded %lld+%lld) is smaller than "
                                     "the dilated kernel (%lld)",
                                     inf__shape_str(x->ndim, x->dims, b1, sizeof b1), i,
                                     (long long)in, (long long)pb, (long long)pe, (long long)dk);
        pm->img[i] = in, pm->pos[i] = out, pm->pb[i] = pb, g->pe[i] = pe;
        if (__builtin_mul_overflow(pm->img_total, in, &pm->img_total) ||
            __builtin_mul_overflow(pm->pos_total, out, &pm->pos_total))
            return inf__kernel_error(ctx, INF_ESHAPE, "X %s: the spatial sizes overflow 64 bits",
                                     inf__shape_str(x->ndim, x->dims, b1, sizeof b1));
    }
    return INF_OK;
}

static inf_status conv_transpose_geometry(inf__kernel_ctx *ctx, const conv_params *p,
                                          const inf_tensor *x, const inf_tensor *w, conv_geom *g) {
    char b1[96], b2[96];
    inf_status st = check_xw(ctx, p, x, w, "W");
    if (st != INF_OK) return st;
    int nd = x->ndim - 2;
    g->n = x->dims[0], g->c = x->dims[1], g->group = p->group;
    if (g->c != w->dims[0] || g->c % g->group)
        return inf__kernel_error(ctx, INF_ESHAPE,
                                 "X %s has %lld channels, W %s must have as many in W[0], divisible "
                                 "by group %lld",
                                 inf__shape_str(x->ndim, x->dims, b1, sizeof b1), (long long)g->c,
                                 inf__shape_str(w->ndim, w->dims, b2, sizeof b2), (long long)g->group);
    g->m = w->dims[1] * g->group, g->cg = g->c / g->group, g->mg = w->dims[1];
    if (p->n_out_shape && p->n_out_shape != nd && p->n_out_shape != nd + 2)
        return inf__kernel_error(ctx, INF_ESHAPE, "attribute output_shape has %d values, expected %d",
                                 p->n_out_shape, nd);
    patch_map *pm = &g->pm;
    fill_common(p, w, nd, pm);
    pm->img_total = pm->pos_total = 1;
    for (int i = 0; i < nd; i++) {
        int64_t in = x->dims[2 + i], dk = (pm->k[i] - 1) * pm->d[i] + 1, s = pm->s[i];
        int64_t op = p->n_out_pad ? p->out_pad[i] : 0;
        int64_t natural = s * (in - 1) + op + dk, out, pb, pe;
        if (p->n_out_shape || p->auto_pad == AUTO_SAME_UPPER || p->auto_pad == AUTO_SAME_LOWER) {
            out = p->n_out_shape ? p->out_shape[p->n_out_shape - nd + i] : in * s;
            int64_t total = natural - out;
            if (total < 0) total = 0; /* a larger output keeps zeros (bias) at the end */
            if (p->auto_pad == AUTO_SAME_UPPER) pb = total / 2;
            else pb = total - total / 2;
            pe = total - pb;
        } else {
            pb = pe = 0;
            if (p->auto_pad == AUTO_NOTSET && p->n_pads) pb = p->pads[i], pe = p->pads[nd + i];
            out = natural - pb - pe;
        }
        if (out < 1)
            return inf__kernel_error(ctx, INF_ESHAPE, "output spatial dim %d would be %lld", i,
                                     (long long)out);
        pm->img[i] = out, pm->pos[i] = in, pm->pb[i] = pb, g->pe[i] = pe;
        pm->img_total *= out, pm->pos_total *= in;
    }
    return INF_OK;
}

/* ---- im2col / col2im ----
 * Row `row` = (channel c, kernel index kidx) of the column matrix covers all
 * positions.  Walk the positions with an odometer over all but the last
 * spatial dim; along the last dim the valid positions are one range
 * [lo, hi), found once per row segment. */

typedef struct row_walk {
    const patch_map *pm;
    int64_t kpos[MAX_SP];
} row_walk;

static void kernel_pos(const patch_map *pm, int64_t kidx, int64_t *kpos) {
    for (int d = pm->nd - 1; d >= 0; d--) {
        kpos[d] = kidx % pm->k[d];
        kidx /= pm->k[d];
    }
}

/* Valid range of last-dim positions for offset off0 = kpos*d - pb. */
static void last_dim_range(const patch_map *pm, int64_t off0, int64_t *lo, int64_t *hi) {
    int l = pm->nd - 1;
    int64_t s = pm->s[l], n_img = pm->img[l], n_pos = pm->pos[l];
    int64_t a = off0 >= 0 ? 0 : (-off0 + s - 1) / s;
    int64_t b = n_img - off0 <= 0 ? 0 : (n_img - off0 + s - 1) / s;
    if (b > n_pos) b = n_pos;
    if (a > b) a = b;
    *lo = a, *hi = b;
}

/* For the current odometer state over dims [0, nd-1): image row offset (in
 * elements of the last dim's rows) or -1 when outside the image. */
static int64_t outer_offset(const patch_map *pm, const int64_t *kpos, const int64_t *opos) {
    int64_t off = 0;
    for (int d = 0; d < pm->nd - 1; d++) {
        int64_t iy = opos[d] * pm->s[d] - pm->pb[d] + kpos[d] * pm->d[d];
        if (iy < 0 || iy >= pm->img[d]) return -1;
        off = off * pm->img[d] + iy;
    }
    return off;
}

static void odometer_next(const patch_map *pm, int64_t *opos) {
    for (int d = pm->nd - 2; d >= 0; d--) {
        if (++opos[d] < pm->pos[d]) return;
        opos[d] = 0;
    }
}

#define DEFINE_PATCH_FNS(SUFFIX, T)                                                            \
    /* col[row][*] from img (one channel) */                                                   \
    static void im2col_row_##SUFFIX(const patch_map *pm, const T *img, int64_t kidx, T *dst) { \
        int64_t kpos[MAX_SP], opos[MAX_SP] = {0};                                              \
        kernel_pos(pm, kidx, kpos);                                                            \
        int l = pm->nd - 1;                                                                    \
        int64_t n_last = pm->pos[l], s = pm->s[l], off0 = kpos[l] * pm->d[l] - pm->pb[l], lo, hi; \
        last_dim_range(pm, off0, &lo, &hi);                                                    \
        for (int64_t outer = 0; outer < pm->pos_total / n_last; outer++) {                     \
            int64_t row = outer_offset(pm, kpos, opos);                                        \
            if (row < 0) {                                                                     \
                for (int64_t j = 0; j < n_last; j++) dst[j] = 0;                               \
            } else {                                                                           \
                const T *src = img + row * pm->img[l];                                         \
                for (int64_t j = 0; j < lo; j++) dst[j] = 0;                                   \
                if (s == 1)                                                                    \
                    for (int64_t j = lo; j < hi; j++) dst[j] = src[off0 + j];                  \
                else                                                                           \
                    for (int64_t j = lo; j < hi; j++) dst[j] = src[off0 + j * s];              \
                for (int64_t j = hi; j < n_last; j++) dst[j] = 0;                              \
            }                                                                                  \
            dst += n_last;                                                                     \
            odometer_next(pm, opos);                                                           \
        }                                                                                      \
    }                                                                                          \
    /* img (one channel) += col[row][*] */                                                     \
    static void col2im_row_##SUFFIX(const patch_map *pm, const T *src, int64_t kidx, T *img) { \
        int64_t kpos[MAX_SP], opos[MAX_SP] = {0};                                              \
        kernel_pos(pm, kidx, kpos);                                                            \
        int l = pm->nd - 1;                                                                    \
        int64_t n_last = pm->pos[l], s = pm->s[l], off0 = kpos[l] * pm->d[l] - pm->pb[l], lo, hi; \
        last_dim_range(pm, off0, &lo, &hi);                                                    \
        for (int64_t outer = 0; outer < pm->pos_total / n_last; outer++) {                     \
            int64_t row = outer_offset(pm, kpos, opos);                                        \
            if (row >= 0) {                                                                    \
                T *dst = img + row * pm->img[l];                                               \
                for (int64_t j = lo; j < hi; j++) dst[off0 + j * s] += src[j];                 \
            }                                                                                  \
            src += n_last;                                                                     \
            odometer_next(pm, opos);                                                           \
        }                                                                                      \
    }
DEFINE_PATCH_FNS(f32, float)
DEFINE_PATCH_FNS(f64, double)

/* Pool tasks: im2col over rows (c, kidx); col2im over channels. */
typedef struct patch_task {
    const patch_map *pm;
    bool f64;
    const void *src;
    void *dst;
} patch_task;

static void im2col_task(void *arg, int64_t begin, int64_t end) {
    const patch_task *t = arg;
    const patch_map *pm = t->pm;
    for (int64_t r = begin; r < end; r++) {
        int64_t c = r / pm->k_total, kidx = r % pm->k_total;
        if (t->f64)
            im2col_row_f64(pm, (const double *)t->src + c * pm->img_total, kidx,
                           (double *)t->dst + r * pm->pos_total);
        else
            im2col_row_f32(pm, (const float *)t->src + c * pm->img_total, kidx,
                           (float *)t->dst + r * pm->pos_total);
    }
}

static void col2im_task(void *arg, int64_t begin, int64_t end) {
    const patch_task *t = arg;
    const patch_map *pm = t->pm;
    for (int64_t c = begin; c < end; c++)
        for (int64_t kidx = 0; kidx < pm->k_total; kidx++) {
            int64_t r = c * pm->k_total + kidx;
            if (t->f64)
                col2im_row_f64(pm, (const double *)t->src + r * pm->pos_total, kidx,
                               (double *)t->dst + c * pm->img_total);
            else
                col2im_row_f32(pm, (const float *)t->src + r * pm->pos_total, kidx,
                               (float *)t->dst + c * pm->img_total);
        }
}

/* ---- matrix products for both float types ---- */

static void dgemm(bool trans_a, int64_t m, int64_t n, int64_t k, const double *a, int64_t lda,
                  const double *b, int64_t ldb, double *c) {
    for (int64_t i = 0; i < m; i++) {
        double *crow = c + i * n;
        for (int64_t j = 0; j < n; j++) crow[j] = 0;
        for (int64_t p = 0; p < k; p++) {
            double av = trans_a ? a[p * lda + i] : a[i * lda + p];
            const double *brow = b + p * ldb;
            for (int64_t j = 0; j < n; j++) crow[j] += av * brow[j];
        }
    }
}

/* c[m, n] = op(a) * b, dense b and c; float32 or float64. */
static void gemm_any(inf__pool *pool, bool f64, bool trans_a, int64_t m, int64_t n, int64_t k,
                     const void *a, int64_t lda, const void *b, void *c) {
    if (f64)
        dgemm(trans_a, m, n, k, a, lda, b, n, c);
    else
        inf__ops_sgemm(pool, trans_a, false, m, n, k, 1.0f, a, lda, b, n, 0.0f, c, n);
}

/* y[c][*] += bias[c] for channels [0, m) */
static void add_bias(bool f64, const void *bias, int64_t m, int64_t plane, void *y) {
    if (!bias) return;
    for (int64_t c = 0; c < m; c++) {
        if (f64) {
            double bv = ((const double *)bias)[c], *row = (double *)y + c * plane;
            for (int64_t j = 0; j < plane; j++) row[j] += bv;
        } else {
            float bv = ((const float *)bias)[c], *row = (float *)y + c * plane;
            for (int64_t j = 0; j < plane; j++) row[j] += bv;
        }
    }
}

/* ---- float16 staging ---- */

/* Copies the float16 tensor t (may be NULL) into dst as float32; returns
 * the position after it. */
static float *f16_to_f32_copy(const inf_tensor *t, float *dst) {
    if (!t) return dst;
    int64_t n = inf_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) dst[i] = inf_f16_to_f32(((const uint16_t *)t->data)[i]);
    return dst + n;
}

typedef inf_status (*conv_core_fn)(inf__kernel_ctx *ctx, const conv_geom *g, bool f64,
                                   const void *x, const void *w, const void *b, void *y);

/* Runs core on X, W, B as float32 (converting float16) or as float64. */
static inf_status run_core(inf__kernel_ctx *ctx, conv_core_fn core, const conv_geom *g,
                           const inf_tensor *x, const inf_tensor *w, const inf_tensor *b,
                           inf_tensor *y) {
    if (x->dtype != INF_DTYPE_F16)
        return core(ctx, g, x->dtype == INF_DTYPE_F64, x->data, w->data, b ? b->data : NULL,
                    y->data);
    int64_t nx = inf_tensor_numel(x), nw = inf_tensor_numel(w), nb = b ? inf_tensor_numel(b) : 0;
    int64_t ny = inf_tensor_numel(y);
    float *in = inf__kernel_scratch(ctx, (size_t)(nx + nw + nb + 1) * sizeof(float));
    float *yf = in ? inf__kernel_scratch(ctx, (size_t)(ny > 0 ? ny : 1) * sizeof(float)) : NULL;
    if (!yf) return INF_ENOMEM;
    float *xf = in, *wf = f16_to_f32_copy(x, xf), *bf = f16_to_f32_copy(w, wf);
    f16_to_f32_copy(b, bf);
    inf_status st = core(ctx, g, false, xf, wf, b ? bf : NULL, yf);
    for (int64_t i = 0; st == INF_OK && i < ny; i++)
        ((uint16_t *)y->data)[i] = inf_f32_to_f16(yf[i]);
    return st;
}

/* ---- Conv ---- */

/* ---- depthwise 2-D (group == C, one filter per channel), float32 ----
 * Direct: each output row accumulates kh x kw shifted input rows times a
 * weight (the valid column range of each tap found once), so no im2col and
 * no one-row GEMM per channel.  Taps are summed in (ky, kx) order, each
 * with one rounding (fmaf: the bits of every depthwise kernel, which use
 * FMA; on x86 without -mfma a libm call, only on this generic path); the
 * inner loop over output columns is contiguous for stride 1 and vectorises.
 * One task per (image, channel) plane: results do not depend on N. */

typedef struct dw_task {
    const conv_geom *g;
    const float *x, *w, *b;
    float *y;
    const inf__kernel_ctx *ctx;
    atomic_bool *stopped; /* set by a worker that found the run's time budget spent */
} dw_task;

/* The workers check the time budget after about this many multiply-adds. */
#define DW_WORK_PER_CHECK ((int64_t)1 << 20)

static void depthwise_planes(void *arg, int64_t begin, int64_t end) {
    const dw_task *t = arg;
    const conv_geom *g = t->g;
    const patch_map *pm = &g->pm;
    int64_t ih = pm->img[0], iw = pm->img[1], oh = pm->pos[0], ow = pm->pos[1];
    int64_t kh = pm->k[0], kw = pm->k[1], sh = pm->s[0], sw = pm->s[1], dh = pm->d[0], dw = pm->d[1];
    int64_t row_work = kh * kw + ow, work = 0; /* kh * kw: W's size, at most 2^48 */
    for (int64_t pl = begin; pl < end; pl++) {
        int64_t c = pl % g->c;
        const float *x = t->x + pl * ih * iw, *w = t->w + c * kh * kw;
        float *y = t->y + pl * oh * ow, bias = t->b ? t->b[c] : 0.0f;
        for (int64_t oy = 0; oy < oh; oy++) {
            if ((work += row_work) >= DW_WORK_PER_CHECK) { /* per output row at the finest */
                work = 0;
                if (atomic_load_explicit(t->stopped, memory_order_relaxed) || inf__kernel_out_of_time(t->ctx)) {
                    atomic_store_explicit(t->stopped, true, memory_order_relaxed);
                    return;
                }
            }
            float *restrict yrow = y + oy * ow;
            for (int64_t ox = 0; ox < ow; ox++) yrow[ox] = 0.0f;
            for (int64_t ky = 0; ky < kh; ky++) {
                int64_t iy = oy * sh - pm->pb[0] + ky * dh;
                if (iy < 0 || iy >= ih) continue;
                const float *restrict xrow = x + iy * iw;
                for (int64_t kx = 0; kx < kw; kx++) {
                    int64_t off = kx * dw - pm->pb[1], lo, hi;
                    /* ox with 0 <= ox * sw + off < iw */
                    lo = off >= 0 ? 0 : (-off + sw - 1) / sw;
                    hi = iw - off <= 0 ? 0 : (iw - off + sw - 1) / sw;
                    if (hi > ow) hi = ow;
                    float wv = w[ky * kw + kx];
                    if (sw == 1)
                        for (int64_t ox = lo; ox < hi; ox++) yrow[ox] = fmaf(wv, xrow[ox + off], yrow[ox]);
                    else
                        for (int64_t ox = lo; ox < hi; ox++) yrow[ox] = fmaf(wv, xrow[ox * sw + off], yrow[ox]);
                }
            }
            if (t->b)
                for (int64_t ox = 0; ox < ow; ox++) yrow[ox] += bias;
        }
    }
}

#if defined(__x86_64__)
/* Runs c through its AVX2 kernel variant (inf__conv2d_avx2_variant), with W packed at
 * load or, when the run's W is another tensor (or the variant picked now
 * differs), into scratch now; the padded input of the direct and rows
 * kernels and the Winograd kernel's tile buffers go to scratch too. */
static inf_status conv_avx2_run(inf__kernel_ctx *ctx, const inf__conv2d *c, const float *x, const float *w,
                                const float *b, const float *res, float *y) {
    const conv_params *p = ctx->node->params;
    int64_t kdim = c->cg * c->kh * c->kw;
    int var = inf__conv2d_avx2_variant(c);
    const float *wp = p->wpack;
    if (!wp || p->wsrc != (const void *)w || p->wm != c->m || p->wkdim != kdim || p->wvar != var) {
        float *tmp = inf__kernel_scratch(ctx, (size_t)variant_w_floats(var, c) * sizeof(float));
        if (!tmp) return INF_ENOMEM;
        variant_pack_w(var, c, w, tmp);
        wp = tmp;
    }
    if (var == INF_CONV2D_PANEL) {
        inf__conv2d_f32_avx2(ctx->pool, c, x, wp, b, res, y);
        return INF_OK;
    }
    int tile = wino_tile(var);
    bool wide = inf__cpu_has_avx512(); /* the AVX-512 siblings: same packing, scratch and bits */
    int threads = inf__pool_size(ctx->pool);
    bool in_place = !tile && wide && var == INF_CONV2D_DIRECT && inf__conv2d_direct_avx512_in_place(c, threads);
    int64_t floats = tile       ? inf__conv2d_winograd_scratch_floats(tile, c, threads)
                     : in_place ? 0 /* the AVX-512 direct kernel reads X in place */
                                : inf__conv2d_direct_scratch_floats(c);
    float *scratch = floats > 0 ? inf__kernel_scratch(ctx, (size_t)floats * sizeof(float)) : NULL;
    if (floats > 0 && !scratch) return INF_ENOMEM;
    if (tile && wide)
        inf__conv2d_winograd_f32_avx512(ctx->pool, tile, c, x, wp, b, res, scratch, y);
    else if (tile)
        inf__conv2d_winograd_f32_avx2(ctx->pool, tile, c, x, wp, b, res, scratch, y);
    else if (var == INF_CONV2D_ROWS && wide)
        inf__conv2d_rows_f32_avx512(ctx->pool, c, x, wp, b, res, scratch, y);
    else if (var == INF_CONV2D_ROWS) inf__conv2d_rows_f32_avx2(ctx->pool, c, x, wp, b, res, scratch, y);
    else if (wide)
        inf__conv2d_direct_f32_avx512(ctx->pool, c, x, wp, b, res, scratch, y);
    else inf__conv2d_direct_f32_avx2(ctx->pool, c, x, wp, b, res, scratch, y);
    return INF_OK;
}

/* A depthwise c through ops/x86/depthwise_avx2.c, its channel-blocked input copies in scratch. */
static inf_status depthwise_avx2_run(inf__kernel_ctx *ctx, const inf__conv2d *c, const float *x, const float *w,
                                     const float *b, const float *res, float *y) {
    int64_t floats = inf__conv2d_depthwise_scratch_floats(c, inf__pool_size(ctx->pool));
    float *scratch = floats > 0 ? inf__kernel_scratch(ctx, (size_t)floats * sizeof(float)) : NULL;
    if (floats > 0 && !scratch) return INF_ENOMEM;
    inf__conv2d_depthwise_f32_avx2(ctx->pool, c, x, w, b, res, scratch, y);
    return INF_OK;
}

/* float32 1-D/2-D through conv_avx2_run; false when the shape is not one
 * it takes. */
#define CONV_AVX2_MAX_PLANE_WORK ((int64_t)1 << 28) /* multiply-adds of one depthwise plane (below) */

/* g as the AVX2 kernels' inf__conv2d (no activation yet); false when they
 * do not take it (rank above 2, offsets past 32 bits). */
static bool conv2d_of(const conv_geom *g, inf__conv2d *c) {
    const patch_map *pm = &g->pm;
    if (!inf__cpu_has_avx2_fma() || pm->nd > 2) return false;
    int l = pm->nd - 1;
    int64_t span = pm->img[l] + pm->pb[l] + g->pe[l] + (pm->k[l] - 1) * pm->d[l] + 16 * pm->s[l];
    if (pm->img_total >= INF_CONV2D_MAX_SPAN || span >= INF_CONV2D_MAX_SPAN) return false; /* 32-bit offsets */
    *c = (inf__conv2d){
        .n = g->n,
        .c = g->c,
        .m = g->m,
        .group = g->group,
        .cg = g->cg,
        .mg = g->mg,
        .ih = l ? pm->img[0] : 1,
        .iw = pm->img[l],
        .oh = l ? pm->pos[0] : 1,
        .ow = pm->pos[l],
        .kh = l ? pm->k[0] : 1,
        .kw = pm->k[l],
        .sh = l ? pm->s[0] : 1,
        .sw = pm->s[l],
        .dh = l ? pm->d[0] : 1,
        .dw = pm->d[l],
        .pt = l ? pm->pb[0] : 0,
        .pl = pm->pb[l],
        .act = INF_EPILOGUE_NONE,
        .pool = g->pool,
    };
    return true;
}

static bool is_depthwise(const conv_geom *g) {
    return g->pm.nd == 2 && g->group == g->c && g->group == g->m;
}

/* Does g (with g->pool) run the rows kernel, which pools in its store? */
static bool pooled_in_kernel(const conv_geom *g) {
    inf__conv2d c;
    return g->pool && conv2d_of(g, &c) && g->pm.nd == 2 && !is_depthwise(g) &&
           !(inf__conv2d_pointwise_fits(&c) && !inf__conv2d_direct_wide(&c)) &&
           inf__conv2d_avx2_variant(&c) == INF_CONV2D_ROWS && inf__conv2d_pooled_fits(&c);
}

/* Does the kernel conv_avx2 runs apply ep in its store?  ReLU and Clip:
 * every one; SiLU: the depthwise, pointwise and direct kernels
 * (EfficientNet's convolutions; the others leave it to the session's pass). */
static bool act_in_store(const inf__epilogue *ep, const inf__conv2d *c, bool dw, bool pointwise) {
    if (ep->kind == INF_EPILOGUE_RELU || ep->kind == INF_EPILOGUE_CLIP) return true;
    return ep->kind == INF_EPILOGUE_SILU && (dw || pointwise || inf__conv2d_avx2_variant(c) == INF_CONV2D_DIRECT);
}

/* A ConvMaxPool whose pooled Y the AVX-512 rows kernel stores channels-last
 * (conv_rows_avx512.c pool_tasks_last): 2x2/2 windows pooled in registers,
 * one group, up to INF_CONV2D_POOL_LAST_MAX_M channels; W's variant (the
 * rows kernel) and the attributes only -- the sizes are conv_pool_run's. */
static bool pool_channels_last_fits(const inf__conv2d *c) {
    const inf__conv2d_maxpool *p = c->pool;
    return p && inf__cpu_has_avx512() && c->group == 1 && c->mg <= INF_CONV2D_POOL_LAST_MAX_M && p->kh == 2 &&
           p->kw == 2 && p->sh == 2 && p->sw == 2 && inf__conv2d_avx2_variant(c) == INF_CONV2D_ROWS;
}

/* The operands 1x1 rows take: X and Y channels-last, and the residual if any. */
static bool rows_1x1_layouts(int nhwc, bool residual) {
    return (nhwc & INF_NHWC_X) && (nhwc & INF_NHWC_Y) && (!residual || (nhwc & INF_NHWC_RES));
}

/* A 1x1 Conv without padding, X and Y channels-last: one GEMM per output
 * row (conv_1x1_rows, ops/x86/conv_1x1_rows.c). */
static bool rows_1x1_fits(const conv_geom *g, const inf__conv2d *c, int nhwc) {
    return !c->pool && c->group == 1 && c->kh == 1 && c->kw == 1 && c->pt == 0 && c->pl == 0 && g->pe[0] == 0 &&
           g->pe[1] == 0 && rows_1x1_layouts(nhwc, g->res != NULL);
}

/* Does a kernel take c's channels-last operands (INF_NHWC_* bits) as they
 * are?  The Winograd variants, any of them, and 1x1 rows (rows_1x1_fits);
 * conv_core transposes around the others. */
static bool channels_last_native(const conv_geom *g, const inf__conv2d *c, int nhwc) {
    if (c->pool) return nhwc == INF_NHWC_Y && pool_channels_last_fits(c) && inf__conv2d_pooled_fits(c);
    return rows_1x1_fits(g, c, nhwc) || (c->group == 1 && wino_tile(inf__conv2d_avx2_variant(c)) != 0);
}

/* conv_avx2's channels-last 1x1 path (ops/x86/conv_1x1_rows.c): W packed
 * at load (p->w_rows) or now into scratch; the node's Relu in the store,
 * another activation left to the session's pass. */
static inf_status conv_1x1_rows(inf__kernel_ctx *ctx, const inf__conv2d *c, const float *x, const float *w,
                                const float *b, const float *res, float *y) {
    const conv_params *p = ctx->node->params;
    const float *wp = p->w_rows;
    const inf_tensor *wc = inf__node_constant_input(ctx->node, 1);
    if (!wp || !wc || w != wc->data) { /* W given at run time */
        float *tmp = inf__kernel_scratch(ctx, (size_t)inf__ops_sgemm_packed_floats(c->c, c->m) * sizeof(float) + 32);
        if (!tmp) return INF_ENOMEM;
        tmp = (float *)(((uintptr_t)tmp + 31) & ~(uintptr_t)31);
        inf__ops_sgemm_pack_b(true, c->c, c->m, w, c->c, tmp);
        wp = tmp;
    }
    bool relu = ctx->node->epilogue.kind == INF_EPILOGUE_RELU;
    inf__conv2d_1x1_rows_f32(ctx->pool, c, x, wp, b, res, relu, y);
    ctx->epilogue_done = relu;
    return INF_OK;
}

bool inf__ops_conv_channels_last_native(const inf__node *node, int nhwc) {
    const conv_params *p = node->params;
    const inf_tensor *w = inf__node_constant_input(node, 1);
    if (!p || !w || w->dtype != INF_DTYPE_F32 || w->ndim != 4 || !inf__cpu_has_avx2_fma() || p->group < 1 ||
        w->dims[0] % p->group || (p->auto_pad != AUTO_NOTSET && p->auto_pad != AUTO_VALID))
        return false;
    inf__conv2d c = conv_shape_of_w(p, w);
    if (!strcmp(node->op_type, "ConvMaxPool")) {
        inf__conv2d_maxpool mp = {p->pool[0], p->pool[1], p->pool[2], p->pool[3], 1, 1};
        c.pool = &mp;
        return nhwc == INF_NHWC_Y && pool_channels_last_fits(&c);
    }
    bool zero_pads = true;
    for (int i = 0; i < p->n_pads; i++) zero_pads = zero_pads && p->pads[i] == 0;
    if (c.group == 1 && c.kh == 1 && c.kw == 1 && zero_pads) /* rows_1x1_fits */
        return rows_1x1_layouts(nhwc, !strcmp(node->op_type, "ConvAdd"));
    return c.group == 1 && wino_tile(inf__conv2d_avx2_variant(&c)) != 0;
}

static bool conv_avx2(inf__kernel_ctx *ctx, const conv_geom *g, const float *x, const float *w, const float *b,
                      float *y, inf_status *st) {
    inf__conv2d c;
    if (!conv2d_of(g, &c))
        return false;
    if (g->nhwc && !channels_last_native(g, &c, g->nhwc))
        return false;
    c.nhwc = g->nhwc;
    if (g->nhwc && rows_1x1_fits(g, &c, g->nhwc)) {
        *st = conv_1x1_rows(ctx, &c, x, w, b, g->res, y);
        if (g->res && *st == INF_OK) *g->res_added = true;
        return true;
    }
    /* The AVX2 kernels check no time budget inside: a depthwise plane of more
     * work than this (a window as large as a 2^20-row input ran until killed)
     * takes the reference path, which checks it per output row. */
    int64_t rows, taps, plane_work;
    if (is_depthwise(g) && (__builtin_mul_overflow(c.oh, c.kh < c.ih ? c.kh : c.ih, &rows) ||
                            __builtin_mul_overflow(rows, c.kw < c.iw ? c.kw : c.iw, &taps) ||
                            __builtin_mul_overflow(taps, c.ow, &plane_work) || plane_work > CONV_AVX2_MAX_PLANE_WORK))
        return false;
    /* a fused activation goes into the store for float32 Y (the session then
     * skips its pass), unless a ConvAdd residual is still to be added */
    const inf__epilogue *ep = &ctx->node->epilogue;
    bool res_pending = ctx->node->n_inputs > 3 && !g->res;
    bool dw = is_depthwise(g); /* depthwise: ops/x86/depthwise_avx2.c */
    bool pointwise = !dw && inf__conv2d_pointwise_fits(&c) && !inf__conv2d_direct_wide(&c);
    if (ctx->in[0]->dtype == INF_DTYPE_F32 && !res_pending && act_in_store(ep, &c, dw, pointwise)) {
        c.act = ep->kind, c.lo = ep->lo, c.hi = ep->hi;
        ctx->epilogue_done = true;
    }
    if (dw) *st = depthwise_avx2_run(ctx, &c, x, w, b, g->res, y);
    else if (pointwise) { /* 1x1: ops/x86/pointwise_avx2.c, pointwise_avx512.c */
        if (inf__cpu_has_avx512()) inf__conv2d_pointwise_f32_avx512(ctx->pool, &c, x, w, b, g->res, y);
        else inf__conv2d_pointwise_f32_avx2(ctx->pool, &c, x, w, b, g->res, y);
        *st = INF_OK;
    } else *st = conv_avx2_run(ctx, &c, x, w, b, g->res, y);
    if (g->res && *st == INF_OK) *g->res_added = true;
    return true;
}
#else
bool inf__ops_conv_channels_last_native(const inf__node *node, int nhwc) {
    (void)node, (void)nhwc;
    return false;
}
#endif

/* ---- channels-last operands (attribute channels_last) ---- */

/* dst[i][p][c] = src[i][c][p] for n images of c planes of p floats, and back. */
static void to_channels_last(const float *src, float *dst, int64_t n, int64_t c, int64_t p) {
    for (int64_t i = 0; i < n; i++, src += c * p, dst += c * p)
        for (int64_t k = 0; k < c; k++)
            for (int64_t j = 0; j < p; j++) dst[j * c + k] = src[k * p + j];
}

static void to_channels_first(const float *src, float *dst, int64_t n, int64_t c, int64_t p) {
    for (int64_t i = 0; i < n; i++, src += c * p, dst += c * p)
        for (int64_t k = 0; k < c; k++)
            for (int64_t j = 0; j < p; j++) dst[k * p + j] = src[j * c + k];
}

static inf_status conv_core(inf__kernel_ctx *ctx, const conv_geom *g, bool f64, const void *x, const void *w,
                            const void *b, void *y);

/* A float32 2-D Conv whose kernel does not take its channels-last operands
 * (another variant, or a bundle made on a CPU whose kernel did): computed
 * channels-first between transposes in scratch, the residual added before Y
 * is turned channels-last (the node's activation comes after, as ever).
 * The transposes move values, so the bits are the channels-first Conv's. */
static inf_status conv_core_transposed(inf__kernel_ctx *ctx, const conv_geom *g, const float *x, const float *w,
                                       const float *b, float *y) {
    int64_t xn = g->n * g->c * g->pm.img_total, yn = g->n * g->m * g->pm.pos_total;
    conv_geom cf = *g;
    cf.nhwc = 0;
    const float *xc = x;
    float *yc = y;
    if (g->nhwc & INF_NHWC_X) {
        float *t = inf__kernel_scratch(ctx, (size_t)xn * sizeof(float));
        if (!t) return INF_ENOMEM;
        to_channels_first(x, t, g->n, g->c, g->pm.img_total);
        xc = t;
    }
    if (g->res && (g->nhwc & INF_NHWC_RES)) {
        float *t = inf__kernel_scratch(ctx, (size_t)yn * sizeof(float));
        if (!t) return INF_ENOMEM;
        to_channels_first(g->res, t, g->n, g->m, g->pm.pos_total);
        cf.res = t;
    }
    if (g->nhwc & INF_NHWC_Y) {
        yc = inf__kernel_scratch(ctx, (size_t)yn * sizeof(float));
        if (!yc) return INF_ENOMEM;
    }
    inf_status st = conv_core(ctx, &cf, false, xc, w, b, yc);
    if (st != INF_OK) return st;
    if (cf.res && !*cf.res_added) { /* in Y's layout before conv_add_run could add it in another */
        for (int64_t i = 0; i < yn; i++) yc[i] = yc[i] + cf.res[i];
        *cf.res_added = true;
    }
    if (yc != y) to_channels_last(yc, y, g->n, g->m, g->pm.pos_total);
    return INF_OK;
}

static inf_status conv_core(inf__kernel_ctx *ctx, const conv_geom *g, bool f64, const void *x,
                            const void *w, const void *b, void *y) {
    inf__pool *pool = ctx->pool;
    bool depthwise = g->pm.nd == 2 && g->group == g->c && g->group == g->m;
#if defined(__x86_64__)
    inf_status fst;
    if (!f64 && conv_avx2(ctx, g, x, w, b, y, &fst)) return fst;
#endif
    if (g->nhwc) { /* float32: conv_geometry's check */
        if (INF_NEVER(g->pool != NULL)) /* conv_pool_run sets a layout only where the kernel pools it */
            return inf__kernel_error(ctx, INF_EINTERNAL, "channels-last ConvMaxPool on a kernel that cannot store it");
        return conv_core_transposed(ctx, g, x, w, b, y);
    }
    if (!f64 && depthwise) {
        atomic_bool stopped = false;
        dw_task t = {g, x, w, b, y, ctx, &stopped};
        int64_t work = g->pm.pos_total * g->pm.k_total;
        inf__pool_range(pool, g->n * g->c, work >= 16384 ? 1 : 16384 / (work + 1) + 1, depthwise_planes, &t);
        return atomic_load(&stopped) ? inf__kernel_check_time(ctx) : INF_OK;
    }
    const patch_map *pm = &g->pm;
    size_t es = f64 ? sizeof(double) : sizeof(float);
    bool direct = true; /* 1x1, stride 1, no padding: X is already the column matrix */
    for (int i = 0; i < pm->nd; i++)
        if (pm->k[i] != 1 || pm->s[i] != 1 || pm->pb[i] != 0 || pm->img[i] != pm->pos[i])
            direct = false;
    int64_t rows = g->cg * pm->k_total;
    void *col = NULL;
    if (!direct) {
        col = inf__kernel_scratch(ctx, (size_t)(rows * pm->pos_total) * es);
        if (!col) return INF_ENOMEM;
    }
    inf_status st;
    for (int64_t n = 0; n < g->n; n++)
        for (int64_t gi = 0; gi < g->group; gi++) {
            if ((st = inf__kernel_check_time(ctx)) != INF_OK) return st; /* per image and group */
            const char *xg = (const char *)x + (size_t)((n * g->c + gi * g->cg) * pm->img_total) * es;
            char *yg = (char *)y + (size_t)((n * g->m + gi * g->mg) * pm->pos_total) * es;
            const char *wg = (const char *)w + (size_t)(gi * g->mg * rows) * es;
            const void *colm = xg;
            if (!direct) {
                patch_task t = {pm, f64, xg, col};
                inf__pool_range(pool, rows, 4, im2col_task, &t);
                colm = col;
            }
            gemm_any(pool, f64, false, g->mg, pm->pos_total, rows, wg, rows, colm, yg);
            add_bias(f64, b ? (const char *)b + (size_t)(gi * g->mg) * es : NULL, g->mg,
                     pm->pos_total, yg);
        }
    return INF_OK;
}

static inf_status conv_run(inf__kernel_ctx *ctx) {
    const conv_params *p = ctx->node->params;
    const inf_tensor *x = ctx->in[0], *w = ctx->in[1], *b = ctx->n_in > 2 ? ctx->in[2] : NULL;
    conv_geom g = {0};
    inf_status st = conv_geometry(ctx, p, x, w, &g);
    if (st != INF_OK) return st;
    if ((st = check_bias(ctx, b, x, g.m)) != INF_OK) return st;
    int64_t dims[INF_MAX_DIMS] = {g.n, g.m};
    for (int i = 0; i < g.pm.nd; i++) dims[2 + i] = g.pm.pos[i];
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, x->dtype, x->ndim, dims, &y)) != INF_OK) return st;
    if (inf_tensor_numel(y) == 0) return INF_OK;
    return run_core(ctx, conv_core, &g, x, w, b, y);
}

const inf__op_impl op_conv = {conv_init, conv_run};

/* ---- ConvAdd (ai.infera): Y = Add(Conv(X, W, B), Z), fused by
 * graph/passes/conv_add.c ----
 * Same result as the two nodes: each element is the Conv's value (sum, then
 * + bias) plus Z's element, one float add, in the AVX2 store when Z has
 * Y's shape (float32), else after the Conv; a Z that broadcasts goes through
 * a temporary Conv output and Add's broadcasting.  The node's epilogue (the
 * Relu after the Add) comes after the residual. */

/* y += z elementwise, same shapes. */
static void add_same(inf_tensor *y, const inf_tensor *z) {
    int64_t n = inf_tensor_numel(y);
    if (y->dtype == INF_DTYPE_F32) {
        float *yf = y->data;
        const float *zf = z->data;
        for (int64_t i = 0; i < n; i++) yf[i] = yf[i] + zf[i];
        return;
    }
    for (int64_t i = 0; i < n; i++) inf__tensor_set_f64(y, i, inf__tensor_get_f64(y, i) + inf__tensor_get_f64(z, i));
}

/* y = t + z with numpy broadcasting (y has the broadcast shape); a sum of
 * two floats rounded once from double is the float sum. */
static void add_broadcast(inf_tensor *y, const inf_tensor *t, const inf_tensor *z) {
    int nd = y->ndim;
    int64_t st[INF_MAX_DIMS], sz[INF_MAX_DIMS], idx[INF_MAX_DIMS] = {0}, ot = 0, oz = 0;
    inf__broadcast_strides(t->ndim, t->dims, nd, y->dims, st);
    inf__broadcast_strides(z->ndim, z->dims, nd, y->dims, sz);
    int64_t n = inf_tensor_numel(y);
    for (int64_t i = 0; i < n; i++) {
        inf__tensor_set_f64(y, i, inf__tensor_get_f64(t, ot) + inf__tensor_get_f64(z, oz));
        for (int d = nd - 1; d >= 0; d--) {
            ot += st[d], oz += sz[d];
            if (++idx[d] < y->dims[d]) break;
            ot -= st[d] * y->dims[d], oz -= sz[d] * y->dims[d], idx[d] = 0;
        }
    }
}

static inf_status conv_add_broadcast(inf__kernel_ctx *ctx, conv_geom *g, const inf_tensor *x, const inf_tensor *w,
                                     const inf_tensor *b, const inf_tensor *z, int ndim, const int64_t *dims) {
    int nd;
    int64_t od[INF_MAX_DIMS];
    if (inf__broadcast_shape(ndim, dims, z->ndim, z->dims, &nd, od) != INF_OK)
        return inf__kernel_error(ctx, INF_ESHAPE, "residual Add: Conv output and input 3 do not broadcast");
    /* the Conv's own output, in scratch: counted against the session's
     * memory limit (a heap tensor of a fuzzed geometry's size was not, and
     * ran past fuzz_bundle's timeout: regressions/bundle-conv-add-broadcast.bundle) */
    int64_t numel = inf__shape_numel(ndim, dims);
    if (numel < 0) return inf__kernel_error(ctx, INF_ESHAPE, "the Conv output's shape is too large");
    void *data = inf__kernel_scratch(ctx, (size_t)(numel ? numel : 1) * inf_dtype_size(x->dtype));
    if (!data) return INF_ENOMEM; /* the error is set */
    inf_tensor tv, *t = &tv, *y;
    inf_tensor_init_view(t, x->dtype, ndim, dims, data);
    inf_status st = numel > 0 ? run_core(ctx, conv_core, g, x, w, b, t) : INF_OK;
    if (st == INF_OK) st = inf__kernel_output(ctx, 0, x->dtype, nd, od, &y);
    if (st == INF_OK) add_broadcast(y, t, z);
    return st;
}

static inf_status conv_add_run(inf__kernel_ctx *ctx) {
    const conv_params *p = ctx->node->params;
    const inf_tensor *x = ctx->in[0], *w = ctx->in[1], *b = ctx->in[2], *z = ctx->in[3];
    conv_geom g = {0};
    inf_status st = conv_geometry(ctx, p, x, w, &g);
    if (st != INF_OK) return st;
    if ((st = check_bias(ctx, b, x, g.m)) != INF_OK) return st;
    if (z->kind != INF_KIND_TENSOR || z->dtype != x->dtype)
        return inf__kernel_error(ctx, INF_ETYPE, "residual Add: input 3 is not a tensor of the Conv's type");
    int64_t dims[INF_MAX_DIMS] = {g.n, g.m};
    for (int i = 0; i < g.pm.nd; i++) dims[2 + i] = g.pm.pos[i];
    bool same = z->ndim == x->ndim;
    for (int i = 0; same && i < x->ndim; i++) same = z->dims[i] == dims[i];
    if (!same && g.nhwc)
        return inf__kernel_error(ctx, INF_ESHAPE, "residual Add: channels_last operands need input 3 of Y's shape");
    if (!same) return conv_add_broadcast(ctx, &g, x, w, b, z, x->ndim, dims);
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, x->dtype, x->ndim, dims, &y)) != INF_OK) return st;
    if (inf_tensor_numel(y) == 0) return INF_OK;
    bool added = false;
    if (x->dtype == INF_DTYPE_F32) g.res = z->data, g.res_added = &added;
    st = run_core(ctx, conv_core, &g, x, w, b, y);
    if (st == INF_OK && !added) add_same(y, z);
    return st;
}

const inf__op_impl op_conv_add = {conv_init, conv_add_run};

void inf__ops_conv_add_take_packing(inf__node *conv_add, const inf__node *conv) {
    conv_params *p = conv_add->params;
    const conv_params *c = conv->params;
    bool fused = !strcmp(conv_add->op_type, "ConvAdd") || !strcmp(conv_add->op_type, "ConvMaxPool");
    if (p && c && fused && !strcmp(conv->op_type, "Conv") && p->group == c->group) {
        p->wpack = c->wpack, p->wsrc = c->wsrc;
        p->wm = c->wm, p->wkdim = c->wkdim, p->wvar = c->wvar;
    }
}

/* ---- ConvMaxPool (ai.infera): Y = MaxPool(act(Conv(X, W, B))), fused by
 * graph/passes/conv_pool.c ----
 * The Conv's attributes plus pool_kernel and pool_strides (2-D, no padding,
 * no dilation, floor).  A float32 Conv on the rows kernel pools in its store
 * (ops/x86/conv_pool_bands.c: the conv output is never written whole);
 * any other computes the Conv into scratch, applies the node's activation
 * (Relu or Clip: the pass fuses no other) and runs the MaxPool kernel on it
 * (inf__ops_maxpool2d).  Either way the bits of the two nodes: the
 * activation before the max, as the unfused graph applies it. */

static inf_status conv_pool_run(inf__kernel_ctx *ctx) {
    const conv_params *p = ctx->node->params;
    const inf_tensor *x = ctx->in[0], *w = ctx->in[1], *b = ctx->n_in > 2 ? ctx->in[2] : NULL;
    conv_geom g = {0};
    inf_status st = conv_geometry(ctx, p, x, w, &g);
    if (st != INF_OK)
        return st;
    if ((st = check_bias(ctx, b, x, g.m)) != INF_OK)
        return st;
    if (g.pm.nd != 2)
        return inf__kernel_error(ctx, INF_ESHAPE, "the fused MaxPool needs a 2-D Conv");
    int64_t dims[INF_MAX_DIMS] = {g.n, g.m, g.pm.pos[0], g.pm.pos[1]}, pdims[INF_MAX_DIMS] = {g.n, g.m};
    for (int i = 0; i < 2; i++) {
        if (dims[2 + i] < p->pool[i])
            return inf__kernel_error(ctx, INF_ESHAPE,
                                     "the Conv's output (%lld x %lld) is smaller than the MaxPool's "
                                     "window (%lld x %lld)",
                                     (long long)dims[2], (long long)dims[3], (long long)p->pool[0],
                                     (long long)p->pool[1]);
        pdims[2 + i] = (dims[2 + i] - p->pool[i]) / p->pool[2 + i] + 1;
    }
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, x->dtype, 4, pdims, &y)) != INF_OK)
        return st;
    if (inf_tensor_numel(y) == 0)
        return INF_OK;
    int last = g.nhwc; /* INF_NHWC_Y or 0 (conv_init) */
    g.nhwc = 0;
#if defined(__x86_64__)
    inf__conv2d_maxpool mp = {p->pool[0], p->pool[1], p->pool[2], p->pool[3], pdims[2], pdims[3]};
    g.pool = x->dtype == INF_DTYPE_F32 ? &mp : NULL;
    inf__conv2d c;
    if (pooled_in_kernel(&g) && (!last || (conv2d_of(&g, &c) && pool_channels_last_fits(&c)))) {
        g.nhwc = last; /* the AVX-512 rows kernel stores Y channels-last itself */
        st = run_core(ctx, conv_core, &g, x, w, b, y); /* float32 Relu / Clip in the kernel's store */
        ctx->epilogue_done = true;
        return st;
    }
    g.pool = NULL;
#endif
    int64_t numel = inf__shape_numel(4, dims);
    if (numel <= 0)
        return inf__kernel_error(ctx, INF_ESHAPE, "the Conv output's shape is too large");
    void *data = inf__kernel_scratch(ctx, (size_t)numel * inf_dtype_size(x->dtype));
    if (!data)
        return INF_ENOMEM; /* the error is set */
    inf_tensor conv_out;
    inf_tensor_init_view(&conv_out, x->dtype, 4, dims, data);
    st = run_core(ctx, conv_core, &g, x, w, b, &conv_out);
    if (st != INF_OK)
        return st;
    if (!ctx->epilogue_done)
        inf__epilogue_apply(&ctx->node->epilogue, &conv_out, 0, inf_tensor_numel(&conv_out));
    ctx->epilogue_done = true;
    if (!last) return inf__ops_maxpool2d(ctx, p->pool, &conv_out, y);
    inf_tensor pooled; /* channels-first into scratch, then moved channels-last */
    float *pdata = inf__kernel_scratch(ctx, (size_t)inf_tensor_numel(y) * sizeof(float));
    if (!pdata) return INF_ENOMEM;
    inf_tensor_init_view(&pooled, x->dtype, 4, pdims, pdata);
    if ((st = inf__ops_maxpool2d(ctx, p->pool, &conv_out, &pooled)) != INF_OK) return st;
    to_channels_last(pdata, y->data, pdims[0], pdims[1], pdims[2] * pdims[3]);
    return INF_OK;
}

const inf__op_impl op_conv_pool = {conv_init, conv_pool_run};

/* ---- ConvTranspose ---- */

static inf_status conv_transpose_core(inf__kernel_ctx *ctx, const conv_geom *g, bool f64,
                                      const void *x, const void *w, const void *b, void *y) {
    inf__pool *pool = ctx->pool;
    const patch_map *pm = &g->pm;
    size_t es = f64 ? sizeof(double) : sizeof(float);
    int64_t rows = g->mg * pm->k_total;
    void *col = inf__kernel_scratch(ctx, (size_t)(rows * pm->pos_total) * es);
    if (!col) return INF_ENOMEM;
    memset(y, 0, (size_t)(g->n * g->m * pm->img_total) * es);
    inf_status st;
    for (int64_t n = 0; n < g->n; n++)
        for (int64_t gi = 0; gi < g->group; gi++) {
            if ((st = inf__kernel_check_time(ctx)) != INF_OK) return st; /* per image and group */
            const char *xg = (const char *)x + (size_t)((n * g->c + gi * g->cg) * pm->pos_total) * es;
            const char *wg = (const char *)w + (size_t)(gi * g->cg * rows) * es;
            char *yg = (char *)y + (size_t)((n * g->m + gi * g->mg) * pm->img_total) * es;
            /* col[mg*K, in_total] = W_g^T [mg*K, cg] * X_g [cg, in_total] */
            gemm_any(pool, f64, true, rows, pm->pos_total, g->cg, wg, rows, xg, col);
            patch_task t = {pm, f64, col, yg};
            inf__pool_range(pool, g->mg, 1, col2im_task, &t);
            add_bias(f64, b ? (const char *)b + (size_t)(gi * g->mg) * es : NULL, g->mg,
                     pm->img_total, yg);
        }
    return INF_OK;
}

static inf_status conv_transpose_run(inf__kernel_ctx *ctx) {
    const conv_params *p = ctx->node->params;
    const inf_tensor *x = ctx->in[0], *w = ctx->in[1], *b = ctx->n_in > 2 ? ctx->in[2] : NULL;
    conv_geom g = {0};
    inf_status st = conv_transpose_geometry(ctx, p, x, w, &g);
    if (st != INF_OK) return st;
    if ((st = check_bias(ctx, b, x, g.m)) != INF_OK) return st;
    int64_t dims[INF_MAX_DIMS] = {g.n, g.m};
    for (int i = 0; i < g.pm.nd; i++) dims[2 + i] = g.pm.img[i];
    inf_tensor *y;
    if ((st = inf__kernel_output(ctx, 0, x->dtype, x->ndim, dims, &y)) != INF_OK) return st;
    if (inf_tensor_numel(y) == 0) return INF_OK;
    return run_core(ctx, conv_transpose_core, &g, x, w, b, y);
}

const inf__op_impl op_conv_transpose = {conv_init, conv_transpose_run};
