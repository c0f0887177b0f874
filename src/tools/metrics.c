/*
 * metrics.c -- quality metrics of `infera evaluate` (and distill's report),
 * defined as scikit-learn defines them so the numbers can be checked against
 * it (tests/tools/test_evaluate.sh does, to 1e-9):
 *
 *   accuracy    mean(pred == y); pred = argmax of the probabilities
 *               (binary: class 1 when p1 > 0.5)
 *   precision, recall, f1
 *               binary: of class 1 (average='binary'); multi-class: macro
 *               average over the classes in y or pred; 0 where undefined
 *               (zero_division=0)
 *   auc         ROC-AUC; ties get mid-ranks (the Mann-Whitney form of the
 *               trapezoidal area, as roc_auc_score); multi-class: one vs
 *               rest, macro (multi_class='ovr'); NaN with one class only
 *   logloss     log_loss with probabilities clipped to [eps, 1 - eps]
 *               (eps = float64 epsilon) and each row renormalised
 *   rmse, mae, r2   r2 = 1 - SS_res / SS_tot (1 or 0 when SS_tot = 0)
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tools/tools.h"

const char *const inf__task_names[3] = {"binary", "multiclass", "regression"};
const char *const inf__metric_names[INF__N_METRICS] = {"accuracy", "precision", "recall", "f1", "auc",
                                                       "logloss",  "rmse",      "mae",    "r2"};
enum { M_ACC, M_PREC, M_REC, M_F1, M_AUC, M_LOGLOSS, M_RMSE, M_MAE, M_R2 };

int inf__metric_higher_is_better(int m) { return m != M_LOGLOSS && m != M_RMSE && m != M_MAE; }
int inf__metric_applies(int task, int m) { return task == INF__TASK_REGRESSION ? m >= M_RMSE : m < M_RMSE; }
int inf__metric_find(const char *name) {
    for (int m = 0; m < INF__N_METRICS; m++)
        if (!strcmp(name, inf__metric_names[m])) return m;
    return -1;
}

static void clear(inf__metrics *out, int task) {
    out->task = task;
    for (int m = 0; m < INF__N_METRICS; m++) out->v[m] = NAN;
}

typedef struct ranked {
    double s;
    int i;
} ranked;

static int cmp_ranked(const void *a, const void *b) {
    double x = ((const ranked *)a)->s, y = ((const ranked *)b)->s;
    return x < y ? -1 : x > y;
}

double inf__roc_auc(const int *y, const double *score, int n) {
    ranked *r = malloc((size_t)n * sizeof *r);
    if (!r) return NAN;
    double n_pos = 0;
    for (int i = 0; i < n; i++) {
        r[i].s = score[i];
        r[i].i = i;
        n_pos += y[i] != 0;
    }
    double n_neg = n - n_pos;
    if (n_pos == 0 || n_neg == 0) {
        free(r);
        return NAN;
    }
    qsort(r, (size_t)n, sizeof *r, cmp_ranked);
    double rank_sum = 0; /* sum of the positives' mid-ranks (1-based) */
    for (int i = 0; i < n;) {
        int j = i;
        while (j < n && r[j].s == r[i].s) j++;
        if (j == i) j++;                /* a NaN equals nothing, not even itself (the callers refuse NaN scores) */
        double mid = (i + 1 + j) / 2.0; /* ranks i+1 .. j */
        for (int k = i; k < j; k++)
            if (y[r[k].i]) rank_sum += mid;
        i = j;
    }
    free(r);
    return (rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg);
}

static double f1_of(double p, double r) { return p + r > 0 ? 2 * p * r / (p + r) : 0; }

void inf__metrics_binary(const int *y, const double *p1, int n, inf__metrics *out) {
    clear(out, INF__TASK_BINARY);
    double tp = 0, fp = 0, fn = 0, correct = 0, loss = 0;
    for (int i = 0; i < n; i++) {
        int pred = p1[i] > 0.5;
        correct += pred == y[i];
        tp += pred && y[i];
        fp += pred && !y[i];
        fn += !pred && y[i];
        double q = fmin(fmax(p1[i], DBL_EPSILON), 1 - DBL_EPSILON), a = 1 - q, s = a + q;
        loss += -log((y[i] ? q : a) / s);
    }
    out->v[M_ACC] = correct / n;
    out->v[M_PREC] = tp + fp > 0 ? tp / (tp + fp) : 0;
    out->v[M_REC] = tp + fn > 0 ? tp / (tp + fn) : 0;
    out->v[M_F1] = f1_of(out->v[M_PREC], out->v[M_REC]);
    out->v[M_AUC] = inf__roc_auc(y, p1, n);
    out->v[M_LOGLOSS] = loss / n;
}

int inf__metrics_multiclass(const int *y, const double *P, int n, int C, inf__metrics *out) {
    clear(out, INF__TASK_MULTICLASS);
    double *tp = calloc((size_t)C, sizeof *tp), *fp = calloc((size_t)C, sizeof *fp), *fn = calloc((size_t)C, sizeof *fn);
    double *col = malloc((size_t)n * sizeof *col);
    int *bin = malloc((size_t)n * sizeof *bin), *seen = calloc((size_t)C, sizeof *seen);
    if (!tp || !fp || !fn || !col || !bin || !seen) {
        free(tp), free(fp), free(fn), free(col), free(bin), free(seen);
        return -1;
    }
    double correct = 0, loss = 0;
    for (int i = 0; i < n; i++) {
        const double *p = P + (size_t)i * C;
        int pred = 0;
        for (int c = 1; c < C; c++)
            if (p[c] > p[pred]) pred = c;
        correct += pred == y[i];
        if (pred == y[i]) tp[pred]++;
        else fp[pred]++, fn[y[i]]++;
        seen[pred] |= 2;
        seen[y[i]] |= 1;
        double s = 0, py = 0;
        for (int c = 0; c < C; c++) {
            double q = fmin(fmax(p[c], DBL_EPSILON), 1 - DBL_EPSILON);
            s += q;
            if (c == y[i]) py = q;
        }
        loss += -log(py / s);
    }
    double sp = 0, sr = 0, sf = 0, auc = 0;
    int n_labels = 0, n_auc = 0;
    for (int c = 0; c < C; c++) {
        if (!seen[c]) continue;
        double p = tp[c] + fp[c] > 0 ? tp[c] / (tp[c] + fp[c]) : 0, r = tp[c] + fn[c] > 0 ? tp[c] / (tp[c] + fn[c]) : 0;
        sp += p, sr += r, sf += f1_of(p, r);
        n_labels++;
        if (!(seen[c] & 1)) continue; /* one vs rest over the classes present in y */
        for (int i = 0; i < n; i++) {
            col[i] = P[(size_t)i * C + c];
            bin[i] = y[i] == c;
        }
        double a = inf__roc_auc(bin, col, n);
        if (!isnan(a)) auc += a, n_auc++;
    }
    out->v[M_ACC] = correct / n;
    out->v[M_PREC] = sp / n_labels;
    out->v[M_REC] = sr / n_labels;
    out->v[M_F1] = sf / n_labels;
    out->v[M_AUC] = n_auc ? auc / n_auc : NAN;
    out->v[M_LOGLOSS] = loss / n;
    free(tp), free(fp), free(fn), free(col), free(bin), free(seen);
    return 0;
}

void inf__metrics_regression(const double *y, const double *pred, int n, inf__metrics *out) {
    clear(out, INF__TASK_REGRESSION);
    double se = 0, ae = 0, mean = 0, ss_tot = 0;
    for (int i = 0; i < n; i++) mean += y[i];
    mean /= n;
    for (int i = 0; i < n; i++) {
        double d = y[i] - pred[i];
        se += d * d;
        ae += fabs(d);
        ss_tot += (y[i] - mean) * (y[i] - mean);
    }
    out->v[M_RMSE] = sqrt(se / n);
    out->v[M_MAE] = ae / n;
    out->v[M_R2] = ss_tot > 0 ? 1 - se / ss_tot : (se == 0 ? 1 : 0);
}
