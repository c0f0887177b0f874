/*
 * distill.c -- `infera distill`: trains a student MLP to imitate a teacher
 * model on the teacher's own outputs over the given records.
 *
 * The records go through the teacher's pipeline (collect.c); the student
 * learns from the teacher's model input (one 2-D float input) and is
 * written (mlp_onnx.c) with the teacher's input and outputs, so it drops
 * in.  Training, all in float64 and single-threaded so that one seed gives
 * one file, bit for bit:
 *   - a seeded shuffle splits the rows into training and holdout;
 *   - inputs are standardised with the training rows' mean and standard
 *     deviation (missing values count as the mean: 0 after it);
 *   - classification: soft targets, the teacher's probabilities at
 *     temperature T (softmax(log p / T), sigmoid(logit p / T) for one
 *     column), loss T^2 * cross-entropy(student logits / T) -- Hinton et
 *     al.'s distillation loss, whose gradient is T * (q_student - q_teacher);
 *     a teacher whose scores are logits (rows that are no probabilities:
 *     evaluate's rule) teaches through their softmax, and the student writes
 *     its own logits to that output (same softmax, same argmax; the logits
 *     themselves may differ by a constant per row);
 *     regression: squared error on the standardised teacher output;
 *   - He-initialised ReLU layers, mini-batch Adam (beta 0.9/0.999);
 *   - after each epoch, the holdout loss against the teacher at T = 1; the
 *     best epoch's weights are kept; training stops after `patience`
 *     epochs without improvement.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infera/model.h"
#include "tools/tools.h"

typedef struct net {
    int L, dims[18];
    double *W[17], *b[17];
} net;

typedef struct adam {
    double *mW[17], *vW[17], *mb[17], *vb[17];
    int64_t t;
} adam;

static void net_free(net *n) {
    for (int l = 0; l < n->L; l++) free(n->W[l]), free(n->b[l]), n->W[l] = n->b[l] = NULL;
}

static int net_alloc(net *n) {
    for (int l = 0; l < n->L; l++) {
        n->W[l] = calloc((size_t)n->dims[l] * n->dims[l + 1], sizeof(double));
        n->b[l] = calloc((size_t)n->dims[l + 1], sizeof(double));
        if (!n->W[l] || !n->b[l]) return -1;
    }
    return 0;
}

static void net_copy(net *dst, const net *src) {
    for (int l = 0; l < src->L; l++) {
        memcpy(dst->W[l], src->W[l], (size_t)src->dims[l] * src->dims[l + 1] * sizeof(double));
        memcpy(dst->b[l], src->b[l], (size_t)src->dims[l + 1] * sizeof(double));
    }
}

/* Forward pass for B rows of x (already standardised): acts[l] = [B, dims[l]]; acts[L] = logits. */
static void forward(const net *n, double **acts, int B) {
    for (int l = 0; l < n->L; l++) {
        int I = n->dims[l], O = n->dims[l + 1];
        const double *W = n->W[l];
        for (int r = 0; r < B; r++) {
            const double *a = acts[l] + (size_t)r * I;
            double *z = acts[l + 1] + (size_t)r * O;
            for (int o = 0; o < O; o++) z[o] = n->b[l][o];
            for (int i = 0; i < I; i++) {
                double ai = a[i];
                if (ai == 0) continue;
                const double *w = W + (size_t)i * O;
                for (int o = 0; o < O; o++) z[o] += ai * w[o];
            }
            if (l < n->L - 1)
                for (int o = 0; o < O; o++) z[o] = z[o] > 0 ? z[o] : 0;
        }
    }
}

/* Output transform and loss/gradient of one row. task: binary with one
 * column uses sigmoid, classification softmax, regression identity. */
static double head(int task, int C, const double *z, const double *target, double T, double *grad) {
    if (task == INF__TASK_REGRESSION) {
        double d = z[0] - target[0];
        if (grad) grad[0] = 2 * d;
        return d * d;
    }
    if (C == 1) {
        double s = 1 / (1 + exp(-z[0] / T)), q = target[0];
        if (grad) grad[0] = T * (s - q);
        double sc = fmin(fmax(s, 1e-12), 1 - 1e-12);
        return -T * T * (q * log(sc) + (1 - q) * log(1 - sc));
    }
    double mx = z[0], sum = 0, loss = 0, p[64];
    for (int c = 1; c < C; c++) mx = fmax(mx, z[c]);
    for (int c = 0; c < C; c++) sum += (p[c] = exp((z[c] - mx) / T));
    for (int c = 0; c < C; c++) {
        p[c] /= sum;
        if (grad) grad[c] = T * (p[c] - target[c]);
        loss -= target[c] * log(fmax(p[c], 1e-12));
    }
    return T * T * loss;
}

static void backward(const net *n, double **acts, double **deltas, int B, double **gW, double **gb) {
    for (int l = n->L - 1; l >= 0; l--) {
        int I = n->dims[l], O = n->dims[l + 1];
        memset(gW[l], 0, (size_t)I * O * sizeof(double));
        memset(gb[l], 0, (size_t)O * sizeof(double));
        for (int r = 0; r < B; r++) {
            const double *a = acts[l] + (size_t)r * I, *d = deltas[l + 1] + (size_t)r * O;
            for (int o = 0; o < O; o++) gb[l][o] += d[o];
            for (int i = 0; i < I; i++) {
                if (a[i] == 0) continue;
                double *g = gW[l] + (size_t)i * O;
                for (int o = 0; o < O; o++) g[o] += a[i] * d[o];
            }
        }
        if (l == 0) break;
        for (int r = 0; r < B; r++) { /* delta of the layer below, through its ReLU */
            const double *d = deltas[l + 1] + (size_t)r * O, *a = acts[l] + (size_t)r * I;
            double *dp = deltas[l] + (size_t)r * I;
            for (int i = 0; i < I; i++) {
                if (a[i] <= 0) {
                    dp[i] = 0;
                    continue;
                }
                const double *w = n->W[l] + (size_t)i * O;
                double s = 0;
                for (int o = 0; o < O; o++) s += w[o] * d[o];
                dp[i] = s;
            }
        }
    }
}

static void adam_step(net *n, adam *opt, double **gW, double **gb, double lr, double scale) {
    const double b1 = 0.9, b2 = 0.999, eps = 1e-8;
    opt->t++;
    double c1 = 1 - pow(b1, (double)opt->t), c2 = 1 - pow(b2, (double)opt->t);
    for (int l = 0; l < n->L; l++) {
        size_t nw = (size_t)n->dims[l] * n->dims[l + 1];
        for (size_t i = 0; i < nw + (size_t)n->dims[l + 1]; i++) {
            int is_b = i >= nw;
            size_t k = is_b ? i - nw : i;
            double g = (is_b ? gb[l][k] : gW[l][k]) * scale;
            double *m = is_b ? &opt->mb[l][k] : &opt->mW[l][k], *v = is_b ? &opt->vb[l][k] : &opt->vW[l][k];
            *m = b1 * *m + (1 - b1) * g;
            *v = b2 * *v + (1 - b2) * g * g;
            double *w = is_b ? &n->b[l][k] : &n->W[l][k];
            *w -= lr * (*m / c1) / (sqrt(*v / c2) + eps);
        }
    }
}

/* Soft target of a probability row at temperature T. */
static void soften(const double *p, int C, double T, double *q) {
    if (C == 1) {
        double x = fmin(fmax(p[0], 1e-12), 1 - 1e-12);
        q[0] = 1 / (1 + exp(-log(x / (1 - x)) / T));
        return;
    }
    double mx = -INFINITY, s = 0;
    for (int c = 0; c < C; c++) mx = fmax(mx, log(fmax(p[c], 1e-12)) / T);
    for (int c = 0; c < C; c++) s += (q[c] = exp(log(fmax(p[c], 1e-12)) / T - mx));
    for (int c = 0; c < C; c++) q[c] /= s;
}

/* Student probability of class 1 (binary) / row of probabilities / value. */
static void predict(int task, int C, const double *z, double *p) {
    if (task == INF__TASK_REGRESSION) p[0] = z[0];
    else if (C == 1) p[0] = 1 / (1 + exp(-z[0]));
    else {
        double mx = z[0], s = 0;
        for (int c = 1; c < C; c++) mx = fmax(mx, z[c]);
        for (int c = 0; c < C; c++) s += (p[c] = exp(z[c] - mx));
        for (int c = 0; c < C; c++) p[c] /= s;
    }
}

typedef struct data {
    int n, K, C, task;     /* C: student outputs */
    double *x;             /* standardised [n, K] */
    double *target;        /* teacher outputs [n, C] (probabilities / standardised values) */
    double *soft;          /* at temperature T */
    double ymean, ystd;    /* regression target scaling */
} data;

static int argmax_row(const double *p, int C) {
    if (C == 1) return p[0] > 0.5;
    int k = 0;
    for (int c = 1; c < C; c++)
        if (p[c] > p[k]) k = c;
    return k;
}

typedef struct workspace {
    double *acts[18], *deltas[18], *gW[17], *gb[17], *grad;
} workspace;

static int ws_alloc(workspace *w, const net *n, int B) {
    for (int l = 0; l <= n->L; l++) {
        w->acts[l] = malloc((size_t)B * n->dims[l] * sizeof(double));
        w->deltas[l] = malloc((size_t)B * n->dims[l] * sizeof(double));
        if (!w->acts[l] || !w->deltas[l]) return -1;
    }
    for (int l = 0; l < n->L; l++) {
        w->gW[l] = malloc((size_t)n->dims[l] * n->dims[l + 1] * sizeof(double));
        w->gb[l] = malloc((size_t)n->dims[l + 1] * sizeof(double));
        if (!w->gW[l] || !w->gb[l]) return -1;
    }
    return 0;
}

static void ws_free(workspace *w, const net *n) {
    for (int l = 0; l <= n->L; l++) free(w->acts[l]), free(w->deltas[l]);
    for (int l = 0; l < n->L; l++) free(w->gW[l]), free(w->gb[l]);
}

/* Mean loss at T = 1 over rows idx[0..m), in batches of B. */
static double eval_loss(const net *n, const data *d, const int *idx, int m, workspace *w, int B) {
    double loss = 0;
    for (int s = 0; s < m; s += B) {
        int bs = m - s < B ? m - s : B;
        for (int r = 0; r < bs; r++) memcpy(w->acts[0] + (size_t)r * d->K, d->x + (size_t)idx[s + r] * d->K, (size_t)d->K * sizeof(double));
        forward(n, w->acts, bs);
        for (int r = 0; r < bs; r++)
            loss += head(d->task, d->C, w->acts[n->L] + (size_t)r * d->C, d->target + (size_t)idx[s + r] * d->C, 1, NULL);
    }
    return loss / m;
}

inf_status inf__distill(const char *src_uri, const inf_pipeline *p, inf_session *teacher, const inf_model *tm,
                        const inf__distill_options *o, const char *out_path, inf__distill_report *rep, inf_error *err) {
    memset(rep, 0, sizeof *rep);
    inf__tool_rows r;
    inf__tool_collect_options co = {o->label, 1, 0, 0};
    inf_status st = inf__tool_collect(src_uri, p, teacher, &co, &r, err);
    if (st) return st;
    inf__task_data td;
    memset(&td, 0, sizeof td);
    data d;
    memset(&d, 0, sizeof d);
    net nt = {0}, best = {0};
    adam opt = {0};
    workspace ws = {0};
    int *idx = NULL;
    double *mean = NULL, *sd = NULL;
    float *fW[17] = {0}, *fb[17] = {0}, *fmean = NULL, *fscale = NULL;

    /* the task, from the teacher's scores: >= 2 columns classification; 1 column
     * binary when it is a probability, else regression */
    int task = -1;
    for (int k = 0; k < r.n_out; k++) {
        const inf__tool_output *to = &r.out[k];
        if (to->width != 1 || (to->dtype != INF_DTYPE_F32 && to->dtype != INF_DTYPE_F64)) continue;
        int prob = 1;
        for (int i = 0; i < r.n && prob; i++) prob = to->v[i] >= 0 && to->v[i] <= 1;
        if (!prob) task = INF__TASK_REGRESSION;
    }
    if ((st = inf__task_data_build(&r, task, 0, &td, err))) goto done;
    if (r.n < 10) {
        st = inf_error_set(err, INF_EINVAL, "only %d records could be scored: too few to train a student", r.n);
        goto done;
    }
    /* which teacher output is which */
    const inf__tool_output *so = inf__tool_rows_output(&r, td.score_output);
    if (!so) {
        st = inf_error_set(err, INF_EINTERNAL, "teacher scores not found");
        goto done;
    }
    /* logits (scores that are no probability rows: evaluate's rule): the targets are their softmax, and the
     * student writes its own logits to that output -- the same softmax, the same argmax */
    bool logits = strstr(td.scores_from, "logit") != NULL;
    for (int k = 0; k < inf_model_n_outputs(tm); k++) {
        const char *nm = inf_model_output(tm, k)->name;
        if (strcmp(nm, so->name) && strcmp(nm, td.label_output)) {
            st = inf_error_set(err, INF_EUNSUPPORTED, "teacher output '%s' is neither its scores ('%s') nor its label: "
                               "a student MLP cannot reproduce it", nm, so->name);
            goto done;
        }
    }
    if (td.label_output[0] && td.label_dtype == INF_DTYPE_STRING) {
        st = inf_error_set(err, INF_EUNSUPPORTED, "the teacher's label output '%s' is a string: not supported yet", td.label_output);
        goto done;
    }
    d.n = r.n;
    d.K = r.x_cols;
    d.task = td.task;
    d.C = td.task == INF__TASK_REGRESSION ? 1 : so->width;
    if (d.C > 64) {
        st = inf_error_set(err, INF_EUNSUPPORTED, "%d classes (at most 64)", d.C);
        goto done;
    }
    rep->task = d.task;
    if (so->from_map) snprintf(rep->zipmap_output, sizeof rep->zipmap_output, "%s", so->name);
    rep->rows_holdout = (int)floor(o->holdout * d.n + 0.5);
    if (rep->rows_holdout < 1) rep->rows_holdout = 1;
    rep->rows_train = d.n - rep->rows_holdout;
    if (rep->rows_train < 1) {
        st = inf_error_set(err, INF_EINVAL, "--holdout %.3g leaves no training rows", o->holdout);
        goto done;
    }
    /* split */
    inf__rng rng = {o->seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull};
    idx = malloc((size_t)d.n * sizeof *idx);
    mean = calloc((size_t)d.K, sizeof *mean);
    sd = calloc((size_t)d.K, sizeof *sd);
    d.x = malloc((size_t)d.n * d.K * sizeof *d.x);
    d.target = malloc((size_t)d.n * d.C * sizeof *d.target);
    d.soft = malloc((size_t)d.n * d.C * sizeof *d.soft);
    if (!idx || !mean || !sd || !d.x || !d.target || !d.soft) goto nomem;
    for (int i = 0; i < d.n; i++) idx[i] = i;
    for (int i = d.n - 1; i > 0; i--) {
        int j = (int)(inf__rng_next(&rng) % (uint64_t)(i + 1)), t = idx[i];
        idx[i] = idx[j], idx[j] = t;
    }
    int *train = idx, *hold = idx + rep->rows_train;
    /* standardisation from the training rows */
    for (int j = 0; j < d.K; j++) {
        double s = 0, s2 = 0;
        int cnt = 0;
        for (int k = 0; k < rep->rows_train; k++) {
            double v = r.x[(size_t)train[k] * d.K + j];
            if (isnan(v)) continue;
            s += v, cnt++;
        }
        mean[j] = cnt ? s / cnt : 0;
        for (int k = 0; k < rep->rows_train; k++) {
            double v = r.x[(size_t)train[k] * d.K + j];
            if (!isnan(v)) s2 += (v - mean[j]) * (v - mean[j]);
        }
        sd[j] = cnt > 1 ? sqrt(s2 / cnt) : 1;
        if (!(sd[j] > 1e-12)) sd[j] = 1;
    }
    /* the float32 model computes (x - mean) * scale: train on exactly that */
    if (!(fmean = malloc((size_t)d.K * sizeof *fmean)) || !(fscale = malloc((size_t)d.K * sizeof *fscale))) goto nomem;
    for (int j = 0; j < d.K; j++) fmean[j] = (float)mean[j], fscale[j] = (float)(1 / sd[j]);
    for (int i = 0; i < d.n; i++)
        for (int j = 0; j < d.K; j++) {
            float v = (float)r.x[(size_t)i * d.K + j], z = (v - fmean[j]) * fscale[j];
            d.x[(size_t)i * d.K + j] = isnan(z) ? 0 : z;
        }
    /* targets */
    if (d.task == INF__TASK_REGRESSION) {
        double s = 0, s2 = 0;
        for (int k = 0; k < rep->rows_train; k++) s += so->v[train[k]];
        d.ymean = s / rep->rows_train;
        for (int k = 0; k < rep->rows_train; k++) s2 += (so->v[train[k]] - d.ymean) * (so->v[train[k]] - d.ymean);
        d.ystd = sqrt(s2 / rep->rows_train);
        if (!(d.ystd > 1e-12)) d.ystd = 1;
        for (int i = 0; i < d.n; i++) d.target[i] = d.soft[i] = (so->v[i] - d.ymean) / d.ystd;
    } else {
        for (int i = 0; i < d.n; i++) {
            if (logits)
                memcpy(d.target + (size_t)i * d.C, td.P + (size_t)i * d.C,
                       (size_t)d.C * sizeof *td.P); /* their softmax */
            else
                for (int c = 0; c < d.C; c++)
                    d.target[(size_t)i * d.C + c] = so->v[(size_t)i * d.C + c];
            soften(d.target + (size_t)i * d.C, d.C, o->temperature, d.soft + (size_t)i * d.C);
        }
    }
    /* the network */
    nt.L = o->n_hidden + 1;
    nt.dims[0] = d.K;
    for (int l = 0; l < o->n_hidden; l++) nt.dims[l + 1] = o->hidden[l];
    nt.dims[nt.L] = d.C;
    best.L = nt.L;
    memcpy(best.dims, nt.dims, sizeof nt.dims);
    if (net_alloc(&nt) || net_alloc(&best)) goto nomem;
    for (int l = 0; l < nt.L; l++) {
        double s = sqrt(2.0 / nt.dims[l]);
        for (size_t i = 0; i < (size_t)nt.dims[l] * nt.dims[l + 1]; i++) nt.W[l][i] = s * inf__rng_normal(&rng);
        opt.mW[l] = calloc((size_t)nt.dims[l] * nt.dims[l + 1], sizeof(double));
        opt.vW[l] = calloc((size_t)nt.dims[l] * nt.dims[l + 1], sizeof(double));
        opt.mb[l] = calloc((size_t)nt.dims[l + 1], sizeof(double));
        opt.vb[l] = calloc((size_t)nt.dims[l + 1], sizeof(double));
        if (!opt.mW[l] || !opt.vW[l] || !opt.mb[l] || !opt.vb[l]) goto nomem;
        rep->parameters += (int64_t)nt.dims[l] * nt.dims[l + 1] + nt.dims[l + 1];
    }
    int B = o->batch;
    if (ws_alloc(&ws, &nt, B)) goto nomem;
    net_copy(&best, &nt);
    double best_loss = eval_loss(&nt, &d, hold, rep->rows_holdout, &ws, B);
    int since = 0;
    for (int epoch = 1; epoch <= o->epochs; epoch++) {
        for (int i = rep->rows_train - 1; i > 0; i--) {
            int j = (int)(inf__rng_next(&rng) % (uint64_t)(i + 1)), t = train[i];
            train[i] = train[j], train[j] = t;
        }
        for (int s = 0; s < rep->rows_train; s += B) {
            int bs = rep->rows_train - s < B ? rep->rows_train - s : B;
            for (int k = 0; k < bs; k++)
                memcpy(ws.acts[0] + (size_t)k * d.K, d.x + (size_t)train[s + k] * d.K, (size_t)d.K * sizeof(double));
            forward(&nt, ws.acts, bs);
            for (int k = 0; k < bs; k++)
                head(d.task, d.C, ws.acts[nt.L] + (size_t)k * d.C, d.soft + (size_t)train[s + k] * d.C,
                     d.task == INF__TASK_REGRESSION ? 1 : o->temperature, ws.deltas[nt.L] + (size_t)k * d.C);
            backward(&nt, ws.acts, ws.deltas, bs, ws.gW, ws.gb);
            adam_step(&nt, &opt, ws.gW, ws.gb, o->lr, 1.0 / bs);
        }
        double loss = eval_loss(&nt, &d, hold, rep->rows_holdout, &ws, B);
        rep->epochs_run = epoch;
        if (!o->quiet) fprintf(stderr, "epoch %3d  holdout loss %.6f%s\n", epoch, loss, loss < best_loss ? "  *" : "");
        if (loss < best_loss - 1e-7 * fabs(best_loss)) {
            best_loss = loss;
            rep->best_epoch = epoch;
            net_copy(&best, &nt);
            since = 0;
        } else if (++since >= o->patience) break;
    }
    rep->holdout_loss = best_loss;

    /* the student in float32, as it will run; regression: undo the target scaling */
    inf__mlp mlp = {0};
    mlp.n_layers = best.L;
    memcpy(mlp.dims, best.dims, sizeof best.dims);
    for (int l = 0; l < best.L; l++) {
        size_t nw = (size_t)best.dims[l] * best.dims[l + 1];
        int last = l == best.L - 1;
        double ws_ = last && d.task == INF__TASK_REGRESSION ? d.ystd : 1, bo = last && d.task == INF__TASK_REGRESSION ? d.ymean : 0;
        if (!(fW[l] = malloc(nw * sizeof(float))) || !(fb[l] = malloc((size_t)best.dims[l + 1] * sizeof(float)))) goto nomem;
        for (size_t i = 0; i < nw; i++) fW[l][i] = (float)(best.W[l][i] * ws_);
        for (int i = 0; i < best.dims[l + 1]; i++) fb[l][i] = (float)(best.b[l][i] * ws_ + bo);
        mlp.W[l] = fW[l];
        mlp.b[l] = fb[l];
    }
    mlp.mean = fmean;
    mlp.scale = fscale;
    inf__mlp_outputs mo = {tm, d.task, so->name, td.label_output, td.label_dtype, td.class_labels, logits};
    if ((st = inf__mlp_write_onnx(&mlp, &mo, out_path, err))) goto done;

    /* fidelity and quality on the holdout */
    {
        int H = rep->rows_holdout, agree = 0, Cq = d.task == INF__TASK_REGRESSION ? 1 : (d.C == 1 ? 2 : d.C);
        double diff = 0;
        double *Ps = malloc((size_t)H * Cq * sizeof *Ps), *Pt = malloc((size_t)H * Cq * sizeof *Pt), ps[64];
        int *yh = malloc((size_t)H * sizeof *yh);
        double *yr = malloc((size_t)H * sizeof *yr);
        if (!Ps || !Pt || !yh || !yr) {
            free(Ps), free(Pt), free(yh), free(yr);
            goto nomem;
        }
        for (int s = 0; s < H; s += B) {
            int bs = H - s < B ? H - s : B;
            for (int k = 0; k < bs; k++)
                memcpy(ws.acts[0] + (size_t)k * d.K, d.x + (size_t)hold[s + k] * d.K, (size_t)d.K * sizeof(double));
            forward(&best, ws.acts, bs);
            for (int k = 0; k < bs; k++) {
                int i = hold[s + k], h = s + k;
                predict(d.task, d.C, ws.acts[best.L] + (size_t)k * d.C, ps);
                const double *pt = d.target + (size_t)i * d.C;
                if (d.task == INF__TASK_REGRESSION) {
                    Ps[h] = ps[0] * d.ystd + d.ymean;
                    Pt[h] = so->v[i];
                    diff += fabs(Ps[h] - Pt[h]);
                    yr[h] = td.y ? td.y[i] : 0;
                    continue;
                }
                agree += argmax_row(ps, d.C) == argmax_row(pt, d.C);
                for (int c = 0; c < d.C; c++) diff += fabs(ps[c] - pt[c]) / d.C;
                if (d.C == 1) {
                    Ps[(size_t)h * 2] = 1 - ps[0], Ps[(size_t)h * 2 + 1] = ps[0];
                    Pt[(size_t)h * 2] = 1 - pt[0], Pt[(size_t)h * 2 + 1] = pt[0];
                } else {
                    memcpy(Ps + (size_t)h * d.C, ps, (size_t)d.C * sizeof *ps);
                    memcpy(Pt + (size_t)h * d.C, pt, (size_t)d.C * sizeof *pt);
                }
                yh[h] = td.y_class ? td.y_class[i] : 0;
            }
        }
        rep->agreement = d.task == INF__TASK_REGRESSION ? NAN : (double)agree / H;
        rep->mean_abs_diff = diff / H;
        if (r.y) {
            rep->has_quality = 1;
            if (d.task == INF__TASK_REGRESSION) {
                inf__metrics_regression(yr, Ps, H, &rep->student_q);
                inf__metrics_regression(yr, Pt, H, &rep->teacher_q);
            } else if (Cq == 2) {
                for (int h = 0; h < H; h++) Ps[h] = Ps[(size_t)h * 2 + 1], Pt[h] = Pt[(size_t)h * 2 + 1];
                inf__metrics_binary(yh, Ps, H, &rep->student_q);
                inf__metrics_binary(yh, Pt, H, &rep->teacher_q);
            } else {
                inf__metrics_multiclass(yh, Ps, H, Cq, &rep->student_q);
                inf__metrics_multiclass(yh, Pt, H, Cq, &rep->teacher_q);
            }
        }
        free(Ps), free(Pt), free(yh), free(yr);
    }
    goto done;
nomem:
    st = inf_error_set(err, INF_ENOMEM, "out of memory training the student");
done:
    for (int l = 0; l < 17; l++) {
        free(fW[l]), free(fb[l]);
        free(opt.mW[l]), free(opt.vW[l]), free(opt.mb[l]), free(opt.vb[l]);
    }
    if (nt.L) ws_free(&ws, &nt);
    net_free(&nt), net_free(&best);
    free(fmean), free(fscale), free(idx), free(mean), free(sd), free(d.x), free(d.target), free(d.soft);
    inf__task_data_free(&td);
    inf__tool_rows_free(&r);
    return st;
}
