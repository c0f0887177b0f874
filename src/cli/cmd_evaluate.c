/*
 * cmd_evaluate.c -- `infera evaluate REF --data SRC --label COL [--spec FILE]
 * [--baseline REF] [--json] [--max-drop METRIC=X]... [--register]`
 * (shared/DESIGN.md §4, docs/compression.md).
 *
 * Quality comes from src/tools (evaluate.c, metrics.c): the model runs over
 * the labelled records through its pipeline, as `infera batch` would.  Cost
 * comes from the bench code (cmd_bench.c): batch-1 latency and batch-64
 * throughput (64 rows / median latency: robust on a busy machine) on random inputs of the declared shape, file size, parameter
 * count, and the peak RSS of evaluating that model (reset between models
 * through /proc/self/clear_refs).  --max-drop makes it a release gate;
 * --register stores the metrics on the registry version evaluated.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "infera/registry.h"
#include "runtime/model.h"
#include "tools/tools.h"

static const char *CMD = "evaluate";
#define MAX_DROPS 16

typedef struct eval_opts {
    const char *ref, *data, *label, *spec, *baseline, *id_column;
    int json, reg, threads, task;
    int precision, baseline_precision; /* session option precision of REF and of the baseline */
    int n_drops;
    int drop_metric[MAX_DROPS];
    double drop_max[MAX_DROPS];
} eval_opts;

typedef struct eval_cost {
    uint64_t size_bytes;
    int64_t parameters;
    double p50, p99, throughput, peak_rss_mb;
} eval_cost;

typedef struct eval_one {
    const char *ref;
    inf__eval_result q;
    eval_cost cost;
    int64_t version; /* registry version, 0 for a file */
    int precision;   /* the session's (inf_precision) */
    char name[160];
} eval_one;

static int parse_drop(const char *v, eval_opts *o) {
    const char *eq = strchr(v, '=');
    char name[32];
    if (!eq || eq == v || (size_t)(eq - v) >= sizeof name) return cli_usage(CMD, "--max-drop expects METRIC=X, got '%s'", v);
    memcpy(name, v, (size_t)(eq - v));
    name[eq - v] = 0;
    int m = inf__metric_find(name);
    if (m < 0) return cli_usage(CMD, "--max-drop: unknown metric '%s' (accuracy, precision, recall, f1, auc, logloss, rmse, mae, r2)", name);
    char *end;
    double x = strtod(eq + 1, &end);
    if (end == eq + 1 || *end || !(x >= 0)) return cli_usage(CMD, "--max-drop %s: '%s' is not a number >= 0", name, eq + 1);
    if (o->n_drops == MAX_DROPS) return cli_usage(CMD, "at most %d --max-drop", MAX_DROPS);
    o->drop_metric[o->n_drops] = m;
    o->drop_max[o->n_drops++] = x;
    return 0;
}

static int parse_args(int argc, char **argv, eval_opts *o) {
    memset(o, 0, sizeof *o);
    o->threads = 1;
    o->task = -1;
    for (int i = 1; i < argc; i++) {
        bool missing = false;
        const char *v;
        int rc;
        if ((v = cli_flag_value(argc, argv, &i, "--data", &missing))) o->data = v;
        else if ((v = cli_flag_value(argc, argv, &i, "--label", &missing))) o->label = v;
        else if ((v = cli_flag_value(argc, argv, &i, "--spec", &missing))) o->spec = v;
        else if ((v = cli_flag_value(argc, argv, &i, "--baseline", &missing))) o->baseline = v;
        else if ((v = cli_flag_value(argc, argv, &i, "--id-column", &missing))) o->id_column = v;
        else if ((v = cli_flag_value(argc, argv, &i, "--max-drop", &missing))) {
            if ((rc = parse_drop(v, o))) return rc;
        } else if ((v = cli_flag_value(argc, argv, &i, "--threads", &missing))) {
            if (!cli_parse_int(CMD, "--threads", v, 1, 256, &o->threads)) return 2;
        } else if ((v = cli_flag_value(argc, argv, &i, "--precision", &missing))) {
            if (!cli_parse_precision(CMD, v, &o->precision)) return 2;
        } else if ((v = cli_flag_value(argc, argv, &i, "--baseline-precision", &missing))) {
            if (!cli_parse_precision(CMD, v, &o->baseline_precision)) return 2;
        } else if ((v = cli_flag_value(argc, argv, &i, "--task", &missing))) {
            for (int t = 0; t < 3; t++)
                if (!strcmp(v, inf__task_names[t])) o->task = t;
            if (o->task < 0) return cli_usage(CMD, "--task must be binary, multiclass or regression (got '%s')", v);
        } else if (!strcmp(argv[i], "--json"))
            o->json = 1;
        else if (!strcmp(argv[i], "--register")) o->reg = 1;
        else if (missing) return cli_usage(CMD, "%s needs a value", argv[i]);
        else if (argv[i][0] == '-' && argv[i][1]) return cli_usage(CMD, "unknown option '%s' (see 'infera help evaluate')", argv[i]);
        else if (!o->ref) o->ref = argv[i];
        else return cli_usage(CMD, "unexpected argument '%s'", argv[i]);
    }
    if (!o->ref) return cli_usage(CMD, "missing model (usage: infera evaluate REF --data SRC --label COL)");
    if (!o->data) return cli_usage(CMD, "missing --data SRC (a labelled batch source: csv:, jsonl:, sqlite:, postgresql:)");
    if (!o->label) return cli_usage(CMD, "missing --label COL (the column holding the true value)");
    if (o->n_drops && !o->baseline) return cli_usage(CMD, "--max-drop compares with a baseline: give --baseline REF");
    if (o->reg && inf_registry_ref_is_path(o->ref))
        return cli_usage(CMD, "--register needs a registry reference (NAME@VERSION), not the file '%s'", o->ref);
    return 0;
}

/* Peak RSS of what follows only: Linux resets the high-water mark on "5". */
static void reset_peak_rss(void) {
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f) return;
    fputs("5", f);
    fclose(f);
}

static inf_status measure_cost(const inf_model *model, int threads, int precision, eval_cost *c, inf_error *err) {
    inf_model_summary s;
    inf_model_get_summary(model, &s);
    c->size_bytes = s.file_bytes;
    c->parameters = s.n_parameters;
    int batches[2] = {1, 64};
    for (int k = 0; k < 2; k++) {
        inf_session_options so;
        inf_session_options_init(&so);
        so.n_threads = threads;
        so.max_batch = batches[k];
        so.precision = precision;
        inf_session *session = NULL;
        inf_tensor *values[256] = {0};
        inf_status st = INF_OK;
        if (inf_model_n_inputs(model) > 256) return inf_error_set(err, INF_EUNSUPPORTED, "too many inputs");
        if ((st = inf_session_new(model, &so, &session, err))) return st;
        int bad = cli_bench_random_inputs(model, batches[k], values);
        cli_bench_stats bs;
        if (bad >= 0)
            st = inf_error_set(err, INF_EUNSUPPORTED, "cannot make a random value for input '%s' to time the model",
                               inf_model_input(model, bad)->name);
        else st = cli_bench_time(session, values, k ? 10 : 20, k ? 100 : 300, &bs, err);
        if (!st && k == 0) c->p50 = bs.p50, c->p99 = bs.p99;
        if (!st && k == 1) c->throughput = bs.p50 > 0 ? (double)bs.rows / (bs.p50 * 1e-6) : 0; /* median: robust */
        for (int i = 0; i < 256; i++) inf_tensor_free(values[i]);
        inf_session_free(session);
        if (st) return st;
    }
    return INF_OK;
}

static int evaluate_one(const eval_opts *o, const char *ref, int precision, eval_one *out) {
    memset(out, 0, sizeof *out);
    out->ref = ref;
    out->precision = precision;
    reset_peak_rss();
    inf__rt_model m;
    memset(&m, 0, sizeof m);
    inf__rt_model_options mo = {0};
    mo.pipeline_path = o->spec;
    mo.id_column = o->id_column;
    inf_error e;
    if (inf__rt_model_open(ref, &mo, &m, &e)) return cli_fail(CMD, "model %s: %s", ref, e.message);
    out->version = m.version_num;
    snprintf(out->name, sizeof out->name, "%s", m.name);
    inf_session_options so;
    inf_session_options_init(&so);
    so.n_threads = o->threads;
    so.max_batch = 1024;
    so.precision = precision;
    inf_session *session = NULL;
    int rc = 0;
    if (inf_session_new(m.model, &so, &session, &e) ||
        inf__evaluate(o->data, m.pipeline, session, o->label, o->task, &out->q, &e) ||
        measure_cost(m.model, o->threads, precision, &out->cost, &e))
        rc = cli_fail(CMD, "%s: %s", ref, e.message);
    else if (out->q.ignored_note[0])
        fprintf(stderr, "infera evaluate: %s: %s\n", ref, out->q.ignored_note);
    out->cost.peak_rss_mb = cli_peak_rss_mb();
    inf_session_free(session);
    inf__rt_model_close(&m);
    return rc;
}

static void json_number(double v) {
    if (isnan(v) || isinf(v)) printf("null");
    else printf("%.17g", v);
}

static void json_metrics(const inf__metrics *m) {
    printf("{");
    int first = 1;
    for (int k = 0; k < INF__N_METRICS; k++) {
        if (!inf__metric_applies(m->task, k)) continue;
        printf("%s\"%s\":", first ? "" : ",", inf__metric_names[k]);
        json_number(m->v[k]);
        first = 0;
    }
    printf("}");
}

static void json_cost(const eval_cost *c) {
    printf("{\"size_bytes\":%llu,\"parameters\":%lld,\"latency_us_p50\":%.2f,\"latency_us_p99\":%.2f,"
           "\"throughput_rows_per_s\":%.1f,\"peak_rss_mb\":%.1f}",
           (unsigned long long)c->size_bytes, (long long)c->parameters, c->p50, c->p99, c->throughput, c->peak_rss_mb);
}

static void print_json(const eval_one *a, const eval_one *b) {
    printf("{\"model\":");
    cli_json_string(a->ref);
    printf(",\"rows\":%d,\"task\":\"%s\",\"metrics\":", a->q.rows, inf__task_names[a->q.m.task]);
    json_metrics(&a->q.m);
    printf(",\"cost\":");
    json_cost(&a->cost);
    printf(",\"precision\":\"%s\"", inf_precision_name(a->precision));
    if (!b) {
        printf(",\"baseline\":null,\"delta\":null}\n");
        return;
    }
    printf(",\"baseline\":{\"model\":");
    cli_json_string(b->ref);
    printf(",\"metrics\":");
    json_metrics(&b->q.m);
    printf(",\"cost\":");
    json_cost(&b->cost);
    printf(",\"precision\":\"%s\"", inf_precision_name(b->precision));
    printf("},\"delta\":{");
    int first = 1;
    for (int k = 0; k < INF__N_METRICS; k++) {
        if (!inf__metric_applies(a->q.m.task, k)) continue;
        printf("%s\"%s\":", first ? "" : ",", inf__metric_names[k]);
        json_number(a->q.m.v[k] - b->q.m.v[k]);
        first = 0;
    }
    printf("}}\n");
}

static void text_row(const char *name, double a, const double *b, const char *fmt, int ratio) {
    char x[64], y[64], d[64];
    snprintf(x, sizeof x, fmt, a);
    if (isnan(a)) snprintf(x, sizeof x, "-");
    printf("  %-24s %16s", name, x);
    if (b) {
        snprintf(y, sizeof y, fmt, *b);
        if (isnan(*b)) snprintf(y, sizeof y, "-");
        snprintf(d, sizeof d, "%+.6g", a - *b);
        if (isnan(a - *b)) snprintf(d, sizeof d, "-");
        printf(" %16s %14s", y, d);
        if (ratio && *b != 0 && !isnan(a / *b)) printf("  (x%.2f)", a / *b);
    }
    printf("\n");
}

static void print_text(const eval_one *a, const eval_one *b) {
    printf("model      %s (precision %s)\n", a->ref, inf_precision_name(a->precision));
    if (b) printf("baseline   %s (precision %s)\n", b->ref, inf_precision_name(b->precision));
    printf("task       %s, %d rows scored (%d rejected by the pipeline, %d without a label)\n", inf__task_names[a->q.m.task],
           a->q.rows, a->q.rejected, a->q.unlabelled);
    printf("scores     %s\n\n", a->q.scores_from);
    printf("  %-24s %16s", "quality", "model");
    if (b) printf(" %16s %14s", "baseline", "delta");
    printf("\n");
    for (int k = 0; k < INF__N_METRICS; k++)
        if (inf__metric_applies(a->q.m.task, k)) text_row(inf__metric_names[k], a->q.m.v[k], b ? &b->q.m.v[k] : NULL, "%.6f", 0);
    printf("\n  %-24s\n", "cost");
    const eval_cost *c = &a->cost, *d = b ? &b->cost : NULL;
    double vb[6];
    if (d) vb[0] = (double)d->size_bytes, vb[1] = (double)d->parameters, vb[2] = d->p50, vb[3] = d->p99,
           vb[4] = d->throughput, vb[5] = d->peak_rss_mb;
    text_row("size (bytes)", (double)c->size_bytes, d ? &vb[0] : NULL, "%.0f", 1);
    text_row("parameters", (double)c->parameters, d ? &vb[1] : NULL, "%.0f", 1);
    text_row("latency p50 (us, b=1)", c->p50, d ? &vb[2] : NULL, "%.2f", 1);
    text_row("latency p99 (us, b=1)", c->p99, d ? &vb[3] : NULL, "%.2f", 1);
    text_row("throughput (rows/s, b=64)", c->throughput, d ? &vb[4] : NULL, "%.1f", 1);
    text_row("peak RSS (MiB)", c->peak_rss_mb, d ? &vb[5] : NULL, "%.1f", 1);
}

/* 1 when a --max-drop is exceeded (messages on stderr). */
static int check_drops(const eval_opts *o, const eval_one *a, const eval_one *b) {
    int failed = 0;
    for (int i = 0; i < o->n_drops; i++) {
        int m = o->drop_metric[i];
        double drop = inf__metric_higher_is_better(m) ? b->q.m.v[m] - a->q.m.v[m] : a->q.m.v[m] - b->q.m.v[m];
        if (!inf__metric_applies(a->q.m.task, m) || isnan(drop)) {
            fprintf(stderr, "infera evaluate: --max-drop %s: the metric is not defined for this %s task on this data\n",
                    inf__metric_names[m], inf__task_names[a->q.m.task]);
            failed = 1;
        } else if (drop > o->drop_max[i]) {
            fprintf(stderr, "infera evaluate: %s dropped by %.6g (baseline %.6g, model %.6g), more than the %.6g allowed\n",
                    inf__metric_names[m], drop, b->q.m.v[m], a->q.m.v[m], o->drop_max[i]);
            failed = 1;
        }
    }
    return failed;
}

static int register_metrics(const eval_one *a) {
    inf_registry_options ro;
    inf_registry_options_from_env(&ro);
    inf_registry *r = NULL;
    inf_error e;
    if (inf_registry_open(&ro, &r, &e)) return cli_fail(CMD, "--register: %s", e.message);
    inf_registry_kv kv[INF__N_METRICS + 1];
    char vals[INF__N_METRICS + 1][40];
    int n = 0;
    for (int k = 0; k < INF__N_METRICS; k++) {
        if (!inf__metric_applies(a->q.m.task, k) || isnan(a->q.m.v[k])) continue;
        snprintf(vals[n], sizeof vals[n], "%.17g", a->q.m.v[k]);
        kv[n].key = inf__metric_names[k];
        kv[n].value = vals[n];
        n++;
    }
    snprintf(vals[n], sizeof vals[n], "%d", a->q.rows);
    kv[n].key = "eval_rows";
    kv[n].value = vals[n];
    n++;
    int rc = 0;
    if (inf_registry_add_metrics(r, a->name, a->version, n, kv, &e)) rc = cli_fail(CMD, "--register: %s", e.message);
    else fprintf(stderr, "infera evaluate: metrics stored on %s@%lld\n", a->name, (long long)a->version);
    inf_registry_free(r);
    return rc;
}

int cmd_evaluate(int argc, char **argv) {
    eval_opts o;
    int rc = parse_args(argc, argv, &o);
    if (rc) return rc;
    eval_one *runs = calloc(2, sizeof *runs);
    if (!runs) return cli_fail(CMD, "out of memory");
    if ((rc = evaluate_one(&o, o.ref, o.precision, &runs[0]))) goto done;
    if (o.baseline && (rc = evaluate_one(&o, o.baseline, o.baseline_precision, &runs[1]))) goto done;
    if (o.baseline && runs[1].q.m.task != runs[0].q.m.task) {
        rc = cli_fail(CMD, "the model is scored as %s but the baseline as %s; force one with --task",
                      inf__task_names[runs[0].q.m.task], inf__task_names[runs[1].q.m.task]);
        goto done;
    }
    if (o.json) print_json(&runs[0], o.baseline ? &runs[1] : NULL);
    else print_text(&runs[0], o.baseline ? &runs[1] : NULL);
    fflush(stdout);
    if (o.reg && (rc = register_metrics(&runs[0]))) goto done;
    if (o.baseline && check_drops(&o, &runs[0], &runs[1])) rc = 1;
done:
    free(runs);
    return rc;
}
