/*
 * batch_int.h -- the pieces of `infera batch` (shared/DESIGN.md §4, docs/batch.md).
 *
 *   cmd_batch.c   options, opening model/source/sinks, resume, lineage
 *   summary.c     the closing summary (text or one JSON line)
 *   runner.c      reader thread -> N scoring workers -> writer thread, chunks
 *                 travel through bounded queues; the writer commits chunks in
 *                 source order and checkpoints after each commit
 *   job.c         job id, the checkpoint (job file) and the job log
 *   progress.c    progress bar / JSON progress lines, CPU time
 *   target.c      what the runner must know about a source or sink URI:
 *                 file path (byte offsets for resume), table kinds, replace,
 *                 row count estimates
 *
 * EXACTLY-ONCE.  A chunk is a run of consecutive source records.  The writer
 * writes chunk k only after chunks 0..k-1, commits the sinks, then records in
 * the job file how many source records are done and (file sinks) the byte
 * size of each output file.  --resume truncates file outputs back to those
 * sizes, skips that many source records and goes on; table outputs are keyed
 * by the id column, so a chunk committed just before a crash but after the
 * last checkpoint is overwritten, not duplicated.
 */
#ifndef INF_BATCH_INT_H
#define INF_BATCH_INT_H

#include <stdint.h>
#include <stdio.h>

#include "runtime/model.h"
#include "infera/io.h"
#include "infera/pipeline.h"

/* ---- targets (target.c) ---- */
typedef enum inf__target_kind {
    INF__TARGET_FILE,   /* csv:PATH, jsonl:PATH */
    INF__TARGET_STDIO,  /* csv:-, jsonl:- */
    INF__TARGET_SQLITE, /* sqlite:PATH?table=T / ?query=SQL */
    INF__TARGET_PG,     /* postgresql://... */
    INF__TARGET_OTHER,
} inf__target_kind;

typedef struct inf__target {
    inf__target_kind kind;
    char path[4096];   /* file path or SQLite database path */
    char table[256];   /* ?table=T, or "" */
    int is_query;      /* ?query=SQL */
} inf__target;

void inf__target_parse(const char *uri, inf__target *t);
/* Current byte size of a file target, -1 when unknown. */
int64_t inf__target_file_size(const inf__target *t);
/* The identity of a file target, "DEV:INODE" in out (64 bytes), or "" when
 * it is not a file or does not exist. */
void inf__target_file_id(const inf__target *t, char out[64]);
/* Truncates a file target to size bytes (resume), after checking that it is
 * still the file the job wrote: its identity equals file_id ("DEV:INODE";
 * "" = the job recorded none: refused unless the file is empty) and it holds at least
 * size bytes.  Never truncates another file.  INF_EINVAL (names the file and
 * what differs), INF_EIO. */
inf_status inf__target_truncate(const inf__target *t, int64_t size, const char *file_id, inf_error *err);
/* The checks of inf__target_truncate alone (nothing is changed). */
inf_status inf__target_check_file(const inf__target *t, int64_t size, const char *file_id, inf_error *err);
/* Drops the table of a table target (--mode replace on a fresh start). */
inf_status inf__target_drop(const char *uri, const inf__target *t, inf_error *err);
/* Number of records of a source, or -1 when it cannot be known cheaply. */
int64_t inf__target_count(const char *uri, const inf__target *t, const char *shard_where);

/* ---- job file (job.c) ---- */
typedef struct inf__job {
    char id[80];
    char path[4200];        /* HOME/jobs/<id>.json */
    char state[16];         /* "running", "done", "failed" */
    char model[4200];       /* the reference as given */
    char model_name[160];
    char model_version[64];
    char pipeline_hash[80];
    char model_sha256[65];  /* of the model file / artifact ("" for --no-score) */
    char input[1024], output[1024], errors[1024]; /* redacted URIs as recorded ("" = none) */
    char shard[64];         /* --shard K/N, or "" */
    char output_file_id[64], errors_file_id[64]; /* "DEV:INODE" of a file the job wrote, "" = none */
    int64_t source_done;    /* source records fully handled (prefix of the source) */
    int64_t rows_read, rows_scored, rows_written, rows_rejected;
    int64_t output_bytes;   /* committed size of a file output, -1 = not a file */
    int64_t errors_bytes;   /* committed size of a file error sink, -1 = none / not a file */
    double cpu_seconds;     /* accumulated over runs */
    double wall_seconds;
    char started_at[40];
    char updated_at[40];
    char message[512];      /* why it failed */
} inf__job;

/* A job id from what identifies the job (16 hex chars of a SHA-256). */
void inf__job_make_id(const char *model_version_key, const char *input, const char *output, const char *shard,
                      char out[80]);
/* Creates HOME/jobs when needed; fills job->path. */
inf_status inf__job_prepare(inf__job *job, const char *home, inf_error *err);
/* Loads job->path into job (INF_ENOENT when there is no checkpoint). */
inf_status inf__job_load(inf__job *job, inf_error *err);
/* Atomically replaces the job file (write temp + rename). */
inf_status inf__job_save(const inf__job *job, const char *input, const char *output, const char *errors,
                         inf_error *err);
/* Appends a line to HOME/jobs/jobs.jsonl (the job log used when the model is
 * not from the registry). */
inf_status inf__job_log(const inf__job *job, const char *home, const char *input, const char *output,
                        const char *principal, inf_error *err);

/* ---- progress (progress.c) ---- */
typedef enum inf__progress_mode { INF__PROGRESS_NONE, INF__PROGRESS_BAR, INF__PROGRESS_JSON } inf__progress_mode;

typedef struct inf__progress {
    inf__progress_mode mode;
    FILE *out;
    double start, last;
    int64_t total;          /* -1 when unknown */
    int64_t base;           /* rows already done before this run (resume) */
    int drawn;
} inf__progress;

double inf__now(void);
double inf__cpu_seconds(void);
void inf__progress_init(inf__progress *p, inf__progress_mode mode, int64_t total, int64_t base);
/* Called by the writer after each commit; rate-limited internally. */
void inf__progress_update(inf__progress *p, int64_t done, int64_t written, int64_t rejected, int final);

/* ---- runner (runner.c) ---- */
typedef struct inf__runner_config {
    inf__rt_model *model;      /* NULL: --no-score, records are copied (benchmark baseline) */
    inf_source *source;
    inf_sink *sink;
    inf_sink *errors;           /* may be NULL: bad rows are only counted (and the first reported) */
    const inf__target *out_target, *err_target;
    const char *input_uri, *output_uri, *errors_uri; /* redacted: for messages and the job file */
    const char *id_column;      /* NULL: a row_number column is written instead */
    int n_threads;
    int chunk_rows;
    double max_error_rate;      /* < 0: no limit */
    double checkpoint_s;        /* commit + checkpoint at most this often (0 = every chunk) */
    int64_t skip;               /* source records to skip first (resume) */
    inf__job *job;              /* updated and saved after each commit */
    inf__progress *progress;
    struct inf__mon_log *log;   /* may be NULL: --log-predictions (monitor/predlog.h) */
} inf__runner_config;

/* Runs the job to its end or its first fatal error (err says which).  Counts
 * accumulate into cfg->job. */
inf_status inf__runner_run(const inf__runner_config *cfg, inf_error *err);

/* ---- the closing summary (summary.c) ---- */
typedef struct inf__batch_summary {
    const inf__job *job;
    const char *in, *out, *errs, *lineage; /* redacted URIs (errs NULL: none), the lineage line */
    double wall, cpu, rate;                /* seconds, seconds, source records per second */
    int64_t run_rows;                      /* source records handled by this run */
    int json, failed;                      /* one JSON line; the job failed */
} inf__batch_summary;

void inf__batch_print_summary(FILE *f, const inf__batch_summary *s);

#endif /* INF_BATCH_INT_H */
