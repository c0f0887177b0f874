/*
 * inputs.c -- binding `--input NAME=FILE` options to a model's inputs.
 */
#include <string.h>

#include "cli/cli.h"

bool cli_inputs_add(const char *cmd, cli_inputs *specs, const char *value) {
    if (specs->n_specs >= 64) {
        cli_usage(cmd, "too many --input options (at most 64)");
        return false;
    }
    const char *eq = strchr(value, '=');
    if (eq && eq != value) {
        size_t n = (size_t)(eq - value);
        char *name = specs->name_buf[specs->n_specs];
        if (n >= sizeof specs->name_buf[0]) {
            cli_usage(cmd, "input name too long in '%s'", value);
            return false;
        }
        memcpy(name, value, n);
        name[n] = 0;
        specs->names[specs->n_specs] = name;
        specs->paths[specs->n_specs] = eq + 1;
    } else {
        specs->names[specs->n_specs] = NULL;
        specs->paths[specs->n_specs] = value;
    }
    specs->n_specs++;
    return true;
}

int cli_inputs_load(const char *cmd, const inf_model *model, const cli_inputs *specs, inf_tensor **values) {
    int n_inputs = inf_model_n_inputs(model);
    for (int i = 0; i < n_inputs; i++) values[i] = NULL;
    for (int s = 0; s < specs->n_specs; s++) {
        int idx;
        if (specs->names[s]) {
            idx = inf_model_find_input(model, specs->names[s]);
            if (idx < 0) {
                char list[512] = "";
                for (int i = 0; i < n_inputs; i++) {
                    strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
                    strncat(list, inf_model_input(model, i)->name, sizeof list - strlen(list) - 1);
                }
                return cli_fail(cmd, "the model has no input '%s' (inputs: %s)", specs->names[s], list);
            }
        } else if (n_inputs == 1 || (s < n_inputs && specs->n_specs == n_inputs)) {
            idx = n_inputs == 1 ? 0 : s;
        } else {
            return cli_usage(cmd, "--input %s: name the input (NAME=FILE); the model has %d inputs", specs->paths[s], n_inputs);
        }
        if (values[idx]) return cli_usage(cmd, "input '%s' is given twice", inf_model_input(model, idx)->name);
        inf_error err;
        if (cli_load_value(specs->paths[s], cli_kind_hint(inf_model_input(model, idx)), &values[idx], &err) != INF_OK)
            return cli_fail(cmd, "input '%s': %s", inf_model_input(model, idx)->name, err.message);
    }
    for (int i = 0; i < n_inputs; i++)
        if (!values[i] && !inf_model_input(model, i)->is_optional)
            return cli_fail(cmd, "input '%s' is missing (give it with --input %s=FILE)", inf_model_input(model, i)->name,
                            inf_model_input(model, i)->name);
    return 0;
}
