/* libFuzzer harness for the directory store.
 *
 * Each input fills a scratch directory (made once per process with mkdtemp,
 * emptied before every input) with files the input describes: random bytes,
 * valid blobs, truncated blobs, blobs with a flipped byte, blobs of another
 * fingerprint, valid blobs under wrong names, empty files, temporary-looking
 * files, files that are not blobs, subdirectories and symlinks named like
 * blobs, all with mtimes from a small set so that ties happen. An optional
 * cache is pre-filled (some entries pinned) and then:
 *
 *   - rlxkv_store_load: every regular "*.rlxkv" file the store considers
 *     lands in exactly one count; stale, foreign and corrupt match an
 *     independent classification (a parser of FORMAT.md and FORMATS.md
 *     written here: RLXKV001 and RLXKVF16 blobs both);
 *     into an empty cache the loaded set is exactly the newest valid blobs
 *     that the cap holds, in recency order; every loaded entry re-encodes
 *     to its file byte for byte;
 *   - rlxkv_store_read on every file agrees with that classification;
 *   - rlxkv_store_list: one info per considered file and save temporary,
 *     sorted, each status (temporaries: temp or abandoned, by age and by
 *     whether their writer's PID runs), size, mtime, token count, KV bytes
 *     and fingerprint as expected;
 *   - rlxkv_store_prune (random flags, budget and keep cache): exactly the
 *     expected files are removed (or reported, on a dry run), with right
 *     counts and byte totals, live temporaries counted against the budget;
 *   - rlxkv_store_flush then a reload into a fresh cache: every entry comes
 *     back identical.
 *
 * The store's file operations go through rlxkv_io: fsync is a no-op
 * (nothing here needs durability, and it would dominate the run time), and
 * for half the inputs reads and writes return short counts and fail with
 * EINTR now and then, which must change no outcome.
 *
 * FUZZ_STORE_DEBUG=1 in the environment prints each input's directory (name,
 * mtime, size, expected verdicts) and what load put in the cache. */
#define _GNU_SOURCE /* mkdtemp, utimensat, symlink */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "rlxkv.h"
#include "fuzz.h"

#define FP_A 0x1111222233334444ull
#define FP_B 0x5555666677778888ull
#define MAX_FILES 12
#define MAX_TOK 6
#define MAX_LAYERS 2


static const char *g_phase = "setup";
static void fuzz_where(FILE *out) { fprintf(out, "fuzz_store: [%s] ", g_phase); }

static char g_dir[256];

/* ---- scratch directory -------------------------------------------------- */

static void path_in(char *dst, size_t cap, const char *name) {
    snprintf(dst, cap, "%s/%s", g_dir, name);
}

static void clear_dir(void) {
    DIR *d = opendir(g_dir);
    struct dirent *de;
    char p[512];
    if (!d) FAIL("opendir %s: %s", g_dir, strerror(errno));
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        path_in(p, sizeof p, de->d_name);
        if (unlink(p) != 0 && rmdir(p) != 0) FAIL("cannot remove %s: %s", p, strerror(errno));
    }
    closedir(d);
}

static void remove_dir(void) {
    if (!g_dir[0]) return;
    clear_dir();
    rmdir(g_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    const char *base = getenv("TMPDIR");
    (void)argc;
    (void)argv;
    if (!base || !*base) base = "/tmp";
    snprintf(g_dir, sizeof g_dir, "%s/rlxkv_fuzz_store_XXXXXX", base);
    if (!mkdtemp(g_dir)) {
        fprintf(stderr, "fuzz_store: mkdtemp %s: %s\n", g_dir, strerror(errno));
        exit(1);
    }
    atexit(remove_dir);
    return 0;
}

/* The POSIX io, less fsync. */
static int no_sync(void *ctx, int fd) {
    (void)ctx;
    (void)fd;
    return 0;
}

/* Chaos: when g_chaos is not 0, reads and writes return short counts and
 * now and then fail with EINTR. The store must carry on through both
 * (read_file and write_all loop), so no outcome may change. */
static uint64_t g_chaos;
static unsigned chaos_next(void) {
    g_chaos = g_chaos * 6364136223846793005ull + 1442695040888963407ull;
    return (unsigned)(g_chaos >> 33);
}
/* Shortens *n, or fails the call with EINTR (-1). */
static int chaos(size_t *n) {
    if (!g_chaos || !*n) return 0;
    unsigned x = chaos_next();
    if (x % 7 == 0) {
        errno = EINTR;
        return -1;
    }
    *n = 1 + x % *n;
    return 0;
}
static long chaos_read(void *ctx, int fd, void *buf, size_t n) {
    (void)ctx;
    return chaos(&n) ? -1 : (long)read(fd, buf, n);
}
static long chaos_write(void *ctx, int fd, const void *buf, size_t n) {
    (void)ctx;
    return chaos(&n) ? -1 : (long)write(fd, buf, n);
}

/* The io every store here uses. */
static rlxkv_io fuzz_io(void) {
    rlxkv_io io = *rlxkv_io_posix();
    io.sync = no_sync;
    io.read = chaos_read;
    io.write = chaos_write;
    return io;
}

/* ---- input ---------------------------------------------------------------- */

typedef struct rd {
    const uint8_t *p;
    size_t n, i;
} rd;
static unsigned u8(rd *r) { return r->i < r->n ? r->p[r->i++] : 0; }

static const uint32_t kAlphabet[5] = {0, 1, 2, 3, 0xffffffffu};

/* A small entry: up to MAX_TOK tokens from a 5-token alphabet, up to
 * MAX_LAYERS layers of short blocks. */
static rlxkv_entry *gen_entry(rd *r) {
    size_t n = u8(r) % (MAX_TOK + 1), L = u8(r) % (MAX_LAYERS + 1), lens[2 * MAX_LAYERS];
    rlxkv_entry *e;
    int st;
    unsigned shape = u8(r) % 2;
    int dtype = u8(r) % 3 == 2 ? RLXKV_F16 : RLXKV_F32;
    for (size_t b = 0; b < 2 * L; b++) lens[b] = shape ? n * (u8(r) % 3) : u8(r) % 7;
    e = rlxkv_entry_new(n, L, lens, dtype, &st);
    if (!e) FAIL("entry_new: %d", st);
    for (size_t i = 0; i < n; i++) rlxkv_entry_tokens_mut(e)[i] = kAlphabet[u8(r) % 5];
    for (size_t b = 0; b < 2 * L; b++) {
        uint8_t *f = rlxkv_entry_block_mut(e, b);
        for (size_t i = 0; i < lens[b]; i++) {
            uint32_t bits = (uint32_t)u8(r) << 24 | (uint32_t)(b * 131 + i) * 2654435761u >> 8;
            if (dtype == RLXKV_F16) {
                uint16_t h = (uint16_t)(bits >> 16);
                memcpy(f + 2 * i, &h, 2);
            } else {
                memcpy(f + 4 * i, &bits, 4);
            }
        }
    }
    return e;
}

static uint8_t *encode(const rlxkv_entry *e, uint64_t fp, size_t *len) {
    size_t size = rlxkv_encoded_size(e), w = 0;
    uint8_t *buf = malloc(size);
    REQUIRE(size && buf);
    REQUIRE(rlxkv_encode(e, fp, buf, size, &w) == RLXKV_OK && w == size);
    *len = size;
    return buf;
}

static void write_file(const char *name, const void *data, size_t len) {
    char p[512];
    int fd;
    /* Blobs only: a page's magic (RLXKVP..., FORMATS.md) is written as a
     * foreign one. The codec's page rules are fuzzed by fuzz_decode, the
     * paging cache by fuzz_pages; this model knows blobs. */
    uint8_t head[6];
    size_t h = len >= 6 && !memcmp(data, "RLXKVP", 6) ? 6 : 0;
    if (h) memcpy(head, "RLXKVQ", 6);
    path_in(p, sizeof p, name);
    unlink(p);
    rmdir(p);
    fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) FAIL("open %s: %s", p, strerror(errno));
    if (h && write(fd, head, h) != (ssize_t)h) FAIL("write %s", p);
    if (len > h && write(fd, (const uint8_t *)data + h, len - h) != (ssize_t)(len - h)) FAIL("write %s", p);
    close(fd);
}

static void hex_name(rd *r, char name[64]) {
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 16; i++) name[i] = hex[u8(r) & 15];
    strcpy(name + 16, ".rlxkv");
}

/* Names a file that is not a well-formed blob name: some of them the
 * store considers (they end in .rlxkv and are short), some it ignores. */
static void odd_name(rd *r, char name[64]) {
    switch (u8(r) % 9) {
    case 0: strcpy(name, "a.rlxkv"); break;
    case 1: strcpy(name, ".rlxkv"); break;                       /* suffix only: ignored */
    case 2: strcpy(name, "0123456789ABCDEF.rlxkv"); break;
    case 3: strcpy(name, "notes.txt"); break;                    /* ignored */
    case 4: strcpy(name, "0123456789abcdef.rlxkv~"); break;      /* ignored */
    case 5: strcpy(name, "0123456789abcdef.RLXKV"); break;       /* ignored */
    case 6: strcpy(name, "0123456789abcdef0123456789abcdef0123456789a.rlxkv"); break; /* 48 chars: ignored */
    case 7: strcpy(name, "0123456789abcdef0123456789abcdef0123456789.rlxkv"); break;  /* 47 chars: considered */
    default: hex_name(r, name); break;
    }
}

/* ---- the file set ------------------------------------------------------------ */

static void make_files(rd *r) {
    size_t n_files = u8(r) % (MAX_FILES + 1);
    char name[64], tmp[128];
    for (size_t f = 0; f < n_files; f++) {
        unsigned kind = u8(r) % 14;
        rlxkv_entry *e = NULL;
        uint8_t *buf = NULL, junk[96];
        size_t len = 0;
        uint64_t fp = FP_A;

        if (kind >= 1 && kind <= 7) {
            e = gen_entry(r);
            if (kind == 3) fp = u8(r) & 1 ? FP_B : (uint64_t)u8(r) << 8;
            if (kind == 7) fp = FP_B;
            buf = encode(e, fp, &len);
            rlxkv_blob_name(fp, rlxkv_entry_tokens(e), rlxkv_entry_n_tokens(e), name);
        }
        switch (kind) {
        case 0: /* random bytes under some name */
            len = u8(r) % sizeof junk;
            for (size_t i = 0; i < len; i++) junk[i] = (uint8_t)u8(r);
            if (len >= 8 && u8(r) % 2) memcpy(junk, u8(r) % 2 ? "RLXKV001" : "RLXKVF16", 8);
            if (u8(r) % 2) hex_name(r, name);
            else odd_name(r, name);
            write_file(name, junk, len);
            break;
        case 1: /* valid, right name */
        case 3: /* valid, another fingerprint (stale) */
            write_file(name, buf, len);
            break;
        case 2: /* truncated */
        case 7: /* truncated, another fingerprint */
            write_file(name, buf, u8(r) % len);
            break;
        case 4: /* valid under a wrong name */
            if (u8(r) % 2) {
                hex_name(r, name);
            } else { /* the name of other tokens */
                rlxkv_entry *o = gen_entry(r);
                rlxkv_blob_name(FP_A, rlxkv_entry_tokens(o), rlxkv_entry_n_tokens(o), name);
                rlxkv_entry_free(o);
            }
            write_file(name, buf, len);
            break;
        case 5: /* one byte flipped */
            buf[u8(r) % len] ^= (uint8_t)(1u << (u8(r) % 8));
            write_file(name, buf, len);
            break;
        case 6: { /* a save's temporary file: never loaded; listed; abandoned
                     when over an hour old (see set_mtimes) or its writer's
                     PID runs no process: this one (alive), init (alive) or
                     one above any pid_max (dead) */
            unsigned who = u8(r) % 3;
            long pid = who == 0 ? (long)getpid() : who == 1 ? 1L : 0x7ffffffeL;
            snprintf(tmp, sizeof tmp, "%s.%lx-%x-%x.tmp", name, pid, u8(r), u8(r));
            write_file(tmp, buf, u8(r) % 2 ? len : len / 2);
            break;
        }
        case 13: { /* a fifo named like a blob: never opened (it would block) */
            char p[512];
            hex_name(r, name);
            path_in(p, sizeof p, name);
            unlink(p);
            rmdir(p);
            if (mkfifo(p, 0644) != 0) FAIL("mkfifo: %s", strerror(errno));
            break;
        }
        case 8: /* empty file named like a blob */
            hex_name(r, name);
            write_file(name, "", 0);
            break;
        case 9: { /* a directory named like a blob: ignored */
            char p[512];
            hex_name(r, name);
            path_in(p, sizeof p, name);
            unlink(p);
            mkdir(p, 0755);
            break;
        }
        case 10: { /* a symlink named like a blob, dangling or to a file here
                    * (not to a save's temporary file, which prune may sweep:
                    * rlxkv's own scratch, not a file to link to) */
            char p[512];
            DIR *d = opendir(g_dir);
            struct dirent *de;
            unsigned pick = u8(r);
            const char *target = "does-not-exist";
            char tname[256];
            if (d) {
                unsigned k = 0;
                while ((de = readdir(d)))
                    if (de->d_name[0] != '.' && !strstr(de->d_name, ".tmp") && k++ == pick % 8) {
                        snprintf(tname, sizeof tname, "%s", de->d_name);
                        target = tname;
                    }
                closedir(d);
            }
            hex_name(r, name);
            path_in(p, sizeof p, name);
            unlink(p);
            rmdir(p);
            if (symlink(target, p) != 0) FAIL("symlink: %s", strerror(errno));
            break;
        }
        default: /* odd names holding a valid blob */
            e = gen_entry(r);
            buf = encode(e, FP_A, &len);
            odd_name(r, name);
            write_file(name, buf, len);
            break;
        }
        free(buf);
        rlxkv_entry_free(e);
    }
}

/* mtimes from a small set, so that ties (seconds, nanoseconds) happen. */
static void set_mtimes(rd *r) {
    DIR *d = opendir(g_dir);
    struct dirent *de;
    char p[512];
    if (!d) FAIL("opendir");
    while ((de = readdir(d))) {
        struct timespec ts[2];
        struct stat st;
        if (de->d_name[0] == '.' && (!de->d_name[1] || !strcmp(de->d_name, ".."))) continue;
        path_in(p, sizeof p, de->d_name);
        if (lstat(p, &st) != 0 || S_ISLNK(st.st_mode)) continue;
        ts[0].tv_sec = ts[1].tv_sec = 1700000000 + (time_t)(u8(r) % 3);
        ts[0].tv_nsec = ts[1].tv_nsec = (long)(u8(r) % 2) * 1000;
        /* Some temporary files are a minute old: a save still running. */
        if (strstr(de->d_name, ".tmp") && u8(r) % 2) ts[0].tv_sec = ts[1].tv_sec = time(NULL) - 60;
        if (utimensat(AT_FDCWD, p, ts, 0) != 0) FAIL("utimensat: %s", strerror(errno));
    }
    closedir(d);
}

/* ---- the expected view -------------------------------------------------------- */

/* An independent reading of FORMAT.md and FORMATS.md. */
typedef struct parsed {
    int magic_ok;      /* at least 8 bytes and a magic */
    int has_fp;        /* at least 16 bytes */
    int valid;         /* a whole, consistent blob */
    uint64_t fp;
    size_t vsize;      /* bytes per value: 4 (RLXKV001) or 2 (RLXKVF16) */
    size_t n_tokens, n_floats;
    uint32_t tokens[64];
    int tokens_fit;    /* n_tokens <= 64: tokens[] holds them */
} parsed;

static uint64_t le64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

static void parse(const uint8_t *b, size_t len, parsed *o) {
    uint64_t past, nt, nl, at = 32, floats = 0;
    memset(o, 0, sizeof *o);
    o->magic_ok = len >= 8 && (!memcmp(b, "RLXKV001", 8) || !memcmp(b, "RLXKVF16", 8));
    if (!o->magic_ok) return;
    o->vsize = b[5] == 'F' ? 2 : 4;
    o->has_fp = len >= 16;
    if (!o->has_fp) return;
    o->fp = le64(b + 8);
    if (len < 32) return;
    past = le64(b + 16);
    nt = le64(b + 24);
    if (past != nt || nt > (len - 32) / 8) return;
    for (uint64_t i = 0; i < nt; i++, at += 8) {
        uint64_t t = le64(b + at);
        if (t > 0xffffffffu) return;
        if (i < 64) o->tokens[i] = (uint32_t)t;
    }
    if (len - at < 8) return;
    nl = le64(b + at);
    at += 8;
    if (nl > len || nl > RLXKV_MAX_LAYERS) return; /* (no input here reaches the limit) */
    for (uint64_t k = 0; k < 2 * nl; k++) {
        uint64_t bl;
        if (len - at < 8) return;
        bl = le64(b + at);
        at += 8;
        if (bl > (len - at) / o->vsize) return;
        at += o->vsize * bl;
        floats += bl;
    }
    if (at != len) return;
    o->valid = 1;
    o->n_tokens = (size_t)nt;
    o->n_floats = (size_t)floats;
    o->tokens_fit = nt <= 64;
}

enum { K_IGNORED, K_VALID_A, K_STALE_LOAD, K_FOREIGN, K_CORRUPT };

typedef struct xfile {
    char name[256];
    int considered;     /* a regular file (after symlinks) named *.rlxkv, < 48 chars (RLXKV_PAGE_NAME_CAP) */
    int temp;           /* a regular file named as a save's temporary */
    int is_file;        /* a regular file (after symlinks) */
    int64_t mtime;
    long mtime_ns;
    size_t len;
    uint8_t *data;
    parsed p;
    int name_ok;        /* valid and named after its fingerprint and tokens */
    int load_kind;      /* K_*: what load should make of it */
    int list_status;    /* rlxkv_blob_status */
} xfile;

/* The names rlxkv_store_save gives its temporary files:
 * <16 lowercase hex>.rlxkv.<hex>-<hex>-<hex>.tmp (FORMAT of store.c). */
static int save_temp_name(const char *n) {
    static const char hex[] = "0123456789abcdef";
    size_t k = strspn(n, hex);
    if (k != 16 || strncmp(n + 16, ".rlxkv.", 7)) return 0;
    n += 23;
    for (int part = 0; part < 3; part++) {
        k = strspn(n, hex);
        if (!k) return 0;
        n += k;
        if (part < 2 && *n++ != '-') return 0;
    }
    return !strcmp(n, ".tmp");
}

typedef struct view {
    xfile f[64];
    size_t n, n_considered, n_temps;
} view;

/* Whether no live save can own the temporary file x (store.c's rule, with
 * the OS as the oracle of liveness). */
static int temp_abandoned(const xfile *x) {
    const char *p = strstr(x->name, ".rlxkv.") + 7;
    unsigned long pid = strtoul(p, NULL, 16);
    if ((int64_t)time(NULL) - x->mtime > 3600) return 1;
    return pid >= 1 && pid <= 0x7fffffff && (pid_t)pid != getpid() && kill((pid_t)pid, 0) != 0 &&
           errno == ESRCH;
}

static void free_view(view *v) {
    for (size_t i = 0; i < v->n; i++) free(v->f[i].data);
    v->n = 0;
}

static uint8_t *slurp(const char *p, size_t *len) {
    FILE *fh = fopen(p, "rb");
    uint8_t *buf = NULL;
    size_t cap = 0, n = 0, got;
    *len = 0;
    if (!fh) return NULL;
    do {
        if (n == cap) {
            cap = cap ? 2 * cap : 4096;
            buf = realloc(buf, cap);
            if (!buf) abort();
        }
        got = fread(buf + n, 1, cap - n, fh);
        n += got;
    } while (got);
    fclose(fh);
    *len = n;
    return buf;
}

static void take_view(view *v) {
    DIR *d = opendir(g_dir);
    struct dirent *de;
    char p[512];
    v->n = v->n_considered = v->n_temps = 0;
    if (!d) FAIL("opendir");
    while ((de = readdir(d))) {
        xfile *x;
        struct stat st;
        size_t nl = strlen(de->d_name);
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        if (v->n == 64) FAIL("too many files");
        x = &v->f[v->n++];
        memset(x, 0, sizeof *x);
        snprintf(x->name, sizeof x->name, "%s", de->d_name);
        path_in(p, sizeof p, de->d_name);
        if (stat(p, &st) != 0 || !S_ISREG(st.st_mode)) continue;
        x->is_file = 1;
        x->considered = nl > 6 && nl < RLXKV_PAGE_NAME_CAP && !strcmp(de->d_name + nl - 6, ".rlxkv");
        x->temp = save_temp_name(de->d_name);
        x->mtime = (int64_t)st.st_mtime;
        x->mtime_ns = st.st_mtim.tv_nsec;
        x->data = slurp(p, &x->len);
        parse(x->data, x->len, &x->p);
        if (x->p.valid && x->p.tokens_fit) {
            char want[32];
            rlxkv_blob_name(x->p.fp, x->p.tokens, x->p.n_tokens, want);
            x->name_ok = !strcmp(want, x->name);
        }
        if (x->temp) {
            x->load_kind = K_IGNORED;
            x->list_status = temp_abandoned(x) ? RLXKV_BLOB_ABANDONED : RLXKV_BLOB_TEMP;
            v->n_temps++;
            continue;
        }
        if (!x->considered) {
            x->load_kind = K_IGNORED;
            continue;
        }
        v->n_considered++;
        /* One judge: valid or not first, then the name, then the fingerprint. */
        if (!x->p.valid) x->load_kind = K_CORRUPT;
        else if (!x->name_ok) x->load_kind = K_FOREIGN;
        else x->load_kind = x->p.fp == FP_A ? K_VALID_A : K_STALE_LOAD;
        x->list_status = x->load_kind == K_CORRUPT   ? RLXKV_BLOB_CORRUPT
                         : x->load_kind == K_FOREIGN ? RLXKV_BLOB_FOREIGN
                         : x->p.fp == FP_A           ? RLXKV_BLOB_OK
                                                     : RLXKV_BLOB_STALE;
    }
    closedir(d);
    if (getenv("FUZZ_STORE_DEBUG"))
        for (size_t i = 0; i < v->n; i++)
            fprintf(stderr, "  %-34s considered %d mtime %lld.%09ld len %zu load_kind %d list %d\n",
                    v->f[i].name, v->f[i].considered, (long long)v->f[i].mtime, v->f[i].mtime_ns,
                    v->f[i].len, v->f[i].load_kind, v->f[i].list_status);
}

static const xfile *find_file(const view *v, const char *name) {
    for (size_t i = 0; i < v->n; i++)
        if (!strcmp(v->f[i].name, name)) return &v->f[i];
    return NULL;
}

/* ---- checks -------------------------------------------------------------------- */

/* A blob's name is rlxkv_hash64 of its tokens as little-endian u32 bytes,
 * seeded with the fingerprint (rlxkv.h, test_store). */
static void check_name_hash(const rlxkv_entry *e, uint64_t fp) {
    uint8_t b[4 * 64];
    char name[32], want[32];
    size_t n = rlxkv_entry_n_tokens(e);
    if (n > 64) return;
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < 4; k++) b[4 * i + k] = (uint8_t)(rlxkv_entry_tokens(e)[i] >> (8 * k));
    rlxkv_blob_name(fp, rlxkv_entry_tokens(e), n, name);
    snprintf(want, sizeof want, "%016llx.rlxkv", (unsigned long long)rlxkv_hash64(b, 4 * n, fp));
    if (strcmp(name, want)) FAIL("blob name %s, hash64 gives %s", name, want);
}

/* Every entry of c is clean and its file under c's fingerprint holds exactly
 * its encoding (only_clean: check the clean ones alone). Returns the number
 * checked. */
static size_t entries_match_files(const rlxkv_cache *c, int only_clean) {
    size_t k = 0;
    for (const rlxkv_entry *e = rlxkv_cache_next(c, NULL); e; e = rlxkv_cache_next(c, e)) {
        char name[32], p[512];
        uint8_t *enc, *file;
        size_t elen, flen;
        if (rlxkv_cache_is_dirty(c, e)) {
            if (only_clean) continue;
            FAIL("an entry is still dirty");
        }
        check_name_hash(e, rlxkv_cache_fingerprint(c));
        rlxkv_blob_name(rlxkv_cache_fingerprint(c), rlxkv_entry_tokens(e), rlxkv_entry_n_tokens(e), name);
        path_in(p, sizeof p, name);
        file = slurp(p, &flen);
        if (!file) FAIL("clean entry of %zu tokens has no file %s", rlxkv_entry_n_tokens(e), name);
        enc = encode(e, rlxkv_cache_fingerprint(c), &elen);
        if (elen != flen || memcmp(enc, file, flen))
            FAIL("entry %s differs from its file (%zu vs %zu bytes)", name, elen, flen);
        free(enc);
        free(file);
        k++;
    }
    return k;
}

static const view *g_sort_view;
static int cmp_newest(const void *a, const void *b) {
    const xfile *x = &g_sort_view->f[*(const size_t *)a], *y = &g_sort_view->f[*(const size_t *)b];
    if (x->mtime != y->mtime) return x->mtime > y->mtime ? -1 : 1;
    if (x->mtime_ns != y->mtime_ns) return x->mtime_ns > y->mtime_ns ? -1 : 1;
    return strcmp(y->name, x->name); /* store.c: the reverse of prune's oldest first */
}
static int cmp_oldest(const void *a, const void *b) {
    const xfile *x = &g_sort_view->f[*(const size_t *)a], *y = &g_sort_view->f[*(const size_t *)b];
    if (x->mtime != y->mtime) return x->mtime < y->mtime ? -1 : 1;
    if (x->mtime_ns != y->mtime_ns) return x->mtime_ns < y->mtime_ns ? -1 : 1;
    return strcmp(x->name, y->name);
}

static void check_load(const view *v, rlxkv_cache *c, size_t cap, int was_empty) {
    rlxkv_load_report rep;
    size_t valid = 0, stale = 0, corrupt = 0, foreign = 0, order[64], n_order = 0;
    int rc;
    rlxkv_store *s;
    rlxkv_io io = fuzz_io();

    g_phase = "load";
    s = rlxkv_store_open(g_dir, &io, &rc);
    if (!s) FAIL("store_open: %d", rc);
    for (size_t i = 0; i < v->n; i++) {
        if (!v->f[i].considered) continue;
        valid += v->f[i].load_kind == K_VALID_A;
        stale += v->f[i].load_kind == K_STALE_LOAD;
        corrupt += v->f[i].load_kind == K_CORRUPT;
        foreign += v->f[i].load_kind == K_FOREIGN;
        if (v->f[i].load_kind == K_VALID_A) order[n_order++] = i;
    }
    memset(&rep, 0x5a, sizeof rep);
    rc = rlxkv_store_load(s, c, &rep);
    if (rc != RLXKV_OK) FAIL("store_load: %d", rc);
    if (getenv("FUZZ_STORE_DEBUG")) {
        fprintf(stderr, "  load cap %zu: loaded %llu stale %llu corrupt %llu skipped %llu foreign %llu bytes %llu\n",
                cap, (unsigned long long)rep.loaded, (unsigned long long)rep.stale,
                (unsigned long long)rep.corrupt, (unsigned long long)rep.skipped,
                (unsigned long long)rep.foreign, (unsigned long long)rep.bytes);
        for (const rlxkv_entry *e = rlxkv_cache_next(c, NULL); e; e = rlxkv_cache_next(c, e)) {
            char name[32];
            rlxkv_blob_name(FP_A, rlxkv_entry_tokens(e), rlxkv_entry_n_tokens(e), name);
            fprintf(stderr, "  cache: %s tokens %zu kv %zu pinned %d dirty %d\n", name,
                    rlxkv_entry_n_tokens(e), rlxkv_entry_kv_bytes(e), rlxkv_cache_is_pinned(c, e),
                    rlxkv_cache_is_dirty(c, e));
        }
    }
    if (rep.loaded + rep.stale + rep.corrupt + rep.skipped + rep.foreign + rep.too_large +
            rep.unreadable + rep.shape != v->n_considered)
        FAIL("the counts do not sum to the %zu files", v->n_considered);
    if (rep.too_large || rep.unreadable || rep.shape) FAIL("too large, unreadable or shape counted");
    if (rep.stale != stale) FAIL("stale %llu, expected %zu", (unsigned long long)rep.stale, stale);
    if (rep.corrupt != corrupt) FAIL("corrupt %llu, expected %zu", (unsigned long long)rep.corrupt, corrupt);
    if (rep.foreign != foreign) FAIL("foreign %llu, expected %zu", (unsigned long long)rep.foreign, foreign);
    if (rep.loaded + rep.skipped != valid) FAIL("loaded + skipped != valid %zu", valid);

    if (was_empty) {
        /* Newest first while the cap holds them (at least one unless cap
         * is 0); they come out most recent first. */
        size_t held = 0, held_bytes = 0, bytes = 0;
        const rlxkv_entry *e;
        rlxkv_stats st;
        g_sort_view = v;
        qsort(order, n_order, sizeof *order, cmp_newest);
        for (size_t j = 0; j < n_order && cap; j++) {
            size_t kv = v->f[order[j]].p.vsize * v->f[order[j]].p.n_floats;
            if (held && (held_bytes > cap || kv > cap - held_bytes)) break;
            held++;
            held_bytes += kv;
        }
        if (rep.loaded != held) FAIL("loaded %llu, expected %zu (cap %zu)", (unsigned long long)rep.loaded, held, cap);
        if (rep.bytes != held_bytes) FAIL("loaded bytes %llu, expected %zu", (unsigned long long)rep.bytes, held_bytes);
        rlxkv_cache_stats(c, &st);
        REQUIRE(st.entries == held && st.bytes == held_bytes);
        e = rlxkv_cache_next(c, NULL);
        for (size_t j = 0; j < held; j++, e = rlxkv_cache_next(c, e)) {
            char name[32];
            REQUIRE(e != NULL);
            rlxkv_blob_name(FP_A, rlxkv_entry_tokens(e), rlxkv_entry_n_tokens(e), name);
            if (strcmp(name, v->f[order[j]].name))
                FAIL("recency #%zu is %s, expected %s", j, name, v->f[order[j]].name);
            bytes += rlxkv_entry_kv_bytes(e);
        }
        REQUIRE(e == NULL);
        REQUIRE(bytes == held_bytes);
    }
    /* Every clean entry comes from a file, byte for byte. */
    {
        size_t clean = entries_match_files(c, 1);
        if (was_empty && clean != rep.loaded) FAIL("%zu clean entries, loaded %llu", clean, (unsigned long long)rep.loaded);
        if (clean > rep.loaded) FAIL("%zu clean entries, loaded only %llu", clean, (unsigned long long)rep.loaded);
    }

    /* store_read agrees with the classification: a file read by name is
     * judged as load judges it, then read whatever its name. */
    g_phase = "read";
    for (size_t i = 0; i < v->n; i++) {
        const xfile *x = &v->f[i];
        rlxkv_entry *e = NULL;
        uint64_t fa = FP_A;
        if (!x->considered) continue;
        rc = rlxkv_store_read(s, x->name, &fa, &e);
        if (!x->p.valid) {
            if (rc >= 0 || e) FAIL("read %s (corrupt) gave %d", x->name, rc);
        } else if (x->p.fp == FP_A) {
            REQUIRE(rc == RLXKV_OK && e);
        } else {
            REQUIRE(rc == RLXKV_STALE && !e);
        }
        rlxkv_entry_free(e);
        e = NULL;
        rc = rlxkv_store_read(s, x->name, NULL, &e);
        if ((rc == RLXKV_OK) != x->p.valid) FAIL("read %s without fingerprint gave %d", x->name, rc);
        if (rc == RLXKV_OK) {
            size_t elen;
            uint8_t *enc = encode(e, x->p.fp, &elen);
            REQUIRE(elen == x->len && !memcmp(enc, x->data, elen));
            free(enc);
        } else {
            REQUIRE(rc < 0 && !e);
        }
        rlxkv_entry_free(e);
    }
    {
        rlxkv_entry *e = (rlxkv_entry *)1;
        REQUIRE(rlxkv_store_read(s, "../etc/passwd", NULL, &e) == RLXKV_ERR_INVALID && !e);
        REQUIRE(rlxkv_store_read(s, "..", NULL, &e) == RLXKV_ERR_INVALID && !e);
        REQUIRE(rlxkv_store_read(s, "ffffffffffffffff.nothere", NULL, &e) == RLXKV_ERR_NOTFOUND);
    }
    rlxkv_store_close(s);
}

static void check_list(rd *r, const view *v, rlxkv_store *s) {
    rlxkv_blob_info *info = NULL;
    size_t n = 12345;
    int rc;
    g_phase = "list";
    unsigned any = u8(r) % 2 ? RLXKV_ANY_FINGERPRINT : 0;
    rc = rlxkv_store_list(s, FP_A, any, &info, &n);
    if (rc) FAIL("store_list: %d", rc);
    if (n != v->n_considered + v->n_temps)
        FAIL("list has %zu, expected %zu + %zu temporaries", n, v->n_considered, v->n_temps);
    for (size_t i = 0; i < n; i++) {
        const rlxkv_blob_info *b = &info[i];
        const xfile *x = find_file(v, b->name);
        int want = x ? x->list_status : -1;
        if (!x || !(x->considered || x->temp)) FAIL("list names %s, not a considered file", b->name);
        if (i) REQUIRE(strcmp(info[i - 1].name, b->name) < 0);
        REQUIRE(b->file_bytes == x->len);
        REQUIRE(b->mtime == x->mtime && b->mtime_ns == x->mtime_ns);
        if (any && want == RLXKV_BLOB_STALE) want = RLXKV_BLOB_OK;
        if (b->status != want)
            FAIL("%s: status %d, expected %d (error %d)", b->name, b->status, want, b->error);
        if (b->status == RLXKV_BLOB_CORRUPT) {
            REQUIRE(b->error < 0 && b->n_tokens == 0 && b->fingerprint == 0 && b->dtype == -1);
        } else if (x->temp) {
            REQUIRE(b->error == 0 && b->n_tokens == 0 && b->fingerprint == 0);
        } else {
            REQUIRE(b->error == 0 && b->n_tokens == x->p.n_tokens && b->fingerprint == x->p.fp);
            REQUIRE(b->kv_bytes == x->p.vsize * x->p.n_floats);
            REQUIRE(b->dtype == (x->p.vsize == 2 ? RLXKV_F16 : RLXKV_F32));
        }
    }
    free(info);
}

/* Returns whether every file of keep's entries is still there. */
static int check_prune(rd *r, const view *v, rlxkv_store *s, const rlxkv_cache *keep) {
    unsigned flags = u8(r) % 8; /* DRY_RUN | KEEP_STALE | ANY_FINGERPRINT */
    uint64_t max_bytes, counted = 0, want_removed = 0, want_removed_bytes = 0, blob_bytes = 0,
                        temps_gone = 0, temps_gone_bytes = 0, temps_kept = 0, temps_kept_bytes = 0;
    size_t idx[64], n_ok = 0;
    int removed[64] = {0};
    rlxkv_prune_report rep;
    static view after;
    int rc, any = (flags & RLXKV_PRUNE_ANY_FINGERPRINT) != 0;
    unsigned mb = u8(r);

    g_phase = "prune";
    max_bytes = mb < 64 ? UINT64_MAX : (uint64_t)mb * (1 + u8(r) % 4);
    for (size_t i = 0; i < v->n; i++) {
        const xfile *x = &v->f[i];
        int guarded = 0, status = x->list_status;
        if (x->temp) {
            if (status == RLXKV_BLOB_ABANDONED) {
                removed[i] = 1;
                temps_gone++;
                temps_gone_bytes += x->len;
            } else {
                counted += x->len; /* a save that may be running counts */
                temps_kept++;
                temps_kept_bytes += x->len;
            }
            continue;
        }
        if (!x->considered) continue;
        blob_bytes += x->len;
        if (keep)
            for (const rlxkv_entry *e = rlxkv_cache_next(keep, NULL); e; e = rlxkv_cache_next(keep, e)) {
                char name[32];
                rlxkv_blob_name(rlxkv_cache_fingerprint(keep), rlxkv_entry_tokens(e),
                                rlxkv_entry_n_tokens(e), name);
                guarded |= !strcmp(name, x->name);
            }
        if (any && status == RLXKV_BLOB_STALE) status = RLXKV_BLOB_OK;
        if (status == RLXKV_BLOB_OK) {
            counted += x->len;
            if (!guarded) idx[n_ok++] = i;
        } else if (!guarded && (status == RLXKV_BLOB_CORRUPT ||
                                (status == RLXKV_BLOB_STALE && !(flags & RLXKV_PRUNE_KEEP_STALE)))) {
            removed[i] = 1;
        } /* foreign: never */
    }
    g_sort_view = v;
    qsort(idx, n_ok, sizeof *idx, cmp_oldest);
    for (size_t j = 0; j < n_ok && counted > max_bytes; j++) {
        removed[idx[j]] = 1;
        counted -= v->f[idx[j]].len;
    }
    for (size_t i = 0; i < v->n; i++)
        if (removed[i] && !v->f[i].temp) {
            want_removed++;
            want_removed_bytes += v->f[i].len;
        }

    memset(&rep, 0x5a, sizeof rep);
    rc = rlxkv_store_prune(s, FP_A, max_bytes, flags, keep, &rep);
    if (rc) FAIL("prune: %d", rc);
    if (rep.removed != want_removed || rep.removed_bytes != want_removed_bytes)
        FAIL("removed %llu (%llu bytes), expected %llu (%llu bytes); flags %u max %llu",
             (unsigned long long)rep.removed, (unsigned long long)rep.removed_bytes,
             (unsigned long long)want_removed, (unsigned long long)want_removed_bytes, flags,
             (unsigned long long)max_bytes);
    REQUIRE(rep.kept == v->n_considered - want_removed);
    REQUIRE(rep.kept_bytes == blob_bytes - want_removed_bytes);
    REQUIRE(rep.temps_removed == temps_gone && rep.temps_removed_bytes == temps_gone_bytes);
    REQUIRE(rep.temps_kept == temps_kept && rep.temps_kept_bytes == temps_kept_bytes);

    take_view(&after);
    for (size_t i = 0; i < v->n; i++) {
        const xfile *x = &v->f[i], *y = find_file(&after, x->name);
        int gone = removed[i] && !(flags & RLXKV_PRUNE_DRY_RUN);
        if (gone && y) FAIL("%s should be gone", x->name);
        if (!gone && !y) FAIL("%s should still be there", x->name);
    }
    REQUIRE(after.n + (flags & RLXKV_PRUNE_DRY_RUN ? 0 : want_removed + temps_gone) == v->n);
    free_view(&after);
    return keep || (flags & RLXKV_PRUNE_DRY_RUN);
}

/* Flush a cache then load the directory into a fresh one: every entry
 * comes back the same. */
static void check_flush_reload(rlxkv_store *s, rlxkv_cache *c) {
    rlxkv_cache *c2;
    rlxkv_load_report rep;
    int rc;
    g_phase = "flush";
    rc = rlxkv_store_flush(s, c);
    if (rc) FAIL("flush: %d", rc);
    entries_match_files(c, 0);
    g_phase = "reload";
    c2 = rlxkv_cache_new(SIZE_MAX, FP_A);
    REQUIRE(c2);
    rc = rlxkv_store_load(s, c2, &rep);
    if (rc) FAIL("reload: %d", rc);
    for (const rlxkv_entry *e = rlxkv_cache_next(c, NULL); e; e = rlxkv_cache_next(c, e)) {
        const rlxkv_entry *x = rlxkv_cache_get(c2, rlxkv_entry_tokens(e), rlxkv_entry_n_tokens(e));
        if (!x) FAIL("entry of %zu tokens not reloaded", rlxkv_entry_n_tokens(e));
        REQUIRE(rlxkv_entry_n_values(x) == rlxkv_entry_n_values(e));
        REQUIRE(rlxkv_entry_n_layers(x) == rlxkv_entry_n_layers(e));
        for (size_t b = 0; b < 2 * rlxkv_entry_n_layers(e); b++)
            REQUIRE(rlxkv_entry_block_len(x, b) == rlxkv_entry_block_len(e, b));
        if (rlxkv_entry_n_values(e))
            REQUIRE(!memcmp(rlxkv_entry_data(x), rlxkv_entry_data(e), rlxkv_entry_kv_bytes(e)));
        REQUIRE(!rlxkv_cache_is_dirty(c2, x));
    }
    entries_match_files(c2, 0);
    rlxkv_cache_free(c2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    rd r = {data, size, 0};
    static view v; /* large: keep it off the stack */
    rlxkv_cache *c;
    rlxkv_store *s;
    rlxkv_io io = fuzz_io();
    unsigned chaos = u8(&r), capk = u8(&r), pre = u8(&r) % 4;
    size_t cap = capk % 4 == 0 ? 0 : capk % 4 == 1 ? SIZE_MAX : (size_t)(capk >> 2) * 4;
    int rc, kept;

    g_chaos = chaos & 1 ? (uint64_t)chaos << 32 | 1 : 0;
    g_phase = "files";
    clear_dir();
    make_files(&r);
    set_mtimes(&r);
    take_view(&v);

    c = rlxkv_cache_new(cap, FP_A);
    REQUIRE(c);
    /* Entries already in the cache (some pinned), whose tokens may collide
     * with the files'. */
    for (unsigned i = 0; i < pre; i++) {
        rlxkv_entry *e = gen_entry(&r);
        uint32_t t[MAX_TOK];
        size_t n = rlxkv_entry_n_tokens(e);
        memcpy(t, rlxkv_entry_tokens(e), n * sizeof *t);
        if (rlxkv_cache_put(c, e) == RLXKV_OK && u8(&r) % 2) rlxkv_cache_pin(c, t, n);
    }
    {
        rlxkv_stats st;
        rlxkv_cache_stats(c, &st);
        check_load(&v, c, cap, st.entries == 0);
    }

    s = rlxkv_store_open(g_dir, &io, &rc);
    if (!s) FAIL("store_open: %d", rc);
    check_list(&r, &v, s);
    kept = check_prune(&r, &v, s, u8(&r) % 2 ? c : NULL);
    free_view(&v);
    /* Loaded entries are clean: their files must have survived the prune
     * for the flush to leave a complete directory. */
    if (kept && u8(&r) % 2) check_flush_reload(s, c);
    rlxkv_store_close(s);
    rlxkv_cache_free(c);
    return 0;
}
