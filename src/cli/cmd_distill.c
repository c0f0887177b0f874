/*
 * cmd_distill.c -- `infera distill --teacher REF --data SRC [--spec FILE]
 * --student mlp:H1,H2,... [--epochs N] [--temperature T] [--holdout F]
 * [--seed N] [--label COL] -o OUT` (shared/DESIGN.md §4; the method is in
 * src/tools/distill.c, the guide in docs/compression.md).  Prints the
 * training summary, fidelity to the teacher and, with --label, quality of
 * teacher and student on the holdout.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "runtime/model.h"
#include "tools/tools.h"

static const char *CMD = "distill";

static int parse_student(const char *s, inf__distill_options *o) {
    if (strncmp(s, "mlp:", 4)) return cli_usage(CMD, "--student must be mlp:H1,H2,... (got '%s')", s);
    const char *p = s + 4;
    o->n_hidden = 0;
    while (*p) {
        char *end;
        long h = strtol(p, &end, 10);
        if (end == p || h < 1 || h > 65536 || (*end && *end != ',')) return cli_usage(CMD, "--student: bad layer width in '%s'", s);
        if (o->n_hidden == 16) return cli_usage(CMD, "--student: at most 16 hidden layers");
        o->hidden[o->n_hidden++] = (int)h;
        p = *end ? end + 1 : end;
    }
    if (!o->n_hidden) return cli_usage(CMD, "--student: give at least one hidden layer (mlp:64,32)");
    return 0;
}

static int parse_double(const char *flag, const char *v, double lo, double hi, double *out) {
    char *end;
    *out = strtod(v, &end);
    if (end == v || *end || !(*out >= lo && *out <= hi)) return cli_usage(CMD, "%s must be a number in [%g, %g] (got '%s')", flag, lo, hi, v);
    return 0;
}

static void print_quality(const char *who, const inf__metrics *m) {
    printf("  %-8s", who);
    for (int k = 0; k < INF__N_METRICS; k++)
        if (inf__metric_applies(m->task, k)) printf("  %s %.4f", inf__metric_names[k], m->v[k]);
    printf("\n");
}

int cmd_distill(int argc, char **argv) {
    const char *teacher = NULL, *data = NULL, *spec = NULL, *out = NULL, *student = NULL;
    inf__distill_options o = {0};
    o.epochs = 100, o.temperature = 2, o.holdout = 0.2, o.seed = 1, o.lr = 1e-3, o.batch = 64, o.patience = 8;
    int threads = 1, rc;
    for (int i = 1; i < argc; i++) {
        bool missing = false;
        const char *v;
        if ((v = cli_flag_value(argc, argv, &i, "--teacher", &missing))) teacher = v;
        else if ((v = cli_flag_value(argc, argv, &i, "--data", &missing))) data = v;
        else if ((v = cli_flag_value(argc, argv, &i, "--spec", &missing))) spec = v;
        else if ((v = cli_flag_value(argc, argv, &i, "-o", &missing)) || (v = cli_flag_value(argc, argv, &i, "--output", &missing))) out = v;
        else if ((v = cli_flag_value(argc, argv, &i, "--student", &missing))) student = v;
        else if ((v = cli_flag_value(argc, argv, &i, "--label", &missing))) o.label = v;
        else if ((v = cli_flag_value(argc, argv, &i, "--epochs", &missing))) {
            if (!cli_parse_int(CMD, "--epochs", v, 1, 100000, &o.epochs)) return 2;
        } else if ((v = cli_flag_value(argc, argv, &i, "--patience", &missing))) {
            if (!cli_parse_int(CMD, "--patience", v, 1, 100000, &o.patience)) return 2;
        } else if ((v = cli_flag_value(argc, argv, &i, "--batch-size", &missing))) {
            if (!cli_parse_int(CMD, "--batch-size", v, 1, 65536, &o.batch)) return 2;
        } else if ((v = cli_flag_value(argc, argv, &i, "--threads", &missing))) {
            if (!cli_parse_int(CMD, "--threads", v, 1, 256, &threads)) return 2;
        } else if ((v = cli_flag_value(argc, argv, &i, "--temperature", &missing))) {
            if ((rc = parse_double("--temperature", v, 0.05, 100, &o.temperature))) return rc;
        } else if ((v = cli_flag_value(argc, argv, &i, "--holdout", &missing))) {
            if ((rc = parse_double("--holdout", v, 0.01, 0.9, &o.holdout))) return rc;
        } else if ((v = cli_flag_value(argc, argv, &i, "--lr", &missing))) {
            if ((rc = parse_double("--lr", v, 1e-7, 1, &o.lr))) return rc;
        } else if ((v = cli_flag_value(argc, argv, &i, "--seed", &missing))) {
            char *end;
            o.seed = strtoull(v, &end, 10);
            if (end == v || *end) return cli_usage(CMD, "--seed must be a non-negative integer (got '%s')", v);
        } else if (!strcmp(argv[i], "--quiet")) o.quiet = 1;
        else if (missing) return cli_usage(CMD, "%s needs a value", argv[i]);
        else return cli_usage(CMD, "unknown argument '%s' (see 'infera help distill')", argv[i]);
    }
    if (!teacher || !data || !student || !out)
        return cli_usage(CMD, "missing %s (usage: infera distill --teacher REF --data SRC --student mlp:H1,H2 -o OUT)",
                         !teacher   ? "--teacher REF"
                         : !data    ? "--data SRC"
                         : !student ? "--student mlp:H1,H2"
                                    : "-o OUT");
    if ((rc = parse_student(student, &o))) return rc;

    inf__rt_model m;
    memset(&m, 0, sizeof m);
    inf__rt_model_options mo = {0};
    mo.pipeline_path = spec;
    inf_error e;
    if (inf__rt_model_open(teacher, &mo, &m, &e)) return cli_fail(CMD, "teacher %s: %s", teacher, e.message);
    inf_session_options so;
    inf_session_options_init(&so);
    so.n_threads = threads;
    so.max_batch = 1024;
    inf_session *session = NULL;
    inf__distill_report rep;
    rc = 0;
    if (inf_session_new(m.model, &so, &session, &e) || inf__distill(data, m.pipeline, session, m.model, &o, out, &rep, &e))
        rc = cli_fail(CMD, "%s: %s", teacher, e.message);
    inf_session_free(session);
    inf__rt_model_close(&m);
    if (rc) return rc;
    printf("student    %s -> %s (%s, %lld parameters)\n", student, out, inf__task_names[rep.task], (long long)rep.parameters);
    printf("training   %d rows, holdout %d rows; %d epochs (best %d), holdout loss %.6f; seed %llu\n", rep.rows_train,
           rep.rows_holdout, rep.epochs_run, rep.best_epoch, rep.holdout_loss, (unsigned long long)o.seed);
    if (rep.task == INF__TASK_REGRESSION) printf("fidelity   mean |student - teacher| %.6g on the holdout\n", rep.mean_abs_diff);
    else
        printf("fidelity   agreement with the teacher %.4f, mean |p_student - p_teacher| %.5f on the holdout\n", rep.agreement,
               rep.mean_abs_diff);
    if (rep.zipmap_output[0])
        printf(
            "note       the teacher's '%s' is a ZipMap (one {class: p} map per row); the student's is a float tensor "
            "[N, classes] in the same class order (see docs/compression.md)\n",
            rep.zipmap_output);
    if (rep.has_quality) {
        printf("quality    on the holdout, against '%s':\n", o.label);
        print_quality("teacher", &rep.teacher_q);
        print_quality("student", &rep.student_q);
    }
    return 0;
}
