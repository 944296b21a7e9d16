/*
 * The controller's clock, log, cache keys and list of writes in flight: every other
 * file of the controller calls these, and these call none of them (the end of a
 * graceful stop goes through the lifecycle's hook, ctl_int.h).
 */
#include "ctl_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

/*
 * One line per message on stderr, stamped with the controller's clock (test offset
 * included). stderr is unbuffered, so the line is formatted first and written with one
 * write: three stdio calls cost three writes and a formatting pass through a temporary
 * buffer each (3 % of the CPU of a slot, where every run logs a line), and lines of
 * concurrent writers could interleave.
 */
void ctl_log(const struct ctl *c, int level, const char *fmt, ...)
{
    static const char *const names[] = {"error", "info", "debug"};
    char ts[UTIL_TIME_BUF];
    char line[1024];
    va_list ap;
    if (level > c->opts.log_level)
        return;
    util_format_utc(ctl_now(c), ts, sizeof(ts));
    int head = snprintf(line, sizeof(line), "%s %s ", ts, names[level]);
    size_t room = sizeof(line) - (size_t)head - 1; /* one byte for the newline */
    va_start(ap, fmt);
    int n = vsnprintf(line + head, room + 1, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n <= room) {
        line[head + n] = '\n';
        fwrite(line, 1, (size_t)head + (size_t)n + 1, stderr);
        return;
    }
    /* A longer message (a server's long refusal): built on the heap, still one write. */
    struct util_buf b;
    util_buf_init(&b);
    util_buf_append(&b, line, (size_t)head);
    va_start(ap, fmt);
    util_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    util_buf_append(&b, "\n", 1);
    fwrite(b.data, 1, b.len, stderr);
    util_buf_free(&b);
}

bool ctl_ns_deleting(const struct ctl *c, const struct kube_result *res, const char *what)
{
    if (!kube_result_ns_terminating(res))
        return false;
    ctl_log(c, 2, "%s not written: its namespace is being deleted", what);
    return true;
}

int64_t ctl_now(const struct ctl *c)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec + c->opts.clock_offset;
}

const char *ctl_key(char buf[CTL_KEY_MAX], const char *ns, const char *name)
{
    snprintf(buf, CTL_KEY_MAX, "%s/%s", ns, name);
    return buf;
}

void ctl_write_track(struct ctl *c, struct ctl_write *w, void (*free_cb)(struct ctl_write *w))
{
    w->free_cb = free_cb;
    util_list_push_front(&c->writes, &w->link);
}

void ctl_write_untrack(struct ctl *c, struct ctl_write *w)
{
    util_list_remove(&w->link);
    /* The last write of a graceful stop lets it go on, from the loop, not from here. */
    if (c->draining && util_list_empty(&c->writes))
        uv_timer_start(&c->drain_timer, c->drained_cb, 0, 0);
}

void ctl_write_free_all(struct ctl *c)
{
    struct util_list *first;
    while ((first = util_list_first(&c->writes)) != NULL) {
        struct ctl_write *w = util_list_entry(first, struct ctl_write, link);
        ctl_write_untrack(c, w);
        w->free_cb(w);
    }
}
