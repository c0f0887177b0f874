/*
 * core.h -- internal services every layer of the engine uses: allocation,
 * arenas, error reports, the thread pool and logging.
 *
 * Internal names are inf__<object>_<verb>; nothing here is exported.
 * Everything that allocates can fail and says so with INF_ENOMEM: the engine
 * never aborts on a full heap.
 */
#ifndef INF_CORE_H
#define INF_CORE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "infera/infera.h"
#include "infera/tensor.h"

/* ---- Allocation (alloc.c) ---- all through the replaceable allocator. */
void *inf__malloc(size_t size);
void *inf__calloc(size_t n, size_t size);  /* zeroed; checks n*size overflow */
void *inf__realloc(void *ptr, size_t size);
void inf__free(void *ptr);
char *inf__strdup(const char *s);
char *inf__strndup(const char *s, size_t n);
/* 64-byte aligned blocks for tensor data; free with inf__aligned_free. */
void *inf__aligned_alloc(size_t size);
void inf__aligned_free(void *ptr);
/* Faults in the whole pages of [p, p + size) with one system call (Linux
 * MADV_POPULATE_WRITE) instead of one page fault per 4 KiB on first write:
 * for large blocks about to be filled (model weights at load).  A hint;
 * does nothing where unsupported. */
void inf__prefault(void *p, size_t size);

/* Grows *items (of elem_size bytes each) so that it can hold need elements;
 * *cap is updated.  Returns INF_OK or INF_ENOMEM (the array is unchanged). */
inf_status inf__array_reserve(void **items, int *cap, int need, size_t elem_size);

/* ---- Arena (arena.c) ----
 * Bump allocator for objects that die together (a model's IR, a plan).
 * Blocks are chained; inf__arena_free releases all of them at once. */
typedef struct inf__arena_block inf__arena_block;
typedef struct inf__arena {
    inf__arena_block *head;
    size_t block_size;
    size_t bytes_used;
} inf__arena;

void inf__arena_init(inf__arena *a, size_t block_size);
void *inf__arena_alloc(inf__arena *a, size_t size);   /* zeroed, 16-byte aligned */
char *inf__arena_strdup(inf__arena *a, const char *s);
char *inf__arena_strndup(inf__arena *a, const char *s, size_t n);
void inf__arena_deinit(inf__arena *a);

/* ---- Error reports (status.c) ----
 * One mechanism everywhere (engine, pipeline, registry, runners): the public
 * inf_error_set (infera.h, format-checked) fills err (if not NULL) with status
 * and a formatted message and returns status, so that callers write
 * `return inf_error_set(err, INF_EINVAL, "...", ...)`. */
inf_status inf__verror(inf_error *err, inf_status status, const char *fmt, va_list ap);
/* Puts "prefix: " in front of the message already in err. */
void inf__error_prefix(inf_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Conditions that cannot happen but must be survived (SQLite's ALWAYS/NEVER). */
#define INF_ALWAYS(x) (__builtin_expect(!!(x), 1))
#define INF_NEVER(x) (__builtin_expect(!!(x), 0))

/* ---- Tensor helpers (tensor.c) ---- */
/* Sets dtype/shape of an existing descriptor (data untouched). */
void inf__tensor_set_shape(inf_tensor *t, inf_dtype dtype, int ndim, const int64_t *dims);
/* Frees what t owns but not the struct; leaves t an empty descriptor. */
void inf__tensor_deinit(inf_tensor *t);
/* numel for dims, or -1 for a negative dimension or when the nonzero
 * dimensions multiply past INF_SHAPE_MAX_PRODUCT -- also in an empty shape:
 * every tensor creation checks it (inf_tensor_new, the kernels' outputs,
 * the ONNX and bundle decoders), so a kernel may multiply any of a tensor's
 * dimensions, and a few small factors more, without overflowing int64 (an
 * empty LSTM R of [1, 0, 2^62] made 4 * hidden overflow). */
#define INF_SHAPE_MAX_PRODUCT ((int64_t)1 << 48)
int64_t inf__shape_numel(int ndim, const int64_t *dims);
bool inf__shape_equal(int na, const int64_t *a, int nb, const int64_t *b);
/* "[2,3,4]" into buf. */
/* Name of an ONNX element type id, also the ones Infera does not implement
 * (17 "float8e4m3fn" ... 26 "int2"); "unknown" past those. */
const char *inf__onnx_type_name(int onnx_type);
const char *inf__shape_str(int ndim, const int64_t *dims, char *buf, size_t size);

/* ---- Thread pool (threadpool.c) ----
 * A persistent pool of n-1 workers plus the calling thread.  One caller at
 * a time. */
typedef struct inf__pool inf__pool;

inf_status inf__pool_new(int n_threads, inf__pool **out);
void inf__pool_free(inf__pool *pool);
int inf__pool_size(const inf__pool *pool);
/* Splits [0, n) into contiguous chunks of at least min_chunk (about four per
 * thread), calling fn(arg, begin, end) for each from whichever thread claims
 * it, and returns when all are done.  pool may be NULL: runs inline. */
typedef void (*inf__range_fn)(void *arg, int64_t begin, int64_t end);
void inf__pool_range(inf__pool *pool, int64_t n, int64_t min_chunk, inf__range_fn fn, void *arg);
/* A 64-byte aligned buffer of at least `bytes` owned by the pool, for the
 * caller's current job (the packed operand of a GEMM, shared by all threads).
 * It grows on demand and is kept until inf__pool_free, so once a session has
 * seen its largest shapes a run allocates nothing.  The contents do not
 * survive the next call.  NULL when pool is NULL or memory runs out. */
void *inf__pool_workspace(inf__pool *pool, size_t bytes);
/* A 64-byte aligned buffer of at least `bytes` for slot `slot` of a job
 * whose chunk `slot` each runs in a scratch of its own (the Winograd
 * convolution's slots, the fused attention's parts), asked for by the
 * thread running that slot.  Kept across jobs like inf__pool_workspace,
 * one per slot: since the caller
 * claims chunks from the front and workers from the back, slot s runs on
 * the same thread from layer to layer and run to run, so its scratch stays
 * in that core's cache (session scratch comes from the buffer pool, last
 * written by whichever core used it).  Allocated by that thread on first use
 * (first touched there); the contents do not survive the job.  NULL when
 * pool is NULL or has one thread, slot is out of [0, inf__pool_size), or
 * memory runs out: the caller then uses its own scratch. */
void *inf__pool_slot_workspace(inf__pool *pool, int slot, size_t bytes);
/* How many times a worker moved itself off the caller's CPU (threadpool.c's
 * DESIGN note): for tests and diagnostics.  0 for a NULL pool. */
unsigned inf__pool_moves(const inf__pool *pool);
/* Moves the calling thread off `cpu` without pinning it (the pool's workers
 * use it, threadpool.c's DESIGN note): its affinity becomes the allowed CPUs
 * minus `cpu` (the kernel migrates it before returning), then the allowed
 * CPUs again.  False (nothing changed) when fewer than n_threads CPUs are
 * allowed, when `cpu` is the only one, or off Linux. */
bool inf__thread_move_off_cpu(int cpu, int n_threads);

/* ---- Logging (log.c) ----
 * Messages go to a sink the application sets (default: stderr, level WARN). */
typedef enum inf__log_level { INF_LOG_DEBUG, INF_LOG_INFO, INF_LOG_WARN, INF_LOG_ERROR } inf__log_level;
void inf__log(inf__log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- Small utilities ---- */
double inf__now_seconds(void);      /* monotonic clock */
size_t inf__phys_memory_bytes(void); /* the machine's physical memory (sysconf), cached */
bool inf__cpu_has_avx2_fma(void);  /* checked once, cached */
bool inf__cpu_has_avx512_vnni(void); /* AVX-512 F/BW/VL + VNNI; checked once, cached */

/* Encodes code point cp as UTF-8 into out; returns the byte count (1..4) (utf8.c). */
int inf__utf8_encode(uint32_t cp, char out[4]);

#endif /* INF_CORE_H */
