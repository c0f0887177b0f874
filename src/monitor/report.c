/*
 * report.c -- the static HTML monitoring report (report.h).  Charts are
 * drawn here as inline SVG: a line chart (drift per window, quality per
 * window) and paired bars (baseline vs current distribution per column).
 * Every text that comes from data (column names, categories) is
 * HTML-escaped.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "monitor/report.h"

static const char *const PALETTE[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                      "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
#define N_PALETTE ((int)(sizeof PALETTE / sizeof PALETTE[0]))
#define MAX_SERIES 10

static void esc(FILE *f, const char *s) {
    for (; s && *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default: fputc(*s, f);
        }
    }
}

static double num(const cJSON *x) { return cJSON_IsNumber(x) ? x->valuedouble : NAN; }

/* ---- line chart ------------------------------------------------------------ */

typedef struct series {
    const char *name;
    double *y; /* n_x values, NAN = gap */
} series;

/* x labels are the windows' start times; hlines (NAN-terminated count n_h)
 * are reference levels (PSI 0.1 / 0.25). */
static void line_chart(FILE *f, const char *title, const char *css_class, int n_x, const char *const *xlab, const series *s,
                       int n_s, const double *hlines, int n_h) {
    const double W = 720, H = 260, L = 56, R = 170, T = 24, B = 40;
    double ymax = 0;
    for (int i = 0; i < n_s; i++)
        for (int k = 0; k < n_x; k++)
            if (isfinite(s[i].y[k]) && s[i].y[k] > ymax) ymax = s[i].y[k];
    for (int h = 0; h < n_h; h++)
        if (hlines[h] > ymax) ymax = hlines[h];
    if (ymax <= 0) ymax = 1;
    ymax *= 1.1;
    double pw = W - L - R, ph = H - T - B;
#define XS(k) (L + (n_x > 1 ? pw * (double)(k) / (double)(n_x - 1) : pw / 2))
#define YS(v) (T + ph - ph * (v) / ymax)
    fprintf(f, "<figure class=\"chart %s\"><figcaption>", css_class);
    esc(f, title);
    fprintf(f, "</figcaption>\n<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" height=\"%.0f\" role=\"img\">\n", W, H, W, H);
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#fafafa\" stroke=\"#ccc\"/>\n", L, T, pw, ph);
    for (int t = 0; t <= 4; t++) {
        double v = ymax * t / 4;
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" text-anchor=\"end\">%.3g</text>\n", L - 4, YS(v) + 3, v);
    }
    for (int h = 0; h < n_h; h++)
        fprintf(f, "<line class=\"ref\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#999\" stroke-dasharray=\"4 3\"/>\n",
                L, L + pw, YS(hlines[h]), YS(hlines[h]));
    int step = n_x > 8 ? (n_x + 7) / 8 : 1;
    for (int k = 0; k < n_x; k += step) {
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"9\" text-anchor=\"middle\">", XS(k), T + ph + 14);
        esc(f, xlab[k]);
        fputs("</text>\n", f);
    }
    for (int i = 0; i < n_s; i++) {
        const char *color = PALETTE[i % N_PALETTE];
        fprintf(f, "<polyline class=\"series\" data-name=\"");
        esc(f, s[i].name);
        fprintf(f, "\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", color);
        for (int k = 0; k < n_x; k++)
            if (isfinite(s[i].y[k])) fprintf(f, "%.1f,%.1f ", XS(k), YS(s[i].y[k]));
        fputs("\"/>\n", f);
        for (int k = 0; k < n_x; k++)
            if (isfinite(s[i].y[k])) {
                fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"><title>", XS(k), YS(s[i].y[k]), color);
                esc(f, s[i].name);
                fprintf(f, " %s: %.4g</title></circle>\n", xlab[k], s[i].y[k]);
            }
        fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"10\" height=\"10\" fill=\"%s\"/><text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">",
                W - R + 10, T + 14.0 * i, color, W - R + 24, T + 14.0 * i + 9);
        esc(f, s[i].name);
        fputs("</text>\n", f);
    }
    fputs("</svg></figure>\n", f);
#undef XS
#undef YS
}

/* ---- sections ---------------------------------------------------------------- */

static const char *level_class(double psi) { return !isfinite(psi) ? "na" : psi > 0.25 ? "high" : psi > 0.1 ? "mid" : "low"; }

static void drift_table(FILE *f, const cJSON *overall) {
    static const char *const sections[] = {"features", "outputs"};
    fputs("<table class=\"drift\"><thead><tr><th>column</th><th>kind</th><th>PSI</th><th>JS</th><th>KS / &chi;&sup2;</th></tr></thead><tbody>\n", f);
    for (int s = 0; s < 2; s++) {
        const cJSON *c;
        cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(overall, sections[s])) {
            double psi = num(cJSON_GetObjectItemCaseSensitive(c, "psi"));
            const cJSON *third = cJSON_GetObjectItemCaseSensitive(c, "ks");
            if (!third) third = cJSON_GetObjectItemCaseSensitive(c, "chi2");
            fprintf(f, "<tr class=\"%s\"><td>", level_class(psi));
            esc(f, c->string);
            fprintf(f, "</td><td>%s</td>", s ? "output" : "feature");
            const cJSON *vals[3] = {cJSON_GetObjectItemCaseSensitive(c, "psi"), cJSON_GetObjectItemCaseSensitive(c, "js"), third};
            for (int k = 0; k < 3; k++)
                if (cJSON_IsNumber(vals[k])) fprintf(f, "<td>%.4f</td>", vals[k]->valuedouble);
                else fputs("<td>&ndash;</td>", f);
            fputs("</tr>\n", f);
        }
    }
    fputs("</tbody></table>\n", f);
}

/* The columns of the worst drift (max PSI over windows), at most MAX_SERIES. */
static int worst_columns(const cJSON *windows, const cJSON *overall, const char **names) {
    static const char *const sections[] = {"features", "outputs"};
    double best[MAX_SERIES];
    int n = 0;
    for (int s = 0; s < 2; s++) {
        const cJSON *c;
        cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(overall, sections[s])) {
            double m = -1;
            const cJSON *w;
            cJSON_ArrayForEach(w, windows) {
                double v = num(cJSON_GetObjectItemCaseSensitive(
                    cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(w, sections[s]), c->string), "psi"));
                if (isfinite(v) && v > m) m = v;
            }
            if (n == MAX_SERIES && m <= best[MAX_SERIES - 1]) continue;
            int at = n < MAX_SERIES ? n++ : MAX_SERIES - 1;
            best[at] = m;
            names[at] = c->string;
            for (int i = at; i > 0 && best[i] > best[i - 1]; i--) {
                double tb = best[i];
                best[i] = best[i - 1], best[i - 1] = tb;
                const char *tn = names[i];
                names[i] = names[i - 1], names[i - 1] = tn;
            }
        }
    }
    return n;
}

static const cJSON *column_of(const cJSON *drift, const char *name) {
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(drift, "features"), name);
    return c ? c : cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(drift, "outputs"), name);
}

static inf_status window_labels(const cJSON *arr, const char *key, char ***out, int *n) {
    *n = cJSON_GetArraySize(arr);
    *out = calloc((size_t)(*n ? *n : 1), sizeof **out);
    if (!*out) return INF_ENOMEM;
    int k = 0;
    const cJSON *w;
    cJSON_ArrayForEach(w, arr) {
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(w, key);
        char buf[40];
        snprintf(buf, sizeof buf, "%.16s", cJSON_IsString(s) ? s->valuestring : "?");
        if (!((*out)[k++] = strdup(buf))) return INF_ENOMEM;
    }
    return INF_OK;
}

static void free_labels(char **l, int n) {
    for (int i = 0; l && i < n; i++) free(l[i]);
    free(l);
}

static inf_status drift_over_time(FILE *f, const cJSON *r) {
    const cJSON *windows = cJSON_GetObjectItemCaseSensitive(r, "windows");
    const char *names[MAX_SERIES];
    int n_s = worst_columns(windows, cJSON_GetObjectItemCaseSensitive(r, "overall"), names);
    char **xlab = NULL;
    int n_x = 0;
    series s[MAX_SERIES];
    inf_status st = window_labels(windows, "start", &xlab, &n_x);
    for (int i = 0; i < n_s; i++) s[i].y = NULL;
    for (int i = 0; st == INF_OK && i < n_s; i++) {
        s[i].name = names[i];
        if (!(s[i].y = malloc((size_t)(n_x ? n_x : 1) * sizeof(double)))) st = INF_ENOMEM;
        for (int k = 0; st == INF_OK && k < n_x; k++)
            s[i].y[k] = num(cJSON_GetObjectItemCaseSensitive(column_of(cJSON_GetArrayItem(windows, k), names[i]), "psi"));
    }
    if (st == INF_OK && n_x > 0) {
        static const double refs[] = {0.1, 0.25};
        line_chart(f, "PSI per window (the most drifted columns; dashed: 0.1 and 0.25)", "drift-chart", n_x,
                   (const char *const *)xlab, s, n_s, refs, 2);
    }
    for (int i = 0; i < n_s; i++) free(s[i].y);
    free_labels(xlab, n_x);
    return st;
}

static inf_status quality_over_time(FILE *f, const cJSON *r) {
    const cJSON *qw = cJSON_GetObjectItemCaseSensitive(r, "quality_windows");
    if (!cJSON_IsArray(qw) || cJSON_GetArraySize(qw) == 0) return INF_OK;
    const cJSON *first = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(qw, 0), "metrics"), *m;
    const char *names[MAX_SERIES];
    int n_s = 0;
    cJSON_ArrayForEach(m, first) if (n_s < MAX_SERIES) names[n_s++] = m->string;
    char **xlab = NULL;
    int n_x = 0;
    series s[MAX_SERIES];
    inf_status st = window_labels(qw, "start", &xlab, &n_x);
    for (int i = 0; i < n_s; i++) s[i].y = NULL;
    for (int i = 0; st == INF_OK && i < n_s; i++) {
        s[i].name = names[i];
        if (!(s[i].y = malloc((size_t)(n_x ? n_x : 1) * sizeof(double)))) st = INF_ENOMEM;
        for (int k = 0; st == INF_OK && k < n_x; k++)
            s[i].y[k] = num(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(qw, k), "metrics"), names[i]));
    }
    if (st == INF_OK) line_chart(f, "Quality per window (labelled predictions, by when they were logged)", "quality-chart", n_x,
                                 (const char *const *)xlab, s, n_s, NULL, 0);
    for (int i = 0; i < n_s; i++) free(s[i].y);
    free_labels(xlab, n_x);
    return st;
}

/* Paired bars: baseline (grey) and current (blue) fractions per bin. */
static void histogram(FILE *f, const char *name, const cJSON *h) {
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(h, "baseline"), *c = cJSON_GetObjectItemCaseSensitive(h, "current");
    int n = cJSON_GetArraySize(b);
    if (n <= 0) return;
    const double W = 220, H = 110, P = 14;
    double ymax = 0;
    for (int i = 0; i < n; i++) {
        double x = num(cJSON_GetArrayItem(b, i)), y = num(cJSON_GetArrayItem(c, i));
        if (x > ymax) ymax = x;
        if (y > ymax) ymax = y;
    }
    if (ymax <= 0) ymax = 1;
    double bw = (W - 2 * P) / n;
    fputs("<figure class=\"hist\"><figcaption>", f);
    esc(f, name);
    fprintf(f, "</figcaption><svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" height=\"%.0f\">", W, H, W, H);
    for (int i = 0; i < n; i++) {
        double x = num(cJSON_GetArrayItem(b, i)), y = num(cJSON_GetArrayItem(c, i));
        double hx = (H - 2 * P) * x / ymax, hy = (H - 2 * P) * y / ymax;
        fprintf(f, "<rect class=\"base\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#bbb\"><title>baseline %.3f</title></rect>",
                P + i * bw, H - P - hx, bw * 0.45, hx, x);
        fprintf(f, "<rect class=\"cur\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#1f77b4\"><title>current %.3f</title></rect>",
                P + i * bw + bw * 0.45, H - P - hy, bw * 0.45, hy, y);
    }
    fprintf(f, "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.0f\" y2=\"%.0f\" stroke=\"#666\"/></svg></figure>\n", P, W - P, H - P, H - P);
}

static void quality_table(FILE *f, const cJSON *q) {
    if (!q) return;
    fputs("<h2>Quality from late labels</h2>\n<table class=\"quality\"><tbody>\n", f);
    static const char *const counts[] = {"rows_joined", "predictions", "labels", "unlabelled", "labels_unmatched",
                                         "duplicate_labels", "duplicate_predictions", "missing"};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
        fprintf(f, "<tr><th>%s</th><td>%.0f</td></tr>\n", counts[i], num(cJSON_GetObjectItemCaseSensitive(q, counts[i])));
    const cJSON *m;
    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(q, "metrics")) {
        fputs("<tr><th>", f);
        esc(f, m->string);
        if (cJSON_IsNumber(m)) fprintf(f, "</th><td>%.4f</td></tr>\n", m->valuedouble);
        else fputs("</th><td>&ndash;</td></tr>\n", f);
    }
    fputs("</tbody></table>\n", f);
}

static const char CSS[] =
    "body{font:14px system-ui,sans-serif;margin:24px;color:#222;max-width:1100px}"
    "h1{font-size:20px}h2{font-size:16px;margin-top:28px}"
    "table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:3px 8px;text-align:right}"
    "td:first-child,th:first-child{text-align:left}"
    "tr.high td{background:#fdd}tr.mid td{background:#ffd}figure{margin:8px}"
    "figcaption{font-weight:600;margin-bottom:4px}.hists{display:flex;flex-wrap:wrap}"
    ".legend span{display:inline-block;width:10px;height:10px;margin:0 4px 0 12px}";

inf_status inf__mon_report_html(FILE *f, const cJSON *r, inf_error *err) {
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(r, "model"), *version = cJSON_GetObjectItemCaseSensitive(r, "version");
    const char *mn = cJSON_IsString(model) ? model->valuestring : "", *vn = cJSON_IsString(version) ? version->valuestring : "";
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Monitoring report: ", f);
    esc(f, mn);
    fprintf(f, "</title><style>%s</style></head><body>\n<h1>Monitoring report: ", CSS);
    esc(f, mn);
    fputs(" version ", f);
    esc(f, vn);
    const cJSON *gen = cJSON_GetObjectItemCaseSensitive(r, "generated");
    fprintf(f, "</h1>\n<p>%.0f logged predictions; generated %s by infera monitor report.  PSI &lt; 0.1 stable, 0.1&ndash;0.25 moderate, &gt; 0.25 a shift.</p>\n",
            num(cJSON_GetObjectItemCaseSensitive(r, "rows")), cJSON_IsString(gen) ? gen->valuestring : "");
    fputs("<h2>Drift of the whole log against the baseline</h2>\n", f);
    drift_table(f, cJSON_GetObjectItemCaseSensitive(r, "overall"));
    fputs("<h2>Drift over time</h2>\n", f);
    inf_status st = drift_over_time(f, r);
    fputs("<h2>Distributions: baseline (grey) and logged (blue)</h2>\n<div class=\"hists\">\n", f);
    const cJSON *h;
    cJSON_ArrayForEach(h, cJSON_GetObjectItemCaseSensitive(r, "histograms")) histogram(f, h->string, h);
    fputs("</div>\n", f);
    quality_table(f, cJSON_GetObjectItemCaseSensitive(r, "quality"));
    if (st == INF_OK) st = quality_over_time(f, r);
    /* the numbers behind the charts, for machines (never executed) */
    char *data = cJSON_PrintUnformatted(r);
    if (!data) return inf_error_set(err, INF_ENOMEM, "report: out of memory");
    fputs("<script type=\"application/json\" id=\"report-data\">", f);
    for (const char *p = data; *p; p++) /* "</" cannot end the block early */
        if (p[0] == '<' && p[1] == '/') fputs("<\\/", f), p++;
        else fputc(*p, f);
    fputs("</script>\n</body></html>\n", f);
    free(data);
    if (st) return inf_error_set(err, st, "report: out of memory");
    return ferror(f) ? inf_error_set(err, INF_EIO, "report: write failed") : INF_OK;
}
