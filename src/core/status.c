/*
 * status.c -- status codes and error reports.
 *
 * The table of codes is INF_STATUS_MAP in include/infera/infera.h; this file
 * turns it into names, messages and HTTP codes, and formats inf_error reports.
 */
#include <stdio.h>
#include <string.h>

#include "core/core.h"

const char *inf_strerror(inf_status status) {
    switch (status) {
#define INF_STATUS_MSG(name, value, http, msg) \
    case INF_##name: return msg;
        INF_STATUS_MAP(INF_STATUS_MSG)
#undef INF_STATUS_MSG
    }
    return "unknown status";
}

const char *inf_status_name(inf_status status) {
    switch (status) {
#define INF_STATUS_NAME(name, value, http, msg) \
    case INF_##name: return "INF_" #name;
        INF_STATUS_MAP(INF_STATUS_NAME)
#undef INF_STATUS_NAME
    }
    return "INF_UNKNOWN";
}

int inf_status_is_data_error(inf_status status) {
    return status == INF_EINVAL || status == INF_EFORMAT || status == INF_ESHAPE || status == INF_ETYPE ||
           status == INF_ERANGE;
}

int inf_status_http_code(inf_status status) {
    switch (status) {
#define INF_STATUS_HTTP(name, value, http, msg) \
    case INF_##name: return http;
        INF_STATUS_MAP(INF_STATUS_HTTP)
#undef INF_STATUS_HTTP
    }
    return 500;
}

const char *inf_version(void) { return INFERA_VERSION_STRING; }

inf_status inf__verror(inf_error *err, inf_status status, const char *fmt, va_list ap) {
    if (err) {
        err->status = status;
        vsnprintf(err->message, sizeof err->message, fmt, ap);
    }
    return status;
}

inf_status inf_error_set(inf_error *err, inf_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    inf__verror(err, status, fmt, ap);
    va_end(ap);
    return status;
}

void inf__error_prefix(inf_error *err, const char *fmt, ...) {
    if (!err) return;
    char prefix[INF_ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    char old[INF_ERROR_MESSAGE_MAX];
    memcpy(old, err->message, sizeof old);
    size_t n = strlen(prefix);
    if (n > sizeof err->message - 3) n = sizeof err->message - 3;
    memcpy(err->message, prefix, n);
    memcpy(err->message + n, ": ", 2);
    size_t rest = sizeof err->message - n - 3;
    size_t m = strnlen(old, rest);
    memcpy(err->message + n + 2, old, m);
    err->message[n + 2 + m] = 0;
}
