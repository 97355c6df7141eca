/* Store tests: round trips through a cache, stale and corrupt files, fault
 * injection through a custom rlxkv_io, prune, list and cap-limited loads.
 * Each test works in its own mkdtemp directory under /tmp. */
#define _DEFAULT_SOURCE /* mkdtemp, utimensat, mkfifo, sockaddr_un, ftruncate */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "check.h"
#include "entry.h"
#include "rlxkv.h"

#define FP_A 0x1111222233334444ull
#define FP_B 0x5555666677778888ull

/* ---------------------------------------------------------------------- *
 * helpers
 * ---------------------------------------------------------------------- */
static char *tmpdir_new(void) {
    char tmpl[] = "/tmp/rlxkv_store_XXXXXX";
    char *d = mkdtemp(tmpl);
    CHECK(d != NULL);
    return d ? strdup(d) : NULL;
}

static char *path_of(const char *dir, const char *name) {
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

/* Removes dir and everything in it, subdirectories recursively; frees dir. */
static void rm_rf(char *dir) {
    DIR *d;
    struct dirent *de;
    if (!dir) return;
    if ((d = opendir(dir))) {
        while ((de = readdir(d))) {
            if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
            char *p = path_of(dir, de->d_name);
            if (unlink(p) != 0) rm_rf(strdup(p));
            free(p);
        }
        closedir(d);
    }
    rmdir(dir);
    free(dir);
}

static uint8_t *slurp(const char *dir, const char *name, size_t *len) {
    char *p = path_of(dir, name);
    FILE *f = fopen(p, "rb");
    uint8_t *buf = NULL;
    size_t cap = 0, n = 0;
    free(p);
    *len = 0;
    if (!f) return NULL;
    for (;;) {
        if (n == cap) buf = realloc(buf, cap = cap ? 2 * cap : 4096);
        size_t got = fread(buf + n, 1, cap - n, f);
        if (!got) break;
        n += got;
    }
    fclose(f);
    *len = n;
    return buf;
}

static void spit(const char *dir, const char *name, const void *data, size_t len) {
    char *p = path_of(dir, name);
    FILE *f = fopen(p, "wb");
    CHECK(f != NULL);
    if (f) {
        CHECK_EQ(fwrite(data, 1, len, f), len);
        fclose(f);
    }
    free(p);
}

static int exists(const char *dir, const char *name) {
    char *p = path_of(dir, name);
    struct stat st;
    int r = stat(p, &st) == 0;
    free(p);
    return r;
}

static void set_mtime(const char *dir, const char *name, time_t t) {
    char *p = path_of(dir, name);
    struct timespec ts[2] = {{t, 0}, {t, 0}};
    CHECK_EQ(utimensat(AT_FDCWD, p, ts, 0), 0);
    free(p);
}

/* Files in dir that are not blobs: temporary files and the like. */
static size_t count_files(const char *dir, int blobs) {
    DIR *d = opendir(dir);
    struct dirent *de;
    size_t n = 0;
    if (!d) return 0;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        int blob = l > 6 && !strcmp(de->d_name + l - 6, ".rlxkv");
        if (de->d_name[0] == '.') continue;
        if (blob == blobs) n++;
    }
    closedir(d);
    return n;
}
#define count_blobs(d) count_files((d), 1)
#define count_others(d) count_files((d), 0)

/* An entry of n tokens (start, start+1, ...) with `layers` layers of
 * 4*n floats per block, filled from seed. */
static rlxkv_entry *make_entry(uint32_t start, size_t n, size_t layers, uint32_t seed) {
    size_t lens[16];
    for (size_t i = 0; i < 2 * layers; i++) lens[i] = 4 * n;
    rlxkv_entry *e = rlxkv_entry_new(n, layers, lens, RLXKV_F32, NULL);
    for (size_t i = 0; i < n; i++) rlxkv_entry_tokens_mut(e)[i] = start + (uint32_t)i;
    for (size_t i = 0; i < e->n_values; i++) ((float *)e->kv)[i] = (float)(seed * 1000 + i) * 0.5f;
    return e;
}

static void name_of(uint64_t fp, const rlxkv_entry *e, char name[32]) {
    rlxkv_blob_name(fp, rlxkv_entry_tokens(e), rlxkv_entry_n_tokens(e), name);
}

static int same_entry(const rlxkv_entry *a, const rlxkv_entry *b) {
    if (!a || !b) return 0;
    if (a->n_tokens != b->n_tokens || a->n_layers != b->n_layers || a->n_values != b->n_values)
        return 0;
    for (size_t i = 0; i < 2 * a->n_layers; i++)
        if (rlxkv_entry_block_len(a, i) != rlxkv_entry_block_len(b, i)) return 0;
    return !memcmp(a->tokens, b->tokens, 4 * a->n_tokens) &&
           !memcmp(a->kv, b->kv, 4 * a->n_values);
}

/* Saves a copy of e under fp through a POSIX store. */
static void save_plain(const char *dir, const rlxkv_entry *e, uint64_t fp) {
    rlxkv_store *s = rlxkv_store_open(dir, NULL, NULL);
    CHECK(s != NULL);
    if (!s) return;
    CHECK_EQ(rlxkv_store_save(s, e, fp), RLXKV_OK);
    rlxkv_store_close(s);
}

static rlxkv_load_report load_into(const char *dir, rlxkv_cache *c, int expect_rc) {
    rlxkv_load_report r;
    rlxkv_store *s = rlxkv_store_open(dir, NULL, NULL);
    memset(&r, 0xAB, sizeof r);
    CHECK(s != NULL);
    if (!s) return r;
    CHECK_EQ(rlxkv_store_load(s, c, &r), expect_rc);
    rlxkv_store_close(s);
    return r;
}

/* How many of the directory's blobs load into a fresh FP_A cache. */
static size_t loadable(const char *dir) {
    rlxkv_cache *c = rlxkv_cache_new(1 << 20, FP_A);
    rlxkv_load_report r = load_into(dir, c, RLXKV_OK);
    rlxkv_cache_free(c);
    return r.loaded;
}

/* ---------------------------------------------------------------------- *
 * A fault-injecting rlxkv_io over POSIX
 * ---------------------------------------------------------------------- */
enum { OP_OPEN, OP_READ, OP_WRITE, OP_SYNC, OP_CLOSE, OP_RENAME, OP_UNLINK, OP_KINDS };

typedef struct fault {
    int count[OP_KINDS];
    int total;
    int fail_kind;    /* the kind whose fail_nth-th call fails; -1: any call */
    int fail_nth;     /* 1-based; 0: nothing fails */
    int err;          /* errno of the failure */
    int fired;
    size_t max_write; /* short writes: at most this per call (0: all) */
    size_t max_read;
    int zero_write;   /* every write returns 0 */
    int eexist;       /* this many O_EXCL opens fail with EEXIST */
    int excl_opens;   /* opens that asked for O_EXCL */
    size_t bytes_read;
    size_t largest_read;
    int seeks;
    size_t writes, largest_write;
    /* A file another writer appends to while it is read: the first read of
     * an fd opened on grow_path first appends grow_len bytes to it. */
    const char *grow_path;
    size_t grow_len;
    int grow_fd;
    /* A file changed between the store's stat and its open: a read-only
     * open of swap_path first rewrites it with swap_len bytes of swap. */
    const char *swap_path;
    const uint8_t *swap;
    size_t swap_len;
} fault;

static int fault_hit(fault *f, int kind) {
    int nth;
    f->count[kind]++;
    f->total++;
    nth = f->fail_kind < 0 ? f->total : f->count[kind];
    if (f->fail_nth && (f->fail_kind < 0 || f->fail_kind == kind) && nth == f->fail_nth) {
        f->fired++;
        errno = f->err;
        return 1;
    }
    return 0;
}

static int f_open(void *ctx, const char *path, int flags, int mode) {
    fault *f = ctx;
    if (fault_hit(f, OP_OPEN)) return -1;
    if (f->swap_path && (flags & O_ACCMODE) == O_RDONLY && !strcmp(path, f->swap_path)) {
        FILE *w = fopen(path, "wb");
        if (w) {
            fwrite(f->swap, 1, f->swap_len, w);
            fclose(w);
        }
        f->swap_path = NULL;
    }
    if (f->grow_path && !strcmp(path, f->grow_path)) {
        int fd = open(path, flags, (mode_t)mode);
        f->grow_fd = fd;
        return fd;
    }
    if (flags & O_EXCL) {
        f->excl_opens++;
        if (f->eexist) {
            f->eexist--;
            errno = EEXIST;
            return -1;
        }
    }
    return open(path, flags, (mode_t)mode);
}
static long f_read(void *ctx, int fd, void *buf, size_t n) {
    fault *f = ctx;
    if (fault_hit(f, OP_READ)) return -1;
    if (f->max_read && n > f->max_read) n = f->max_read;
    if (f->grow_path && fd == f->grow_fd) {
        FILE *w = fopen(f->grow_path, "ab");
        for (size_t i = 0; w && i < f->grow_len; i++) fputc(0, w);
        if (w) fclose(w);
        f->grow_path = NULL;
    }
    long got = (long)read(fd, buf, n);
    if (got > 0) {
        f->bytes_read += (size_t)got;
        if ((size_t)got > f->largest_read) f->largest_read = (size_t)got;
    }
    return got;
}
static long f_write(void *ctx, int fd, const void *buf, size_t n) {
    fault *f = ctx;
    if (fault_hit(f, OP_WRITE)) return -1;
    if (f->zero_write) return 0;
    if (f->max_write && n > f->max_write) n = f->max_write;
    f->writes++;
    if (n > f->largest_write) f->largest_write = n;
    return (long)write(fd, buf, n);
}
static int f_sync(void *ctx, int fd) {
    if (fault_hit(ctx, OP_SYNC)) return -1;
    return fsync(fd);
}
static int f_close(void *ctx, int fd) {
    /* The descriptor is released either way, as close(2) does. */
    if (fault_hit(ctx, OP_CLOSE)) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return close(fd);
}
static int f_rename(void *ctx, const char *from, const char *to) {
    if (fault_hit(ctx, OP_RENAME)) return -1;
    return rename(from, to);
}
static int f_unlink(void *ctx, const char *path) {
    if (fault_hit(ctx, OP_UNLINK)) return -1;
    return unlink(path);
}

static int64_t f_seek(void *ctx, int fd, int64_t off, int whence) {
    fault *f = ctx;
    f->seeks++;
    return (int64_t)lseek(fd, (off_t)off, whence);
}

static rlxkv_io fault_io(fault *f) {
    rlxkv_io io = {f, f_open, f_read, f_write, f_sync, f_close, f_rename, f_unlink, f_seek};
    return io;
}

static fault fault_none(void) {
    fault f;
    memset(&f, 0, sizeof f);
    f.fail_kind = -1;
    return f;
}

/* ---------------------------------------------------------------------- *
 * tests
 * ---------------------------------------------------------------------- */
static void test_blob_name(void) {
    uint32_t t[3] = {7, 0x01020304u, UINT32_MAX};
    uint8_t le[12];
    char name[32], want[32];
    for (size_t i = 0; i < 3; i++)
        for (size_t b = 0; b < 4; b++) le[4 * i + b] = (uint8_t)(t[i] >> (8 * b));
    for (size_t n = 0; n <= 3; n++) {
        rlxkv_blob_name(0xABCD, t, n, name);
        snprintf(want, sizeof want, "%016" PRIx64 ".rlxkv", rlxkv_hash64(le, 4 * n, 0xABCD));
        CHECK(!strcmp(name, want));
        CHECK_EQ(strlen(name), 22);
    }
    for (const char *p = name; *p != '.'; p++)
        CHECK((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'));
    rlxkv_blob_name(0xABCE, t, 3, want);
    CHECK(strcmp(name, want) != 0); /* the fingerprint seeds the name */
    /* Seed and first token must not cancel out: (1, [1]) vs (2, [2]). */
    {
        uint32_t one = 1, two = 2;
        rlxkv_blob_name(1, &one, 1, name);
        rlxkv_blob_name(2, &two, 1, want);
        CHECK(strcmp(name, want) != 0);
    }
    rlxkv_blob_name(0, NULL, 0, name);
    CHECK_EQ(strlen(name), 22);
}

static void test_open(void) {
    char *dir = tmpdir_new();
    int st = 12345;
    rlxkv_store *s;
    char *sub = path_of(dir, "sub"), *deep = path_of(dir, "no/such"), *file = path_of(dir, "f");
    s = rlxkv_store_open(sub, NULL, &st); /* created */
    CHECK(s != NULL);
    CHECK_EQ(st, RLXKV_OK);
    CHECK(exists(dir, "sub"));
    rlxkv_store_close(s);
    s = rlxkv_store_open(sub, rlxkv_io_posix(), &st); /* exists already */
    CHECK(s != NULL && st == RLXKV_OK);
    rlxkv_store_close(s);
    spit(dir, "f", "x", 1);
    CHECK(rlxkv_store_open(file, NULL, &st) == NULL);
    CHECK_EQ(st, RLXKV_ERR_IO);
    CHECK(rlxkv_store_open(deep, NULL, &st) == NULL);
    CHECK_EQ(st, RLXKV_ERR_IO);
    CHECK(rlxkv_store_open(NULL, NULL, &st) == NULL);
    CHECK_EQ(st, RLXKV_ERR_INVALID);
    CHECK(rlxkv_store_open("", NULL, &st) == NULL);
    CHECK_EQ(st, RLXKV_ERR_INVALID);
    rlxkv_io bad = *rlxkv_io_posix();
    bad.sync = NULL;
    CHECK(rlxkv_store_open(dir, &bad, &st) == NULL);
    CHECK_EQ(st, RLXKV_ERR_INVALID);
    /* a trailing slash names the same directory */
    size_t l = strlen(sub);
    char *slash = malloc(l + 3);
    snprintf(slash, l + 3, "%s//", sub);
    s = rlxkv_store_open(slash, NULL, &st);
    CHECK(s != NULL);
    rlxkv_entry *e = make_entry(1, 2, 1, 1);
    char name[32];
    CHECK_EQ(rlxkv_store_save(s, e, FP_A), RLXKV_OK);
    name_of(FP_A, e, name);
    char *subname = path_of("sub", name);
    CHECK(exists(dir, subname));
    free(subname);
    rlxkv_store_close(s);
    rlxkv_entry_free(e);
    free(slash);
    free(sub);
    free(deep);
    free(file);
    rm_rf(dir);
}

static void test_save_read(void) {
    char *dir = tmpdir_new();
    rlxkv_store *s = rlxkv_store_open(dir, NULL, NULL);
    rlxkv_entry *e = make_entry(100, 5, 2, 1), *e2 = make_entry(100, 5, 2, 2), *back = NULL;
    char name[32];
    size_t len, size = rlxkv_encoded_size(e);
    uint8_t *want = malloc(size), *got;
    uint64_t other = FP_B;

    name_of(FP_A, e, name);
    CHECK_EQ(rlxkv_store_save(s, e, FP_A), RLXKV_OK);
    CHECK_EQ(rlxkv_encode(e, FP_A, want, size, NULL), RLXKV_OK);
    got = slurp(dir, name, &len);
    CHECK(got && len == size && !memcmp(got, want, size));
    free(got);
    CHECK_EQ(count_blobs(dir), 1);
    CHECK_EQ(count_others(dir), 0);

    CHECK_EQ(rlxkv_store_read(s, name, NULL, &back), RLXKV_OK);
    CHECK(same_entry(back, e));
    rlxkv_entry_free(back);
    CHECK_EQ(rlxkv_store_read(s, name, &other, &back), RLXKV_STALE);
    CHECK(back == NULL);
    CHECK_EQ(rlxkv_store_read(s, "0000000000000000.rlxkv", NULL, &back), RLXKV_ERR_NOTFOUND);
    CHECK_EQ(rlxkv_store_read(s, "../x.rlxkv", NULL, &back), RLXKV_ERR_INVALID);
    CHECK_EQ(rlxkv_store_read(s, "", NULL, &back), RLXKV_ERR_INVALID);
    CHECK_EQ(rlxkv_store_read(s, "..", NULL, &back), RLXKV_ERR_INVALID);
    CHECK_EQ(rlxkv_store_read(s, name, NULL, NULL), RLXKV_ERR_INVALID);

    /* Same tokens again: the file is replaced, nothing else left behind. */
    CHECK_EQ(rlxkv_store_save(s, e2, FP_A), RLXKV_OK);
    CHECK_EQ(rlxkv_store_read(s, name, NULL, &back), RLXKV_OK);
    CHECK(same_entry(back, e2));
    rlxkv_entry_free(back);
    CHECK_EQ(count_blobs(dir), 1);
    CHECK_EQ(count_others(dir), 0);
    CHECK_EQ(rlxkv_store_save(s, NULL, FP_A), RLXKV_ERR_INVALID);

    /* An empty entry is a valid blob too. */
    rlxkv_entry *empty = rlxkv_entry_new(0, 0, NULL, RLXKV_F32, NULL);
    CHECK_EQ(rlxkv_store_save(s, empty, FP_A), RLXKV_OK);
    name_of(FP_A, empty, name);
    CHECK_EQ(rlxkv_store_read(s, name, NULL, &back), RLXKV_OK);
    CHECK(back && back->n_tokens == 0);
    rlxkv_entry_free(back);
    rlxkv_entry_free(empty);

    free(want);
    rlxkv_entry_free(e);
    rlxkv_entry_free(e2);
    rlxkv_store_close(s);
    rm_rf(dir);
}

static void test_round_trip_cache(void) {
    char *dir = tmpdir_new();
    rlxkv_store *s = rlxkv_store_open(dir, NULL, NULL);
    rlxkv_cache *c = rlxkv_cache_new(1 << 20, FP_A), *d = rlxkv_cache_new(1 << 20, FP_A);
    rlxkv_entry *orig[3];
    size_t bytes = 0;
    fault f = fault_none();
    rlxkv_io io = fault_io(&f);
    rlxkv_store *counted = rlxkv_store_open(dir, &io, NULL);

    for (int i = 0; i < 3; i++) {
        orig[i] = make_entry(10 * (uint32_t)i, 3 + (size_t)i, 2, (uint32_t)i);
        bytes += rlxkv_entry_kv_bytes(orig[i]);
        rlxkv_entry *copy = make_entry(10 * (uint32_t)i, 3 + (size_t)i, 2, (uint32_t)i);
        CHECK_EQ(rlxkv_cache_put(c, copy), RLXKV_OK);
    }
    for (const rlxkv_entry *e = rlxkv_cache_next(c, NULL); e; e = rlxkv_cache_next(c, e))
        CHECK(rlxkv_cache_is_dirty(c, e));
    CHECK_EQ(rlxkv_store_flush(s, c), RLXKV_OK);
    CHECK_EQ(count_blobs(dir), 3);
    for (const rlxkv_entry *e = rlxkv_cache_next(c, NULL); e; e = rlxkv_cache_next(c, e))
        CHECK(!rlxkv_cache_is_dirty(c, e));
    /* Nothing dirty: a second flush writes nothing. */
    CHECK_EQ(rlxkv_store_flush(counted, c), RLXKV_OK);
    CHECK_EQ(f.count[OP_WRITE] + f.count[OP_OPEN], 0);

    rlxkv_load_report r = load_into(dir, d, RLXKV_OK);
    CHECK_EQ(r.loaded, 3);
    CHECK_EQ(r.stale + r.corrupt + r.skipped, 0);
    CHECK_EQ(r.bytes, bytes);
    for (int i = 0; i < 3; i++) {
        const rlxkv_entry *got = rlxkv_cache_get(d, orig[i]->tokens, orig[i]->n_tokens);
        CHECK(same_entry(got, orig[i]));
        CHECK(got && !rlxkv_cache_is_dirty(d, got)); /* loaded means stored */
    }
    rlxkv_hit hit;
    uint32_t q[8] = {20, 21, 22, 23, 24, 99, 99, 99};
    CHECK_EQ(rlxkv_cache_lookup(d, q, 8, &hit), RLXKV_HIT);
    CHECK_EQ(hit.matched, 5);
    /* Loaded entries are clean: flushing writes nothing; a new one is. */
    CHECK_EQ(rlxkv_store_flush(counted, d), RLXKV_OK);
    CHECK_EQ(f.count[OP_RENAME], 0);
    CHECK_EQ(rlxkv_cache_put(d, make_entry(500, 2, 2, 9)), RLXKV_OK);
    CHECK_EQ(rlxkv_store_flush(counted, d), RLXKV_OK);
    CHECK_EQ(f.count[OP_RENAME], 1);
    CHECK_EQ(count_blobs(dir), 4);
    /* Short reads are read through. */
    f.max_read = 3;
    rlxkv_cache *e3 = rlxkv_cache_new(1 << 20, FP_A);
    CHECK_EQ(rlxkv_store_load(counted, e3, &r), RLXKV_OK);
    CHECK_EQ(r.loaded, 4);
    CHECK(same_entry(rlxkv_cache_get(e3, orig[2]->tokens, orig[2]->n_tokens), orig[2]));
    CHECK(f.count[OP_READ] > 100);
    rlxkv_cache_free(e3);
    /* A report is optional. */
    rlxkv_cache *e4 = rlxkv_cache_new(1 << 20, FP_A);
    CHECK_EQ(rlxkv_store_load(s, e4, NULL), RLXKV_OK);
    rlxkv_stats st;
    rlxkv_cache_stats(e4, &st);
    CHECK_EQ(st.entries, 4);
    rlxkv_cache_free(e4);

    for (int i = 0; i < 3; i++) rlxkv_entry_free(orig[i]);
    rlxkv_cache_free(c);
    rlxkv_cache_free(d);
    rlxkv_store_close(s);
    rlxkv_store_close(counted);
    rm_rf(dir);
}

/* Snapshot of every file in dir: name and bytes. */
typedef struct snap {
    size_t n;
    char names[32][256];
    uint8_t *data[32];
    size_t len[32];
} snap;

static void snap_take(const char *dir, snap *sn) {
    DIR *d = opendir(dir);
    struct dirent *de;
    memset(sn, 0, sizeof *sn);
    while (d && (de = readdir(d)) && sn->n < 32) {
        if (de->d_name[0] == '.') continue;
        snprintf(sn->names[sn->n], sizeof sn->names[0], "%s", de->d_name);
        sn->data[sn->n] = slurp(dir, de->d_name, &sn->len[sn->n]);
        sn->n++;
    }
    if (d) closedir(d);
}

/* 1 when dir holds exactly the snapshot's files with the same bytes. */
static int snap_same(const char *dir, const snap *sn) {
    int ok = count_blobs(dir) + count_others(dir) == sn->n;
    for (size_t i = 0; i < sn->n; i++) {
        size_t len;
        uint8_t *b = slurp(dir, sn->names[i], &len);
        if (!b || len != sn->len[i] || memcmp(b, sn->data[i], len)) ok = 0;
        free(b);
    }
    return ok;
}

static void snap_free(snap *sn) {
    for (size_t i = 0; i < sn->n; i++) free(sn->data[i]);
}

static void test_two_fingerprints(void) {
    char *dir = tmpdir_new();
    rlxkv_cache *a = rlxkv_cache_new(1 << 20, FP_A), *b = rlxkv_cache_new(1 << 20, FP_B);
    rlxkv_store *s = rlxkv_store_open(dir, NULL, NULL);
    snap sn;

    for (uint32_t i = 0; i < 3; i++) CHECK_EQ(rlxkv_cache_put(a, make_entry(i * 10, 4, 1, i)), RLXKV_OK);
    /* b holds one entry with the same tokens as one of a's: another file */
    for (uint32_t i = 0; i < 2; i++) CHECK_EQ(rlxkv_cache_put(b, make_entry(i * 10, 4, 1, 7 + i)), RLXKV_OK);
    CHECK_EQ(rlxkv_store_flush(s, a), RLXKV_OK);
    CHECK_EQ(rlxkv_store_flush(s, b), RLXKV_OK);
    CHECK_EQ(count_blobs(dir), 5);
    snap_take(dir, &sn);

    rlxkv_cache *a2 = rlxkv_cache_new(1 << 20, FP_A);
    rlxkv_load_report r = load_into(dir, a2, RLXKV_OK);
    CHECK_EQ(r.loaded, 3);
    CHECK_EQ(r.stale, 2);
    CHECK_EQ(r.corrupt, 0);
    CHECK_EQ(r.skipped, 0);
    CHECK(snap_same(dir, &sn)); /* stale files untouched */
    uint32_t t[4] = {10, 11, 12, 13};
    CHECK(same_entry(rlxkv_cache_get(a2, t, 4), rlxkv_cache_get(a, t, 4)));

    rlxkv_cache *b2 = rlxkv_cache_new(1 << 20, FP_B);
    r = load_into(dir, b2, RLXKV_OK);
    CHECK_EQ(r.loaded, 2);
    CHECK_EQ(r.stale, 3);
    CHECK(same_entry(rlxkv_cache_get(b2, t, 4), rlxkv_cache_get(b, t, 4)));
    CHECK(snap_same(dir, &sn));

    snap_free(&sn);
    rlxkv_cache_free(a);
    rlxkv_cache_free(b);
    rlxkv_cache_free(a2);
    rlxkv_cache_free(b2);
    rlxkv_store_close(s);
    rm_rf(dir);
}

/* A directory with 2 good blobs of FP_A, one of FP_B and every kind of bad
 * file, among them a whole blob (tokens 90..92) renamed to the name of
 * tokens 200..202. */
static void make_messy_dir(const char *dir) {
    rlxkv_entry *g1 = make_entry(1, 3, 2, 1), *g2 = make_entry(50, 6, 2, 2);
    rlxkv_entry *st = make_entry(70, 2, 1, 3), *x = make_entry(90, 3, 2, 4), *y = make_entry(200, 3, 2, 5);
    char name[32], yname[32];
    uint8_t junk[300];
    size_t size;
    uint8_t *blob;

    save_plain(dir, g1, FP_A);
    save_plain(dir, g2, FP_A);
    save_plain(dir, st, FP_B);
    /* random bytes */
    for (size_t i = 0; i < sizeof junk; i++) junk[i] = (uint8_t)(i * 131 + 7);
    spit(dir, "00000000000000aa.rlxkv", junk, sizeof junk);
    /* a truncated blob under its own name */
    size = rlxkv_encoded_size(x);
    blob = malloc(size);
    rlxkv_encode(x, FP_A, blob, size, NULL);
    name_of(FP_A, x, name);
    spit(dir, name, blob, size - 5);
    /* a whole blob of x under the name of y's tokens */
    name_of(FP_A, y, yname);
    spit(dir, yname, blob, size);
    /* an empty file, and things that are not blobs */
    spit(dir, "00000000000000bb.rlxkv", "", 0);
    spit(dir, "notes.txt", "hello", 5);
    spit(dir, "00000000000000cc.rlxkv.1-2-3.tmp", blob, size);
    spit(dir, "a_name_far_too_long_to_be_a_blob_name_or_a_page_name.rlxkv", blob, size);
    char *sub = path_of(dir, "00000000000000dd.rlxkv");
    mkdir(sub, 0755);
    free(sub);
    free(blob);
    rlxkv_entry_free(g1);
    rlxkv_entry_free(g2);
    rlxkv_entry_free(st);
    rlxkv_entry_free(x);
    rlxkv_entry_free(y);
}

static void test_corrupt_files(void) {
    char *dir = tmpdir_new();
    rlxkv_cache *c = rlxkv_cache_new(1 << 20, FP_A);
    rlxkv_store *s;
    rlxkv_entry *x = make_entry(90, 3, 2, 4), *y = make_entry(200, 3, 2, 5), *back = NULL;
    char yname[32];
    make_messy_dir(dir);
    rlxkv_load_report r = load_into(dir, c, RLXKV_OK);
    CHECK_EQ(r.loaded, 2);
    CHECK_EQ(r.stale, 1);
    CHECK_EQ(r.corrupt, 3); /* random, truncated, empty */
    CHECK_EQ(r.foreign, 1); /* the renamed one: valid, left alone */
    CHECK_EQ(r.skipped, 0);
    CHECK_EQ(r.too_large + r.unreadable + r.shape, 0);
    /* the renamed blob answers for neither its name's tokens nor its own */
    CHECK(rlxkv_cache_get(c, y->tokens, 3) == NULL);
    CHECK(rlxkv_cache_get(c, x->tokens, 3) == NULL);
    uint32_t g1[3] = {1, 2, 3};
    CHECK(rlxkv_cache_get(c, g1, 3) != NULL);
    s = rlxkv_store_open(dir, NULL, NULL);
    name_of(FP_A, y, yname);
    /* read by name, it is the blob it is: x's */
    CHECK_EQ(rlxkv_store_read(s, yname, NULL, &back), RLXKV_OK);
    CHECK(same_entry(back, x));
    rlxkv_entry_free(back);
    back = NULL;
    CHECK_EQ(rlxkv_store_read(s, "00000000000000aa.rlxkv", NULL, &back), RLXKV_ERR_BAD_MAGIC);
    CHECK_EQ(rlxkv_store_read(s, "00000000000000bb.rlxkv", NULL, &back), RLXKV_ERR_TRUNCATED);
    /* nothing was removed or changed by the load */
    CHECK(exists(dir, "00000000000000aa.rlxkv") && exists(dir, yname));
    rlxkv_store_close(s);
    rlxkv_entry_free(x);
    rlxkv_entry_free(y);
    rlxkv_cache_free(c);
    rm_rf(dir);
}

/* A blob under its page name (what a cache's store names it) is its own,
 * as under its 64-bit blob name; the page name is 32 hex digits of a key
 * that every token, the fingerprint and the dtype change. */
static void test_page_names(void) {
    char *dir = tmpdir_new();
    rlxkv_entry *x = make_entry(90, 3, 2, 4);
    const uint32_t *t = rlxkv_entry_tokens(x);
    char page[RLXKV_PAGE_NAME_CAP], other[RLXKV_PAGE_NAME_CAP];
    uint64_t key[2];
    rlxkv_page_name(FP_A, RLXKV_F32, t, 3, page);
    CHECK_EQ(strlen(page), 32 + 6);
    rlxkv_page_key(FP_A, RLXKV_F32, t, 3, key);
    CHECK(key[0] != 0);
    rlxkv_page_name(FP_A, RLXKV_F16, t, 3, other);
    CHECK(strcmp(page, other) != 0);
    rlxkv_page_name(FP_B, RLXKV_F32, t, 3, other);
    CHECK(strcmp(page, other) != 0);
    rlxkv_page_name(FP_A, RLXKV_F32, t, 2, other);
    CHECK(strcmp(page, other) != 0);
    size_t size = rlxkv_encoded_size(x);
    uint8_t *blob = malloc(size);
    rlxkv_encode(x, FP_A, blob, size, NULL);
    spit(dir, page, blob, size);
    rlxkv_store *s = rlxkv_store_open(dir, NULL, NULL);
    rlxkv_blob_info *info = NULL;
    size_t n = 0;
    CHECK_EQ(rlxkv_store_list(s, FP_A, 0, &info, &n), RLXKV_OK);
    CHECK_EQ(n, 1);
    if (n == 1) CHECK_EQ(info[0].status, RLXKV_BLOB_OK);
    free(info);
    rlxkv_store_close(s);
    free(blob);
    rlxkv_entry_free(x);
    rm_rf(dir);
}

static void test_list(void) {
    char *dir = tmpdir_new();
    rlxkv_store *s = rlxkv_store_open(dir, NULL, NULL);
    rlxkv_blob_info *info = NULL;
    rlxkv_entry *x = make_entry(90, 3, 2, 4), *y = make_entry(200, 3, 2, 5);
    rlxkv_entry *g1 = make_entry(1, 3, 2, 1), *st = make_entry(70, 2, 1, 3);
    char xname[32], yname[32], g1name[32], stname[32];
    size_t n = 99;

    CHECK_EQ(rlxkv_store_list(s, FP_A, 0, &info, &n), RLXKV_OK); /* empty */
    CHECK_EQ(n, 0);
    CHECK(info != NULL);
    free(info);
    CHECK_EQ(rlxkv_store_list(s, FP_A, 0, NULL, &n), RLXKV_ERR_INVALID);

    make_messy_dir(dir);
    set_mtime(dir, "00000000000000aa.rlxkv", 1000000);
    name_of(FP_A, x, xname);
    name_of(FP_A, y, yname);
    name_of(FP_A, g1, g1name);
    name_of(FP_B, st, stname);
    CHECK_EQ(rlxkv_store_list(s, FP_A, 0, &info, &n), RLXKV_OK);
    CHECK_EQ(n, 8);
    for (size_t i = 0; i + 1 < n; i++) CHECK(strcmp(info[i].name, info[i + 1].name) < 0);
    size_t ok = 0, stale = 0, corrupt = 0, foreign = 0, temp = 0;
    for (size_t i = 0; i < n; i++) {
        const rlxkv_blob_info *b = &info[i];
        size_t len;
        uint8_t *bytes = slurp(dir, b->name, &len);
        CHECK_EQ(b->file_bytes, len);
        free(bytes);
        if (b->status == RLXKV_BLOB_OK) {
            ok++;
            CHECK_EQ(b->fingerprint, FP_A);
            CHECK_EQ(b->error, 0);
        } else if (b->status == RLXKV_BLOB_STALE) {
            stale++;
            CHECK(!strcmp(b->name, stname));
            CHECK_EQ(b->fingerprint, FP_B);
            CHECK_EQ(b->n_tokens, 2);
        } else if (b->status == RLXKV_BLOB_FOREIGN) {
            foreign++;
            CHECK(!strcmp(b->name, yname));
            CHECK(b->fingerprint == FP_A && b->n_tokens == 3 && b->error == 0);
        } else if (b->status == RLXKV_BLOB_TEMP) {
            /* a save's temporary file, of PID 1: alive, and only a minute old */
            temp++;
            CHECK(!strcmp(b->name, "00000000000000cc.rlxkv.1-2-3.tmp"));
        } else {
            corrupt++;
            CHECK_EQ(b->status, RLXKV_BLOB_CORRUPT);
            CHECK(b->fingerprint == 0 && b->n_tokens == 0);
        }
        if (!strcmp(b->name, g1name)) CHECK(b->status == RLXKV_BLOB_OK && b->n_tokens == 3);
        if (!strcmp(b->name, "00000000000000aa.rlxkv")) {
            CHECK_EQ(b->error, RLXKV_ERR_BAD_MAGIC);
            /* as stat reports it (Emscripten 3.1.6's NODERAWFS sets
             * utimensat's seconds as milliseconds) */
            char *p = path_of(dir, b->name);
            struct stat st;
            CHECK_EQ(stat(p, &st), 0);
            CHECK_EQ(b->mtime, (int64_t)st.st_mtime);
            CHECK(b->mtime >= 1000000 && b->mtime <= 1000000000);
            free(p);
        }
        if (!strcmp(b->name, "00000000000000bb.rlxkv")) CHECK_EQ(b->error, RLXKV_ERR_TRUNCATED);
        if (!strcmp(b->name, xname)) CHECK_EQ(b->error, RLXKV_ERR_TRUNCATED);
    }
    CHECK_EQ(ok, 2);
    CHECK_EQ(stale, 1);
    CHECK_EQ(corrupt, 3);
    CHECK_EQ(foreign, 1);
    CHECK_EQ(temp, 1);
    free(info);
    /* judged against FP_B, the stale one is OK and the others are stale */
    CHECK_EQ(rlxkv_store_list(s, FP_B, 0, &info, &n), RLXKV_OK);
    ok = stale = 0;
    for (size_t i = 0; i < n; i++) {
        ok += info[i].status == RLXKV_BLOB_OK;
        stale += info[i].status == RLXKV_BLOB_STALE;
    }
    CHECK(ok == 1 && stale == 2);
    free(info);
    /* any fingerprint: every valid blob under its own name is ok */
    CHECK_EQ(rlxkv_store_list(s, FP_B, RLXKV_ANY_FINGERPRINT, &info, &n), RLXKV_OK);
    ok = stale = 0;
    for (size_t i = 0; i < n; i++) {
        ok += info[i].status == RLXKV_BLOB_OK;
        stale += info[i].status == RLXKV_BLOB_STALE;
    }
    CHECK(ok == 3 && stale == 0);
    free(info);

    /* remove */
    CHECK_EQ(rlxkv_store_remove(s, "00000000000000aa.rlxkv"), RLXKV_OK);
    CHECK(!exists(dir, "00000000000000aa.rlxkv"));
    CHECK_EQ(rlxkv_store_remove(s, "00000000000000aa.rlxkv"), RLXKV_ERR_NOTFOUND);
    CHECK_EQ(rlxkv_store_remove(s, "../notes.txt"), RLXKV_ERR_INVALID);
    CHECK_EQ(rlxkv_store_remove(s, NULL), RLXKV_ERR_INVALID);

    rlxkv_entry_free(x);
    rlxkv_entry_free(y);
    rlxkv_entry_free(g1);
    rlxkv_entry_free(st);
    rlxkv_store_close(s);
    rm_rf(dir);
}

/* One fault during a save over an existing blob: either the save fails with
 * the mapped error and the old blob is intact, or it succeeded and the new
 * one is there; never a temporary file left, and a load always works. */
static int check_fault_save(int kind, int nth, int err, fault *extra, int *failed) {
    char *dir = tmpdir_new();
    rlxkv_entry *old = make_entry(5, 7, 3, 1), *neu = make_entry(5, 7, 3, 2);
    char name[32];
    size_t old_len, new_len, len, size = rlxkv_encoded_size(old);
    uint8_t *old_bytes, *new_bytes = malloc(size), *now;
    fault f = extra ? *extra : fault_none();
    rlxkv_io io;
    rlxkv_store *s;
    int rc, good = 1;

    f.fail_kind = kind;
    f.fail_nth = nth;
    f.err = err;
    io = fault_io(&f);
    save_plain(dir, old, FP_A);
    name_of(FP_A, old, name);
    old_bytes = slurp(dir, name, &old_len);
    rlxkv_encode(neu, FP_A, new_bytes, size, &new_len);

    s = rlxkv_store_open(dir, &io, NULL);
    rc = rlxkv_store_save(s, neu, FP_A);
    rlxkv_store_close(s);
    now = slurp(dir, name, &len);
    *failed = rc != RLXKV_OK;
    if (rc != RLXKV_OK) {
        int want = (err == ENOSPC || err == EDQUOT) ? RLXKV_ERR_QUOTA : RLXKV_ERR_IO;
        if (rc != want) good = 0;
        if (!now || len != old_len || memcmp(now, old_bytes, len)) good = 0;
    } else if (!now || len != new_len || memcmp(now, new_bytes, len)) {
        good = 0;
    }
    if (count_others(dir) != 0 || count_blobs(dir) != 1) good = 0;
    rlxkv_cache *c = rlxkv_cache_new(1 << 20, FP_A);
    rlxkv_load_report r = load_into(dir, c, RLXKV_OK);
    if (r.loaded != 1 || r.corrupt != 0) good = 0;
    if (!same_entry(rlxkv_cache_get(c, old->tokens, 7), rc ? old : neu)) good = 0;
    rlxkv_cache_free(c);
    if (!good)
        fprintf(stderr, "  fault kind=%d nth=%d errno=%d: rc=%d fired=%d\n", kind, nth, err, rc,
                f.fired);
    free(now);
    free(old_bytes);
    free(new_bytes);
    rlxkv_entry_free(old);
    rlxkv_entry_free(neu);
    rm_rf(dir);
    return good;
}

static void test_fault_injection(void) {
    static const int errs[] = {EIO, ENOSPC, EDQUOT, EACCES};
    int failed;
    /* Each step of the save, in turn: all must fail cleanly. */
    static const int steps[] = {OP_OPEN, OP_WRITE, OP_SYNC, OP_CLOSE, OP_RENAME};
    for (size_t k = 0; k < sizeof steps / sizeof steps[0]; k++)
        for (size_t e = 0; e < sizeof errs / sizeof errs[0]; e++) {
            CHECK(check_fault_save(steps[k], 1, errs[e], NULL, &failed));
            CHECK(failed);
        }
    /* The directory sync after the rename is best effort: a failure there
     * leaves the new blob in place and the save succeeds. */
    CHECK(check_fault_save(OP_OPEN, 2, EIO, NULL, &failed));
    CHECK(!failed);
    CHECK(check_fault_save(OP_SYNC, 2, EIO, NULL, &failed));
    CHECK(!failed);
    /* Every operation of the save, by position. */
    fault count = fault_none();
    rlxkv_io io = fault_io(&count);
    char *dir = tmpdir_new();
    rlxkv_store *s = rlxkv_store_open(dir, &io, NULL);
    rlxkv_entry *e = make_entry(5, 7, 3, 2);
    CHECK_EQ(rlxkv_store_save(s, e, FP_A), RLXKV_OK);
    rlxkv_entry_free(e);
    rlxkv_store_close(s);
    rm_rf(dir);
    /* open, 2 writes per block (6), sync, close, rename; the directory's
     * open, sync, close */
    CHECK_EQ(count.total, 1 + 2 * 6 + 3 + 3);
    for (int n = 1; n <= count.total + 1; n++) {
        CHECK(check_fault_save(-1, n, EIO, NULL, &failed));
        CHECK(check_fault_save(-1, n, ENOSPC, NULL, &failed));
    }
    /* Short writes are written through; a later failing write still
     * leaves the old blob. */
    fault shortw = fault_none();
    shortw.max_write = 7;
    CHECK(check_fault_save(-1, 0, 0, &shortw, &failed));
    CHECK(!failed);
    CHECK(check_fault_save(OP_WRITE, 3, ENOSPC, &shortw, &failed));
    CHECK(failed);
    /* A write that makes no progress is an error, not a loop. */
    fault zero = fault_none();
    zero.zero_write = 1;
    CHECK(check_fault_save(-1, 0, 0, &zero, &failed));
    CHECK(failed);
}

/* Temporary files are created with O_EXCL; a name taken by someone else
 * (EEXIST) makes the save try another, a bounded number of times. */
static void test_tmp_name_taken(void) {
    int failed;
    fault f = fault_none();
    f.eexist = 3;
    CHECK(check_fault_save(-1, 0, 0, &f, &failed));
    CHECK(!failed);
    f.eexist = 1000000;
    CHECK(check_fault_save(-1, 0, 0, &f, &failed));
    CHECK(failed);
    /* with an observing io: one O_EXCL open per try */
    char *dir = tmpdir_new();
    fault g = fault_none();
    g.eexist = 2;
    rlxkv_io io = fault_io(&g);
    rlxkv_store *s = rlxkv_store_open(dir, &io, NULL);
    rlxkv_entry *e = make_entry(1, 2, 1, 1);
    CHECK_EQ(rlxkv_store_save(s, e, FP_A), RLXKV_OK);
    CHECK_EQ(g.excl_opens, 3);
    g.eexist = 1000000;
    CHECK_EQ(rlxkv_store_save(s, e, FP_A), RLXKV_ERR_IO);
    CHECK(g.excl_opens > 3 && g.excl_opens < 3 + 100);
    CHECK_EQ(count_others(dir), 0);
    rlxkv_entry_free(e);
    rlxkv_store_close(s);
    rm_rf(dir);
}

/* An empty directory loads, lists and prunes to nothing (qsort of zero
 * items once passed NULL: undefined behaviour, found by fuzz_store). */
static void test_empty_directory(void) {
    char *dir = tmpdir_new();
    rlxkv_cache *c = rlxkv_cache_new(1 << 20, FP_A);
    rlxkv_load_report r = load_into(dir, c, RLXKV_OK);
    CHECK_EQ(r.loaded + r.stale + r.corrupt + r.skipped, 0);
    CHECK_EQ(rlxkv_cache_next(c, NULL), NULL);
    rlxkv_store *s = rlxkv_store_open(dir, NULL, NULL);
    CHECK(s != NULL);
    rlxkv_blob_info *info = NULL;
    size_t n = 99;
    CHECK_EQ(rlxkv_store_list(s, FP_A, 0, &info, &n), RLXKV_OK);
    CHECK_EQ(n, 0);
    free(info);
    rlxkv_prune_report pr;
    CHECK_EQ(rlxkv_store_prune(s, FP_A, 0, 0, c, &pr), RLXKV_OK);
    CHECK_EQ(pr.removed + pr.kept, 0);
    rlxkv_store_close(s);
    rlxkv_cache_free(c);
    rm_rf(dir);
}

/* A load never replaces what the cache already holds for the same tokens
 * (it may be newer and not yet saved). */
static void test_load_keeps_cached(void) {
    char *dir = tmpdir_new();
    rlxkv_entry *disk = make_entry(10, 3, 1, 1), *mem = make_entry(10, 3, 1, 2);
    rlxkv_entry *other = make_entry(40, 3, 1, 3);
    rlxkv_cache *c = rlxkv_cache_new(1 << 20, FP_A);
    save_plain(dir, disk, FP_A);
    save_plain(dir, other, FP_A);
    CHECK_EQ(rlxkv_cache_put(c, make_entry(10, 3, 1, 2)), RLXKV_OK);
    rlxkv_load_report r = load_into(dir, c, RLXKV_OK);
    CHECK_EQ(r.loaded, 1);
    CHECK_EQ(r.skipped, 1);
    const rlxkv_entry *got = rlxkv_cache_get(c, mem->tokens, 3);
    CHECK(same_entry(got, mem));
    CHECK(got && rlxkv_cache_is_dirty(c, got));
    CHECK(same_entry(rlxkv_cache_get(c, other->tokens, 3), other));
    rlxkv_entry_free(disk);
    rlxkv_entry_free(mem);
    rlxkv_entry_free(other);
    rlxkv_cache_free(c);
    rm_rf(dir);
}

/* A failing flush: entries saved before the failure are clean, the failed
 * one and the rest stay dirty, and a later flush finishes the job. */
static void test_fault_flush(void) {
    char *dir = tmpdir_new();
    rlxkv_cache *c = rlxkv_cache_new(1 << 20, FP_A);
    fault f = fault_none();
    f.fail_kind = OP_RENAME;
    f.fail_nth = 2;
    f.err = ENOSPC;
    rlxkv_io io = fault_io(&f);
    rlxkv_store *s = rlxkv_store_open(dir, &io, NULL), *p = rlxkv_store_open(dir, NULL, NULL);
    for (uint32_t i = 0; i < 3; i++) CHECK_EQ(rlxkv_cache_put(c, make_entry(i * 10, 3, 1, i)), RLXKV_OK);
    CHECK_EQ(rlxkv_store_flush(s, c), RLXKV_ERR_QUOTA);
    size_t dirty = 0, n = 0;
    const rlxkv_entry *first = rlxkv_cache_next(c, NULL);
    for (const rlxkv_entry *e = first; e; e = rlxkv_cache_next(c, e), n++)
        dirty += (size_t)rlxkv_cache_is_dirty(c, e);
    CHECK_EQ(n, 3);
    CHECK_EQ(dirty, 2);
    CHECK(!rlxkv_cache_is_dirty(c, first));
    CHECK_EQ(count_blobs(dir), 1);
    CHECK_EQ(count_others(dir), 0);
    CHECK_EQ(rlxkv_store_flush(p, c), RLXKV_OK);
    CHECK_EQ(count_blobs(dir), 3);
    CHECK_EQ(loadable(dir), 3);
    rlxkv_cache_free(c);
    rlxkv_store_close(s);
    rlxkv_store_close(p);
    rm_rf(dir);
}

/* Four FP_A blobs (a0 oldest .. a3 newest) of equal size, two FP_B, one
 * corrupt. */
static size_t make_prune_dir(const char *dir, char names[7][32]) {
    size_t blob_bytes = 0;
    for (uint32_t i = 0; i < 4; i++) {
        rlxkv_entry *e = make_entry(100 + 10 * i, 4, 2, i);
        save_plain(dir, e, FP_A);
        name_of(FP_A, e, names[i]);
        set_mtime(dir, names[i], 1000 + 100 * (time_t)i);
        blob_bytes = rlxkv_encoded_size(e);
        rlxkv_entry_free(e);
    }
    for (uint32_t i = 0; i < 2; i++) {
        rlxkv_entry *e = make_entry(300 + 10 * i, 4, 2, i);
        save_plain(dir, e, FP_B);
        name_of(FP_B, e, names[4 + i]);
        set_mtime(dir, names[4 + i], 500); /* older than every FP_A blob */
        rlxkv_entry_free(e);
    }
    snprintf(names[6], 32, "%s", "00000000000000ee.rlxkv");
    spit(dir, names[6], "garbage!garbage!garbage!", 24);
    return blob_bytes;
}

static void test_prune(void) {
    char *dir = tmpdir_new();
    char names[7][32];
    size_t bb = make_prune_dir(dir, names);
    rlxkv_store *s = rlxkv_store_open(dir, NULL, NULL);
    rlxkv_prune_report r;
    snap sn;
    snap_take(dir, &sn);

    /* dry runs remove nothing */
    CHECK_EQ(rlxkv_store_prune(s, FP_A, SIZE_MAX, RLXKV_PRUNE_DRY_RUN, NULL, &r), RLXKV_OK);
    CHECK_EQ(r.removed, 3); /* two stale, one corrupt */
    CHECK_EQ(r.removed_bytes, 2 * bb + 24);
    CHECK_EQ(r.kept, 4);
    CHECK_EQ(r.kept_bytes, 4 * bb);
    CHECK(snap_same(dir, &sn));
    CHECK_EQ(rlxkv_store_prune(s, FP_A, SIZE_MAX, RLXKV_PRUNE_DRY_RUN | RLXKV_PRUNE_KEEP_STALE,
                               NULL, &r), RLXKV_OK);
    CHECK_EQ(r.removed, 1);
    CHECK_EQ(r.kept, 6);
    CHECK_EQ(rlxkv_store_prune(s, FP_A, 2 * bb, RLXKV_PRUNE_DRY_RUN, NULL, &r), RLXKV_OK);
    CHECK_EQ(r.removed, 5);
    CHECK(snap_same(dir, &sn));
    snap_free(&sn);

    /* keep stale, budget two blobs: the corrupt one and the two oldest go */
    CHECK_EQ(rlxkv_store_prune(s, FP_A, 2 * bb, RLXKV_PRUNE_KEEP_STALE, NULL, &r), RLXKV_OK);
    CHECK_EQ(r.removed, 3);
    CHECK_EQ(r.removed_bytes, 2 * bb + 24);
    CHECK_EQ(r.kept, 4);
    CHECK_EQ(r.kept_bytes, 4 * bb);
    CHECK(!exists(dir, names[0]) && !exists(dir, names[1]) && !exists(dir, names[6]));
    CHECK(exists(dir, names[2]) && exists(dir, names[3]));
    CHECK(exists(dir, names[4]) && exists(dir, names[5]));

    /* budget one blob, but a keep-cache holds a2 (the older): a3 goes */
    rlxkv_cache *keep = rlxkv_cache_new(1 << 20, FP_A);
    CHECK_EQ(rlxkv_cache_put(keep, make_entry(120, 4, 2, 2)), RLXKV_OK);
    CHECK_EQ(rlxkv_store_prune(s, FP_A, bb, RLXKV_PRUNE_KEEP_STALE, keep, &r), RLXKV_OK);
    CHECK_EQ(r.removed, 1);
    CHECK(exists(dir, names[2]) && !exists(dir, names[3]));
    /* a budget of 0 cannot take a kept blob either */
    CHECK_EQ(rlxkv_store_prune(s, FP_A, 0, RLXKV_PRUNE_KEEP_STALE, keep, &r), RLXKV_OK);
    CHECK_EQ(r.removed, 0);
    CHECK(exists(dir, names[2]));
    /* with KEEP_PINNED only pinned entries guard their blobs */
    CHECK_EQ(rlxkv_store_prune(s, FP_A, 0, RLXKV_PRUNE_KEEP_STALE | RLXKV_PRUNE_KEEP_PINNED | RLXKV_PRUNE_DRY_RUN,
                               keep, &r), RLXKV_OK);
    CHECK_EQ(r.removed, 1);
    {
        rlxkv_entry *pin = make_entry(120, 4, 2, 2);
        CHECK_EQ(rlxkv_cache_pin(keep, rlxkv_entry_tokens(pin), rlxkv_entry_n_tokens(pin)), RLXKV_OK);
        rlxkv_entry_free(pin);
    }
    CHECK_EQ(rlxkv_store_prune(s, FP_A, 0, RLXKV_PRUNE_KEEP_STALE | RLXKV_PRUNE_KEEP_PINNED, keep, &r),
             RLXKV_OK);
    CHECK_EQ(r.removed, 0);
    CHECK(exists(dir, names[2]));

    /* without KEEP_STALE the other fingerprint's blobs go; a stale blob
     * named in the keep-cache (of its fingerprint) stays */
    rlxkv_cache *keep_b = rlxkv_cache_new(1 << 20, FP_B);
    CHECK_EQ(rlxkv_cache_put(keep_b, make_entry(310, 4, 2, 1)), RLXKV_OK);
    CHECK_EQ(rlxkv_store_prune(s, FP_A, SIZE_MAX, 0, keep_b, &r), RLXKV_OK);
    CHECK_EQ(r.removed, 1);
    CHECK(!exists(dir, names[4]) && exists(dir, names[5]));
    CHECK_EQ(rlxkv_store_prune(s, FP_A, SIZE_MAX, 0, NULL, NULL), RLXKV_OK);
    CHECK(!exists(dir, names[5]));
    /* budget 0 with no keep: everything of FP_A goes */
    CHECK_EQ(rlxkv_store_prune(s, FP_A, 0, 0, NULL, &r), RLXKV_OK);
    CHECK_EQ(r.removed, 1);
    CHECK_EQ(r.kept, 0);
    CHECK_EQ(count_blobs(dir), 0);

    rlxkv_cache_free(keep);
    rlxkv_cache_free(keep_b);
    rlxkv_store_close(s);
    rm_rf(dir);
}

/* A save killed between creating its temporary file and the rename leaves
 * the file behind: prune removes it once it is an hour old, and removes
 * nothing else that is not a blob. */
static void test_prune_sweeps_abandoned_temps(void) {
    char *dir = tmpdir_new();
    rlxkv_store *s = rlxkv_store_open(dir, NULL, NULL);
    rlxkv_entry *e = make_entry(1, 3, 1, 2);
    rlxkv_prune_report r;
    const char *crashed = "0123456789abcdef.rlxkv.2a-7f00aa-3.tmp";
    const char *in_progress = "0123456789abcdef.rlxkv.2b-7f00bb-0.tmp";
    const char *not_ours[] = {"notes.tmp", "0123456789abcdef.rlxkv.1-2.tmp",
                              "0123456789abcdef.rlxkv.1-2-3.tmp.bak", "0123456789ABCDEF.rlxkv.1-2-3.tmp"};
    time_t two_hours_ago = time(NULL) - 7200;
    CHECK_EQ(rlxkv_store_save(s, e, FP_A), RLXKV_OK);
    spit(dir, crashed, "RLXKV0", 6);
    set_mtime(dir, crashed, two_hours_ago);
    spit(dir, in_progress, "RLXKV0", 6);
    for (int i = 0; i < 4; i++) {
        spit(dir, not_ours[i], "x", 1);
        set_mtime(dir, not_ours[i], two_hours_ago);
    }
    /* A dry run touches nothing. */
    CHECK_EQ(rlxkv_store_prune(s, FP_A, SIZE_MAX, RLXKV_PRUNE_DRY_RUN, NULL, &r), RLXKV_OK);
    CHECK(exists(dir, crashed));
    CHECK_EQ(rlxkv_store_prune(s, FP_A, SIZE_MAX, 0, NULL, &r), RLXKV_OK);
    CHECK_EQ(r.removed, 0); /* the report counts blobs */
    CHECK_EQ(r.kept, 1);
    CHECK(!exists(dir, crashed));
    CHECK(exists(dir, in_progress));
    for (int i = 0; i < 4; i++) CHECK(exists(dir, not_ours[i]));
    CHECK_EQ(loadable(dir), 1); /* the blob is untouched */
    rlxkv_entry_free(e);
    rlxkv_store_close(s);
    rm_rf(dir);
}

/* Within one second, the nanoseconds decide which blob is older (for
 * prune and load alike), not the name. */
static void test_same_second(void) {
    char *dir = tmpdir_new();
    char nm[2][32];
    rlxkv_entry *e[2];
    for (int i = 0; i < 2; i++) {
        e[i] = make_entry(10 * (uint32_t)i, 3, 1, (uint32_t)i);
        save_plain(dir, e[i], FP_A);
        name_of(FP_A, e[i], nm[i]);
    }
    /* the blob whose name sorts first is the newer */
    int newer = strcmp(nm[0], nm[1]) < 0 ? 0 : 1;
    for (int i = 0; i < 2; i++) {
        char *p = path_of(dir, nm[i]);
        long ns = i == newer ? 900000000L : 100000000L; /* whole ms: Emscripten keeps ms */
        struct timespec ts[2] = {{5000, ns}, {5000, ns}};
        CHECK_EQ(utimensat(AT_FDCWD, p, ts, 0), 0);
        free(p);
    }
    /* Emscripten 3.1.6's MEMFS reports whole seconds: nothing to check. */
    struct stat st;
    char *p = path_of(dir, nm[newer]);
    int subsecond = stat(p, &st) == 0 && st.st_mtim.tv_nsec != 0;
    free(p);
    if (!subsecond) {
        printf("     (no sub-second mtimes here: skipped)\n");
    } else {
        rlxkv_cache *c = rlxkv_cache_new(rlxkv_entry_kv_bytes(e[0]), FP_A);
        rlxkv_load_report lr = load_into(dir, c, RLXKV_OK);
        CHECK_EQ(lr.loaded, 1);
        CHECK(rlxkv_cache_get(c, e[newer]->tokens, 3) != NULL);
        rlxkv_cache_free(c);
        rlxkv_store *s = rlxkv_store_open(dir, NULL, NULL);
        rlxkv_prune_report r;
        CHECK_EQ(rlxkv_store_prune(s, FP_A, rlxkv_encoded_size(e[0]), 0, NULL, &r), RLXKV_OK);
        CHECK_EQ(r.removed, 1);
        CHECK(exists(dir, nm[newer]) && !exists(dir, nm[1 - newer]));
        rlxkv_store_close(s);
    }
    rlxkv_entry_free(e[0]);
    rlxkv_entry_free(e[1]);
    rm_rf(dir);
}

/* An unlink failing partway through a prune: it stops there, the report
 * matches the directory, what is left is intact and loads. */
static void test_prune_unlink_failure(void) {
    for (int nth = 1; nth <= 4; nth++) {
        char *dir = tmpdir_new();
        char names[7][32];
        size_t bb = make_prune_dir(dir, names);
        fault f = fault_none();
        f.fail_kind = OP_UNLINK;
        f.fail_nth = nth;
        f.err = EACCES;
        rlxkv_io io = fault_io(&f);
        rlxkv_store *s = rlxkv_store_open(dir, &io, NULL);
        rlxkv_prune_report r;
        snap sn;
        snap_take(dir, &sn);
        /* victims: 2 stale + 1 corrupt + the 2 oldest FP_A = 5 */
        CHECK_EQ(rlxkv_store_prune(s, FP_A, 2 * bb, 0, NULL, &r), RLXKV_ERR_IO);
        CHECK_EQ(r.removed, (size_t)nth - 1);
        CHECK_EQ(count_blobs(dir), 7 - r.removed);
        CHECK_EQ(r.kept, 7 - r.removed);
        CHECK_EQ(count_others(dir), 0);
        /* every file still there has its old bytes */
        size_t intact = 0;
        for (size_t i = 0; i < sn.n; i++) {
            size_t len;
            uint8_t *b = slurp(dir, sn.names[i], &len);
            if (b && len == sn.len[i] && !memcmp(b, sn.data[i], len)) intact++;
            free(b);
        }
        CHECK_EQ(intact, 7 - r.removed);
        snap_free(&sn);
        /* the 3 stale and corrupt files go first, then FP_A's oldest */
        size_t loaded = loadable(dir);
        CHECK_EQ(loaded, 4 - (r.removed > 3 ? r.removed - 3 : 0));
        /* finishing the job with working unlinks */
        rlxkv_store *p = rlxkv_store_open(dir, NULL, NULL);
        CHECK_EQ(rlxkv_store_prune(p, FP_A, 2 * bb, 0, NULL, &r), RLXKV_OK);
        CHECK_EQ(count_blobs(dir), 2);
        CHECK(exists(dir, names[2]) && exists(dir, names[3]));
        rlxkv_store_close(p);
        rlxkv_store_close(s);
        rm_rf(dir);
    }
}

/* A failure keeps the errno behind it (rlxkv_store_errno), so that a tool
 * can say EACCES or ENOTDIR, not just "I/O error"; a success after it
 * leaves it. */
static void test_an_io_failure_keeps_its_errno(void) {
    char *dir = tmpdir_new();
    char names[7][32];
    size_t bb = make_prune_dir(dir, names);
    rlxkv_blob_info *info = NULL;
    size_t n = 0;
    rlxkv_prune_report r;
    rlxkv_store *s = rlxkv_store_open(dir, NULL, NULL);
    CHECK_EQ(rlxkv_store_errno(s), 0);
    CHECK_EQ(rlxkv_store_errno(NULL), 0);

    /* An unlink refused in the middle of a prune. */
    fault f = fault_none();
    f.fail_kind = OP_UNLINK;
    f.fail_nth = 1;
    f.err = EACCES;
    rlxkv_io io = fault_io(&f);
    rlxkv_store *faulty = rlxkv_store_open(dir, &io, NULL);
    CHECK_EQ(rlxkv_store_prune(faulty, FP_A, 2 * bb, 0, NULL, &r), RLXKV_ERR_IO);
    CHECK_EQ(rlxkv_store_errno(faulty), EACCES);
    CHECK_EQ(rlxkv_store_errno(s), 0); /* per store */
    rlxkv_store_close(faulty);

    /* The directory swapped for a file under an open store: ENOTDIR for
     * every reader, root too (whom a mode of 000 would not stop). */
    for (int i = 0; i < 7; i++) {
        char *p = path_of(dir, names[i]);
        unlink(p);
        free(p);
    }
    CHECK_EQ(rmdir(dir), 0);
    FILE *file = fopen(dir, "wb");
    CHECK(file != NULL);
    if (file) fclose(file);
    CHECK_EQ(rlxkv_store_list(s, FP_A, 0, &info, &n), RLXKV_ERR_IO);
    CHECK_EQ(rlxkv_store_errno(s), ENOTDIR);
    CHECK_EQ(rlxkv_store_prune(s, FP_A, 0, 0, NULL, &r), RLXKV_ERR_IO);
    CHECK_EQ(rlxkv_store_errno(s), ENOTDIR);

    /* A directory again: the list succeeds and the errno stays. */
    CHECK_EQ(unlink(dir), 0);
    CHECK_EQ(mkdir(dir, 0755), 0);
    CHECK_EQ(rlxkv_store_list(s, FP_A, 0, &info, &n), RLXKV_OK);
    CHECK_EQ(n, 0);
    free(info);
    CHECK_EQ(rlxkv_store_errno(s), ENOTDIR);
    rlxkv_store_close(s);
    rm_rf(dir);
}

static void test_cap_limited_load(void) {
    char *dir = tmpdir_new();
    char names[5][32];
    size_t kv = 0;
    for (uint32_t i = 0; i < 5; i++) {
        rlxkv_entry *e = make_entry(10 * i, 4, 2, i); /* 4 tokens * 4 * 4 blocks = 64 floats */
        kv = rlxkv_entry_kv_bytes(e);
        save_plain(dir, e, FP_A);
        name_of(FP_A, e, names[i]);
        set_mtime(dir, names[i], 2000 + 10 * (time_t)i); /* e0 oldest */
        rlxkv_entry_free(e);
    }
    /* older than all: a stale and a corrupt blob, counted as such */
    rlxkv_entry *st = make_entry(900, 4, 2, 9);
    char stname[32];
    save_plain(dir, st, FP_B);
    name_of(FP_B, st, stname);
    set_mtime(dir, stname, 100);
    spit(dir, "00000000000000ff.rlxkv", "RLXKV001", 8);
    set_mtime(dir, "00000000000000ff.rlxkv", 100);
    rlxkv_entry_free(st);

    /* room for two and a half: the newest two */
    rlxkv_cache *c = rlxkv_cache_new(2 * kv + kv / 2, FP_A);
    rlxkv_load_report r = load_into(dir, c, RLXKV_OK);
    CHECK_EQ(r.loaded, 2);
    CHECK_EQ(r.skipped, 3);
    CHECK_EQ(r.stale, 1);
    CHECK_EQ(r.corrupt, 1);
    CHECK_EQ(r.bytes, 2 * kv);
    uint32_t t4[4] = {40, 41, 42, 43}, t3[4] = {30, 31, 32, 33}, t2[4] = {20, 21, 22, 23};
    CHECK(rlxkv_cache_get(c, t4, 4) && rlxkv_cache_get(c, t3, 4) && !rlxkv_cache_get(c, t2, 4));
    /* newest is the most recently used: iteration starts with it */
    const rlxkv_entry *first = rlxkv_cache_next(c, NULL);
    CHECK(first && first->tokens[0] == 40);
    rlxkv_stats stats;
    rlxkv_cache_stats(c, &stats);
    CHECK_EQ(stats.evictions, 0);
    rlxkv_cache_free(c);

    /* a cap below one entry still loads the newest */
    c = rlxkv_cache_new(kv / 2, FP_A);
    r = load_into(dir, c, RLXKV_OK);
    CHECK_EQ(r.loaded, 1);
    CHECK_EQ(r.skipped, 4);
    CHECK(rlxkv_cache_get(c, t4, 4) != NULL);
    rlxkv_cache_free(c);

    /* everything fits: iteration order is newest mtime first */
    c = rlxkv_cache_new(1 << 20, FP_A);
    r = load_into(dir, c, RLXKV_OK);
    CHECK_EQ(r.loaded, 5);
    CHECK_EQ(r.skipped, 0);
    uint32_t want = 40;
    int order_ok = 1;
    for (const rlxkv_entry *e = rlxkv_cache_next(c, NULL); e; e = rlxkv_cache_next(c, e), want -= 10)
        if (e->tokens[0] != want) order_ok = 0;
    CHECK(order_ok);
    rlxkv_cache_free(c);

    /* once one does not fit, every older one is left out, even one small
     * enough for the room that is left */
    char *dir2 = tmpdir_new();
    static const size_t ntok[3] = {2, 8, 4}; /* oldest .. newest: kv/2, 2kv, kv */
    for (uint32_t i = 0; i < 3; i++) {
        rlxkv_entry *e = make_entry(10 * i, ntok[i], 2, i);
        char nm[32];
        save_plain(dir2, e, FP_A);
        name_of(FP_A, e, nm);
        set_mtime(dir2, nm, 3000 + 10 * (time_t)i);
        rlxkv_entry_free(e);
    }
    c = rlxkv_cache_new(2 * kv + kv / 2, FP_A);
    r = load_into(dir2, c, RLXKV_OK);
    CHECK_EQ(r.loaded, 1);
    CHECK_EQ(r.skipped, 2);
    CHECK_EQ(r.bytes, kv);
    rlxkv_cache_free(c);
    rm_rf(dir2);

    /* a disabled cache takes nothing */
    c = rlxkv_cache_new(0, FP_A);
    r = load_into(dir, c, RLXKV_OK);
    CHECK_EQ(r.loaded, 0);
    CHECK_EQ(r.skipped, 5);
    rlxkv_cache_free(c);

    /* pinned entries that leave no room: skipped, not an error */
    c = rlxkv_cache_new(kv, FP_A);
    CHECK_EQ(rlxkv_cache_put(c, make_entry(7000, 4, 2, 1)), RLXKV_OK);
    uint32_t tp[4] = {7000, 7001, 7002, 7003};
    CHECK_EQ(rlxkv_cache_pin(c, tp, 4), RLXKV_OK);
    r = load_into(dir, c, RLXKV_OK);
    CHECK_EQ(r.loaded, 0);
    CHECK_EQ(r.skipped, 5);
    CHECK(rlxkv_cache_get(c, tp, 4) != NULL);
    rlxkv_cache_free(c);
    rm_rf(dir);
}

/* What rlxkv_store_read must answer for a file holding buf: the store's
 * one judge is rlxkv_inspect's verdict on the same bytes (whatever their
 * fingerprint); a valid blob of another fingerprint than *expect_fp is
 * stale; else the entry rlxkv_decode gives, under any name. */
static int expected_read(const char *name, const uint8_t *buf, size_t len,
                         const uint64_t *expect_fp, rlxkv_entry **out) {
    uint64_t fp = 0;
    int rc = rlxkv_inspect(buf, len, NULL);
    (void)name;
    *out = NULL;
    if (rc) return rc;
    rc = rlxkv_decode(buf, len, expect_fp, out, &fp);
    return rc;
}

/* Reads name (holding buf) through s and compares with expected_read. */
static int read_agrees(rlxkv_store *s, const char *name, const uint8_t *buf, size_t len,
                       const uint64_t *expect_fp) {
    rlxkv_entry *got = NULL, *want = NULL;
    int rc_got = rlxkv_store_read(s, name, expect_fp, &got);
    int rc_want = expected_read(name, buf, len, expect_fp, &want);
    int ok = rc_got == rc_want && (rc_got ? got == NULL : same_entry(got, want));
    if (!ok) fprintf(stderr, "  read_agrees: len %zu: store %d, decode %d\n", len, rc_got, rc_want);
    rlxkv_entry_free(got);
    rlxkv_entry_free(want);
    return ok;
}

/* The store decodes a file straight into its entry (src/codec.c's reader
 * source); its verdict must be rlxkv_decode's on the same bytes, for every
 * truncation, a trailing byte, and changed length and token fields, with
 * whole and short reads alike. */
static void test_stream_load_agrees(void) {
    char *dir = tmpdir_new();
    rlxkv_entry *e = make_entry(40, 5, 3, 9);
    size_t size = rlxkv_encoded_size(e), verdicts[8] = {0};
    /* head, tokens, n_layers and block lengths: what judging reads */
    size_t meta_bytes = 32 + 8 * 5 + 8 + 8 * 6;
    uint8_t *blob = malloc(size + 1), *bad = malloc(size + 1);
    uint64_t other = FP_B;
    char name[32];
    CHECK_EQ(rlxkv_encode(e, FP_A, blob, size, NULL), RLXKV_OK);
    name_of(FP_A, e, name);
    for (int pass = 0; pass < 2; pass++) {
        fault f = fault_none();
        rlxkv_io io = fault_io(&f);
        f.max_read = pass ? 3 : 0;
        rlxkv_store *s = rlxkv_store_open(dir, &io, NULL);
        for (size_t len = 0; len <= size + 1; len++) {
            memcpy(bad, blob, size);
            bad[size] = 0;
            spit(dir, name, bad, len);
            CHECK(read_agrees(s, name, bad, len, NULL));
            CHECK(read_agrees(s, name, bad, len, &other));
            CHECK(read_agrees(s, name, bad, len, len > 20 && len % 2 ? &(uint64_t){FP_A} : NULL));
        }
        /* Every u64 field before the first block's floats, and the second
         * block's length, set to values around the limits. */
        static const uint64_t vals[] = {0, 1, 2, 3, 4, 5, 19, 20, 21, 0xFFFFFFFFull,
                                        0x100000000ull, UINT64_MAX};
        size_t fields[16], nf = 0, blk1 = 32 + 8 * 5 + 8 + 8 + 4 * 20;
        for (size_t at = 16; at <= 32 + 8 * 5 + 8; at += 8) fields[nf++] = at;
        fields[nf++] = blk1;
        for (size_t k = 0; k < nf; k++)
            for (size_t v = 0; v < sizeof vals / sizeof vals[0]; v++) {
                memcpy(bad, blob, size);
                for (int i = 0; i < 8; i++) bad[fields[k] + i] = (uint8_t)(vals[v] >> (8 * i));
                spit(dir, name, bad, size);
                CHECK(read_agrees(s, name, bad, size, NULL));
                if (!pass) {
                    int rc = rlxkv_inspect(bad, size, NULL);
                    verdicts[rc > 0 ? 0 : -rc]++;
                }
            }
        /* A whole blob is judged from its head, tokens and lengths, then
         * read once, each block straight into the entry: its values are
         * read once and nothing past its end. */
        spit(dir, name, blob, size);
        f.bytes_read = f.largest_read = 0;
        rlxkv_entry *back = NULL;
        CHECK_EQ(rlxkv_store_read(s, name, NULL, &back), RLXKV_OK);
        CHECK(same_entry(back, e));
        CHECK_EQ(f.bytes_read, size + meta_bytes);
        if (!pass) CHECK_EQ(f.largest_read, 4 * 20); /* one block, no more */
        rlxkv_entry_free(back);
        rlxkv_store_close(s);
    }
    /* the field changes reached every verdict: valid, truncated, corrupt
     * (and no others: the magic was not touched) */
    CHECK(verdicts[0] > 0);
    CHECK(verdicts[-RLXKV_ERR_TRUNCATED] > 0);
    CHECK(verdicts[-RLXKV_ERR_CORRUPT] > 0);
    CHECK_EQ(verdicts[0] + verdicts[-RLXKV_ERR_TRUNCATED] + verdicts[-RLXKV_ERR_CORRUPT],
             (size_t)(10 * 12)); /* 10 fields x 12 values */
    free(blob);
    free(bad);
    rlxkv_entry_free(e);
    rm_rf(dir);
}

/* A blob file rewritten between the store's stat and its open (a writer
 * that does not rename): whether it grew or shrank, it is not the file
 * that was found, so it is "changed": never read past the size found,
 * unreadable to load (and so never removed), CHANGED to read. */
static void test_stream_load_resized(void) {
    rlxkv_entry *e = make_entry(70, 4, 2, 1);
    rlxkv_entry *longer = make_entry(70, 4, 3, 2), *shorter = make_entry(70, 4, 1, 3);
    size_t size = rlxkv_encoded_size(e);
    uint8_t *blob = malloc(size + 1);
    char name[32];
    CHECK_EQ(rlxkv_encode(e, FP_A, blob, size, NULL), RLXKV_OK);
    blob[size] = 7;
    name_of(FP_A, e, name);
    const rlxkv_entry *repl[] = {longer, shorter, NULL, NULL};
    for (int k = 0; k < 4; k++) {
        char *dir = tmpdir_new(), *path = path_of(dir, name);
        size_t len = k == 2 ? size + 1 : k == 3 ? size - 1 : rlxkv_encoded_size(repl[k]);
        uint8_t *now = k >= 2 ? blob : malloc(len);
        if (k < 2) CHECK_EQ(rlxkv_encode(repl[k], FP_A, now, len, NULL), RLXKV_OK);
        for (int load = 0; load < 2; load++) {
            fault f = fault_none();
            rlxkv_io io = fault_io(&f);
            rlxkv_entry *got = NULL, *want = NULL;
            int rc_want = RLXKV_ERR_CHANGED;
            spit(dir, name, blob, size);
            f.swap_path = path;
            f.swap = now;
            f.swap_len = len;
            rlxkv_store *s = rlxkv_store_open(dir, &io, NULL);
            if (!load) {
                CHECK_EQ(rlxkv_store_read(s, name, NULL, &got), rc_want);
                CHECK(rc_want ? got == NULL : same_entry(got, want));
                rlxkv_entry_free(got);
            } else {
                rlxkv_cache *c = rlxkv_cache_new(1 << 20, FP_A);
                rlxkv_load_report r;
                CHECK_EQ(rlxkv_store_load(s, c, &r), RLXKV_OK);
                CHECK_EQ(r.loaded, 0);
                CHECK_EQ(r.unreadable, 1);
                CHECK_EQ(r.corrupt, 0);
                rlxkv_cache_free(c);
            }
            CHECK(f.swap_path == NULL); /* the swap happened */
            rlxkv_entry_free(want);
            rlxkv_store_close(s);
        }
        if (k < 2) free(now);
        free(path);
        rm_rf(dir);
    }
    free(blob);
    rlxkv_entry_free(e);
    rlxkv_entry_free(longer);
    rlxkv_entry_free(shorter);
}

/* Blob names are 16 hex digits, zero-padded: the store formats them by
 * hand (no printf in the wasm), so check a hash with leading zero digits. */
static void test_blob_name_padding(void) {
    uint32_t t[1];
    char name[32], want[32];
    int found = 0;
    for (uint32_t i = 0; i < 100000 && found < 3; i++) {
        uint8_t le[4] = {(uint8_t)i, (uint8_t)(i >> 8), (uint8_t)(i >> 16), (uint8_t)(i >> 24)};
        uint64_t h = rlxkv_hash64(le, 4, FP_A);
        if (h >> 56) continue; /* two leading zeros at least */
        t[0] = i;
        rlxkv_blob_name(FP_A, t, 1, name);
        snprintf(want, sizeof want, "%016" PRIx64 ".rlxkv", h);
        CHECK(!strcmp(name, want));
        found++;
    }
    CHECK_EQ(found, 3);
}


/* ---------------------------------------------------------------------- *
 * Hostile directories (RELIABILITY.md, "Hostile input")
 * ---------------------------------------------------------------------- */

/* A fifo named like a blob, one that is not, and a socket: only regular
 * files are blobs, and nothing else is ever opened (a fifo would block). */
static void test_fifos_and_sockets_are_never_opened(void) {
    char *dir = tmpdir_new(), name[32];
    rlxkv_entry *e = make_entry(1, 2, 1, 1);
    char *fifo = path_of(dir, "0123456789abcdef.rlxkv"), *lock = path_of(dir, "app.lock");
    char *sock = path_of(dir, "helper.sock");
    struct sockaddr_un sa;
    int sfd = socket(AF_UNIX, SOCK_STREAM, 0);
    rlxkv_cache *c = rlxkv_cache_new(1 << 20, FP_A);
    rlxkv_blob_info *info = NULL;
    rlxkv_entry *back = (rlxkv_entry *)1;
    rlxkv_prune_report pr;
    size_t n = 0;

    save_plain(dir, e, FP_A);
    name_of(FP_A, e, name);
    CHECK_EQ(mkfifo(fifo, 0644), 0);
    CHECK_EQ(mkfifo(lock, 0644), 0);
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", sock);
    CHECK(sfd >= 0 && bind(sfd, (struct sockaddr *)&sa, sizeof sa) == 0);
    alarm(20); /* a blocking open of the fifo would hang here: fail instead */
    rlxkv_load_report r = load_into(dir, c, RLXKV_OK);
    CHECK_EQ(r.loaded, 1);
    CHECK_EQ(r.corrupt + r.unreadable, 0);
    rlxkv_store *s = rlxkv_store_open(dir, NULL, NULL);
    CHECK_EQ(rlxkv_store_list(s, FP_A, 0, &info, &n), RLXKV_OK);
    CHECK(n == 1 && !strcmp(info[0].name, name));
    free(info);
    CHECK_EQ(rlxkv_store_read(s, "0123456789abcdef.rlxkv", NULL, &back), RLXKV_ERR_NOTFOUND);
    CHECK(back == NULL);
    CHECK_EQ(rlxkv_store_prune(s, FP_A, 0, 0, NULL, &pr), RLXKV_OK);
    CHECK_EQ(pr.removed, 1); /* the blob, by the budget; the others are not blobs */
    CHECK(exists(dir, "0123456789abcdef.rlxkv") && exists(dir, "app.lock") && exists(dir, "helper.sock"));
    alarm(0);
    rlxkv_store_close(s);
    close(sfd);
    free(fifo);
    free(lock);
    free(sock);
    rlxkv_entry_free(e);
    rlxkv_cache_free(c);
    rm_rf(dir);
}

/* One judge: a valid blob copied in under a name not its own (system.rlxkv),
 * of this fingerprint or another, is foreign for load, list and prune
 * alike, and nothing the load report leaves untouched is ever deleted. */
static void test_foreign_blobs_are_judged_once_and_kept(void) {
    char *dir = tmpdir_new();
    rlxkv_entry *a = make_entry(10, 3, 1, 1), *b = make_entry(20, 3, 1, 2);
    size_t size_a = rlxkv_encoded_size(a), size_b = rlxkv_encoded_size(b), n = 0;
    uint8_t *blob_a = malloc(size_a), *blob_b = malloc(size_b);
    rlxkv_cache *c = rlxkv_cache_new(1 << 20, FP_A);
    rlxkv_blob_info *info = NULL;
    rlxkv_store *s;

    CHECK_EQ(rlxkv_encode(a, FP_A, blob_a, size_a, NULL), RLXKV_OK);
    CHECK_EQ(rlxkv_encode(b, FP_B, blob_b, size_b, NULL), RLXKV_OK);
    spit(dir, "system.rlxkv", blob_a, size_a);
    spit(dir, "other-model.rlxkv", blob_b, size_b);
    rlxkv_load_report r = load_into(dir, c, RLXKV_OK);
    CHECK_EQ(r.foreign, 2);
    CHECK_EQ(r.loaded + r.stale + r.corrupt + r.skipped, 0);
    s = rlxkv_store_open(dir, NULL, NULL);
    CHECK_EQ(rlxkv_store_list(s, FP_A, 0, &info, &n), RLXKV_OK);
    CHECK_EQ(n, 2);
    for (size_t i = 0; i < n; i++) {
        CHECK_EQ(info[i].status, RLXKV_BLOB_FOREIGN);
        CHECK_EQ(info[i].error, 0);
        CHECK_EQ(info[i].fingerprint, strcmp(info[i].name, "system.rlxkv") ? FP_B : FP_A);
        CHECK_EQ(info[i].n_tokens, 3);
    }
    free(info);
    for (unsigned flags = 0; flags < 16; flags++) {
        rlxkv_prune_report pr;
        CHECK_EQ(rlxkv_store_prune(s, FP_A, 0, flags, NULL, &pr), RLXKV_OK);
        CHECK_EQ(pr.removed, 0);
        CHECK(pr.kept == 2 && pr.kept_bytes == size_a + size_b);
    }
    CHECK(exists(dir, "system.rlxkv") && exists(dir, "other-model.rlxkv"));
    /* read by name, each is the blob it is */
    rlxkv_entry *back = NULL;
    CHECK_EQ(rlxkv_store_read(s, "system.rlxkv", &(uint64_t){FP_A}, &back), RLXKV_OK);
    CHECK(same_entry(back, a));
    rlxkv_entry_free(back);
    CHECK_EQ(rlxkv_store_read(s, "other-model.rlxkv", &(uint64_t){FP_A}, &back), RLXKV_STALE);
    rlxkv_store_close(s);
    free(blob_a);
    free(blob_b);
    rlxkv_entry_free(a);
    rlxkv_entry_free(b);
    rlxkv_cache_free(c);
    rm_rf(dir);
}

/* Stale means valid: a truncated blob of another fingerprint under its own
 * name is corrupt for load as for list (the decoder's stale-after-the-head
 * shortcut is not the store's judge), so prune may remove it. */
static void test_stale_is_valid_and_of_another_fingerprint(void) {
    char *dir = tmpdir_new(), name[32];
    rlxkv_entry *e = make_entry(30, 3, 1, 3);
    size_t size = rlxkv_encoded_size(e), n = 0;
    uint8_t *blob = malloc(size);
    rlxkv_cache *c = rlxkv_cache_new(1 << 20, FP_A);
    rlxkv_blob_info *info = NULL;
    rlxkv_store *s;
    rlxkv_prune_report pr;

    CHECK_EQ(rlxkv_encode(e, FP_B, blob, size, NULL), RLXKV_OK);
    name_of(FP_B, e, name);
    spit(dir, name, blob, size - 3);
    rlxkv_load_report r = load_into(dir, c, RLXKV_OK);
    CHECK(r.corrupt == 1 && r.stale == 0);
    s = rlxkv_store_open(dir, NULL, NULL);
    CHECK_EQ(rlxkv_store_list(s, FP_A, 0, &info, &n), RLXKV_OK);
    CHECK(n == 1 && info[0].status == RLXKV_BLOB_CORRUPT && info[0].error == RLXKV_ERR_TRUNCATED);
    free(info);
    CHECK_EQ(rlxkv_store_read(s, name, &(uint64_t){FP_A}, &(rlxkv_entry *){NULL}), RLXKV_ERR_TRUNCATED);
    CHECK_EQ(rlxkv_store_prune(s, FP_A, UINT64_MAX, RLXKV_PRUNE_KEEP_STALE, NULL, &pr), RLXKV_OK);
    CHECK_EQ(pr.removed, 1);
    CHECK(!exists(dir, name));
    /* whole, it is stale: KEEP_STALE keeps it, and the load left it alone */
    spit(dir, name, blob, size);
    r = load_into(dir, c, RLXKV_OK);
    CHECK(r.stale == 1 && r.corrupt == 0);
    CHECK_EQ(rlxkv_store_prune(s, FP_A, UINT64_MAX, RLXKV_PRUNE_KEEP_STALE, NULL, &pr), RLXKV_OK);
    CHECK(pr.removed == 0 && exists(dir, name));
    rlxkv_store_close(s);
    free(blob);
    rlxkv_entry_free(e);
    rlxkv_cache_free(c);
    rm_rf(dir);
}

/* Temporaries of killed saves: listed, counted against the budget while
 * their writer may live, removed once it cannot (a PID that runs nothing),
 * without waiting an hour; never on a dry run. */
static void test_temporaries_are_listed_counted_and_reclaimed(void) {
    char *dir = tmpdir_new(), name[32], live[96], dead[96];
    rlxkv_entry *e = make_entry(40, 4, 1, 4);
    size_t size = rlxkv_encoded_size(e), n = 0;
    uint8_t junk[500] = {0};
    rlxkv_blob_info *info = NULL;
    rlxkv_store *s;
    rlxkv_prune_report pr;

    save_plain(dir, e, FP_A);
    name_of(FP_A, e, name);
    snprintf(live, sizeof live, "%s.%lx-1-1.tmp", name, (long)getpid());
    snprintf(dead, sizeof dead, "%s.7ffffffe-1-2.tmp", name); /* above any pid_max */
    spit(dir, live, junk, 100);
    spit(dir, dead, junk, 500);
    s = rlxkv_store_open(dir, NULL, NULL);
    CHECK_EQ(rlxkv_store_list(s, FP_A, 0, &info, &n), RLXKV_OK);
    CHECK_EQ(n, 3);
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(info[i].name, live)) CHECK(info[i].status == RLXKV_BLOB_TEMP && info[i].file_bytes == 100);
        else if (!strcmp(info[i].name, dead)) CHECK(info[i].status == RLXKV_BLOB_ABANDONED && info[i].file_bytes == 500);
        else CHECK(!strcmp(info[i].name, name) && info[i].status == RLXKV_BLOB_OK);
    }
    free(info);
    /* a budget of the blob alone: the live temporary's 100 bytes push it out */
    CHECK_EQ(rlxkv_store_prune(s, FP_A, size, RLXKV_PRUNE_DRY_RUN, NULL, &pr), RLXKV_OK);
    CHECK(pr.removed == 1 && pr.removed_bytes == size);
    CHECK(pr.temps_removed == 1 && pr.temps_removed_bytes == 500);
    CHECK(pr.temps_kept == 1 && pr.temps_kept_bytes == 100);
    CHECK(exists(dir, dead) && exists(dir, name)); /* dry */
    CHECK_EQ(rlxkv_store_prune(s, FP_A, size + 100, 0, NULL, &pr), RLXKV_OK);
    CHECK(pr.removed == 0 && pr.temps_removed == 1 && pr.kept == 1 && pr.kept_bytes == size);
    CHECK(!exists(dir, dead) && exists(dir, live) && exists(dir, name));
    rlxkv_store_close(s);
    rlxkv_entry_free(e);
    rm_rf(dir);
}

/* The budget goes by use: a flush stamps blobs in the cache's recency
 * order, so the blob saved first but used last outlives the other. */
static void test_prune_drops_the_least_recently_used(void) {
    char *dir = tmpdir_new(), an[32], bn[32];
    rlxkv_entry *a = make_entry(50, 2, 1, 5), *b = make_entry(60, 2, 1, 6);
    uint32_t at[2] = {50, 51};
    size_t size = rlxkv_encoded_size(a);
    rlxkv_cache *c = rlxkv_cache_new(1 << 20, FP_A);
    rlxkv_hit hit;
    rlxkv_store *s;
    rlxkv_prune_report pr;

    name_of(FP_A, a, an);
    name_of(FP_A, b, bn);
    save_plain(dir, a, FP_A);
    save_plain(dir, b, FP_A);
    set_mtime(dir, an, 1000000); /* a saved long before b */
    set_mtime(dir, bn, 2000000);
    rlxkv_load_report r = load_into(dir, c, RLXKV_OK);
    CHECK_EQ(r.loaded, 2);
    CHECK_EQ(rlxkv_cache_lookup(c, at, 2, &hit), RLXKV_HIT); /* a used last */
    s = rlxkv_store_open(dir, NULL, NULL);
    CHECK_EQ(rlxkv_store_flush(s, c), RLXKV_OK); /* nothing dirty: only stamps */
    CHECK_EQ(rlxkv_store_prune(s, FP_A, size, 0, NULL, &pr), RLXKV_OK);
    CHECK_EQ(pr.removed, 1);
    CHECK(exists(dir, an) && !exists(dir, bn));
    rlxkv_store_close(s);
    rlxkv_entry_free(a);
    rlxkv_entry_free(b);
    rlxkv_cache_free(c);
    rm_rf(dir);
}

/* A save streams the blob from the entry: no write (and no buffer) of the
 * whole blob, each block written from where it lies. */
static void test_save_streams_from_the_entry(void) {
    char *dir = tmpdir_new(), name[32];
    size_t lens[6] = {4000, 4000, 4000, 4000, 4000, 4000};
    rlxkv_entry *e = rlxkv_entry_new(8, 3, lens, RLXKV_F32, NULL), *back = NULL;
    fault f = fault_none();
    rlxkv_io io = fault_io(&f);
    rlxkv_store *s = rlxkv_store_open(dir, &io, NULL);
    size_t size = rlxkv_encoded_size(e);
    for (size_t i = 0; i < 8; i++) rlxkv_entry_tokens_mut(e)[i] = (uint32_t)i;
    for (size_t i = 0; i < e->n_values; i++) ((float *)e->kv)[i] = (float)i;
    CHECK_EQ(rlxkv_store_save(s, e, FP_A), RLXKV_OK);
    CHECK_EQ(f.largest_write, 4 * 4000); /* one block, not the blob */
    CHECK_EQ(f.writes, 2 * 6); /* per block: its length (the head with the first), its values */
    name_of(FP_A, e, name);
    CHECK_EQ(rlxkv_store_read(s, name, NULL, &back), RLXKV_OK);
    CHECK(same_entry(back, e));
    size_t len;
    uint8_t *file = slurp(dir, name, &len), *want = malloc(size);
    CHECK_EQ(rlxkv_encode(e, FP_A, want, size, NULL), RLXKV_OK);
    CHECK(len == size && !memcmp(file, want, size));
    free(file);
    free(want);
    rlxkv_entry_free(back);
    rlxkv_entry_free(e);
    rlxkv_store_close(s);
    rm_rf(dir);
}

/* A file that grows while it is read is never read past the size it was
 * judged at: it is "changed", unreadable to load, CHANGED to read. */
static void test_a_growing_file_is_changed(void) {
    char *dir = tmpdir_new(), name[32], *path;
    rlxkv_entry *e = make_entry(70, 4, 2, 7), *back = NULL;
    size_t size = rlxkv_encoded_size(e);
    for (int load = 0; load < 2; load++) {
        fault f = fault_none();
        rlxkv_io io = fault_io(&f);
        rlxkv_store *s;
        save_plain(dir, e, FP_A);
        name_of(FP_A, e, name);
        path = path_of(dir, name);
        f.grow_path = path;
        f.grow_len = 1 << 20;
        s = rlxkv_store_open(dir, &io, NULL);
        if (!load) {
            CHECK_EQ(rlxkv_store_read(s, name, NULL, &back), RLXKV_ERR_CHANGED);
            CHECK(back == NULL);
        } else {
            rlxkv_cache *c = rlxkv_cache_new(1 << 20, FP_A);
            rlxkv_load_report r;
            CHECK_EQ(rlxkv_store_load(s, c, &r), RLXKV_OK);
            CHECK(r.unreadable == 1 && r.loaded == 0 && r.corrupt == 0);
            rlxkv_cache_free(c);
        }
        CHECK(f.grow_path == NULL); /* it grew */
        CHECK(f.bytes_read <= size);
        rlxkv_store_close(s);
        CHECK(exists(dir, name)); /* never treated as garbage */
        unlink(path);
        free(path);
    }
    rlxkv_entry_free(e);
    rm_rf(dir);
}

/* Judging reads a blob's header, tokens and lengths, never its values: a
 * 3 GiB sparse blob is listed after reading a few dozen bytes. */
static void test_list_reads_headers_only(void) {
    char *dir = tmpdir_new(), name[32], *path;
    uint64_t k_values = ((uint64_t)3 << 30) / 4;
    uint8_t head[56] = {0};
    uint32_t tok = 9;
    rlxkv_blob_info *info = NULL;
    size_t n = 0;
    fault f = fault_none();
    rlxkv_io io = fault_io(&f);
    rlxkv_store *s;
    int fd;

    memcpy(head, "RLXKV001", 8);
    rlxkv_store_u64le(head + 8, FP_A);
    rlxkv_store_u64le(head + 16, 1);
    rlxkv_store_u64le(head + 24, 1);
    rlxkv_store_u64le(head + 32, tok);
    rlxkv_store_u64le(head + 40, 1);
    rlxkv_store_u64le(head + 48, k_values);
    rlxkv_blob_name(FP_A, &tok, 1, name);
    path = path_of(dir, name);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0 && write(fd, head, sizeof head) == (ssize_t)sizeof head);
    CHECK_EQ(ftruncate(fd, (off_t)(56 + 4 * k_values + 8)), 0); /* values and V's length 0: a hole */
    close(fd);
    s = rlxkv_store_open(dir, &io, NULL);
    CHECK_EQ(rlxkv_store_list(s, FP_A, 0, &info, &n), RLXKV_OK);
    CHECK(n == 1 && info[0].status == RLXKV_BLOB_OK && info[0].file_bytes == 56 + 4 * k_values + 8);
    CHECK_EQ(info[0].kv_bytes, 4 * k_values);
    CHECK(f.bytes_read <= 64);
    free(info);
    rlxkv_store_close(s);
    free(path);
    rm_rf(dir);
}

/* A valid blob the cache's layout refuses is counted as such, kept, and
 * not taken for corrupt; one past the layer limit is too large. */
static void test_shape_and_limit_are_counted_not_corrupt(void) {
    char *dir = tmpdir_new(), name[32];
    rlxkv_entry *e = make_entry(80, 2, 1, 8); /* blocks of 4 per token */
    rlxkv_cache *c = rlxkv_cache_new(1 << 20, FP_A);
    rlxkv_layout l = {RLXKV_TOKEN_MAJOR, 1, 3, 0}; /* 3 per token */
    size_t len = 48 + 16 * (RLXKV_MAX_LAYERS + 1), n = 0;
    uint8_t *big = calloc(1, len);
    uint32_t tok = 5;
    rlxkv_blob_info *info = NULL;
    rlxkv_prune_report pr;
    rlxkv_store *s;

    CHECK_EQ(rlxkv_cache_set_layout(c, &l), RLXKV_OK);
    save_plain(dir, e, FP_A);
    memcpy(big, "RLXKV001", 8);
    rlxkv_store_u64le(big + 8, FP_A);
    rlxkv_store_u64le(big + 16, 1);
    rlxkv_store_u64le(big + 24, 1);
    rlxkv_store_u64le(big + 32, tok);
    rlxkv_store_u64le(big + 40, RLXKV_MAX_LAYERS + 1);
    rlxkv_blob_name(FP_A, &tok, 1, name);
    spit(dir, name, big, len);
    rlxkv_load_report r = load_into(dir, c, RLXKV_OK);
    CHECK(r.shape == 1 && r.too_large == 1 && r.loaded == 0 && r.corrupt == 0);
    s = rlxkv_store_open(dir, NULL, NULL);
    CHECK_EQ(rlxkv_store_list(s, FP_A, 0, &info, &n), RLXKV_OK);
    CHECK_EQ(n, 2);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(info[i].name, name))
            CHECK(info[i].status == RLXKV_BLOB_TOO_LARGE && info[i].error == RLXKV_ERR_LIMIT &&
                  info[i].fingerprint == FP_A);
        else
            CHECK_EQ(info[i].status, RLXKV_BLOB_OK);
    free(info);
    CHECK_EQ(rlxkv_store_prune(s, FP_A, UINT64_MAX, 0, NULL, &pr), RLXKV_OK);
    CHECK(pr.removed == 0 && exists(dir, name));
    rlxkv_store_close(s);
    free(big);
    rlxkv_entry_free(e);
    rlxkv_cache_free(c);
    rm_rf(dir);
}

int main(void) {
    RUN(test_blob_name);
    RUN(test_open);
    RUN(test_save_read);
    RUN(test_round_trip_cache);
    RUN(test_two_fingerprints);
    RUN(test_corrupt_files);
    RUN(test_list);
    RUN(test_page_names);
    RUN(test_fault_injection);
    RUN(test_tmp_name_taken);
    RUN(test_empty_directory);
    RUN(test_load_keeps_cached);
    RUN(test_fault_flush);
    RUN(test_prune);
    RUN(test_prune_unlink_failure);
    RUN(test_an_io_failure_keeps_its_errno);
    RUN(test_same_second);
    RUN(test_prune_sweeps_abandoned_temps);
    RUN(test_cap_limited_load);
    RUN(test_stream_load_agrees);
    RUN(test_stream_load_resized);
    RUN(test_blob_name_padding);
    RUN(test_fifos_and_sockets_are_never_opened);
    RUN(test_foreign_blobs_are_judged_once_and_kept);
    RUN(test_stale_is_valid_and_of_another_fingerprint);
    RUN(test_temporaries_are_listed_counted_and_reclaimed);
    RUN(test_prune_drops_the_least_recently_used);
    RUN(test_save_streams_from_the_entry);
    RUN(test_a_growing_file_is_changed);
    RUN(test_list_reads_headers_only);
    RUN(test_shape_and_limit_are_counted_not_corrupt);
    return check_report();
}
