/*
 * lode schedule: the next runs of a policy on one host, with the daylight saving
 * notes (docs/schedule.md).
 *
 * Everything is computed by internal/schedule from the policy file and the time
 * given; the real clock is read only here, for a missing --from. A policy with no
 * schedule is valid and simply has no runs: the command says so and exits 0, with
 * empty lists in JSON, because "this policy runs only by hand" is an answer, not
 * an error.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "schedule/schedule.h"

static void cmd_schedule_usage(FILE *f)
{
    fprintf(f,
            "usage: lode schedule FILE --host H [--from T] (--count N | --until T)\n"
            "                     [--output text|json] [--zoneinfo DIR]\n\n"
            "Shows the runs of a BackupPolicy's schedule on one host: each slot (the local\n"
            "time the cron expression names), the instant it runs, and this host's run time\n"
            "(the slot plus the host's jitter offset). Slots moved or repeated by a daylight\n"
            "saving change are marked, and local times a change skips are listed. The alert\n"
            "limit is how long the host may go without a successful backup.\n\n"
            "  FILE            the BackupPolicy YAML (\"-\" for standard input)\n"
            "  --host H        the node name; it decides the jitter offset\n"
            "  --from T        list the slots after T (RFC 3339, e.g. 2026-03-28T12:00:00Z;\n"
            "                  default: now)\n"
            "  --count N       list N runs (1-%d)\n"
            "  --until T       list the runs whose slot is at or before T\n"
            "  --output json   {\"policy\",\"host\",\"timezone\",\"offsetSeconds\",\n"
            "                   \"alertLimitSeconds\",\"runs\":[{\"slot\",\"slotTime\",\"runTime\","
            "\"note\"}],\n"
            "                   \"notes\":[{\"slot\",\"note\":\"skipped\"}]}\n"
            "  --zoneinfo DIR  the tz database (default $LODE_ZONEINFO, else %s)\n\n"
            "A policy without a schedule runs only by hand: it has no runs (exit 0).\n"
            "Exit codes: 0 ok, 1 invalid policy, 2 usage or I/O error.\n",
            CLI_SCHEDULE_MAX_RUNS, TZ_DEFAULT_DIR);
}

/* "Sun 2026-03-29 04:00" for a wall-clock time (local seconds). */
static void cmd_schedule_fmt_day_time(int64_t local, char *buf, size_t size)
{
    static const char *const wd[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    char text[UTIL_TIME_BUF];
    size_t n = util_format_time(local, 0, UTIL_TIME_MINUTE, text, sizeof(text));
    /* "2026-03-29T04:00" becomes "2026-03-29 04:00". */
    if (n >= 6)
        text[n - 6] = ' ';
    snprintf(buf, size, "%s %s", wd[util_weekday_from_days(util_floor_div(local, 86400))], text);
}

/* "04:00" or "04:07:12" for a wall-clock time. */
static void cmd_schedule_fmt_clock(int64_t local, char *buf, size_t size)
{
    struct util_civil c;
    util_civil_from_seconds(local, &c);
    if (c.second)
        snprintf(buf, size, "%02u:%02u:%02u", c.hour, c.minute, c.second);
    else
        snprintf(buf, size, "%02u:%02u", c.hour, c.minute);
}

/* "2026-03-29" for a wall-clock time. */
static void cmd_schedule_fmt_date(int64_t local, char *buf, size_t size)
{
    util_format_time(local, 0, UTIL_TIME_DATE, buf, size);
}

/* "2026-03-29 01:00:00Z" */
static void cmd_schedule_fmt_utc(int64_t t, char *buf, size_t size)
{
    char text[UTIL_TIME_BUF];
    util_format_time(t, 0, UTIL_TIME_TEXT, text, sizeof(text));
    snprintf(buf, size, "%sZ", text);
}

/* "clocks jump from 03:00 EET to 04:00 EEST" or "clocks go back from 04:00 EEST to 03:00 EET". */
static void cmd_schedule_fmt_change(const struct tz_zone *zone, const struct sched_change *ch,
                                    char *buf, size_t size)
{
    char before[16], after[16];
    cmd_schedule_fmt_clock(ch->local_before, before, sizeof(before));
    cmd_schedule_fmt_clock(ch->local_after, after, sizeof(after));
    snprintf(buf, size, "clocks %s from %s %s to %s %s",
             ch->local_after > ch->local_before ? "jump" : "go back", before,
             tz_abbrev_at(zone, ch->at - 1), after, tz_abbrev_at(zone, ch->at));
}

/* Prints the skipped local times of one clock change: l->skips[*i] and those after it. */
static void cmd_schedule_print_skips(const struct tz_zone *zone, const struct cli_schedule *l,
                                     size_t *i)
{
    size_t j = *i;
    int64_t tr = l->skips[j].transition;
    struct sched_change ch = {tr, tr + tz_offset_at(zone, tr - 1), tr + tz_offset_at(zone, tr)};
    char date[16], change[128], clock[16];

    while (j < l->nskips && l->skips[j].transition == tr)
        j++;
    cmd_schedule_fmt_date(l->skips[*i].local, date, sizeof(date));
    cmd_schedule_fmt_change(zone, &ch, change, sizeof(change));
    printf("  note: on %s %s: ", date, change);
    if (j - *i > 6) {
        cmd_schedule_fmt_clock(l->skips[*i].local, clock, sizeof(clock));
        printf("the %zu slots from %s", j - *i, clock);
        cmd_schedule_fmt_clock(l->skips[j - 1].local, clock, sizeof(clock));
        printf(" to %s do not exist and are skipped\n", clock);
    } else {
        for (size_t k = *i; k < j; k++) {
            cmd_schedule_fmt_clock(l->skips[k].local, clock, sizeof(clock));
            printf("%s%s", k == *i ? "" : (k + 1 == j ? " and " : ", "), clock);
        }
        printf(" %s not exist and %s skipped\n", j - *i == 1 ? "does" : "do",
               j - *i == 1 ? "is" : "are");
    }
    *i = j;
}

/* "50h15m", and for long limits "70128h15m (about 8.0 years)". */
static void cmd_schedule_fmt_limit(int64_t limit, char *buf, size_t size)
{
    char d[64];
    policy_format_duration(limit, d, sizeof(d));
    if (limit >= 365 * 86400)
        snprintf(buf, size, "%s (about %.1f years)", d, (double)limit / (365.2425 * 86400));
    else if (limit >= 72 * 3600)
        snprintf(buf, size, "%s (about %.1f days)", d, (double)limit / 86400);
    else
        snprintf(buf, size, "%s", d);
}

static void cmd_schedule_print_text(const struct policy *pol, const char *host,
                                    const struct sched *s, const struct tz_db *db, int64_t offset,
                                    int64_t limit, const struct cli_schedule *l)
{
    char buf[160], utc[40], run[40], local[40], clock[16], date[16];
    const struct tz_zone *zone = s->zone;
    int64_t last_fold = INT64_MIN;
    size_t k = 0;

    printf("Policy %s/%s on host %s\n", pol->namespace, pol->name, host);
    printf("Schedule \"%s\" in %s (tz database %s)\n", pol->schedule.cron_text,
           pol->schedule.timezone, tz_db_version(db));
    policy_format_duration(pol->schedule.jitter, buf, sizeof(buf));
    if (pol->schedule.jitter == 0) {
        printf("No jitter: every host runs at the slot\n");
    } else {
        policy_format_duration(offset, run, sizeof(run));
        printf("Jitter up to %s: this host runs %s after each slot\n", buf, run);
    }
    if (pol->suspend)
        printf(
            "Suspended (spec.suspend: true): none of these slots runs until the policy is "
            "resumed; then the last slot missed runs once if it is within the catch-up window\n");
    putchar('\n');
    printf("%-30s %-22s %s\n", "Slot (local time)", "Slot (UTC)", "This host runs");
    for (size_t i = 0; i < l->nruns; i++) {
        const struct cli_schedule_run *r = &l->runs[i];
        struct sched_change ch;

        while (k < l->nskips && l->skips[k].transition <= r->slot.at)
            cmd_schedule_print_skips(zone, l, &k);
        cmd_schedule_fmt_day_time(r->slot.at + tz_offset_at(zone, r->slot.at), local,
                                  sizeof(local));
        snprintf(buf, sizeof(buf), "%s %s", local, tz_abbrev_at(zone, r->slot.at));
        cmd_schedule_fmt_utc(r->slot.at, utc, sizeof(utc));
        cmd_schedule_fmt_utc(r->run_time, run, sizeof(run));
        cmd_schedule_fmt_clock(r->run_time + tz_offset_at(zone, r->run_time), clock, sizeof(clock));
        printf("%-30s %-22s %s (%s %s)\n", buf, utc, run, clock, tz_abbrev_at(zone, r->run_time));
        if (sched_change_of(s, &r->slot, &ch) != 0)
            continue;
        cmd_schedule_fmt_date(r->slot.local, date, sizeof(date));
        cmd_schedule_fmt_clock(r->slot.local, local, sizeof(local));
        cmd_schedule_fmt_change(zone, &ch, buf, sizeof(buf));
        if (r->slot.note == SCHED_NOTE_SHIFTED) {
            cmd_schedule_fmt_clock(ch.local_after, clock, sizeof(clock));
            printf("  note: on %s %s: the %s slot does not exist and runs at %s\n", date, buf,
                   local, clock);
        } else if (ch.at != last_fold) {
            /* One note per fold, however many slots it repeats. */
            char from_clock[16], to_clock[16];
            cmd_schedule_fmt_clock(ch.local_after, from_clock, sizeof(from_clock));
            cmd_schedule_fmt_clock(ch.local_before, to_clock, sizeof(to_clock));
            printf("  note: on %s %s: %s to %s happens twice and slots then run the first time "
                   "only\n",
                   date, buf, from_clock, to_clock);
            last_fold = ch.at;
        }
    }
    while (k < l->nskips)
        cmd_schedule_print_skips(zone, l, &k);
    putchar('\n');
    if (limit == SCHED_NO_LIMIT) {
        printf("No alert limit: without a schedule or alerts.maxAge this host is never overdue\n");
    } else {
        cmd_schedule_fmt_limit(limit, buf, sizeof(buf));
        printf("Overdue after %s without a backup (%s)\n", buf,
               pol->alerts_max_age > 0 ? "alerts.maxAge"
                                       : "twice the longest gap between slots in the next year, "
                                         "plus the jitter");
    }
}

static void cmd_schedule_print_unscheduled(const struct policy *pol, const char *host,
                                           int64_t limit)
{
    char buf[96];

    printf("Policy %s/%s has no schedule: it runs only when started by hand, on %s or any "
           "host.\n",
           pol->namespace, pol->name, host);
    if (limit == SCHED_NO_LIMIT) {
        printf("No alert limit: without a schedule or alerts.maxAge this host is never overdue\n");
    } else {
        cmd_schedule_fmt_limit(limit, buf, sizeof(buf));
        printf("Overdue after %s without a backup (alerts.maxAge)\n", buf);
    }
}

/* Parses --count; prints the error and returns -1 when it is not 1..MAX. */
static int cmd_schedule_parse_count(const char *s, size_t *out)
{
    uint64_t v;
    if (util_parse_u64(s, strlen(s), CLI_SCHEDULE_MAX_RUNS, &v) != 0 || v == 0) {
        cli_usage_error("schedule", "--count must be a whole number from 1 to %d, not \"%s\"",
                        CLI_SCHEDULE_MAX_RUNS, s);
        return -1;
    }
    *out = (size_t)v;
    return 0;
}

static int cmd_schedule_parse_time(const char *flag, const char *s, int64_t *out)
{
    struct util_err err = {0};
    if (util_parse_rfc3339(s, out, &err) != 0) {
        cli_usage_error("schedule", "%s: %s", flag, err.msg);
        return -1;
    }
    return 0;
}

int cmd_schedule(int argc, char **argv)
{
    enum cli_output output = CLI_OUTPUT_TEXT;
    const char *path = NULL, *host = NULL, *zoneinfo = NULL;
    static const struct option opts[] = {
        {"host", required_argument, NULL, 'H'},   {"from", required_argument, NULL, 'f'},
        {"count", required_argument, NULL, 'c'},  {"until", required_argument, NULL, 'u'},
        {"output", required_argument, NULL, 'o'}, {"zoneinfo", required_argument, NULL, 'z'},
        {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0},
    };
    bool has_from = false, has_count = false, has_until = false;
    int64_t from = 0, until = 0;
    size_t count = 0;
    struct tz_db *db = NULL;
    struct policy pol;
    struct cli_schedule list = {0};
    struct util_err err = {0};
    int c, rc;

    optind = 1;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'H':
            host = optarg;
            break;
        case 'f':
            if (cmd_schedule_parse_time("--from", optarg, &from) != 0)
                return CLI_USAGE;
            has_from = true;
            break;
        case 'c':
            if (cmd_schedule_parse_count(optarg, &count) != 0)
                return CLI_USAGE;
            has_count = true;
            break;
        case 'u':
            if (cmd_schedule_parse_time("--until", optarg, &until) != 0)
                return CLI_USAGE;
            has_until = true;
            break;
        case 'o':
            if (cli_parse_output(optarg, &output) != 0)
                return CLI_USAGE;
            break;
        case 'z':
            zoneinfo = optarg;
            break;
        case 'h':
            cmd_schedule_usage(stdout);
            return CLI_OK;
        default:
            cmd_schedule_usage(stderr);
            return CLI_USAGE;
        }
    }
    if (optind == argc)
        return cli_usage_error("schedule", "the policy FILE is required");
    path = argv[optind];
    if (optind + 1 != argc)
        return cli_usage_error("schedule", "unexpected argument \"%s\"", argv[optind + 1]);
    if (host == NULL || host[0] == '\0')
        return cli_usage_error("schedule", "--host H is required: the jitter offset depends on "
                                           "the host");
    if (has_count == has_until)
        return cli_usage_error("schedule", "give either --count N or --until T");
    if (!has_from)
        from = (int64_t)time(NULL);
    if (has_until && until <= from)
        return cli_usage_error("schedule", "--until must be later than --from");

    rc = cli_open_tzdb(&db, zoneinfo);
    if (rc != CLI_OK)
        return rc;
    memset(&pol, 0, sizeof(pol));
    rc = cli_load_policy(path, db, &pol);
    if (rc != CLI_OK)
        goto close_db;
    struct cli_schedule_query q = {host, from, has_until ? 0 : count, has_until, until};
    rc = cli_schedule_compute(&list, &pol, db, &q, &err);
    if (rc != 0) {
        if (rc == UTIL_ERANGE) {
            rc = cli_usage_error("schedule", "%s: use --count or an earlier --until", err.msg);
            goto free_policy;
        }
        fprintf(stderr, "lode schedule: %s\n", err.msg);
        /* An unknown zone is the policy's fault; a damaged or unreadable one the system's. */
        rc = rc == UTIL_ENOENT ? CLI_INVALID : CLI_USAGE;
        goto free_policy;
    }
    if (output == CLI_OUTPUT_JSON) {
        json_t *doc = cli_schedule_json(&pol, host, &list);
        cli_print_json(doc);
        json_decref(doc);
    } else if (!pol.has_schedule) {
        cmd_schedule_print_unscheduled(&pol, host, list.limit);
    } else {
        cmd_schedule_print_text(&pol, host, &list.bind.sched, db, list.offset, list.limit, &list);
    }
    rc = CLI_OK;
    cli_schedule_free(&list);
free_policy:
    policy_free(&pol);
close_db:
    tz_db_close(db);
    return rc;
}
