#include "state.h"

#include <stdlib.h>
#include <string.h>

#include "podsec.h"
#include "util/map.h"

/* Dotted paths keep the reducers below one line per field; no key here contains a dot. */
const json_t *ctl_json_path(const json_t *obj, const char *path)
{
    char key[128];
    const char *p = path;
    while (obj != NULL && *p != '\0') {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        if (n >= sizeof(key))
            return NULL;
        memcpy(key, p, n);
        key[n] = '\0';
        obj = json_object_get(obj, key);
        p += n + (dot ? 1 : 0);
    }
    return obj;
}

const char *ctl_json_str(const json_t *obj, const char *path)
{
    return json_string_value(ctl_json_path(obj, path));
}

int64_t ctl_json_time(const json_t *obj, const char *path)
{
    const char *s = ctl_json_str(obj, path);
    int64_t t;
    if (s == NULL || util_parse_rfc3339(s, &t, NULL) != 0)
        return 0;
    return t;
}

/* Optional members stay NULL, so "absent" and "empty" remain different to the reconciler. */
static char *ctl_dup_or_null(const char *s)
{
    return s ? util_strdup(s) : NULL;
}

/* ---- nodes ---- */

uint64_t ctl_label_hash(const char *key, const char *value)
{
    /* key NUL value: no separator character a label could contain. */
    size_t kl = strlen(key), vl = strlen(value);
    char stack[256];
    char *buf = kl + vl + 1 <= sizeof(stack) ? stack : util_malloc(kl + vl + 1);
    memcpy(buf, key, kl);
    buf[kl] = '\0';
    memcpy(buf + kl + 1, value, vl);
    uint64_t h = util_hash(buf, kl + vl + 1);
    if (buf != stack)
        free(buf);
    return h;
}

static int ctl_u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* One allocation per node: the cache holds thousands, and a node is replaced whole on change. */
int ctl_node_from_json(struct ctl_node **out, const json_t *obj, struct util_err *err)
{
    const char *name = ctl_json_str(obj, "metadata.name");
    const json_t *labels = ctl_json_path(obj, "metadata.labels");
    const json_t *conds = ctl_json_path(obj, "status.conditions");
    const char *k;
    const json_t *v;
    size_t i;
    const json_t *c;

    if (name == NULL)
        return util_err_set(err, UTIL_EINVAL, "a Node without metadata.name");
    /*
     * One block: the struct, then the label hashes (8-byte aligned after it), then the
     * name. A node is reported every few minutes by its kubelet; one allocation keeps the
     * cache at about a hundred bytes plus 8 per label.
     */
    size_t nl = json_object_size(labels), namelen = strlen(name);
    struct ctl_node *n = util_malloc(sizeof(*n) + nl * sizeof(uint64_t) + namelen + 1);
    memset(n, 0, sizeof(*n));
    n->labels = (uint64_t *)(n + 1);
    n->name = (char *)(n->labels + nl);
    memcpy(n->name, name, namelen + 1);
    n->created = ctl_json_time(obj, "metadata.creationTimestamp");
    json_object_foreach((json_t *)labels, k, v)
    {
        if (json_is_string(v))
            n->labels[n->nlabels++] = ctl_label_hash(k, json_string_value(v));
    }
    qsort(n->labels, n->nlabels, sizeof(*n->labels), ctl_u64_cmp);
    json_array_foreach(conds, i, c)
    {
        const char *type = json_string_value(json_object_get(c, "type"));
        const char *status = json_string_value(json_object_get(c, "status"));
        if (type != NULL && strcmp(type, "Ready") == 0)
            n->ready = status != NULL && strcmp(status, "True") == 0;
    }
    n->rro = ctl_node_rro_supported(obj);
    /* A node being drained is not a place to start a backup. */
    if (json_is_true(ctl_json_path(obj, "spec.unschedulable")))
        n->ready = false;
    *out = n;
    return 0;
}

void ctl_node_free(struct ctl_node *n)
{
    free(n);
}

/* Labels are kept only as hashes, so a selector pair is hashed the same way and searched. */
static bool ctl_node_has_label(const void *node, const char *key, const char *value)
{
    const struct ctl_node *n = node;
    uint64_t h = ctl_label_hash(key, value);
    return bsearch(&h, n->labels, n->nlabels, sizeof(*n->labels), ctl_u64_cmp) != NULL;
}

bool ctl_node_selected(const struct ctl_node *n, const struct ctl_policy *p)
{
    if (!p->valid)
        return p->has_selector && binding_selects(&p->selector, ctl_node_has_label, n);
    return binding_selects(&p->spec, ctl_node_has_label, n);
}

/* ---- Backups ---- */

int ctl_backup_from_json(struct ctl_backup *b, const json_t *obj, struct util_err *err)
{
    const char *ns = ctl_json_str(obj, "metadata.namespace");
    const char *name = ctl_json_str(obj, "metadata.name");
    const char *policy = ctl_json_str(obj, "spec.policy");
    const char *host = ctl_json_str(obj, "spec.host");
    const char *slot = ctl_json_str(obj, "spec.slot");
    const char *trigger = ctl_json_str(obj, "spec.trigger");
    const char *phase = ctl_json_str(obj, "status.phase");
    const json_t *annots = ctl_json_path(obj, "metadata.annotations");
    const char *slot_time = json_string_value(json_object_get(annots, CTL_ANNOT_SLOT_TIME));

    memset(b, 0, sizeof(*b));
    if (ns == NULL || name == NULL || policy == NULL || host == NULL)
        return util_err_set(err, UTIL_EINVAL, "Backup %s/%s lacks spec.policy or spec.host",
                            ns ? ns : "?", name ? name : "?");
    b->ns = util_strdup(ns);
    b->name = util_strdup(name);
    b->uid = ctl_dup_or_null(ctl_json_str(obj, "metadata.uid"));
    b->policy = util_strdup(policy);
    b->host = util_strdup(host);
    b->slot = util_strdup(slot ? slot : "");
    const char *pin = ctl_json_str(obj, "spec.pin.reason");
    b->pin_reason = pin != NULL && pin[0] != '\0' ? util_strdup(pin) : NULL;
    b->trigger = CTL_TRIGGER_MANUAL;
    if (trigger != NULL && strcmp(trigger, "scheduled") == 0)
        b->trigger = CTL_TRIGGER_SCHEDULED;
    else if (trigger != NULL && strcmp(trigger, "catch-up") == 0)
        b->trigger = CTL_TRIGGER_CATCH_UP;
    if (slot_time != NULL && util_parse_rfc3339(slot_time, &b->slot_time, NULL) == 0)
        b->has_slot_time = b->slot[0] != '\0';
    b->created = ctl_json_time(obj, "metadata.creationTimestamp");
    b->phase = CTL_PHASE_PENDING;
    b->has_status = phase != NULL;
    if (phase != NULL) {
        for (int p = CTL_PHASE_PENDING; p <= CTL_PHASE_FAILED; p++)
            if (strcmp(phase, ctl_phase_name(p)) == 0)
                b->phase = p;
    }
    b->reason = ctl_dup_or_null(ctl_json_str(obj, "status.reason"));
    b->started = ctl_json_time(obj, "status.startTime");
    b->completed = ctl_json_time(obj, "status.completionTime");
    b->deleting = ctl_json_path(obj, "metadata.deletionTimestamp") != NULL;
    b->good = binding_backup_success(obj, &b->good_at);
    return 0;
}

void ctl_backup_free(struct ctl_backup *b)
{
    free(b->ns);
    free(b->name);
    free(b->uid);
    free(b->policy);
    free(b->host);
    free(b->slot);
    free(b->reason);
    free(b->pin_reason);
    memset(b, 0, sizeof(*b));
}

/* ---- Jobs ---- */

int ctl_job_from_json(struct ctl_job *j, const json_t *obj, struct util_err *err)
{
    const char *ns = ctl_json_str(obj, "metadata.namespace");
    const char *name = ctl_json_str(obj, "metadata.name");
    const json_t *owners = ctl_json_path(obj, "metadata.ownerReferences");
    const json_t *conds = ctl_json_path(obj, "status.conditions");
    size_t i;
    const json_t *o;

    memset(j, 0, sizeof(*j));
    if (ns == NULL || name == NULL)
        return util_err_set(err, UTIL_EINVAL, "a Job without metadata.name or namespace");
    j->ns = util_strdup(ns);
    j->name = util_strdup(name);
    json_array_foreach(owners, i, o)
    {
        const char *kind = json_string_value(json_object_get(o, "kind"));
        const char *oname = json_string_value(json_object_get(o, "name"));
        if (kind != NULL && oname != NULL && strcmp(kind, "Backup") == 0 && j->owner == NULL)
            j->owner = util_strdup(oname);
    }
    j->started = ctl_json_time(obj, "status.startTime");
    j->deleting = ctl_json_path(obj, "metadata.deletionTimestamp") != NULL;
    j->active = (int)json_integer_value(ctl_json_path(obj, "status.active"));
    json_array_foreach(conds, i, o)
    {
        const char *type = json_string_value(json_object_get(o, "type"));
        const char *status = json_string_value(json_object_get(o, "status"));
        if (type == NULL || status == NULL || strcmp(status, "True") != 0)
            continue;
        if (strcmp(type, "Complete") == 0) {
            j->finished = true;
            j->succeeded = true;
            j->completed = ctl_json_time(o, "lastTransitionTime");
        } else if (strcmp(type, "Failed") == 0) {
            j->finished = true;
            j->succeeded = false;
            j->completed = ctl_json_time(o, "lastTransitionTime");
            free(j->fail_reason);
            j->fail_reason = ctl_dup_or_null(json_string_value(json_object_get(o, "reason")));
        }
    }
    if (j->finished && j->completed == 0)
        j->completed = ctl_json_time(obj, "status.completionTime");
    return 0;
}

void ctl_job_free(struct ctl_job *j)
{
    free(j->ns);
    free(j->name);
    free(j->owner);
    free(j->fail_reason);
    memset(j, 0, sizeof(*j));
}

/* ---- policies ---- */

static void ctl_schedule_hash(const struct policy *spec, char out[17])
{
    struct util_buf b;
    static const char hex[] = "0123456789abcdef";
    util_buf_init(&b);
    if (spec->has_schedule)
        util_buf_printf(&b, "%s\n%s\n%lld", spec->schedule.cron_text, spec->schedule.timezone,
                        (long long)spec->schedule.jitter);
    uint64_t h = util_hash(b.data ? b.data : "", b.len);
    util_buf_free(&b);
    for (int i = 0; i < 16; i++)
        out[i] = hex[(h >> (60 - 4 * i)) & 0xf];
    out[16] = '\0';
}

/* An invalid policy is kept with its message: its status must say why it does nothing. */
int ctl_policy_from_json(struct ctl_policy *p, const json_t *obj, const struct tz_db *db,
                         int64_t now, struct util_err *err)
{
    const char *ns = ctl_json_str(obj, "metadata.namespace");
    const char *name = ctl_json_str(obj, "metadata.name");
    const char *hash = ctl_json_str(obj, "status.scheduleHash");
    struct policy_diags diags;
    struct util_buf msg;

    memset(p, 0, sizeof(*p));
    if (ns == NULL || name == NULL)
        return util_err_set(err, UTIL_EINVAL, "a BackupPolicy without metadata.name or namespace");
    p->ns = util_strdup(ns);
    p->name = util_strdup(name);
    p->uid =
        util_strdup(ctl_json_str(obj, "metadata.uid") ? ctl_json_str(obj, "metadata.uid") : "");
    p->key = util_asprintf("%s/%s", ns, name);
    p->generation = json_integer_value(ctl_json_path(obj, "metadata.generation"));
    p->created = ctl_json_time(obj, "metadata.creationTimestamp");

    policy_diags_init(&diags);
    if (policy_parse_json(&p->spec, obj, db, &diags) == 0) {
        p->valid = true;
    } else {
        util_buf_init(&msg);
        for (size_t i = 0; i < diags.n; i++)
            util_buf_printf(&msg, "%s%s%s%s", i ? "; " : "", diags.v[i].path,
                            diags.v[i].path[0] ? ": " : "", diags.v[i].message);
        p->invalid_message = msg.data ? util_buf_steal(&msg) : util_strdup("invalid policy");
    }
    policy_diags_free(&diags);

    struct util_err zerr = {0};
    if (binding_init(&p->bind, p->valid ? &p->spec : NULL, db, &zerr) != 0) {
        /* The validator accepted the name, so the database changed under us. */
        p->valid = false;
        p->invalid_message = util_asprintf("spec.schedule.timezone: %s", zerr.msg);
        policy_free(&p->spec);
        memset(&p->spec, 0, sizeof(p->spec));
        binding_init(&p->bind, NULL, db, &zerr);
    }

    if (!p->valid)
        p->has_selector = binding_selector_of(obj, &p->selector);
    p->deleting = ctl_json_path(obj, "metadata.deletionTimestamp") != NULL;
    util_map_init(&p->started);
    const json_t *started = ctl_json_path(obj, "status.startedSlots");
    const char *host;
    const json_t *v;
    json_object_foreach((json_t *)started, host, v)
    {
        int64_t t;
        if (json_is_string(v) && util_parse_rfc3339(json_string_value(v), &t, NULL) == 0) {
            int64_t *slot = util_malloc(sizeof(*slot));
            *slot = t;
            free(util_map_set(&p->started, host, slot));
        }
    }

    util_map_init(&p->enrolled);
    const json_t *enrolled = ctl_json_path(obj, "status." BINDING_ENROLLED);
    p->enrolled_kept = json_is_object(enrolled);
    json_object_foreach((json_t *)enrolled, host, v)
    {
        int64_t t;
        if (json_is_string(v) && util_parse_rfc3339(json_string_value(v), &t, NULL) == 0) {
            int64_t *at = util_malloc(sizeof(*at));
            *at = t;
            free(util_map_set(&p->enrolled, host, at));
        }
    }

    ctl_schedule_hash(&p->spec, p->schedule_hash);
    if (hash != NULL && strlen(hash) == 16) {
        p->status_has_hash = true;
        memcpy(p->status_hash, hash, 17);
    }
    p->status_changed_at = ctl_json_time(obj, "status.scheduleChangedAt");
    if (!p->status_has_hash)
        p->schedule_changed = p->created; /* never reconciled: the schedule began with the policy */
    else if (strcmp(p->status_hash, p->schedule_hash) == 0 && p->status_changed_at != 0)
        p->schedule_changed = p->status_changed_at;
    else
        p->schedule_changed = now;
    return 0;
}

bool ctl_policy_same_spec(const struct ctl_policy *a, const struct ctl_policy *b)
{
    if (a->generation != b->generation || a->deleting != b->deleting || a->valid != b->valid)
        return false;
    if (a->uid == NULL || b->uid == NULL)
        return a->uid == b->uid;
    return strcmp(a->uid, b->uid) == 0;
}

void ctl_policy_free(struct ctl_policy *p)
{
    free(p->ns);
    free(p->name);
    free(p->uid);
    free(p->key);
    free(p->invalid_message);
    if (p->valid)
        policy_free(&p->spec);
    binding_selector_free(&p->selector);
    binding_close(&p->bind);
    size_t it = 0;
    const char *k;
    void *v;
    while (util_map_next(&p->started, &it, &k, &v))
        free(v);
    util_map_close(&p->started);
    it = 0;
    while (util_map_next(&p->enrolled, &it, &k, &v))
        free(v);
    util_map_close(&p->enrolled);
    memset(p, 0, sizeof(*p));
}

int64_t ctl_policy_started_slot(const struct ctl_policy *p, const char *host)
{
    const int64_t *t = util_map_get(&p->started, host);
    return t != NULL ? *t : 0;
}

int64_t ctl_policy_enrolled(const struct ctl_policy *p, const char *host, int64_t selected_since,
                            int64_t node_created, int64_t now)
{
    const int64_t *t = util_map_get(&p->enrolled, host);
    return sched_enrolled(selected_since, t != NULL ? *t : 0, p->enrolled_kept, node_created, now);
}

json_t *ctl_policy_enrolled_json(const struct ctl_policy *p, const char *const *hosts,
                                 const int64_t *times, size_t n)
{
    json_t *out = json_object();
    char buf[UTIL_TIME_BUF];
    size_t it = 0;
    const char *k;
    void *v;
    while (util_map_next(&p->enrolled, &it, &k, &v))
        json_object_set_new(out, k, json_null());
    for (size_t i = 0; i < n; i++) {
        if (times[i] <= 0) {
            json_object_del(out, hosts[i]); /* not known yet: what is kept stays */
            continue;
        }
        util_format_utc(times[i], buf, sizeof(buf));
        json_object_set_new(out, hosts[i], json_string(buf));
    }
    return out;
}

static void ctl_allowlist_free_entries(struct ctl_allowlist *a)
{
    for (size_t i = 0; i < a->n; i++) {
        free(a->v[i].ns);
        for (size_t j = 0; j < a->v[i].nprefixes; j++)
            free(a->v[i].prefixes[j]);
        free(a->v[i].prefixes);
    }
}

static bool ctl_prefix_ok(const char *p)
{
    if (p[0] != '/')
        return false;
    for (const char *c = p; *c != '\0';) {
        while (*c == '/')
            c++;
        const char *end = strchr(c, '/');
        size_t n = end != NULL ? (size_t)(end - c) : strlen(c);
        if ((n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
            return false;
        c += n;
    }
    return true;
}

int ctl_allowlist_add(struct ctl_allowlist *a, const char *text, struct util_err *err)
{
    const char *colon = strchr(text, ':');
    size_t nslen = colon != NULL ? (size_t)(colon - text) : strlen(text);
    if (nslen == 0 || nslen > 253)
        return util_err_set(err, UTIL_EINVAL,
                            "\"%s\": NAMESPACE or NAMESPACE:/PREFIX[,/PREFIX...] (namespace "
                            "\"*\" for every one)",
                            text);
    struct ctl_allow e = {0};
    e.ns = util_strndup(text, nslen);
    if (colon != NULL) {
        const char *c = colon + 1;
        for (;;) {
            const char *comma = strchr(c, ',');
            size_t n = comma != NULL ? (size_t)(comma - c) : strlen(c);
            char *pre = util_strndup(c, n);
            /* "/a/b/" is "/a/b"; "/" stays. */
            while (strlen(pre) > 1 && pre[strlen(pre) - 1] == '/')
                pre[strlen(pre) - 1] = '\0';
            if (!ctl_prefix_ok(pre)) {
                util_err_set(err, UTIL_EINVAL,
                             "\"%s\": a path prefix must be absolute, without . or .. (\"%s\")",
                             text, pre);
                free(pre);
                struct ctl_allowlist one = {&e, 1};
                ctl_allowlist_free_entries(&one);
                return UTIL_EINVAL;
            }
            e.prefixes = util_realloc(e.prefixes, (e.nprefixes + 1) * sizeof(*e.prefixes));
            e.prefixes[e.nprefixes++] = pre;
            if (comma == NULL)
                break;
            c = comma + 1;
        }
    }
    a->v = util_realloc(a->v, (a->n + 1) * sizeof(*a->v));
    a->v[a->n++] = e;
    return 0;
}

void ctl_allowlist_free(struct ctl_allowlist *a)
{
    ctl_allowlist_free_entries(a);
    free(a->v);
    a->v = NULL;
    a->n = 0;
}

static bool ctl_under(const char *path, const char *prefix)
{
    size_t n = strlen(prefix);
    if (strcmp(prefix, "/") == 0)
        return true;
    return strncmp(path, prefix, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

char *ctl_allowlist_refuses(const struct ctl_allowlist *a, const char *ns,
                            const struct policy *spec)
{
    bool listed = false, any_path = false;
    for (size_t i = 0; i < a->n; i++) {
        if (strcmp(a->v[i].ns, "*") != 0 && strcmp(a->v[i].ns, ns) != 0)
            continue;
        listed = true;
        if (a->v[i].nprefixes == 0)
            any_path = true;
    }
    if (!listed)
        return util_asprintf("namespace %s may not run node backups: the controller's "
                             "--allow-node-backups (the chart's nodeBackups.allow) does not "
                             "list it (docs/security.md, \"Who may back up a node\")",
                             ns);
    if (any_path)
        return NULL;
    for (size_t k = 0; k < spec->npaths; k++) {
        bool ok = false;
        for (size_t i = 0; i < a->n && !ok; i++) {
            if (strcmp(a->v[i].ns, "*") != 0 && strcmp(a->v[i].ns, ns) != 0)
                continue;
            for (size_t j = 0; j < a->v[i].nprefixes && !ok; j++)
                ok = ctl_under(spec->paths[k], a->v[i].prefixes[j]);
        }
        if (!ok)
            return util_asprintf(
                "spec.paths: %s is outside the path prefixes namespace %s may "
                "back up (the controller's --allow-node-backups, docs/security.md, "
                "\"Who may back up a node\")",
                spec->paths[k], ns);
    }
    return NULL;
}

void ctl_policy_apply_allowlist(struct ctl_policy *p, const json_t *obj,
                                const struct ctl_allowlist *a, const struct tz_db *db)
{
    if (!p->valid || a == NULL)
        return;
    char *why = ctl_allowlist_refuses(a, p->ns, &p->spec);
    if (why == NULL)
        return;
    struct util_err zerr = {0};
    /* As an invalid policy is kept (ctl_policy_from_json): no spec, an empty binding. */
    p->valid = false;
    p->not_allowed = true;
    p->invalid_message = why;
    binding_close(&p->bind);
    policy_free(&p->spec);
    memset(&p->spec, 0, sizeof(p->spec));
    binding_init(&p->bind, NULL, db, &zerr);
    p->has_selector = binding_selector_of(obj, &p->selector);
}
