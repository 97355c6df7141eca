/* The blob store: a directory with one blob file per entry (see "Store" in
 * rlxkv.h for what counts as a blob and how each file is judged).
 *
 * File data moves through the rlxkv_io vtable (so tests can inject faults);
 * the directory itself is read with opendir/readdir/stat. Only plain POSIX
 * is used, nothing Linux-only (no O_TMPFILE, linkat or flock), because the
 * same code runs natively and on Emscripten's MEMFS and NODEFS.
 *
 * One way to read a blob (blob_open, blob_judge, blob_decode): a regular
 * file, opened without blocking, its size as opened compared with the
 * size it was found with; judged from its header, tokens and block lengths
 * by the codec's own decoder while the values are seeked over; decoded,
 * when it is to be loaded, through the same descriptor straight into its
 * entry. A file that is not the size it was judged at is "changed", never
 * read past that size.
 *
 * A save streams the blob from the entry into a temporary file in the same
 * directory, syncs and closes it, then renames it over the final name: a
 * crash leaves the old blob or the new one, never a torn one. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h> /* kill(pid, 0) */
#include <stdint.h>
#include <stdio.h>  /* rename */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "codec.h"
#include "entry.h"
#include "hash.h"

#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif
#ifndef O_NONBLOCK
#define O_NONBLOCK 0
#endif

#define SUFFIX ".rlxkv"
#define SUFFIX_LEN 6
/* Longest file name the store reads, removes or makes (temporary names
 * included); blob names are 22 characters. */
#define NAME_CAP RLXKV_NAME_CAP
/* Largest single read or write: keeps every count inside a long. */
#define IO_CHUNK ((size_t)1 << 30)
/* Temporary names tried before a save gives up (each a new name). */
#define TMP_TRIES 16
/* A temporary file this old (seconds) is a dead save's whatever its PID
 * says: a save writes its file in one go. */
#define TMP_ABANDONED_AGE 3600

struct rlxkv_store {
    rlxkv_io io;
    uint64_t seq;    /* makes this handle's temporary names unique */
    size_t dir_len;
    char *dir;       /* the directory, NUL-terminated */
    char *path;      /* scratch: dir + '/' + a name */
    char *tmp;       /* scratch: the temporary path during a save */
    int sys_errno;   /* behind the last IO or QUOTA met (rlxkv_store_errno) */
};

/* A directory entry that is a regular file named as a blob or as a save's
 * temporary file. */
typedef struct cand {
    char name[NAME_CAP];
    int64_t mtime;      /* seconds */
    long mtime_ns;
    uint64_t size;
    int temp;
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
static int64_t px_seek(void *ctx, int fd, int64_t offset, int whence) {
    (void)ctx;
    if ((int64_t)(off_t)offset != offset) { /* a 32-bit off_t */
        errno = EOVERFLOW;
        return -1;
    }
    return (int64_t)lseek(fd, (off_t)offset, whence);
}

static const rlxkv_io kPosixIo = {NULL,     px_open,  px_read,   px_write, px_sync,
                                  px_close, px_rename, px_unlink, px_seek};

const rlxkv_io *rlxkv_io_posix(void) { return &kPosixIo; }

/* A full disk and an exhausted quota are the one failure a caller can act
 * on (prune, then retry); every other errno is plain I/O. s (NULL while
 * opening) keeps err, so that a caller can tell EACCES from ENOTDIR. */
static int io_status(rlxkv_store *s, int err) {
    if (s) s->sys_errno = err;
    if (err == ENOSPC) return RLXKV_ERR_QUOTA;
#ifdef EDQUOT
    if (err == EDQUOT) return RLXKV_ERR_QUOTA;
#endif
    return RLXKV_ERR_IO;
}

/* An I/O failure that set no errno (a count no system call returns, a seek
 * past what a u64 holds): nothing to tell beyond it. */
static int io_odd(rlxkv_store *s) {
    s->sys_errno = 0;
    return RLXKV_ERR_IO;
}

/* ---------------------------------------------------------------------- *
 * Names
 * ---------------------------------------------------------------------- */

/* rlxkv_hash64 fed one token at a time, as little-endian u32 bytes, so a
 * blob's tokens can be hashed as they are read (test_store checks they
 * agree). */
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

/* A page's name from its key (rlxkv_chain_final): 32 hex digits; a key
 * whose first half is 0 names a blob by its 64-bit name (16 digits). */
static void name_from_key(const uint64_t key[2], char name[RLXKV_PAGE_NAME_CAP]) {
    char *p = key[0] ? put_hex(put_hex(name, key[0], 16), key[1], 16) : put_hex(name, key[1], 16);
    memcpy(p, SUFFIX, SUFFIX_LEN + 1);
}

void rlxkv_page_key(uint64_t fingerprint, int dtype, const uint32_t *tokens, size_t n, uint64_t key[2]) {
    rlxkv_chain c = rlxkv_chain_init(fingerprint);
    for (size_t i = 0; i < n; i++) rlxkv_chain_token(&c, tokens[i]);
    rlxkv_chain_final(&c, dtype, n, key);
}

void rlxkv_page_name(uint64_t fingerprint, int dtype, const uint32_t *tokens, size_t n,
                     char name[RLXKV_PAGE_NAME_CAP]) {
    uint64_t key[2];
    rlxkv_page_key(fingerprint, dtype, tokens, n, key);
    name_from_key(key, name);
}

void rlxkv_blob_name(uint64_t fingerprint, const uint32_t *tokens, size_t n, char name[32]) {
    uint64_t h = rlxkv_fnv_init(fingerprint);
    for (size_t i = 0; i < n; i++) h = name_hash_token(h, tokens[i]);
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
    return n > SUFFIX_LEN && n < RLXKV_PAGE_NAME_CAP && !strcmp(name + n - SUFFIX_LEN, SUFFIX);
}

/* Skips one run of lowercase hex digits, its value in *v (may be NULL;
 * saturated); NULL if there is none. */
static const char *skip_hex(const char *p, uint64_t *v) {
    const char *q = p;
    uint64_t x = 0;
    for (; (*q >= '0' && *q <= '9') || (*q >= 'a' && *q <= 'f'); q++) {
        unsigned d = (unsigned)(*q <= '9' ? *q - '0' : *q - 'a' + 10);
        x = x > (UINT64_MAX >> 4) ? UINT64_MAX : x << 4 | d;
    }
    if (v) *v = x;
    return q > p ? q : NULL;
}

/* A name rlxkv_store_save (or a cache's store) gives its temporary files,
 * exactly: <16 or 32 hex>.rlxkv.<pid hex>-<hex>-<hex>.tmp; *pid gets the
 * writer's PID.
 * Nothing else is ever swept. */
static int is_temp_name(const char *name, uint64_t *pid) {
    const char *p = skip_hex(name, NULL);
    if (strlen(name) >= NAME_CAP) return 0;
    if (!p || (p - name != 16 && p - name != 32) || strncmp(p, SUFFIX ".", SUFFIX_LEN + 1)) return 0;
    p += SUFFIX_LEN + 1;
    for (int i = 0; i < 3; i++) {
        if (!(p = skip_hex(p, i == 0 ? pid : NULL))) return 0;
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
        !io->close || !io->rename || !io->unlink || !io->seek)
        goto out;
    n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/') n--;
    if (n > SIZE_MAX / 4 - NAME_CAP - 2) goto out;

    /* One level only: the parent must exist. An existing file is refused. */
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        rc = io_status(NULL, errno);
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
    s->sys_errno = 0;
    memcpy(s->dir, dir, n);
    s->dir[n] = '\0';
    rc = RLXKV_OK;
out:
    if (status) *status = rc;
    return s;
}

void rlxkv_store_close(rlxkv_store *s) { free(s); }

int rlxkv_store_errno(const rlxkv_store *s) { return s ? s->sys_errno : 0; }

/* ---------------------------------------------------------------------- *
 * The directory
 * ---------------------------------------------------------------------- */
static long mtime_ns_of(const struct stat *st) {
#if defined(__APPLE__)
    return st->st_mtimespec.tv_nsec;
#else
    return st->st_mtim.tv_nsec;
#endif
}

/* The directory's regular files named as blobs (and, with temps, as
 * temporary files), with their size and mtime from one stat each. stat,
 * not lstat: a symlink counts as what it points at; anything but a
 * regular file is left alone here, so it is never opened. */
static int scan(rlxkv_store *s, int temps, cand **out, size_t *n_out) {
    cand *v = NULL;
    size_t n = 0, cap = 0;
    struct dirent *d;
    DIR *dir;
    int rc = RLXKV_OK;

    *out = NULL;
    *n_out = 0;
    dir = opendir(s->dir);
    if (!dir) return io_status(s, errno);
    for (;;) {
        struct stat st;
        int temp;
        errno = 0;
        if (!(d = readdir(dir))) {
            if (errno) rc = io_status(s, errno);
            break;
        }
        temp = temps && is_temp_name(d->d_name, NULL);
        if (!temp && !is_blob_name(d->d_name)) continue;
        /* d_type is not reliable everywhere (Emscripten): stat. */
        if (stat(join(s, s->path, d->d_name), &st) != 0 || !S_ISREG(st.st_mode)) continue;
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
        v[n].temp = temp;
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

/* Newest first; within one mtime, the larger name first. */
static int cmp_newest_first(const void *a, const void *b) {
    const cand *x = a, *y = b;
    if (x->mtime != y->mtime) return x->mtime > y->mtime ? -1 : 1;
    if (x->mtime_ns != y->mtime_ns) return x->mtime_ns > y->mtime_ns ? -1 : 1;
    return strcmp(y->name, x->name);
}

/* Whether no live save can own a temporary file (size, mtime, name):
 * too old for any save, or natively, written by a PID that is no running
 * process. Under Emscripten every process is PID 42, so age alone tells. */
static int temp_abandoned(const cand *c, time_t now) {
    uint64_t pid = 0;
    if (now - c->mtime > TMP_ABANDONED_AGE) return 1;
#ifndef __EMSCRIPTEN__
    /* kill(0 or negative) would address process groups: only 1..INT_MAX. */
    if (is_temp_name(c->name, &pid) && pid >= 1 && pid <= INT_MAX &&
        (pid_t)pid != getpid() && kill((pid_t)pid, 0) != 0 && errno == ESRCH)
        return 1;
#else
    (void)pid;
#endif
    return 0;
}

/* ---------------------------------------------------------------------- *
 * Reading a blob: open, judge, decode
 * ---------------------------------------------------------------------- */

/* An open blob file, as the codec's source: exactly n bytes per read,
 * short reads resumed; skips are seeks. Every token read is hashed into
 * the name it must have. */
typedef struct blob_file {
    rlxkv_store *s;
    int fd;
    uint64_t size;   /* as judged */
    uint64_t at;
    uint64_t hash;   /* the name hash of the fingerprint and the tokens so far */
    rlxkv_chain chain; /* and the page name's chain of them (rlxkv_page_name) */
    int hashing;     /* hash started (at the first run of tokens) */
} blob_file;

static int bf_read(void *ctx, uint8_t *dst, size_t n) {
    blob_file *f = ctx;
    while (n) {
        size_t want = n < IO_CHUNK ? n : IO_CHUNK;
        long got = f->s->io.read(f->s->io.ctx, f->fd, dst, want);
        if (got < 0) {
            if (errno == EINTR) continue;
            return io_status(f->s, errno);
        }
        if (got == 0) return RLXKV_ERR_CHANGED; /* shorter than judged */
        if ((size_t)got > want) return io_odd(f->s);
        dst += got;
        n -= (size_t)got;
        f->at += (uint64_t)got;
    }
    return RLXKV_OK;
}

static int bf_seek(blob_file *f, uint64_t to) {
    int64_t at = to > INT64_MAX ? -2 : f->s->io.seek(f->s->io.ctx, f->fd, (int64_t)to, SEEK_SET);
    if (at == -1) return io_status(f->s, errno);
    if (at != (int64_t)to) return io_odd(f->s);
    f->at = to;
    return RLXKV_OK;
}

static int bf_skip(void *ctx, uint64_t n) {
    blob_file *f = ctx;
    return n > UINT64_MAX - f->at ? io_odd(f->s) : bf_seek(f, f->at + n);
}

static void bf_tokens(void *ctx, uint64_t fp, const uint32_t *t, size_t n) {
    blob_file *f = ctx;
    if (!f->hashing) f->hash = rlxkv_fnv_init(fp), f->chain = rlxkv_chain_init(fp), f->hashing = 1;
    for (size_t i = 0; i < n; i++) {
        f->hash = name_hash_token(f->hash, t[i]);
        rlxkv_chain_token(&f->chain, t[i]);
    }
}

/* The file's size now, from its descriptor: what a changed file is told by. */
static int bf_unchanged(blob_file *f) {
    int64_t end = f->s->io.seek(f->s->io.ctx, f->fd, 0, SEEK_END);
    if (end < 0) return io_status(f->s, errno);
    return (uint64_t)end == f->size ? RLXKV_OK : RLXKV_ERR_CHANGED;
}

/* Opens s->path, found as a regular file of `size` bytes. Non-blocking, so
 * that a file swapped for a fifo since its stat cannot hang us; a
 * descriptor that cannot seek (a pipe) is no blob. */
static int blob_open(rlxkv_store *s, uint64_t size, blob_file *f) {
    int rc;
    memset(f, 0, sizeof *f);
    f->s = s;
    f->size = size;
    f->fd = s->io.open(s->io.ctx, s->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC, 0);
    if (f->fd < 0) return errno == ENOENT ? RLXKV_ERR_NOTFOUND : io_status(s, errno);
    if ((rc = bf_unchanged(f)) || (rc = bf_seek(f, 0))) {
        s->io.close(s->io.ctx, f->fd); /* read-only: nothing to lose */
        f->fd = -1;
    }
    return rc;
}

static void blob_close(blob_file *f) {
    if (f->fd >= 0) f->s->io.close(f->s->io.ctx, f->fd);
    f->fd = -1;
}

static int is_format_error(int rc) {
    return rc == RLXKV_ERR_BAD_MAGIC || rc == RLXKV_ERR_TRUNCATED || rc == RLXKV_ERR_CORRUPT;
}

/* KV bytes of a judged blob (saturating: a u64 count of 2-byte values). */
static uint64_t kv_bytes_of(const rlxkv_blob_meta *m) {
    uint64_t size = rlxkv_dtype_size(m->dtype);
    return m->n_values > UINT64_MAX / size ? UINT64_MAX : m->n_values * size;
}

/* What the judge found. */
typedef struct verdict {
    int rc;             /* OK (valid), or the rlxkv_status that refused it */
    int own_name;       /* valid and named after its fingerprint and tokens */
    rlxkv_blob_meta m;  /* when valid (fingerprint also when rc is LIMIT) */
} verdict;

/* One pass of the codec's decoder over the open file from its start:
 * judging (out NULL: values seeked over, nothing allocated) or decoding.
 * Ends with the file checked to be the size judged and, when valid, its
 * name compared with the one its contents give. */
static void blob_pass(blob_file *f, const char *name, rlxkv_entry **out, verdict *v) {
    rlxkv_src src = {NULL, f->size, bf_read, bf_skip, bf_tokens, f};
    uint64_t fp = 0;
    char want[32];
    int rc;

    memset(v, 0, sizeof *v);
    f->hashing = 0;
    if ((rc = bf_seek(f, 0)) == RLXKV_OK) rc = rlxkv_decode_src(&src, NULL, out, &v->m, &fp);
    if (rc == RLXKV_ERR_LIMIT) v->m.fingerprint = fp;
    /* Any verdict on the bytes (valid, invalid, past a limit) holds only
     * for a file that is still the size it was judged at. */
    if (rc == RLXKV_OK || rc == RLXKV_ERR_LIMIT || is_format_error(rc)) {
        int urc = bf_unchanged(f);
        if (urc && out) {
            rlxkv_entry_free(*out);
            *out = NULL;
        }
        if (urc) rc = urc;
    }
    if (rc == RLXKV_OK) {
        /* Its own name: the blob name of its fingerprint and tokens, or
         * the page name of those and its dtype (what caches write). */
        char page[RLXKV_PAGE_NAME_CAP];
        uint64_t key[2];
        rlxkv_chain c = f->hashing ? f->chain : rlxkv_chain_init(fp);
        rlxkv_chain_final(&c, v->m.dtype, v->m.n_tokens, key);
        name_from_key(key, page);
        name_from_hash(f->hashing ? f->hash : rlxkv_fnv_init(fp), want);
        v->own_name = !strcmp(want, name) || !strcmp(page, name);
    }
    v->rc = rc;
}

/* The judge of every store operation: the verdict on the regular file
 * `name`, found `size` bytes long, from its header, tokens and block
 * lengths (*v). With out, a valid blob under its own name (any name with
 * any_name) of fingerprint *want_fp (any if NULL) whose KV bytes are at
 * most room is then decoded too, into *out (owned by the caller), through
 * the same descriptor; if that fails, v->rc says why (NOMEM, CHANGED, IO).
 * *out stays NULL for a blob over room. */
static void blob_read(rlxkv_store *s, const char *name, uint64_t size, const uint64_t *want_fp,
                      int any_name, uint64_t room, rlxkv_entry **out, verdict *v) {
    blob_file f;
    int rc;

    if (out) *out = NULL;
    memset(v, 0, sizeof *v);
    join(s, s->path, name);
    if ((rc = blob_open(s, size, &f))) {
        v->rc = rc;
        return;
    }
    blob_pass(&f, name, NULL, v);
    if (out && v->rc == RLXKV_OK && (v->own_name || any_name) &&
        (!want_fp || v->m.fingerprint == *want_fp) &&
        kv_bytes_of(&v->m) <= room) {
        verdict again;
        /* A file this host cannot address, or could not hold, is too large
         * for this process: valid, and never to be taken for corrupt. */
        if (v->m.blob_bytes >= SIZE_MAX / 2) {
            v->rc = RLXKV_ERR_NOMEM;
        } else {
            blob_pass(&f, name, out, &again);
            /* The bytes changed in place between the passes: what they
             * are now is the verdict. */
            if (again.rc || again.own_name != v->own_name ||
                again.m.fingerprint != v->m.fingerprint) {
                *v = again;
                if (*out && (!want_fp || v->m.fingerprint != *want_fp || !(v->own_name || any_name))) {
                    rlxkv_entry_free(*out);
                    *out = NULL;
                }
            }
        }
    }
    blob_close(&f);
}

/* A verdict as a blob status, against fingerprint fp (any with any_fp). */
static int status_of(const verdict *v, uint64_t fp, int any_fp) {
    if (v->rc == RLXKV_OK) {
        if (!v->own_name) return RLXKV_BLOB_FOREIGN;
        return any_fp || v->m.fingerprint == fp ? RLXKV_BLOB_OK : RLXKV_BLOB_STALE;
    }
    if (is_format_error(v->rc)) return RLXKV_BLOB_CORRUPT;
    if (v->rc == RLXKV_ERR_LIMIT || v->rc == RLXKV_ERR_NOMEM) return RLXKV_BLOB_TOO_LARGE;
    return RLXKV_BLOB_UNREADABLE;
}

int rlxkv_store_read(rlxkv_store *s, const char *name, const uint64_t *expect_fp,
                     rlxkv_entry **out) {
    struct stat st;
    verdict v;

    if (!out) return RLXKV_ERR_INVALID;
    *out = NULL;
    if (!s || !valid_name(name)) return RLXKV_ERR_INVALID;
    join(s, s->path, name);
    if (stat(s->path, &st) != 0) return errno == ENOENT ? RLXKV_ERR_NOTFOUND : io_status(s, errno);
    if (!S_ISREG(st.st_mode)) return RLXKV_ERR_NOTFOUND;
    blob_read(s, name, st.st_size > 0 ? (uint64_t)st.st_size : 0, expect_fp, 1, UINT64_MAX, out,
              &v);
    if (v.rc) return v.rc;
    return *out ? RLXKV_OK : RLXKV_STALE;
}

/* ---------------------------------------------------------------------- *
 * Load
 * ---------------------------------------------------------------------- */

/* Where each judged blob lands in the report (load_put adds the rest). */
static void load_count(rlxkv_load_report *r, const verdict *v, uint64_t fp) {
    switch (status_of(v, fp, 0)) {
    case RLXKV_BLOB_OK: r->skipped++; break;
    case RLXKV_BLOB_STALE: r->stale++; break;
    case RLXKV_BLOB_FOREIGN: r->foreign++; break;
    case RLXKV_BLOB_CORRUPT: r->corrupt++; break;
    case RLXKV_BLOB_TOO_LARGE: r->too_large++; break;
    default: r->unreadable++; break;
    }
}

/* Puts the held entries into the cache, oldest first, so the newest end up
 * most recently used. put keeps the entry it is given when it succeeds
 * (cap > 0 here), so its tokens stay valid after. */
static void load_put(rlxkv_cache *c, rlxkv_entry **held, size_t n_held, rlxkv_load_report *r) {
    while (n_held) {
        rlxkv_entry *e = held[--n_held];
        size_t kv = rlxkv_entry_kv_bytes(e);
        int prc;
        /* The cache's own entry is at least as new as the file (it may be
         * dirty): keep it. */
        if (rlxkv_cache_get(c, e->tokens, e->n_tokens)) {
            rlxkv_entry_free(e);
            r->skipped++;
            continue;
        }
        prc = rlxkv_cache_put_loaded(c, e); /* frees e on failure */
        if (prc == RLXKV_ERR_NOMEM) {
            r->too_large++;
        } else if (prc == RLXKV_ERR_SHAPE) {
            r->shape++;
        } else if (prc) { /* NOSPACE: pinned entries leave no room */
            r->skipped++;
        } else {
            r->loaded++;
            r->bytes += kv;
        }
    }
}

int rlxkv_store_load(rlxkv_store *s, rlxkv_cache *c, rlxkv_load_report *report) {
    rlxkv_load_report r;
    rlxkv_entry **held = NULL;
    size_t n = 0, n_held = 0;
    uint64_t fp, cap, held_bytes = 0;
    rlxkv_stats stats;
    cand *v = NULL;
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
    /* Newest first, decoding while the cap allows (always the first);
     * every other file is judged, not read, so the report still tells
     * skipped from stale and corrupt. */
    if (n > 1) qsort(v, n, sizeof *v, cmp_newest_first); /* v is NULL when n == 0 */
    for (size_t i = 0; i < n; i++) {
        rlxkv_entry *e = NULL;
        verdict vd;
        uint64_t room;
        /* The first blob is always held; the others while they fit. */
        if (n_held && held_bytes > cap) full = 1;
        room = !n_held ? UINT64_MAX : cap - held_bytes;

        blob_read(s, v[i].name, v[i].size, &fp, 0, room, full ? NULL : &e, &vd);
        if (vd.rc == RLXKV_ERR_NOTFOUND) continue; /* removed since the scan */
        if (e) {
            held[n_held++] = e;
            held_bytes += rlxkv_entry_kv_bytes(e);
            continue;
        }
        /* Valid and ours, yet not decoded: past the cap, which is now full. */
        if (status_of(&vd, fp, 0) == RLXKV_BLOB_OK) full = 1;
        load_count(&r, &vd, fp);
    }
    load_put(c, held, n_held, &r);
    free(held);
    free(v);
    if (report) *report = r;
    return RLXKV_OK;
}

/* ---------------------------------------------------------------------- *
 * Save / flush
 * ---------------------------------------------------------------------- */

/* Writes all of buf, going on after short writes. */
static int write_all(rlxkv_store *s, int fd, const uint8_t *buf, size_t len) {
    while (len) {
        size_t want = len < IO_CHUNK ? len : IO_CHUNK;
        long n = s->io.write(s->io.ctx, fd, buf, want);
        if (n < 0) {
            if (errno == EINTR) continue;
            return io_status(s, errno);
        }
        /* No progress (or a nonsense count) would spin forever. */
        if (n == 0 || (size_t)n > want) return io_odd(s);
        buf += n;
        len -= (size_t)n;
    }
    return RLXKV_OK;
}

typedef struct fd_sink {
    rlxkv_store *s;
    int fd;
} fd_sink;

static int to_file(void *ctx, const uint8_t *p, size_t n) {
    fd_sink *f = ctx;
    return write_all(f->s, f->fd, p, n);
}

/* Makes a rename durable. Best effort: some file systems cannot open or
 * sync a directory, and the blob is whole either way. */
static void sync_dir(rlxkv_store *s) {
    int fd = s->io.open(s->io.ctx, s->dir, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0) return;
    s->io.sync(s->io.ctx, fd);
    s->io.close(s->io.ctx, fd);
}

/* Creates a temporary file for the blob `name` (path in s->tmp). The name
 * is unique per process, handle and call, and O_EXCL makes sure: under
 * Emscripten every process is pid 42 and heaps are laid out alike, so two
 * Node processes sharing a NODEFS directory could pick one name; the loser
 * takes the next. Its PID tells prune whether the writer still lives;
 * ".tmp" keeps it out of every load. */
static int open_temp(rlxkv_store *s, const char *name, int *fd) {
    char tmp_name[NAME_CAP];
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
        *fd = s->io.open(s->io.ctx, s->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (*fd >= 0) return RLXKV_OK;
        if (errno != EEXIST || tries == TMP_TRIES - 1) return io_status(s, errno);
    }
}

int rlxkv_store_save(rlxkv_store *s, const rlxkv_entry *e, uint64_t fingerprint) {
    char name[32];
    fd_sink sink;
    int fd, rc;

    if (!s || !e) return RLXKV_ERR_INVALID;
    if (e->n_layers > RLXKV_MAX_LAYERS) return RLXKV_ERR_LIMIT;
    if (!rlxkv_encoded_size(e)) return RLXKV_ERR_INVALID;
    rlxkv_blob_name(fingerprint, e->tokens, e->n_tokens, name);
    join(s, s->path, name);
    if ((rc = open_temp(s, name, &fd))) return rc;
    sink.s = s;
    sink.fd = fd;
    rc = rlxkv_encode_to(e, fingerprint, 0, to_file, &sink);
    if (!rc && s->io.sync(s->io.ctx, fd) != 0) rc = io_status(s, errno);
    /* close can report a deferred write error (NFS, quotas): it counts. */
    if (s->io.close(s->io.ctx, fd) != 0 && !rc) rc = io_status(s, errno);
    if (!rc && s->io.rename(s->io.ctx, s->tmp, s->path) != 0) rc = io_status(s, errno);
    if (rc) s->io.unlink(s->io.ctx, s->tmp);
    else sync_dir(s);
    return rc;
}

/* Stamps the blob of every entry of c with an mtime in the cache's
 * recency order: the first entry rlxkv_cache_next gives (pinned, then the
 * most recently used) now, each next one a millisecond earlier (MEMFS
 * keeps milliseconds). Best effort: a blob that is gone stays gone. */
static void stamp_recency(rlxkv_store *s, const rlxkv_cache *c) {
    struct timespec now, ts[2];
    uint64_t fp = rlxkv_cache_fingerprint(c);
    char name[32];
    long back = 0;

    if (clock_gettime(CLOCK_REALTIME, &now) != 0) return;
    for (const rlxkv_entry *e = rlxkv_cache_next(c, NULL); e; e = rlxkv_cache_next(c, e), back++) {
        long long ms = (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000 - back;
        ts[0].tv_sec = 0;
        ts[0].tv_nsec = UTIME_OMIT; /* atime */
        ts[1].tv_sec = (time_t)(ms / 1000);
        ts[1].tv_nsec = (long)(ms % 1000) * 1000000;
        rlxkv_blob_name(fp, e->tokens, e->n_tokens, name);
        (void)utimensat(AT_FDCWD, join(s, s->path, name), ts, 0);
    }
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
    stamp_recency(s, c);
    return RLXKV_OK;
}

/* ---------------------------------------------------------------------- *
 * List / remove / prune
 * ---------------------------------------------------------------------- */
static int cmp_info_name(const void *key, const void *b) {
    return strcmp(key, ((const rlxkv_blob_info *)b)->name);
}

static int cmp_cand_name(const void *a, const void *b) {
    return strcmp(((const cand *)a)->name, ((const cand *)b)->name);
}

/* One info per scanned file (blobs judged, temporaries dated), in name
 * order; files gone since the scan are left out. */
static int list(rlxkv_store *s, uint64_t fingerprint, unsigned flags, rlxkv_blob_info **out,
                size_t *n_out, uint64_t (**parents_out)[2]) {
    rlxkv_blob_info *info;
    size_t n = 0, k = 0;
    cand *v = NULL;
    time_t now = time(NULL);
    int any = (flags & RLXKV_ANY_FINGERPRINT) != 0, rc;

    *out = NULL;
    *n_out = 0;
    rc = scan(s, 1, &v, &n);
    if (rc) return rc;
    if (n > 1) qsort(v, n, sizeof *v, cmp_cand_name);
    info = calloc(n ? n : 1, sizeof *info);
    uint64_t(*parents)[2] = parents_out ? calloc(n ? n : 1, sizeof *parents) : NULL;
    if (!info || (parents_out && !parents)) {
        free(info);
        free(v);
        return RLXKV_ERR_NOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        rlxkv_blob_info *b = &info[k];
        verdict vd;

        memcpy(b->name, v[i].name, sizeof b->name);
        b->file_bytes = v[i].size;
        b->mtime = v[i].mtime;
        b->mtime_ns = (int32_t)v[i].mtime_ns;
        b->dtype = -1;
        if (v[i].temp) {
            b->status = temp_abandoned(&v[i], now) ? RLXKV_BLOB_ABANDONED : RLXKV_BLOB_TEMP;
            k++;
            continue;
        }
        blob_read(s, v[i].name, v[i].size, NULL, 0, 0, NULL, &vd);
        if (vd.rc == RLXKV_ERR_NOTFOUND) continue; /* gone since the scan */
        /* Valid, but more than this host could hold: say so before anyone
         * tries (a 32-bit wasm cannot hold a blob of 2 GiB). */
        if (vd.rc == RLXKV_OK && vd.m.blob_bytes >= SIZE_MAX / 2) vd.rc = RLXKV_ERR_NOMEM;
        k++;
        b->status = status_of(&vd, fingerprint, any);
        b->error = b->status == RLXKV_BLOB_OK || b->status == RLXKV_BLOB_STALE ||
                   b->status == RLXKV_BLOB_FOREIGN ? 0 : vd.rc;
        int sized = vd.rc == RLXKV_OK || (vd.rc == RLXKV_ERR_NOMEM && vd.m.blob_bytes);
        if (sized || vd.rc == RLXKV_ERR_LIMIT) b->fingerprint = vd.m.fingerprint;
        if (sized) {
            b->n_tokens = vd.m.n_tokens;
            b->kv_bytes = kv_bytes_of(&vd.m);
            b->dtype = vd.m.dtype;
            b->page = vd.m.parent_n != 0;
        }
        if (parents && vd.rc == RLXKV_OK && vd.m.start) memcpy(parents[k - 1], vd.m.parent, sizeof parents[0]);
    }
    free(v);
    *out = info;
    *n_out = k;
    if (parents_out) *parents_out = parents;
    return RLXKV_OK;
}

int rlxkv_store_list(rlxkv_store *s, uint64_t fingerprint, unsigned flags,
                     rlxkv_blob_info **out, size_t *n_out) {
    if (out) *out = NULL;
    if (n_out) *n_out = 0;
    if (!s || !out || !n_out) return RLXKV_ERR_INVALID;
    return list(s, fingerprint, flags, out, n_out, NULL);
}

int rlxkv_store_remove(rlxkv_store *s, const char *name) {
    if (!s || !valid_name(name)) return RLXKV_ERR_INVALID;
    if (s->io.unlink(s->io.ctx, join(s, s->path, name)) == 0) return RLXKV_OK;
    return errno == ENOENT ? RLXKV_ERR_NOTFOUND : io_status(s, errno);
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

/* Least recently used first (oldest mtime), then by name. */
static int cmp_oldest_first(const void *a, const void *b) {
    const rlxkv_blob_info *x = *(const rlxkv_blob_info *const *)a;
    const rlxkv_blob_info *y = *(const rlxkv_blob_info *const *)b;
    if (x->mtime != y->mtime) return x->mtime < y->mtime ? -1 : 1;
    if (x->mtime_ns != y->mtime_ns) return x->mtime_ns < y->mtime_ns ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* The info (in name order) of the blob a page names as its parent (the
 * hash its name prints), or NULL. */
static rlxkv_blob_info *parent_info(rlxkv_blob_info *info, size_t n, const uint64_t parent[2]) {
    char name[RLXKV_NAME_CAP] = {0};
    name_from_key(parent, name);
    return bsearch(name, info, n, sizeof *info, cmp_info_name);
}

int rlxkv_store_prune(rlxkv_store *s, uint64_t fingerprint, uint64_t max_bytes,
                      unsigned flags, const rlxkv_cache *keep,
                      rlxkv_prune_report *report) {
    rlxkv_prune_report r;
    rlxkv_blob_info *info = NULL, **victims = NULL, **lru = NULL;
    char (*kept)[32] = NULL;
    size_t n = 0, n_kept = 0, n_victims = 0, n_lru = 0, *children = NULL;
    uint64_t counted = 0, blob_bytes = 0, blobs = 0, (*parents)[2] = NULL;
    int dry = (flags & RLXKV_PRUNE_DRY_RUN) != 0, rc;

    memset(&r, 0, sizeof r);
    if (report) *report = r;
    if (!s) return RLXKV_ERR_INVALID;
    rc = list(s, fingerprint, flags & RLXKV_ANY_FINGERPRINT, &info, &n, &parents);
    if (rc) return rc;
    rc = keep_names(keep, (flags & RLXKV_PRUNE_KEEP_PINNED) != 0, &kept, &n_kept);
    if (rc) goto done;
    rc = RLXKV_ERR_NOMEM;
    victims = malloc((n ? n : 1) * sizeof *victims);
    lru = malloc((n ? n : 1) * sizeof *lru);
    children = calloc(n ? n : 1, sizeof *children);
    if (!victims || !lru || !children) goto done;
    /* Pages (FORMATS.md): how many stored pages name each blob their parent. */
    for (size_t i = 0; i < n; i++) {
        rlxkv_blob_info *p = parents[i][1] ? parent_info(info, n, parents[i]) : NULL;
        if (p) children[p - info]++;
    }

    /* Corrupt, stale (unless kept) and abandoned files first; then the
     * fingerprint's least recently used until its blobs and the live
     * temporary files fit max_bytes. A blob of an entry in keep stays,
     * and so does everything the judge could not call garbage. */
    for (size_t i = 0; i < n; i++) {
        rlxkv_blob_info *b = &info[i];
        int guarded = n_kept && bsearch(b->name, kept, n_kept, sizeof *kept, cmp_name32);
        switch (b->status) {
        case RLXKV_BLOB_ABANDONED: victims[n_victims++] = b; break;
        case RLXKV_BLOB_TEMP: counted += b->file_bytes; break;
        case RLXKV_BLOB_OK:
            counted += b->file_bytes;
            if (!guarded) lru[n_lru++] = b;
            break;
        case RLXKV_BLOB_CORRUPT:
            if (!guarded) victims[n_victims++] = b;
            break;
        case RLXKV_BLOB_STALE:
            if (!guarded && !(flags & RLXKV_PRUNE_KEEP_STALE)) victims[n_victims++] = b;
            break;
        default: break; /* foreign, too large, unreadable: never ours to remove */
        }
        if (b->status != RLXKV_BLOB_TEMP && b->status != RLXKV_BLOB_ABANDONED) {
            blobs++;
            blob_bytes += b->file_bytes;
        }
    }
    if (n_lru > 1) qsort(lru, n_lru, sizeof *lru, cmp_oldest_first);
    /* Leaves first: a blob other pages need waits until they have gone.
     *   1. pass over the blobs, least recently used first, taking each
     *      that no page names its parent, until they fit;
     *   2. a page taken frees its parent of one child;
     *   3. pass again while a pass took any and they do not fit yet. */
    for (int took = 1; took && counted > max_bytes;) {
        took = 0;
        for (size_t j = 0; j < n_lru && counted > max_bytes; j++) {
            size_t at;
            if (!lru[j] || children[at = (size_t)(lru[j] - info)]) continue; /* taken, or needed */
            victims[n_victims++] = lru[j];
            counted -= lru[j]->file_bytes;
            rlxkv_blob_info *p = parents[at][1] ? parent_info(info, n, parents[at]) : NULL;
            if (p) children[p - info]--;
            lru[j] = NULL;
            took = 1;
        }
    }

    /* Stop at the first failure: what was removed is gone, the rest is
     * untouched, and the report says which is which. */
    rc = RLXKV_OK;
    for (size_t j = 0; j < n_victims; j++) {
        const rlxkv_blob_info *b = victims[j];
        int temp = b->status == RLXKV_BLOB_ABANDONED;
        if (!dry) {
            int urc = rlxkv_store_remove(s, b->name);
            if (urc && urc != RLXKV_ERR_NOTFOUND) {
                rc = urc;
                break;
            }
        }
        if (temp) {
            r.temps_removed++;
            r.temps_removed_bytes += b->file_bytes;
        } else {
            r.removed++;
            r.removed_bytes += b->file_bytes;
        }
    }
    for (size_t i = 0; i < n; i++)
        if (info[i].status == RLXKV_BLOB_TEMP) {
            r.temps_kept++;
            r.temps_kept_bytes += info[i].file_bytes;
        }
    r.kept = blobs - r.removed;
    r.kept_bytes = blob_bytes - r.removed_bytes;
done:
    if (report) *report = r;
    free(children);
    free(parents);
    free(lru);
    free(victims);
    free(kept);
    free(info);
    return rc;
}
