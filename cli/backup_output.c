/*
 * backup_output: what `lode backup` prints (text, or the JSON docs/commands.md gives
 * under "Storage commands") and the termination log the controller reads back into
 * the Backup's status: the same JSON, compact, at most 4096 bytes (Kubernetes' limit), errors cut
 * to fit, plus "anomaly" (the detector's rules and numbers) for a suspicious snapshot.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/backup.h"
#include "cli.h"

#define BACKUP_TERMLOG_MAX 4096

static json_t *backup_errors_json(const struct backup *b, size_t n, size_t msg_max)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < n && i < b->nerrs; i++) {
        json_t *o = json_object();
        size_t ml = strlen(b->errs[i].message);
        char *msg = util_strndup(b->errs[i].message, ml < msg_max ? ml : msg_max);
        json_object_set_new(o, "path", cli_json_string_lossy(b->errs[i].path));
        json_object_set_new(o, "message", cli_json_string_lossy(msg));
        json_array_append_new(arr, o);
        free(msg);
    }
    return arr;
}

/* spec.hooks as they ran (docs/commands.md): the output's tail is cut to tail_max bytes
 * (the termination log has 4096 bytes for everything). */
static json_t *backup_hooks_json(const struct backup_result *r, size_t tail_max)
{
    json_t *a = json_array();
    for (size_t i = 0; i < r->nhooks; i++) {
        const struct hook_outcome *o = &r->hooks[i];
        size_t n = strlen(o->r.tail);
        json_t *h = json_pack("{s:s, s:s, s:s}", "name", o->name, "phase", o->phase, "result",
                              o->r.ok          ? "succeeded"
                              : o->r.timed_out ? "timedOut"
                                               : "failed");
        json_object_set_new(h, "exitCode",
                            o->r.exit_code >= 0 ? json_integer(o->r.exit_code) : json_null());
        json_object_set_new(h, "continued", json_boolean(o->continued));
        json_object_set_new(h, "outputBytes", json_integer((json_int_t)o->r.output_bytes));
        json_object_set_new(h, "outputTail",
                            cli_json_string_lossy(o->r.tail + (n > tail_max ? n - tail_max : 0)));
        if (!o->r.ok)
            json_object_set_new(h, "error", cli_json_string_lossy(o->r.error));
        json_array_append_new(a, h);
    }
    return a;
}

static json_t *backup_json(const struct backup *b, const struct backup_result *r, size_t nerrs,
                           size_t msg_max, bool termlog)
{
    json_t *root = json_object();
    if (r->written) {
        json_t *s = json_object();
        char *pol = util_asprintf("%s/%s", b->src.ns, b->src.policy);
        json_object_set_new(s, "id", json_string(b->id));
        json_object_set_new(s, "policy", cli_json_string_lossy(pol));
        json_object_set_new(s, "host", cli_json_string_lossy(b->src.host));
        json_object_set_new(s, "time", cli_json_time(r->time));
        json_object_set_new(s, "incomplete", json_boolean(b->nerrs > 0));
        json_object_set_new(s, "suspicious", json_boolean(r->suspicious));
        json_object_set_new(s, "files", json_integer((json_int_t)b->files));
        json_object_set_new(s, "bytes", json_integer((json_int_t)b->bytes));
        json_object_set_new(s, "newBytes", json_integer((json_int_t)b->new_bytes));
        json_object_set_new(s, "uploadedBytes", json_integer((json_int_t)b->uploaded_bytes));
        json_object_set_new(s, "excluded", repo_excluded_json(b->excluded));
        if (r->pinned != NULL)
            json_object_set_new(s, "pinned", cli_json_string_lossy(r->pinned));
        json_object_set_new(root, "snapshot", s);
        free(pol);
    } else {
        json_object_set_new(root, "snapshot", json_null());
        json_object_set_new(root, "error", cli_json_string_lossy(r->error ? r->error : ""));
    }
    if (r->written && r->error != NULL) /* an after-hook failed with onError: fail */
        json_object_set_new(root, "error", cli_json_string_lossy(r->error));
    json_object_set_new(root, "errors", backup_errors_json(b, nerrs, msg_max));
    if (r->nhooks > 0)
        json_object_set_new(root, "hooks", backup_hooks_json(r, termlog ? 96 : HOOK_TAIL));
    /* Only in the termination log (the printed JSON is docs/commands.md's, exactly): the
     * rules that fired, for the Backup's Suspicious condition. */
    if (termlog && r->written && r->suspicious && r->anomaly[0] != '\0')
        json_object_set_new(root, "anomaly", cli_json_string_lossy(r->anomaly));
    /* Also only there: an I/O priority the scheduler ignores, for the Backup's
     * IOPriorityIneffective condition (the warning line on stderr says it to a person). */
    if (termlog && r->ioprio[0] != '\0')
        json_object_set_new(root, "ioPriority", cli_json_string_lossy(r->ioprio));
    return root;
}

/* The JSON for the termination log: errors cut (count, then length) to fit 4096 bytes. */
static void backup_termlog(const char *path, const struct backup *b, const struct backup_result *r)
{
    size_t n = b->nerrs, msg_max = 256;
    char *s = NULL;
    FILE *f;
    for (;;) {
        json_t *j = backup_json(b, r, n, msg_max, true);
        free(s);
        s = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
        json_decref(j);
        if (s == NULL || strlen(s) <= BACKUP_TERMLOG_MAX)
            break;
        if (n > 0)
            n = n > 8 ? n / 2 : n - 1;
        else if (msg_max > 32)
            msg_max /= 2;
        else
            break; /* the error alone is too long: cut below */
    }
    if (s == NULL)
        return;
    f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, "lode backup: cannot write --termination-log %s: %s\n", path,
                strerror(errno));
        free(s);
        return;
    }
    fwrite(s, 1, strlen(s) > BACKUP_TERMLOG_MAX ? BACKUP_TERMLOG_MAX : strlen(s), f);
    fclose(f);
    free(s);
}

void cli_backup_print(const struct backup *b, const struct backup_result *r, bool json,
                      const char *termlog)
{
    if (json) {
        json_t *j = backup_json(b, r, b->nerrs, SIZE_MAX, false);
        cli_print_json(j);
        json_decref(j);
    } else {
        for (size_t i = 0; i < b->nerrs; i++)
            fprintf(stderr, "lode backup: %s: %s\n", b->errs[i].path, b->errs[i].message);
        if (r->written) {
            char t[UTIL_TIME_BUF];
            util_format_utc(r->time, t, sizeof(t));
            printf("snapshot %s of %s/%s on %s at %s%s%s\n"
                   "  %llu files, %llu bytes; %llu bytes new, %llu bytes uploaded\n",
                   b->id, b->src.ns, b->src.policy, b->src.host, t,
                   b->nerrs > 0 ? " (incomplete)" : "", r->suspicious ? " (suspicious)" : "",
                   (unsigned long long)b->files, (unsigned long long)b->bytes,
                   (unsigned long long)b->new_bytes, (unsigned long long)b->uploaded_bytes);
        }
    }
    if (!r->written)
        fprintf(stderr, "lode backup: no snapshot: %s\n", r->error ? r->error : "");
    if (termlog != NULL)
        backup_termlog(termlog, b, r);
}
