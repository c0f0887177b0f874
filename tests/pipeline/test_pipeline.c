/*
 * test_pipeline.c -- the pipeline spec and its executor against independent
 * expectations:
 *   - every transform vs tests/pipeline/data/transforms_expected.csv (NumPy,
 *     gen_expected.py);
 *   - bad specs fail at load with an error naming the field;
 *   - schema checks: reject / count policies, per-field counters, sensitive
 *     values never in messages;
 *   - SQLite lookups: defaults, missing entities, staleness, one query per
 *     batch; point-in-time joins with tricky timestamps;
 *   - Redis lookups when REDIS_URL is set (tests/pipeline/test_redis.sh);
 *   - the default pipeline and output mapping on the fraud model;
 *   - sequence-of-map (ZipMap) outputs as columns, by default and by a spec.
 * Usage: test_pipeline SOURCE_DIR.  Prints one line per check and
 * "N passed, M failed".
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <sqlite3.h>

#include "infera/pipeline.h"
#include "infera/session.h"

static int n_pass, n_fail;

/* Allocation counting: the test links with -Wl,--wrap=malloc,... so the
 * calls made by the pipeline's own (statically linked) code come here. */
static long n_allocs;
void *__real_malloc(size_t n);
void *__real_calloc(size_t a, size_t b);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n) {
    n_allocs++;
    return __real_malloc(n);
}
void *__wrap_calloc(size_t a, size_t b) {
    n_allocs++;
    return __real_calloc(a, b);
}
void *__wrap_realloc(void *p, size_t n) {
    n_allocs++;
    return __real_realloc(p, n);
}
static const char *src_dir;

static void check(int ok, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("%s: ", ok ? "PASS" : "FAIL");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    if (ok) n_pass++;
    else n_fail++;
}

static char *path_of(const char *rel) {
    static char buf[8][1024];
    static int k;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", src_dir, rel);
    return buf[k];
}

/* reads a whole source into one batch */
static inf_record_batch *read_all(const char *uri) {
    inf_source *src;
    inf_error err;
    inf_record_batch *b, *all;
    inf_source_options so = {100000, NULL};
    if (inf_source_open(uri, &so, &src, &err)) {
        printf("cannot open %s: %s\n", uri, err.message);
        return NULL;
    }
    inf_record_batch_new(&b);
    int eof = 0;
    inf_source_next(src, b, &eof, &err);
    (void)all;
    inf_source_close(src);
    return b;
}

static int close_enough(double got, double want) {
    if (isnan(want)) return isnan(got);
    if (isnan(got)) return 0;
    return fabs(got - want) <= 1e-12 * (fabs(want) > 1 ? fabs(want) : 1);
}

/* ---- transforms ---- */

static void test_transforms(void) {
    inf_pipeline *p = NULL;
    inf_error err = {0};
    inf_status st = inf_pipeline_load(path_of("tests/pipeline/data/transforms_spec.json"), NULL, NULL, &p, &err);
    check(st == INF_OK, "transforms spec loads (%s)", st ? err.message : "ok");
    if (st) return;
    char uri[1100];
    snprintf(uri, sizeof uri, "csv:%s", path_of("tests/pipeline/data/transforms_input.csv"));
    inf_record_batch *in = read_all(uri);
    snprintf(uri, sizeof uri, "csv:%s", path_of("tests/pipeline/data/transforms_expected.csv"));
    inf_record_batch *want = read_all(uri);
    inf_pipeline_exec *e = NULL;
    inf_pipeline_exec_new(p, &e, &err);
    st = inf_pipeline_prepare(e, in, NULL, &err);
    check(st == INF_OK && inf_pipeline_n_accepted(e) == inf_record_batch_n_rows(in), "prepare accepts all %d records",
          inf_record_batch_n_rows(in));
    int nr, nc;
    const double *f = inf_pipeline_features(e, &nr, &nc);
    check(nc == inf_record_batch_n_fields(want), "%d feature columns (expected %d)", nc, inf_record_batch_n_fields(want));
    for (int c = 0; c < nc && c < inf_record_batch_n_fields(want); c++) {
        const char *name = inf_record_batch_field_name(want, c);
        int same_name = !strcmp(name, inf_pipeline_feature_column(p, c));
        int bad = -1;
        double gv = 0, wv = 0;
        for (int r = 0; r < nr; r++) {
            const inf_value *v = inf_record_batch_get(want, r, c);
            double w = NAN;
            inf_value_to_double(v, &w);
            if (!close_enough(f[(size_t)r * nc + c], w)) {
                bad = r;
                gv = f[(size_t)r * nc + c];
                wv = w;
                break;
            }
        }
        if (bad < 0) check(same_name, "transform column %s matches NumPy on %d records", name, nr);
        else check(0, "transform column %s row %d: got %.17g want %.17g", name, bad + 1, gv, wv);
    }
    check(n_allocs > 100, "allocation counting sees the pipeline's allocations (%ld so far)", n_allocs);
    long before = n_allocs;
    for (int i = 0; i < 10; i++) inf_pipeline_prepare(e, in, NULL, &err);
    check(n_allocs == before, "a warm executor allocates nothing per batch (%ld allocations in 10 prepares)", n_allocs - before);
    inf_pipeline_exec_free(e);
    /* a fresh executor's first batch is empty (a /records body of no records): no rows, no column
     * buffers touched (fuzz_pipeline, regressions/pipeline-empty-batch.bin; UBSan in the asan build) */
    inf_record_batch *empty = NULL;
    inf_record_batch_new(&empty);
    inf_pipeline_exec_new(p, &e, &err);
    st = inf_pipeline_prepare(e, empty, NULL, &err);
    check(st == INF_OK && inf_pipeline_n_accepted(e) == 0, "an empty first batch prepares to no rows");
    inf_pipeline_exec_free(e);
    inf_record_batch_free(empty);
    inf_pipeline_free(p);
    inf_record_batch_free(in);
    inf_record_batch_free(want);
}

/* ---- bad specs ---- */

static void expect_bad(const inf_model *model, const char *json, inf_status want_status, const char *want_text,
                       const char *what) {
    inf_pipeline *p = NULL;
    inf_error err = {0};
    inf_status st = inf_pipeline_load_string(json, strlen(json), model, NULL, &p, &err);
    int ok = st == want_status && p == NULL && strstr(err.message, want_text) != NULL;
    check(ok, "bad spec (%s) fails at load: %s", what, st ? err.message : "loaded!");
    inf_pipeline_free(p);
}

#define IN12 "\"order\":[\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\"]"

static void test_bad_specs(const inf_model *fraud) {
    expect_bad(NULL, "{\"inputs\":{\"a\":{\"type\":\"float\"}},\"features\":[{\"name\":\"b\",\"op\":\"sqrt\",\"from\":\"a\"}],"
                     "\"model_inputs\":{\"x\":{\"order\":[\"b\"]}}}",
               INF_EFORMAT, "features[0] (b).op: unknown transform 'sqrt'", "unknown transform");
    expect_bad(NULL, "{\"inputs\":{\"a\":{\"type\":\"float\"}},\"features\":[{\"name\":\"b\",\"op\":\"standardize\",\"from\":\"a\",\"mean\":1}],"
                     "\"model_inputs\":{\"x\":{\"order\":[\"b\"]}}}",
               INF_EFORMAT, "features[0] (b): missing parameter 'std'", "missing parameter");
    expect_bad(NULL, "{\"inputs\":{\"a\":{\"type\":\"float\"}},\"features\":[{\"name\":\"b\",\"op\":\"log1p\",\"from\":\"c\"},"
                     "{\"name\":\"c\",\"op\":\"log1p\",\"from\":\"a\"}],\"model_inputs\":{\"x\":{\"order\":[\"b\"]}}}",
               INF_EFORMAT, "features[0] (b).from: feature 'c' is referenced before it is defined", "used before defined");
    expect_bad(NULL, "{\"inputs\":{\"a\":{\"type\":\"string\"}},\"features\":[{\"name\":\"b\",\"op\":\"log1p\",\"from\":\"a\"}],"
                     "\"model_inputs\":{\"x\":{\"order\":[\"b\"]}}}",
               INF_ETYPE, "features[0] (b).from: 'log1p' takes a numeric field, 'a' is a string", "string into log1p");
    expect_bad(fraud, "{\"inputs\":{\"a\":{\"type\":\"float\"}},\"model_inputs\":{\"input\":{\"dtype\":\"float64\"," IN12 "}}}",
               INF_ETYPE, "model_inputs.input.dtype: the spec builds float64 but the model input 'input' is float32",
               "dtype mismatch with the model");
    expect_bad(fraud, "{\"inputs\":{\"a\":{\"type\":\"float\"}},\"model_inputs\":{\"input\":{\"order\":[\"a\",\"a\"]}}}", INF_ETYPE,
               "model_inputs.input.order: 2 columns but the model input 'input' expects 12", "width mismatch with the model");
    expect_bad(fraud, "{\"inputs\":{\"a\":{\"type\":\"float\"}},\"model_inputs\":{\"features\":{" IN12 "}}}", INF_ETYPE,
               "the model has no input 'features'", "unknown model input");
    expect_bad(NULL, "{\"inputs\":{\"a\":{\"type\":\"float\"}},\"model_inputs\":{\"x\":{\"order\":[\"a\"]}},\"outputz\":[]}",
               INF_EFORMAT, "spec: unknown key 'outputz'", "unknown top-level key");
    expect_bad(NULL, "{\"inputs\":{\"a\":{\"type\":\"decimal\"}},\"model_inputs\":{\"x\":{\"order\":[\"a\"]}}}", INF_EFORMAT,
               "inputs.a.type: unknown type 'decimal'", "unknown field type");
    expect_bad(NULL, "{\"inputs\":{\"a\":{\"type\":\"float\"}},\"features\":[{\"name\":\"b\",\"op\":\"bucketize\",\"from\":\"a\",\"edges\":[1,1]}],"
                     "\"model_inputs\":{\"x\":{\"order\":[\"b\"]}}}",
               INF_EFORMAT, "edges[1]: edges must be strictly increasing", "unsorted bucket edges");
    expect_bad(NULL, "{\"inputs\":{\"a\":{\"type\":\"string\"}},\"model_inputs\":{\"x\":{\"order\":[\"a\"]}}}", INF_ETYPE,
               "model_inputs.x.order[0]: 'a' is a string", "string straight into a tensor");
    expect_bad(fraud, "{\"inputs\":{\"a\":{\"type\":\"float\"}},\"model_inputs\":{\"input\":{" IN12 "}},"
                      "\"outputs\":[{\"name\":\"s\",\"from\":\"probabilities\",\"index\":2}]}",
               INF_EFORMAT, "outputs[0] (s).index: 2 but the output 'probabilities' has 2 columns", "output index out of range");
    expect_bad(NULL, "{\"inputs\":{\"a\":{\"type\":\"float\"}},\"lookups\":[{\"name\":\"l\",\"store\":\"sqlite:x.db?table=t\",\"key\":\"k\","
                     "\"features\":{\"f\":\"float\"}}],\"model_inputs\":{\"x\":{\"order\":[\"a\"]}}}",
               INF_EFORMAT, "lookups[0] (l).key: 'k' is not a declared input field", "lookup key not an input");
    expect_bad(NULL, "{\"inputs\":{\"a\":{\"type\":\"string\"}},\"lookups\":[{\"name\":\"l\",\"store\":\"sqlite:x.db?table=t\",\"key\":\"a\","
                     "\"features\":{\"f\":\"float\"},\"required\":\"yes\"}],\"model_inputs\":{\"x\":{\"order\":[\"f\"]}}}",
               INF_EFORMAT, "lookups[0] (l).required: must be true or false", "lookup required not a bool");
    expect_bad(NULL, "{\"inputs\":{\"a\":{\"type\":\"float\"}", INF_EFORMAT, "malformed JSON", "malformed JSON");
    /* flags of the wrong type never pass silently as false (a field meant sensitive would be logged) */
    expect_bad(NULL, "{\"inputs\":{\"card\":{\"type\":\"string\",\"sensitive\":\"yes\"},\"a\":{\"type\":\"float\"}},"
                     "\"model_inputs\":{\"x\":{\"order\":[\"a\"]}}}",
               INF_EFORMAT, "inputs.card.sensitive: must be true or false", "sensitive given as a string");
    expect_bad(NULL, "{\"inputs\":{\"a\":{\"type\":\"float\",\"required\":1}},\"model_inputs\":{\"x\":{\"order\":[\"a\"]}}}",
               INF_EFORMAT, "inputs.a.required: must be true or false", "required given as a number");
    expect_bad(NULL, "{\"inputs\":{\"a\":{\"type\":\"float\",\"on_invalid\":0}},\"model_inputs\":{\"x\":{\"order\":[\"a\"]}}}",
               INF_EFORMAT, "inputs.a.on_invalid: must be a string", "on_invalid given as a number");
    expect_bad(NULL, "{\"inputs\":{\"a\":{\"type\":\"float\",\"min\":10,\"max\":0}},\"model_inputs\":{\"x\":{\"order\":[\"a\"]}}}",
               INF_EFORMAT, "inputs.a: 'min' (10) is above 'max' (0)", "min above max");
    expect_bad(fraud, "{\"inputs\":{\"a\":{\"type\":\"float\"}},\"model_inputs\":{\"input\":{" IN12 "}},"
                      "\"outputs\":[{\"name\":\"s\",\"from\":\"probabilities\",\"index\":0.5}]}",
               INF_EFORMAT, "outputs[0] (s).index: must be a column index (an integer >= 0)", "fractional output index");
    expect_bad(fraud, "{\"inputs\":{\"a\":{\"type\":\"float\"}},\"model_inputs\":{\"input\":{" IN12 "}},"
                      "\"outputs\":[{\"name\":\"s\",\"from\":\"probabilities\",\"index\":1e300}]}",
               INF_EFORMAT, "outputs[0] (s).index: must be a column index (an integer >= 0)", "huge output index");
    expect_bad(fraud, "{\"inputs\":{\"a\":{\"type\":\"float\"}},\"model_inputs\":{\"input\":{" IN12 "}},"
                      "\"outputs\":[{\"name\":\"cls\",\"from\":\"probabilities\",\"op\":\"argmax\",\"labels\":[\"a\",\"b\",\"c\"]}]}",
               INF_EFORMAT, "outputs[0] (cls).labels: 3 labels but the output 'probabilities' has 2 classes",
               "argmax labels that do not match the classes");
    expect_bad(NULL, "{\"inputs\":{\"a\":{\"type\":\"float\"}},\"features\":[{\"name\":\"b\",\"op\":\"one_hot\",\"from\":\"a\","
                     "\"categories\":[1],\"max_categories\":1e300}],\"model_inputs\":{\"x\":{\"order\":[\"b\"]}}}",
               INF_EFORMAT, "'max_categories' must be a number from 1 to 10000000", "huge max_categories");
}

/* 200,000 categories (issue 27): spec validation was quadratic (40k: 3.6 s,
 * 200k: > 30 s), and each scored value was looked up by a linear scan.  The
 * spec must load in under a second, find a duplicate at the end, and map
 * values to the right ordinal (the category's index: the list itself is the
 * oracle). */
#define MANY_CATEGORIES 200000

static char *many_categories_spec(int duplicate_last) {
    size_t cap = (size_t)MANY_CATEGORIES * 24 + 1024, n = 0;
    char *js = malloc(cap);
    if (!js) return NULL;
    n += (size_t)snprintf(js + n, cap - n, "{\"inputs\":{\"c\":{\"type\":\"string\"},\"k\":{\"type\":\"float\",\"categories\":[");
    for (int i = 0; i < MANY_CATEGORIES; i++) n += (size_t)snprintf(js + n, cap - n, "%s%d", i ? "," : "", i * 3);
    n += (size_t)snprintf(js + n, cap - n, "]}},\"features\":[{\"name\":\"o\",\"op\":\"ordinal\",\"from\":\"c\",\"categories\":[");
    for (int i = 0; i < MANY_CATEGORIES; i++) {
        int v = duplicate_last && i == MANY_CATEGORIES - 1 ? 17 : i;
        n += (size_t)snprintf(js + n, cap - n, "%s\"cat%d\"", i ? "," : "", v);
    }
    snprintf(js + n, cap - n, "]}],\"model_inputs\":{\"x\":{\"order\":[\"o\",\"k\"]}}}");
    return js;
}

/* CPU time of the process: the machine running the suite may be shared, and
 * wall time would measure the neighbours.  Sanitizer builds run ~3x slower
 * and get 3 s: the quadratic code took > 30 s. */
static double seconds_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}
#if defined(__SANITIZE_ADDRESS__)
#define CATEGORY_BUDGET_S 3.0
#else
#define CATEGORY_BUDGET_S 1.0
#endif

static void test_many_categories(void) {
    char *js = many_categories_spec(0), *dup = many_categories_spec(1);
    if (!js || !dup) {
        check(0, "out of memory building the 200k-category spec");
        free(js);
        free(dup);
        return;
    }
    inf_pipeline *p = NULL;
    inf_pipeline_exec *e = NULL;
    inf_error err = {0};
    double t0 = seconds_now();
    inf_status st = inf_pipeline_load_string(js, strlen(js), NULL, NULL, &p, &err);
    double load_s = seconds_now() - t0;
    check(st == INF_OK && load_s < CATEGORY_BUDGET_S, "a spec with two lists of 200,000 categories loads in under 1 s of CPU (%.3f s; %s)",
          load_s, st ? err.message : "ok");
    t0 = seconds_now();
    inf_pipeline *q = NULL;
    st = inf_pipeline_load_string(dup, strlen(dup), NULL, NULL, &q, &err);
    double dup_s = seconds_now() - t0;
    check(st == INF_EFORMAT && strstr(err.message, "categories[199999]: duplicate category 'cat17'") && dup_s < CATEGORY_BUDGET_S,
          "a duplicate at the end of 200,000 categories is found in under 1 s of CPU (%.3f s): %s", dup_s, err.message);
    inf_pipeline_free(q);
    if (p && !(st = inf_pipeline_exec_new(p, &e, &err))) {
        inf_record_batch *b, *out;
        inf_record_batch_new(&b);
        inf_record_batch_new(&out);
        const char *recs[] = {"{\"c\":\"cat0\",\"k\":0}", "{\"c\":\"cat199999\",\"k\":599997}",
                              "{\"c\":\"cat123456\",\"k\":300}", "{\"c\":\"nope\",\"k\":3}"};
        for (int i = 0; i < 4; i++) inf_record_batch_add_json(b, recs[i], strlen(recs[i]), &err);
        t0 = seconds_now();
        st = inf_pipeline_prepare(e, b, NULL, &err);
        if (!st) st = inf_pipeline_features_to_records(e, out, &err);
        double score_s = seconds_now() - t0;
        const double want[] = {0, 199999, 123456, 200000}; /* unknown -> n_categories */
        int f = inf_record_batch_find_field(out, "o");
        int ok = st == INF_OK && f >= 0 && inf_record_batch_n_rows(out) == 4;
        for (int i = 0; ok && i < 4; i++) {
            const inf_value *v = inf_record_batch_get(out, i, f);
            ok = v->type == INF_FIELD_FLOAT ? v->u.f == want[i] : v->type == INF_FIELD_INT && v->u.i == (int64_t)want[i];
        }
        check(ok && score_s < CATEGORY_BUDGET_S, "ordinal over 200,000 categories maps cat0, cat199999, cat123456, unknown to 0, 199999, "
                                   "123456, 200000, and the allowed numbers are found (%.3f s; %s)",
              score_s, st ? err.message : "ok");
        inf_record_batch_free(out);
        inf_record_batch_free(b);
        inf_pipeline_exec_free(e);
    } else {
        check(0, "the 200k-category pipeline executes (%s)", err.message);
    }
    inf_pipeline_free(p);
    free(js);
    free(dup);
}

/* An id input declared a string is a string in the output records, even when
 * the source typed it as a number (CSV cells, flat Redis entries): every mode
 * gives the same id, and a keyed sink keeps one type for its key column. */
static void test_id_as_declared(void) {
    const char *spec = "{\"inputs\":{\"id\":{\"type\":\"string\",\"id\":true},\"a\":{\"type\":\"float\"}},"
                       "\"model_inputs\":{\"x\":{\"order\":[\"a\"]}}}";
    inf_pipeline *p = NULL;
    inf_pipeline_exec *e = NULL;
    inf_error err = {0};
    inf_status st = inf_pipeline_load_string(spec, strlen(spec), NULL, NULL, &p, &err);
    if (!st) st = inf_pipeline_exec_new(p, &e, &err);
    check(st == INF_OK, "string id spec loads (%s)", st ? err.message : "ok");
    if (st) return;
    inf_record_batch *b, *out;
    inf_record_batch_new(&b);
    inf_record_batch_new(&out);
    const char *recs[] = {"{\"id\":12345,\"a\":1}", "{\"id\":\"t7\",\"a\":2}", "{\"id\":1.5,\"a\":3}", "{\"a\":4}"};
    for (int i = 0; i < 4; i++) inf_record_batch_add_json(b, recs[i], strlen(recs[i]), &err);
    st = inf_pipeline_prepare(e, b, NULL, &err);
    if (!st) st = inf_pipeline_features_to_records(e, out, &err);
    const char *want[] = {"12345", "t7", "1.5"};
    int ok = st == INF_OK && inf_record_batch_n_rows(out) == 4 && inf_record_batch_find_field(out, "id") == 0;
    for (int i = 0; ok && i < 3; i++) {
        const inf_value *v = inf_record_batch_get(out, i, 0);
        ok = v->type == INF_FIELD_STRING && v->u.s.len == strlen(want[i]) && !memcmp(v->u.s.ptr, want[i], v->u.s.len);
    }
    check(ok && inf_record_batch_get(out, 3, 0)->type == INF_FIELD_NULL,
          "ids 12345, \"t7\", 1.5 come out as the strings \"12345\", \"t7\", \"1.5\"; a missing id stays null");
    inf_record_batch_free(out);
    inf_record_batch_free(b);
    inf_pipeline_exec_free(e);
    inf_pipeline_free(p);
}

/* Integer model inputs: truncation toward zero, NaN -> 0, and values beyond
 * the type's range saturate (a plain C cast is undefined there, and x86 and
 * ARM would give different bits); `infera features` shows the same values. */
static void test_integer_inputs(void) {
    const char *spec = "{\"inputs\":{\"a\":{\"type\":\"float\"}},"
                       "\"features\":[{\"name\":\"a2\",\"op\":\"identity\",\"from\":\"a\"}],"
                       "\"model_inputs\":{\"x\":{\"dtype\":\"int64\",\"order\":[\"a\"]},"
                       "\"y\":{\"dtype\":\"int32\",\"order\":[\"a2\"]}}}";
    inf_pipeline *p = NULL;
    inf_pipeline_exec *e = NULL;
    inf_error err = {0};
    inf_status st = inf_pipeline_load_string(spec, strlen(spec), NULL, NULL, &p, &err);
    if (!st) st = inf_pipeline_exec_new(p, &e, &err);
    check(st == INF_OK, "int64 + int32 spec loads (%s)", st ? err.message : "ok");
    if (st) return;
    inf_record_batch *b, *feat;
    inf_record_batch_new(&b);
    inf_record_batch_new(&feat);
    const char *recs[] = {"{\"a\":-2.9}", "{\"a\":\"NaN\"}", "{\"a\":1e300}", "{\"a\":-1e300}", "{\"a\":\"inf\"}",
                          "{\"a\":3e9}", "{\"a\":-3e9}"};
    const int64_t want64[] = {-2, 0, INT64_MAX, INT64_MIN, INT64_MAX, 3000000000LL, -3000000000LL};
    const int32_t want32[] = {-2, 0, INT32_MAX, INT32_MIN, INT32_MAX, INT32_MAX, INT32_MIN};
    for (int i = 0; i < 7; i++) inf_record_batch_add_json(b, recs[i], strlen(recs[i]), &err);
    const inf_tensor *const *x = NULL;
    st = inf_pipeline_prepare(e, b, &x, &err);
    check(st == INF_OK && x && inf_pipeline_n_accepted(e) == 7, "7 records prepared (%s)", st ? err.message : "ok");
    if (st == INF_OK && x) {
        const int64_t *t64 = x[0]->data;
        const int32_t *t32 = x[1]->data;
        for (int i = 0; i < 7; i++)
            check(t64[i] == want64[i] && t32[i] == want32[i], "%s -> int64 %lld, int32 %d (got %lld, %d)", recs[i],
                  (long long)want64[i], want32[i], (long long)t64[i], t32[i]);
        st = inf_pipeline_features_to_records(e, feat, &err);
        int ok = st == INF_OK && inf_record_batch_n_rows(feat) == 7;
        for (int i = 0; ok && i < 7; i++) {
            const inf_value *v64 = inf_record_batch_get(feat, i, 0), *v32 = inf_record_batch_get(feat, i, 1);
            ok = v64->u.f == (double)want64[i] && v32->u.f == (double)want32[i];
        }
        check(ok, "infera features shows the values the tensors hold");
    }
    inf_record_batch_free(feat);
    inf_record_batch_free(b);
    inf_pipeline_exec_free(e);
    inf_pipeline_free(p);
}

/* ---- schema checks ---- */

static void test_schema(void) {
    const char *spec =
        "{\"inputs\":{\"id\":{\"type\":\"string\",\"id\":true},"
        "\"card\":{\"type\":\"string\",\"required\":true,\"sensitive\":true,\"categories\":[\"c1\",\"c2\"]},"
        "\"amount\":{\"type\":\"float\",\"required\":true,\"min\":0,\"max\":100},"
        "\"n\":{\"type\":\"int\",\"default\":7},"
        "\"flag\":{\"type\":\"bool\",\"on_invalid\":\"count\",\"default\":false}},"
        "\"model_inputs\":{\"x\":{\"order\":[\"amount\",\"n\",\"flag\"]}}}";
    inf_pipeline *p = NULL;
    inf_error err = {0};
    inf_status st = inf_pipeline_load_string(spec, strlen(spec), NULL, NULL, &p, &err);
    check(st == INF_OK, "schema spec loads (%s)", st ? err.message : "ok");
    if (st) return;
    inf_record_batch *b;
    inf_record_batch_new(&b);
    const char *recs[] = {
        "{\"id\":\"ok\",\"card\":\"c1\",\"amount\":5,\"n\":3,\"flag\":true}",
        "{\"id\":\"missing\",\"card\":\"c1\",\"n\":3}",
        "{\"id\":\"type\",\"card\":\"c2\",\"amount\":\"lots\"}",
        "{\"id\":\"range\",\"card\":\"c2\",\"amount\":101}",
        "{\"id\":\"cat\",\"card\":\"SECRET-CARD-123\",\"amount\":1}",
        "{\"id\":\"notint\",\"card\":\"c1\",\"amount\":1,\"n\":2.5}",
        "{\"id\":\"counted\",\"card\":\"c1\",\"amount\":1,\"flag\":\"maybe\"}",
    };
    for (int i = 0; i < 7; i++) inf_record_batch_add_json(b, recs[i], strlen(recs[i]), &err);
    inf_pipeline_exec *e;
    inf_pipeline_exec_new(p, &e, &err);
    inf_pipeline_prepare(e, b, NULL, &err);
    check(inf_pipeline_n_accepted(e) == 2 && inf_pipeline_accepted_row(e, 0) == 0 && inf_pipeline_accepted_row(e, 1) == 6,
          "reject policy keeps rows 1 and 7 (accepted %d)", inf_pipeline_n_accepted(e));
    const char *want[][2] = {{"amount", "field 'amount' is missing (required)"},
                             {"amount", "field 'amount' is not a number"},
                             {"amount", "field 'amount' is above its maximum"},
                             {"card", "field 'card' is not one of the allowed categories"},
                             {"n", "field 'n' is not an integer"}};
    int n_rej = inf_pipeline_n_rejected(e);
    check(n_rej == 5, "5 rejected records (%d)", n_rej);
    for (int i = 0; i < n_rej && i < 5; i++) {
        const char *field, *msg;
        int row = inf_pipeline_rejected(e, i, &field, &msg);
        check(row == i + 1 && !strcmp(field, want[i][0]) && !strcmp(msg, want[i][1]), "row %d rejected: %s", row + 1, msg);
        if (strstr(msg, "SECRET")) check(0, "sensitive value leaked into a message");
    }
    int nr, nc;
    const double *f = inf_pipeline_features(e, &nr, &nc);
    check(nr == 2 && f[0] == 5 && f[1] == 3 && f[2] == 1 && f[3] == 1 && f[4] == 7 && f[5] == 0,
          "features: values, int default 7, counted invalid bool -> default false");
    inf_pipeline_field_stats fs;
    int found = 0;
    for (int i = 0; i < inf_pipeline_n_field_stats(p); i++) {
        inf_pipeline_get_field_stats(p, i, &fs);
        if (!strcmp(fs.field, "amount")) found |= (fs.n_invalid == 3 && fs.n_rejected == 3) ? 1 : 0;
        if (!strcmp(fs.field, "flag")) found |= (fs.n_invalid == 1 && fs.n_rejected == 0) ? 2 : 0;
    }
    inf_pipeline_stats s;
    inf_pipeline_get_stats(p, &s);
    check(found == 3 && s.n_records == 7 && s.n_rejected == 5, "monitoring counters: amount 3 invalid/3 rejected, flag 1 counted");
    check(inf_pipeline_is_sensitive(p, "card") && !inf_pipeline_is_sensitive(p, "amount"), "sensitive flag exposed");
    check(strlen(inf_pipeline_hash(p)) == 64, "spec hash is 64 hex chars");
    /* the same spec with other whitespace and key order hashes the same */
    const char *spec2 =
        "{ \"model_inputs\":{\"x\":{\"order\":[\"amount\",\"n\",\"flag\"]}}, \"inputs\":{\"id\":{\"id\":true,\"type\":\"string\"},"
        "\"card\":{\"type\":\"string\",\"required\":true,\"sensitive\":true,\"categories\":[\"c1\",\"c2\"]},"
        "\"amount\":{\"type\":\"float\",\"required\":true,\"min\":0.0,\"max\":100},"
        "\"n\":{\"type\":\"int\",\"default\":7},"
        "\"flag\":{\"type\":\"bool\",\"on_invalid\":\"count\",\"default\":false}} }";
    inf_pipeline *p2 = NULL;
    inf_pipeline_load_string(spec2, strlen(spec2), NULL, NULL, &p2, &err);
    check(p2 && !strcmp(inf_pipeline_hash(p), inf_pipeline_hash(p2)), "canonical hash ignores key order and whitespace");
    inf_pipeline_free(p2);
    inf_pipeline_exec_free(e);
    inf_pipeline_free(p);
    inf_record_batch_free(b);
}

/* ---- lookups ---- */

static void exec_sql(sqlite3 *db, const char *sql) {
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) printf("sql error: %s\n", msg);
    sqlite3_free(msg);
}

static const double *prepare_json(inf_pipeline_exec *e, inf_record_batch *b, const char *const *recs, int n, int *nr,
                                  int *nc) {
    inf_error err = {0};
    inf_record_batch_clear(b);
    for (int i = 0; i < n; i++) inf_record_batch_add_json(b, recs[i], strlen(recs[i]), &err);
    if (inf_pipeline_prepare(e, b, NULL, &err)) {
        printf("prepare failed: %s\n", err.message);
        *nr = 0;
        return NULL;
    }
    return inf_pipeline_features(e, nr, nc);
}

static void test_sqlite_lookup(const char *dir) {
    char db_path[1024];
    snprintf(db_path, sizeof db_path, "%s/store.db", dir);
    sqlite3 *db;
    sqlite3_open(db_path, &db);
    exec_sql(db, "CREATE TABLE cards (card_id TEXT, cnt INTEGER, avg REAL, updated_at);"
                 "INSERT INTO cards VALUES ('c1', 3, 12.5, 1000), ('c2', 5, NULL, '1970-01-01T00:16:40Z'),"
                 " ('c3', 9, 99, 10), ('c1', 4, 13.5, 1100), ('c4', 1, 1, 2000);"
                 "CREATE TABLE hist (card_id TEXT, cnt INTEGER, avg REAL, ts, arrived);"
                 "INSERT INTO hist VALUES ('h', 1, 10, '2024-01-01T00:00:00Z', '2024-01-01T00:00:00Z'),"
                 " ('h', 2, 20, '2024-01-02T00:00:00Z', '2024-01-02T00:00:00Z'),"
                 " ('h', 22, 220, '2024-01-02T00:00:00Z', '2024-01-02T00:00:00Z'),"      /* same time: later row wins */
                 " ('h', 3, 30, '2024-01-03T00:00:00Z', '2024-01-05T00:00:00Z'),"      /* arrives late */
                 " ('h', 4, 40, 1704499200, 1704499200);");                             /* 2024-01-06, epoch form */
    sqlite3_close(db);
    char spec[4096];
    snprintf(spec, sizeof spec,
             "{\"inputs\":{\"card\":{\"type\":\"string\"},\"t\":{\"type\":\"timestamp\"}},"
             "\"lookups\":[{\"name\":\"hist\",\"store\":\"sqlite:%s?table=cards\",\"key\":\"card\",\"key_column\":\"card_id\","
             "\"features\":{\"cnt\":\"int\",\"avg\":\"float\"},\"as_of\":\"updated_at\",\"max_age_s\":500,"
             "\"defaults\":{\"cnt\":-1}}],"
             "\"model_inputs\":{\"x\":{\"order\":[\"cnt\",\"avg\"]}}}",
             db_path);
    inf_pipeline *p = NULL;
    inf_error err = {0};
    inf_status st = inf_pipeline_load_string(spec, strlen(spec), NULL, NULL, &p, &err);
    check(st == INF_OK, "lookup spec loads (%s)", st ? err.message : "ok");
    if (st) return;
    inf_pipeline_exec *e = NULL;
    st = inf_pipeline_exec_new(p, &e, &err);
    check(st == INF_OK, "executor opens the SQLite store (%s)", st ? err.message : "ok");
    if (st) {
        inf_pipeline_free(p);
        return;
    }
    inf_pipeline_exec_set_now(e, 1200);
    inf_record_batch *b;
    inf_record_batch_new(&b);
    const char *recs[] = {"{\"card\":\"c1\"}", "{\"card\":\"c2\"}", "{\"card\":\"c3\"}", "{\"card\":\"nobody\"}",
                          "{\"card\":\"c1\"}", "{}", "{\"card\":\"c4\"}"};
    int nr, nc;
    const double *f = prepare_json(e, b, recs, 7, &nr, &nc);
    inf_pipeline_stats s;
    inf_pipeline_get_stats(p, &s);
    check(f && nr == 7, "7 records through the lookup");
    if (!f || nr != 7) goto done;
    check(f[0] == 4 && f[1] == 13.5 && f[8] == 4, "latest row per key wins (c1 -> cnt 4, twice in the batch)");
    check(f[2] == 5 && isnan(f[3]), "ISO as_of read; NULL value -> missing without default (NaN)");
    check(f[4] == -1 && isnan(f[5]), "stale entity (age 1190 s > 500) -> defaults");
    check(f[6] == -1 && isnan(f[7]) && f[10] == -1, "missing entity and missing key -> defaults");
    check(f[12] == 1, "as_of in the future of now counts as fresh");
    check(s.n_lookups == 1, "one store query for the batch (%llu)", (unsigned long long)s.n_lookups);
    f = prepare_json(e, b, recs, 3, &nr, &nc);
    inf_pipeline_get_stats(p, &s);
    check(s.n_lookups == 2, "one more query for the next batch (%llu)", (unsigned long long)s.n_lookups);

    /* event_time: staleness measured from the record's own time; a record
     * without one is measured from the wall clock (here: 1200), not taken as fresh */
    inf_pipeline_exec_free(e);
    inf_pipeline_free(p);
    e = NULL;
    p = NULL;
    snprintf(spec, sizeof spec,
             "{\"inputs\":{\"card\":{\"type\":\"string\"},\"t\":{\"type\":\"timestamp\"}},"
             "\"lookups\":[{\"name\":\"hist\",\"store\":\"sqlite:%s?table=cards\",\"key\":\"card\",\"key_column\":\"card_id\","
             "\"features\":{\"cnt\":\"int\",\"avg\":\"float\"},\"as_of\":\"updated_at\",\"max_age_s\":500,"
             "\"event_time\":\"t\",\"defaults\":{\"cnt\":-1}}],"
             "\"model_inputs\":{\"x\":{\"order\":[\"cnt\",\"avg\"]}}}",
             db_path);
    st = inf_pipeline_load_string(spec, strlen(spec), NULL, NULL, &p, &err);
    if (!st) st = inf_pipeline_exec_new(p, &e, &err);
    check(st == INF_OK, "event_time lookup spec loads (%s)", st ? err.message : "ok");
    if (st) goto done;
    inf_pipeline_exec_set_now(e, 1200);
    const char *et[] = {"{\"card\":\"c3\",\"t\":100}", "{\"card\":\"c3\",\"t\":1200}", "{\"card\":\"c3\"}",
                        "{\"card\":\"c3\",\"t\":null}"};
    f = prepare_json(e, b, et, 4, &nr, &nc);
    check(f && nr == 4 && f[0] == 9 && f[2] == -1 && f[4] == -1 && f[6] == -1,
          "event_time: c3 (as of 10) fresh at t=100, stale at t=1200 and, without t, at the wall clock 1200 "
          "(cnt %g %g %g %g)", f ? f[0] : 0, f ? f[2] : 0, f ? f[4] : 0, f ? f[6] : 0);

    /* required lookups: a null, unknown or stale key rejects the record
     * (defaults do not apply); a sensitive key is not named */
    for (int sensitive = 0; sensitive < 2; sensitive++) {
        inf_pipeline_exec_free(e);
        inf_pipeline_free(p);
        e = NULL;
        p = NULL;
        snprintf(spec, sizeof spec,
                 "{\"inputs\":{\"card\":{\"type\":\"string\"%s},\"t\":{\"type\":\"timestamp\"}},"
                 "\"lookups\":[{\"name\":\"hist\",\"store\":\"sqlite:%s?table=cards\",\"key\":\"card\",\"key_column\":\"card_id\","
                 "\"features\":{\"cnt\":\"int\",\"avg\":\"float\"},\"as_of\":\"updated_at\",\"max_age_s\":500,"
                 "\"defaults\":{\"cnt\":-1},\"required\":true}],"
                 "\"model_inputs\":{\"x\":{\"order\":[\"cnt\",\"avg\"]}}}",
                 sensitive ? ",\"sensitive\":true" : "", db_path);
        st = inf_pipeline_load_string(spec, strlen(spec), NULL, NULL, &p, &err);
        if (!st) st = inf_pipeline_exec_new(p, &e, &err);
        check(st == INF_OK, "required lookup spec loads (%s)", st ? err.message : "ok");
        if (st) goto done;
        inf_pipeline_exec_set_now(e, 1200);
        f = prepare_json(e, b, recs, 7, &nr, &nc);
        check(f && nr == 4 && inf_pipeline_n_rejected(e) == 3, "required: 4 of 7 records accepted (%d), 3 rejected (%d)",
              nr, inf_pipeline_n_rejected(e));
        if (!f || nr != 4 || inf_pipeline_n_rejected(e) != 3) goto done;
        check(f[0] == 4 && f[2] == 5 && f[4] == 4 && f[6] == 1, "required: the found records keep their values");
        const int want_row[3] = {2, 3, 5};
        const char *want_msg[2][3] = {
            {"lookup hist: key c3 is stale (older than max_age_s)", "lookup hist: key nobody not found",
             "lookup hist: key field 'card' is missing"},
            {"lookup hist: key is stale (older than max_age_s) (field 'card' is sensitive)",
             "lookup hist: key not found (field 'card' is sensitive)", "lookup hist: key field 'card' is missing"}};
        for (int i = 0; i < 3; i++) {
            const char *field = NULL, *msg = NULL;
            int row = inf_pipeline_rejected(e, i, &field, &msg);
            check(row == want_row[i] && field && !strcmp(field, "card") && msg && !strcmp(msg, want_msg[sensitive][i]),
                  "required%s: row %d rejected with '%s' (got row %d, %s: %s)", sensitive ? " (sensitive key)" : "",
                  want_row[i], want_msg[sensitive][i], row, field ? field : "-", msg ? msg : "-");
        }
    }

    /* point in time against the history table */
    char hist[1200];
    snprintf(hist, sizeof hist, "sqlite:%s?table=hist", db_path);
    inf_pipeline_exec_free(e);
    inf_pipeline_free(p);
    snprintf(spec, sizeof spec,
             "{\"inputs\":{\"card\":{\"type\":\"string\"},\"t\":{\"type\":\"timestamp\"}},"
             "\"lookups\":[{\"name\":\"hist\",\"store\":\"sqlite:%s?table=cards\",\"key\":\"card\",\"key_column\":\"card_id\","
             "\"features\":{\"cnt\":\"int\",\"avg\":\"float\"},\"as_of\":\"ts\",\"available_at\":\"arrived\","
             "\"max_age_s\":259200,\"defaults\":{\"cnt\":0,\"avg\":-1}}],"
             "\"model_inputs\":{\"x\":{\"order\":[\"cnt\",\"avg\"]}}}",
             db_path);
    p = NULL;
    e = NULL;
    st = inf_pipeline_load_string(spec, strlen(spec), NULL, NULL, &p, &err);
    if (!st) st = inf_pipeline_exec_new(p, &e, &err);
    if (!st) st = inf_pipeline_exec_set_point_in_time(e, "t", hist, &err);
    check(st == INF_OK, "point-in-time executor (%s)", st ? err.message : "ok");
    if (st) goto done;
    const char *pit[] = {
        "{\"card\":\"h\",\"t\":\"2023-12-31T23:59:59Z\"}", /* before the first value -> defaults */
        "{\"card\":\"h\",\"t\":\"2024-01-01T00:00:00Z\"}", /* equal to the first value's time -> it */
        "{\"card\":\"h\",\"t\":\"2024-01-02T00:00:00Z\"}", /* two rows at that time -> the later one */
        "{\"card\":\"h\",\"t\":\"2024-01-04T00:00:00Z\"}", /* value of 01-03 arrived 01-05: not yet visible */
        "{\"card\":\"h\",\"t\":\"2024-01-05T00:00:00Z\"}", /* now it has arrived */
        "{\"card\":\"h\",\"t\":1704499199}",              /* a second before the epoch-stamped value */
        "{\"card\":\"h\",\"t\":\"2024-01-06T00:00:00Z\"}", /* equal to it */
        "{\"card\":\"h\",\"t\":\"2024-01-20T00:00:00Z\"}", /* latest value is 14 days old > max_age -> defaults */
        "{\"card\":\"zz\",\"t\":\"2024-01-20T00:00:00Z\"}", /* unknown entity */
    };
    double want[][2] = {{0, -1}, {1, 10}, {22, 220}, {22, 220}, {3, 30}, {3, 30}, {4, 40}, {0, -1}, {0, -1}};
    f = prepare_json(e, b, pit, 9, &nr, &nc);
    check(f && nr == 9, "9 point-in-time records");
    for (int i = 0; f && i < nr && i < 9; i++)
        check(f[2 * i] == want[i][0] && f[2 * i + 1] == want[i][1], "point in time %s -> cnt %g avg %g (got %g %g)", pit[i],
              want[i][0], want[i][1], f[2 * i], f[2 * i + 1]);
done:
    inf_pipeline_exec_free(e);
    inf_pipeline_free(p);
    inf_record_batch_free(b);
}

static void test_redis_lookup(const char *url) {
    /* populate through hiredis */
    char host[256] = "127.0.0.1";
    int port = 6379;
    sscanf(url, "redis://%255[^:]:%d", host, &port);
    redisContext *c = redisConnect(host, port);
    if (!c || c->err) {
        check(0, "connect to Redis at %s", url);
        return;
    }
    freeReplyObject(redisCommand(c, "DEL card:r1 card:r2 card:r3"));
    freeReplyObject(redisCommand(c, "HSET card:r1 cnt 3 avg 12.5 updated_at 1000"));
    freeReplyObject(redisCommand(c, "HSET card:r2 cnt 5 updated_at 1970-01-01T00:16:40Z"));
    freeReplyObject(redisCommand(c, "HSET card:r3 cnt 9 avg 99 updated_at 10"));
    char spec[2048];
    snprintf(spec, sizeof spec,
             "{\"inputs\":{\"card\":{\"type\":\"string\"}},"
             "\"lookups\":[{\"name\":\"cards\",\"store\":\"%s\",\"prefix\":\"card:\",\"key\":\"card\","
             "\"features\":{\"cnt\":\"int\",\"avg\":\"float\"},\"as_of\":\"updated_at\",\"max_age_s\":500,"
             "\"defaults\":{\"cnt\":-1}}],\"model_inputs\":{\"x\":{\"order\":[\"cnt\",\"avg\"]}}}",
             url);
    inf_pipeline *p = NULL;
    inf_pipeline_exec *e = NULL;
    inf_error err = {0};
    inf_status st = inf_pipeline_load_string(spec, strlen(spec), NULL, NULL, &p, &err);
    if (!st) st = inf_pipeline_exec_new(p, &e, &err);
    check(st == INF_OK, "Redis lookup executor (%s)", st ? err.message : "ok");
    if (!st) {
        inf_pipeline_exec_set_now(e, 1200);
        inf_record_batch *b;
        inf_record_batch_new(&b);
        const char *recs[] = {"{\"card\":\"r1\"}", "{\"card\":\"r2\"}", "{\"card\":\"r3\"}", "{\"card\":\"none\"}",
                              "{\"card\":\"r1\"}"};
        int nr, nc;
        redisReply *before = redisCommand(c, "INFO commandstats");
        const double *f = prepare_json(e, b, recs, 5, &nr, &nc);
        redisReply *after = redisCommand(c, "INFO commandstats");
        check(f && nr == 5, "5 records through the Redis lookup");
        if (f && nr == 5) {
            check(f[0] == 3 && f[1] == 12.5 && f[8] == 3, "HMGET values (r1 twice in the batch)");
            check(f[2] == 5 && isnan(f[3]), "missing hash field -> NaN; ISO as_of");
            check(f[4] == -1 && isnan(f[5]), "stale entity -> defaults");
            check(f[6] == -1 && isnan(f[7]), "missing entity -> defaults");
        }
        long hb = 0, ha = 0;
        const char *s;
        if (before && before->str && (s = strstr(before->str, "cmdstat_hmget:calls="))) hb = atol(s + 20);
        if (after && after->str && (s = strstr(after->str, "cmdstat_hmget:calls="))) ha = atol(s + 20);
        check(ha - hb == 4, "one pipelined HMGET per unique key (4 for 5 records): %ld", ha - hb);
        freeReplyObject(before);
        freeReplyObject(after);
        inf_pipeline_stats ps;
        inf_pipeline_get_stats(p, &ps);
        check(ps.n_lookups == 1, "one round trip for the batch");
        /* the server drops the executor's connection (as a restart does): the
         * next batch connects again instead of failing, now and for ever */
        freeReplyObject(redisCommand(c, "CLIENT KILL TYPE normal SKIPME yes"));
        f = prepare_json(e, b, recs, 5, &nr, &nc);
        check(f && nr == 5 && f[0] == 3 && f[1] == 12.5, "after the server dropped the lookup connection, the next batch "
                                                         "reconnects and gets the values");
        inf_record_batch_free(b);
    }
    inf_pipeline_exec_free(e);
    inf_pipeline_free(p);
    redisFree(c);
}

/* ---- default pipeline and outputs on the fraud model ---- */

static void test_fraud(inf_model *model) {
    inf_pipeline *p = NULL;
    inf_error err = {0};
    inf_pipeline_options o;
    inf_pipeline_options_init(&o);
    o.id_column = "transaction_id";
    o.model_name = "fraud";
    o.model_version = "3";
    inf_status st = inf_pipeline_default(model, &o, &p, &err);
    check(st == INF_OK, "default pipeline for the fraud model (%s)", st ? err.message : "ok");
    if (st) return;
    char uri[1100];
    snprintf(uri, sizeof uri, "csv:%s", path_of("examples/fraud/transactions.csv"));
    inf_record_batch *in = read_all(uri), *out;
    inf_record_batch_new(&out);
    inf_pipeline_exec *e = NULL;
    inf_session *s = NULL;
    inf_pipeline_exec_new(p, &e, &err);
    inf_session_new(model, NULL, &s, &err);
    const inf_tensor *const *x;
    inf_tensor *const *y;
    st = inf_pipeline_prepare(e, in, &x, &err);
    check(st == INF_OK && x[0]->dims[0] == 5000 && x[0]->dims[1] == 12, "default: 5000 x 12 input");
    check(inf_pipeline_n_ignored_fields(e) == 1 && !strcmp(inf_pipeline_exec_feature_column(e, 11), "days_since_last_txn"),
          "default: the 12 numeric fields after the id in source order; is_fraud ignored");
    if (!st) st = inf_session_run(s, x, &y, &err);
    if (!st) st = inf_pipeline_finish(e, y, out, &err);
    check(st == INF_OK, "default: run + finish (%s)", st ? err.message : "ok");
    const char *names[] = {"transaction_id", "label", "probabilities_0", "probabilities_1", "model_name", "model_version",
                           "pipeline_hash"};
    int ok = inf_record_batch_n_fields(out) == 7;
    for (int i = 0; ok && i < 7; i++) ok = !strcmp(inf_record_batch_field_name(out, i), names[i]);
    check(ok, "default outputs: transaction_id, label, probabilities_0, probabilities_1, model_name, model_version, pipeline_hash");
    const inf_value *v = inf_record_batch_get(out, 0, 4);
    check(v->type == INF_FIELD_STRING && !strcmp(v->u.s.ptr, "fraud") &&
              !strcmp(inf_record_batch_get(out, 0, 5)->u.s.ptr, "3"),
          "predictions stamped with model name and version");
    inf_pipeline_exec_free(e);
    inf_pipeline_free(p);

    /* the fraud spec: outputs mapping */
    p = NULL;
    e = NULL;
    st = inf_pipeline_load(path_of("examples/fraud/fraud_spec.json"), model, NULL, &p, &err);
    check(st == INF_OK, "fraud_spec.json loads against the model (%s)", st ? err.message : "ok");
    if (st) goto done;
    if ((st = inf_pipeline_exec_new(p, &e, &err))) {
        check(0, "fraud spec executor: %s", err.message);
        goto done;
    }
    snprintf(uri, sizeof uri, "csv:%s", path_of("examples/fraud/transactions_raw.csv"));
    inf_record_batch_free(in);
    in = read_all(uri);
    inf_record_batch_reset(out);
    st = inf_pipeline_prepare(e, in, &x, &err);
    if (!st) st = inf_session_run(s, x, &y, &err);
    if (!st) st = inf_pipeline_finish(e, y, out, &err);
    check(st == INF_OK && inf_record_batch_n_rows(out) == 5000, "fraud spec: 5000 predictions (%s)", st ? err.message : "ok");
    int f_score = inf_record_batch_find_field(out, "fraud_score"), f_is = inf_record_batch_find_field(out, "is_fraud"),
        f_dec = inf_record_batch_find_field(out, "decision"), f_hash = inf_record_batch_find_field(out, "pipeline_hash");
    int good = f_score >= 0 && f_is >= 0 && f_dec >= 0 && f_hash >= 0;
    for (int r = 0; good && r < inf_record_batch_n_rows(out); r++) {
        double sc = inf_record_batch_get(out, r, f_score)->u.f;
        const float *prob = (const float *)y[1]->data;
        good = sc == (double)prob[2 * r + 1] && inf_record_batch_get(out, r, f_is)->u.i == (sc >= 0.5) &&
               !strcmp(inf_record_batch_get(out, r, f_dec)->u.s.ptr, sc >= 0.8 ? "review" : "approve") &&
               !strcmp(inf_record_batch_get(out, r, f_hash)->u.s.ptr, inf_pipeline_hash(p));
    }
    check(good, "fraud spec outputs: fraud_score = probabilities[:,1], is_fraud and decision thresholds, spec hash");
    check(inf_record_batch_find_field(out, "card_id") < 0, "the sensitive card_id is not copied to predictions");
done:
    inf_pipeline_exec_free(e);
    inf_pipeline_free(p);
    inf_session_free(s);
    inf_record_batch_free(in);
    inf_record_batch_free(out);
}

/* ---- sequence-of-map outputs (ZipMap, as skl2onnx classifiers end) ---- */

static const char *const zip_recs[] = {
    "{\"id\":\"r1\",\"a\":0.25,\"b\":0.5,\"c\":0.125}",
    "{\"id\":\"r2\",\"a\":3,\"b\":-1,\"c\":2.5}",
    "{\"id\":\"r3\",\"a\":-4,\"b\":-5,\"c\":-3.75}",
};
static const float zip_x[3][3] = {{0.25f, 0.5f, 0.125f}, {3, -1, 2.5f}, {-4, -5, -3.75f}};
static const int zip_best[3] = {1, 0, 2}, zip_second[3] = {0, 2, 0};

/* Scores the three records through p (a model of tests/pipeline/data); NULL on failure. */
static inf_record_batch *zip_score(const inf_model *model, const inf_pipeline *p, inf_error *err) {
    inf_record_batch *in = NULL, *out = NULL;
    inf_pipeline_exec *e = NULL;
    inf_session *s = NULL;
    const inf_tensor *const *x;
    inf_tensor *const *y;
    inf_status st = inf_record_batch_new(&in);
    for (int i = 0; i < 3 && !st; i++) st = inf_record_batch_add_json(in, zip_recs[i], strlen(zip_recs[i]), err);
    if (!st) st = inf_record_batch_new(&out);
    if (!st) st = inf_pipeline_exec_new(p, &e, err);
    if (!st) st = inf_session_new(model, NULL, &s, err);
    for (int round = 0; round < 2 && !st; round++) { /* twice: the second reuses the executor's key names */
        inf_record_batch_reset(out);
        st = inf_pipeline_prepare(e, in, &x, err);
        if (!st) st = inf_session_run(s, x, &y, err);
        if (!st) st = inf_pipeline_finish(e, y, out, err);
    }
    inf_pipeline_exec_free(e);
    inf_session_free(s);
    inf_record_batch_free(in);
    if (st) {
        inf_record_batch_free(out);
        return NULL;
    }
    return out;
}

static double zip_num(const inf_record_batch *out, int row, const char *field) {
    int f = inf_record_batch_find_field(out, field);
    double v = NAN;
    if (f >= 0) inf_value_to_double(inf_record_batch_get(out, row, f), &v);
    return v;
}

static const char *zip_str(const inf_record_batch *out, int row, const char *field) {
    int f = inf_record_batch_find_field(out, field);
    const inf_value *v = f >= 0 ? inf_record_batch_get(out, row, f) : NULL;
    return v && v->type == INF_FIELD_STRING ? v->u.s.ptr : "";
}

/* Default mapping: one column per map key, named output_probability_<key>. */
static void test_zipmap_default(const inf_model *model, const char *const keys[3], const char *what) {
    inf_pipeline *p = NULL;
    inf_error err = {0};
    inf_pipeline_options o;
    inf_pipeline_options_init(&o);
    o.id_column = "id";
    inf_status st = inf_pipeline_default(model, &o, &p, &err);
    inf_record_batch *out = st ? NULL : zip_score(model, p, &err);
    check(out != NULL, "%s: default pipeline scores a ZipMap model (%s)", what, out ? "ok" : err.message);
    int good = out && inf_record_batch_n_rows(out) == 3;
    char name[64];
    for (int r = 0; good && r < 3; r++) {
        good = zip_num(out, r, "label") == zip_best[r];
        for (int j = 0; good && j < 3; j++) {
            snprintf(name, sizeof name, "output_probability_%s", keys[j]);
            good = zip_num(out, r, name) == (double)zip_x[r][j];
        }
    }
    check(good, "%s: columns output_probability_%s/_%s/_%s hold each row's map values", what, keys[0], keys[1], keys[2]);
    inf_record_batch_free(out);
    inf_pipeline_free(p);
}

/* Spec mapping: argmax and top_k name the map's keys; index picks a column. */
static void test_zipmap_spec(const inf_model *model, const char *const keys[3], int string_keys, const char *what) {
    const char *spec = "{\"inputs\":{\"id\":{\"type\":\"string\",\"id\":true},\"a\":{\"type\":\"float\"},"
                       "\"b\":{\"type\":\"float\"},\"c\":{\"type\":\"float\"}},"
                       "\"model_inputs\":{\"X\":{\"order\":[\"a\",\"b\",\"c\"]}},"
                       "\"outputs\":[{\"name\":\"animal\",\"from\":\"output_probability\",\"op\":\"argmax\"},"
                       "{\"name\":\"p_second\",\"from\":\"output_probability\",\"index\":1},"
                       "{\"name\":\"top\",\"from\":\"output_probability\",\"op\":\"top_k\",\"k\":2}]}";
    inf_pipeline *p = NULL;
    inf_error err = {0};
    inf_status st = inf_pipeline_load_string(spec, strlen(spec), model, NULL, &p, &err);
    inf_record_batch *out = st ? NULL : zip_score(model, p, &err);
    check(out != NULL, "%s: a spec maps a ZipMap output (%s)", what, out ? "ok" : err.message);
    int good = out && inf_record_batch_n_rows(out) == 3;
    for (int r = 0; good && r < 3; r++) {
        const char *best = keys[zip_best[r]], *second = keys[zip_second[r]];
        if (string_keys)
            good = !strcmp(zip_str(out, r, "animal"), best) && !strcmp(zip_str(out, r, "top_2"), second);
        else
            good = zip_num(out, r, "animal") == atof(best) && zip_num(out, r, "top_2") == atof(second);
        good = good && zip_num(out, r, "p_second") == (double)zip_x[r][1] &&
               zip_num(out, r, "top_1_score") == (double)zip_x[r][zip_best[r]];
    }
    check(good, "%s: argmax/top_k give the class keys, index 1 the second key's score", what);
    inf_record_batch_free(out);
    inf_pipeline_free(p);
}

static void test_zipmap(void) {
    static const struct {
        const char *file, *what, *keys[3];
        int string_keys;
    } cases[] = {{"tests/pipeline/data/zipmap_str.onnx", "string keys", {"cat", "dog", "emu"}, 1},
                 {"tests/pipeline/data/zipmap_int.onnx", "int64 keys", {"10", "20", "30"}, 0}};
    for (int i = 0; i < 2; i++) {
        inf_model *m = NULL;
        inf_error err;
        if (inf_model_load(path_of(cases[i].file), NULL, &m, &err)) {
            check(0, "load %s: %s", cases[i].file, err.message);
            continue;
        }
        test_zipmap_default(m, cases[i].keys, cases[i].what);
        test_zipmap_spec(m, cases[i].keys, cases[i].string_keys, cases[i].what);
        inf_model_free(m);
    }
}

int main(int argc, char **argv) {
    src_dir = argc > 1 ? argv[1] : ".";
    char dir[] = "/tmp/infera-pipeline-XXXXXX";
    if (!mkdtemp(dir)) return 1;
    inf_model *fraud = NULL;
    inf_error err;
    /* the committed fraud model must load: a failure here used to skip its checks silently */
    inf_status fst = inf_model_load(path_of("examples/fraud/fraud_xgb.onnx"), NULL, &fraud, &err);
    check(fst == INF_OK, "examples/fraud/fraud_xgb.onnx loads (%s)", fst ? err.message : "ok");
    test_transforms();
    test_bad_specs(fraud);
    test_many_categories();
    test_integer_inputs();
    test_id_as_declared();
    test_schema();
    test_sqlite_lookup(dir);
    if (getenv("REDIS_URL")) test_redis_lookup(getenv("REDIS_URL"));
    else printf("Redis lookups: not here (REDIS_URL not set), in the pipeline_redis test (test_redis.sh)\n");
    if (fraud) test_fraud(fraud);
    inf_model_free(fraud);
    test_zipmap();
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd)) {}
    printf("%d passed, %d failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
