/* The blob store: a directory with one RLXKV001 file per entry.
 *
 * File data moves through the rlxkv_io vtable (so tests can inject faults);
 * the directory itself is read with opendir/readdir/stat. Only plain POSIX
 * is used, nothing Linux-only (no O_TMPFILE, linkat or flock), because the
 * same code runs on Emscripten's MEMFS/IDBFS/NODEFS.
 *
 * A save encodes into one buffer, writes it to a temporary file in the same
 * directory, syncs and closes it, then renames it over the final name: a
 * crash leaves the old blob or the new one, never a torn one. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h> /* rename */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <sys/types.h>
#include <unistd.h>

#include "codec.h"
#include "entry.h"
#include "hash.h"

#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif

#define SUFFIX ".rlxkv"
#define SUFFIX_LEN 6
/* Longest file name the store reads, removes or makes (temporary names
 * included); blob names are 22 characters. */
#define NAME_CAP 96
/* Largest single read or write: keeps every count inside a long. */
#define IO_CHUNK ((size_t)1 << 30)
/* Temporary names tried before a save gives up (each a new name). */
#define TMP_TRIES 16
/* A temporary file this old (seconds) is a crashed save's, not a live
 * one's: prune removes it. A save writes its file in one go. */
#define TMP_ABANDONED_AGE 3600

struct rlxkv_store {
    rlxkv_io io;
    uint64_t seq;    /* makes this handle's temporary names unique */
    size_t dir_len;
    char *dir;       /* the directory, NUL-terminated */
    char *path;      /* scratch: dir + '/' + a name */
    char *tmp;       /* scratch: the temporary path during a save */
};

/* A directory entry that looks like a blob. */
typedef struct cand {
    char name[32];
    int64_t mtime;      /* seconds */
    long mtime_ns;
    uint64_t size;
} cand;

/* ---------------------------------------------------------------------- *
 * POSIX file operations
 * ---------------------------------------------------------------------- */
static int px_open(void *ctx, const char *path, int flags, int mode) {
    (void)ctx;
    return open(path, flags, (mode_t)mode);
}
static long px_read(void *ctx, int fd, void *buf, size_t n) {
    (void)ctx;
    return (long)read(fd, buf, n);
}
static long px_write(void *ctx, int fd, const void *buf, size_t n) {
    (void)ctx;
    return (long)write(fd, buf, n);
}
static int px_sync(void *ctx, int fd) {
    (void)ctx;
    return fsync(fd);
}
static int px_close(void *ctx, int fd) {
    (void)ctx;
    return close(fd);
}
static int px_rename(void *ctx, const char *from, const char *to) {
    (void)ctx;
    return rename(from, to);
}
static int px_unlink(void *ctx, const char *path) {
    (void)ctx;
    return unlink(path);
}

static const rlxkv_io kPosixIo = {NULL,     px_open,  px_read,   px_write,
                                  px_sync,  px_close, px_rename, px_unlink};

const rlxkv_io *rlxkv_io_posix(void) { return &kPosixIo; }

/* A full disk and an exhausted quota are the one failure a caller can act
 * on (prune, then retry); every other errno is plain I/O. */
static int io_status(int err) {
    if (err == ENOSPC) return RLXKV_ERR_QUOTA;
#ifdef EDQUOT
    if (err == EDQUOT) return RLXKV_ERR_QUOTA;
#endif
    return RLXKV_ERR_IO;
}

/* ---------------------------------------------------------------------- *
 * Names
 * ---------------------------------------------------------------------- */

/* rlxkv_hash64 fed one token at a time, as little-endian u32 bytes, so a
 * blob's u64 tokens can be hashed in place (test_store checks they agree). */
static uint64_t name_hash_token(uint64_t h, uint32_t t) {
    for (int i = 0; i < 4; i++) h = rlxkv_fnv_byte(h, (unsigned char)(t >> (8 * i)));
    return h;
}
/* v in lowercase hex, at least min_digits (zero-padded), at p; returns the
 * end. The store's only formatting: it keeps the printf family (several KB
 * of wasm) out of the build. */
static char *put_hex(char *p, uint64_t v, int min_digits) {
    char digits[16];
    int n = 0;
    do {
        digits[n++] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v || n < min_digits);
    while (n) *p++ = digits[--n];
    return p;
}

static void name_from_hash(uint64_t h, char name[32]) {
    memcpy(put_hex(name, rlxkv_fnv_final(h), 16), SUFFIX, SUFFIX_LEN + 1);
}

void rlxkv_blob_name(uint64_t fingerprint, const uint32_t *tokens, size_t n, char name[32]) {
    uint64_t h = rlxkv_fnv_init(fingerprint);
    for (size_t i = 0; i < n; i++) h = name_hash_token(h, tokens[i]);
    name_from_hash(h, name);
}

/* The name a valid blob (buf, already inspected) should have. */
static void blob_name_of(const uint8_t *buf, const rlxkv_blob_meta *m, char name[32]) {
    uint64_t h = rlxkv_fnv_init(m->fingerprint);
    for (size_t i = 0; i < m->n_tokens; i++)
        h = name_hash_token(h, (uint32_t)rlxkv_load_u64le(buf + RLXKV_BLOB_HEAD_BYTES + 8 * i));
    name_from_hash(h, name);
}

/* A name inside the directory: no separators, no "." or "..". */
static int valid_name(const char *name) {
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n >= NAME_CAP || strchr(name, '/')) return 0;
    return strcmp(name, ".") != 0 && strcmp(name, "..") != 0;
}

static int is_blob_name(const char *name) {
    size_t n = strlen(name);
    return n > SUFFIX_LEN && n < 32 && !strcmp(name + n - SUFFIX_LEN, SUFFIX);
}

/* Skips one run of lowercase hex digits; NULL if there is none. */
static const char *skip_hex(const char *p) {
    const char *q = p;
    while ((*q >= '0' && *q <= '9') || (*q >= 'a' && *q <= 'f')) q++;
    return q > p ? q : NULL;
}

/* A name rlxkv_store_save gives its temporary files, exactly:
 * <16 hex>.rlxkv.<hex>-<hex>-<hex>.tmp. Nothing else is ever swept. */
static int is_temp_name(const char *name) {
    const char *p = skip_hex(name);
    if (!p || p - name != 16 || strncmp(p, SUFFIX ".", SUFFIX_LEN + 1)) return 0;
    p += SUFFIX_LEN + 1;
    for (int i = 0; i < 3; i++) {
        if (!(p = skip_hex(p))) return 0;
        if (i < 2 && *p++ != '-') return 0;
    }
    return !strcmp(p, ".tmp");
}

/* dir + '/' + name into dst (sized for any valid name). */
static char *join(const rlxkv_store *s, char *dst, const char *name) {
    memcpy(dst, s->dir, s->dir_len);
    dst[s->dir_len] = '/';
    strcpy(dst + s->dir_len + 1, name);
    return dst;
}

/* ---------------------------------------------------------------------- *
 * Open / close
 * ---------------------------------------------------------------------- */
rlxkv_store *rlxkv_store_open(const char *dir, const rlxkv_io *io, int *status) {
    rlxkv_store *s = NULL;
    struct stat st;
    size_t n, each;
    int rc = RLXKV_ERR_INVALID;

    if (!io) io = &kPosixIo;
    if (!dir || !*dir || !io->open || !io->read || !io->write || !io->sync ||
        !io->close || !io->rename || !io->unlink)
        goto out;
    n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/') n--;
    if (n > SIZE_MAX / 4 - NAME_CAP - 2) goto out;

    /* One level only: the parent must exist. An existing file is refused. */
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        rc = io_status(errno);
        goto out;
    }
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        rc = RLXKV_ERR_IO;
        goto out;
    }

    rc = RLXKV_ERR_NOMEM;
    each = n + 2 + NAME_CAP;
    s = malloc(sizeof *s + 3 * each);
    if (!s) goto out;
    s->io = *io;
    s->seq = 0;
    s->dir_len = n;
    s->dir = (char *)(s + 1);
    s->path = s->dir + each;
    s->tmp = s->path + each;
    memcpy(s->dir, dir, n);
    s->dir[n] = '\0';
    rc = RLXKV_OK;
out:
    if (status) *status = rc;
    return s;
}

void rlxkv_store_close(rlxkv_store *s) { free(s); }

/* ---------------------------------------------------------------------- *
 * File helpers
 * ---------------------------------------------------------------------- */

/* Writes all of buf, going on after short writes. */
static int write_all(rlxkv_store *s, int fd, const uint8_t *buf, size_t len) {
    while (len) {
        size_t want = len < IO_CHUNK ? len : IO_CHUNK;
        long n = s->io.write(s->io.ctx, fd, buf, want);
        if (n < 0) {
            if (errno == EINTR) continue;
            return io_status(errno);
        }
        /* No progress (or a nonsense count) would spin forever. */
        if (n == 0 || (size_t)n > want) return RLXKV_ERR_IO;
        buf += n;
        len -= (size_t)n;
    }
    return RLXKV_OK;
}

/* Reads the whole file at path into a new buffer (*out, freed by the
 * caller), going on after short reads until end of file. size_hint is the
 * expected size: one read past it finds the end without regrowing. */
static int read_file(rlxkv_store *s, const char *path, size_t size_hint,
                     uint8_t **out, size_t *len) {
    size_t cap = size_hint < 64 ? 64 : size_hint, used = 0;
    uint8_t *buf;
    int fd, rc = RLXKV_OK;

    *out = NULL;
    *len = 0;
    if (cap < SIZE_MAX) cap++;
    fd = s->io.open(s->io.ctx, path, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0) return errno == ENOENT ? RLXKV_ERR_NOTFOUND : io_status(errno);
    buf = malloc(cap);
    if (!buf) rc = RLXKV_ERR_NOMEM;
    while (!rc) {
        long n;
        if (used == cap) { /* the file grew: double */
            uint8_t *nb;
            if (cap > SIZE_MAX / 2 || !(nb = realloc(buf, cap * 2))) {
                rc = RLXKV_ERR_NOMEM;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        n = s->io.read(s->io.ctx, fd, buf + used,
                       cap - used < IO_CHUNK ? cap - used : IO_CHUNK);
        if (n < 0) {
            if (errno == EINTR) continue;
            rc = io_status(errno);
        } else if (n == 0) {
            break;
        } else if ((size_t)n > cap - used) {
            rc = RLXKV_ERR_IO;
        } else {
            used += (size_t)n;
        }
    }
    s->io.close(s->io.ctx, fd); /* read-only: nothing to lose */
    if (rc) {
        free(buf);
        return rc;
    }
    *out = buf;
    *len = used;
    return RLXKV_OK;
}

static long mtime_ns_of(const struct stat *st) {
#if defined(__APPLE__)
    return st->st_mtimespec.tv_nsec;
#else
    return st->st_mtim.tv_nsec;
#endif
}

/* The directory's regular files named like blobs (*.rlxkv, short enough
 * for rlxkv_blob_info.name). Temporary files end in ".tmp" and are not.
 * With sweep, the walk also removes the temporary files of saves that
 * crashed (a process killed between create and rename): older than
 * TMP_ABANDONED_AGE, so a save in progress elsewhere keeps its own. Best
 * effort: what cannot be removed stays for the next sweep. */
static int scan(rlxkv_store *s, int sweep, cand **out, size_t *n_out) {
    cand *v = NULL;
    size_t n = 0, cap = 0;
    struct dirent *d;
    DIR *dir;
    time_t now = time(NULL);
    int rc = RLXKV_OK;

    *out = NULL;
    *n_out = 0;
    dir = opendir(s->dir);
    if (!dir) return io_status(errno);
    for (;;) {
        struct stat st;
        errno = 0;
        if (!(d = readdir(dir))) {
            if (errno) rc = io_status(errno);
            break;
        }
        int temp = sweep && is_temp_name(d->d_name) && strlen(d->d_name) < NAME_CAP;
        if (!temp && !is_blob_name(d->d_name)) continue;
        /* d_type is not reliable everywhere (Emscripten): stat. */
        if (stat(join(s, s->path, d->d_name), &st) != 0 || !S_ISREG(st.st_mode)) continue;
        if (temp) {
            if (now - st.st_mtime > TMP_ABANDONED_AGE) s->io.unlink(s->io.ctx, s->path);
            continue;
        }
        if (n == cap) {
            size_t nc = cap ? 2 * cap : 16;
            cand *nv = nc < SIZE_MAX / sizeof *nv ? realloc(v, nc * sizeof *nv) : NULL;
            if (!nv) {
                rc = RLXKV_ERR_NOMEM;
                break;
            }
            v = nv;
            cap = nc;
        }
        strcpy(v[n].name, d->d_name);
        v[n].mtime = (int64_t)st.st_mtime;
        v[n].mtime_ns = mtime_ns_of(&st);
        v[n].size = st.st_size > 0 ? (uint64_t)st.st_size : 0;
        n++;
    }
    closedir(dir);
    if (rc) {
        free(v);
        return rc;
    }
    *out = v;
    *n_out = n;
    return RLXKV_OK;
}

static int cmp_newest_first(const void *a, const void *b) {
    const cand *x = a, *y = b;
    if (x->mtime != y->mtime) return x->mtime > y->mtime ? -1 : 1;
    if (x->mtime_ns != y->mtime_ns) return x->mtime_ns > y->mtime_ns ? -1 : 1;
    return strcmp(y->name, x->name); /* the reverse of prune's oldest first */
}

/* ---------------------------------------------------------------------- *
 * Save / flush
 * ---------------------------------------------------------------------- */

/* Makes a rename durable. Best effort: some file systems cannot open or
 * sync a directory, and the blob is whole either way. */
static void sync_dir(rlxkv_store *s) {
    int fd = s->io.open(s->io.ctx, s->dir, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0) return;
    s->io.sync(s->io.ctx, fd);
    s->io.close(s->io.ctx, fd);
}

int rlxkv_store_save(rlxkv_store *s, const rlxkv_entry *e, uint64_t fingerprint) {
    char name[32], tmp_name[NAME_CAP];
    size_t size;
    uint8_t *buf;
    int fd, rc;

    if (!s || !e) return RLXKV_ERR_INVALID;
    size = rlxkv_encoded_size(e);
    if (!size) return RLXKV_ERR_INVALID;
    buf = malloc(size);
    if (!buf) return RLXKV_ERR_NOMEM;
    rc = rlxkv_encode(e, fingerprint, buf, size, NULL);
    if (rc) goto out;

    rlxkv_blob_name(fingerprint, e->tokens, e->n_tokens, name);
    join(s, s->path, name);
    /* The temporary name is unique per process, handle and call, and
     * O_EXCL makes sure: under Emscripten every process is pid 42 and heaps
     * are laid out alike, so two Node processes sharing a NODEFS directory
     * could pick one name; the loser takes the next. ".tmp" keeps it out of
     * every listing. */
    for (int tries = 0;; tries++) {
        /* name "." pid "-" handle "-" seq ".tmp": at most 22 + 3 * 17 + 4
         * characters, within NAME_CAP. */
        size_t n = strlen(name);
        char *p = tmp_name + n;
        memcpy(tmp_name, name, n);
        *p++ = '.';
        p = put_hex(p, (uint64_t)getpid(), 1);
        *p++ = '-';
        p = put_hex(p, (uint64_t)(uintptr_t)s, 1);
        *p++ = '-';
        p = put_hex(p, s->seq++, 1);
        memcpy(p, ".tmp", 5);
        join(s, s->tmp, tmp_name);
        fd = s->io.open(s->io.ctx, s->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd >= 0) break;
        if (errno != EEXIST || tries == TMP_TRIES - 1) {
            rc = io_status(errno);
            goto out;
        }
    }
    rc = write_all(s, fd, buf, size);
    if (!rc && s->io.sync(s->io.ctx, fd) != 0) rc = io_status(errno);
    /* close can report a deferred write error (NFS, quotas): it counts. */
    if (s->io.close(s->io.ctx, fd) != 0 && !rc) rc = io_status(errno);
    if (!rc && s->io.rename(s->io.ctx, s->tmp, s->path) != 0) rc = io_status(errno);
    if (rc) s->io.unlink(s->io.ctx, s->tmp);
    else sync_dir(s);
out:
    free(buf);
    return rc;
}

int rlxkv_store_flush(rlxkv_store *s, rlxkv_cache *c) {
    uint64_t fp;
    if (!s || !c) return RLXKV_ERR_INVALID;
    fp = rlxkv_cache_fingerprint(c);
    for (const rlxkv_entry *e = rlxkv_cache_next(c, NULL); e; e = rlxkv_cache_next(c, e)) {
        int rc;
        if (!rlxkv_cache_is_dirty(c, e)) continue;
        rc = rlxkv_store_save(s, e, fp);
        if (rc) return rc;
        rlxkv_cache_mark_clean(c, e);
    }
    return RLXKV_OK;
}

/* ---------------------------------------------------------------------- *
 * Read / load
 * ---------------------------------------------------------------------- */

/* Refuses a decoded blob (rc, *out, its fingerprint fp) whose file name is
 * not the one its own fingerprint and tokens give: a renamed file or a hash
 * collision must never answer for other tokens. */
static int check_name(const char *name, int rc, uint64_t fp, rlxkv_entry **out) {
    char want[32];
    if (rc != RLXKV_OK) return rc;
    rlxkv_blob_name(fp, (*out)->tokens, (*out)->n_tokens, want);
    if (strcmp(want, name) != 0) {
        rlxkv_entry_free(*out);
        *out = NULL;
        return RLXKV_ERR_CORRUPT;
    }
    return RLXKV_OK;
}

/* Decodes a file's bytes in memory, named as check_name requires. */
static int decode_named(const char *name, const uint8_t *buf, size_t len,
                        const uint64_t *expect_fp, rlxkv_entry **out) {
    uint64_t fp = 0;
    int rc = rlxkv_decode(buf, len, expect_fp, out, &fp);
    return check_name(name, rc, fp, out);
}

/* An open file as the decoder's source: exactly n bytes per call, short
 * reads resumed. Ending early means the file is not the size stat gave. */
typedef struct file_src {
    rlxkv_store *s;
    int fd;
    int resized;
} file_src;

static int read_exact(void *ctx, uint8_t *dst, size_t n) {
    file_src *f = ctx;
    while (n) {
        size_t want = n < IO_CHUNK ? n : IO_CHUNK;
        long got = f->s->io.read(f->s->io.ctx, f->fd, dst, want);
        if (got < 0) {
            if (errno == EINTR) continue;
            return io_status(errno);
        }
        if (got == 0) {
            f->resized = 1;
            return RLXKV_ERR_TRUNCATED;
        }
        if ((size_t)got > want) return RLXKV_ERR_IO;
        dst += got;
        n -= (size_t)got;
    }
    return RLXKV_OK;
}

static int is_format_error(int rc) {
    return rc == RLXKV_ERR_BAD_MAGIC || rc == RLXKV_ERR_TRUNCATED || rc == RLXKV_ERR_CORRUPT;
}

/* A file this host could hold in memory at all: larger ones (beyond a
 * 32-bit size_t on wasm) are reported as unreadable, not tried. */
static int readable(uint64_t size) { return size < SIZE_MAX / 2; }

static size_t size_hint_of(uint64_t size) {
    return size < SIZE_MAX ? (size_t)size : SIZE_MAX;
}

/* Decodes the blob file at s->path (size bytes, by stat) straight into its
 * entry: header and lengths first, then each block read into place, so the
 * bytes are copied once (no whole-file buffer to decode from). The verdict
 * is always that of the bytes in the file: if the file turns out to have
 * another size, or the blob is refused (rare: no shortcut needed), the
 * whole file is read into a buffer and judged again from there. */
static int load_file(rlxkv_store *s, const char *name, uint64_t size,
                     const uint64_t *expect_fp, rlxkv_entry **out) {
    file_src f = {s, -1, 0};
    rlxkv_src src = {NULL, size, read_exact, NULL, NULL, &f};
    uint64_t fp = 0;
    uint8_t *buf;
    size_t len;
    int rc;

    *out = NULL;
    if (readable(size)) {
        f.fd = s->io.open(s->io.ctx, s->path, O_RDONLY | O_CLOEXEC, 0);
        if (f.fd < 0) return errno == ENOENT ? RLXKV_ERR_NOTFOUND : io_status(errno);
        rc = rlxkv_decode_src(&src, expect_fp, out, NULL, &fp);
        if (rc == RLXKV_OK) { /* the file must end where its size said */
            uint8_t extra;
            long n;
            while ((n = s->io.read(s->io.ctx, f.fd, &extra, 1)) < 0 && errno == EINTR) {}
            if (n < 0) rc = io_status(errno);
            else if (n) f.resized = 1;
            if (rc || n) {
                rlxkv_entry_free(*out);
                *out = NULL;
            }
        }
        s->io.close(s->io.ctx, f.fd); /* read-only: nothing to lose */
        if (!f.resized && !is_format_error(rc)) return check_name(name, rc, fp, out);
    }
    rc = read_file(s, s->path, size_hint_of(size), &buf, &len);
    if (rc) return rc;
    rc = decode_named(name, buf, len, expect_fp, out);
    free(buf);
    return rc;
}

/* Validates a blob in memory (*m filled) and that the file is named after
 * its fingerprint and tokens: CORRUPT otherwise (see check_name). */
static int inspect_named(const char *name, const uint8_t *buf, size_t len, rlxkv_blob_meta *m) {
    char want[32];
    int rc = rlxkv_inspect(buf, len, m);
    if (rc) return rc;
    blob_name_of(buf, m, want);
    return strcmp(want, name) ? RLXKV_ERR_CORRUPT : RLXKV_OK;
}

/* The verdict load_file would give, without building the entry (the blobs
 * that load leaves out are judged, not decoded). Stale is, as in
 * rlxkv_decode, a right magic with another fingerprint, whatever follows. */
static int judge(const char *name, const uint8_t *buf, size_t len, uint64_t fp) {
    rlxkv_blob_meta m;
    uint64_t blob_fp;
    if (rlxkv_blob_head(buf, len, &blob_fp, NULL) == RLXKV_OK && blob_fp != fp) return RLXKV_STALE;
    return inspect_named(name, buf, len, &m);
}

int rlxkv_store_read(rlxkv_store *s, const char *name, const uint64_t *expect_fp,
                     rlxkv_entry **out) {
    struct stat st;

    if (!out) return RLXKV_ERR_INVALID;
    *out = NULL;
    if (!s || !valid_name(name)) return RLXKV_ERR_INVALID;
    join(s, s->path, name);
    if (stat(s->path, &st) != 0) return errno == ENOENT ? RLXKV_ERR_NOTFOUND : io_status(errno);
    return load_file(s, name, st.st_size > 0 ? (uint64_t)st.st_size : 0, expect_fp, out);
}

int rlxkv_store_load(rlxkv_store *s, rlxkv_cache *c, rlxkv_load_report *report) {
    rlxkv_load_report r;
    rlxkv_entry **held = NULL;
    size_t n = 0, n_held = 0, held_bytes = 0, cap;
    rlxkv_stats stats;
    cand *v = NULL;
    uint64_t fp;
    int rc, full;

    memset(&r, 0, sizeof r);
    if (report) *report = r;
    if (!s || !c) return RLXKV_ERR_INVALID;
    fp = rlxkv_cache_fingerprint(c);
    rlxkv_cache_stats(c, &stats);
    cap = stats.cap_bytes;
    full = cap == 0; /* a disabled cache takes nothing */

    rc = scan(s, 0, &v, &n);
    if (rc) return rc;
    if (n && !(held = malloc(n * sizeof *held))) {
        free(v);
        return RLXKV_ERR_NOMEM;
    }

    /* Newest first, holding entries while the cap allows (always at least
     * one); every older valid blob is then left out. Every file is still
     * read, so that the report tells skipped from stale and corrupt. */
    if (n > 1) qsort(v, n, sizeof *v, cmp_newest_first); /* v is NULL when n == 0 */
    for (size_t i = 0; i < n; i++) {
        rlxkv_entry *e = NULL;
        uint8_t *buf;
        size_t len, kv;

        if (!readable(v[i].size)) {
            r.corrupt++;
            continue;
        }
        join(s, s->path, v[i].name);
        if (!full) {
            rc = load_file(s, v[i].name, v[i].size, &fp, &e);
        } else if ((rc = read_file(s, s->path, size_hint_of(v[i].size), &buf, &len)) == RLXKV_OK) {
            rc = judge(v[i].name, buf, len, fp);
            free(buf);
        }
        if (rc == RLXKV_ERR_NOMEM) goto fail;
        if (rc == RLXKV_ERR_NOTFOUND) continue; /* removed since the scan */
        if (rc == RLXKV_STALE) {
            r.stale++;
            continue;
        }
        if (rc) {
            r.corrupt++;
            continue;
        }
        if (full) {
            r.skipped++;
            continue;
        }
        kv = rlxkv_entry_kv_bytes(e);
        if (n_held && (held_bytes > cap || kv > cap - held_bytes)) {
            full = 1;
            r.skipped++;
            rlxkv_entry_free(e);
            continue;
        }
        held[n_held++] = e;
        held_bytes += kv;
    }

    /* Oldest first, so the newest end up most recently used. put keeps the
     * entry it is given (cap > 0 here), so its tokens stay valid after. */
    rc = RLXKV_OK;
    while (n_held) {
        rlxkv_entry *e = held[--n_held];
        size_t kv = rlxkv_entry_kv_bytes(e);
        const rlxkv_entry *in;
        int prc;
        /* The cache's own entry is at least as new as the file (it may be
         * dirty): keep it. */
        if (rlxkv_cache_get(c, e->tokens, e->n_tokens)) {
            rlxkv_entry_free(e);
            r.skipped++;
            continue;
        }
        prc = rlxkv_cache_put(c, e);
        if (prc == RLXKV_ERR_NOMEM) {
            rc = prc;
            goto fail;
        }
        if (prc) { /* NOSPACE: pinned entries leave no room */
            r.skipped++;
            continue;
        }
        in = rlxkv_cache_get(c, e->tokens, e->n_tokens);
        if (in) rlxkv_cache_mark_clean(c, in);
        r.loaded++;
        r.bytes += kv;
    }
    free(held);
    free(v);
    if (report) *report = r;
    return RLXKV_OK;

fail:
    while (n_held) rlxkv_entry_free(held[--n_held]);
    free(held);
    free(v);
    if (report) *report = r;
    return rc;
}

/* ---------------------------------------------------------------------- *
 * List / remove / prune
 * ---------------------------------------------------------------------- */
static int cmp_cand_name(const void *a, const void *b) {
    return strcmp(((const cand *)a)->name, ((const cand *)b)->name);
}

/* rlxkv_store_list, and for prune: sweep (see scan) and, when mtime_ns is
 * given, each blob's mtime nanoseconds beside it (malloc'd, in info's
 * order), which rlxkv_blob_info lacks. */
static int list(rlxkv_store *s, uint64_t fingerprint, int sweep, rlxkv_blob_info **out,
                long **mtime_ns, size_t *n_out) {
    rlxkv_blob_info *info;
    long *ns = NULL;
    size_t n = 0, k = 0;
    cand *v = NULL;
    int rc;

    *out = NULL;
    *n_out = 0;
    if (mtime_ns) *mtime_ns = NULL;
    rc = scan(s, sweep, &v, &n);
    if (rc) return rc;
    /* In name order from the start, so that ns stays beside its info. */
    if (n > 1) qsort(v, n, sizeof *v, cmp_cand_name);
    info = calloc(n ? n : 1, sizeof *info);
    if (mtime_ns) ns = malloc((n ? n : 1) * sizeof *ns);
    if (!info || (mtime_ns && !ns)) rc = RLXKV_ERR_NOMEM;
    for (size_t i = 0; i < n && rc == RLXKV_OK; i++) {
        rlxkv_blob_info *b = &info[k];
        rlxkv_blob_meta m;
        uint8_t *buf;
        size_t len;
        int frc;

        memcpy(b->name, v[i].name, sizeof b->name);
        b->file_bytes = size_hint_of(v[i].size);
        b->mtime = v[i].mtime;
        if (ns) ns[k] = v[i].mtime_ns;
        if (!readable(v[i].size)) {
            b->status = RLXKV_BLOB_CORRUPT;
            b->error = RLXKV_ERR_NOMEM;
            k++;
            continue;
        }
        frc = read_file(s, join(s, s->path, v[i].name), b->file_bytes, &buf, &len);
        if (frc == RLXKV_ERR_NOMEM) rc = frc;
        if (frc == RLXKV_ERR_NOMEM || frc == RLXKV_ERR_NOTFOUND) continue; /* gone since the scan */
        k++;
        if (frc == RLXKV_OK) {
            b->file_bytes = len;
            frc = inspect_named(b->name, buf, len, &m);
            free(buf);
        }
        if (frc) {
            b->status = RLXKV_BLOB_CORRUPT;
            b->error = frc;
        } else {
            b->status = m.fingerprint == fingerprint ? RLXKV_BLOB_OK : RLXKV_BLOB_STALE;
            b->n_tokens = m.n_tokens;
            b->fingerprint = m.fingerprint;
        }
    }
    free(v);
    if (rc) {
        free(info);
        free(ns);
        return rc;
    }
    *out = info;
    *n_out = k;
    if (mtime_ns) *mtime_ns = ns;
    return RLXKV_OK;
}

int rlxkv_store_list(rlxkv_store *s, uint64_t fingerprint, rlxkv_blob_info **out, size_t *n_out) {
    if (out) *out = NULL;
    if (n_out) *n_out = 0;
    if (!s || !out || !n_out) return RLXKV_ERR_INVALID;
    return list(s, fingerprint, 0, out, NULL, n_out);
}

int rlxkv_store_remove(rlxkv_store *s, const char *name) {
    if (!s || !valid_name(name)) return RLXKV_ERR_INVALID;
    if (s->io.unlink(s->io.ctx, join(s, s->path, name)) == 0) return RLXKV_OK;
    return errno == ENOENT ? RLXKV_ERR_NOTFOUND : io_status(errno);
}

static int cmp_name32(const void *a, const void *b) { return strcmp(a, b); }

/* The blob names of every entry in keep, sorted for bsearch. */
static int keep_names(const rlxkv_cache *keep, int pinned_only, char (**out)[32],
                      size_t *n_out) {
    char (*names)[32];
    size_t n = 0, i = 0;
    uint64_t fp;

    *out = NULL;
    *n_out = 0;
    if (!keep) return RLXKV_OK;
    for (const rlxkv_entry *e = rlxkv_cache_next(keep, NULL); e; e = rlxkv_cache_next(keep, e)) n++;
    if (!n) return RLXKV_OK;
    names = malloc(n * sizeof *names);
    if (!names) return RLXKV_ERR_NOMEM;
    fp = rlxkv_cache_fingerprint(keep);
    for (const rlxkv_entry *e = rlxkv_cache_next(keep, NULL); e && i < n; e = rlxkv_cache_next(keep, e))
        if (!pinned_only || rlxkv_cache_is_pinned(keep, e))
            rlxkv_blob_name(fp, e->tokens, e->n_tokens, names[i++]);
    if (i > 1) qsort(names, i, sizeof *names, cmp_name32);
    *out = names;
    *n_out = i;
    return RLXKV_OK;
}

/* A blob that the budget may remove, for sorting oldest first. The
 * nanoseconds (which rlxkv_blob_info lacks) order saves within a second as
 * load does. */
typedef struct age_ctx {
    const rlxkv_blob_info *info;
    size_t idx;
    long mtime_ns;
} age_ctx;

static int cmp_oldest_first(const void *a, const void *b) {
    const age_ctx *x = a, *y = b;
    if (x->info->mtime != y->info->mtime) return x->info->mtime < y->info->mtime ? -1 : 1;
    if (x->mtime_ns != y->mtime_ns) return x->mtime_ns < y->mtime_ns ? -1 : 1;
    return strcmp(x->info->name, y->info->name);
}

int rlxkv_store_prune(rlxkv_store *s, uint64_t fingerprint, size_t max_bytes,
                      unsigned flags, const rlxkv_cache *keep,
                      rlxkv_prune_report *report) {
    rlxkv_prune_report r;
    rlxkv_blob_info *info = NULL;
    long *mtime_ns = NULL;
    char (*kept)[32] = NULL;
    size_t n = 0, n_kept = 0, n_victims = 0, n_ok = 0;
    size_t *victims = NULL;
    age_ctx *ok = NULL;
    uint64_t fp_bytes = 0, all_bytes = 0, gone_bytes = 0;
    int rc;

    memset(&r, 0, sizeof r);
    if (report) *report = r;
    if (!s) return RLXKV_ERR_INVALID;
    rc = list(s, fingerprint, !(flags & RLXKV_PRUNE_DRY_RUN), &info, &mtime_ns, &n);
    if (rc) return rc;
    rc = keep_names(keep, (flags & RLXKV_PRUNE_KEEP_PINNED) != 0, &kept, &n_kept);
    if (rc) goto done;
    rc = RLXKV_ERR_NOMEM;
    victims = malloc((n ? n : 1) * sizeof *victims);
    ok = malloc((n ? n : 1) * sizeof *ok);
    if (!victims || !ok) goto done;

    /* Corrupt and stale blobs first, then the fingerprint's oldest until
     * its files fit max_bytes. A blob of an entry in keep always stays. */
    for (size_t i = 0; i < n; i++) {
        int guarded = n_kept && bsearch(info[i].name, kept, n_kept, sizeof *kept, cmp_name32);
        all_bytes += info[i].file_bytes;
        if (info[i].status == RLXKV_BLOB_OK ||
            (info[i].status == RLXKV_BLOB_STALE && (flags & RLXKV_PRUNE_ANY_FINGERPRINT))) {
            fp_bytes += info[i].file_bytes;
            if (!guarded && max_bytes != SIZE_MAX) {
                ok[n_ok].info = &info[i];
                ok[n_ok].idx = i;
                ok[n_ok++].mtime_ns = mtime_ns[i];
            }
        } else if (!guarded && (info[i].status == RLXKV_BLOB_CORRUPT ||
                                !(flags & RLXKV_PRUNE_KEEP_STALE))) {
            victims[n_victims++] = i;
        }
    }
    if (n_ok > 1) qsort(ok, n_ok, sizeof *ok, cmp_oldest_first);
    for (size_t j = 0; j < n_ok && fp_bytes > max_bytes; j++) {
        victims[n_victims++] = ok[j].idx;
        fp_bytes -= ok[j].info->file_bytes;
    }

    /* Stop at the first failure: what was removed is gone, the rest is
     * untouched, and the report says which is which. */
    rc = RLXKV_OK;
    for (size_t j = 0; j < n_victims; j++) {
        const rlxkv_blob_info *b = &info[victims[j]];
        if (!(flags & RLXKV_PRUNE_DRY_RUN)) {
            int urc = rlxkv_store_remove(s, b->name);
            if (urc && urc != RLXKV_ERR_NOTFOUND) {
                rc = urc;
                break;
            }
        }
        r.removed++;
        gone_bytes += b->file_bytes;
    }
    /* Totals in u64, clamped: a directory may outgrow a 32-bit size_t. */
    r.kept = n - r.removed;
    r.removed_bytes = gone_bytes < SIZE_MAX ? (size_t)gone_bytes : SIZE_MAX;
    all_bytes -= gone_bytes;
    r.kept_bytes = all_bytes < SIZE_MAX ? (size_t)all_bytes : SIZE_MAX;
done:
    if (report) *report = r;
    free(ok);
    free(victims);
    free(kept);
    free(info);
    free(mtime_ns);
    return rc;
}
