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
 *
 * pred_bits --infer OUTPUT[:COLUMN]... reads KServe V2 /infer responses
 * instead ({"outputs":[{"name":..,"shape":[rows,cols],"data":[...]}]}, one
 * per line) and prints a line per row: the named outputs' values of that row
 * (all its columns, or only COLUMN), each rounded to float32 (the tensor's
 * type, which "%.9g" text carries exactly) and printed as the bits of that
 * float's double -- the same bits as the records modes' exact "%.17g" text.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>
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

/* The output named `name` of an /infer response, its rows and columns. */
static const cJSON *infer_output(const cJSON *resp, const char *name, int *rows, int *cols) {
    const cJSON *o;
    cJSON_ArrayForEach(o, cJSON_GetObjectItemCaseSensitive(resp, "outputs")) {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(o, "name");
        if (!cJSON_IsString(n) || strcmp(n->valuestring, name)) continue;
        const cJSON *shape = cJSON_GetObjectItemCaseSensitive(o, "shape");
        int nd = cJSON_GetArraySize(shape);
        *rows = nd > 0 ? cJSON_GetArrayItem(shape, 0)->valueint : 1;
        *cols = nd > 1 ? cJSON_GetArrayItem(shape, 1)->valueint : 1;
        const cJSON *data = cJSON_GetObjectItemCaseSensitive(o, "data");
        return cJSON_GetArraySize(data) == *rows * *cols ? data : NULL;
    }
    return NULL;
}

/* --infer: one response per line; returns 0, or 1 after naming a bad line. */
static int infer_main(int n_specs, char **specs) {
    size_t cap = 0;
    char *line = NULL;
    long lineno = 0, n_rows = 0;
    int rc = 0;
    while (getline(&line, &cap, stdin) >= 0) {
        lineno++;
        if (line[strspn(line, " \t\r\n")] == 0) continue;
        cJSON *j = cJSON_Parse(line);
        const cJSON *data[64];
        int rows = -1, cols[64], col[64];
        bool ok = j && n_specs <= 64;
        for (int i = 0; ok && i < n_specs; i++) {
            char name[256];
            const char *colon = strchr(specs[i], ':');
            snprintf(name, sizeof name, "%.*s", colon ? (int)(colon - specs[i]) : (int)strlen(specs[i]), specs[i]);
            col[i] = colon ? atoi(colon + 1) : -1;
            int r = 0;
            data[i] = infer_output(j, name, &r, &cols[i]);
            ok = data[i] && (rows < 0 || r == rows) && col[i] < cols[i];
            rows = r;
        }
        if (!ok) {
            fprintf(stderr, "pred_bits: line %ld is not an /infer response with those outputs: %.300s\n", lineno, line);
            rc = 1;
            cJSON_Delete(j);
            continue;
        }
        for (int r = 0; r < rows; r++, n_rows++) {
            int first = 1;
            for (int i = 0; i < n_specs; i++)
                for (int c = col[i] < 0 ? 0 : col[i]; c < (col[i] < 0 ? cols[i] : col[i] + 1); c++) {
                    double d = (float)cJSON_GetArrayItem(data[i], r * cols[i] + c)->valuedouble;
                    uint64_t bits;
                    memcpy(&bits, &d, sizeof bits);
                    printf("%s0x%016llx", first ? "" : "\t", (unsigned long long)bits);
                    first = 0;
                }
            putchar('\n');
        }
        cJSON_Delete(j);
    }
    free(line);
    if (ferror(stdout) || fflush(stdout)) {
        perror("pred_bits: stdout");
        return 1;
    }
    fprintf(stderr, "pred_bits: %ld rows from %ld /infer responses\n", n_rows, lineno);
    return rc;
}

int main(int argc, char **argv) {
    if (argc > 2 && !strcmp(argv[1], "--infer")) return infer_main(argc - 2, argv + 2);
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
