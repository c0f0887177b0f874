/*
 * bench_window.c -- the CPU time an online drift window adds per record (issue 23's
 * target: <= 1 us), measured on the window itself (src/monitor/online.c): rows of a
 * baseline's columns -- its number columns as the feature matrix, its other columns
 * (the spec's outputs: numbers and categories) as values -- added in requests of 50
 * rows, as serve's /infer hook adds them.  Values are drawn within each number
 * column's baseline range (and the categories it saw), so every bin and category
 * path runs.  Each round profiles 20,000 rows into a fresh window (the window
 * profiles its first 20,000 rows: the expensive part) and times the adding
 * calls alone (not the making of the rows) with the thread's CPU clock.
 * Prints the median of the rounds, ns per record.
 *
 *   bench_window BASELINE.json [ROUNDS]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "monitor/online.h"
#include "monitor/profile.h"

#define REQ_ROWS 50
#define ROWS 20000

typedef struct col {
    const char *name;
    int categorical;
    double lo, hi;
    int n_cats;
    const char *cats[16];
} col;

static double cpu_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static double uniform(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (double)(rng >> 11) * 0x1.0p-53;
}

static int columns(const cJSON *sec, col *out, int max) {
    int n = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, sec) {
        if (n == max) break;
        col *k = &out[n++];
        memset(k, 0, sizeof *k);
        k->name = c->string;
        const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "type"));
        k->categorical = type && !strcmp(type, "category");
        if (k->categorical) {
            const cJSON *f;
            cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(c, "frequencies")) if (k->n_cats < 16)
                k->cats[k->n_cats++] = f->string;
        } else {
            const cJSON *e = cJSON_GetObjectItemCaseSensitive(c, "edges");
            int ne = cJSON_GetArraySize(e);
            k->lo = ne ? cJSON_GetArrayItem(e, 0)->valuedouble : 0;
            k->hi = ne ? cJSON_GetArrayItem(e, ne - 1)->valuedouble : 1;
            double w = k->hi - k->lo;
            k->lo -= 0.1 * w + 1e-9, k->hi += 0.1 * w + 1e-9;
        }
    }
    return n;
}

/* Makes one request's rows: x (number features), y (outputs). */
static void make_rows(const col *fx, int nx, const col *fy, int ny, double *x, inf_value *y) {
    for (int r = 0; r < REQ_ROWS; r++) {
        for (int j = 0; j < nx; j++)
            x[r * nx + j] = fx[j].lo + (fx[j].hi - fx[j].lo) * uniform();
        for (int j = 0; j < ny; j++) {
            inf_value *v = &y[r * ny + j];
            if (fy[j].categorical && fy[j].n_cats) {
                const char *s = fy[j].cats[(int)(uniform() * fy[j].n_cats) % fy[j].n_cats];
                v->type = INF_FIELD_STRING, v->u.s.ptr = s, v->u.s.len = (uint32_t)strlen(s);
            } else {
                v->type = INF_FIELD_FLOAT, v->u.f = fy[j].lo + (fy[j].hi - fy[j].lo) * uniform();
            }
        }
    }
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_window BASELINE.json [ROUNDS]\n");
        return 2;
    }
    int rounds = argc > 2 ? atoi(argv[2]) : 7;
    if (rounds < 1 || rounds > 100) rounds = 7;
    FILE *f = fopen(argv[1], "rb");
    if (!f) return perror(argv[1]), 1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)n + 1);
    if (!text || fread(text, 1, (size_t)n, f) != (size_t)n) return fprintf(stderr, "read failed\n"), 1;
    fclose(f);
    text[n] = 0;
    cJSON *root = cJSON_Parse(text);
    col fx[64], fy[64];
    int nx = columns(cJSON_GetObjectItemCaseSensitive(root, "features"), fx, 64);
    int ny = columns(cJSON_GetObjectItemCaseSensitive(root, "outputs"), fy, 64);
    const char *xnames[64], *ynames[64];
    int kx = 0;
    for (int j = 0; j < nx; j++)
        if (!fx[j].categorical) fx[kx] = fx[j], xnames[kx] = fx[j].name, kx++;
    nx = kx;
    for (int j = 0; j < ny; j++)
        ynames[j] = fy[j].name;
    double *x = malloc(sizeof *x * REQ_ROWS * (size_t)(nx ? nx : 1));
    inf_value *y = calloc((size_t)REQ_ROWS * (size_t)(ny ? ny : 1), sizeof *y);
    double per[100];
    for (int r = 0; r < rounds; r++) {
        inf__mon_profile *base;
        inf__mon_online *o;
        inf_error err;
        if (inf__mon_profile_load(argv[1], &base, &err) || inf__mon_online_new(base, 3600000000LL, 0, "m", "1", &o))
            return fprintf(stderr, "%s\n", err.message), 1;
        int64_t t0 = (int64_t)time(NULL) / 3600 * 3600000000LL + 1; /* inside one window */
        double total = 0;
        for (int q = 0; q < ROWS / REQ_ROWS; q++) {
            make_rows(fx, nx, fy, ny, x, y);
            double b = cpu_ns();
            if (inf__mon_online_add_matrix(o, x, REQ_ROWS, nx, xnames, y, ny, ynames, t0) != INF_OK)
                return fprintf(stderr, "add failed\n"), 1;
            double c = cpu_ns();
            total += c - b;
        }
        per[r] = total / ROWS;
        inf__mon_online_free(o);
    }
    qsort(per, (size_t)rounds, sizeof per[0], cmp);
    printf("drift window: %d number features + %d outputs per record, %d rows per round, %d rounds: "
           "median %.0f ns per record (min %.0f, max %.0f), CPU time of the adding thread\n",
           nx, ny, ROWS, rounds, per[rounds / 2], per[0], per[rounds - 1]);
    cJSON_Delete(root);
    free(text);
    free(x);
    free(y);
    return 0;
}
