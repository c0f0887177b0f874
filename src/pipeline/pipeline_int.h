/*
 * pipeline_int.h -- the internals of a loaded pipeline spec, shared by the
 * files of src/pipeline (spec.c parses, transform.c computes, lookup*.c
 * fetch, exec.c runs, fit.c learns parameters).
 *
 * Model of execution.  Every named value of the spec -- a declared input, a
 * lookup feature, a derived feature -- is a `column`.  Numeric columns
 * (including bools and timestamps, the latter as epoch seconds) hold one
 * double per record; string columns hold (pointer, length) pairs; a
 * one-hot feature is a numeric column of `width` > 1.  Columns live in the
 * executor's scratch, column-major: slot s of a batch with capacity C is
 * num[s*C .. s*C+n).  Missing numeric values are NaN; missing strings are
 * NULL pointers.  Transforms are pure functions from input columns to
 * output slots (transform.c), so the same code runs in every mode.
 *
 * Invariants after load: columns are in definition order (inputs, lookup
 * features, features), every transform reads only earlier columns, and every
 * model input's width equals the model's declared width when it is known.
 */
#ifndef INF_PIPELINE_INT_H
#define INF_PIPELINE_INT_H

#include <stdatomic.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "infera/pipeline.h"
#include "infera/session.h"

/* Every pipeline file reports errors with inf_error_set(err, status, fmt,
 * ...), the library's one error mechanism (core.h). */

enum { COL_NUM = 0, COL_STR = 1, COL_TS = 2 };
enum { SRC_INPUT = 0, SRC_LOOKUP = 1, SRC_FEATURE = 2 };
enum { POLICY_REJECT = 0, POLICY_COUNT = 1 };

typedef struct pcol {
    char *name;
    int kind;   /* COL_NUM / COL_STR / COL_TS */
    int width;  /* numeric slots (1, or k for one-hot) */
    int slot;   /* first numeric slot, or the string slot for COL_STR */
    int source; /* SRC_* */
    int index;  /* input index / lookup index / feature index */
    char **sub_names; /* width > 1: "name=cat" per slot */
} pcol;

/* catset.c: hash of a category list's texts and its numeric values in order
 * (O(n log n) to build, duplicates found; O(1)/O(log n) lookups).  The
 * texts and numbers stay owned by the list. */
typedef struct inf__catset {
    int *hash;      /* open addressing: category index + 1, 0 = empty */
    int hash_size;
    int *by_num;    /* indices of the non-NaN numeric categories, by value then index */
    int n_num;
} inf__catset;
/* lens may be NULL (strlen), nums may be NULL (no numeric index).  Returns -1
 * when out of memory; *duplicate = index of the first repeated text, or -1. */
int inf__catset_build(inf__catset *s, const char *const *texts, const uint32_t *lens, const double *nums, int n,
                      int *duplicate);
int inf__catset_find_text(const inf__catset *s, const char *const *texts, const uint32_t *lens, const char *text,
                          uint32_t len);
int inf__catset_find_number(const inf__catset *s, const double *nums, double v);
void inf__catset_free(inf__catset *s);

typedef struct pinput {
    char *name;
    int type;           /* inf_field_type */
    int required, sensitive, is_id;
    int policy;         /* POLICY_* */
    int has_default;
    double def_num;     /* numeric / bool / timestamp (seconds) default */
    char *def_str;      /* string default */
    int has_min, has_max;
    double min, max;
    int n_categories;
    char **categories;  /* allowed values (strings as text; numbers as printed) */
    double *cat_num;    /* numeric categories (NaN for a non-numeric one) */
    inf__catset cat_set; /* lookups over categories / cat_num (catset.c) */
    int col;            /* its column */
} pinput;

typedef struct plookup {
    char *name;
    char *store;        /* URI, resolved against base_dir for sqlite */
    char *table;        /* sqlite table, or NULL */
    char *key_input;    /* input field holding the entity key */
    char *key_column;   /* store column / hash key (default = key_input) */
    char *prefix;       /* redis key prefix (default "<table or name>:") */
    int n_features;
    char **features;    /* store column names */
    int *feature_type;  /* inf_field_type (numeric only) */
    double *defaults;   /* NaN when no default */
    double max_age_s;   /* 0 = no limit */
    char *as_of;        /* column holding the value's time, or NULL */
    char *available_at; /* optional: when the value arrived in the store */
    int key_col;        /* column of the key input */
    int event_time_col; /* timestamp input used as "now" for max_age, or -1 (wall clock) */
    int first_col;      /* column of features[0] (consecutive) */
    int is_redis;
    int required;       /* reject records whose key is null, missing or stale */
} plookup;

struct xf_def;

#define XF_MAX_FROM 2

typedef struct pxf {
    char *name;
    const struct xf_def *def;
    int n_from;
    int from_col[XF_MAX_FROM];
    int from_kind;     /* kind of from[0] */
    int has_value;     /* comparisons: constant operand */
    double value;
    char *value_str;   /* equal on strings */
    double a, b;       /* standardize mean/std; min_max min/max; clip min/max */
    int has_a, has_b;
    double dflt;       /* ratio default, impute value */
    int n_edges;
    double *edges;     /* bucketize */
    int n_categories;
    char **categories; /* one_hot / ordinal */
    uint32_t *cat_len;
    double *cat_num;   /* numeric categories (numeric input) */
    inf__catset cat_set; /* lookups over categories / cat_num (catset.c) */
    int has_unknown;   /* one_hot: extra column for unknown/missing values */
    double unknown_value; /* ordinal: value for unknown */
    int64_t n_buckets; /* hash_bucket / bucketize fitting */
    int fit;           /* parameters to be learned by fit-spec (not yet known) */
    int max_categories, strategy_mean;
    int col;
    const cJSON *json; /* the transform's object in the spec (fit.c edits it) */
} pxf;

typedef struct pmodel_input {
    char *name;
    inf_dtype dtype;
    int n_cols;
    int *cols;         /* columns in order */
    int width;
    int model_index;   /* index of the model input */
} pmodel_input;

enum { OUT_VALUE = 0, OUT_THRESHOLD, OUT_ARGMAX, OUT_TOP_K };

typedef struct poutput {
    char *name;
    int op;
    char *from;
    int from_output;   /* model output index, or -1 when from a previous output field */
    int from_field;    /* previous output index */
    int index;         /* column of the model output, -1 = whole (1-D / [N,1]) */
    double value;      /* threshold */
    int k;             /* top_k */
    int n_labels;
    char **labels;     /* threshold: [below, above]; argmax/top_k: class labels */
    int default_cols;  /* default mapping: C columns named name_0.. */
} poutput;

struct inf_pipeline {
    char *name, *model_name, *model_version, *id_column;
    int id_is_string;  /* id_column is a declared input of type string */
    char hash[65];
    char *canonical;
    char *base_dir;
    int is_default;
    int policy;
    const inf_model *model;
    cJSON *json;       /* the parsed spec (kept for fit) */

    int n_inputs;
    pinput *inputs;
    int n_lookups;
    plookup *lookups;
    int n_xfs;
    pxf *xfs;
    int n_cols;
    pcol *cols;
    int n_num_slots, n_str_slots;
    int n_model_inputs;
    pmodel_input *model_inputs;
    int n_outputs;
    poutput *outputs;
    int n_passthrough;
    char **passthrough;
    int n_feature_cols;
    char **feature_col_names; /* flattened model-input columns */
    int fit_mode;      /* loaded as a fit template: unfitted transforms allowed */

    /* monitoring */
    _Atomic uint64_t n_records, n_rejected, n_lookups_done, n_lookup_missing;
    int n_field_stats;
    char **field_stat_names;
    _Atomic uint64_t *field_invalid, *field_rejected, *field_missing;
};

/* ---- spec.c ---- */
inf_status inf__pipeline_parse(cJSON *root, const inf_model *model, const inf_pipeline_options *opts,
                               int fit_mode, inf_pipeline **out, inf_error *err);
void inf__pipeline_sha256(const void *data, size_t len, uint8_t out[32]);
char *inf__pipeline_canonical_json(const cJSON *j); /* malloc'ed */

/* ---- transform.c ---- */
typedef struct xf_def {
    const char *op;
    int min_from, max_from;
    int accepts;      /* bit mask of (1 << COL_*) for from[0] */
    int fittable;
    /* reads the op's parameters from j into x (x->name, from resolved);
     * fit_mode allows fittable parameters to be absent.  Returns 0 or fills
     * msg (the path prefix is added by the caller) and returns -1. */
    int (*parse)(pxf *x, const cJSON *j, int fit_mode, char *msg, size_t msg_size);
    /* x0/x1: the from columns (numeric; NULL when absent); s0/l0: the string
     * column of from[0] when it is a string; out: width slots of stride cap. */
    void (*run)(const pxf *x, const double *x0, const double *x1, const char *const *s0, const uint32_t *l0,
                double *out, int n, int cap);
    int width_from_params; /* one_hot: width = categories (+1 unknown) */
} xf_def;

const xf_def *inf__xf_find(const char *op);
int inf__xf_width(const pxf *x);
/* Index of a category (string) or -1. */
int inf__xf_category(const pxf *x, const char *s, uint32_t len);

/* ---- lookup_*.c ---- */
typedef struct lookup_result {
    int n_keys, cap_keys;
    double *values; /* n_keys * n_features, NaN = missing */
    double *as_of;  /* epoch seconds, NaN = unknown */
    uint8_t *found;
} lookup_result;

typedef struct lookup_conn lookup_conn;
inf_status inf__lookup_open(const inf_pipeline *p, const plookup *lk, const char *history_uri, lookup_conn **out,
                            inf_error *err);
void inf__lookup_close(lookup_conn *c);
/* Fetches the latest values of n unique keys in one round trip. */
inf_status inf__lookup_fetch(lookup_conn *c, const char *const *keys, const uint32_t *lens, int n, lookup_result *res,
                             inf_error *err);
/* Point in time: key k as of t[k] (epoch seconds), one query per chunk. */
inf_status inf__lookup_fetch_as_of(lookup_conn *c, const char *const *keys, const uint32_t *lens, const double *t,
                                   int n, lookup_result *res, inf_error *err);
int inf__lookup_is_redis(const char *uri);
inf_status inf__lookup_result_reserve(lookup_result *r, int n_keys, int n_features);
void inf__lookup_result_free(lookup_result *r);

/* ---- exec.c (for fit.c) ---- */
/* The numeric slot array of column col for the last prepared batch (before
 * compaction of rejected rows: indexed by batch row), and whether row r
 * was accepted. */
const double *inf__exec_num(const inf_pipeline_exec *e, int col);
const char *const *inf__exec_str(const inf_pipeline_exec *e, int col, const uint32_t **lens);
int inf__exec_rows(const inf_pipeline_exec *e);
int inf__exec_row_ok(const inf_pipeline_exec *e, int row);

/* ---- map_outputs.c ---- */
/* A model output that is a sequence of maps, one {class -> score} map per
 * record (what ZipMap makes), seen as a dense [N, C] float32 tensor whose
 * column j is the map's j-th key.  The buffers grow to the largest batch and
 * the key names are rebuilt only when the keys change. */
typedef struct inf__map_columns {
    float *values;      /* N x C */
    size_t cap;         /* floats at values */
    inf_tensor dense;   /* a view over values */
    int n_keys;
    int string_keys;    /* keys are strings (else int64) */
    int64_t *int_keys;  /* the int64 keys */
    char **key_names;   /* the keys as text: column suffixes and labels */
} inf__map_columns;

/* 1 when t is a sequence whose items are maps. */
int inf__is_map_sequence(const inf_tensor *t);
/* Fills mc->dense from seq (n_rows maps with the same keys in the same order,
 * numeric values); `what` names the output in errors. */
inf_status inf__map_columns_fill(inf__map_columns *mc, const inf_tensor *seq, int n_rows, const char *what,
                                 inf_error *err);
void inf__map_columns_free(inf__map_columns *mc);

#endif /* INF_PIPELINE_INT_H */
