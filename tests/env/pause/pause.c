/* The pod sandbox process of the test environment's real nodes (tests/env/real-nodes.sh,
 * docs/testing.md): it holds a pod's namespaces open and does nothing else, so that no
 * pause image has to be pulled from a registry. It sleeps until SIGTERM or SIGINT and
 * reaps every child handed to it, as PID 1 of a pod that shares its PID namespace must.
 * Built with gcc -static into an image that holds this one file; it costs one sleeping
 * process per pod. */
#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static void pause_stop_cb(int sig)
{
    (void)sig;
    _exit(0);
}

/* waitpid may change errno under the interrupted pause(); the handler leaves it as it was. */
static void pause_reap_cb(int sig)
{
    int saved = errno;
    (void)sig;
    while (waitpid(-1, NULL, WNOHANG) > 0)
        ;
    errno = saved;
}

int main(void)
{
    struct sigaction stop = {.sa_handler = pause_stop_cb};
    struct sigaction reap = {.sa_handler = pause_reap_cb, .sa_flags = SA_NOCLDSTOP | SA_RESTART};
    if (sigaction(SIGINT, &stop, NULL) != 0 || sigaction(SIGTERM, &stop, NULL) != 0 ||
        sigaction(SIGCHLD, &reap, NULL) != 0)
        return 1;
    for (;;)
        pause();
}
