/*
 * cmd_batch.c -- `infera batch`: score a table or file into another
 * (shared/DESIGN.md §4, docs/batch.md).
 *
 *   infera batch --model REF --input SRC --output DST [--id-column COL] [--threads N] [--resume]
 *                [--mode append|replace|upsert] [--errors DST] [--max-error-rate R]
 *                [--progress bar|json|none] [--home DIR] [--registry URL] [--job-id ID]
 *                [--shard K/N] [--pipeline SPEC] [--chunk-rows N] [--checkpoint-ms N] [--no-score]
 *                [--log-predictions DST [--log-sample F]]
 *
 * This file: options, the job's set-up (model, checkpoint, targets opened in
 * the right mode for a fresh start or a resume) and lineage; the summary is
 * summary.c.
 * The work itself is runner.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "batch/batch_int.h"
#include "monitor/predlog.h"
#include "cli/cli.h"

#define CMD "batch"

typedef struct batch_opts {
    const char *model, *input, *output, *errors, *id_column, *mode, *progress, *home, *registry, *job_id,
        *shard, *pipeline, *log_predictions;
    int threads, chunk_rows, checkpoint_ms, resume, no_score;
    int precision; /* session option precision (--precision) */
    double max_error_rate, log_sample;
} batch_opts;

static int parse_args(int argc, char **argv, batch_opts *o) {
    memset(o, 0, sizeof o[0]);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    o->threads = ncpu > 0 ? (ncpu > 8 ? 8 : (int)ncpu) : 1;
    o->chunk_rows = 2048;
    o->checkpoint_ms = 200;
    o->max_error_rate = -1;
    o->log_sample = 1.0;
    struct {
        const char *flag;
        const char **dst;
    } strs[] = {
        {"--model", &o->model},     {"--input", &o->input},       {"--output", &o->output},
        {"--errors", &o->errors},   {"--id-column", &o->id_column}, {"--mode", &o->mode},
        {"--progress", &o->progress}, {"--home", &o->home},       {"--registry", &o->registry},
        {"--job-id", &o->job_id},   {"--shard", &o->shard},       {"--pipeline", &o->pipeline},
        {"--log-predictions", &o->log_predictions},
    };
    for (int i = 1; i < argc; i++) {
        bool missing = false;
        const char *v;
        int matched = 0;
        for (size_t k = 0; k < sizeof strs / sizeof strs[0] && !matched; k++) {
            int j = i;
            if ((v = cli_flag_value(argc, argv, &j, strs[k].flag, &missing)) || missing) {
                if (missing) return cli_usage(CMD, "%s needs a value", strs[k].flag);
                *strs[k].dst = v;
                i = j;
                matched = 1;
            }
        }
        if (matched) continue;
        int j = i;
        if ((v = cli_flag_value(argc, argv, &j, "--threads", &missing)) || missing) {
            if (missing || !cli_parse_int(CMD, "--threads", v, 1, 256, &o->threads)) return 2;
            i = j;
        } else if ((v = cli_flag_value(argc, argv, &j, "--precision", &missing)) || missing) {
            if (missing || !cli_parse_precision(CMD, v, &o->precision))
                return missing ? cli_usage(CMD, "--precision needs a value") : 2;
            i = j;
        } else if ((v = cli_flag_value(argc, argv, &j, "--chunk-rows", &missing)) || missing) {
            if (missing || !cli_parse_int(CMD, "--chunk-rows", v, 1, 1 << 20, &o->chunk_rows)) return 2;
            i = j;
        } else if ((v = cli_flag_value(argc, argv, &j, "--checkpoint-ms", &missing)) || missing) {
            if (missing) return cli_usage(CMD, "--checkpoint-ms needs a value");
            if (!strcmp(v, "0")) o->checkpoint_ms = 0;
            else if (!cli_parse_int(CMD, "--checkpoint-ms", v, 0, 3600000, &o->checkpoint_ms)) return 2;
            i = j;
        } else if ((v = cli_flag_value(argc, argv, &j, "--max-error-rate", &missing)) || missing) {
            char *end;
            o->max_error_rate = missing ? -1 : strtod(v, &end);
            if (missing || *end || !(o->max_error_rate >= 0 && o->max_error_rate <= 1))
                return cli_usage(CMD, "--max-error-rate needs a fraction between 0 and 1 (got '%s')", v ? v : "");
            i = j;
        } else if ((v = cli_flag_value(argc, argv, &j, "--log-sample", &missing)) || missing) {
            char *end;
            o->log_sample = missing ? -1 : strtod(v, &end);
            if (missing || *end || !(o->log_sample > 0 && o->log_sample <= 1))
                return cli_usage(CMD, "--log-sample needs a fraction in (0, 1] (got '%s')", v ? v : "");
            i = j;
        } else if (!strcmp(argv[i], "--resume")) {
            o->resume = 1;
        } else if (!strcmp(argv[i], "--no-score")) {
            o->no_score = 1;
        } else {
            return cli_unexpected(CMD, argv[i]);
        }
    }
    int rc = cli_check_runner_io(CMD, o->input, o->output, o->model, o->no_score, o->log_predictions);
    if (rc) return rc;
    if (o->mode && strcmp(o->mode, "append") && strcmp(o->mode, "replace") && strcmp(o->mode, "upsert"))
        return cli_usage(CMD, "--mode must be append, replace or upsert (got '%s')", o->mode);
    if (o->progress && strcmp(o->progress, "bar") && strcmp(o->progress, "json") && strcmp(o->progress, "none"))
        return cli_usage(CMD, "--progress must be bar, json or none (got '%s')", o->progress);
    return 0;
}

static int is_table(const inf__target *t) { return t->kind == INF__TARGET_SQLITE || t->kind == INF__TARGET_PG; }

/* What identifies a job's work, as recorded in its checkpoint and compared
 * on --resume (docs/batch.md "Crashes"). */
typedef struct job_identity {
    const char *what, *recorded, *now;
} job_identity;

/* Lists in out each item of the checkpoint that differs from this command;
 * returns how many differ.  A model SHA-256 the checkpoint does not record
 * (a checkpoint of an older infera) is not compared: the version is. */
static int resume_differences(const inf__job *job, const inf__job *now, char *out, size_t size) {
    const job_identity items[] = {
        {"--input", job->input, now->input},
        {"--output", job->output, now->output},
        {"--errors", job->errors, now->errors},
        {"--shard", job->shard, now->shard},
        {"model version", job->model_version, now->model_version},
        {"model sha256", job->model_sha256[0] ? job->model_sha256 : now->model_sha256, now->model_sha256},
        {"pipeline hash", job->pipeline_hash, now->pipeline_hash},
    };
    int n = 0;
    size_t used = 0;
    out[0] = 0;
    for (size_t i = 0; i < sizeof items / sizeof items[0]; i++) {
        if (!strcmp(items[i].recorded, items[i].now)) continue;
        if (used < size)
            used += (size_t)snprintf(out + used, size - used, "%s%s: the job has '%s', this command '%s'", n ? "; " : "",
                                     items[i].what, items[i].recorded[0] ? items[i].recorded : "(none)",
                                     items[i].now[0] ? items[i].now : "(none)");
        n++;
    }
    return n;
}

/* Starts the job: a resume loads the checkpoint and checks it against this
 * command (now), a fresh start begins an empty job of the same id.  Returns
 * 0 to go on, else the exit code; *finished: a resumed job that is already
 * done (reported, exit code 0: nothing is written). */
static int start_job(inf__job *job, const inf__job *now, int resume, int *finished) {
    inf_error e;
    *finished = 0;
    if (resume) {
        if (inf__job_load(job, &e)) return cli_fail(CMD, "%s (run without --resume to start the job)", e.message);
        char diff[2048];
        if (resume_differences(job, now, diff, sizeof diff))
            return cli_fail(CMD,
                            "cannot resume job %s: this command is not the one that started it (%s); nothing was "
                            "written (resume with the job's arguments, or start a new job without --resume)",
                            job->id, diff);
        if (!strcmp(job->state, "done")) { /* finished: say so, touch nothing */
            printf("job       %s already finished at %s: read %lld, written %lld, rejected %lld into %s\n"
                   "          nothing to resume, nothing written (run without --resume to score again)\n",
                   job->id, job->updated_at[0] ? job->updated_at : "an earlier run", (long long)job->rows_read,
                   (long long)job->rows_written, (long long)job->rows_rejected, job->output);
            *finished = 1;
        }
        return 0;
    }
    if (!inf__job_load(job, &e) && !strcmp(job->state, "running"))
        fprintf(stderr, "infera batch: job %s has an unfinished run; starting over (use --resume to continue it)\n",
                job->id);
    inf__job fresh;
    memset(&fresh, 0, sizeof fresh);
    snprintf(fresh.id, sizeof fresh.id, "%s", job->id);
    snprintf(fresh.path, sizeof fresh.path, "%s", job->path);
    *job = fresh;
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(job->started_at, sizeof job->started_at, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return 0;
}

/* Opens a sink for a fresh start or a resume; see docs/batch.md "Modes".
 * On a resume a file is first checked to be the one the job wrote (file_id)
 * and truncated back to its committed size; keep_shape: an existing table
 * must have the output's columns (io.h keep_table_shape). */
static int open_sink(const char *uri, const inf__target *t, const char *mode, int resume, int64_t committed,
                     const char *file_id, int keep_shape, const char *key, inf_sink **out, const char *what) {
    inf_error e;
    char red[1024];
    inf_io_redact_uri(uri, red, sizeof red);
    if (t->kind == INF__TARGET_SQLITE || t->kind == INF__TARGET_PG) {
        if (!t->table[0] || t->is_query) return cli_usage(CMD, "%s %s: a table sink needs ?table=T", what, red);
    }
    if (!strcmp(mode, "upsert") && !is_table(t))
        return cli_usage(CMD, "%s %s: --mode upsert needs a table (sqlite:...?table=T or postgresql://...?table=T)",
                         what, red);
    inf_sink_options so = {0};
    so.key_column = is_table(t) ? key : NULL;
    so.keep_table_shape = keep_shape;
    if (resume) {
        if (t->kind == INF__TARGET_FILE && inf__target_truncate(t, committed, file_id, &e))
            return cli_fail(CMD, "%s", e.message);
        so.append = 1;
    } else if (!strcmp(mode, "replace")) {
        if (is_table(t) && inf__target_drop(uri, t, &e)) return cli_fail(CMD, "%s", e.message);
        so.append = 0;
    } else {
        so.append = 1;
    }
    if (inf_sink_open(uri, &so, out, &e)) return cli_fail(CMD, "%s %s", what, e.message);
    return 0;
}

/* Lineage of a finished job: the registry when the model came from it,
 * else (or when recording there fails) the job log.  out says where. */
static void record_lineage(const inf__rt_model *m, const inf__job *job, const char *home, const char *in_red,
                           const char *out_red, char *out, size_t size) {
    if (m->from_registry && m->registry) {
        inf_registry_use u = {m->name, m->version_num, "batch", in_red, out_red, job->id};
        inf_registry_prediction p = {m->name, m->version_num, "batch", in_red, out_red, job->rows_scored, NULL, job->id};
        inf_error le;
        if (!inf_registry_record_use(m->registry, &u, &le) && !inf_registry_audit_prediction(m->registry, &p, &le)) {
            snprintf(out, size, "registry %s (use and audit record of %s@%s, job %s)", inf_registry_location(m->registry),
                     m->name, m->version, job->id);
            return;
        }
        fprintf(stderr, "infera batch: recording lineage in the registry failed: %s; using the job log\n", le.message);
    }
    inf_error le;
    if (inf__job_log(job, home, in_red, out_red, m->registry ? inf_registry_principal(m->registry) : NULL, &le))
        fprintf(stderr, "infera batch: %s\n", le.message);
    else snprintf(out, size, "job log %s/jobs/jobs.jsonl (job %s)", home, job->id);
}

/* Everything one run of `infera batch` holds, set up step by step. */
typedef struct batch_run {
    batch_opts o;
    const char *home, *id_column;
    inf__rt_model m;
    inf__target tin, tout, terr;
    char in_red[1024], out_red[1024], err_red[1024], src_uri[8192], shard_where[800], lineage[1200];
    inf__job job;
    inf_source *src;
    inf_sink *sink, *esink;
    inf__mon_log *log; /* --log-predictions */
    inf__progress_mode progress_mode;
    double t0, cpu0;
} batch_run;

/* The model and its pipeline (not for --no-score); the id column. */
static int open_model(batch_run *b) {
    const batch_opts *o = &b->o;
    inf_error e;
    b->id_column = o->id_column;
    if (o->no_score) return 0;
    inf__rt_model_options mo = {0};
    mo.pipeline_path = o->pipeline;
    mo.id_column = o->id_column;
    mo.home = o->home;
    mo.registry_url = o->registry;
    mo.keep_registry = 1;
    mo.precision = o->precision;
    if (inf__rt_model_open(o->model, &mo, &b->m, &e)) return cli_fail(CMD, "model %s: %s", o->model, e.message);
    if (!b->id_column) b->id_column = inf_pipeline_id_column(b->m.pipeline);
    if (o->log_predictions && inf__mon_log_open(o->log_predictions, b->m.pipeline, o->log_sample, 0, &b->log, &e))
        return cli_fail(CMD, "%s", e.message);
    return 0;
}

/* Targets and redacted URIs; --shard becomes a URI parameter of the
 * PostgreSQL source and the predicate of its row count. */
static int plan_targets(batch_run *b) {
    const batch_opts *o = &b->o;
    inf__target_parse(o->input, &b->tin);
    inf__target_parse(o->output, &b->tout);
    inf__target_parse(o->errors, &b->terr);
    snprintf(b->src_uri, sizeof b->src_uri, "%s", o->input);
    if (o->shard) {
        int k, n;
        char extra;
        if (sscanf(o->shard, "%d/%d%c", &k, &n, &extra) != 2 || n < 1 || k < 0 || k >= n)
            return cli_usage(CMD, "--shard must be K/N with 0 <= K < N (got '%s')", o->shard);
        if (b->tin.kind != INF__TARGET_PG) return cli_usage(CMD, "--shard needs a PostgreSQL source (postgresql://...)");
        if (!b->id_column) return cli_usage(CMD, "--shard splits by the id column: give --id-column COL");
        size_t len = strlen(b->src_uri);
        snprintf(b->src_uri + len, sizeof b->src_uri - len, "%cshard=%d/%d", strchr(b->src_uri, '?') ? '&' : '?', k, n);
        if (inf_io_shard_predicate(b->id_column, k, n, b->shard_where, sizeof b->shard_where))
            return cli_usage(CMD, "--shard: the id column name '%.80s...' is too long", b->id_column);
    }
    inf_io_redact_uri(o->input, b->in_red, sizeof b->in_red);
    inf_io_redact_uri(o->output, b->out_red, sizeof b->out_red);
    if (o->errors) inf_io_redact_uri(o->errors, b->err_red, sizeof b->err_red);
    if (o->errors && !strcmp(o->errors, o->output)) return cli_usage(CMD, "--errors must differ from --output");
    return 0;
}

/* The job: its id, its checkpoint (a resume checks it against this
 * command), and what this run records in it.  *finished: a resumed job
 * that is already done (reported; nothing more to do). */
static int begin_job(batch_run *b, int *finished) {
    const batch_opts *o = &b->o;
    inf__job *job = &b->job;
    inf_error e;
    const char *name = o->no_score ? "" : b->m.name, *version = o->no_score ? "" : b->m.version;
    const char *pipeline_hash = o->no_score ? "" : inf_pipeline_hash(b->m.pipeline);
    char key[400];
    snprintf(key, sizeof key, "%s@%s#%s", o->no_score ? "copy" : name, version, pipeline_hash);
    if (o->job_id) snprintf(job->id, sizeof job->id, "%s", o->job_id);
    else inf__job_make_id(key, b->in_red, b->out_red, o->shard, job->id);
    if (inf__job_prepare(job, b->home, &e)) return cli_fail(CMD, "%s", e.message);
    inf__job now;
    memset(&now, 0, sizeof now);
    snprintf(now.input, sizeof now.input, "%s", b->in_red);
    snprintf(now.output, sizeof now.output, "%s", b->out_red);
    snprintf(now.errors, sizeof now.errors, "%s", o->errors ? b->err_red : "");
    snprintf(now.shard, sizeof now.shard, "%s", o->shard ? o->shard : "");
    snprintf(now.model_version, sizeof now.model_version, "%s", version);
    snprintf(now.model_sha256, sizeof now.model_sha256, "%s", o->no_score ? "" : b->m.sha256);
    snprintf(now.pipeline_hash, sizeof now.pipeline_hash, "%s", pipeline_hash);
    int rc = start_job(job, &now, o->resume, finished);
    if (rc || *finished) return rc;
    snprintf(job->state, sizeof job->state, "running");
    job->message[0] = 0;
    snprintf(job->model, sizeof job->model, "%s", o->no_score ? "(no-score copy)" : o->model);
    snprintf(job->model_name, sizeof job->model_name, "%s", name);
    snprintf(job->model_version, sizeof job->model_version, "%s", version);
    snprintf(job->pipeline_hash, sizeof job->pipeline_hash, "%s", pipeline_hash);
    snprintf(job->model_sha256, sizeof job->model_sha256, "%s", now.model_sha256);
    snprintf(job->input, sizeof job->input, "%s", now.input);
    snprintf(job->output, sizeof job->output, "%s", now.output);
    snprintf(job->errors, sizeof job->errors, "%s", now.errors);
    snprintf(job->shard, sizeof job->shard, "%s", now.shard);
    return 0;
}

/* Sinks (each in its kind's default mode without --mode: a table output
 * upserts, a file error sink is replaced, and the other way round), the
 * source, and the first checkpoint. */
static int open_io(batch_run *b) {
    const batch_opts *o = &b->o;
    inf__job *job = &b->job;
    inf_error e;
    const char *mode = o->mode ? o->mode : (is_table(&b->tout) ? "upsert" : "replace");
    const char *err_mode = o->mode ? o->mode : (is_table(&b->terr) ? "upsert" : "replace");
    const char *key = b->id_column ? b->id_column : "row_number";
    /* an existing table is adapted (new columns, a unique key) only when --mode append says so */
    int keep_shape = !(o->mode && !strcmp(o->mode, "append")), rc;
    if (o->resume && o->errors && inf__target_check_file(&b->terr, job->errors_bytes, job->errors_file_id, &e))
        return cli_fail(CMD, "%s", e.message); /* both files checked before either is cut back */
    if ((rc = open_sink(o->output, &b->tout, mode, o->resume, job->output_bytes, job->output_file_id, keep_shape, key,
                        &b->sink, "output")))
        return rc;
    if (o->errors && (rc = open_sink(o->errors, &b->terr, err_mode, o->resume, job->errors_bytes, job->errors_file_id,
                                     keep_shape, "source_row", &b->esink, "errors")))
        return rc;
    inf__target_file_id(&b->tout, job->output_file_id);
    inf__target_file_id(&b->terr, job->errors_file_id);
    job->output_bytes = inf__target_file_size(&b->tout);
    job->errors_bytes = o->errors ? inf__target_file_size(&b->terr) : -1;
    inf_source_options sopts = {0};
    sopts.max_rows = o->chunk_rows;
    sopts.id_column = b->id_column;
    if (inf_source_open(b->src_uri, &sopts, &b->src, &e)) return cli_fail(CMD, "input %s", e.message);
    if (inf__job_save(job, b->in_red, b->out_red, o->errors ? b->err_red : NULL, &e)) return cli_fail(CMD, "%s", e.message);
    return 0;
}

/* Closes both sinks (committing them); the first error wins over later ones. */
static inf_status close_sinks(batch_run *b, inf_status st, inf_error *e) {
    inf_sink *sinks[2] = {b->sink, b->esink};
    b->sink = b->esink = NULL;
    for (int i = 0; i < 2; i++) {
        inf_error ce;
        inf_status cst = sinks[i] ? inf_sink_close(sinks[i], &ce) : INF_OK;
        if (!st && cst) {
            st = cst;
            *e = ce;
        }
    }
    return st;
}

/* Closes the prediction log; its counts (and a sink error) on stderr: the
 * log never fails the job (monitor/predlog.h). */
static void close_log(batch_run *b) {
    if (!b->log) return;
    inf__mon_log_stats ls;
    inf_error e;
    if (inf__mon_log_close(b->log, &ls, &e)) fprintf(stderr, "infera batch: prediction log: %s\n", e.message);
    b->log = NULL;
    fprintf(stderr, "infera batch: prediction log: %llu records, %llu sampled, %llu logged, %llu dropped\n",
            (unsigned long long)ls.n_seen, (unsigned long long)ls.n_sampled, (unsigned long long)ls.n_written,
            (unsigned long long)ls.n_dropped);
}

/* Runs the pipeline (runner.c) to the end, closes the sinks and saves the
 * job's final state.  *done_before: source records done before this run. */
static inf_status run_job(batch_run *b, int64_t *done_before, inf_error *e) {
    const batch_opts *o = &b->o;
    inf__job *job = &b->job;
    inf__progress prog;
    b->progress_mode = isatty(2) ? INF__PROGRESS_BAR : INF__PROGRESS_JSON;
    if (o->progress)
        b->progress_mode = !strcmp(o->progress, "bar")    ? INF__PROGRESS_BAR
                           : !strcmp(o->progress, "json") ? INF__PROGRESS_JSON
                                                          : INF__PROGRESS_NONE;
    int64_t total = b->progress_mode == INF__PROGRESS_NONE
                        ? -1
                        : inf__target_count(o->input, &b->tin, b->shard_where[0] ? b->shard_where : NULL);
    inf__progress_init(&prog, b->progress_mode, total, job->source_done);
    inf__runner_config cfg = {
        .model = o->no_score ? NULL : &b->m,
        .source = b->src,
        .sink = b->sink,
        .errors = b->esink,
        .out_target = &b->tout,
        .err_target = &b->terr,
        .input_uri = b->in_red,
        .output_uri = b->out_red,
        .errors_uri = o->errors ? b->err_red : NULL,
        .id_column = b->id_column,
        .n_threads = o->threads,
        .chunk_rows = o->chunk_rows,
        .max_error_rate = o->max_error_rate,
        .checkpoint_s = o->checkpoint_ms / 1000.0,
        .skip = job->source_done,
        .job = job,
        .progress = &prog,
        .log = b->log,
    };
    *done_before = job->source_done;
    inf_status st = close_sinks(b, inf__runner_run(&cfg, e), e);
    close_log(b);
    inf__progress_update(&prog, job->source_done, job->rows_written, job->rows_rejected, 1);
    job->cpu_seconds += inf__cpu_seconds() - b->cpu0;
    job->wall_seconds += inf__now() - b->t0;
    snprintf(job->state, sizeof job->state, "%s", st ? "failed" : "done");
    if (st) snprintf(job->message, sizeof job->message, "%s", e->message);
    inf_error se;
    if (inf__job_save(job, b->in_red, b->out_red, o->errors ? b->err_red : NULL, &se))
        fprintf(stderr, "infera batch: %s\n", se.message);
    return st;
}

/* Lineage (a finished job) and the summary; the exit code. */
static int report_job(batch_run *b, inf_status st, int64_t done_before, const inf_error *e) {
    const batch_opts *o = &b->o;
    if (!st) record_lineage(&b->m, &b->job, b->home, b->in_red, b->out_red, b->lineage, sizeof b->lineage);
    double wall = inf__now() - b->t0;
    inf__batch_summary sc = {0};
    sc.job = &b->job;
    sc.in = b->in_red;
    sc.out = b->out_red;
    sc.errs = o->errors ? b->err_red : NULL;
    sc.lineage = b->lineage;
    sc.wall = wall;
    sc.run_rows = b->job.source_done - done_before;
    sc.rate = wall > 0 ? (double)sc.run_rows / wall : 0;
    sc.json = b->progress_mode == INF__PROGRESS_JSON;
    sc.failed = st != INF_OK;
    /* stdout unless it is a sink: a failed job's stderr is then its one error line */
    int stdout_busy = b->tout.kind == INF__TARGET_STDIO || (o->errors && b->terr.kind == INF__TARGET_STDIO);
    inf__batch_print_summary(stdout_busy ? stderr : stdout, &sc);
    return st ? cli_fail(CMD, "job %s: %s", b->job.id, e->message) : 0;
}

int cmd_batch(int argc, char **argv) {
    batch_run *b = calloc(1, sizeof *b);
    if (!b) return cli_fail(CMD, "out of memory");
    int rc = parse_args(argc, argv, &b->o), finished = 0;
    if (rc) {
        free(b);
        return rc;
    }
    b->home = b->o.home ? b->o.home : getenv("INFERA_HOME");
    if (!b->home || !*b->home) b->home = "./infera-data";
    snprintf(b->lineage, sizeof b->lineage, "none");
    b->t0 = inf__now();
    b->cpu0 = inf__cpu_seconds();
    if (!(rc = open_model(b)) && !(rc = plan_targets(b)) && !(rc = begin_job(b, &finished)) && !finished &&
        !(rc = open_io(b))) {
        int64_t done_before = 0;
        inf_error e;
        inf_status st = run_job(b, &done_before, &e);
        rc = report_job(b, st, done_before, &e);
    }
    inf_error e;
    inf_source_close(b->src);
    close_sinks(b, INF_OK, &e);
    close_log(b);
    inf__rt_model_close(&b->m);
    free(b);
    return rc;
}
