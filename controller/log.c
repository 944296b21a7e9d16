/* The controller's clock and log: every other file of the controller calls these. */
#include "ctl_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

/* One line per message on stderr, stamped with the controller's clock (test offset included). */
void ctl_log(const struct ctl *c, int level, const char *fmt, ...)
{
    static const char *const names[] = {"error", "info", "debug"};
    char ts[UTIL_TIME_BUF];
    va_list ap;
    if (level > c->opts.log_level)
        return;
    util_format_utc(ctl_now(c), ts, sizeof(ts));
    fprintf(stderr, "%s %s ", ts, names[level]);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
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
