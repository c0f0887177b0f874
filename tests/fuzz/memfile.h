/*
 * memfile.h -- the fuzz input as a file name, for the libFuzzer targets of
 * decoders whose production entry takes a path (.npy tensors, CSV and JSONL
 * sources): the bytes go into an anonymous in-memory file (memfd) named
 * /proc/self/fd/N, a regular file as the decoders require, with no disk I/O.
 */
#ifndef INF_FUZZ_MEMFILE_H
#define INF_FUZZ_MEMFILE_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memfd_create */
#endif
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

/* Returns the memfd (close it after use) with its name in path, or -1. */
static int fuzz_memfile(const uint8_t *data, size_t size, char *path, size_t cap) {
    int fd = memfd_create("fuzz", MFD_CLOEXEC);
    if (fd < 0)
        return -1;
    if (size && write(fd, data, size) != (ssize_t)size) {
        close(fd);
        return -1;
    }
    snprintf(path, cap, "/proc/self/fd/%d", fd);
    return fd;
}

#endif
