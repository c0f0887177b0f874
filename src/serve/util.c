/*
 * util.c -- small shared pieces of the online runner: growable byte buffers
 * (response bodies), JSON string escaping and number formatting, the
 * monotonic clock and the structured access log.
 *
 * A buffer that fails to grow sets oom and ignores later appends, so
 * encoders append freely and check once at the end.
 */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "serve/serve.h"

void inf__serve_buf_free(srv_buf *b) {
    free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
    b->oom = 0;
}

int inf__serve_buf_reserve(srv_buf *b, size_t extra) {
    if (b->oom) return -1;
    if (b->n + extra + 1 <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + extra + 1) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->oom = 1;
        return -1;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

void inf__serve_buf_printf(srv_buf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char tmp[512];
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < sizeof tmp) {
        inf__serve_buf_put(b, tmp, (size_t)n);
        return;
    }
    if (inf__serve_buf_reserve(b, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->n, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->n += (size_t)n;
}

/* The length of the well-formed UTF-8 sequence at s[0..n) (no overlongs,
 * surrogates or code points past U+10FFFF), 0 when it is not one. */
static size_t utf8_seq_len(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    size_t k = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    if (!k || k > n) return 0;
    unsigned cp = k == 2 ? c & 0x1F : k == 3 ? c & 0x0F : c & 0x07;
    for (size_t j = 1; j < k; j++) {
        if ((s[j] & 0xC0) != 0x80) return 0;
        cp = cp << 6 | (s[j] & 0x3F);
    }
    static const unsigned min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_cp[k] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return k;
}

int inf__serve_utf8_valid(const char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        if ((unsigned char)s[i] < 0x80) {
            i++;
            continue;
        }
        size_t k = utf8_seq_len((const unsigned char *)s + i, n - i);
        if (!k) return 0;
        i += k;
    }
    return 1;
}

/* Control characters are escaped, and a byte that does not start a
 * well-formed UTF-8 sequence is written as U+FFFD: whatever a request put
 * in a name, path or message, the JSON text out stays valid UTF-8. */
void inf__serve_buf_json_str(srv_buf *b, const char *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    if (inf__serve_buf_reserve(b, n + 2)) return;
    b->p[b->n++] = '"';
    size_t run = 0; /* bytes copied in one go */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') continue;
        if (c >= 0x80) {
            size_t k = utf8_seq_len((const unsigned char *)s + i, n - i);
            if (k) {
                i += k - 1;
                continue;
            }
            inf__serve_buf_put(b, s + run, i - run);
            inf__serve_buf_put(b, "\\ufffd", 6);
            run = i + 1;
            continue;
        }
        inf__serve_buf_put(b, s + run, i - run);
        char esc[7] = {'\\', 0};
        size_t k = 2;
        switch (c) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        default:
            esc[1] = 'u', esc[2] = '0', esc[3] = '0', esc[4] = hex[c >> 4], esc[5] = hex[c & 15];
            k = 6;
        }
        inf__serve_buf_put(b, esc, k);
        run = i + 1;
    }
    inf__serve_buf_put(b, s + run, n - run);
    inf__serve_buf_put(b, "\"", 1);
}

void inf__serve_buf_u64(srv_buf *b, uint64_t v) {
    char tmp[24];
    int i = 24;
    do {
        tmp[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    inf__serve_buf_put(b, tmp + i, (size_t)(24 - i));
}

void inf__serve_buf_i64(srv_buf *b, int64_t v) {
    if (v < 0) {
        inf__serve_buf_put(b, "-", 1);
        inf__serve_buf_u64(b, (uint64_t)0 - (uint64_t)v);
    } else {
        inf__serve_buf_u64(b, (uint64_t)v);
    }
}

void inf__serve_copy_str(char *dst, size_t size, const char *src) {
    if (!size) return;
    size_t n = src ? strnlen(src, size - 1) : 0;
    if (n) memcpy(dst, src, n);
    dst[n] = 0;
}

/* Non-finite values in the spelling of Python's json and of Triton
 * (rapidjson's kWriteNanAndInfFlag), which the request parser reads back:
 * null would lose which one it was (and is not a number). */
static void buf_nonfinite(srv_buf *b, double v) {
    if (isnan(v)) inf__serve_buf_put(b, "NaN", 3);
    else if (v > 0) inf__serve_buf_put(b, "Infinity", 8);
    else inf__serve_buf_put(b, "-Infinity", 9);
}

void inf__serve_buf_f32(srv_buf *b, float v) {
    if (!isfinite(v)) {
        buf_nonfinite(b, v);
        return;
    }
    char tmp[INF__SERVE_F32_MAX];
    inf__serve_buf_put(b, tmp, inf__serve_format_f32(v, tmp));
}

void inf__serve_buf_f64(srv_buf *b, double v) {
    if (!isfinite(v)) {
        buf_nonfinite(b, v);
        return;
    }
    char tmp[40];
    int n = 0;
    for (int prec = 15; prec <= 17; prec++) {
        n = snprintf(tmp, sizeof tmp, "%.*g", prec, v);
        if (prec == 17 || strtod(tmp, NULL) == v) break;
    }
    inf__serve_buf_put(b, tmp, (size_t)n);
}

char *inf__serve_buf_take(srv_buf *b, size_t *len) {
    if (!b->p && !b->oom) inf__serve_buf_reserve(b, 0);
    if (b->p) b->p[b->n] = 0;
    char *p = b->p;
    if (len) *len = b->n;
    b->p = NULL;
    b->n = b->cap = 0;
    return p;
}

uint64_t inf__serve_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* One JSON line per answered request: time, request id, method, path,
 * model, version, status, latency.  Never bodies, headers or tokens. */
void inf__serve_access_log(srv_server *srv, const srv_request *rq) {
    if (!srv->access_log) return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char when[40];
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    srv_buf b = {0};
    inf__serve_buf_printf(&b, "{\"time\":\"%s.%06ldZ\",\"request_id\":%llu,\"method\":", when, ts.tv_nsec / 1000,
                          (unsigned long long)rq->request_no);
    inf__serve_buf_json_str(&b, rq->method ? rq->method : "", rq->method ? strlen(rq->method) : 0);
    inf__serve_buf_puts(&b, ",\"path\":");
    inf__serve_buf_json_str(&b, rq->url ? rq->url : "", rq->url ? strlen(rq->url) : 0);
    if (rq->log_model[0]) {
        inf__serve_buf_puts(&b, ",\"model\":");
        inf__serve_buf_json_str(&b, rq->log_model, strlen(rq->log_model));
        inf__serve_buf_puts(&b, ",\"version\":");
        inf__serve_buf_json_str(&b, rq->log_version, strlen(rq->log_version));
    }
    if (rq->infer.id) {
        inf__serve_buf_puts(&b, ",\"id\":");
        inf__serve_buf_json_str(&b, rq->infer.id, strlen(rq->infer.id));
    }
    double us = (double)(inf__serve_now_ns() - rq->t_start_ns) / 1e3;
    inf__serve_buf_printf(&b, ",\"status\":%d,\"latency_us\":%.1f,\"bytes_in\":%zu}\n", rq->status, us, rq->body_len);
    if (!b.oom && b.p) {
        pthread_mutex_lock(&srv->log_lock);
        fwrite(b.p, 1, b.n, srv->access_log);
        fflush(srv->access_log);
        pthread_mutex_unlock(&srv->log_lock);
    }
    inf__serve_buf_free(&b);
}
