/*
 * llama_driver.h -- what the one-thread llama.cpp drivers of the tests share (llama_greedy.c, llama_logits.c):
 * the peer's log kept to errors, no progress dots, and a model loaded from a path (NULL and a message when it
 * cannot be).  Only llama.h's public API.
 */
#ifndef INFERA_BENCH_LLAMA_DRIVER_H
#define INFERA_BENCH_LLAMA_DRIVER_H

#include <stdbool.h>
#include <stdio.h>

#include "ggml-backend.h"
#include "llama.h"

static void driver_quiet(enum ggml_log_level level, const char *text, void *user) {
    (void)user;
    if (level >= GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

static bool driver_no_progress(float progress, void *user) {
    (void)progress, (void)user;
    return true;
}

static struct llama_model *driver_load(const char *tool, const char *path) {
    llama_log_set(driver_quiet, NULL);
    ggml_backend_load_all();
    struct llama_model_params mp = llama_model_default_params();
    mp.progress_callback = driver_no_progress;
    struct llama_model *model = llama_model_load_from_file(path, mp);
    if (!model) fprintf(stderr, "%s: cannot load %s\n", tool, path);
    return model;
}

#endif
