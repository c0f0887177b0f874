/*
 * cmd_bench.c -- `infera bench REF [--input NAME=FILE]... [--threads N]
 * [--iters N] [--warmup N] [--batch N] [--json] [--profile]`.
 *
 * Measures what a user of the model feels: load (decode + session), the
 * first run (cold), then the latency distribution of warm runs.  Inputs not
 * given as files are random, of the declared shape with symbolic dimensions
 * set to --batch (default 1).  Throughput is batch / mean latency.
 * --profile: the session also times every node (options.profile, counted
 * over the timed runs only) and bench_profile.c prints where the time went.
 */
#include <stdlib.h>
#include <string.h>

#include "cli/bench_profile.h"
#include "cli/cli.h"
#include "cli/cpu_report.h"

static const char *CMD = "bench";

static uint64_t rng_next(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static inf_status random_input(const inf_value_info *info, int batch, uint64_t *rng, inf_tensor **out) {
    if (info->kind != INF_KIND_TENSOR) return INF_EUNSUPPORTED;
    int64_t dims[INF_MAX_DIMS];
    int ndim = info->ndim < 0 ? 1 : info->ndim;
    for (int i = 0; i < ndim; i++) dims[i] = info->ndim < 0 || info->dims[i] < 0 ? batch : info->dims[i];
    inf_dtype dtype = info->dtype == INF_DTYPE_UNDEFINED ? INF_DTYPE_F32 : info->dtype;
    inf_status st = inf_tensor_new(dtype, ndim, dims, out);
    if (st != INF_OK) return st;
    inf_tensor *t = *out;
    int64_t n = inf_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) {
        double u = (double)(rng_next(rng) >> 11) / 9007199254740992.0; /* [0, 1) */
        switch (dtype) {
        case INF_DTYPE_F32: ((float *)t->data)[i] = (float)(2 * u - 1); break;
        case INF_DTYPE_F64: ((double *)t->data)[i] = 2 * u - 1; break;
        case INF_DTYPE_F16: ((uint16_t *)t->data)[i] = inf_f32_to_f16((float)(2 * u - 1)); break;
        case INF_DTYPE_BF16: ((uint16_t *)t->data)[i] = inf_f32_to_bf16((float)(2 * u - 1)); break;
        case INF_DTYPE_I64: ((int64_t *)t->data)[i] = (int64_t)(u * 8); break;
        case INF_DTYPE_I32: ((int32_t *)t->data)[i] = (int32_t)(u * 8); break;
        case INF_DTYPE_BOOL: ((uint8_t *)t->data)[i] = u < 0.5; break;
        case INF_DTYPE_STRING: inf_tensor_set_string(t, i, "a", 1); break;
        default: memset((char *)t->data + (size_t)i * inf_dtype_size(dtype), (int)(u * 8), inf_dtype_size(dtype));
        }
    }
    return INF_OK;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double percentile(const double *sorted, int n, double p) {
    int idx = (int)(p / 100.0 * (n - 1) + 0.5);
    return sorted[idx < n ? idx : n - 1];
}

int cli_bench_random_inputs(const inf_model *model, int batch, inf_tensor **values) {
    uint64_t rng = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < inf_model_n_inputs(model); i++) {
        if (values[i]) continue;
        if (random_input(inf_model_input(model, i), batch, &rng, &values[i]) != INF_OK) return i;
    }
    return -1;
}

inf_status cli_bench_time(inf_session *session, inf_tensor *const *values, int warmup, int iters,
                          cli_bench_stats *out, inf_error *err) {
    inf_tensor *const *outputs;
    const inf_tensor *const *in = (const inf_tensor *const *)values;
    /* rows per run: the leading dimension of the first input */
    out->rows = values[0] && values[0]->kind == INF_KIND_TENSOR && values[0]->ndim > 0 ? values[0]->dims[0] : 1;
    for (int i = 0; i < warmup; i++) inf_session_run(session, in, &outputs, err);
    double *lat = malloc((size_t)iters * sizeof *lat);
    if (!lat) return inf_error_set(err, INF_ENOMEM, "out of memory");
    double sum = 0;
    inf_session_profile_reset(session); /* the profile covers the timed runs only */
    for (int i = 0; i < iters; i++) {
        double a = cli_now_seconds();
        inf_status st = inf_session_run(session, in, &outputs, err);
        if (st != INF_OK) {
            free(lat);
            return st;
        }
        lat[i] = (cli_now_seconds() - a) * 1e6;
        sum += lat[i];
    }
    qsort(lat, (size_t)iters, sizeof *lat, cmp_double);
    out->mean = sum / iters;
    out->p50 = percentile(lat, iters, 50);
    out->p90 = percentile(lat, iters, 90);
    out->p99 = percentile(lat, iters, 99);
    out->throughput = out->mean > 0 ? (double)out->rows / (out->mean * 1e-6) : 0;
    free(lat);
    return INF_OK;
}

int cmd_bench(int argc, char **argv) {
    const char *ref = NULL;
    int threads = 1, iters = 100, warmup = 10, batch = 1, max_run_ms = CLI_DEFAULT_MAX_RUN_MS;
    int precision = INF_PRECISION_FP32;
    bool json = false, profile = false;
    cli_inputs specs = {0};
    for (int i = 1; i < argc; i++) {
        bool missing = false;
        const char *v;
        if ((v = cli_flag_value(argc, argv, &i, "--input", &missing))) {
            if (!cli_inputs_add(CMD, &specs, v)) return 2;
        } else if ((v = cli_flag_value(argc, argv, &i, "--threads", &missing))) {
            if (!cli_parse_int(CMD, "--threads", v, 1, 256, &threads)) return 2;
        } else if ((v = cli_flag_value(argc, argv, &i, "--max-run-ms", &missing))) {
            if (!cli_parse_int(CMD, "--max-run-ms", v, 0, 2147483647, &max_run_ms)) return 2;
        } else if ((v = cli_flag_value(argc, argv, &i, "--precision", &missing))) {
            if (!cli_parse_precision(CMD, v, &precision)) return 2;
        } else if ((v = cli_flag_value(argc, argv, &i, "--iters", &missing))) {
            if (!cli_parse_int(CMD, "--iters", v, 1, 100000000, &iters)) return 2;
        } else if ((v = cli_flag_value(argc, argv, &i, "--warmup", &missing))) {
            if (!cli_parse_int(CMD, "--warmup", v, 0, 100000000, &warmup)) return 2;
        } else if ((v = cli_flag_value(argc, argv, &i, "--batch", &missing))) {
            if (!cli_parse_int(CMD, "--batch", v, 1, 1 << 24, &batch)) return 2;
        } else if (!strcmp(argv[i], "--json")) {
            json = true;
        } else if (!strcmp(argv[i], "--profile")) {
            profile = true;
        } else if (missing) {
            return cli_usage(CMD, "%s needs a value", argv[i]);
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return cli_usage(CMD, "unknown option '%s' (see 'infera help bench')", argv[i]);
        } else if (!ref) {
            ref = argv[i];
        } else {
            return cli_usage(CMD, "unexpected argument '%s'", argv[i]);
        }
    }
    if (!ref) return cli_usage(CMD, "missing model (usage: infera bench REF)");
    inf_error err;
    inf_model *model = NULL;
    inf_session *session = NULL;
    inf_tensor *values[256] = {0};
    int rc = 0;
    double t0 = cli_now_seconds();
    if (cli_load_model(ref, &model, &err) != INF_OK) return cli_fail(CMD, "%s", err.message);
    inf_session_options opts;
    inf_session_options_init(&opts);
    opts.n_threads = threads;
    opts.max_run_ms = max_run_ms;
    opts.max_batch = batch;
    opts.profile = profile;
    opts.precision = precision;
    if (inf_session_new(model, &opts, &session, &err) != INF_OK) {
        rc = cli_fail(CMD, "%s", err.message);
        goto done;
    }
    double load_ms = (cli_now_seconds() - t0) * 1e3;
    int n_inputs = inf_model_n_inputs(model);
    if (n_inputs > 256) {
        rc = cli_fail(CMD, "too many inputs");
        goto done;
    }
    if (specs.n_specs && (rc = cli_inputs_load(CMD, model, &specs, values)) != 0) goto done;
    int bad = cli_bench_random_inputs(model, batch, values);
    if (bad >= 0) {
        rc = cli_fail(CMD, "cannot make a random value for input '%s'; give it with --input", inf_model_input(model, bad)->name);
        goto done;
    }
    inf_tensor *const *outputs;
    double t1 = cli_now_seconds();
    if (inf_session_run(session, (const inf_tensor *const *)values, &outputs, &err) != INF_OK) {
        rc = cli_fail(CMD, "%s: %s", ref, err.message);
        goto done;
    }
    double first_ms = (cli_now_seconds() - t1) * 1e3;
    cli_bench_stats bs;
    if (cli_bench_time(session, values, warmup, iters, &bs, &err) != INF_OK) {
        rc = cli_fail(CMD, "%s: %s", ref, err.message);
        goto done;
    }
    int64_t rows = bs.rows;
    double mean = bs.mean, p50 = bs.p50, p90 = bs.p90, p99 = bs.p99, throughput = bs.throughput;
    if (json) {
        printf("{\"model\":\"%s\",\"threads\":%d,\"batch\":%lld,\"iters\":%d,\"load_ms\":%.3f,\"first_run_ms\":%.3f,"
               "\"latency_us\":{\"mean\":%.2f,\"p50\":%.2f,\"p90\":%.2f,\"p99\":%.2f},"
               "\"throughput_rows_per_s\":%.1f,\"peak_rss_mb\":%.1f",
               ref, threads, (long long)rows, iters, load_ms, first_ms, mean, p50, p90, p99, throughput,
               cli_peak_rss_mb());
        if (profile) rc = bench_profile_print(CMD, session, true);
        printf(",\"precision\":\"%s\",\"cpu\":", inf_precision_name(precision));
        cli_cpu_print_json(); /* the machine the figures were measured on */
        printf("}\n");
    } else {
        printf("model        %s\nthreads      %d\nbatch        %lld\niters        %d (warm-up %d)\n", ref, threads,
               (long long)rows, iters, warmup);
        printf("precision    %s\n", inf_precision_name(precision));
        printf("load         %.3f ms\nfirst run    %.3f ms\n", load_ms, first_ms);
        printf("latency      mean %.2f us  p50 %.2f us  p90 %.2f us  p99 %.2f us\n", mean, p50, p90, p99);
        printf("throughput   %.1f rows/s\npeak RSS     %.1f MiB\n", throughput, cli_peak_rss_mb());
        if (profile) rc = bench_profile_print(CMD, session, false);
    }
done:
    for (int i = 0; i < 256; i++) inf_tensor_free(values[i]);
    inf_session_free(session);
    inf_model_free(model);
    return rc;
}
