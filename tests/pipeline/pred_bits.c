/*
 * pred_bits.c -- turns prediction records from any mode into one canonical
 * line per prediction, for tests/pipeline/test_modes.sh to compare modes bit
 * for bit.
 *
 * Reads JSON, one value per line: a prediction object (`infera batch` JSON
 * lines, infera_predict_json, infera.predict_json) or a records-endpoint
 * response ({"predictions":[...]}, every element is one prediction).  A line
 * "ID<TAB>{...}" gives the first FIELD the string ID (the SQL functions
 * return the prediction fields without the record's id: the query adds it).  For
 * each prediction prints the named fields, tab-separated: strings as they
 * are, booleans as true/false, null as null, numbers as the IEEE-754 bits of
 * the double they denote (cJSON parses them with strtod, which rounds
 * correctly, so "%.17g" text, a shortest round-trip text and PostgreSQL's
 * numeric text of the same double all give the same bits).  A missing field
 * prints <missing>; FIELD may name alternatives, "a|b": the first present.
 * A line that is not JSON, a response carrying "error" or
 * "rejected" rows, is an error (exit 1, naming the line).
 *
 * usage: pred_bits FIELD... < lines > canonical
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

static void print_value(const cJSON *v) {
    if (!v) {
        fputs("<missing>", stdout);
    } else if (cJSON_IsString(v)) {
        fputs(v->valuestring, stdout);
    } else if (cJSON_IsBool(v)) {
        fputs(cJSON_IsTrue(v) ? "true" : "false", stdout);
    } else if (cJSON_IsNull(v)) {
        fputs("null", stdout);
    } else if (cJSON_IsNumber(v)) {
        uint64_t bits;
        double d = v->valuedouble;
        memcpy(&bits, &d, sizeof bits);
        printf("0x%016llx", (unsigned long long)bits);
    } else {
        fputs("<not a scalar>", stdout);
    }
}

/* The value of FIELD, or of the first of "a|b|..." that p has. */
static const cJSON *field_of(const cJSON *p, const char *field) {
    char name[256];
    while (*field) {
        size_t n = strcspn(field, "|");
        if (n < sizeof name) {
            memcpy(name, field, n);
            name[n] = 0;
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(p, name);
            if (v) return v;
        }
        field += n + (field[n] == '|');
    }
    return NULL;
}

static void print_prediction(const cJSON *p, int n_fields, char **fields) {
    for (int i = 0; i < n_fields; i++) {
        if (i) putchar('\t');
        print_value(field_of(p, fields[i]));
    }
    putchar('\n');
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: pred_bits FIELD... < lines\n");
        return 2;
    }
    size_t cap = 0;
    char *line = NULL;
    ssize_t len;
    long lineno = 0, n_pred = 0;
    int rc = 0;
    while ((len = getline(&line, &cap, stdin)) >= 0) {
        lineno++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
        if (len == 0) continue;
        char *text = line, *id = NULL;
        char *tab = strchr(line, '\t');
        if (line[0] != '{' && tab) {
            *tab = 0;
            id = line;
            text = tab + 1;
        }
        cJSON *j = cJSON_Parse(text);
        if (!j || !cJSON_IsObject(j)) {
            fprintf(stderr, "pred_bits: line %ld is not a JSON object: %.200s\n", lineno, line);
            rc = 1;
            cJSON_Delete(j);
            continue;
        }
        const cJSON *preds = cJSON_GetObjectItemCaseSensitive(j, "predictions");
        const cJSON *rej = cJSON_GetObjectItemCaseSensitive(j, "rejected");
        if (cJSON_GetObjectItemCaseSensitive(j, "error") || (rej && cJSON_GetArraySize(rej) > 0)) {
            fprintf(stderr, "pred_bits: line %ld is an error or has rejected records: %.300s\n", lineno, line);
            rc = 1;
        } else if (preds) {
            const cJSON *p;
            cJSON_ArrayForEach(p, preds) {
                print_prediction(p, argc - 1, argv + 1);
                n_pred++;
            }
        } else {
            if (id) {
                char name[256];
                snprintf(name, sizeof name, "%.*s", (int)strcspn(argv[1], "|"), argv[1]);
                cJSON_DeleteItemFromObjectCaseSensitive(j, name);
                if (!cJSON_AddStringToObject(j, name, id)) {
                    fprintf(stderr, "pred_bits: out of memory\n");
                    return 1;
                }
            }
            print_prediction(j, argc - 1, argv + 1);
            n_pred++;
        }
        cJSON_Delete(j);
    }
    free(line);
    if (ferror(stdout) || fflush(stdout)) {
        perror("pred_bits: stdout");
        return 1;
    }
    fprintf(stderr, "pred_bits: %ld predictions from %ld lines\n", n_pred, lineno);
    return rc;
}
