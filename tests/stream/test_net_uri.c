/*
 * test_net_uri.c -- unit tests of inf_io_parse_net_uri and inf_io_uri_param
 * (include/infera/io.h), the URI parsing of the redis:// and mqtt:// sources
 * and sinks of `infera stream`: credentials, percent-decoding, default and
 * explicit ports, paths, parameters, and URIs that must be refused.
 * Prints one line per check and closes with "N passed, M failed".
 */
#include <stdio.h>
#include <string.h>

#include "infera/io.h"


#include "../check.h"

static void check_str(const char *got, const char *want, const char *what) {
    if (!strcmp(got, want)) {
        check_passed++;
    } else {
        check_failed++;
        printf("FAIL %s: got '%s', want '%s'\n", what, got, want);
    }
}

int main(void) {
    inf_net_uri u;
    inf_error e;
    CHECK(inf_io_parse_net_uri("redis://127.0.0.1:6380/tx?group=g", 6379, &u, &e) == INF_OK, "plain redis URI parses");
    check_str(u.scheme, "redis", "scheme");
    check_str(u.host, "127.0.0.1", "host");
    CHECK(u.port == 6380, "explicit port");
    check_str(u.path, "tx", "path stops at '?'");
    CHECK(u.user[0] == 0 && u.password[0] == 0, "no credentials");

    CHECK(inf_io_parse_net_uri("mqtt://broker/sensors/+/temp", 1883, &u, &e) == INF_OK, "mqtt URI without port");
    CHECK(u.port == 1883, "default port");
    check_str(u.path, "sensors/+/temp", "topic with slashes and wildcard");

    CHECK(inf_io_parse_net_uri("redis://alice:s%40cr%3At@h:1/a%20b", 6379, &u, &e) == INF_OK, "credentials parse");
    check_str(u.user, "alice", "user");
    check_str(u.password, "s@cr:t", "password percent-decoded");
    check_str(u.path, "a b", "path percent-decoded");
    CHECK(inf_io_parse_net_uri("redis://:only@h", 6379, &u, &e) == INF_OK && !strcmp(u.password, "only") && !u.user[0],
          "password without user");
    CHECK(inf_io_parse_net_uri("redis://h", 6379, &u, &e) == INF_OK && u.path[0] == 0, "no path");

    const char *bad[] = {"redis:/h/x", "redis://", "redis://:1/x", "redis://h:99999/x", "redis://h:12x/x",
                         "://h/x",     NULL};
    for (int i = 0; bad[i]; i++) {
        memset(&e, 0, sizeof e);
        char what[100];
        snprintf(what, sizeof what, "'%s' refused with INF_EINVAL and a message", bad[i]);
        CHECK(inf_io_parse_net_uri(bad[i], 6379, &u, &e) == INF_EINVAL && strstr(e.message, "expected SCHEME://"),
              what);
    }
    CHECK(inf_io_parse_net_uri("redis://bob:hunter2@h:1/x", 6379, &u, NULL) == INF_OK, "err may be NULL");
    memset(&e, 0, sizeof e);
    inf_io_parse_net_uri("redis://bob:hunter2@:x/x", 6379, &u, &e);
    CHECK(e.message[0] && !strstr(e.message, "hunter2"), "the error message does not show the password");

    char buf[64];
    CHECK(inf_io_uri_param("redis://h/s?group=g%201&consumer=c+2", "group", buf, sizeof buf) && !strcmp(buf, "g 1"),
          "parameter percent-decoded");
    CHECK(inf_io_uri_param("redis://h/s?group=g%201&consumer=c+2", "consumer", buf, sizeof buf) && !strcmp(buf, "c 2"),
          "second parameter, '+' = space");
    CHECK(!inf_io_uri_param("redis://h/s?group=g", "consumer", buf, sizeof buf), "absent parameter");
    CHECK(!inf_io_uri_param("redis://h/s?groupx=g", "group", buf, sizeof buf), "prefix of another name is not a match");

    return check_summary("net_uri");
}
