/*
 * bench_profile.c -- `infera bench --profile`: the session's per-node profile
 * (inf_session_profile, counted over the timed runs) as a table of nodes
 * sorted by total time, a summary by op type, or the "profile" array of the
 * --json object.
 *
 * Times are per run (total / runs).  "% run" is the share of the wall time
 * of inf_session_run: main-graph nodes add up to a little under 100 % on one
 * thread (the rest, input checks and buffer bookkeeping, is the "(outside
 * nodes)" row); nodes inside If/Loop/Scan bodies (shown PARENT/BODY/NAME) are
 * part of their parent's time, so the op summary leaves them out.  Batches
 * run as sub-batches add the sub-batches' times across threads.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/bench_profile.h"
#include "cli/cli.h"

typedef struct op_total {
    char op[96];
    int nodes;
    int64_t calls;
    uint64_t total_ns;
} op_total;

typedef struct profile {
    inf_node_profile *nodes;
    int n;
    int *order;              /* node indices by total time, largest first */
    op_total *ops;           /* room for the summary by op type (n) */
    inf_profile_totals totals;
} profile;

static const inf_node_profile *sort_base; /* qsort has no context argument in C11 */

static int by_total_desc(const void *a, const void *b) {
    uint64_t x = sort_base[*(const int *)a].total_ns, y = sort_base[*(const int *)b].total_ns;
    return x < y ? 1 : x > y ? -1 : *(const int *)a - *(const int *)b;
}

static int by_op_total_desc(const void *a, const void *b) {
    uint64_t x = ((const op_total *)a)->total_ns, y = ((const op_total *)b)->total_ns;
    return x < y ? 1 : x > y ? -1 : 0;
}

static bool profile_fetch(const inf_session *s, profile *p) {
    memset(p, 0, sizeof *p);
    p->n = inf_session_profile(s, NULL, 0, &p->totals);
    p->nodes = calloc((size_t)p->n + 1, sizeof *p->nodes);
    p->order = calloc((size_t)p->n + 1, sizeof *p->order);
    p->ops = calloc((size_t)p->n + 1, sizeof *p->ops);
    if (!p->nodes || !p->order || !p->ops) return false;
    inf_session_profile(s, p->nodes, p->n, NULL);
    for (int i = 0; i < p->n; i++) p->order[i] = i;
    sort_base = p->nodes;
    qsort(p->order, (size_t)p->n, sizeof *p->order, by_total_desc);
    return true;
}

static void profile_free(profile *p) {
    free(p->nodes);
    free(p->order);
    free(p->ops);
}

/* "Conv+Clip": the op after optimisation and its fused activation, as `infera info` prints them. */
static void op_label(const inf_node_profile *n, char *buf, size_t size) {
    snprintf(buf, size, "%s%s%s", n->op_type, n->activation ? "+" : "", n->activation ? n->activation : "");
}

/* "1x32x48x48"; "scalar" for rank 0; "-" when output 0 is not a tensor or the node never ran. */
static void shape_label(const inf_node_profile *n, char *buf, size_t size) {
    if (n->ndim < 0) {
        snprintf(buf, size, "-");
        return;
    }
    if (n->ndim == 0) {
        snprintf(buf, size, "scalar");
        return;
    }
    size_t off = 0;
    buf[0] = '\0';
    for (int d = 0; d < n->ndim && off < size; d++)
        off += (size_t)snprintf(buf + off, size - off, d ? "x%lld" : "%lld", (long long)n->dims[d]);
}

/* "PARENT/BODY/NAME" for nodes of subgraphs (BODY: the subgraph's name, as
 * If's two branches may hold nodes of the same name), through every level. */
static void node_label(const profile *p, int i, char *buf, size_t size) {
    const inf_node_profile *n = &p->nodes[i];
    if (n->parent < 0 || n->parent >= p->n) {
        snprintf(buf, size, "%s", n->name);
        return;
    }
    char up[256];
    node_label(p, n->parent, up, sizeof up);
    snprintf(buf, size, "%s/%s%s%s", up, n->graph, n->graph[0] ? "/" : "", n->name);
}

static double us_per_run(const profile *p, uint64_t ns) {
    return p->totals.runs > 0 ? (double)ns / 1e3 / (double)p->totals.runs : 0;
}

static double pct_of_run(const profile *p, uint64_t ns) {
    return p->totals.run_ns > 0 ? 100.0 * (double)ns / (double)p->totals.run_ns : 0;
}

/* Sums main-graph nodes by op label into ops (capacity p->n); returns their number, largest first. */
static int sum_by_op(const profile *p, op_total *ops, uint64_t *nodes_ns) {
    int n_ops = 0;
    *nodes_ns = 0;
    for (int i = 0; i < p->n; i++) {
        const inf_node_profile *n = &p->nodes[i];
        if (n->parent >= 0) continue;
        char op[96];
        op_label(n, op, sizeof op);
        int k = 0;
        while (k < n_ops && strcmp(ops[k].op, op)) k++;
        if (k == n_ops) {
            memset(&ops[k], 0, sizeof ops[k]);
            snprintf(ops[k].op, sizeof ops[k].op, "%s", op);
            n_ops++;
        }
        ops[k].nodes++;
        ops[k].calls += n->calls;
        ops[k].total_ns += n->total_ns;
        *nodes_ns += n->total_ns;
    }
    qsort(ops, (size_t)n_ops, sizeof *ops, by_op_total_desc);
    return n_ops;
}

static void print_node_table(const profile *p) {
    int width = 4;
    char name[512];
    for (int i = 0; i < p->n; i++) {
        node_label(p, i, name, sizeof name);
        int len = (int)strlen(name);
        if (len > width) width = len < 56 ? len : 56;
    }
    printf("  %-*s  %-20s  %-18s  %9s  %10s  %6s\n", width, "node", "op", "output", "calls", "us/run", "% run");
    for (int r = 0; r < p->n; r++) {
        int i = p->order[r];
        const inf_node_profile *n = &p->nodes[i];
        char op[96], shape[160];
        node_label(p, i, name, sizeof name);
        op_label(n, op, sizeof op);
        shape_label(n, shape, sizeof shape);
        size_t len = strlen(name);
        const char *shown = len > (size_t)width ? name + len - (size_t)width + 2 : name; /* keep the tail */
        printf("  %s%-*s  %-20s  %-18s  %9lld  %10.2f  %6.1f\n", shown == name ? "" : "..",
               shown == name ? width : width - 2, shown, op, shape, (long long)n->calls, us_per_run(p, n->total_ns),
               pct_of_run(p, n->total_ns));
    }
}

static void print_op_table(const profile *p, const op_total *ops, int n_ops, uint64_t nodes_ns) {
    printf("by op type (main graph)\n");
    printf("  %-24s  %6s  %9s  %10s  %6s\n", "op", "nodes", "calls", "us/run", "% run");
    for (int k = 0; k < n_ops; k++)
        printf("  %-24s  %6d  %9lld  %10.2f  %6.1f\n", ops[k].op, ops[k].nodes, (long long)ops[k].calls,
               us_per_run(p, ops[k].total_ns), pct_of_run(p, ops[k].total_ns));
    uint64_t outside = p->totals.run_ns > nodes_ns ? p->totals.run_ns - nodes_ns : 0;
    printf("  %-24s  %6s  %9s  %10.2f  %6.1f\n", "(outside nodes)", "", "", us_per_run(p, outside), pct_of_run(p, outside));
}

static void print_text(const profile *p) {
    uint64_t nodes_ns = 0;
    int n_ops = sum_by_op(p, p->ops, &nodes_ns);
    printf("profile      %lld runs, %.2f us per run (inf_session_run), %d nodes\n", (long long)p->totals.runs,
           us_per_run(p, p->totals.run_ns), p->n);
    print_node_table(p);
    print_op_table(p, p->ops, n_ops, nodes_ns);
}

static void print_json_node(const profile *p, int i) {
    const inf_node_profile *n = &p->nodes[i];
    char op[96];
    op_label(n, op, sizeof op);
    printf("{\"node\":");
    cli_json_string(n->name);
    printf(",\"op\":");
    cli_json_string(op);
    printf(",\"parent\":");
    if (n->parent >= 0 && n->parent < p->n) cli_json_string(p->nodes[n->parent].name);
    else printf("null");
    printf(",\"graph\":");
    cli_json_string(n->graph);
    printf(",\"shape\":");
    if (n->ndim < 0) printf("null");
    else {
        putchar('[');
        for (int d = 0; d < n->ndim; d++) printf(d ? ",%lld" : "%lld", (long long)n->dims[d]);
        putchar(']');
    }
    printf(",\"calls\":%lld,\"total_us\":%.3f,\"us_per_run\":%.3f,\"min_us\":%.3f,\"max_us\":%.3f,\"pct_of_run\":%.2f}",
           (long long)n->calls, (double)n->total_ns / 1e3, us_per_run(p, n->total_ns), (double)n->min_ns / 1e3,
           (double)n->max_ns / 1e3, pct_of_run(p, n->total_ns));
}

static void print_json(const profile *p) {
    printf(",\"profile\":[");
    for (int r = 0; r < p->n; r++) {
        if (r) putchar(',');
        print_json_node(p, p->order[r]);
    }
    printf("],\"profile_run_us\":%.3f", us_per_run(p, p->totals.run_ns));
}

int bench_profile_print(const char *cmd, const inf_session *session, bool json) {
    profile p;
    if (!profile_fetch(session, &p)) {
        profile_free(&p);
        return cli_fail(cmd, "out of memory reading the profile");
    }
    if (json) print_json(&p);
    else print_text(&p);
    profile_free(&p);
    return 0;
}
