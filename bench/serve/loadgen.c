/*
 * loadgen.c -- open-loop HTTP load at a fixed mean rate with Poisson
 * (exponential) inter-arrival times, for "p99 at half of the maximum
 * throughput" (wrk is closed-loop and cannot hold a rate).  Latency is
 * measured from each request's *scheduled* send time, so a stalled server
 * is not hidden (no coordinated omission).
 *
 *   loadgen PORT PATH BODY_FILE RATE_PER_S SECONDS [CONNECTIONS]
 *
 * Each of CONNECTIONS threads keeps one connection and sends RATE/CONNECTIONS
 * requests per second.  Prints one JSON object: rate, sent, ok, errors,
 * achieved rate and latency percentiles in microseconds.
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "../../tests/serve/http_client.h"

typedef struct worker {
    int port;
    const char *path;
    const char *body;
    size_t len;
    double rate, seconds;
    uint64_t seed;
    double *lat;
    long n, cap, ok, err;
} worker;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_until(double t) {
    double d = t - now_s();
    if (d <= 0) return;
    struct timespec ts = {(time_t)d, (long)((d - (double)(time_t)d) * 1e9)};
    nanosleep(&ts, NULL);
}

static void *run(void *p) {
    worker *w = p;
    int fd = http_connect(w->port);
    double start = now_s(), t = start;
    uint64_t s = w->seed;
    while (t - start < w->seconds) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        double u = ((double)(s >> 11) + 0.5) / 9007199254740992.0;
        t += -log(u) / w->rate; /* exponential gap: Poisson arrivals */
        sleep_until(t);
        if (fd < 0) fd = http_connect(w->port);
        http_resp r;
        if (fd < 0 || http_exchange(fd, "POST", w->path, "", w->body, w->len, -1, 1, &r)) {
            w->err++;
            if (fd >= 0) close(fd);
            fd = -1;
            continue;
        }
        double lat = now_s() - t;
        if (r.status == 200)
            w->ok++;
        else
            w->err++;
        http_resp_free(&r);
        if (w->n == w->cap) {
            w->cap = w->cap ? 2 * w->cap : 4096;
            w->lat = realloc(w->lat, (size_t)w->cap * sizeof *w->lat);
        }
        w->lat[w->n++] = lat * 1e6;
    }
    if (fd >= 0) close(fd);
    return NULL;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: loadgen PORT PATH BODY_FILE RATE_PER_S SECONDS [CONNECTIONS]\n");
        return 2;
    }
    FILE *f = fopen(argv[3], "rb");
    if (!f) return 2;
    static char body[1 << 20];
    size_t len = fread(body, 1, sizeof body, f);
    fclose(f);
    double rate = atof(argv[4]), secs = atof(argv[5]);
    int nc = argc > 6 ? atoi(argv[6]) : 32;
    worker *w = calloc((size_t)nc, sizeof *w);
    pthread_t *th = calloc((size_t)nc, sizeof *th);
    for (int i = 0; i < nc; i++) {
        w[i] = (worker){atoi(argv[1]), argv[2], body, len, rate / nc, secs, 0x9E3779B97F4A7C15ull * (uint64_t)(i + 1),
                        NULL, 0, 0, 0, 0};
        pthread_create(&th[i], NULL, run, &w[i]);
    }
    long n = 0, ok = 0, err = 0;
    for (int i = 0; i < nc; i++) {
        pthread_join(th[i], NULL);
        n += w[i].n, ok += w[i].ok, err += w[i].err;
    }
    double *all = malloc((size_t)(n ? n : 1) * sizeof *all);
    long k = 0;
    for (int i = 0; i < nc; i++) {
        memcpy(all + k, w[i].lat, (size_t)w[i].n * sizeof *all);
        k += w[i].n;
        free(w[i].lat);
    }
    qsort(all, (size_t)n, sizeof *all, cmp);
#define P(q) (n ? all[(long)((double)(n - 1) * (q))] : 0)
    printf("{\"rate\":%.0f,\"achieved\":%.0f,\"sent\":%ld,\"ok\":%ld,\"errors\":%ld,\"p50_us\":%.0f,\"p90_us\":%.0f,"
           "\"p99_us\":%.0f,\"p999_us\":%.0f,\"max_us\":%.0f}\n",
           rate, (double)n / secs, n, ok, err, P(0.5), P(0.9), P(0.99), P(0.999), n ? all[n - 1] : 0);
    free(all);
    free(w);
    free(th);
    return 0;
}
