/*
 * The `lode` command: one function per subcommand, each in its own file
 * (cmd_<name>.c; lode forget's repository mode is cmd_forget_storage.c), the
 * answers several of them give (answers.c, apply_object.c, status.c), the flags
 * they share (options.c, policy_arg.c) and small helpers (common.c). The work on a
 * repository is agent/'s (agent/agent.h): a command calls an engine and maps its
 * outcome to output and an exit code (cli_exit_code).
 *
 * Exit codes (docs/commands.md, docs/policy.md): 0 ok, 1 the input is invalid or a check failed,
 * 2 usage or I/O error. JSON output (--output json) is the stable contract for
 * scripts; human output may change between versions.
 */
#ifndef LODE_CLI_H
#define LODE_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include <jansson.h>

#include "agent/browse.h"
#include "agent/storage.h"

#include "binding/binding.h"
#include "policy/policy.h"
#include "retention/retention.h"
#include "schedule/schedule.h"
#include "tz/tz.h"

#define CLI_OK      0
#define CLI_INVALID 1
#define CLI_USAGE   2

enum cli_output { CLI_OUTPUT_TEXT, CLI_OUTPUT_JSON };

int cmd_validate(int argc, char **argv);
int cmd_schedule(int argc, char **argv);
int cmd_forget(int argc, char **argv);
int cmd_version(int argc, char **argv);
int cmd_apply(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_ui(int argc, char **argv);
int cmd_init(int argc, char **argv);
int cmd_snapshots(int argc, char **argv);
int cmd_backup(int argc, char **argv);
int cmd_restore(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_mark(int argc, char **argv);
int cmd_gc(int argc, char **argv);
int cmd_ls(int argc, char **argv);
int cmd_find(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_dump(int argc, char **argv);

/* ---- shared flags (cli/options.c) ---- */

/*
 * The getopt_long entries of the shared flags, and the one call that fills o from
 * them (cli/options.c): returns true when c was one of them. Commands list STORAGE_OPTIONS among
 * their options (the short codes 0x101..0x103 are reserved for them).
 */
#define STORAGE_OPT_REPO     0x101
#define STORAGE_OPT_CACERT   0x102
#define STORAGE_OPT_KEY_FILE 0x103
#define STORAGE_OPTIONS                                                                            \
    {"repo", required_argument, NULL, STORAGE_OPT_REPO},                                           \
        {"cacert", required_argument, NULL, STORAGE_OPT_CACERT},                                   \
    {                                                                                              \
        "key-file", required_argument, NULL, STORAGE_OPT_KEY_FILE                                  \
    }
bool cli_storage_opt(struct storage_opts *o, int c, const char *arg);
/* The usage lines of the shared flags, for a command's --help. */
extern const char cli_storage_usage[];

/*
 * The flags every storage command shares, taken in one place so that each says the
 * same about a bad one: the repository's (STORAGE_OPTIONS), --output (code 'o', when
 * the command lists it) and --help ('h'). A command's getopt_long loop (opterr 0)
 * hands each code to cli_storage_cmd_opt first and handles only CLI_OPT_OWN itself.
 */
struct cli_storage_cmd {
    const char *name;         /* "find": for messages */
    void (*usage)(FILE *out); /* what --help prints */
    struct storage_opts so;   /* filled from the storage flags */
    enum cli_output output;   /* filled from --output; text when absent */
};
#define CLI_OPT_OWN  (-1) /* the command's own flag */
#define CLI_OPT_NEXT (-2) /* a shared flag, taken: parsing goes on */
/*
 * Returns CLI_OPT_NEXT or CLI_OPT_OWN, else the exit code to return at once: CLI_OK
 * after --help, CLI_USAGE (with the message printed) for a bad --output or an unknown
 * or incomplete flag, which it names from argv.
 */
int cli_storage_cmd_opt(struct cli_storage_cmd *cmd, int c, const char *arg, char *const argv[]);

/* ---- policies (cli/policy_arg.c) ---- */

/*
 * --policy FILE (a BackupPolicy YAML: its namespace, "default"
 * without one, and name) or --policy NS/NAME. An argument that
 * names an existing file is a file. NS/NAME without a file is
 * loaded, when a command needs the whole policy, from
 * $LODE_POLICY_DOCUMENT (the BackupPolicy as JSON, which the
 * controller puts into the backup Job) when its namespace and
 * name match, else from the Kubernetes API (the kubeconfig
 * search of cli/kubeutil.h). Either way the policy validator
 * checks it.
 */

/*
 * The namespace and name a --policy argument names, without loading more than a
 * file: ns and name get owned strings. UTIL_EINVAL when the argument is neither an
 * existing file nor NS/NAME with valid names; an invalid file is UTIL_EINVAL with
 * every error in diags (printed by the caller as `lode validate` does).
 */
int cli_policy_name(const char *arg, char **ns, char **name, struct policy_diags *diags,
                    struct util_err *err);

/*
 * The whole policy, validated: from the file, else from $LODE_POLICY_DOCUMENT when
 * it holds this NS/NAME, else from the API (kubeconfig NULL: the usual search).
 * UTIL_EINVAL with diags for an invalid policy; UTIL_ENOENT when the API has no
 * such policy; UTIL_EIO when it cannot be read.
 */
int cli_policy_load(const char *arg, const struct tz_db *db, const char *kubeconfig,
                    struct policy *out, struct policy_diags *diags, struct util_err *err);

/*
 * The exit code of an engine's outcome (agent/agent.h): 0 for 0; CLI_INVALID for a
 * wrong key, damaged data, or a snapshot or path that is not there; CLI_USAGE for
 * anything else (usage, I/O, storage).
 */
int cli_exit_code(int rc);

/* The value of --output: 0, or -1 (nothing printed) when it is neither text nor json. */
int cli_output_value(const char *value, enum cli_output *out);
/* Parses the value of --output; prints a usage error and returns -1 when unknown. */
int cli_parse_output(const char *value, enum cli_output *out);

/* Prints "lode CMD: message" to stderr and returns CLI_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Opens the zoneinfo directory named by --zoneinfo (NULL: $LODE_ZONEINFO, else the
 * system one). Prints the error and returns CLI_USAGE on failure.
 */
int cli_open_tzdb(struct tz_db **db, const char *dir);

/*
 * Reads and validates a policy file for a command that needs a valid one; on an
 * invalid document prints every error as `lode validate` does and returns
 * CLI_INVALID; on an unreadable file returns CLI_USAGE.
 */
int cli_load_policy(const char *path, const struct tz_db *db, struct policy *out);

/* Prints diags in the `FILE:LINE:COL: error: PATH: message` form. */
void cli_print_diags(FILE *f, const char *file, const struct policy_diags *d);

/* ---- looking inside a snapshot (browse_output.c; docs/browsing.md) ---- */

/*
 * Opens the repository with its key and snapshot id in it, as lode restore finds it.
 * Returns CLI_OK (st and b open: the caller closes both), else the exit code, the
 * error said on stderr as "lode CMD: ...".
 */
int cli_browse_open(const char *cmd, struct storage *st, const struct storage_opts *so,
                    struct browse *b, const char *id);
/* A path on one line: control characters escaped (\n, \t, \xNN, \\), the rest as is. */
void cli_print_path(FILE *f, const char *p);
/* One entry as lode ls prints it: mode letters, uid, gid, size, mtime (UTC), path,
 * "-> TARGET" for a symlink, "(hard link to PATH)". */
void cli_browse_entry_text(FILE *out, const struct repo_file *f);
/* {"path","name","type","mode","uid","gid","size","mtime","target","link"}. */
json_t *cli_browse_entry_json(const struct repo_file *f);

/* Writes a JSON value to stdout, indented, keys in insertion order, then a newline. */
void cli_print_json(json_t *v);

/* "2026-03-29T01:00:00Z" as a new JSON string. */
json_t *cli_json_time(int64_t t);

/*
 * The answers behind the commands' JSON output, built once (answers.c) so that every
 * caller (the command, `lode ui`) gives the same answer to the same question.
 */

/* One file of `lode validate --output json`: {"file","valid","errors":[...]}. */
json_t *cli_validate_json_file(const char *file, bool valid, const struct policy_diags *d);

/* A JSON string of s; bytes that are not UTF-8 become U+FFFD instead of failing. */
json_t *cli_json_string_lossy(const char *s);

/* More runs than this is a mistake in the range asked for (every minute for ten weeks). */
#define CLI_SCHEDULE_MAX_RUNS 100000

/* The runs of a policy on one host (`lode schedule`, the UI's schedule view). */
struct cli_schedule_run {
    struct sched_slot slot;
    int64_t run_time; /* slot.at + the host's jitter offset */
};

struct cli_schedule_skip {
    int64_t local;      /* the skipped wall-clock time */
    int64_t transition; /* the clock change that skipped it */
};

struct cli_schedule {
    struct binding bind; /* the zone (UTC without a schedule) and the schedule */
    int64_t offset;      /* the host's jitter offset, seconds */
    int64_t limit;       /* the alert limit at `from`, or SCHED_NO_LIMIT */
    bool truncated;      /* the range held more than the count asked for */
    struct cli_schedule_run *runs;
    size_t nruns, runs_cap;
    struct cli_schedule_skip *skips;
    size_t nskips, skips_cap;
};

struct cli_schedule_query {
    const char *host;
    int64_t from; /* slots strictly after this instant */
    size_t count; /* this many runs; with has_until at most this many (0: no cap) */
    bool has_until;
    int64_t until; /* the runs whose slot instant is at or before this */
};

/*
 * Computes the runs of a valid policy on one host. A policy without a schedule
 * has no runs (out->bind.has_sched false). Returns 0, UTIL_ENOENT for a zone the tz database
 * lacks, UTIL_ERANGE for more than CLI_SCHEDULE_MAX_RUNS runs, or another code
 * when the zone cannot be read; out then needs no freeing.
 */
int cli_schedule_compute(struct cli_schedule *out, const struct policy *pol, const struct tz_db *db,
                         const struct cli_schedule_query *q, struct util_err *err);
/* The JSON of `lode schedule --output json`. */
json_t *cli_schedule_json(const struct policy *pol, const char *host, const struct cli_schedule *s);
void cli_schedule_free(struct cli_schedule *s);

/*
 * The object `lode apply` sends (apply_object.c) for a policy's YAML text: validated, converted
 * to JSON as written (no defaults added), and validated again in that form.
 * Returns 0, UTIL_EINVAL with every error in diags, or another code with err.
 */
int cli_apply_object(const char *data, size_t len, const struct tz_db *db, json_t **obj,
                     struct policy_diags *diags, struct util_err *err);

/*
 * The JSON of `lode forget --output json` for the n snapshots snaps and their decisions d
 * (retention.h): {"keep":[{"id","reasons"}],"forget":[{"id"}]}; the storage form adds "host".
 */
json_t *cli_forget_json(const struct ret_snapshot *snaps, size_t n, const struct ret_decision *d);

/* lode forget's human output: the rules line, and one host's table of decisions. */
void cli_forget_print_rules(const struct policy *pol, const struct tz_zone *zone);
void cli_forget_print_table(const struct tz_zone *zone, const struct ret_snapshot_list *list,
                            const struct ret_decision *d);

/* lode backup's outcome (backup_output.c): printed (JSON or text), and written to the
 * termination log when asked. */
struct backup;
struct backup_result;
void cli_backup_print(const struct backup *b, const struct backup_result *r, bool json,
                      const char *termlog);

/*
 * lode restore --staged and --dry-run (restore_stage.c): the target of a Restore's Job
 * (docs/restoring.md).
 */
struct cli_stage {
    int fd;       /* the target */
    char *target; /* its path */
    char *name;   /* the stage's name in it, or NULL when the restore goes straight in */
    char *dir;    /* where to restore: the stage, or the target itself */
};
/* Whether a restore into target would be refused (a dry run looks, writes nothing):
 * 0, or UTIL_EINVAL with a message for a target that is not an empty directory. */
int cli_restore_target_check(const char *target, bool overwrite, struct util_err *err);
/* Makes the target when missing, removes stages of restores killed outright, refuses
 * one that holds anything without overwrite (UTIL_EINVAL), and makes the stage (not
 * with overwrite: s->dir is then the target). */
int cli_stage_prepare(struct cli_stage *s, const char *target, bool overwrite,
                      struct util_err *err);
/* Forks: returns 0 in the child (which restores into s->dir), and 1 in the parent once
 * the child ended, with the stage removed and *exit_code the one to exit with. */
int cli_stage_guard(struct cli_stage *s, int *exit_code);
/* Moves the stage's entries into the target (none may be there) and removes it. */
int cli_stage_commit(struct cli_stage *s, struct util_err *err);
/* Removes what is left of the stage and frees s. */
void cli_stage_close(struct cli_stage *s);

/* lode forget against a repository (cmd_forget_storage.c); flags parsed by cmd_forget,
 * whose tables (cli_forget_print_*) it prints. */
struct storage_opts;
struct cmd_forget_storage_args {
    const char *policy;   /* FILE or NS/NAME */
    const char *host;     /* NULL: every host */
    const char *zoneinfo; /* NULL: the default */
    bool dry_run;
    enum cli_output output;
    const struct storage_opts *storage;
};
int cmd_forget_storage(const struct cmd_forget_storage_args *a);

#endif
