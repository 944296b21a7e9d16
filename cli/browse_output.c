/*
 * What lode ls, find, diff and dump share (docs/browsing.md): opening a snapshot by id,
 * and an entry in text and in JSON, so that each command (and the page) shows an entry
 * the same way.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "cli.h"

int cli_browse_open(const char *cmd, struct storage *st, const struct storage_opts *so,
                    struct browse *b, const char *id)
{
    struct util_err e = {0};
    int rc = storage_open_keyed(st, so, &e);
    if (rc != 0) {
        fprintf(stderr, "lode %s: %s\n", cmd, e.msg);
        return cli_exit_code(rc);
    }
    if ((rc = browse_open(b, st, id, &e)) != 0) {
        fprintf(stderr, "lode %s: %s\n", cmd, e.msg);
        storage_close(st);
        /* An id that is not one is a usage error, as lode restore says it. */
        return rc == UTIL_EINVAL ? CLI_USAGE : cli_exit_code(rc);
    }
    return CLI_OK;
}

void cli_print_path(FILE *f, const char *p)
{
    /* A name may hold any byte but '/' and NUL: control characters are escaped so that
     * one entry is one line; other bytes (UTF-8) are written as they are. */
    for (const unsigned char *c = (const unsigned char *)p; *c; c++) {
        if (*c == '\\')
            fputs("\\\\", f);
        else if (*c == '\n')
            fputs("\\n", f);
        else if (*c == '\t')
            fputs("\\t", f);
        else if (*c < 0x20 || *c == 0x7f)
            fprintf(f, "\\x%02x", *c);
        else
            fputc(*c, f);
    }
}

static const char *cli_browse_type_name(enum repo_ftype t)
{
    switch (t) {
    case REPO_FT_FILE:
        return "file";
    case REPO_FT_DIR:
        return "dir";
    case REPO_FT_SYMLINK:
        return "symlink";
    case REPO_FT_FIFO:
        return "fifo";
    case REPO_FT_SOCKET:
        return "socket";
    case REPO_FT_CHAR:
        return "char";
    case REPO_FT_BLOCK:
        return "block";
    }
    return "?";
}

/* "drwxr-xr-x" (ls -l's letters, set-id and sticky bits included). */
static void cli_browse_mode(const struct repo_file *f, char out[11])
{
    static const char rwx[] = "rwxrwxrwx";
    char t = (char)f->type;
    out[0] = t == REPO_FT_FILE ? '-' : t == REPO_FT_FIFO ? 'p' : t;
    for (int i = 0; i < 9; i++)
        out[1 + i] = f->mode & (0400u >> i) ? rwx[i] : '-';
    if (f->mode & 04000)
        out[3] = f->mode & 0100 ? 's' : 'S';
    if (f->mode & 02000)
        out[6] = f->mode & 010 ? 's' : 'S';
    if (f->mode & 01000)
        out[9] = f->mode & 01 ? 't' : 'T';
    out[10] = '\0';
}

void cli_browse_entry_text(FILE *out, const struct repo_file *f)
{
    char mode[11], t[UTIL_TIME_BUF];
    cli_browse_mode(f, mode);
    if (f->mtime_sec == 0 && f->mode == 0)
        snprintf(t, sizeof(t), "%-20s", "-"); /* a directory the backup did not record */
    else
        util_format_utc(f->mtime_sec, t, sizeof(t));
    fprintf(out, "%s %6" PRIu32 " %6" PRIu32 " %12" PRIu64 " %s ", mode, f->uid, f->gid, f->size,
            t);
    cli_print_path(out, f->path);
    if (f->type == REPO_FT_SYMLINK && f->target != NULL) {
        fputs(" -> ", out);
        cli_print_path(out, f->target);
    }
    if (f->link != NULL && f->link[0] != '\0') {
        fputs(" (hard link to ", out);
        cli_print_path(out, f->link);
        fputc(')', out);
    }
    fputc('\n', out);
}

json_t *cli_browse_entry_json(const struct repo_file *f)
{
    json_t *o = json_object();
    const char *slash = strrchr(f->path, '/');
    char mode[8];
    snprintf(mode, sizeof(mode), "%04" PRIo32, f->mode);
    json_object_set_new(o, "path", cli_json_string_lossy(f->path));
    json_object_set_new(o, "name", cli_json_string_lossy(slash && slash[1] ? slash + 1 : f->path));
    json_object_set_new(o, "type", json_string(cli_browse_type_name(f->type)));
    json_object_set_new(o, "mode", json_string(mode));
    json_object_set_new(o, "uid", json_integer((json_int_t)f->uid));
    json_object_set_new(o, "gid", json_integer((json_int_t)f->gid));
    json_object_set_new(o, "size", json_integer((json_int_t)f->size));
    if (f->mtime_sec == 0 && f->mode == 0 && f->type == REPO_FT_DIR)
        json_object_set_new(o, "mtime", json_null());
    else
        json_object_set_new(o, "mtime", cli_json_time(f->mtime_sec));
    json_object_set_new(o, "target",
                        f->type == REPO_FT_SYMLINK && f->target != NULL
                            ? cli_json_string_lossy(f->target)
                            : json_null());
    json_object_set_new(o, "link",
                        f->link != NULL && f->link[0] != '\0' ? cli_json_string_lossy(f->link)
                                                              : json_null());
    return o;
}
