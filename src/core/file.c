/*
 * file.c -- opening the files a user names: models, pipeline specs, tensor
 * files, external data (include/infera/infera.h, "Input files").
 *
 * One check for every reader (the engine's loader, the registry, the
 * pipeline spec loader, the CLI): a path must name a REGULAR file.  A FIFO
 * would block the reader forever, /dev/zero never ends (the registry once
 * grew a 3.6 GB buffer from it in 8 s), a directory or a socket is not data.
 * The file is opened with O_NONBLOCK so that opening a FIFO cannot block,
 * checked with fstat on the descriptor (no race between the check and the
 * read), then switched back to blocking reads.  Sizes are bounded by the
 * caller's limit, and a read takes exactly the size fstat reported, so a
 * file growing while it is read cannot grow the buffer.
 *
 * inf_file_open_within adds the rule of external data: a name relative to
 * the model's folder must stay inside it once every symlink is resolved
 * (realpath of the folder and of the file, then a prefix test on a '/'
 * boundary); the resolved path is opened with O_NOFOLLOW so that its last
 * component cannot be swapped for a symlink between the check and the open.
 * Errors never print where a refused symlink points.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/core.h"

static const char *kind_of(mode_t mode) {
    static const struct {
        mode_t type;
        const char *name;
    } kinds[] = {{S_IFDIR, "a directory"}, {S_IFIFO, "a FIFO"},     {S_IFCHR, "a character device"},
                 {S_IFBLK, "a block device"}, {S_IFSOCK, "a socket"}, {S_IFLNK, "a symlink"}};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if ((mode & S_IFMT) == kinds[i].type) return kinds[i].name;
    return "not a regular file";
}

static inf_status open_checked(const char *path, const char *shown, const char *what, uint64_t max_bytes, int flags,
                               int *fd_out, uint64_t *size_out, inf_error *err) {
    *fd_out = -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | flags);
    if (fd < 0) {
        int e = errno;
        return inf_error_set(err, e == ENOENT ? INF_ENOENT : e == EACCES ? INF_EDENIED : INF_EIO, "cannot open %s '%s': %s",
                          what, shown, e == ELOOP ? "a symlink where a file was expected" : strerror(e));
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return inf_error_set(err, INF_EIO, "%s '%s': cannot stat: %s", what, shown, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return inf_error_set(err, INF_EIO, "%s '%s' is not a regular file (%s)", what, shown, kind_of(st.st_mode));
    }
    if (max_bytes && (uint64_t)st.st_size > max_bytes) {
        close(fd);
        return inf_error_set(err, INF_ERANGE, "%s '%s' is too large: %lld bytes, the limit is %llu", what, shown,
                          (long long)st.st_size, (unsigned long long)max_bytes);
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
        int e = errno;
        close(fd);
        return inf_error_set(err, INF_EIO, "%s '%s': %s", what, shown, strerror(e));
    }
    *fd_out = fd;
    *size_out = (uint64_t)st.st_size;
    return INF_OK;
}

inf_status inf_file_open(const char *path, const char *what, uint64_t max_bytes, int *fd, uint64_t *size,
                         inf_error *err) {
    return open_checked(path, path, what ? what : "file", max_bytes, 0, fd, size, err);
}

/* 1 when name has a ".." component ("a/../b", "..", "../x", "x/.."). */
static int has_dotdot(const char *name) {
    for (const char *p = name; (p = strstr(p, "..")) != NULL; p += 2)
        if ((p == name || p[-1] == '/') && (p[2] == '\0' || p[2] == '/')) return 1;
    return 0;
}

inf_status inf_file_open_within(const char *dir, const char *relative, const char *what, uint64_t max_bytes, int *fd,
                                uint64_t *size, inf_error *err) {
    *fd = -1;
    what = what ? what : "file";
    if (!relative || !*relative) return inf_error_set(err, INF_EMODEL, "%s: empty file name", what);
    if (relative[0] == '/' || has_dotdot(relative))
        return inf_error_set(err, INF_EMODEL, "%s: path '%s' leaves the model's folder", what, relative);
    char real_dir[PATH_MAX], joined[PATH_MAX], real_file[PATH_MAX];
    if (!realpath(dir, real_dir))
        return inf_error_set(err, INF_EIO, "%s: the model's folder '%s' cannot be resolved: %s", what, dir, strerror(errno));
    if ((size_t)snprintf(joined, sizeof joined, "%s/%s", dir, relative) >= sizeof joined)
        return inf_error_set(err, INF_EMODEL, "%s: path '%s' is too long", what, relative);
    if (!realpath(joined, real_file)) {
        int e = errno;
        return inf_error_set(err, e == ENOENT ? INF_ENOENT : INF_EIO, "cannot open %s '%s': %s", what, joined, strerror(e));
    }
    size_t n = strlen(real_dir);
    int inside = n == 1 ? real_file[0] == '/' : !strncmp(real_file, real_dir, n) && real_file[n] == '/';
    if (!inside)
        return inf_error_set(err, INF_EDENIED, "%s '%s' leads outside the model's folder (through a symlink); refused", what,
                          relative);
    return open_checked(real_file, joined, what, max_bytes, O_NOFOLLOW, fd, size, err);
}

inf_status inf_file_read(const char *path, const char *what, uint64_t max_bytes, void **data, size_t *size,
                         inf_error *err) {
    *data = NULL;
    *size = 0;
    what = what ? what : "file";
    int fd;
    uint64_t n;
    inf_status st = inf_file_open(path, what, max_bytes, &fd, &n, err);
    if (st) return st;
    if (n > SIZE_MAX - 1) {
        close(fd);
        return inf_error_set(err, INF_ENOMEM, "%s '%s' does not fit in memory", what, path);
    }
    uint8_t *buf = inf__malloc((size_t)n + 1);
    if (!buf) {
        close(fd);
        return inf_error_set(err, INF_ENOMEM, "out of memory reading %s '%s' (%llu bytes)", what, path, (unsigned long long)n);
    }
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, (size_t)n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            int e = r < 0 ? errno : 0;
            close(fd);
            inf__free(buf);
            return inf_error_set(err, INF_EIO, "cannot read %s '%s': %s", what, path, e ? strerror(e) : "it shrank while read");
        }
        got += (size_t)r;
    }
    close(fd);
    buf[n] = '\0'; /* text formats (JSON specs) may rely on it */
    *data = buf;
    *size = (size_t)n;
    return INF_OK;
}

void inf_file_free(void *data) { inf__free(data); }
