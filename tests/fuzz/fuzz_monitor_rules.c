/*
 * fuzz_monitor_rules.c -- libFuzzer target for the monitoring rule file
 * (src/monitor/rules.c, inf__mon_rules_parse: `infera monitor check --rules`,
 * `infera serve --monitor`).  Any text must parse or be refused with an error
 * naming the rule and field: no crash, no leak.  A parsed rule has a
 * NUL-terminated name, metric and feature, and a positive window.
 * Seeds: tests/fuzz/seeds/rules_*.json.  Built with -DINFERA_FUZZ=ON.
 */
#include <stdlib.h>
#include <string.h>

#include "monitor/rules.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size ? size : 1); /* exact size: a read past the text is caught */
    if (!text)
        return 0;
    memcpy(text, data, size);
    inf__mon_rules rs;
    inf_error err;
    if (inf__mon_rules_parse(text, size, "fuzz.json", &rs, &err) == INF_OK) {
        for (int i = 0; i < rs.n; i++) {
            const inf__mon_rule *r = &rs.rules[i];
            if (!memchr(r->name, 0, sizeof r->name) || !memchr(r->metric, 0, sizeof r->metric) ||
                !memchr(r->feature, 0, sizeof r->feature) || r->window_us <= 0)
                abort();
        }
        inf__mon_rules_free(&rs);
    }
    free(text);
    return 0;
}
