/*
 * npy.c -- NumPy .npy files (format versions 1.0, 2.0 and 3.0).
 *
 * Layout: magic "\x93NUMPY", major, minor, header length (2 bytes for 1.0,
 * 4 for 2.0/3.0, little-endian), then a Python dict literal such as
 * {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } padded with
 * spaces to a multiple of 64 bytes, then the raw data.  We read and write
 * little-endian numbers and bool in C order; big-endian, Fortran order,
 * object and string arrays are refused with a message saying so.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"

static const struct {
    const char *descr;
    inf_dtype dtype;
} k_descr[] = {
    {"f4", INF_DTYPE_F32}, {"f8", INF_DTYPE_F64}, {"f2", INF_DTYPE_F16}, {"i1", INF_DTYPE_I8},
    {"i2", INF_DTYPE_I16}, {"i4", INF_DTYPE_I32}, {"i8", INF_DTYPE_I64}, {"u1", INF_DTYPE_U8},
    {"u2", INF_DTYPE_U16}, {"u4", INF_DTYPE_U32}, {"u8", INF_DTYPE_U64}, {"b1", INF_DTYPE_BOOL},
    {"c8", INF_DTYPE_C64}, {"c16", INF_DTYPE_C128},
};

static inf_dtype dtype_from_descr(const char *d) {
    /* byte order: '<' little, '|' not applicable, '=' native (little here) */
    if (d[0] != '<' && d[0] != '|' && d[0] != '=') return INF_DTYPE_UNDEFINED;
    for (size_t i = 0; i < sizeof k_descr / sizeof k_descr[0]; i++)
        if (!strcmp(d + 1, k_descr[i].descr)) return k_descr[i].dtype;
    return INF_DTYPE_UNDEFINED;
}

static const char *descr_from_dtype(inf_dtype t) {
    for (size_t i = 0; i < sizeof k_descr / sizeof k_descr[0]; i++)
        if (k_descr[i].dtype == t) return k_descr[i].descr;
    return NULL;
}

/* Finds 'key': in the header and returns a pointer just past the colon. */
static const char *find_key(const char *hdr, const char *key) {
    char pat[32];
    snprintf(pat, sizeof pat, "'%s'", key);
    const char *p = strstr(hdr, pat);
    if (!p) {
        snprintf(pat, sizeof pat, "\"%s\"", key);
        p = strstr(hdr, pat);
    }
    if (!p) return NULL;
    p = strchr(p + strlen(pat), ':');
    if (!p) return NULL;
    p++;
    while (*p == ' ') p++;
    return p;
}

static inf_status parse_header(const char *path, const char *hdr, inf_dtype *dtype, int *ndim, int64_t *dims,
                               inf_error *err) {
    const char *p = find_key(hdr, "descr");
    if (!p || (*p != '\'' && *p != '"'))
        return inf_error_set(err, INF_EFORMAT, "'%s': .npy header has no 'descr'", path);
    char descr[16] = {0};
    const char *end = strchr(p + 1, *p);
    if (!end || end - p - 1 >= (long)sizeof descr)
        return inf_error_set(err, INF_EFORMAT, "'%s': .npy header has a malformed 'descr'", path);
    memcpy(descr, p + 1, (size_t)(end - p - 1));
    *dtype = dtype_from_descr(descr);
    if (*dtype == INF_DTYPE_UNDEFINED)
        return inf_error_set(err, INF_EUNSUPPORTED, "'%s': .npy element type '%s' is not supported (little-endian numbers and bool only)",
                          path, descr);
    p = find_key(hdr, "fortran_order");
    if (!p) return inf_error_set(err, INF_EFORMAT, "'%s': .npy header has no 'fortran_order'", path);
    if (!strncmp(p, "True", 4)) return inf_error_set(err, INF_EUNSUPPORTED, "'%s': Fortran-order .npy arrays are not supported", path);
    p = find_key(hdr, "shape");
    if (!p || *p != '(') return inf_error_set(err, INF_EFORMAT, "'%s': .npy header has no 'shape' tuple", path);
    p++;
    *ndim = 0;
    for (;;) {
        while (*p == ' ' || *p == ',') p++;
        if (*p == ')') break;
        char *num_end;
        errno = 0;
        long long v = strtoll(p, &num_end, 10);
        if (num_end == p || errno || v < 0)
            return inf_error_set(err, INF_EFORMAT, "'%s': .npy shape is malformed", path);
        if (*ndim >= INF_MAX_DIMS) return inf_error_set(err, INF_EUNSUPPORTED, "'%s': rank above %d", path, INF_MAX_DIMS);
        dims[(*ndim)++] = v;
        p = num_end;
        while (*p == 'L') p++;
    }
    return INF_OK;
}

/* The data the shape needs must be in the file: checked before the array is
 * allocated, so that a small file cannot make us ask for gigabytes. */
static inf_status check_data_size(const char *path, inf_dtype dtype, int ndim, const int64_t *dims, uint64_t in_file,
                                  inf_error *err) {
    uint64_t need = inf_dtype_size(dtype);
    for (int d = 0; d < ndim; d++) {
        if (dims[d] == 0)
            return INF_OK; /* an empty array needs no data */
        if (__builtin_mul_overflow(need, (uint64_t)dims[d], &need))
            need = UINT64_MAX;
    }
    if (need > in_file)
        return inf_error_set(err, INF_EFORMAT, "'%s': .npy shape needs %llu bytes of data but the file holds %llu",
                             path, (unsigned long long)need, (unsigned long long)in_file);
    return INF_OK;
}

inf_status inf_tensor_load_npy(const char *path, inf_tensor **out, inf_error *err) {
    *out = NULL;
    int fd;
    uint64_t file_size;
    inf_status opened = inf_file_open(path, "file", 0, &fd, &file_size, err); /* regular files only (file.c) */
    if (opened != INF_OK) return opened;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        return inf_error_set(err, INF_ENOMEM, "cannot open '%s': %s", path, strerror(errno));
    }
    unsigned char pre[12];
    inf_status st = INF_OK;
    char *hdr = NULL;
    inf_tensor *t = NULL;
    if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6) != 0) {
        st = inf_error_set(err, INF_EFORMAT, "'%s' is not a .npy file (bad magic)", path);
        goto done;
    }
    uint32_t hlen;
    if (pre[6] == 1) {
        hlen = (uint32_t)pre[8] | (uint32_t)pre[9] << 8;
    } else if (pre[6] == 2 || pre[6] == 3) {
        if (fread(pre + 10, 1, 2, f) != 2) {
            st = inf_error_set(err, INF_EFORMAT, "'%s': truncated .npy header", path);
            goto done;
        }
        hlen = (uint32_t)pre[8] | (uint32_t)pre[9] << 8 | (uint32_t)pre[10] << 16 | (uint32_t)pre[11] << 24;
    } else {
        st = inf_error_set(err, INF_EUNSUPPORTED, "'%s': .npy format version %d is not supported", path, pre[6]);
        goto done;
    }
    uint64_t prefix = pre[6] == 1 ? 10 : 12; /* magic, version and header length */
    if (hlen > (1u << 20)) {
        st = inf_error_set(err, INF_EFORMAT, "'%s': .npy header length %u is implausible", path, hlen);
        goto done;
    }
    if (hlen > file_size - prefix) { /* checked before the header is allocated */
        st = inf_error_set(err, INF_EFORMAT, "'%s': .npy header length %u runs past the end of the file (%llu bytes)",
                           path, hlen, (unsigned long long)file_size);
        goto done;
    }
    hdr = inf__malloc(hlen + 1);
    if (!hdr) {
        st = inf_error_set(err, INF_ENOMEM, "out of memory reading '%s'", path);
        goto done;
    }
    if (fread(hdr, 1, hlen, f) != hlen) {
        st = inf_error_set(err, INF_EFORMAT, "'%s': truncated .npy header", path);
        goto done;
    }
    hdr[hlen] = 0;
    inf_dtype dtype = INF_DTYPE_UNDEFINED;
    int ndim = 0;
    int64_t dims[INF_MAX_DIMS];
    if ((st = parse_header(path, hdr, &dtype, &ndim, dims, err)) != INF_OK) goto done;
    if ((st = check_data_size(path, dtype, ndim, dims, file_size - prefix - hlen, err)) != INF_OK)
        goto done;
    if ((st = inf_tensor_new(dtype, ndim, dims, &t)) != INF_OK) {
        st = inf_error_set(err, st, "'%s': cannot allocate the array", path);
        goto done;
    }
    size_t nbytes = inf_tensor_nbytes(t);
    if (nbytes && fread(t->data, 1, nbytes, f) != nbytes) {
        st = inf_error_set(err, INF_EFORMAT, "'%s': .npy data is shorter than its shape needs (%zu bytes)", path, nbytes);
        goto done;
    }
    if (fgetc(f) != EOF) {
        st = inf_error_set(err, INF_EFORMAT, "'%s': .npy file has bytes after its data", path);
        goto done;
    }
done:
    fclose(f);
    inf__free(hdr);
    if (st != INF_OK) {
        inf_tensor_free(t);
        return st;
    }
    *out = t;
    return INF_OK;
}

inf_status inf_tensor_save_npy(const char *path, const inf_tensor *t, inf_error *err) {
    if (t->kind != INF_KIND_TENSOR) return inf_error_set(err, INF_EUNSUPPORTED, "'%s': only tensors can be written as .npy", path);
    const char *descr = descr_from_dtype(t->dtype);
    if (t->dtype == INF_DTYPE_BF16) descr = NULL;
    if (!descr)
        return inf_error_set(err, INF_EUNSUPPORTED, "'%s': %s tensors cannot be written as .npy (use --output-format pb)", path,
                          inf_dtype_name(t->dtype));
    char hdr[512];
    int off = snprintf(hdr, sizeof hdr, "{'descr': '%c%s', 'fortran_order': False, 'shape': (",
                       (t->dtype == INF_DTYPE_BOOL || inf_dtype_size(t->dtype) == 1) ? '|' : '<', descr);
    for (int i = 0; i < t->ndim; i++) off += snprintf(hdr + off, sizeof hdr - (size_t)off, "%lld,%s", (long long)t->dims[i], i + 1 < t->ndim ? " " : "");
    if (t->ndim > 1) off--; /* numpy writes (2, 3) but (4,) */
    off += snprintf(hdr + off, sizeof hdr - (size_t)off, "), }");
    /* pad with spaces so that 10 + header (with its newline) is a multiple of 64 */
    int total = 10 + off + 1;
    int pad = (64 - total % 64) % 64;
    memset(hdr + off, ' ', (size_t)pad);
    off += pad;
    hdr[off++] = '\n';
    FILE *f = fopen(path, "wb");
    if (!f) return inf_error_set(err, INF_EIO, "cannot write '%s': %s", path, strerror(errno));
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(off & 0xff), (unsigned char)(off >> 8)};
    size_t nbytes = inf_tensor_nbytes(t);
    bool ok = fwrite(pre, 1, 10, f) == 10 && fwrite(hdr, 1, (size_t)off, f) == (size_t)off &&
              (nbytes == 0 || fwrite(t->data, 1, nbytes, f) == nbytes);
    if (fclose(f) != 0) ok = false;
    if (!ok) return inf_error_set(err, INF_EIO, "cannot write '%s': %s", path, strerror(errno));
    return INF_OK;
}
