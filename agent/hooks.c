/*
 * hooks: one command of spec.hooks, run and watched (hooks.h).
 */
#define _GNU_SOURCE
#include "hooks.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* A line longer than this is logged in pieces. */
#define HOOK_LINE 1024

struct hook_out {
    const char *name;
    char line[HOOK_LINE + 1];
    size_t nline;
    struct hook_result *r;
};

static uint64_t hook_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void hook_flush_line(struct hook_out *o)
{
    if (o->nline == 0)
        return;
    if (o->r->output_bytes <= HOOK_LOG_MAX)
        fprintf(stderr, "lode backup: hook %s: %.*s\n", o->name, (int)o->nline, o->line);
    o->nline = 0;
}

/* Output: into the log line by line (bounded) and into the tail (the last bytes; a NUL
 * there becomes '?', so the tail stays a string). */
static void hook_take(struct hook_out *o, const char *buf, size_t n)
{
    struct hook_result *r = o->r;
    size_t have = strlen(r->tail), from = n > HOOK_TAIL ? n - HOOK_TAIL : 0;
    size_t add = n - from, keep = have + add > HOOK_TAIL ? HOOK_TAIL - add : have;
    memmove(r->tail, r->tail + have - keep, keep);
    for (size_t i = 0; i < add; i++)
        r->tail[keep + i] = buf[from + i] != '\0' ? buf[from + i] : '?';
    r->tail[keep + add] = '\0';
    for (size_t i = 0; i < n; i++) {
        r->output_bytes++;
        if (r->output_bytes == HOOK_LOG_MAX + 1) {
            hook_flush_line(o);
            fprintf(stderr,
                    "lode backup: hook %s: more than %u bytes of output; the rest is not "
                    "logged\n",
                    o->name, HOOK_LOG_MAX);
            r->log_cut = true;
        }
        if (buf[i] == '\n' || o->nline == HOOK_LINE) {
            hook_flush_line(o);
            if (buf[i] == '\n')
                continue;
        }
        o->line[o->nline++] = buf[i];
    }
}

/*
 * The hook's environment: the agent's, less its secrets and settings (every AWS_ and
 * LODE_ variable: the storage credentials, the repository and its key's file are the
 * agent's, never a hook's), plus what a hook is told. Built before the fork, because the agent has
 * threads (the seal pool) and the child of a threaded process may call only async-signal-safe
 * functions until it execs: no malloc, so no setenv there. One allocation per variable; freed by
 * hook_env_free.
 */
static char **hook_envp(const struct policy_hook *h, const struct hook_env *env)
{
    extern char **environ;
    const char *names[] = {"LODE_HOOK_PHASE",    "LODE_HOOK_NAME", "LODE_POLICY",      "LODE_HOST",
                           "LODE_BACKUP_RESULT", "LODE_SNAPSHOT",  "LODE_BACKUP_ERROR"};
    const char *values[] = {env->phase,  h->name,       env->policy, env->host,
                            env->result, env->snapshot, env->error};
    size_t n = 0, k = 0;
    while (environ[n] != NULL)
        n++;
    char **v = util_calloc(n + 8, sizeof(*v));
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "AWS_", 4) != 0 && strncmp(environ[i], "LODE_", 5) != 0)
            v[k++] = util_strdup(environ[i]);
    for (size_t m = 0; m < 7; m++)
        if (values[m] != NULL)
            v[k++] = util_asprintf("%s=%s", names[m], values[m]);
    return v;
}

static void hook_envp_free(char **v)
{
    for (size_t i = 0; v[i] != NULL; i++)
        free(v[i]);
    free(v);
}

/* The child: its own process group, the node's root, the command. Only async-signal-safe
 * calls until the exec (a message on a failure is the exception: the child ends there). */
static void hook_child(const struct policy_hook *h, const struct hook_env *env, char **envp,
                       int out)
{
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    setpgid(0, 0);
    if (null < 0 || dup2(null, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
        _exit(126);
    if (strcmp(env->root, "/") != 0 && (chroot(env->root) != 0 || chdir("/") != 0)) {
        dprintf(2, "cannot enter the node's root %s: %s\n", env->root, strerror(errno));
        _exit(126);
    }
    if (chdir("/") != 0)
        _exit(126);
    execvpe(h->argv[0], h->argv, envp);
    dprintf(2, "cannot run %s: %s\n", h->argv[0], strerror(errno));
    _exit(127);
}

static void hook_describe(const struct policy_hook *h, struct hook_result *r)
{
    char last[160] = "";
    /* The last line of output says most about a failure. */
    size_t n = strlen(r->tail);
    while (n > 0 && (r->tail[n - 1] == '\n' || r->tail[n - 1] == '\r'))
        n--;
    size_t start = n;
    while (start > 0 && r->tail[start - 1] != '\n')
        start--;
    if (n > start)
        snprintf(last, sizeof(last), "; its last output: %.*s",
                 (int)(n - start > 120 ? 120 : n - start), r->tail + start);
    if (r->timed_out)
        snprintf(r->error, sizeof(r->error), "hook %s timed out after %llds and was killed%s",
                 h->name, (long long)h->timeout, last);
    else if (r->signal != 0)
        snprintf(r->error, sizeof(r->error), "hook %s was killed by signal %d%s", h->name,
                 r->signal, last);
    else if (r->exit_code == 127 || r->exit_code == 126)
        snprintf(r->error, sizeof(r->error), "hook %s could not run (exit status %d)%s", h->name,
                 r->exit_code, last);
    else
        snprintf(r->error, sizeof(r->error), "hook %s failed with exit status %d%s", h->name,
                 r->exit_code, last);
}

int hook_run(const struct policy_hook *h, const struct hook_env *env, uint64_t deadline_ns,
             volatile sig_atomic_t *stop, struct hook_result *r)
{
    struct hook_out o = {.name = h->name, .r = r};
    int fds[2], status = 0;
    uint64_t end = hook_now_ns() + (uint64_t)h->timeout * 1000000000ull;
    bool exited = false, eof = false, killed = false;
    uint64_t exited_at = 0;
    memset(r, 0, sizeof(*r));
    r->exit_code = -1;
    if (deadline_ns != 0 && deadline_ns < end)
        end = deadline_ns;

    if (pipe2(fds, O_CLOEXEC) != 0) {
        snprintf(r->error, sizeof(r->error), "hook %s: cannot make a pipe: %s", h->name,
                 strerror(errno));
        return UTIL_EIO;
    }
    char **envp = hook_envp(h, env);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(r->error, sizeof(r->error), "hook %s: cannot fork: %s", h->name, strerror(errno));
        close(fds[0]);
        close(fds[1]);
        hook_envp_free(envp);
        return UTIL_EIO;
    }
    if (pid == 0)
        hook_child(h, env, envp, fds[1]);
    hook_envp_free(envp);
    setpgid(pid, pid); /* also here: either side may run first */
    close(fds[1]);
    fprintf(stderr, "lode backup: hook %s (%s) started: %s\n", h->name, env->phase, h->argv[0]);
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    (void)fcntl(fds[0], F_SETFL, O_NONBLOCK);

    while (!exited || !eof) {
        struct pollfd p[2] = {{.fd = eof ? -1 : fds[0], .events = POLLIN},
                              {.fd = exited ? -1 : pidfd, .events = POLLIN}};
        uint64_t now = hook_now_ns();
        int wait_ms;
        if (!killed && (now >= end || (stop != NULL && *stop))) {
            r->timed_out = now >= end;
            kill(-pid, SIGKILL);
            killed = true;
        }
        /* Without a pidfd (Linux before 5.3) the child is looked at every 100 ms. */
        wait_ms = killed ? 100 : (int)((end - now) / 1000000 + 1);
        if (pidfd < 0 && wait_ms > 100)
            wait_ms = 100;
        int n = poll(p, 2, wait_ms);
        if (n < 0 && errno != EINTR)
            break;
        if (!eof) {
            char buf[4096];
            ssize_t got;
            while ((got = read(fds[0], buf, sizeof(buf))) > 0)
                hook_take(&o, buf, (size_t)got);
            if (got == 0)
                eof = true;
        }
        if (!exited && waitpid(pid, &status, WNOHANG) == pid) {
            exited = true;
            exited_at = hook_now_ns();
            /* What it left running in its group holds the pipe open: end it now. */
            kill(-pid, SIGKILL);
            killed = true;
        }
        /* A grandchild that left the group (setsid) may still hold the pipe: its output
         * is not waited for longer than two seconds after the command ended. */
        if (exited && !eof && hook_now_ns() > exited_at + 2000000000ull)
            break;
    }
    hook_flush_line(&o);
    if (!exited)
        waitpid(pid, &status, 0);
    kill(-pid, SIGKILL); /* whatever is left, whatever happened */
    if (pidfd >= 0)
        close(pidfd);
    close(fds[0]);
    if (WIFEXITED(status))
        r->exit_code = WEXITSTATUS(status);
    else if (WIFSIGNALED(status))
        r->signal = WTERMSIG(status);
    r->ok = !r->timed_out && r->exit_code == 0;
    if (!r->ok)
        hook_describe(h, r);
    fprintf(stderr, "lode backup: hook %s (%s) %s\n", h->name, env->phase,
            r->ok ? "succeeded" : r->error);
    return r->ok ? 0 : UTIL_EIO;
}

int hooks_phase(const struct policy_hook *v, size_t n, const struct hook_env *env,
                uint64_t deadline_ns, volatile sig_atomic_t *stop, struct hook_outcome *out,
                size_t *nout, char *why, size_t why_size)
{
    for (size_t i = 0; i < n; i++) {
        struct hook_outcome *o = &out[(*nout)++];
        memset(o, 0, sizeof(*o));
        o->name = v[i].name;
        o->phase = env->phase;
        if (hook_run(&v[i], env, deadline_ns, stop, &o->r) == 0)
            continue;
        if (v[i].on_error_continue) {
            o->continued = true;
            fprintf(stderr,
                    "lode backup: hook %s failed; onError is continue, so the run goes on\n",
                    v[i].name);
            continue;
        }
        snprintf(why, why_size, "%s-hook failed (onError: fail): %s", env->phase, o->r.error);
        return UTIL_EIO;
    }
    return 0;
}
