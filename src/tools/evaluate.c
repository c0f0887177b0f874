/*
 * evaluate.c -- what `infera evaluate` measures about quality: which output
 * holds the scores, which task it is, how labels map to classes, and the
 * metrics (metrics.c) of one model over a labelled source.
 *
 * Scores: the output whose name contains "prob" (case-insensitive), else the
 * first float output.  Rows that are not probabilities (outside [0, 1], or
 * C >= 2 columns not summing to 1) are taken as logits: softmax (sigmoid
 * for one column).  Task: C >= 3 columns multi-class, 2 binary (column 1 is
 * P(class 1)), 1 binary when every label is 0 or 1, else regression; the
 * caller may force it.  Labels: with a label output (int or string, one per
 * row), a label is the class whose index the model's own label output pairs
 * with that argmax on this data (with a ZipMap output: the map's keys); else
 * the label must be the class index.  A ZipMap output (one {class: p} map
 * per row) is read as its float row (collect.c).
 */
#include <strings.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/tools.h"

static const inf__tool_output *score_output(const inf__tool_rows *r) {
    const inf__tool_output *first = NULL;
    for (int o = 0; o < r->n_out; o++) {
        const inf__tool_output *out = &r->out[o];
        if (!out->width || (out->dtype != INF_DTYPE_F32 && out->dtype != INF_DTYPE_F64)) continue;
        if (inf__tools_scores_name(out->name))
            return out;
        if (!first) first = out;
    }
    return first;
}

static const inf__tool_output *label_output(const inf__tool_rows *r, const inf__tool_output *scores) {
    const inf__tool_output *pick = NULL;
    for (int o = 0; o < r->n_out; o++) {
        const inf__tool_output *out = &r->out[o];
        if (out == scores || out->width != 1) continue;
        if (out->dtype != INF_DTYPE_STRING && out->dtype != INF_DTYPE_I64 && out->dtype != INF_DTYPE_I32) continue;
        if (!pick || !strcasecmp(out->name, "label")) pick = out;
    }
    return pick;
}

static int parse_int(const char *s, long long *v) {
    char *end;
    *v = strtoll(s, &end, 10);
    return *s && !*end;
}

static void row_text(const inf__tool_output *o, int i, char *buf, size_t cap) {
    if (o->s) snprintf(buf, cap, "%s", o->s[i]);
    else snprintf(buf, cap, "%lld", (long long)o->v[i]);
}

/* Probabilities per row: as given, or softmax/sigmoid of logits. */
static int to_probabilities(const inf__tool_output *o, int n, double *P) {
    int C = o->width, probs = 1;
    for (int i = 0; i < n && probs; i++) {
        double s = 0;
        for (int c = 0; c < C; c++) {
            double v = o->v[(size_t)i * C + c];
            if (!(v >= 0 && v <= 1)) probs = 0;
            s += v;
        }
        if (C >= 2 && fabs(s - 1) > 1e-3) probs = 0;
    }
    for (int i = 0; i < n; i++) {
        const double *z = o->v + (size_t)i * C;
        double *p = P + (size_t)i * (C == 1 ? 2 : C);
        if (C == 1) {
            double q = probs ? z[0] : 1 / (1 + exp(-z[0]));
            p[0] = 1 - q;
            p[1] = q;
            continue;
        }
        if (probs) {
            memcpy(p, z, (size_t)C * sizeof *p);
            continue;
        }
        double mx = z[0], s = 0;
        for (int c = 1; c < C; c++) mx = fmax(mx, z[c]);
        for (int c = 0; c < C; c++) s += (p[c] = exp(z[c] - mx));
        for (int c = 0; c < C; c++) p[c] /= s;
    }
    return probs;
}

static int argmax(const double *p, int C) {
    int k = 0;
    for (int c = 1; c < C; c++)
        if (p[c] > p[k]) k = c;
    return k;
}

/* Class index of each label text; err names the first label that is none. */
static inf_status map_labels(const inf__tool_rows *r, const inf__tool_output *sc, const inf__tool_output *lab,
                             inf__task_data *t, inf_error *err) {
    int C = t->C, n = r->n;
    char **names = calloc((size_t)C, sizeof *names);
    if (!names) return inf_error_set(err, INF_ENOMEM, "out of memory");
    int identity = 1, keyed = sc->keys && sc->width == C && sc->keys[C - 1];
    if (keyed) { /* a ZipMap names the class of each column: every class, predicted on this data or not */
        int numeric = 1;
        for (int k = 0; k < C; k++) {
            long long v;
            if (!(names[k] = strdup(sc->keys[k]))) goto nomem;
            if (!parse_int(names[k], &v))
                numeric = 0, identity = 0;
            else if (v != k)
                identity = 0;
        }
        if (numeric && !identity) {
            if (!(t->class_labels = calloc((size_t)C, sizeof *t->class_labels))) goto nomem;
            for (int k = 0; k < C; k++)
                t->class_labels[k] = strtoll(names[k], NULL, 10);
        }
    } else if (lab) {
        char buf[256];
        for (int i = 0; i < n; i++) {
            int k = argmax(t->P + (size_t)i * C, C);
            if (names[k]) continue;
            row_text(lab, i, buf, sizeof buf);
            if (!(names[k] = strdup(buf))) goto nomem;
            long long v;
            if (!parse_int(buf, &v) || v != k) identity = 0;
        }
        if (lab->dtype != INF_DTYPE_STRING && !identity) {
            if (!(t->class_labels = calloc((size_t)C, sizeof *t->class_labels))) goto nomem;
            for (int k = 0; k < C; k++) t->class_labels[k] = names[k] ? strtoll(names[k], NULL, 10) : k;
        }
    }
    inf_status st = INF_OK;
    for (int i = 0; i < n && r->y && !st; i++) {
        const char *y = r->y[i];
        int cls = -1;
        long long v;
        for (int k = 0; k < C && !identity; k++)
            if (names[k] && !strcmp(names[k], y)) cls = k;
        if (cls < 0 && identity && parse_int(y, &v) && v >= 0 && v < C) cls = (int)v;
        if (cls < 0)
            st = inf_error_set(
                err, INF_EINVAL,
                identity ? "label '%s' (scored row %d) is not a class index 0..%d of the model's %d outputs"
                : keyed  ? "label '%s' (scored row %d) is not among the model's %d classes (its ZipMap keys)"
                         : "label '%s' (scored row %d) is not among the classes the model's label output gives on this "
                          "data (%d classes)",
                y, i + 1, identity ? C - 1 : C, C);
        else t->y_class[i] = cls;
    }
    for (int k = 0; k < C; k++) free(names[k]);
    free(names);
    return st;
nomem:
    for (int k = 0; k < C; k++) free(names[k]);
    free(names);
    return inf_error_set(err, INF_ENOMEM, "out of memory");
}

/* Metrics of NaN or infinite scores would be NaN, or (AUC's ranking) meaningless: an error naming the row. */
static void non_finite_score(const inf__tool_output *sc, int row, inf_error *err) {
    inf_error_set(err, INF_EINVAL,
                  "the model's output '%s' is NaN or infinite on scored row %d: metrics need finite scores (a NaN or "
                  "infinite feature the model does not handle as missing?)",
                  sc->name, row + 1);
}

inf_status inf__task_data_build(const inf__tool_rows *r, int task_override, int need_labels, inf__task_data *t,
                                inf_error *err) {
    memset(t, 0, sizeof *t);
    const inf__tool_output *sc = score_output(r);
    if (!sc) return inf_error_set(err, INF_EUNSUPPORTED, "the model has no float tensor output to score");
    const inf__tool_output *lab = label_output(r, sc);
    if (lab) {
        snprintf(t->label_output, sizeof t->label_output, "%s", lab->name);
        t->label_dtype = lab->dtype;
    }
    snprintf(t->score_output, sizeof t->score_output, "%s", sc->name);
    int n = r->n, C = sc->width;
    if (need_labels && !r->y) return inf_error_set(err, INF_EINVAL, "no label column");
    int task = task_override;
    if (task < 0) {
        task = C >= 3 ? INF__TASK_MULTICLASS : INF__TASK_BINARY;
        if (C == 1 && r->y)
            for (int i = 0; i < n; i++)
                if (strcmp(r->y[i], "0") && strcmp(r->y[i], "1")) task = INF__TASK_REGRESSION;
    }
    if (task == INF__TASK_BINARY && C > 2)
        return inf_error_set(err, INF_EINVAL, "binary task, but output '%s' has %d columns", sc->name, C);
    if (task == INF__TASK_MULTICLASS && C < 2)
        return inf_error_set(err, INF_EINVAL, "multi-class task, but output '%s' has one column", sc->name);
    if (task == INF__TASK_REGRESSION && C != 1)
        return inf_error_set(err, INF_EINVAL, "regression needs one output column; '%s' has %d", sc->name, C);
    t->task = task;
    t->n = n;
    if (task == INF__TASK_REGRESSION) {
        t->C = 1;
        snprintf(t->scores_from, sizeof t->scores_from, "%s", sc->name);
        t->pred = malloc((size_t)n * sizeof *t->pred);
        t->y = malloc((size_t)n * sizeof *t->y);
        if (!t->pred || !t->y) {
            inf__task_data_free(t);
            return inf_error_set(err, INF_ENOMEM, "out of memory");
        }
        for (int i = 0; i < n; i++) {
            t->pred[i] = sc->v[i];
            if (!isfinite(t->pred[i])) {
                non_finite_score(sc, i, err);
                inf__task_data_free(t);
                return INF_EINVAL;
            }
            if (!r->y) continue;
            char *end;
            t->y[i] = strtod(r->y[i], &end);
            if (end == r->y[i] || *end || !isfinite(t->y[i])) {
                inf_error_set(err, INF_EINVAL, "label '%s' (scored row %d) is not a finite number (regression)",
                              r->y[i], i + 1);
                inf__task_data_free(t);
                return INF_EINVAL;
            }
        }
        return INF_OK;
    }
    t->C = C == 1 ? 2 : C;
    t->P = malloc((size_t)n * t->C * sizeof *t->P);
    t->y_class = calloc((size_t)n, sizeof *t->y_class);
    if (!t->P || !t->y_class) {
        inf__task_data_free(t);
        return inf_error_set(err, INF_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < (size_t)n * (size_t)C; i++)
        if (!isfinite(sc->v[i])) {
            non_finite_score(sc, (int)(i / (size_t)C), err);
            inf__task_data_free(t);
            return INF_EINVAL;
        }
    int probs = to_probabilities(sc, n, t->P);
    snprintf(t->scores_from, sizeof t->scores_from, "%s%s%s", sc->name,
             task == INF__TASK_BINARY ? (C == 1 ? "" : "[:,1]") : "",
             probs ? "" : (C == 1 ? " (logit: sigmoid applied)" : " (logits: softmax applied)"));
    inf_status st = map_labels(r, sc, lab, t, err);
    if (st) inf__task_data_free(t);
    return st;
}

void inf__task_data_free(inf__task_data *t) {
    free(t->y_class), free(t->P), free(t->y), free(t->pred), free(t->class_labels);
    memset(t, 0, sizeof *t);
}

inf_status inf__evaluate(const char *src_uri, const inf_pipeline *p, inf_session *session, const char *label,
                         int task_override, inf__eval_result *out, inf_error *err) {
    memset(out, 0, sizeof *out);
    inf__tool_rows r;
    inf__tool_collect_options co = {label, 0, 0, 0};
    inf_status st = inf__tool_collect(src_uri, p, session, &co, &r, err);
    if (st) return st;
    inf__task_data t;
    if ((st = inf__task_data_build(&r, task_override, 1, &t, err))) goto done;
    out->rows = r.n;
    out->rejected = r.n_rejected;
    out->unlabelled = r.n_unlabelled;
    snprintf(out->scores_from, sizeof out->scores_from, "%s", t.scores_from);
    snprintf(out->ignored_note, sizeof out->ignored_note, "%s", r.ignored_note);
    if (t.task == INF__TASK_REGRESSION) inf__metrics_regression(t.y, t.pred, t.n, &out->m);
    else if (t.task == INF__TASK_MULTICLASS) {
        if (inf__metrics_multiclass(t.y_class, t.P, t.n, t.C, &out->m)) st = inf_error_set(err, INF_ENOMEM, "out of memory");
    } else {
        double *p1 = malloc((size_t)t.n * sizeof *p1);
        if (!p1) st = inf_error_set(err, INF_ENOMEM, "out of memory");
        for (int i = 0; p1 && i < t.n; i++) p1[i] = t.P[(size_t)i * 2 + 1];
        if (p1) inf__metrics_binary(t.y_class, p1, t.n, &out->m);
        free(p1);
    }
    inf__task_data_free(&t);
done:
    inf__tool_rows_free(&r);
    return st;
}
