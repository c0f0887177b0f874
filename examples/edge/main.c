/*
 * main.c -- predictive maintenance at the edge: a vibration sensor window in,
 * an anomaly score out, with the model compiled into the program.
 *
 * The model (anomaly.onnx, trained by train.py) is compiled by
 * `infera compile anomaly.onnx -o anomaly_model.c --c-source` into a C array
 * and linked with libinfera_edge.a.  At start the program gives the engine
 * one static memory region (inf_session_new_in): the bundle is loaded in
 * place, the session planned and warmed up, and from then on scoring a
 * window allocates nothing -- what a controller without a heap wants.
 *
 *   anomaly_demo [--scores] [FILE]
 * reads windows, one per line: 64 comma-separated samples, optionally after
 * a leading label column (as in sample_windows.csv); FILE or stdin.  Prints
 * each window's score and ANOMALY above 0.5; --scores prints only the scores.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infera/bundle.h"

#define WINDOW 64
#ifndef REGION_BYTES
#define REGION_BYTES (256 * 1024) /* what the engine may use, all of it */
#endif

const void *infera_bundle_anomaly_model(size_t *size); /* anomaly_model.c, generated */

static _Alignas(64) unsigned char region[REGION_BYTES];

/* Parses one line into 64 samples (the last 64 numbers of the line). */
static int parse_window(char *line, float *w) {
    float vals[WINDOW + 1];
    int n = 0;
    for (char *tok = strtok(line, ",\n\r"); tok && n <= WINDOW; tok = strtok(NULL, ",\n\r")) vals[n++] = strtof(tok, NULL);
    if (n < WINDOW) return 0;
    memcpy(w, vals + (n - WINDOW), sizeof(float) * WINDOW);
    return 1;
}

int main(int argc, char **argv) {
    int scores_only = argc > 1 && !strcmp(argv[1], "--scores");
    const char *path = argc > 1 + scores_only ? argv[1 + scores_only] : NULL;
    FILE *in = path ? fopen(path, "r") : stdin;
    if (!in) {
        fprintf(stderr, "anomaly_demo: cannot open %s\n", path);
        return 1;
    }
    size_t bundle_size;
    const void *bundle = infera_bundle_anomaly_model(&bundle_size);
    inf_model *model;
    inf_session *session;
    inf_error err;
    if (inf_session_new_in(region, sizeof region, bundle, bundle_size, NULL, &model, &session, &err)) {
        fprintf(stderr, "anomaly_demo: %s\n", err.message);
        return 1;
    }
    if (!scores_only)
        printf("model loaded: %zu-byte bundle, %zu of %zu region bytes in use\n", bundle_size,
               inf_region_bytes_used(region), sizeof region);
    static float window[WINDOW];
    int64_t dims[2] = {1, WINDOW};
    inf_tensor x;
    inf_tensor_init_view(&x, INF_DTYPE_F32, 2, dims, window);
    const inf_tensor *inputs[1] = {&x};
    char line[8192];
    int n = 0, anomalies = 0;
    while (fgets(line, sizeof line, in)) {
        if (!parse_window(line, window)) continue;
        inf_tensor *const *out;
        if (inf_session_run(session, inputs, &out, &err)) {
            fprintf(stderr, "anomaly_demo: window %d: %s\n", n, err.message);
            return 1;
        }
        float score = ((const float *)out[0]->data)[0];
        anomalies += score > 0.5f;
        if (scores_only) printf("%.9g\n", score);
        else printf("window %3d: score %.4f%s\n", n, score, score > 0.5f ? "  ANOMALY" : "");
        n++;
    }
    if (!scores_only) printf("%d windows, %d anomalies\n", n, anomalies);
    if (in != stdin) fclose(in);
    inf_session_free(session);
    inf_model_free(model);
    return 0;
}
