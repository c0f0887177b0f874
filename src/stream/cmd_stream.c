/*
 * cmd_stream.c -- `infera stream`: score events from a stream into a sink
 * (shared/DESIGN.md §1, §4, §6; docs/stream.md).
 *
 *   infera stream --model REF --input SRC --output DST [--errors DST] [--id-column COL]
 *                 [--threads N] [--max-batch N] [--max-delay-ms N] [--max-events N]
 *                 [--consumer NAME] [--pipeline SPEC] [--progress-ms N] [--no-score]
 *                 [--log-predictions DST [--log-sample F]] [--baseline FILE] [--monitor-window S]
 *                 [--monitor RULES]
 *
 * SRC: redis://H:P/STREAM?group=G[&consumer=C][&claim_idle_ms=N], mqtt://H:P/TOPIC,
 * jsonl:- or jsonl:PATH.  DST: any io/ sink (redis://H:P/STREAM, mqtt://H:P/TOPIC,
 * sqlite:PATH?table=T, postgresql://...?table=T, jsonl:-, jsonl:PATH, csv:PATH).
 *
 * This file: options, opening the model (runtime/model.h: the same
 * resolution and pipeline as batch and the SQL functions), the source and the
 * sinks (always appending: a restarted consumer adds to what is there; table
 * and Redis sinks keyed for idempotence), the registry's use and audit
 * records, and the summary line.  The loop is runner.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "monitor/baseline_store.h"
#include "monitor/online.h"
#include "monitor/predlog.h"
#include "stream/stream_int.h"

#define CMD "stream"

typedef struct stream_opts {
    const char *model, *input, *output, *errors, *id_column, *consumer, *pipeline, *log_predictions, *baseline;
    const char *monitor_rules;
    double log_sample;
    int threads, max_batch, max_delay_ms, progress_ms, no_score, monitor_window_s;
    int precision; /* session option precision (--precision) */
    int64_t max_events;
} stream_opts;

static int parse_int_flag(int argc, char **argv, int *i, const char *flag, int min, int max, int *out, int *matched) {
    bool missing = false;
    int j = *i;
    const char *v = cli_flag_value(argc, argv, &j, flag, &missing);
    if (!v && !missing) return 0;
    *matched = 1;
    if (missing) return cli_usage(CMD, "%s needs a value", flag);
    if (!strcmp(v, "0") && min == 0)
        *out = 0;
    else if (!cli_parse_int(CMD, flag, v, min > 0 ? min : 1, max, out))
        return 2;
    *i = j;
    return 0;
}

static int parse_args(int argc, char **argv, stream_opts *o) {
    memset(o, 0, sizeof *o);
    o->threads = 1;
    o->max_batch = 256;
    o->max_delay_ms = 20;
    o->progress_ms = 10000;
    o->log_sample = 1.0;
    o->monitor_window_s = 60;
    struct {
        const char *flag;
        const char **dst;
    } strs[] = {
        {"--model", &o->model},         {"--input", &o->input},
        {"--output", &o->output},       {"--errors", &o->errors},
        {"--id-column", &o->id_column}, {"--consumer", &o->consumer},
        {"--pipeline", &o->pipeline},   {"--log-predictions", &o->log_predictions},
        {"--baseline", &o->baseline},   {"--monitor", &o->monitor_rules},
    };
    for (int i = 1; i < argc; i++) {
        bool missing = false;
        int matched = 0, rc, max_events = 0;
        for (size_t k = 0; k < sizeof strs / sizeof strs[0] && !matched; k++) {
            int j = i;
            const char *v = cli_flag_value(argc, argv, &j, strs[k].flag, &missing);
            if (!v && !missing) continue;
            if (missing) return cli_usage(CMD, "%s needs a value", strs[k].flag);
            *strs[k].dst = v;
            i = j;
            matched = 1;
        }
        if (matched) continue;
        int j = i;
        const char *v = cli_flag_value(argc, argv, &j, "--log-sample", &missing);
        if (v || missing) {
            char *end = NULL;
            o->log_sample = v ? strtod(v, &end) : -1;
            if (!v || *end || !(o->log_sample > 0 && o->log_sample <= 1))
                return cli_usage(CMD, "--log-sample needs a fraction in (0, 1] (got '%s')", v ? v : "");
            i = j;
            continue;
        }
        j = i;
        if ((v = cli_flag_value(argc, argv, &j, "--precision", &missing)) || missing) {
            if (missing) return cli_usage(CMD, "--precision needs a value");
            if (!cli_parse_precision(CMD, v, &o->precision)) return 2;
            i = j;
            continue;
        }
        if ((rc = parse_int_flag(argc, argv, &i, "--threads", 1, 256, &o->threads, &matched)) || matched) {
            if (rc) return rc;
        } else if ((rc = parse_int_flag(argc, argv, &i, "--max-batch", 1, 1 << 16, &o->max_batch, &matched)) ||
                   matched) {
            if (rc) return rc;
        } else if ((rc = parse_int_flag(argc, argv, &i, "--max-delay-ms", 0, 600000, &o->max_delay_ms, &matched)) ||
                   matched) {
            if (rc) return rc;
        } else if ((rc = parse_int_flag(argc, argv, &i, "--progress-ms", 0, 86400000, &o->progress_ms, &matched)) ||
                   matched) {
            if (rc) return rc;
        } else if ((rc = parse_int_flag(argc, argv, &i, "--max-events", 1, 2000000000, &max_events, &matched)) ||
                   matched) {
            if (rc) return rc;
            o->max_events = max_events;
        } else if ((rc = parse_int_flag(argc, argv, &i, "--monitor-window", 1, 86400 * 366, &o->monitor_window_s,
                                        &matched)) ||
                   matched) {
            if (rc) return rc;
        } else if (!strcmp(argv[i], "--no-score")) {
            o->no_score = 1;
        } else {
            return cli_unexpected(CMD, argv[i]);
        }
    }
    int rc = cli_check_runner_io(CMD, o->input, o->output, o->model, o->no_score, o->log_predictions);
    if (rc) return rc;
    if (o->errors && !strcmp(o->errors, o->output)) return cli_usage(CMD, "--errors must differ from --output");
    if (o->baseline && o->no_score) return cli_usage(CMD, "--baseline needs a model (not --no-score)");
    if (o->monitor_rules && o->no_score) return cli_usage(CMD, "--monitor needs a model (not --no-score)");
    return 0;
}

/* Closes the prediction log; its counts (and a sink error) on stderr: the
 * log never fails the stream (monitor/predlog.h). */
static void close_log(inf__mon_log **log) {
    if (!*log) return;
    inf__mon_log_stats ls;
    inf_error e;
    if (inf__mon_log_close(*log, &ls, &e)) fprintf(stderr, "infera stream: prediction log: %s\n", e.message);
    *log = NULL;
    fprintf(stderr, "infera stream: prediction log: %llu records, %llu sampled, %llu logged, %llu dropped\n",
            (unsigned long long)ls.n_seen, (unsigned long long)ls.n_sampled, (unsigned long long)ls.n_written,
            (unsigned long long)ls.n_dropped);
}

/* The drift windows of --baseline FILE, else of the baseline stored with a
 * registry version (monitor/baseline_store.h); *out stays NULL without one. */
static int open_windows(const stream_opts *o, const inf__rt_model *m, inf__mon_online **out) {
    inf__mon_profile *base = NULL;
    inf_error e;
    *out = NULL;
    if (o->baseline) {
        if (inf__mon_profile_load(o->baseline, &base, &e)) return cli_fail(CMD, "--baseline: %s", e.message);
    } else if (!m->from_registry || inf__mon_baseline_find(NULL, m->name, m->version_num, &base, &e)) {
        return 0; /* no stored baseline: no windows */
    } else {
        fprintf(stderr, "infera stream: drift against the baseline stored with %s@%s\n", m->name, m->version);
    }
    if (inf__mon_online_new(base, (int64_t)o->monitor_window_s * 1000000, 0, m->name, m->version, out))
        return cli_fail(CMD, "drift windows: out of memory");
    return 0;
}

/* The window in progress at the end of the run (its rows so far; "complete": false). */
static void close_windows(inf__mon_online **online, inf__stream_alerts *alerts) {
    if (!*online) return;
    int64_t now = inf__mon_now_us();
    inf__stream_drift_event(alerts, inf__mon_online_take_complete(*online, now));
    uint64_t window_rows = 0, total = 0;
    inf__mon_online_counts(*online, &window_rows, &total);
    if (window_rows) inf__stream_drift_event(alerts, inf__mon_online_drift(*online, now, 1));
    inf__mon_online_free(*online);
    *online = NULL;
}

/* Tables and Redis streams are keyed (upsert / dedupe); files and MQTT are not. */
static int keyed(const char *uri) {
    return !strncmp(uri, "sqlite:", 7) || !strncmp(uri, "postgresql:", 11) || !strncmp(uri, "postgres:", 9) ||
           !strncmp(uri, "redis:", 6);
}

static int open_sink(const char *uri, const char *key, inf_sink **out, const char *what) {
    inf_sink_options so = {0};
    so.append = 1;
    so.key_column = keyed(uri) ? key : NULL;
    inf_error e;
    if (inf_sink_open(uri, &so, out, &e)) return cli_fail(CMD, "%s %s", what, e.message);
    return 0;
}

/* 16 hex chars naming this consumer: model version, input, output. */
static void stream_id(const inf__rt_model *m, const char *in, const char *out, char id[17]) {
    char key[3000], hex[65];
    snprintf(key, sizeof key, "%s@%s\n%s\n%s", m->name, m->version, in, out);
    inf_sha256_hex(key, strlen(key), hex);
    snprintf(id, 17, "%.16s", hex);
}

static void audit(const inf__rt_model *m, const char *in, const char *out, const char *id, int64_t scored, int start) {
    if (!m->from_registry || !m->registry) return;
    inf_error e;
    inf_status st;
    if (start) {
        inf_registry_use u = {m->name, m->version_num, "stream", in, out, id};
        st = inf_registry_record_use(m->registry, &u, &e);
    } else {
        inf_registry_prediction p = {m->name, m->version_num, "stream", in, out, scored, NULL, id};
        st = inf_registry_audit_prediction(m->registry, &p, &e);
    }
    if (st)
        fprintf(stderr, "infera stream: recording %s in the registry failed: %s\n", start ? "the use" : "the audit",
                e.message);
}

static void print_summary(const inf__stream_stats *s, const char *state, const char *id, const char *source_line) {
    double cpu = inf__cpu_seconds(); /* cost per prediction, as batch's summary reports it */
    fprintf(stderr,
            "{\"event\":\"summary\",\"stream\":\"%s\",\"state\":\"%s\",\"events\":%lld,\"batches\":%lld,"
            "\"scored\":%lld,\"written\":%lld,\"rejected\":%lld,\"malformed\":%lld,\"wall_s\":%.3f,\"busy_s\":%.3f,"
            "\"events_per_s\":%.1f,\"cpu_s\":%.3f,\"cpu_s_per_million\":%.3f}\n",
            id, state, (long long)s->events, (long long)s->batches, (long long)s->scored, (long long)s->written,
            (long long)s->rejected, (long long)s->malformed, s->wall_s, s->busy_s,
            s->wall_s > 0 ? (double)s->events / s->wall_s : 0.0, cpu,
            s->scored > 0 ? cpu / (double)s->scored * 1e6 : 0.0);
    if (source_line[0]) fprintf(stderr, "infera stream: %s\n", source_line);
}

int cmd_stream(int argc, char **argv) {
    stream_opts o;
    int rc = parse_args(argc, argv, &o);
    if (rc) return rc;
    const inf__stream_source_type *type = inf__stream_source_find(o.input);
    if (!type)
        return cli_usage(CMD, "--input must be redis://H:P/STREAM?group=G, mqtt://H:P/TOPIC or jsonl:- / jsonl:PATH");
    inf_error e;
    inf__rt_model m;
    memset(&m, 0, sizeof m);
    if (!o.no_score) {
        inf__rt_model_options mo = {0};
        mo.pipeline_path = o.pipeline;
        mo.id_column = o.id_column;
        mo.keep_registry = 1;
        mo.precision = o.precision;
        if (inf__rt_model_open(o.model, &mo, &m, &e)) return cli_fail(CMD, "model %s: %s", o.model, e.message);
    } else {
        snprintf(m.name, sizeof m.name, "(no-score)");
    }
    const char *id_column = o.id_column ? o.id_column : (o.no_score ? NULL : inf_pipeline_id_column(m.pipeline));
    char in_red[1024], out_red[1024], id[17], source_line[600] = "";
    inf_io_redact_uri(o.input, in_red, sizeof in_red);
    inf_io_redact_uri(o.output, out_red, sizeof out_red);
    stream_id(&m, in_red, out_red, id);
    inf_sink *sink = NULL, *esink = NULL;
    inf__mon_log *log = NULL;
    inf__mon_online *online = NULL;
    inf__stream_alerts *alerts = NULL;
    void *src = NULL;
    if (!o.no_score && (rc = open_windows(&o, &m, &online))) goto done;
    rc = 1;
    if (o.monitor_rules && inf__stream_alerts_open(o.monitor_rules, &m, o.log_predictions, &alerts, &e)) {
        rc = cli_fail(CMD, "--monitor %s", e.message);
        goto done;
    }
    if (o.monitor_rules && !online && inf__stream_alerts_need_windows(alerts)) {
        rc = cli_fail(CMD,
                      "--monitor %s: no drift windows to check (--baseline FILE, or a baseline stored with the "
                      "registry version: infera monitor baseline NAME@V --data SRC --register)",
                      o.monitor_rules);
        goto done;
    }
    if (o.log_predictions && inf__mon_log_open(o.log_predictions, m.pipeline, o.log_sample, 0, &log, &e)) {
        rc = cli_fail(CMD, "%s", e.message);
        goto done;
    }
    if ((rc = open_sink(o.output, id_column ? id_column : "event_id", &sink, "output"))) goto done;
    if (o.errors && (rc = open_sink(o.errors, "event_id", &esink, "errors"))) goto done;
    rc = 1;
    inf__stream_source_options so = {o.max_batch, o.max_delay_ms, o.consumer};
    if (type->open(o.input, &so, &src, &e)) {
        rc = cli_fail(CMD, "input %s", e.message);
        goto done;
    }
    inf__stream_install_signals();
    audit(&m, in_red, out_red, id, 0, 1);
    if (o.no_score)
        fprintf(stderr, "infera stream: %s -> %s, forwarding (--no-score), stream %s: ready\n", in_red, out_red, id);
    else
        fprintf(stderr, "infera stream: %s -> %s, model %s@%s (pipeline %.12s), stream %s: ready\n", in_red, out_red,
                m.name, m.version, inf_pipeline_hash(m.pipeline), id);
    inf__stream_config cfg = {
        o.no_score ? NULL : &m, type,          src, sink,   esink, id_column, in_red, o.threads, o.max_batch,
        o.max_events,           o.progress_ms, log, online, alerts};
    inf__stream_stats stats;
    inf_status st = inf__stream_run(&cfg, &stats, &e);
    if (type->describe) type->describe(src, source_line, sizeof source_line);
    close_windows(&online, alerts);
    close_log(&log);
    inf__stream_alerts_quality(alerts, 1); /* the labels against the whole, drained log */
    if (alerts)
        fprintf(stderr, "infera stream: --monitor: %llu alert(s) fired\n",
                (unsigned long long)inf__stream_alerts_fired(alerts));
    inf_error ce;
    inf_status cst = inf_sink_close(sink, &ce);
    sink = NULL;
    if (!st && cst) e = ce, st = cst;
    if (esink) {
        cst = inf_sink_close(esink, &ce);
        esink = NULL;
        if (!st && cst) e = ce, st = cst;
    }
    audit(&m, in_red, out_red, id, stats.scored, 0);
    print_summary(&stats, st ? "failed" : inf__stream_stopping() ? "stopped" : "done", id, source_line);
    rc = st ? cli_fail(CMD, "%s", e.message) : 0;
done:
    if (src) type->close(src);
    if (sink) inf_sink_close(sink, &e);
    if (esink) inf_sink_close(esink, &e);
    close_windows(&online, alerts);
    inf__stream_alerts_free(alerts);
    close_log(&log);
    inf__rt_model_close(&m);
    return rc;
}
