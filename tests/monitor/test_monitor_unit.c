/*
 * test_monitor_unit.c -- unit tests of the monitoring building blocks
 * (issue 23): the alert rule file's parser (every bad field refused with
 * the rule and field named), a rule's check against a drift window (the
 * threshold is strict, min_rows, the worst column for "*", unknown
 * values), the webhook's URL errors, and the online window (no drift before
 * rows, rows profiled up to max_rows, a closed window reported as the last
 * complete one), the rule file's "labels" section (defaults, bad fields
 * refused) and the quality history store (a recomputed window replaces the
 * stored one of its start, older windows stay, time order).  Expected
 * values are stated by the definitions in rules.h / online.h /
 * quality_store.h, not computed by the code under test.
 */
#include <math.h>
#include <stdlib.h>
#include <unistd.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "monitor/actions.h"
#include "monitor/online.h"
#include "monitor/profile.h"
#include "monitor/quality_store.h"
#include "monitor/rules.h"

#include "../check.h"

static inf_status parse(const char *text, inf__mon_rules *rs, inf_error *e) {
    return inf__mon_rules_parse(text, strlen(text), "rules.json", rs, e);
}

static void test_rules_parse(void) {
    inf__mon_rules rs;
    inf_error e = {0};
    inf_status st = parse("{\"rules\":[{\"name\":\"a\",\"metric\":\"psi\",\"threshold\":0.25},"
                          "{\"name\":\"b\",\"metric\":\"ks\",\"feature\":\"x\",\"threshold\":0.1,\"window\":\"15m\","
                          "\"for\":\"30m\",\"min_rows\":5,\"action\":[\"webhook\",\"rollback\"],"
                          "\"webhook\":\"http://127.0.0.1:9/h\",\"alias\":\"prod\"}]}",
                          &rs, &e);
    CHECK(st == INF_OK && rs.n == 2, "valid rules: %s", e.message);
    if (st == INF_OK) {
        const inf__mon_rule *a = &rs.rules[0], *b = &rs.rules[1];
        CHECK(!strcmp(a->feature, "*") && a->window_us == 3600000000LL && a->for_us == 0 && a->min_rows == 30 &&
                  a->actions == 0 && !strcmp(a->alias, "production"),
              "defaults");
        CHECK(b->window_us == 900000000LL && b->for_us == 1800000000LL && b->min_rows == 5 &&
                  b->actions == (INF__MON_ACT_WEBHOOK | INF__MON_ACT_ROLLBACK) && !strcmp(b->alias, "prod"),
              "explicit fields");
        inf__mon_rules_free(&rs);
    }
    static const struct {
        const char *text, *needle;
    } bad[] = {
        {"[]", "at least one rule"},
        {"{\"rules\":[{\"metric\":\"psi\",\"threshold\":1}]}", "\"name\""},
        {"{\"rules\":[{\"name\":\"r\",\"metric\":\"speed\",\"threshold\":1}]}", "rule 'r': \"metric\""},
        {"{\"rules\":[{\"name\":\"r\",\"metric\":\"psi\"}]}", "rule 'r': \"threshold\""},
        {"{\"rules\":[{\"name\":\"r\",\"metric\":\"psi\",\"threshold\":1,\"window\":\"0s\"}]}", "window"},
        {"{\"rules\":[{\"name\":\"r\",\"metric\":\"psi\",\"threshold\":1,\"for\":\"soon\"}]}", ".for"},
        {"{\"rules\":[{\"name\":\"r\",\"metric\":\"psi\",\"threshold\":1,\"action\":\"page\"}]}", "action"},
        {"{\"rules\":[{\"name\":\"r\",\"metric\":\"psi\",\"threshold\":1,\"action\":\"webhook\"}]}", "needs a \"webhook\""},
        {"{\"rules\":[{\"name\":\"r\",\"metric\":\"psi\",\"threshold\":1,\"webhook\":\"https://x\"}]}", "http://"},
        {"{\"rules\":[{\"name\":\"r\",\"metric\":\"psi\",\"threshold\":1,\"min_rows\":-1}]}", "min_rows"},
        {"not json", "not JSON"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        inf_error be = {0};
        st = parse(bad[i].text, &rs, &be);
        CHECK(st == INF_EFORMAT && strstr(be.message, bad[i].needle) && strstr(be.message, "rules.json"),
              "bad rule %zu: status %d, message '%s' (want '%s')", i, st, be.message, bad[i].needle);
        if (st == INF_OK) inf__mon_rules_free(&rs);
    }
    CHECK(inf__mon_parse_duration_us("90s") == 90000000LL && inf__mon_parse_duration_us("1d") == 86400000000LL &&
              inf__mon_parse_duration_us("2x") == 0 && inf__mon_parse_duration_us("") == 0,
          "durations");
}

static void test_labels_section(void) {
    inf__mon_rules rs;
    inf_error e = {0};
    const char *rule = "\"rules\":[{\"name\":\"q\",\"metric\":\"accuracy\",\"threshold\":0.9}]";
    char text[512];
    snprintf(text, sizeof text, "{%s}", rule);
    CHECK(parse(text, &rs, &e) == INF_OK && !rs.labels.has, "no labels section: %s", e.message);
    inf__mon_rules_free(&rs);
    snprintf(text, sizeof text, "{\"labels\":{\"source\":\"csv:l.csv\",\"id_column\":\"id\",\"label_column\":\"y\"},%s}", rule);
    CHECK(parse(text, &rs, &e) == INF_OK && rs.labels.has && !strcmp(rs.labels.source, "csv:l.csv") &&
              !strcmp(rs.labels.id_column, "id") && !strcmp(rs.labels.label_column, "y") && !rs.labels.log[0] &&
              !rs.labels.prediction_column[0] && rs.labels.window_us == 3600000000LL,
          "labels defaults: %s", e.message);
    inf__mon_rules_free(&rs);
    static const struct {
        const char *labels, *needle;
    } bad[] = {
        {"[]", "\"labels\" must be an object"},
        {"{\"id_column\":\"id\",\"label_column\":\"y\"}", "labels.source"},
        {"{\"source\":\"csv:l\",\"label_column\":\"y\"}", "labels.id_column"},
        {"{\"source\":\"csv:l\",\"id_column\":\"id\",\"label_column\":\"\"}", "labels.label_column"},
        {"{\"source\":\"csv:l\",\"id_column\":\"id\",\"label_column\":\"y\",\"window\":\"0s\"}", "labels.window"},
        {"{\"source\":\"csv:l\",\"id_column\":\"id\",\"label_column\":\"y\",\"log\":3}", "labels.log"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        inf_error be = {0};
        snprintf(text, sizeof text, "{\"labels\":%s,%s}", bad[i].labels, rule);
        inf_status st = parse(text, &rs, &be);
        CHECK(st == INF_EFORMAT && strstr(be.message, bad[i].needle), "bad labels %zu: status %d, '%s' (want '%s')", i,
              st, be.message, bad[i].needle);
        if (st == INF_OK) inf__mon_rules_free(&rs);
    }
}

/* A history document of windows starting on the given days of December (accuracy = day / 100). */
static cJSON *history(const int *days, int n) {
    cJSON *doc = cJSON_CreateObject(), *ws = cJSON_AddArrayToObject(doc, "windows");
    cJSON_AddStringToObject(doc, "model", "m");
    cJSON_AddStringToObject(doc, "version", "3");
    for (int i = 0; i < n; i++) {
        char start[40];
        snprintf(start, sizeof start, "2026-12-%02dT00:00:00Z", days[i]);
        cJSON *w = cJSON_CreateObject();
        cJSON_AddStringToObject(w, "start", start);
        cJSON_AddNumberToObject(cJSON_AddObjectToObject(w, "metrics"), "accuracy", days[i] / 100.0);
        cJSON_AddItemToArray(ws, w);
    }
    return doc;
}

static void test_quality_store(void) {
    char home[] = "/tmp/infera-qstore-XXXXXX";
    if (!mkdtemp(home)) return;
    inf_error e = {0};
    int first[] = {2, 3}, second[] = {4, 3};
    cJSON *a = history(first, 2), *b = history(second, 2), *got = NULL, *list = NULL;
    cJSON_ReplaceItemInObject(cJSON_GetArrayItem(cJSON_GetObjectItem(b, "windows"), 1), "metrics", cJSON_CreateObject());
    CHECK(inf__mon_quality_store(home, "m", "3", a, &e) == INF_OK, "store: %s", e.message);
    CHECK(inf__mon_quality_store(home, "m", "3", b, &e) == INF_OK, "store again: %s", e.message);
    CHECK(inf__mon_quality_find(home, "m", "3", &got, &e) == INF_OK, "find: %s", e.message);
    const cJSON *ws = cJSON_GetObjectItem(got, "windows");
    CHECK(cJSON_GetArraySize(ws) == 3, "windows 2, 3, 4 kept (got %d)", cJSON_GetArraySize(ws));
    static const char *const want[] = {"2026-12-02T00:00:00Z", "2026-12-03T00:00:00Z", "2026-12-04T00:00:00Z"};
    for (int i = 0; i < 3 && i < cJSON_GetArraySize(ws); i++)
        CHECK(!strcmp(cJSON_GetObjectItem(cJSON_GetArrayItem(ws, i), "start")->valuestring, want[i]), "order %d", i);
    CHECK(!cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetArrayItem(ws, 1), "metrics"), "accuracy"),
          "the recomputed window replaced the stored one");
    CHECK(inf__mon_quality_find(home, "m", "9", &list, &e) == INF_ENOENT && !list, "no history: ENOENT");
    CHECK(inf__mon_quality_store(home, "../x", "3", a, &e) == INF_EINVAL, "a name with a slash refused");
    CHECK(inf__mon_quality_list(home, NULL, &list, &e) == INF_OK && cJSON_GetArraySize(list) == 1 &&
              !strcmp(cJSON_GetArrayItem(list, 0)->valuestring, "m"),
          "list of models");
    cJSON_Delete(list);
    CHECK(inf__mon_quality_list(home, "m", &list, &e) == INF_OK && cJSON_GetArraySize(list) == 1, "list of versions");
    cJSON_Delete(list);
    cJSON_Delete(a);
    cJSON_Delete(b);
    cJSON_Delete(got);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", home);
    if (system(cmd)) fprintf(stderr, "cannot remove %s\n", home);
}

static void test_rule_check(void) {
    inf__mon_rules rs;
    inf_error e = {0};
    parse("{\"rules\":[{\"name\":\"one\",\"metric\":\"psi\",\"feature\":\"x\",\"threshold\":0.25,\"min_rows\":10},"
          "{\"name\":\"any\",\"metric\":\"psi\",\"threshold\":0.25,\"min_rows\":10},"
          "{\"name\":\"chi\",\"metric\":\"chi2\",\"feature\":\"x\",\"threshold\":1,\"min_rows\":10}]}",
          &rs, &e);
    cJSON *d = cJSON_Parse("{\"rows\":10,\"features\":{\"x\":{\"psi\":0.25,\"js\":0.1},\"y\":{\"psi\":0.4}},"
                           "\"outputs\":{\"s\":{\"psi\":0.3}}}");
    double v;
    const char *col;
    CHECK(inf__mon_rule_check(&rs.rules[0], d, &v, &col) == 0 && v == 0.25, "threshold is strict (0.25 > 0.25 is false)");
    CHECK(inf__mon_rule_check(&rs.rules[1], d, &v, &col) == 1 && v == 0.4 && !strcmp(col, "y"), "\"*\": the worst column");
    CHECK(inf__mon_rule_check(&rs.rules[2], d, &v, &col) == -1, "a metric the column lacks is unknown");
    cJSON_ReplaceItemInObject(d, "rows", cJSON_CreateNumber(9));
    CHECK(inf__mon_rule_check(&rs.rules[1], d, &v, &col) == -1, "fewer than min_rows: unknown");
    cJSON_Delete(d);
    inf__mon_rules_free(&rs);
    /* quality rules: auc, accuracy... breach below the threshold, logloss, rmse, mae above it */
    parse("{\"rules\":[{\"name\":\"auc\",\"metric\":\"auc\",\"threshold\":0.7,\"min_rows\":1},"
          "{\"name\":\"ll\",\"metric\":\"logloss\",\"threshold\":0.1,\"min_rows\":1}]}", &rs, &e);
    cJSON *q = cJSON_Parse("{\"rows\":5,\"metrics\":{\"auc\":0.6,\"logloss\":0.05}}");
    CHECK(rs.n == 2 && rs.rules[0].quality && rs.rules[0].higher_is_better && !rs.rules[1].higher_is_better, "quality kinds");
    CHECK(inf__mon_rule_check(&rs.rules[0], q, &v, &col) == 1 && v == 0.6, "auc 0.6 < 0.7 breaches");
    CHECK(inf__mon_rule_check(&rs.rules[1], q, &v, &col) == 0 && v == 0.05, "logloss 0.05 <= 0.1 holds");
    cJSON_Delete(q);
    inf__mon_rules_free(&rs);
}

static void test_webhook_errors(void) {
    int code;
    inf_error e = {0};
    CHECK(inf__mon_webhook_post("https://x/", "{}", 100, &code, &e) == INF_EINVAL, "https refused");
    CHECK(inf__mon_webhook_post("http://:80/", "{}", 100, &code, &e) == INF_EINVAL, "no host");
    CHECK(inf__mon_webhook_post("http://127.0.0.1:1/h", "{}", 500, &code, &e) == INF_EIO && strstr(e.message, "connect"),
          "closed port: %s", e.message);
}

/* A baseline with one numeric feature x (edges 1, 2: three bins). */
static inf__mon_profile *baseline(void) {
    cJSON *j = cJSON_Parse("{\"rows\":3,\"features\":{\"x\":{\"type\":\"number\",\"count\":3,\"missing_rate\":0,"
                           "\"edges\":[1,2],\"counts\":[1,1,1],\"sample\":[0.5,1.5,2.5]}},\"outputs\":{}}");
    inf__mon_profile *p = NULL;
    inf_error e;
    inf__mon_profile_from_json(j, &p, &e);
    cJSON_Delete(j);
    return p;
}

static void test_online_window(void) {
    inf__mon_online *o = NULL;
    const int64_t W = 60000000; /* 60 s */
    CHECK(inf__mon_online_new(baseline(), W, 4, "m", "1", &o) == INF_OK, "new");
    if (!o) return;
    CHECK(inf__mon_online_drift(o, 1000 * W, 1) == NULL, "no drift before rows");
    cJSON *d = inf__mon_online_drift(o, 1000 * W + 1, 1);
    CHECK(d == NULL, "still none");
    cJSON_Delete(d);
    inf__mon_online_free(o);
}

int main(void) {
    test_rules_parse();
    test_labels_section();
    test_quality_store();
    test_rule_check();
    test_webhook_errors();
    test_online_window();
    return check_summary("monitor_unit");
}
