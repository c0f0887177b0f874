/*
 * common.c -- helpers shared by the sub-commands: errors, flags, loading
 * models and value files, printing and comparing values, process stats.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "infera/registry.h"

static int vfail(const char *cmd, int code, const char *fmt, va_list ap) {
    fprintf(stderr, "infera %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    return code;
}

int cli_fail(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int rc = vfail(cmd, 1, fmt, ap);
    va_end(ap);
    return rc;
}

int cli_usage(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int rc = vfail(cmd, 2, fmt, ap);
    va_end(ap);
    return rc;
}

int cli_unexpected(const char *cmd, const char *arg) {
    if (arg[0] == '-' && arg[1]) return cli_usage(cmd, "unknown option '%s' (see 'infera help %s')", arg, cmd);
    return cli_usage(cmd, "unexpected argument '%s' (see 'infera help %s')", arg, cmd);
}

int cli_check_runner_io(const char *cmd, const char *input, const char *output, const char *model, int no_score,
                        const char *log_predictions) {
    if (!input || !output) return cli_usage(cmd, "--input SRC and --output DST are required");
    if (!model && !no_score) return cli_usage(cmd, "--model REF is required");
    if (log_predictions && no_score) return cli_usage(cmd, "--log-predictions needs a model (not --no-score)");
    return 0;
}

bool cli_parse_int(const char *cmd, const char *flag, const char *text, int min, int max, int *out) {
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (end == text || *end || errno || v < min || v > max) {
        cli_usage(cmd, "%s expects a whole number from %d to %d, got '%s'", flag, min, max, text);
        return false;
    }
    *out = (int)v;
    return true;
}

bool cli_parse_precision(const char *cmd, const char *text, int *out) {
    int p = inf_precision_from_name(text);
    if (p < 0) {
        cli_usage(cmd, "--precision expects fp32 or bf16, got '%s'", text);
        return false;
    }
    *out = p;
    return true;
}

const char *cli_flag_value(int argc, char **argv, int *i, const char *flag, bool *missing) {
    size_t n = strlen(flag);
    const char *a = argv[*i];
    /* *missing is only set when a[] is this flag: callers chain several
     * flags through one `missing` (false at the start of each argument) */
    if (strncmp(a, flag, n) || (a[n] && a[n] != '=')) return NULL;
    *missing = false;
    if (a[n] == '=') return a + n + 1;
    if (*i + 1 >= argc) {
        *missing = true;
        return NULL;
    }
    return argv[++*i];
}

static bool ends_with(const char *s, const char *suffix);

/* A registry reference: not an existing file, and not shaped like a path. */
static bool is_registry_ref(const char *ref) {
    return *ref && !inf_registry_ref_is_path(ref);
}

inf_status cli_load_model(const char *ref, inf_model **out, inf_error *err) {
    if (!is_registry_ref(ref)) return inf_model_load(ref, NULL, out, err);
    inf_registry_options o;
    inf_registry_options_from_env(&o);
    inf_registry *r = NULL;
    inf_error e;
    inf_status rc = inf_registry_open(&o, &r, &e);
    if (rc == INF_ENOENT) {
        inf_error_set(err, INF_ENOENT, "cannot open model '%s': no such file, and %s", ref, e.message);
        return INF_ENOENT;
    }
    if (!rc) rc = inf_registry_load_model(r, ref, NULL, out, NULL, &e);
    inf_registry_free(r);
    if (rc && err) {
        inf_error_set(err, rc, "model '%s': %s", ref, e.message);
    }
    return rc;
}

int cli_take_global_options(int *argc, char **argv) {
    static const struct {
        const char *flag, *env;
    } globals[] = {{"--home", "INFERA_HOME"}, {"--registry", "INFERA_REGISTRY"}, {"--token", "INFERA_TOKEN"}};
    int out = 0;
    for (int i = 0; i < *argc; i++) {
        bool taken = false;
        for (size_t g = 0; g < sizeof globals / sizeof globals[0] && !taken && i > 0; g++) {
            bool missing = false;
            const char *v = cli_flag_value(*argc, argv, &i, globals[g].flag, &missing);
            if (missing) return cli_usage("options", "%s needs a value", globals[g].flag);
            if (!v) continue;
            if (!*v) return cli_usage("options", "%s needs a non-empty value", globals[g].flag);
            setenv(globals[g].env, v, 1);
            taken = true;
        }
        if (!taken) argv[out++] = argv[i];
    }
    argv[out] = NULL;
    *argc = out;
    return 0;
}

static bool ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

inf_status cli_load_value(const char *path, int kind_hint, inf_tensor **out, inf_error *err) {
    if (ends_with(path, ".npy")) return inf_tensor_load_npy(path, out, err);
    return inf_tensor_load_pb(path, kind_hint, out, err);
}

int cli_kind_hint(const inf_value_info *info) {
    if (info->is_optional) return INF_KIND_NONE;
    if (info->kind == INF_KIND_SEQUENCE) return INF_KIND_SEQUENCE;
    if (info->kind == INF_KIND_MAP) return INF_KIND_MAP;
    return INF_KIND_TENSOR;
}

static double element_f64(const inf_tensor *t, int64_t i) {
    const void *d = t->data;
    switch (t->dtype) {
    case INF_DTYPE_F32: return ((const float *)d)[i];
    case INF_DTYPE_F64: return ((const double *)d)[i];
    case INF_DTYPE_F16: return inf_f16_to_f32(((const uint16_t *)d)[i]);
    case INF_DTYPE_BF16: return inf_bf16_to_f32(((const uint16_t *)d)[i]);
    case INF_DTYPE_I8: return ((const int8_t *)d)[i];
    case INF_DTYPE_I16: return ((const int16_t *)d)[i];
    case INF_DTYPE_I32: return ((const int32_t *)d)[i];
    case INF_DTYPE_I64: return (double)((const int64_t *)d)[i];
    case INF_DTYPE_U8: return ((const uint8_t *)d)[i];
    case INF_DTYPE_U16: return ((const uint16_t *)d)[i];
    case INF_DTYPE_U32: return ((const uint32_t *)d)[i];
    case INF_DTYPE_U64: return (double)((const uint64_t *)d)[i];
    case INF_DTYPE_BOOL: return ((const uint8_t *)d)[i] != 0;
    case INF_DTYPE_C64: return ((const float *)d)[2 * i];
    case INF_DTYPE_C128: return ((const double *)d)[2 * i];
    default: return NAN;
    }
}

void cli_print_values(FILE *f, const inf_tensor *t, int max_values) {
    if (t->kind == INF_KIND_NONE) {
        fprintf(f, "none");
        return;
    }
    if (t->kind != INF_KIND_TENSOR) {
        fprintf(f, "[");
        for (int i = 0; i < t->n_items && i < max_values; i++) {
            if (i) fprintf(f, ", ");
            char desc[128];
            fprintf(f, "%s", inf_tensor_describe(t->items[i], desc, sizeof desc));
        }
        fprintf(f, "%s]", t->n_items > max_values ? ", ..." : "");
        return;
    }
    int64_t n = inf_tensor_numel(t);
    fprintf(f, "[");
    for (int64_t i = 0; i < n && i < max_values; i++) {
        if (i) fprintf(f, ", ");
        if (t->dtype == INF_DTYPE_STRING) {
            const char *s = ((char *const *)t->data)[i];
            fprintf(f, "\"%s\"", s ? s : "");
        } else if (t->dtype == INF_DTYPE_BOOL) {
            fprintf(f, "%s", ((const uint8_t *)t->data)[i] ? "true" : "false");
        } else if (t->dtype == INF_DTYPE_I64) {
            fprintf(f, "%lld", (long long)((const int64_t *)t->data)[i]);
        } else if (t->dtype == INF_DTYPE_U64) {
            fprintf(f, "%llu", (unsigned long long)((const uint64_t *)t->data)[i]);
        } else {
            fprintf(f, "%.6g", element_f64(t, i));
        }
    }
    fprintf(f, "%s]", n > max_values ? ", ..." : "");
}

bool cli_values_close(const inf_tensor *got, const inf_tensor *want, double rtol, double atol, char *why, size_t why_size) {
    char a[128], b[128];
    if (got->kind != want->kind) {
        snprintf(why, why_size, "got %s, expected %s", inf_tensor_describe(got, a, sizeof a), inf_tensor_describe(want, b, sizeof b));
        return false;
    }
    if (got->kind == INF_KIND_NONE) return true;
    if (got->kind != INF_KIND_TENSOR) {
        if (got->n_items != want->n_items) {
            snprintf(why, why_size, "got %d items, expected %d", got->n_items, want->n_items);
            return false;
        }
        for (int i = 0; i < got->n_items; i++) {
            char inner[256];
            if (!cli_values_close(got->items[i], want->items[i], rtol, atol, inner, sizeof inner)) {
                snprintf(why, why_size, "item %d: %s", i, inner);
                return false;
            }
        }
        return true;
    }
    if (got->dtype != want->dtype || got->ndim != want->ndim) {
        snprintf(why, why_size, "got %s, expected %s", inf_tensor_describe(got, a, sizeof a), inf_tensor_describe(want, b, sizeof b));
        return false;
    }
    for (int i = 0; i < got->ndim; i++)
        if (got->dims[i] != want->dims[i]) {
            snprintf(why, why_size, "got %s, expected %s", inf_tensor_describe(got, a, sizeof a), inf_tensor_describe(want, b, sizeof b));
            return false;
        }
    int64_t n = inf_tensor_numel(got);
    for (int64_t i = 0; i < n; i++) {
        if (got->dtype == INF_DTYPE_STRING) {
            const char *x = ((char *const *)got->data)[i], *y = ((char *const *)want->data)[i];
            if (strcmp(x ? x : "", y ? y : "")) {
                snprintf(why, why_size, "element %lld: got \"%s\", expected \"%s\"", (long long)i, x ? x : "", y ? y : "");
                return false;
            }
            continue;
        }
        int parts = got->dtype == INF_DTYPE_C64 || got->dtype == INF_DTYPE_C128 ? 2 : 1;
        for (int p = 0; p < parts; p++) {
            double x, y;
            if (parts == 2) {
                x = got->dtype == INF_DTYPE_C64 ? ((const float *)got->data)[2 * i + p] : ((const double *)got->data)[2 * i + p];
                y = want->dtype == INF_DTYPE_C64 ? ((const float *)want->data)[2 * i + p] : ((const double *)want->data)[2 * i + p];
            } else {
                x = element_f64(got, i);
                y = element_f64(want, i);
            }
            bool exact = !(got->dtype == INF_DTYPE_F32 || got->dtype == INF_DTYPE_F64 || got->dtype == INF_DTYPE_F16 ||
                           got->dtype == INF_DTYPE_BF16 || parts == 2);
            if (got->dtype == INF_DTYPE_I64 || got->dtype == INF_DTYPE_U64) {
                bool eq = got->dtype == INF_DTYPE_I64 ? ((const int64_t *)got->data)[i] == ((const int64_t *)want->data)[i]
                                                      : ((const uint64_t *)got->data)[i] == ((const uint64_t *)want->data)[i];
                if (!eq) {
                    snprintf(why, why_size, "element %lld: got %.17g, expected %.17g", (long long)i, x, y);
                    return false;
                }
                continue;
            }
            if (isnan(x) || isnan(y)) {
                if (isnan(x) && isnan(y)) continue; /* NaN matches only NaN: a NaN against a number is a mismatch */
                snprintf(why, why_size, "element %lld: got %.9g, expected %.9g", (long long)i, x, y);
                return false;
            }
            if (isinf(x) || isinf(y) ? x != y : exact ? x != y : fabs(x - y) > atol + rtol * fabs(y)) {
                snprintf(why, why_size, "element %lld: got %.9g, expected %.9g", (long long)i, x, y);
                return false;
            }
        }
    }
    return true;
}

double cli_peak_rss_mb(void) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return 0;
    char line[256];
    double mb = 0;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "VmHWM:", 6)) mb = atof(line + 6) / 1024.0;
    fclose(f);
    return mb;
}

double cli_now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void cli_json_fstring(FILE *f, const char *s) {
    fputc('"', f);
    for (; s && *s; s++) {
        if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            fprintf(f, "\\u%04x", *s);
        else
            fputc(*s, f);
    }
    fputc('"', f);
}

void cli_json_string(const char *s) {
    cli_json_fstring(stdout, s);
}
