/*
 * The zoneinfo directory: its version, zone names, and loading a zone from it.
 *
 * This is the only file of the module that touches the disk. A zone name becomes a
 * path only after tz_name_check() accepted it, so a policy can never make the
 * controller read outside the directory. A name missing from the directory is
 * looked up among the links of tzdata.zi ("L Europe/Kyiv Europe/Kiev"), because
 * some distributions ship the backward names only in an optional package.
 */
#include "tz/tz_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A TZif file of the tz database is a few KiB; anything this large is not one. */
#define TZ_MAX_FILE (1024 * 1024)
/* tzdata.zi is about 100 KiB. */
#define TZ_MAX_ZI (16 * 1024 * 1024)
/* Links in tzdata.zi point at zones, but a hand-made file could chain them. */
#define TZ_MAX_LINK_DEPTH 8

struct tz_db {
    char *dir;
    char version[32];
};

/* Reads a regular file of at most max bytes. UTIL_ENOENT when there is no such file. */
static int read_small_file(const char *path, size_t max, unsigned char **data, size_t *len,
                           struct util_err *err)
{
    struct stat st;
    size_t n = 0;
    int rc = 0;
    /* O_NONBLOCK: a FIFO planted in the directory must not hang the reader. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP)
            return util_err_set(err, UTIL_ENOENT, "%s: no such file", path);
        return util_err_set(err, UTIL_EIO, "%s: cannot open: %s", path, strerror(errno));
    }
    if (fstat(fd, &st) != 0) {
        rc = util_err_set(err, UTIL_EIO, "%s: cannot read: %s", path, strerror(errno));
        goto close_fd;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = util_err_set(err, UTIL_ENOENT, "%s: not a regular file", path);
        goto close_fd;
    }
    if ((uint64_t)st.st_size > max) {
        rc = util_err_set(err, UTIL_EINVAL, "%s: %lld bytes, too large", path,
                          (long long)st.st_size);
        goto close_fd;
    }
    *data = util_malloc((size_t)st.st_size + 1);
    while (n < (size_t)st.st_size) {
        ssize_t r = read(fd, *data + n, (size_t)st.st_size - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rc = util_err_set(err, UTIL_EIO, "%s: cannot read: %s", path, strerror(errno));
            free(*data);
            *data = NULL;
            goto close_fd;
        }
        if (r == 0)
            break; /* the file shrank: take what is there */
        n += (size_t)r;
    }
    (*data)[n] = '\0';
    *len = n;
close_fd:
    close(fd);
    return rc;
}

static bool version_char(int c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '.' ||
           c == '-' || c == '+' || c == '_';
}

/* Copies a version word from s (up to a space or the end of the line) when it is sane. */
static bool take_version(char *out, size_t size, const char *s, size_t len)
{
    size_t n = 0;
    while (n < len && version_char((unsigned char)s[n]))
        n++;
    if (n == 0 || n >= size || (n < len && s[n] != '\n' && s[n] != ' ' && s[n] != '\r'))
        return false;
    memcpy(out, s, n);
    out[n] = '\0';
    return true;
}

static void read_version(struct tz_db *db)
{
    unsigned char *data = NULL;
    size_t len = 0;
    char *path = util_asprintf("%s/tzdata.zi", db->dir);
    static const char prefix[] = "# version ";

    memcpy(db->version, "unknown", sizeof("unknown"));
    if (read_small_file(path, TZ_MAX_ZI, &data, &len, NULL) == 0) {
        size_t pl = sizeof(prefix) - 1;
        if (len > pl && memcmp(data, prefix, pl) == 0 &&
            take_version(db->version, sizeof(db->version), (char *)data + pl, len - pl)) {
            free(data);
            free(path);
            return;
        }
        free(data);
        data = NULL;
    }
    free(path);
    path = util_asprintf("%s/+VERSION", db->dir);
    if (read_small_file(path, 4096, &data, &len, NULL) == 0) {
        if (!take_version(db->version, sizeof(db->version), (char *)data, len))
            memcpy(db->version, "unknown", sizeof("unknown"));
        free(data);
    }
    free(path);
}

int tz_db_open(struct tz_db **out, const char *dir, struct util_err *err)
{
    struct stat st;
    *out = NULL;
    if (dir == NULL) {
        dir = getenv("LODE_ZONEINFO");
        if (dir == NULL || dir[0] == '\0')
            dir = TZ_DEFAULT_DIR;
    }
    if (dir[0] == '\0')
        return util_err_set(err, UTIL_EINVAL, "the zoneinfo directory name is empty");
    if (stat(dir, &st) != 0)
        return util_err_set(err, UTIL_ENOENT,
                            "zoneinfo directory %s: %s (install the tz database, e.g. the tzdata "
                            "package, or point LODE_ZONEINFO or --zoneinfo at one)",
                            dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return util_err_set(err, UTIL_ENOENT, "zoneinfo directory %s: not a directory", dir);
    struct tz_db *db = util_calloc(1, sizeof(*db));
    db->dir = util_strdup(dir);
    read_version(db);
    *out = db;
    return 0;
}

void tz_db_close(struct tz_db *db)
{
    if (db == NULL)
        return;
    free(db->dir);
    free(db);
}

const char *tz_db_dir(const struct tz_db *db)
{
    return db->dir;
}

const char *tz_db_version(const struct tz_db *db)
{
    return db->version;
}

int tz_name_check(const char *name, struct util_err *err)
{
    size_t len = strlen(name);
    if (len == 0)
        return util_err_set(err, UTIL_EINVAL, "the time zone name is empty");
    if (len > 255)
        return util_err_set(err, UTIL_EINVAL, "time zone name longer than 255 bytes");
    if (name[0] == '/')
        return util_err_set(err, UTIL_EINVAL,
                            "time zone \"%s\": a zone name, not a path (write e.g. Europe/Kyiv)",
                            name);
    if (strncmp(name, "right/", 6) == 0 || strncmp(name, "posix/", 6) == 0)
        return util_err_set(err, UTIL_EINVAL,
                            "time zone \"%s\": right/ and posix/ zones are not supported (write "
                            "the name without the prefix, e.g. \"%s\")",
                            name, name + 6);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)name[i];
        bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                  c == '/' || c == '_' || c == '-' || c == '+';
        if (c == '.')
            return util_err_set(err, UTIL_EINVAL,
                                "time zone \"%.255s\": '.' is not allowed in a zone name", name);
        if (!ok)
            return util_err_set(err, UTIL_EINVAL,
                                "time zone \"%.255s\": character 0x%02x is not allowed in a zone "
                                "name (letters, digits, '/', '_', '-', '+')",
                                name, c);
        if (c == '/' && (i + 1 == len || name[i + 1] == '/'))
            return util_err_set(err, UTIL_EINVAL,
                                "time zone \"%s\": empty component in the zone name", name);
    }
    return 0;
}

/*
 * The target of link `name` in tzdata.zi, or NULL. Lines are "L TARGET LINK" (the
 * compact form the tz Makefile writes); anything else is skipped.
 */
static char *find_link(const struct tz_db *db, const char *name)
{
    unsigned char *data = NULL;
    size_t len = 0;
    char *target = NULL;
    char *path = util_asprintf("%s/tzdata.zi", db->dir);
    size_t nl = strlen(name);

    if (read_small_file(path, TZ_MAX_ZI, &data, &len, NULL) != 0)
        goto free_path;
    for (const char *line = (const char *)data; line < (const char *)data + len;) {
        const char *eol = memchr(line, '\n', (size_t)((const char *)data + len - line));
        if (eol == NULL)
            eol = (const char *)data + len;
        if (eol - line > 2 && line[0] == 'L' && line[1] == ' ') {
            const char *t = line + 2;
            const char *sp = memchr(t, ' ', (size_t)(eol - t));
            if (sp != NULL && (size_t)(eol - sp - 1) == nl && memcmp(sp + 1, name, nl) == 0) {
                target = util_strndup(t, (size_t)(sp - t));
                break;
            }
        }
        line = eol + 1;
    }
    free(data);
free_path:
    free(path);
    return target;
}

/*
 * The zone or link name of tzdata.zi nearest to name (edit distance at most 2, the
 * first of equals), for "did you mean". Empty when there is none or no tzdata.zi.
 */
static void suggest(const struct tz_db *db, const char *name, char *out, size_t size)
{
    unsigned char *data = NULL;
    size_t len = 0, best = 3;
    char *path = util_asprintf("%s/tzdata.zi", db->dir);
    char word[128];

    out[0] = '\0';
    if (read_small_file(path, TZ_MAX_ZI, &data, &len, NULL) != 0)
        goto free_path;
    for (const char *line = (const char *)data; line < (const char *)data + len;) {
        const char *eol = memchr(line, '\n', (size_t)((const char *)data + len - line));
        if (eol == NULL)
            eol = (const char *)data + len;
        /* "Z NAME ..." names a zone, "L TARGET NAME" a link. */
        const char *w = NULL, *wend = NULL;
        if (eol - line > 2 && line[0] == 'Z' && line[1] == ' ') {
            w = line + 2;
            wend = memchr(w, ' ', (size_t)(eol - w));
        } else if (eol - line > 2 && line[0] == 'L' && line[1] == ' ') {
            const char *sp = memchr(line + 2, ' ', (size_t)(eol - line - 2));
            if (sp != NULL) {
                w = sp + 1;
                wend = eol;
            }
        }
        if (w != NULL && wend != NULL && (size_t)(wend - w) < sizeof(word)) {
            memcpy(word, w, (size_t)(wend - w));
            word[wend - w] = '\0';
            size_t d = util_edit_distance(name, word);
            if (d < best && strlen(word) < size) {
                best = d;
                memcpy(out, word, strlen(word) + 1);
            }
        }
        line = eol + 1;
    }
    free(data);
free_path:
    free(path);
}

/* UTIL_ENOENT with "unknown time zone", the reason, and the nearest known name. */
static int unknown_zone(const struct tz_db *db, const char *name, bool not_tzif,
                        struct util_err *err)
{
    char near[128];
    suggest(db, name, near, sizeof(near));
    return util_err_set(err, UTIL_ENOENT, "unknown time zone \"%s\" (%s %s%s)%s%s%s", name,
                        not_tzif ? "not a TZif file in" : "not in", db->dir,
                        not_tzif ? "" : " nor a link of its tzdata.zi",
                        near[0] ? "; did you mean \"" : "", near, near[0] ? "\"?" : "");
}

/*
 * Resolves name to the bytes of its file: the file itself, or through the links of
 * tzdata.zi. *data is NULL with 0 returned when the zone does not exist.
 */
static int read_zone_file(const struct tz_db *db, const char *name, unsigned char **data,
                          size_t *len, struct util_err *err)
{
    char *cur = util_strdup(name);
    int rc = 0;

    *data = NULL;
    for (int depth = 0; depth < TZ_MAX_LINK_DEPTH; depth++) {
        char *path = util_asprintf("%s/%s", db->dir, cur);
        rc = read_small_file(path, TZ_MAX_FILE, data, len, err);
        free(path);
        if (rc != UTIL_ENOENT)
            break;
        rc = 0;
        char *next = find_link(db, cur);
        if (next == NULL || tz_name_check(next, NULL) != 0) {
            free(next);
            break;
        }
        free(cur);
        cur = next;
    }
    free(cur);
    return rc;
}

int tz_db_check_zone(const struct tz_db *db, const char *name, struct util_err *err)
{
    int rc = tz_name_check(name, err);
    if (rc != 0)
        return rc;
    unsigned char *data = NULL;
    size_t len = 0;
    rc = read_zone_file(db, name, &data, &len, err);
    if (rc != 0)
        return rc;
    if (data == NULL)
        return unknown_zone(db, name, false, err);
    bool tzif = len >= 4 && memcmp(data, "TZif", 4) == 0;
    free(data);
    if (!tzif)
        return unknown_zone(db, name, true, err);
    return 0;
}

int tz_zone_load(struct tz_zone **out, const struct tz_db *db, const char *name,
                 struct util_err *err)
{
    unsigned char *data = NULL;
    size_t len = 0;
    int rc;

    *out = NULL;
    rc = tz_name_check(name, err);
    if (rc != 0)
        return rc;
    rc = read_zone_file(db, name, &data, &len, err);
    if (rc != 0)
        return rc;
    if (data == NULL)
        return unknown_zone(db, name, false, err);
    if (len < 4 || memcmp(data, "TZif", 4) != 0) {
        rc = unknown_zone(db, name, true, err);
        goto free_data;
    }
    rc = tz_zone_parse(out, name, data, len, err);
free_data:
    free(data);
    return rc;
}
