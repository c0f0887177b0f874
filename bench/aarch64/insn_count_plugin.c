/*
 * insn_count_plugin.c -- a QEMU TCG plugin (host shared library) that
 * counts the guest instructions a program executes under qemu-user, for
 * bench/aarch64/insn_count.sh: the NEON kernels against the generic C ones
 * in instructions per inference (wall time under emulation means little).
 *
 * Debian ships qemu-user with plugin support but neither the contrib plugins
 * nor qemu-plugin.h, so the few entry points used are declared here from
 * QEMU's documented plugin API (version 1, QEMU 7.x): at translation of each
 * block, an inline "add the block's instruction count to a counter" runs
 * before the block; the total is printed at exit.  The inline add is not
 * atomic: count single-threaded programs (--threads 1).
 *   qemu-aarch64 -plugin ./insn_count_plugin.so -d plugin -D LOG PROGRAM ...
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef uint64_t qemu_plugin_id_t;
typedef struct qemu_info_t qemu_info_t;
struct qemu_plugin_tb;
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 = 0 };
typedef void (*tb_trans_cb)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*udata_cb)(qemu_plugin_id_t id, void *userdata);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, tb_trans_cb cb);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb, enum qemu_plugin_op op, void *ptr,
                                              uint64_t imm);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, udata_cb cb, void *userdata);
void qemu_plugin_outs(const char *string);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

static uint64_t insns; /* the plugin's one counter, for the process's life */

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
    (void)id;
    qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &insns, qemu_plugin_tb_n_insns(tb));
}

static void on_exit(qemu_plugin_id_t id, void *userdata) {
    (void)id, (void)userdata;
    char line[64];
    snprintf(line, sizeof line, "insns %" PRIu64 "\n", insns);
    qemu_plugin_outs(line);
}

__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
                                                               int argc, char **argv) {
    (void)info, (void)argc, (void)argv;
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
    qemu_plugin_register_atexit_cb(id, on_exit, NULL);
    return 0;
}
