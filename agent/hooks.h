/*
 * hooks: the commands of spec.hooks run around a backup (docs/policy.md, "spec.hooks"),
 * as children of the agent, so that they share its nice value, I/O priority and
 * maxRuntime. Each runs in a process group of its own, chrooted into --root when that
 * is not "/" (the node's file system, so the node's programs and files), with standard
 * input from /dev/null and standard output and error into a pipe that the agent reads:
 * each line goes to the agent's log ("hook NAME: line"), up to HOOK_LOG_MAX bytes a
 * hook, and the last HOOK_TAIL bytes are kept for the result. On its timeout (or the
 * run's deadline, or a stop request) the whole group is killed; when the command ends,
 * whatever it left running in its group is killed too, so a hook that forks leaves
 * nothing behind.
 *
 * Costs: one fork and exec per hook, a pipe, and HOOK_TAIL bytes of memory; the agent
 * waits on the pipe and the child's pidfd with poll, so a hook costs no CPU while it runs.
 */
#ifndef LODE_AGENT_HOOKS_H
#define LODE_AGENT_HOOKS_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "policy/policy.h"

#define HOOK_TAIL    512        /* bytes of output kept for the result */
#define HOOK_LOG_MAX (1u << 20) /* bytes of output a hook may put into the agent's log */

/* What a hook is told in its environment (docs/policy.md lists the variables). */
struct hook_env {
    const char *root;   /* --root: chroot into it unless "/" */
    const char *phase;  /* "before" or "after" */
    const char *policy; /* NAMESPACE/NAME */
    const char *host;
    const char *result;   /* after: "succeeded" or "failed"; before: NULL */
    const char *snapshot; /* after a snapshot was written: its id; else NULL */
    const char *error;    /* after a failure: why; else NULL */
};

struct hook_result {
    bool ok;
    bool timed_out;
    int exit_code; /* -1 when killed by a signal or never started */
    int signal;    /* the signal that ended it, or 0 */
    uint64_t output_bytes;
    bool log_cut; /* more than HOOK_LOG_MAX bytes: the rest was not logged */
    char tail[HOOK_TAIL + 1];
    char error[512]; /* why it failed, for a person, when !ok */
};

/*
 * Runs h and waits for it, at most h->timeout seconds and never past deadline_ns (a
 * CLOCK_MONOTONIC time in ns, 0 for none); *stop set (SIGTERM to the agent) kills it
 * at once. Fills r; returns 0 when the hook exited 0, UTIL_EIO otherwise (r->error
 * says why: the exit status, the signal, the timeout, or a command that could not be
 * run).
 */
int hook_run(const struct policy_hook *h, const struct hook_env *env, uint64_t deadline_ns,
             volatile sig_atomic_t *stop, struct hook_result *r);

/* One hook's run, for lode backup's JSON ("hooks") and the termination log. */
struct hook_outcome {
    const char *name;  /* borrowed from the policy */
    const char *phase; /* "before" or "after" */
    bool continued;    /* it failed and its onError said continue */
    struct hook_result r;
};

/*
 * Runs the hooks of one phase in order, appending each outcome to out (room for n).
 * Returns 0, or UTIL_EIO at the first one that failed with onError: fail (the rest of
 * the phase does not run); why then says which and how, for the Backup's status.
 */
int hooks_phase(const struct policy_hook *v, size_t n, const struct hook_env *env,
                uint64_t deadline_ns, volatile sig_atomic_t *stop, struct hook_outcome *out,
                size_t *nout, char *why, size_t why_size);

#endif
