/* The start of the single-file agen binary: runs agen from a per-user cache instead of unpacking
 * itself on every start (what PyInstaller --onefile does, +400-500 ms per command).
 *
 * The file is this launcher, then a zlib-compressed payload (a PyInstaller one-folder build as a
 * stream of records, written by scripts/binary/pack.py), then a fixed trailer naming the payload's
 * offset, length and build hash. On start:
 *
 *   1. cache = ${XDG_CACHE_HOME:-$HOME/.cache}/agen/<build-hash>/ (the agen folder is 0700, ours).
 *   2. Fast path: <build-hash>.ok lists every entry of the cache with its inode, size, mode, mtime
 *      and ctime as recorded right after extraction; if every lstat() still matches, exec the
 *      cached agen (argv, environment and stdin/stdout/stderr pass through; no process stays behind).
 *   3. Otherwise, under an exclusive flock on <build-hash>.lock (so concurrent first starts extract
 *      once; the others wait and then use that copy): extract into a temp folder next to the cache,
 *      checking each file's CRC-32 against the payload, rename it into place atomically (a stale or
 *      tampered copy is renamed away first), record the .ok list, exec.
 *
 * What the per-start check detects: a deleted, added, renamed, rewritten, truncated or chmod-ed
 * file or folder (any write or metadata change moves ctime, which a user cannot set back). What it
 * does not: a change made by someone who also rewrites the .ok list (they own the account; the cache
 * folder is the user's own, like ~/.local/bin), or a bit flip on disk that changes no metadata.
 * Linux only (reads /proc/self/exe). Built by scripts/build-binary with gcc, zlib linked statically.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>
#include <zlib.h>

#define MAGIC "AGENPK01"
#define TRAILER_SIZE 56 /* magic[8] offset[8] length[8] hash[32] */
#define HASH_LEN 32
#define CHUNK (1 << 20)

static char self_path[] = "/proc/self/exe";

static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("agen: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(70);
}

static uint64_t le64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

static uint32_t le32(const unsigned char *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

/* ---- the cheap per-start check ------------------------------------------------------------- */

static int stat_line(char *out, size_t cap, const char *rel, const struct stat *st) {
    return snprintf(out, cap, "%llu %lld %o %lld.%09ld %lld.%09ld %s\n", (unsigned long long)st->st_ino,
                    (long long)st->st_size, (unsigned)st->st_mode, (long long)st->st_mtim.tv_sec,
                    st->st_mtim.tv_nsec, (long long)st->st_ctim.tv_sec, st->st_ctim.tv_nsec, rel);
}

/* 1 if <ok> exists, names <hash>, and every entry it lists under <dir> still has its recorded stat. */
static int cache_ok(const char *dir, const char *ok, const char *hash) {
    FILE *f = fopen(ok, "re");
    if (!f) return 0;
    char line[8192], want[8192], path[8192];
    int good = 0;
    size_t entries = 0;
    if (!fgets(line, sizeof line, f)) goto out;
    snprintf(want, sizeof want, "agen-cache 1 %s\n", hash);
    if (strcmp(line, want) != 0) goto out;
    while (fgets(line, sizeof line, f)) {
        if (strcmp(line, "end\n") == 0) { good = entries > 0; break; }
        /* the path is the 6th field; it may contain spaces, so find it by counting separators */
        char *p = line;
        for (int i = 0; i < 5 && p; i++) { p = strchr(p, ' '); if (p) p++; }
        if (!p) goto out;
        size_t n = strlen(p);
        if (n == 0 || p[n - 1] != '\n') goto out;
        char rel[4096];
        if (n - 1 >= sizeof rel) goto out;
        memcpy(rel, p, n - 1);
        rel[n - 1] = 0;
        snprintf(path, sizeof path, "%s/%s", dir, rel);
        struct stat st;
        if (lstat(path, &st) != 0) goto out;
        stat_line(want, sizeof want, rel, &st);
        if (strcmp(want, line) != 0) goto out;
        entries++;
    }
out:
    fclose(f);
    return good;
}

/* ---- recording the .ok list after extraction ------------------------------------------------ */

static FILE *rec_out;
static size_t rec_prefix;

static int rec_one(const char *path, const struct stat *st, int type, struct FTW *ftw) {
    (void)type; (void)ftw;
    const char *rel = path[rec_prefix] ? path + rec_prefix + 1 : ".";
    char line[8192];
    stat_line(line, sizeof line, rel, st);
    return fputs(line, rec_out) < 0;
}

static void record(const char *root, const char *dir, const char *ok, const char *hash) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s/.%s.ok.%ld", root, hash, (long)getpid()); /* swept if we crash */
    rec_out = fopen(tmp, "we");
    if (!rec_out) die("cannot write %s: %s", tmp, strerror(errno));
    fprintf(rec_out, "agen-cache 1 %s\n", hash);
    rec_prefix = strlen(dir);
    if (nftw(dir, rec_one, 32, FTW_PHYS) != 0) die("cannot list the cache %s: %s", dir, strerror(errno));
    fputs("end\n", rec_out);
    if (fflush(rec_out) != 0 || fsync(fileno(rec_out)) != 0 || fclose(rec_out) != 0)
        die("cannot write %s: %s", tmp, strerror(errno));
    if (rename(tmp, ok) != 0) die("cannot write %s: %s", ok, strerror(errno));
}

/* ---- removing a stale or half-written copy --------------------------------------------------- */

static int rm_one(const char *path, const struct stat *st, int type, struct FTW *ftw) {
    (void)st; (void)ftw;
    if (type == FTW_DP) return rmdir(path) != 0 && errno != ENOENT;
    return unlink(path) != 0 && errno != ENOENT;
}

static void rm_rf(const char *path) {
    struct stat st;
    if (lstat(path, &st) != 0) return;
    if (nftw(path, rm_one, 32, FTW_DEPTH | FTW_PHYS) != 0)
        die("cannot remove %s: %s (remove it by hand)", path, strerror(errno));
}

/* Under the lock no one else extracts this build, so leftovers of crashed extractions can go. */
static void sweep(const char *root, const char *hash) {
    DIR *d = opendir(root);
    if (!d) return;
    char prefix[64], path[8192];
    snprintf(prefix, sizeof prefix, ".%s.", hash);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, prefix, strlen(prefix)) != 0) continue;
        snprintf(path, sizeof path, "%s/%s", root, e->d_name);
        rm_rf(path);
    }
    closedir(d);
}

/* ---- extraction ---------------------------------------------------------------------------- */

struct reader {
    int fd;
    uint64_t pos, end;
    z_stream z;
    unsigned char in[CHUNK];
};

/* Inflate exactly n bytes into buf; a short or corrupt payload is a damaged download. */
static void take(struct reader *r, void *buf, size_t n) {
    r->z.next_out = buf;
    r->z.avail_out = (uInt)n;
    while (r->z.avail_out > 0) {
        if (r->z.avail_in == 0) {
            uint64_t left = r->end - r->pos;
            size_t want = left < CHUNK ? (size_t)left : CHUNK;
            if (want == 0) die("this agen binary is damaged (payload ends early); download it again");
            ssize_t got = pread(r->fd, r->in, want, (off_t)r->pos);
            if (got <= 0) die("cannot read this agen binary: %s", got < 0 ? strerror(errno) : "short read");
            r->pos += (uint64_t)got;
            r->z.next_in = r->in;
            r->z.avail_in = (uInt)got;
        }
        int rc = inflate(&r->z, Z_NO_FLUSH);
        if (rc == Z_STREAM_END && r->z.avail_out > 0)
            die("this agen binary is damaged (payload ends early); download it again");
        if (rc != Z_OK && rc != Z_STREAM_END)
            die("this agen binary is damaged (%s); download it again", r->z.msg ? r->z.msg : "bad payload");
    }
}

static int safe_rel(const char *rel) {
    if (!*rel || rel[0] == '/') return 0;
    for (const char *p = rel; p; p = strchr(p, '/')) {
        if (*p == '/') p++;
        if (strncmp(p, "..", 2) == 0 && (p[2] == '/' || p[2] == 0)) return 0;
    }
    return 1;
}

static void extract(int fd, uint64_t offset, uint64_t length, const char *dest) {
    static struct reader r;
    memset(&r, 0, sizeof r);
    r.fd = fd;
    r.pos = offset;
    r.end = offset + length;
    if (inflateInit(&r.z) != Z_OK) die("cannot start zlib");
    static unsigned char buf[CHUNK];
    char rel[4096], path[8192];
    for (;;) {
        unsigned char h[19]; /* type[1] mode[4] size[8] crc[4] pathlen[2] */
        take(&r, h, sizeof h);
        char type = (char)h[0];
        if (type == 'E') break;
        uint32_t mode = le32(h + 1) & 0755;
        uint64_t size = le64(h + 5);
        uint32_t want_crc = le32(h + 13);
        size_t plen = (size_t)h[17] | ((size_t)h[18] << 8);
        if (plen == 0 || plen >= sizeof rel) die("this agen binary is damaged (bad entry); download it again");
        take(&r, rel, plen);
        rel[plen] = 0;
        if (!safe_rel(rel)) die("this agen binary is damaged (bad path %s); download it again", rel);
        snprintf(path, sizeof path, "%s/%s", dest, rel);
        if (type == 'd') {
            if (mkdir(path, mode | 0700) != 0) die("cannot create %s: %s", path, strerror(errno));
        } else if (type == 'l') {
            if (size >= sizeof buf) die("this agen binary is damaged (bad link); download it again");
            take(&r, buf, (size_t)size);
            buf[size] = 0;
            if (symlink((char *)buf, path) != 0) die("cannot create %s: %s", path, strerror(errno));
        } else if (type == 'f') {
            int out = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode | 0600);
            if (out < 0) die("cannot create %s: %s", path, strerror(errno));
            uLong crc = crc32(0L, Z_NULL, 0);
            for (uint64_t left = size; left > 0;) {
                size_t n = left < CHUNK ? (size_t)left : CHUNK;
                take(&r, buf, n);
                crc = crc32(crc, buf, (uInt)n);
                for (size_t done = 0; done < n;) {
                    ssize_t w = write(out, buf + done, n - done);
                    if (w < 0) die("cannot write %s: %s", path, strerror(errno));
                    done += (size_t)w;
                }
                left -= n;
            }
            if (close(out) != 0) die("cannot write %s: %s", path, strerror(errno));
            if ((uint32_t)crc != want_crc) die("this agen binary is damaged (%s checksum); download it again", rel);
        } else {
            die("this agen binary is damaged (entry type %d); download it again", type);
        }
    }
    inflateEnd(&r.z);
}

/* ---- main ---------------------------------------------------------------------------------- */

/* mkdir -p with 0700 for what it creates (the XDG base-directory rule). */
static void mkdir_private(const char *path) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || *p == 0) {
            char c = *p;
            *p = 0;
            if (mkdir(buf, 0700) != 0 && errno != EEXIST)
                die("cannot create the cache folder %s: %s (set XDG_CACHE_HOME to a writable folder)", buf, strerror(errno));
            *p = c;
            if (!c) break;
        }
    }
}

int main(int argc, char **argv) {
    (void)argc;
    int fd = open(self_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) die("cannot open %s: %s (this binary runs on Linux with /proc)", self_path, strerror(errno));
    struct stat me;
    if (fstat(fd, &me) != 0 || me.st_size < TRAILER_SIZE) die("this agen binary is damaged; download it again");
    unsigned char t[TRAILER_SIZE];
    if (pread(fd, t, TRAILER_SIZE, me.st_size - TRAILER_SIZE) != TRAILER_SIZE || memcmp(t, MAGIC, 8) != 0)
        die("this agen binary is damaged (no payload); download it again");
    uint64_t offset = le64(t + 8), length = le64(t + 16);
    if (offset + length + TRAILER_SIZE != (uint64_t)me.st_size) die("this agen binary is damaged (size); download it again");
    char hash[HASH_LEN + 1];
    memcpy(hash, t + 24, HASH_LEN);
    hash[HASH_LEN] = 0;
    for (int i = 0; i < HASH_LEN; i++)
        if (!strchr("0123456789abcdef", hash[i])) die("this agen binary is damaged (hash); download it again");

    char base[4096], root[4096], dir[4096], ok[4096], exe[4096], lock[4096], tmp[4096];
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (xdg && xdg[0] == '/') {
        snprintf(base, sizeof base, "%s", xdg);
    } else if (home && home[0] == '/') {
        snprintf(base, sizeof base, "%s/.cache", home);
    } else {
        die("cannot find a cache folder: set HOME or XDG_CACHE_HOME");
    }
    if (strlen(base) > 3000) die("the cache folder path %s is too long; set XDG_CACHE_HOME to a shorter one", base);
    mkdir_private(base);
    snprintf(root, sizeof root, "%s/agen", base);
    mkdir_private(root);
    struct stat rs;
    if (lstat(root, &rs) != 0 || !S_ISDIR(rs.st_mode) || rs.st_uid != geteuid() || (rs.st_mode & 022))
        die("the cache folder %s must be a folder owned by you and writable only by you (chmod 700 it, or remove it)", root);
    snprintf(dir, sizeof dir, "%s/%s", root, hash);
    snprintf(ok, sizeof ok, "%s/%s.ok", root, hash);
    snprintf(exe, sizeof exe, "%s/agen", dir);
    argv[0] = exe; /* the frozen agen finds its own folder from argv[0] */

    if (!cache_ok(dir, ok, hash)) {
        snprintf(lock, sizeof lock, "%s/%s.lock", root, hash);
        int lfd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (lfd < 0 || flock(lfd, LOCK_EX) != 0) die("cannot lock %s: %s", lock, strerror(errno));
        if (!cache_ok(dir, ok, hash)) { /* still missing or tampered once we hold the lock: (re)extract */
            sweep(root, hash);
            unlink(ok);
            char stale[4096];
            snprintf(stale, sizeof stale, "%s/.%s.stale.%ld", root, hash, (long)getpid());
            if (rename(dir, stale) != 0 && errno != ENOENT)
                die("cannot move the stale cache %s aside: %s", dir, strerror(errno));
            snprintf(tmp, sizeof tmp, "%s/.%s.new.%ld", root, hash, (long)getpid());
            if (mkdir(tmp, 0700) != 0) die("cannot create %s: %s", tmp, strerror(errno));
            extract(fd, offset, length, tmp);
            if (rename(tmp, dir) != 0) die("cannot move %s into place: %s", tmp, strerror(errno));
            record(root, dir, ok, hash);
            rm_rf(stale); /* only now, so the fresh copy never reuses the stale one's inode */
        }
        close(lfd); /* releases the lock */
    }
    close(fd);
    execv(exe, argv);
    die("cannot start %s: %s (if that folder's filesystem is mounted noexec, set XDG_CACHE_HOME to one that "
        "is not; otherwise remove %s and try again)", exe, strerror(errno), dir);
}
