/*
 * status: the state of BackupPolicies and their hosts as `lode status` and the
 * UI's fleet view show it, read from the cluster and evaluated here.
 *
 * What it reads: the policy (or every policy of a namespace, or of the cluster),
 * its status as the controller wrote it, the Backups of the namespace (grouped by
 * spec.policy and spec.host, as the controller groups them, so a Backup started by
 * hand without labels counts too), and the nodes (metadata only) to find the hosts
 * the nodeSelector picks. The hosts are those the controller counts: the selected
 * nodes, plus the hosts that have Backups (a node that left or no longer matches is
 * shown as not selected: it has no next run and is never overdue).
 *
 * What it computes itself, so the answer holds when the controller is down (which
 * is when it matters): the last success (the newest Succeeded Backup's
 * completionTime), the age, the next run (the schedule engine plus the host's
 * jitter offset), and overdue (docs/schedule.md, with the limit the status records
 * when it describes the current generation, else the one the spec gives). A host
 * that the status lists as overdue stays overdue unless a newer success is seen.
 *
 * Costs: three or four requests whatever the number of policies (the policy or
 * list, one list of Backups, one metadata-only list of nodes); memory is those
 * lists.
 */
#ifndef LODE_CLI_STATUS_H
#define LODE_CLI_STATUS_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "binding/binding.h"
#include "kubeutil.h"
#include "policy/policy.h"
#include "schedule/schedule.h"
#include "tz/tz.h"

struct cli_status_host {
    const char *name; /* borrowed from the node or Backup JSON */
    int selected;     /* 1 selected, 0 not, -1 unknown (nodes could not be listed) */
    int64_t node_created;
    bool has_success;
    int64_t last_success;
    bool running;
    bool overdue;
    bool has_next;
    int64_t next_run;
    /* Backups whose snapshot the agent marked suspicious (docs/anomaly.md), and the
     * newest such snapshot's id (borrowed from the Backup JSON). */
    unsigned suspicious;
    const char *suspicious_id;
    int64_t suspicious_created;
};

struct cli_status_policy {
    const json_t *obj; /* borrowed from the reply */
    const char *ns, *name;
    int64_t created, generation;
    bool valid;
    struct policy spec; /* when valid */
    struct policy_diags diags;
    struct binding bind; /* the zone (the schedule's, else UTC) and the schedule */
    int64_t limit;
    const char *limit_source;
    struct cli_status_host *hosts;
    size_t nhosts, hosts_cap;
    size_t overdue;
    int64_t next_run; /* INT64_MAX when none */
};

/* Everything one look at the cluster found. The policies borrow from the replies. */
struct cli_status {
    int64_t now;
    struct cli_status_policy *v;
    size_t n;
    char warning[512]; /* "" or what could not be read (nodes a user may not list) */
    struct cli_kube_reply pol, bk, nodes;
    json_t *policies;
};

struct cli_status_query {
    const char *namespace; /* NULL: every namespace */
    const char *policy;    /* NULL: every policy of the namespace */
};

/*
 * Reads and evaluates at `now`. Returns 0 (st filled), UTIL_ENOENT when the named
 * policy does not exist, or another code when the API server could not be read;
 * err then says what to fix (a hint about the CRDs for a 404) and st needs only
 * cli_status_free.
 */
int cli_status_load(struct cli_status *st, struct cli_kube *k, const struct tz_db *db,
                    const struct cli_status_query *q, int64_t now, struct util_err *err);

/* {"time":T,"policies":[...]}: the JSON of `lode status --output json`. */
json_t *cli_status_json(const struct cli_status *st);

/* The status condition of a type in a policy object, or NULL. */
const json_t *cli_status_condition(const json_t *obj, const char *type);

void cli_status_free(struct cli_status *st);

#endif
