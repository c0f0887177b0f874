/*
 * log.c -- the engine's diagnostic messages.
 *
 * Process-wide log level (a clearly named singleton, read from INFERA_LOG at
 * first use: debug, info, warn, error).  Messages go to stderr, one line each.
 * The engine logs rarely: errors travel back as inf_error, not as log lines.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

static int g_log_level = -1; /* process-wide; -1 = not read yet */

static int log_level(void) {
    if (g_log_level < 0) {
        const char *env = getenv("INFERA_LOG");
        int level = INF_LOG_WARN;
        if (env) {
            if (!strcmp(env, "debug")) level = INF_LOG_DEBUG;
            else if (!strcmp(env, "info")) level = INF_LOG_INFO;
            else if (!strcmp(env, "error")) level = INF_LOG_ERROR;
        }
        g_log_level = level;
    }
    return g_log_level;
}

void inf__log(inf__log_level level, const char *fmt, ...) {
    static const char *names[] = {"debug", "info", "warn", "error"};
    if ((int)level < log_level()) return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "infera %s: %s\n", names[level], line);
}
