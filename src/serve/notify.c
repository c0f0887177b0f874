/*
 * notify.c -- hears alias moves of a PostgreSQL registry as they commit:
 * LISTEN on the channel "infera_alias" (src/registry/store_pg.c sends a
 * NOTIFY with every write of an alias), so `infera serve` reloads at once
 * instead of at its next poll.  The SQLite registry has no such channel and
 * is polled (--poll-secs).
 *
 * The listener is one libpq connection of its own, used only by the models
 * poller thread; a self-pipe lets shutdown wake it.  A lost connection is
 * re-opened on the next wait (the poll period still applies meanwhile).
 * This is the one place the runner speaks to PostgreSQL directly: the
 * registry API has no "wait for a change" call (a documented deviation).
 */
#include <errno.h>
#include <fcntl.h>
#include <libpq-fe.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "serve/serve.h"

struct srv_listener {
    char *url;
    PGconn *conn;
    int wake[2];
};

static void quiet(void *arg, const char *message) { (void)arg, (void)message; }

static int connect_listen(srv_listener *l) {
    if (l->conn && PQstatus(l->conn) == CONNECTION_OK) return 0;
    if (l->conn) PQfinish(l->conn);
    l->conn = PQconnectdb(l->url);
    if (!l->conn || PQstatus(l->conn) != CONNECTION_OK) return -1;
    PQsetNoticeProcessor(l->conn, quiet, NULL);
    PGresult *res = PQexec(l->conn, "LISTEN infera_alias");
    int ok = PQresultStatus(res) == PGRES_COMMAND_OK;
    PQclear(res);
    return ok ? 0 : -1;
}

inf_status inf__serve_listen_open(const char *url, srv_listener **out, inf_error *err) {
    *out = NULL;
    if (!url || (strncasecmp(url, "postgresql://", 13) && strncasecmp(url, "postgres://", 11))) return INF_OK;
    srv_listener *l = calloc(1, sizeof *l);
    if (!l || !(l->url = strdup(url)) || pipe2(l->wake, O_NONBLOCK | O_CLOEXEC)) {
        if (l) free(l->url);
        free(l);
        inf_error_set(err, INF_ENOMEM, "cannot set up LISTEN for registry alias changes");
        return INF_ENOMEM;
    }
    if (connect_listen(l)) {
        /* not fatal: the server still polls; the message names the cause without the URL's password */
        char msg[200];
        snprintf(msg, sizeof msg, "%s", l->conn ? PQerrorMessage(l->conn) : "out of memory");
        msg[strcspn(msg, "\n")] = 0;
        fprintf(stderr, "infera serve: LISTEN for alias changes failed (%s); polling only for now\n", msg);
    }
    *out = l;
    return INF_OK;
}

int inf__serve_listen_wait(srv_listener *l, int timeout_ms) {
    int have = connect_listen(l) == 0;
    struct pollfd fds[2] = {{l->wake[0], POLLIN, 0}, {have ? PQsocket(l->conn) : -1, POLLIN, 0}};
    int n = poll(fds, 2, timeout_ms);
    if (n <= 0) return 0;
    if (fds[0].revents) {
        char buf[64];
        while (read(l->wake[0], buf, sizeof buf) > 0) {
        }
        return 0;
    }
    if (!have || !PQconsumeInput(l->conn)) return -1;
    int moved = 0;
    PGnotify *nt;
    while ((nt = PQnotifies(l->conn))) {
        moved = 1;
        PQfreemem(nt);
    }
    return moved;
}

void inf__serve_listen_wake(srv_listener *l) {
    if (l && write(l->wake[1], "x", 1) < 0 && errno != EAGAIN) {
        /* the pipe is full: the poller is awake anyway */
    }
}

void inf__serve_listen_close(srv_listener *l) {
    if (!l) return;
    if (l->conn) PQfinish(l->conn);
    close(l->wake[0]);
    close(l->wake[1]);
    free(l->url);
    free(l);
}
