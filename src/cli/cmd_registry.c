/*
 * cmd_registry.c -- `infera registry <sub-command>`: the model registry from
 * the command line (docs/registry.md).  A table of sub-commands, each a thin
 * layer over include/infera/registry.h: parse flags, call the API, print the
 * result readably (or the API's JSON verbatim with --json).
 *
 * The registry location and the caller's token come from the global options
 * --home/--registry/--token, which main.c moves into INFERA_HOME,
 * INFERA_REGISTRY and INFERA_TOKEN (see cli_take_global_options), so every
 * command -- and cli_load_model -- sees the same registry.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "infera/io.h"
#include "infera/registry.h"
#include "monitor/baseline_store.h"

#define CMD "registry"
#define MAX_REPEAT 64

/* Fails with err's message on one line: a name or path quoted in it may hold
 * a newline or other control character, shown as '?'. */
static int fail_one_line(const inf_error *err) {
    char msg[sizeof err->message];
    snprintf(msg, sizeof msg, "%s", err->message);
    for (char *c = msg; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?';
    return cli_fail(CMD, "%s", msg);
}

/* Opens the registry from the environment; create for commands that write. */
static int open_registry(int create, inf_registry **out) {
    inf_registry_options o;
    inf_registry_options_from_env(&o);
    o.create = create;
    inf_error err;
    if (inf_registry_open(&o, out, &err)) return fail_one_line(&err);
    return 0;
}

static int api_fail(inf_registry *r, const inf_error *err) {
    inf_registry_free(r);
    return fail_one_line(err);
}

/* NAME@VERSION -> name, version; false with a message otherwise. */
static bool split_versioned(const char *ref, char name[129], int64_t *version) {
    const char *at = strchr(ref, '@');
    char *end;
    if (!at || at == ref || (size_t)(at - ref) > 128) return false;
    errno = 0;
    long long v = strtoll(at + 1, &end, 10);
    /* digits only, no overflow (strtoll clamps 10^23 to 2^63-1), at most 15 digits as the registry allows */
    if (at[1] < '0' || at[1] > '9' || end == at + 1 || *end || errno == ERANGE || v <= 0 || strlen(at + 1) > 15)
        return false;
    memcpy(name, ref, (size_t)(at - ref));
    name[at - ref] = '\0';
    *version = v;
    return true;
}

/* Positional arguments and --json, after the known flags were taken. */
typedef struct args {
    int n_pos;
    const char *pos[8];
    bool json;
} args;

/* Generic flag loop: flags[] names value flags; values land in vals[] (the
 * last one wins) or, for repeatable flags, in rep[]. */
typedef struct flag_spec {
    const char *name;
    bool repeat;
    bool boolean;
} flag_spec;

typedef struct flag_vals {
    const char *val[16];
    int n_rep[16];
    const char *rep[16][MAX_REPEAT];
    bool set[16];
} flag_vals;

static int parse(int argc, char **argv, const flag_spec *flags, int n_flags, flag_vals *fv, args *a) {
    memset(fv, 0, sizeof *fv);
    memset(a, 0, sizeof *a);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) {
            a->json = true;
            continue;
        }
        bool matched = false;
        for (int f = 0; f < n_flags && !matched; f++) {
            if (flags[f].boolean) {
                if (!strcmp(argv[i], flags[f].name)) fv->set[f] = matched = true;
                continue;
            }
            bool missing = false;
            const char *v = cli_flag_value(argc, argv, &i, flags[f].name, &missing);
            if (missing) return cli_usage(CMD, "%s needs a value", flags[f].name);
            if (!v) continue;
            matched = fv->set[f] = true;
            if (flags[f].repeat) {
                if (fv->n_rep[f] == MAX_REPEAT) return cli_usage(CMD, "too many %s options", flags[f].name);
                fv->rep[f][fv->n_rep[f]++] = v;
            } else {
                fv->val[f] = v;
            }
        }
        if (matched) continue;
        if (argv[i][0] == '-' && argv[i][1]) return cli_usage(CMD, "unknown option '%s' (try 'infera help registry')", argv[i]);
        if (a->n_pos == 8) return cli_usage(CMD, "too many arguments");
        a->pos[a->n_pos++] = argv[i];
    }
    return 0;
}

static int print_json_or(const char *json, bool raw, void (*human)(cJSON *)) {
    if (raw) {
        printf("%s\n", json);
        return 0;
    }
    cJSON *j = cJSON_Parse(json);
    if (!j) return cli_fail(CMD, "internal error: the registry returned invalid JSON");
    human(j);
    cJSON_Delete(j);
    return 0;
}

/* s as a JSON string literal (quoted, escaped), for the one-line objects
 * printed with --json; "null" when it cannot be built. */
static void print_json_string(const char *s) {
    cJSON *j = cJSON_CreateString(s ? s : "");
    char *text = j ? cJSON_PrintUnformatted(j) : NULL;
    fputs(text ? text : "null", stdout);
    cJSON_free(text);
    cJSON_Delete(j);
}

/* A string member, or NULL (opt) / "-" (str) when absent. */
static const char *opt(cJSON *o, const char *key) {
    cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static const char *str(cJSON *o, const char *key) {
    const char *s = opt(o, key);
    return s ? s : "-";
}

static double num(cJSON *o, const char *key) {
    cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

/* "float32[batch,32]" */
static void print_value_type(cJSON *vi) {
    printf("%s %s", str(vi, "name"), str(vi, "dtype"));
    cJSON *shape = cJSON_GetObjectItemCaseSensitive(vi, "shape");
    if (!cJSON_IsArray(shape)) {
        printf("[?]");
    } else {
        printf("[");
        int i = 0;
        for (cJSON *d = shape->child; d; d = d->next, i++) {
            if (cJSON_IsNumber(d)) printf("%s%lld", i ? "," : "", (long long)d->valuedouble);
            else printf("%s%s", i ? "," : "", d->valuestring);
        }
        printf("]");
    }
    if (strcmp(opt(vi, "kind") ? str(vi, "kind") : "tensor", "tensor")) printf(" (%s)", str(vi, "kind"));
}

static void print_string_list(cJSON *arr, const char *sep) {
    int i = 0;
    for (cJSON *c = cJSON_IsArray(arr) ? arr->child : NULL; c; c = c->next, i++)
        printf("%s%s", i ? sep : "", cJSON_IsString(c) ? c->valuestring : "?");
}

static void print_use(cJSON *u) {
    printf("%s %s", str(u, "kind"), opt(u, "source") ? str(u, "source") : "-");
    if (opt(u, "destination")) printf(" -> %s", str(u, "destination"));
    printf("  (%s, %s%s%s)\n", str(u, "ts"), str(u, "principal"), opt(u, "job_id") ? ", job " : "",
           opt(u, "job_id") ? str(u, "job_id") : "");
}

/* ---------------------------------------------------------------------------
 * register
 * ------------------------------------------------------------------------- */
static bool split_kv(const char *text, inf_registry_kv *kv, char *buf, size_t size) {
    const char *eq = strchr(text, '=');
    if (!eq || eq == text || (size_t)(eq - text) >= size) return false;
    memcpy(buf, text, (size_t)(eq - text));
    buf[eq - text] = '\0';
    kv->key = buf;
    kv->value = eq + 1;
    return true;
}

/* --baseline SRC: the baseline of the training data, computed through the
 * version just registered (its model and spec, as serve loads it) and stored
 * with it -- what `infera monitor baseline NAME@V --data SRC --register` does,
 * with the same code (monitor/baseline_data.c, baseline_store.c). */
static int register_baseline(const char *ref, const char *name, int64_t version, const char *src) {
    inf__rt_model m;
    memset(&m, 0, sizeof m);
    inf__rt_model_options mo = {0};
    mo.keep_registry = 1;
    inf_error e;
    inf__mon_profile *prof = NULL;
    int64_t n_rejected = 0;
    int rc = 1;
    char *text = NULL;
    cJSON *j = NULL;
    if (inf__rt_model_open(ref, &mo, &m, &e)) goto fail;
    if (inf__mon_profile_new(&prof)) {
        inf_error_set(&e, INF_ENOMEM, "out of memory");
        goto fail;
    }
    if (inf__mon_baseline_profile(&m, src, prof, &n_rejected, &e)) goto fail;
    if (n_rejected)
        fprintf(stderr, "infera registry: %lld records of %s rejected by the spec (not in the baseline)\n",
                (long long)n_rejected, src);
    if (!(j = inf__mon_profile_to_json(prof, m.name, m.version)) || !(text = cJSON_Print(j))) {
        inf_error_set(&e, INF_ENOMEM, "out of memory");
        goto fail;
    }
    if (inf__mon_baseline_store(m.registry, NULL, name, version, text, (int64_t)inf__mon_profile_rows(prof), &e))
        goto fail;
    fprintf(stderr, "infera registry: baseline of %s stored (%llu rows)\n", ref,
            (unsigned long long)inf__mon_profile_rows(prof));
    rc = 0;
    goto done;
fail:
    fprintf(stderr,
            "infera registry: %s is registered, but its baseline was not stored: %s (store it with `infera "
            "monitor baseline %s --data SRC --register`)\n",
            ref, e.message, ref);
done:
    free(text);
    cJSON_Delete(j);
    inf__mon_profile_free(prof);
    inf__rt_model_close(&m);
    return rc;
}

static int sub_register(int argc, char **argv) {
    static const flag_spec flags[] = {{"--pipeline", false, false},      {"--meta", true, false},
                                      {"--metric", true, false},         {"--description", false, false},
                                      {"--training-data", false, false}, {"--approved-use", true, false},
                                      {"--derived-from", false, false},  {"--baseline", false, false}};
    flag_vals fv;
    args a;
    int rc = parse(argc, argv, flags, 8, &fv, &a);
    if (rc) return rc;
    if (a.n_pos != 2) return cli_usage(CMD, "usage: infera registry register NAME MODEL [--pipeline SPEC] [...]");
    if (fv.val[7]) { /* the training data must be readable before anything is registered */
        inf_source *src;
        inf_source_options so = {0};
        inf_error e;
        if (inf_source_open(fv.val[7], &so, &src, &e)) return cli_fail(CMD, "--baseline %s", e.message);
        inf_source_close(src);
    }
    inf_registry_kv meta[MAX_REPEAT], metrics[MAX_REPEAT];
    static char keys[2][MAX_REPEAT][128];
    for (int i = 0; i < fv.n_rep[1]; i++)
        if (!split_kv(fv.rep[1][i], &meta[i], keys[0][i], sizeof keys[0][i]))
            return cli_usage(CMD, "--meta expects KEY=VALUE, got '%s'", fv.rep[1][i]);
    for (int i = 0; i < fv.n_rep[2]; i++)
        if (!split_kv(fv.rep[2][i], &metrics[i], keys[1][i], sizeof keys[1][i]))
            return cli_usage(CMD, "--metric expects KEY=NUMBER, got '%s'", fv.rep[2][i]);
    inf_registry_register_info info = {
        .model_path = a.pos[1],
        .pipeline_path = fv.val[0],
        .description = fv.val[3],
        .training_data = fv.val[4],
        .n_meta = fv.n_rep[1],
        .meta = meta,
        .n_metrics = fv.n_rep[2],
        .metrics = metrics,
        .n_approved_uses = fv.n_rep[5],
        .approved_uses = fv.rep[5],
        .derived_from = fv.val[6],
    };
    inf_registry *r;
    if ((rc = open_registry(1, &r))) return rc;
    inf_error err;
    int64_t version;
    if (inf_registry_register(r, a.pos[0], &info, &version, &err)) return api_fail(r, &err);
    char ref[160];
    snprintf(ref, sizeof ref, "%s@%lld", a.pos[0], (long long)version);
    inf_registry_resolved v;
    if (inf_registry_resolve(r, ref, &v, &err)) return api_fail(r, &err);
    if (a.json) {
        printf("{\"name\": ");
        print_json_string(v.name);
        printf(", \"version\": %lld, \"sha256\": \"%s\"}\n", (long long)v.version, v.sha256);
    } else
        printf("registered %s (sha256 %.16s...)\n", ref, v.sha256);
    inf_registry_resolved_clear(&v);
    inf_registry_free(r);
    return fv.val[7] ? register_baseline(ref, a.pos[0], version, fv.val[7]) : 0;
}

/* ---------------------------------------------------------------------------
 * list, show, versions, resolve, delete
 * ------------------------------------------------------------------------- */
static void human_list(cJSON *arr) {
    if (!cJSON_GetArraySize(arr)) {
        printf("no models registered\n");
        return;
    }
    printf("%-24s %-7s %-8s %-24s %s\n", "NAME", "LATEST", "VERSIONS", "UPDATED", "ALIASES");
    for (cJSON *m = arr->child; m; m = m->next) {
        cJSON *latest = cJSON_GetObjectItemCaseSensitive(m, "latest_version");
        char lv[24] = "-";
        if (cJSON_IsNumber(latest)) snprintf(lv, sizeof lv, "%lld", (long long)latest->valuedouble);
        printf("%-24s %-7s %-8lld %-24s ", str(m, "name"), lv, (long long)num(m, "live_versions"), str(m, "updated_at"));
        int i = 0;
        for (cJSON *al = cJSON_GetObjectItemCaseSensitive(m, "aliases")->child; al; al = al->next, i++)
            printf("%s%s->%lld", i ? ", " : "", al->string, (long long)al->valuedouble);
        printf("%s\n", i ? "" : "-");
    }
}

static void print_kv_object(const char *label, cJSON *obj) {
    if (!cJSON_IsObject(obj) || !obj->child) return;
    printf("  %-15s", label);
    int i = 0;
    for (cJSON *c = obj->child; c; c = c->next, i++) {
        if (cJSON_IsNumber(c)) printf("%s%s=%.6g", i ? "  " : "", c->string, c->valuedouble);
        else printf("%s%s=%s", i ? "  " : "", c->string, cJSON_IsString(c) ? c->valuestring : "?");
    }
    printf("\n");
}

static void human_show(cJSON *v) {
    printf("%s@%lld", str(v, "name"), (long long)num(v, "version"));
    cJSON *aliases = cJSON_GetObjectItemCaseSensitive(v, "aliases");
    if (cJSON_GetArraySize(aliases)) {
        printf("  (");
        int i = 0;
        for (cJSON *a = aliases->child; a; a = a->next, i++)
            printf("%s%s%s", i ? ", " : "", str(a, "alias"),
                   cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a, "protected")) ? " [protected]" : "");
        printf(")");
    }
    printf("\n");
    cJSON *del = cJSON_GetObjectItemCaseSensitive(v, "deleted");
    if (cJSON_IsObject(del)) {
        const char *reason = opt(del, "reason");
        printf("  %-15sDELETED at %s by %s%s%s%s\n", "status", str(del, "at"), str(del, "by"), reason ? " (" : "",
               reason ? reason : "", reason ? ")" : "");
    }
    if (opt(v, "description")) printf("  %-15s%s\n", "description", str(v, "description"));
    printf("  %-15s%s (%lld bytes, from %s)\n", "sha256", str(v, "sha256"), (long long)num(v, "size"), str(v, "source"));
    printf("  %-15s%s by %s\n", "created", str(v, "created_at"), str(v, "created_by"));
    printf("  %-15s%s\n", "training data", opt(v, "training_data") ? str(v, "training_data") : "-");
    cJSON *uses = cJSON_GetObjectItemCaseSensitive(v, "approved_uses");
    printf("  %-15s", "approved uses");
    if (cJSON_GetArraySize(uses)) print_string_list(uses, "; ");
    else printf("-");
    printf("\n");
    print_kv_object("metrics", cJSON_GetObjectItemCaseSensitive(v, "metrics"));
    print_kv_object("meta", cJSON_GetObjectItemCaseSensitive(v, "meta"));
    cJSON *sig = cJSON_GetObjectItemCaseSensitive(v, "signature");
    const char *labels[2] = {"inputs", "outputs"};
    if (str(sig, "kind") && !strcmp(str(sig, "kind"), "gguf")) { /* a GGUF language model */
        printf("  %-15s%s, context %lld, vocabulary %lld, weights %s, %lld parameters\n", "language model",
               str(sig, "architecture"), (long long)num(sig, "context_length"), (long long)num(sig, "vocab_size"),
               str(sig, "weight_type"), (long long)num(sig, "n_params"));
        sig = NULL;
    }
    for (int k = 0; k < 2 && sig; k++) {
        int i = 0;
        for (cJSON *x = cJSON_GetObjectItemCaseSensitive(sig, labels[k])->child; x; x = x->next, i++) {
            printf("  %-15s", i ? "" : labels[k]);
            print_value_type(x);
            printf("\n");
        }
    }
    cJSON *ops = cJSON_GetObjectItemCaseSensitive(sig, "opsets");
    int i = 0;
    if (sig) {
        printf("  %-15s", "opsets");
        for (cJSON *o = ops ? ops->child : NULL; o; o = o->next, i++)
            printf("%s%s %lld", i ? ", " : "", str(o, "domain"), (long long)num(o, "version"));
        printf("; %lld nodes, %lld parameters\n", (long long)num(sig, "nodes"), (long long)num(sig, "parameters"));
    }
    cJSON *p = cJSON_GetObjectItemCaseSensitive(v, "pipeline");
    if (cJSON_IsObject(p)) {
        printf("  %-15s%s (sha256 %.16s...)\n", "pipeline", opt(p, "name") ? str(p, "name") : "(unnamed)",
               str(p, "sha256") ? str(p, "sha256") : "?");
        printf("  %-15s", "");
        printf("%d inputs", cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(p, "inputs")));
        cJSON *sens = cJSON_GetObjectItemCaseSensitive(p, "sensitive");
        if (cJSON_GetArraySize(sens)) {
            printf(" (sensitive: ");
            print_string_list(sens, ", ");
            printf(")");
        }
        printf(", %d lookups, %d features -> ", cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(p, "lookups")),
               cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(p, "features")));
        print_string_list(cJSON_GetObjectItemCaseSensitive(p, "model_inputs"), ", ");
        printf("; outputs ");
        print_string_list(cJSON_GetObjectItemCaseSensitive(p, "outputs"), ", ");
        printf("\n");
    } else {
        printf("  %-15s%s\n", "pipeline", "none (default mapping)");
    }
    if (opt(cJSON_GetObjectItemCaseSensitive(v, "lineage"), "derived_from"))
        printf("  %-15s%s\n", "derived from", str(cJSON_GetObjectItemCaseSensitive(v, "lineage"), "derived_from"));
    cJSON *used = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(v, "lineage"), "used_by");
    i = 0;
    for (cJSON *u = used ? used->child : NULL; u; u = u->next, i++) {
        printf("  %-15s", i ? "" : "used by");
        print_use(u);
    }
    if (!i) printf("  %-15s-\n", "used by");
}

static void human_versions(cJSON *arr) {
    printf("%-8s %-24s %-18s %-18s %s\n", "VERSION", "CREATED", "BY", "SHA256", "ALIASES / STATUS");
    for (cJSON *v = arr->child; v; v = v->next) {
        printf("%-8lld %-24s %-18s %.16s   ", (long long)num(v, "version"), str(v, "created_at"), str(v, "created_by"),
               str(v, "sha256"));
        int i = 0;
        for (cJSON *a = cJSON_GetObjectItemCaseSensitive(v, "aliases")->child; a; a = a->next, i++)
            printf("%s%s%s", i ? ", " : "", str(a, "alias"),
                   cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a, "protected")) ? "*" : "");
        if (cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(v, "deleted"))) printf("%sdeleted", i ? "; " : "");
        else if (!i) printf("-");
        printf("\n");
    }
}

/* Parses argv (flags as in parse) for a sub-command taking n_pos positional
 * arguments, the first NAME@VERSION (split into name and *version); usage
 * otherwise.  Returns 0, or the exit code. */
static int parse_versioned(int argc, char **argv, const flag_spec *flags, int n_flags, int n_pos, const char *usage,
                           flag_vals *fv, args *a, char name[129], int64_t *version) {
    int rc = parse(argc, argv, flags, n_flags, fv, a);
    if (rc) return rc;
    if (a->n_pos != n_pos) return cli_usage(CMD, "%s", usage);
    if (!split_versioned(a->pos[0], name, version)) {
        const char *at = strchr(a->pos[0], '@');
        if (at && strlen(at + 1) > 15 && strspn(at + 1, "0123456789") == strlen(at + 1))
            return cli_usage(CMD, "version in '%.200s' is out of range (at most 15 digits)", a->pos[0]);
        return cli_usage(CMD, "%s", usage);
    }
    return 0;
}

/* The start of a sub-command with no flags but --json and exactly n_pos
 * positional arguments: parses argv (usage when the count differs) and opens
 * the registry for reading.  Returns 0 with *r open, or the exit code. */
static int begin_simple(int argc, char **argv, int n_pos, const char *usage, args *a, inf_registry **r) {
    flag_vals fv;
    int rc = parse(argc, argv, NULL, 0, &fv, a);
    if (rc) return rc;
    if (a->n_pos != n_pos) return cli_usage(CMD, "%s", usage);
    return open_registry(0, r);
}

/* The tail of every sub-command whose query returns JSON: reports a failed
 * query (st, err), else prints json (verbatim when raw, else through human),
 * then frees json and closes r.  Returns the exit code. */
static int finish_json(inf_registry *r, inf_status st, char *json, const inf_error *err, bool raw,
                       void (*human)(cJSON *)) {
    if (st) return api_fail(r, err);
    int rc = print_json_or(json, raw, human);
    inf_registry_string_free(json);
    inf_registry_free(r);
    return rc;
}

typedef inf_status (*json_query_fn)(inf_registry *r, const char *arg, char **out, inf_error *err);

/* `infera registry SUB [ARG] [--json]`: no flags but --json, exactly n_pos
 * positional arguments (else usage), one query given the first of them
 * (NULL when n_pos is 0). */
static int run_json_query(int argc, char **argv, int n_pos, const char *usage, json_query_fn query,
                          void (*human)(cJSON *)) {
    args a;
    inf_registry *r;
    int rc = begin_simple(argc, argv, n_pos, usage, &a, &r);
    if (rc) return rc;
    inf_error err;
    char *json = NULL;
    inf_status st = query(r, n_pos ? a.pos[0] : NULL, &json, &err);
    return finish_json(r, st, json, &err, a.json, human);
}

static inf_status list_json(inf_registry *r, const char *arg, char **out, inf_error *err) {
    (void)arg;
    return inf_registry_list_json(r, out, err);
}

static int sub_list(int argc, char **argv) {
    return run_json_query(argc, argv, 0, "usage: infera registry list [--json]", list_json, human_list);
}

static int sub_show(int argc, char **argv) {
    return run_json_query(argc, argv, 1, "usage: infera registry show NAME[@VERSION|@ALIAS] [--json]",
                          inf_registry_show_json, human_show);
}

static int sub_versions(int argc, char **argv) {
    return run_json_query(argc, argv, 1, "usage: infera registry versions NAME [--json]", inf_registry_versions_json,
                          human_versions);
}

static int sub_resolve(int argc, char **argv) {
    args a;
    inf_registry *r;
    int rc = begin_simple(argc, argv, 1, "usage: infera registry resolve REF [--json]", &a, &r);
    if (rc) return rc;
    inf_error err;
    inf_registry_resolved v;
    if (inf_registry_resolve(r, a.pos[0], &v, &err)) return api_fail(r, &err);
    if (a.json) { /* the artifact path comes from --home / INFERA_ARTIFACTS: any characters */
        printf("{\"name\": ");
        print_json_string(v.name);
        printf(", \"version\": %lld, \"sha256\": \"%s\", \"artifact\": ", (long long)v.version, v.sha256);
        print_json_string(v.artifact_path);
        printf("}\n");
    } else
        printf("%s@%lld %s\n", v.name, (long long)v.version, v.artifact_path);
    inf_registry_resolved_clear(&v);
    inf_registry_free(r);
    return 0;
}

static int sub_delete(int argc, char **argv) {
    static const flag_spec flags[] = {{"--reason", false, false}};
    flag_vals fv;
    args a;
    char name[129];
    int64_t version = 0;
    int rc = parse_versioned(argc, argv, flags, 1, 1, "usage: infera registry delete NAME@VERSION [--reason TEXT]", &fv,
                             &a, name, &version);
    if (rc) return rc;
    inf_registry *r;
    if ((rc = open_registry(0, &r))) return rc;
    inf_error err;
    if (inf_registry_delete(r, name, version, fv.val[0], &err)) return api_fail(r, &err);
    printf("deleted %s@%lld (soft: kept for audit and lineage)\n", name, (long long)version);
    inf_registry_free(r);
    return 0;
}

/* ---------------------------------------------------------------------------
 * aliases
 * ------------------------------------------------------------------------- */
static int sub_alias(int argc, char **argv) {
    static const flag_spec flags[] = {{"--protect", false, true}, {"--unprotect", false, true}};
    flag_vals fv;
    args a;
    char name[129];
    int64_t version = 0;
    int rc = parse_versioned(argc, argv, flags, 2, 2,
                             "usage: infera registry alias NAME@VERSION ALIAS [--protect|--unprotect]", &fv, &a, name,
                             &version);
    if (rc) return rc;
    if (fv.set[0] && fv.set[1]) return cli_usage(CMD, "--protect and --unprotect exclude each other");
    inf_registry *r;
    if ((rc = open_registry(0, &r))) return rc;
    inf_error err;
    if (inf_registry_alias_set(r, name, version, a.pos[1], fv.set[0] ? 1 : fv.set[1] ? 0 : -1, &err))
        return api_fail(r, &err);
    printf("%s@%s -> %lld%s\n", name, a.pos[1], (long long)version, fv.set[0] ? " (protected)" : "");
    inf_registry_free(r);
    return 0;
}

static int sub_unalias(int argc, char **argv) {
    args a;
    inf_registry *r;
    int rc = begin_simple(argc, argv, 2, "usage: infera registry unalias NAME ALIAS", &a, &r);
    if (rc) return rc;
    inf_error err;
    if (inf_registry_alias_remove(r, a.pos[0], a.pos[1], &err)) return api_fail(r, &err);
    printf("removed alias %s@%s\n", a.pos[0], a.pos[1]);
    inf_registry_free(r);
    return 0;
}

/* ---------------------------------------------------------------------------
 * access control
 * ------------------------------------------------------------------------- */
static int sub_grant_revoke(int argc, char **argv, bool grant) {
    static const flag_spec flags[] = {{"--model", false, false}};
    flag_vals fv;
    args a;
    int rc = parse(argc, argv, flags, 1, &fv, &a);
    if (rc) return rc;
    if (a.n_pos != 2) return cli_usage(CMD, "usage: infera registry %s PRINCIPAL ROLE [--model NAME]", argv[0]);
    inf_registry *r;
    if ((rc = open_registry(grant, &r))) return rc;
    inf_error err;
    if ((grant ? inf_registry_grant : inf_registry_revoke)(r, a.pos[0], a.pos[1], fv.val[0], &err))
        return api_fail(r, &err);
    printf("%s %s %s %s %s%s\n", grant ? "granted" : "revoked", a.pos[1], grant ? "to" : "from", a.pos[0],
           fv.val[0] ? "on model " : "globally", fv.val[0] ? fv.val[0] : "");
    inf_registry_free(r);
    return 0;
}

static int sub_grant(int argc, char **argv) { return sub_grant_revoke(argc, argv, true); }
static int sub_revoke(int argc, char **argv) { return sub_grant_revoke(argc, argv, false); }

static void human_tokens(cJSON *arr) {
    printf("%-20s %-40s %s\n", "PRINCIPAL", "ROLES", "TOKENS");
    for (cJSON *p = arr->child; p; p = p->next) {
        char roles[400] = "";
        size_t o = 0;
        for (cJSON *g = cJSON_GetObjectItemCaseSensitive(p, "roles")->child; g && o < sizeof roles; g = g->next)
            o += (size_t)snprintf(roles + o, sizeof roles - o, "%s%s%s%s", o ? ", " : "", str(g, "role"),
                                  strcmp(str(g, "scope"), "global") ? " on " : "",
                                  strcmp(str(g, "scope"), "global") ? str(g, "scope") : "");
        printf("%-20s %-40s ", str(p, "principal"), o ? roles : "-");
        int i = 0;
        for (cJSON *t = cJSON_GetObjectItemCaseSensitive(p, "tokens")->child; t; t = t->next, i++)
            printf("%s%s (%s)", i ? ", " : "", str(t, "id"), opt(t, "revoked_at") ? "revoked" : "live");
        printf("%s\n", i ? "" : "-");
    }
}

static int sub_token(int argc, char **argv) {
    static const flag_spec flags[] = {{"--role", false, false}, {"--model", false, false}, {"--id", false, false}};
    flag_vals fv;
    args a;
    int rc = parse(argc, argv, flags, 3, &fv, &a);
    if (rc) return rc;
    const char *usage = "usage: infera registry token create PRINCIPAL [--role ROLE [--model NAME]] | "
                        "token list [PRINCIPAL] [--json] | token revoke PRINCIPAL [--id TOKEN_ID]";
    if (a.n_pos < 1) return cli_usage(CMD, "%s", usage);
    inf_registry *r;
    inf_error err;
    if (!strcmp(a.pos[0], "create") && a.n_pos == 2) {
        if (fv.val[1] && !fv.val[0]) return cli_usage(CMD, "token create: --model needs --role");
        if ((rc = open_registry(1, &r))) return rc;
        char token[INF_REGISTRY_TOKEN_MAX], id[32];
        if (inf_registry_token_create(r, a.pos[1], fv.val[0], fv.val[1], token, id, &err)) return api_fail(r, &err);
        /* the token goes to stdout only, once */
        if (a.json) {
            printf("{\"principal\": ");
            print_json_string(a.pos[1]);
            printf(", \"id\": \"%s\", \"token\": \"%s\"}\n", id, token);
        } else {
            printf("%s\n", token);
        }
        memset(token, 0, sizeof token);
    } else if (!strcmp(a.pos[0], "list") && a.n_pos <= 2) {
        if ((rc = open_registry(0, &r))) return rc;
        char *json = NULL;
        inf_status st = inf_registry_tokens_json(r, a.n_pos == 2 ? a.pos[1] : NULL, &json, &err);
        return finish_json(r, st, json, &err, a.json, human_tokens);
    } else if (!strcmp(a.pos[0], "revoke") && a.n_pos == 2) {
        if ((rc = open_registry(0, &r))) return rc;
        int n;
        if (inf_registry_token_revoke(r, a.pos[1], fv.val[2], &n, &err)) return api_fail(r, &err);
        printf("revoked %d token%s of %s\n", n, n == 1 ? "" : "s", a.pos[1]);
    } else {
        return cli_usage(CMD, "%s", usage);
    }
    inf_registry_free(r);
    return rc;
}

static int sub_auth(int argc, char **argv) {
    flag_vals fv;
    args a;
    int rc = parse(argc, argv, NULL, 0, &fv, &a);
    if (rc) return rc;
    if (a.n_pos != 1 || (strcmp(a.pos[0], "enable") && strcmp(a.pos[0], "status")))
        return cli_usage(CMD, "usage: infera registry auth enable|status");
    inf_registry *r;
    if ((rc = open_registry(!strcmp(a.pos[0], "enable"), &r))) return rc;
    inf_error err;
    if (!strcmp(a.pos[0], "enable") && inf_registry_auth_enable(r, &err)) return api_fail(r, &err);
    const char *who = inf_registry_principal(r);
    printf("registry %s: auth %s; you are %s\n", inf_registry_location(r),
           inf_registry_auth_enabled(r) ? "enabled" : "disabled (anyone with access to it may do anything)",
           who ? who : "not authenticated");
    inf_registry_free(r);
    return 0;
}

/* ---------------------------------------------------------------------------
 * quotas (enforced by `infera serve`)
 * ------------------------------------------------------------------------- */
static int parse_rate(const char *flag, const char *v, double *out) {
    char *end;
    *out = v ? strtod(v, &end) : 0;
    if (v && (end == v || *end || !(*out >= 0) || *out > 1e12))
        return cli_usage(CMD, "quota set: %s must be a number >= 0; got '%s'", flag, v);
    return 0;
}

static int sub_quota(int argc, char **argv) {
    static const flag_spec flags[] = {{"--rps", false, false}, {"--rows-per-s", false, false}, {"--burst-s", false, false}};
    flag_vals fv;
    args a;
    int rc = parse(argc, argv, flags, 3, &fv, &a);
    if (rc) return rc;
    const char *usage = "usage: infera registry quota set PRINCIPAL [--rps N] [--rows-per-s N] [--burst-s S] | "
                        "quota remove PRINCIPAL | quota list [--json]   (PRINCIPAL: a name, 'anonymous' or '*')";
    inf_registry *r;
    inf_error err;
    if (a.n_pos == 2 && !strcmp(a.pos[0], "set")) {
        inf_registry_quota q = {0};
        snprintf(q.principal, sizeof q.principal, "%s", a.pos[1]);
        if ((rc = parse_rate("--rps", fv.val[0], &q.requests_per_s)) ||
            (rc = parse_rate("--rows-per-s", fv.val[1], &q.rows_per_s)) ||
            (rc = parse_rate("--burst-s", fv.val[2], &q.burst_s)))
            return rc;
        if ((rc = open_registry(1, &r))) return rc;
        if (inf_registry_quota_set(r, &q, &err)) return api_fail(r, &err);
        printf("quota of %s: %g requests/s, %g rows/s (0 = no limit), burst %g s\n", q.principal, q.requests_per_s,
               q.rows_per_s, q.burst_s > 0 ? q.burst_s : 1.0);
    } else if (a.n_pos == 2 && !strcmp(a.pos[0], "remove")) {
        if ((rc = open_registry(0, &r))) return rc;
        if (inf_registry_quota_remove(r, a.pos[1], &err)) return api_fail(r, &err);
        printf("removed the quota of %s\n", a.pos[1]);
    } else if (a.n_pos == 1 && !strcmp(a.pos[0], "list")) {
        if ((rc = open_registry(0, &r))) return rc;
        inf_registry_quota *q;
        int n;
        if (inf_registry_quotas(r, &q, &n, &err)) return api_fail(r, &err);
        if (a.json) printf("[");
        else printf("%-24s %14s %14s %8s\n", "PRINCIPAL", "REQUESTS/S", "ROWS/S", "BURST_S");
        for (int i = 0; i < n; i++) {
            if (a.json) {
                printf("%s{\"principal\": ", i ? ", " : "");
                print_json_string(q[i].principal);
                printf(", \"requests_per_s\": %.17g, \"rows_per_s\": %.17g, \"burst_s\": %.17g}", q[i].requests_per_s,
                       q[i].rows_per_s, q[i].burst_s);
            } else {
                printf("%-24s %14g %14g %8g\n", q[i].principal, q[i].requests_per_s, q[i].rows_per_s, q[i].burst_s);
            }
        }
        if (a.json) printf("]\n");
        inf_registry_quotas_free(q);
    } else {
        return cli_usage(CMD, "%s", usage);
    }
    inf_registry_free(r);
    return 0;
}

/* ---------------------------------------------------------------------------
 * audit
 * ------------------------------------------------------------------------- */
static void human_audit(cJSON *arr) {
    for (cJSON *e = arr->child; e; e = e->next) {
        char target[200] = "-";
        cJSON *v = cJSON_GetObjectItemCaseSensitive(e, "version");
        if (opt(e, "model")) {
            if (cJSON_IsNumber(v)) snprintf(target, sizeof target, "%s@%lld", str(e, "model"), (long long)v->valuedouble);
            else snprintf(target, sizeof target, "%s", str(e, "model"));
        }
        char *detail = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(e, "detail"));
        printf("%6lld %s %-16s %-12s %-20s %-7s %s\n", (long long)num(e, "seq"), str(e, "ts"), str(e, "principal"),
               str(e, "action"), target, str(e, "outcome"), detail ? detail : "");
        cJSON_free(detail);
    }
}

static int sub_audit(int argc, char **argv) {
    static const flag_spec flags[] = {{"--model", false, false}, {"--since", false, false}, {"--limit", false, false}};
    flag_vals fv;
    args a;
    int rc = parse(argc, argv, flags, 3, &fv, &a);
    if (rc) return rc;
    inf_registry *r;
    inf_error err;
    if (a.n_pos == 1 && !strcmp(a.pos[0], "verify")) {
        if ((rc = open_registry(0, &r))) return rc;
        inf_registry_audit_report rep;
        inf_status st = inf_registry_audit_verify(r, &rep, &err);
        if (st) return api_fail(r, &err);
        if (a.json)
            printf("{\"intact\": true, \"records\": %lld, \"head\": \"%s\"}\n", (long long)rep.n_records, rep.head_hash);
        else
            printf("audit log intact: %lld records, head %s\n", (long long)rep.n_records, rep.head_hash);
        inf_registry_free(r);
        return 0;
    }
    if (a.n_pos) return cli_usage(CMD, "usage: infera registry audit [--model NAME] [--since TIME] [--limit N] [--json] | audit verify");
    inf_registry_audit_filter f = {.model = fv.val[0], .since = fv.val[1]};
    if (fv.val[2] && !cli_parse_int(CMD, "--limit", fv.val[2], 1, 1 << 30, &f.limit)) return 2;
    if ((rc = open_registry(0, &r))) return rc;
    char *json = NULL;
    inf_status st = inf_registry_audit_json(r, &f, &json, &err);
    return finish_json(r, st, json, &err, a.json, human_audit);
}

/* ---------------------------------------------------------------------------
 * lineage, and records from runners outside infera
 * ------------------------------------------------------------------------- */
static void human_lineage(cJSON *root) {
    printf("%s\n", str(root, "name"));
    for (cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "versions")->child; v; v = v->next) {
        printf("  v%-4lld trained on %s%s\n", (long long)num(v, "version"),
               opt(v, "training_data") ? str(v, "training_data") : "(not recorded)",
               cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "deleted")) ? "  [deleted]" : "");
        if (opt(v, "derived_from")) printf("         derived from %s\n", str(v, "derived_from"));
        for (cJSON *u = cJSON_GetObjectItemCaseSensitive(v, "used_by")->child; u; u = u->next) {
            printf("         used by ");
            print_use(u);
        }
    }
}

static void human_table_lineage(cJSON *root) {
    cJSON *w = cJSON_GetObjectItemCaseSensitive(root, "writers");
    if (!cJSON_GetArraySize(w)) {
        printf("no registered model version wrote into %s\n", str(root, "table"));
        return;
    }
    printf("%s was written by:\n", str(root, "table"));
    for (cJSON *u = w->child; u; u = u->next) {
        printf("  %s@%lld  ", str(u, "name"), (long long)num(u, "version"));
        print_use(u);
    }
}

static int sub_lineage(int argc, char **argv) {
    static const flag_spec flags[] = {{"--table", false, false}};
    flag_vals fv;
    args a;
    int rc = parse(argc, argv, flags, 1, &fv, &a);
    if (rc) return rc;
    if ((a.n_pos != 1) == !fv.val[0])
        return cli_usage(CMD, "usage: infera registry lineage NAME[@VERSION|@ALIAS] [--json] | lineage --table DST");
    inf_registry *r;
    if ((rc = open_registry(0, &r))) return rc;
    inf_error err;
    char *json = NULL;
    inf_status st = fv.val[0] ? inf_registry_table_lineage_json(r, fv.val[0], &json, &err)
                              : inf_registry_lineage_json(r, a.pos[0], &json, &err);
    return finish_json(r, st, json, &err, a.json, fv.val[0] ? human_table_lineage : human_lineage);
}

static int sub_record_use(int argc, char **argv) {
    static const flag_spec flags[] = {{"--kind", false, false}, {"--source", false, false}, {"--destination", false, false}, {"--job", false, false}};
    flag_vals fv;
    args a;
    int rc = parse(argc, argv, flags, 4, &fv, &a);
    if (rc) return rc;
    if (a.n_pos != 1 || !fv.val[0])
        return cli_usage(CMD, "usage: infera registry record-use REF --kind batch|stream|serve [--source S] "
                              "[--destination D] [--job ID]");
    inf_registry *r;
    if ((rc = open_registry(0, &r))) return rc;
    inf_error err;
    inf_registry_resolved v;
    if (inf_registry_resolve(r, a.pos[0], &v, &err)) return api_fail(r, &err);
    inf_registry_resolved_clear(&v);
    inf_registry_use u = {v.name, v.version, fv.val[0], fv.val[1], fv.val[2], fv.val[3]};
    if (inf_registry_record_use(r, &u, &err)) return api_fail(r, &err);
    printf("recorded %s use of %s@%lld\n", fv.val[0], v.name, (long long)v.version);
    inf_registry_free(r);
    return 0;
}

static int sub_record_prediction(int argc, char **argv) {
    static const flag_spec flags[] = {{"--mode", false, false}, {"--source", false, false}, {"--destination", false, false}, {"--rows", false, false}, {"--inputs", false, false}, {"--job", false, false}};
    flag_vals fv;
    args a;
    int rc = parse(argc, argv, flags, 6, &fv, &a);
    if (rc) return rc;
    int rows = 0;
    if (a.n_pos != 1 || !fv.val[3])
        return cli_usage(CMD, "usage: infera registry record-prediction REF --rows N [--mode M] [--source S] "
                              "[--destination D] [--inputs FILE] [--job ID]");
    if (!cli_parse_int(CMD, "--rows", fv.val[3], 0, 2147483647, &rows)) return 2;
    char digest[65] = "";
    if (fv.val[4]) { /* digest of the input file, never its content */
        int fd;
        uint64_t size;
        inf_error ferr;
        if (inf_file_open(fv.val[4], "inputs", 0, &fd, &size, &ferr)) return cli_fail(CMD, "%s", ferr.message);
        FILE *f = fdopen(fd, "rb");
        if (!f) {
            close(fd);
            return cli_fail(CMD, "cannot open inputs %s: %s", fv.val[4], strerror(errno));
        }
        inf_sha256 c;
        unsigned char buf[65536], d[32];
        size_t n;
        inf_sha256_init(&c);
        while ((n = fread(buf, 1, sizeof buf, f)) > 0) inf_sha256_update(&c, buf, n);
        fclose(f);
        inf_sha256_final(&c, d);
        inf_sha256_to_hex(d, digest);
    }
    inf_registry *r;
    if ((rc = open_registry(0, &r))) return rc;
    inf_error err;
    inf_registry_resolved v;
    if (inf_registry_resolve(r, a.pos[0], &v, &err)) return api_fail(r, &err);
    inf_registry_resolved_clear(&v);
    inf_registry_prediction p = {v.name,  v.version, fv.val[0] ? fv.val[0] : "external", fv.val[1], fv.val[2], rows,
                                 digest[0] ? digest : NULL, fv.val[5]};
    if (inf_registry_audit_prediction(r, &p, &err)) return api_fail(r, &err);
    printf("recorded prediction of %d rows by %s@%lld\n", rows, v.name, (long long)v.version);
    inf_registry_free(r);
    return 0;
}

/* ---------------------------------------------------------------------------
 * The sub-command table
 * ------------------------------------------------------------------------- */
static const struct sub {
    const char *name;
    int (*fn)(int argc, char **argv);
} subs[] = {
    {"register", sub_register},   {"list", sub_list},       {"show", sub_show},
    {"versions", sub_versions},   {"resolve", sub_resolve}, {"delete", sub_delete},
    {"alias", sub_alias},         {"unalias", sub_unalias}, {"grant", sub_grant},
    {"revoke", sub_revoke},       {"token", sub_token},     {"auth", sub_auth},
    {"audit", sub_audit},         {"lineage", sub_lineage}, {"record-use", sub_record_use},
    {"record-prediction", sub_record_prediction}, {"quota", sub_quota},
};

int cmd_registry(int argc, char **argv) {
    if (argc < 2) return cli_usage(CMD, "missing sub-command (try 'infera help registry')");
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++)
        if (!strcmp(argv[1], subs[i].name)) return subs[i].fn(argc - 1, argv + 1);
    return cli_usage(CMD, "unknown sub-command '%s' (try 'infera help registry')", argv[1]);
}
