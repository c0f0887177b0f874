/*
 * progress.c -- progress of a batch job on stderr, and the clocks the
 * summary uses.
 *
 * Bar (a terminal): one line redrawn at most 10 times a second:
 *   [=========>          ]  45%  450,000/1,000,000 rows  123,456 rows/s  ETA 4s
 * without a total: rows, rows/s and elapsed time.
 * JSON (--progress json, the default when stderr is not a terminal): one line
 * per second, {"event":"progress","rows_done":..,"rows_written":..,
 * "rows_rejected":..,"rows_per_s":..,"elapsed_s":..,"total":..|null,"eta_s":..|null}.
 * Called only by the writer thread.
 */
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "batch/batch_int.h"

double inf__now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double inf__cpu_seconds(void) {
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru)) return 0;
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
           (double)ru.ru_stime.tv_usec * 1e-6;
}

void inf__progress_init(inf__progress *p, inf__progress_mode mode, int64_t total, int64_t base) {
    memset(p, 0, sizeof *p);
    p->mode = mode;
    p->out = stderr;
    p->total = total;
    p->base = base;
    p->start = p->last = inf__now();
}

static const char *grouped(int64_t v, char *buf, size_t size) {
    char tmp[32];
    int n = snprintf(tmp, sizeof tmp, "%lld", (long long)(v < 0 ? -v : v)), k = 0;
    size_t o = 0;
    if (v < 0 && o + 1 < size) buf[o++] = '-';
    for (int i = 0; i < n && o + 2 < size; i++) {
        buf[o++] = tmp[i];
        k = n - i - 1;
        if (k && k % 3 == 0) buf[o++] = ',';
    }
    buf[o] = 0;
    return buf;
}

void inf__progress_update(inf__progress *p, int64_t done, int64_t written, int64_t rejected, int final) {
    if (p->mode == INF__PROGRESS_NONE) return;
    double now = inf__now(), interval = p->mode == INF__PROGRESS_BAR ? 0.1 : 1.0;
    if (!final && now - p->last < interval) return;
    p->last = now;
    double el = now - p->start;
    int64_t run_rows = done - p->base;
    double rate = el > 0 ? (double)run_rows / el : 0;
    double eta = p->total > 0 && rate > 0 ? (double)(p->total - done) / rate : -1;
    if (eta < 0 && p->total > 0 && done >= p->total) eta = 0;
    if (p->mode == INF__PROGRESS_JSON) {
        fprintf(p->out,
                "{\"event\":\"progress\",\"rows_done\":%lld,\"rows_written\":%lld,\"rows_rejected\":%lld,"
                "\"rows_per_s\":%.1f,\"elapsed_s\":%.3f,",
                (long long)done, (long long)written, (long long)rejected, rate, el);
        if (p->total >= 0) fprintf(p->out, "\"total\":%lld,", (long long)p->total);
        else fprintf(p->out, "\"total\":null,");
        if (eta >= 0) fprintf(p->out, "\"eta_s\":%.1f}\n", eta);
        else fprintf(p->out, "\"eta_s\":null}\n");
        fflush(p->out);
        return;
    }
    char a[32], b[32], c[32];
    if (p->total > 0) {
        double frac = (double)done / (double)p->total;
        if (frac > 1) frac = 1;
        int w = 24, fill = (int)(frac * w);
        char bar[32];
        for (int i = 0; i < w; i++) bar[i] = i < fill ? '=' : (i == fill ? '>' : ' ');
        bar[w] = 0;
        fprintf(p->out, "\r[%s] %3d%%  %s/%s rows  %s rows/s  ETA %.0fs   ", bar, (int)(frac * 100 + 0.5),
                grouped(done, a, sizeof a), grouped(p->total, b, sizeof b), grouped((int64_t)rate, c, sizeof c),
                eta < 0 ? 0 : eta);
    } else {
        fprintf(p->out, "\r%s rows  %s rows/s  %.1fs   ", grouped(done, a, sizeof a),
                grouped((int64_t)rate, c, sizeof c), el);
    }
    if (rejected > 0) fprintf(p->out, "(%s rejected)", grouped(rejected, a, sizeof a));
    p->drawn = 1;
    if (final) fputc('\n', p->out);
    fflush(p->out);
}
