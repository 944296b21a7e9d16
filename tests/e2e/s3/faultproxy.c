/*
 * faultproxy: a plain-HTTP proxy on 127.0.0.1 in front of an S3 server (versitygw
 * over TLS), which injects the faults real object stores produce, on command.
 *
 *   faultproxy UPSTREAM_URL CA_FILE PORT_FILE
 *
 * It listens on an ephemeral loopback port (written to PORT_FILE), forwards each
 * request unchanged (the client signed it for the proxy's Host, which is passed on,
 * so the server checks the same signature), and answers the client, unless a fault
 * is queued. Faults are queued by requests to /__fault/ACTION/COUNT (not forwarded):
 *   503, slowdown          answer 503 ServiceUnavailable / SlowDown without forwarding
 *   reset_before           close the connection (RST) without forwarding
 *   reset_after            forward, then close without answering (the request landed)
 *   reset_mid              forward, answer the headers and half the body, then RST
 *   stall                  forward nothing, say nothing for 4 s, then close
 *   truncate_list          (ListObjectsV2 only) cut the XML in half, a clean response
 *   drop_token             (ListObjectsV2 only) remove NextContinuationToken
 *   del_retry, del_denied  (DeleteObjects only) turn the first COUNT <Deleted> of one
 *                          reply into <Error> InternalError / AccessDenied
 *   del_missing            (DeleteObjects only) drop the first COUNT <Deleted> of one reply
 *   del_stranger           (DeleteObjects only) add a <Deleted> for a key never asked
 *   error200               forward, then answer a 2xx with whitespace and an <Error>
 *                          InternalError document instead of its body (S3's way of
 *                          failing a CompleteMultipartUpload after the answer began)
 *   truncate_uploads       (ListMultipartUploads only) cut the XML in half
 *   drop_etag              forward, then answer without the reply's ETag header
 *   cut_body               forward, then answer the first half of the reply's body as
 *                          if it were all of it (a clean response)
 *   nosuchupload           (CompleteMultipartUpload only) answer 404 NoSuchUpload
 *                          without forwarding (the upload completed or aborted by then)
 *   snap_denied            (a GET of an object under snapshots/ only: a manifest or a
 *                          mark) answer 403 AccessDenied without forwarding
 * /__fault/count answers the number of requests forwarded or faulted since
 * /__fault/clear, which also empties the queue; /__fault/log the same requests, one
 * "METHOD TARGET" line each (at most LOG_MAX bytes of them), and /__fault/distinct how
 * many different lines that log has (a request the client sent again counts once);
 * /__fault/exit ends the proxy.
 *
 * Bounded: at most 64 connections at once, 32 MiB of request, 64 MiB of reply, and
 * it exits after 10 minutes whatever happens. Test code only; never installed.
 */
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONN   64
#define MAX_REQ    ((32 << 20) + 65536)
#define MAX_FAULTS 32
#define LIFETIME_S 600

struct buf {
    char *p;
    size_t len, cap;
};

static void buf_add(struct buf *b, const void *d, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        b->p = realloc(b->p, b->cap);
        if (b->p == NULL)
            abort();
    }
    memcpy(b->p + b->len, d, n);
    b->len += n;
    b->p[b->len] = '\0';
}

struct fault {
    char action[32];
    int count;
};

static struct fault faults[MAX_FAULTS];
static int n_faults;
static long n_requests;
/* The requests since the last clear, a line each ("METHOD TARGET\n"), cut at LOG_MAX. */
#define LOG_MAX (256 << 10)
static struct buf req_log;
static const char *upstream, *ca_file;

struct conn {
    int fd;
    struct buf in;
    time_t stall_until; /* a stalled connection: say nothing, close then */
};

static struct conn conns[MAX_CONN];

static void conn_close(struct conn *c, bool rst)
{
    if (rst) {
        struct linger l = {1, 0};
        setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
    }
    close(c->fd);
    c->fd = -1;
    c->stall_until = 0;
    free(c->in.p);
    c->in = (struct buf){0};
}

static void send_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0)
            return;
        p += w;
        n -= (size_t)w;
    }
}

static void reply(int fd, int status, const char *reason, const char *ctype, const char *body)
{
    char head[512];
    int n = snprintf(head, sizeof(head),
                     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n\r\n", status,
                     reason, ctype, strlen(body));
    send_all(fd, head, (size_t)n);
    send_all(fd, body, strlen(body));
}

/* Takes the first queued fault that applies to this request, if any. */
static bool take_fault(const char *method, const char *target, char *action)
{
    bool is_list = strcmp(method, "GET") == 0 && strstr(target, "list-type=2") != NULL;
    bool is_del = strcmp(method, "POST") == 0 && strstr(target, "?delete") != NULL;
    bool is_complete = strcmp(method, "POST") == 0 && strstr(target, "uploadId=") != NULL;
    bool is_uploads = strcmp(method, "GET") == 0 &&
                      (strstr(target, "&uploads=") != NULL || strstr(target, "?uploads") != NULL);
    bool is_snap_get = strcmp(method, "GET") == 0 && !is_list && !is_uploads &&
                       strstr(target, "/snapshots/") != NULL;
    for (int i = 0; i < n_faults; i++) {
        struct fault *f = &faults[i];
        bool list_only =
            strcmp(f->action, "truncate_list") == 0 || strcmp(f->action, "drop_token") == 0;
        bool del_only = strncmp(f->action, "del_", 4) == 0;
        bool uploads_only = strcmp(f->action, "truncate_uploads") == 0;
        bool complete_only = strcmp(f->action, "nosuchupload") == 0;
        bool snap_only = strcmp(f->action, "snap_denied") == 0;
        if (f->count <= 0 || (list_only && !is_list) || (del_only && !is_del) ||
            (uploads_only && !is_uploads) || (complete_only && !is_complete) ||
            (snap_only && !is_snap_get))
            continue;
        memcpy(action, f->action, sizeof(f->action));
        if (!del_only)
            f->count--;
        else
            f->count = -f->count; /* del_*: COUNT is keys, one reply; remember it negated */
        return true;
    }
    return false;
}

static int del_count_for(const char *action)
{
    for (int i = 0; i < n_faults; i++)
        if (strcmp(faults[i].action, action) == 0 && faults[i].count < 0) {
            int n = -faults[i].count;
            faults[i].count = 0;
            return n;
        }
    return 0;
}

struct upstream_reply {
    long status;
    struct buf headers, body;
};

static size_t on_hdr(char *p, size_t s, size_t n, void *ud)
{
    struct upstream_reply *r = ud;
    size_t len = s * n;
    if (strncasecmp(p, "HTTP/", 5) == 0) {
        r->headers.len = 0;
        return len;
    }
    if (strncasecmp(p, "content-length:", 15) == 0 ||
        strncasecmp(p, "transfer-encoding:", 18) == 0 || strncasecmp(p, "connection:", 11) == 0 ||
        len <= 2)
        return len;
    buf_add(&r->headers, p, len);
    return len;
}

static size_t on_body(char *p, size_t s, size_t n, void *ud)
{
    struct upstream_reply *r = ud;
    if (r->body.len + s * n > (64u << 20))
        return 0;
    buf_add(&r->body, p, s * n);
    return s * n;
}

/* Forwards one request; returns 0 and fills r, or -1. */
static int forward(const char *method, const char *target, const char *hdrs, const char *body,
                   size_t body_len, struct upstream_reply *r)
{
    CURL *e = curl_easy_init();
    struct curl_slist *h = NULL;
    char url[4096];
    int rc;
    snprintf(url, sizeof(url), "%s%s", upstream, target);
    /* Every header the client sent but the ones about the connection and length. */
    for (const char *p = hdrs; *p;) {
        const char *eol = strstr(p, "\r\n");
        size_t n = eol != NULL ? (size_t)(eol - p) : strlen(p);
        char line[8192];
        if (n > 0 && n < sizeof(line)) {
            memcpy(line, p, n);
            line[n] = '\0';
            if (strncasecmp(line, "content-length:", 15) != 0 &&
                strncasecmp(line, "connection:", 11) != 0 &&
                strncasecmp(line, "transfer-encoding:", 18) != 0)
                h = curl_slist_append(h, line);
        }
        p += n + (eol != NULL ? 2 : 0);
        if (eol == NULL)
            break;
    }
    h = curl_slist_append(h, "Expect:");
    h = curl_slist_append(h, "Accept:");
    h = curl_slist_append(h, "User-Agent:");
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_PATH_AS_IS, 1L);
    curl_easy_setopt(e, CURLOPT_CAINFO, ca_file);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_hdr);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(e, CURLOPT_TIMEOUT, 60L);
    if (strcmp(method, "HEAD") == 0) {
        curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
    } else if (strcmp(method, "GET") != 0 || body_len > 0) {
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
        if (strcmp(method, "DELETE") != 0 || body_len > 0) {
            curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
            curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
        }
    }
    rc = curl_easy_perform(e) == CURLE_OK ? 0 : -1;
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &r->status);
    curl_slist_free_all(h);
    curl_easy_cleanup(e);
    return rc;
}

/* Rewrites the first n <Deleted> of a DeleteResult (mode: 'r'etry, 'd'enied, 'm'issing). */
static void rewrite_delete(struct buf *body, int n, char mode)
{
    struct buf out = {0};
    const char *p = body->p;
    while (p != NULL && *p) {
        const char *d = strstr(p, "<Deleted>");
        if (d == NULL || n <= 0) {
            buf_add(&out, p, strlen(p));
            break;
        }
        const char *end = strstr(d, "</Deleted>");
        const char *k1 = strstr(d, "<Key>"), *k2 = k1 != NULL ? strstr(k1, "</Key>") : NULL;
        if (end == NULL || k1 == NULL || k2 == NULL || k2 > end) {
            buf_add(&out, p, strlen(p));
            break;
        }
        buf_add(&out, p, (size_t)(d - p));
        if (mode != 'm') {
            buf_add(&out, "<Error>", 7);
            buf_add(&out, k1, (size_t)(k2 + 6 - k1));
            const char *code = mode == 'r' ? "<Code>InternalError</Code><Message>We encountered "
                                             "an internal error. Please try again.</Message>"
                                           : "<Code>AccessDenied</Code><Message>Access "
                                             "Denied</Message>";
            buf_add(&out, code, strlen(code));
            buf_add(&out, "</Error>", 8);
        }
        p = end + 10;
        n--;
    }
    free(body->p);
    *body = out;
}

static void answer(int fd, struct upstream_reply *r, size_t body_len, bool rst_after)
{
    char head[256];
    int n = snprintf(head, sizeof(head), "HTTP/1.1 %ld X\r\n", r->status);
    send_all(fd, head, (size_t)n);
    send_all(fd, r->headers.p != NULL ? r->headers.p : "", r->headers.len);
    n = snprintf(head, sizeof(head), "Content-Length: %zu\r\n\r\n",
                 rst_after ? r->body.len : body_len);
    send_all(fd, head, (size_t)n);
    if (body_len > 0)
        send_all(fd, r->body.p, body_len);
}

/* The number of different lines of req_log (quadratic: a test's log has tens of lines). */
static long log_distinct(void)
{
    long n = 0;
    const char *p = req_log.p, *end = req_log.p + req_log.len;
    for (const char *l = p; l != NULL && l < end;) {
        const char *e = memchr(l, '\n', (size_t)(end - l));
        size_t len = (size_t)((e != NULL ? e : end) - l);
        bool seen = false;
        for (const char *m = p; m < l && !seen;) {
            const char *f = memchr(m, '\n', (size_t)(l - m));
            size_t mlen = (size_t)((f != NULL ? f : l) - m);
            seen = mlen == len && memcmp(m, l, len) == 0;
            m = f != NULL ? f + 1 : l;
        }
        n += !seen;
        l = e != NULL ? e + 1 : end;
    }
    return n;
}

/* Handles one complete request; returns false when the connection must close (with RST). */
static bool handle(struct conn *c, const char *method, const char *target, const char *hdrs,
                   const char *body, size_t body_len, bool is_head)
{
    char action[32] = "";
    struct upstream_reply r = {0};
    bool keep = true;

    if (strncmp(target, "/__fault/", 9) == 0) {
        char act[32] = "";
        int count = 1;
        sscanf(target + 9, "%31[^/]/%d", act, &count);
        if (strcmp(act, "count") == 0) {
            char num[32];
            snprintf(num, sizeof(num), "%ld", n_requests);
            reply(c->fd, 200, "OK", "text/plain", num);
        } else if (strcmp(act, "log") == 0) {
            reply(c->fd, 200, "OK", "text/plain", req_log.p != NULL ? req_log.p : "");
        } else if (strcmp(act, "distinct") == 0) {
            char num[32];
            snprintf(num, sizeof(num), "%ld", log_distinct());
            reply(c->fd, 200, "OK", "text/plain", num);
        } else if (strcmp(act, "clear") == 0) {
            n_faults = 0;
            n_requests = 0;
            req_log.len = 0;
            reply(c->fd, 200, "OK", "text/plain", "cleared");
        } else if (strcmp(act, "exit") == 0) {
            reply(c->fd, 200, "OK", "text/plain", "bye");
            exit(0);
        } else if (n_faults < MAX_FAULTS) {
            snprintf(faults[n_faults].action, sizeof(faults[0].action), "%s", act);
            faults[n_faults++].count = count;
            reply(c->fd, 200, "OK", "text/plain", "queued");
        }
        return true;
    }
    n_requests++;
    if (req_log.len + strlen(method) + strlen(target) + 2 <= LOG_MAX) {
        buf_add(&req_log, method, strlen(method));
        buf_add(&req_log, " ", 1);
        buf_add(&req_log, target, strlen(target));
        buf_add(&req_log, "\n", 1);
    }
    take_fault(method, target, action);
    if (strcmp(action, "503") == 0 || strcmp(action, "slowdown") == 0) {
        bool slow = action[0] == 's';
        char xml[256];
        snprintf(xml, sizeof(xml),
                 "<?xml version=\"1.0\"?><Error><Code>%s</Code><Message>%s"
                 "</Message></Error>",
                 slow ? "SlowDown" : "ServiceUnavailable",
                 slow ? "Please reduce your request rate." : "Service is unavailable.");
        reply(c->fd, 503, "Service Unavailable", "application/xml", is_head ? "" : xml);
        return true;
    }
    if (strcmp(action, "nosuchupload") == 0) {
        reply(c->fd, 404, "Not Found", "application/xml",
              "<?xml version=\"1.0\"?><Error><Code>NoSuchUpload</Code><Message>The specified "
              "multipart upload does not exist.</Message></Error>");
        return true;
    }
    if (strcmp(action, "snap_denied") == 0) {
        reply(c->fd, 403, "Forbidden", "application/xml",
              "<?xml version=\"1.0\"?><Error><Code>AccessDenied</Code><Message>Access "
              "Denied</Message></Error>");
        return true;
    }
    if (strcmp(action, "reset_before") == 0)
        return false;
    if (strcmp(action, "stall") == 0) {
        c->stall_until = time(NULL) + 4; /* other connections are served meanwhile */
        return true;
    }
    if (forward(method, target, hdrs, body, body_len, &r) != 0) {
        reply(c->fd, 502, "Bad Gateway", "text/plain", "upstream failed");
        goto out;
    }
    if (strcmp(action, "reset_after") == 0) {
        keep = false;
        goto out;
    }
    if (strcmp(action, "reset_mid") == 0) {
        answer(c->fd, &r, r.body.len / 2, true);
        keep = false;
        goto out;
    }
    if (strcmp(action, "drop_etag") == 0 && r.headers.p != NULL) {
        for (char *l = r.headers.p; l != NULL && *l;) {
            char *eol = strstr(l, "\r\n");
            char *next = eol != NULL ? eol + 2 : l + strlen(l);
            if (strncasecmp(l, "etag:", 5) == 0) {
                memmove(l, next, strlen(next) + 1);
                r.headers.len = strlen(r.headers.p);
                continue;
            }
            l = next;
        }
    }
    if (strcmp(action, "error200") == 0 && r.status >= 200 && r.status < 300) {
        const char *err = "  \n  <?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error>"
                          "<Code>InternalError</Code><Message>We encountered an internal "
                          "error. Please try again.</Message></Error>";
        r.status = 200;
        r.body.len = 0;
        buf_add(&r.body, err, strlen(err));
    } else if ((strcmp(action, "truncate_list") == 0 || strcmp(action, "truncate_uploads") == 0 ||
                strcmp(action, "cut_body") == 0) &&
               r.body.len > 0) {
        r.body.len /= 2;
        r.body.p[r.body.len] = '\0';
    } else if (strcmp(action, "drop_token") == 0 && r.body.p != NULL) {
        char *t = strstr(r.body.p, "<NextContinuationToken>");
        char *e = t != NULL ? strstr(t, "</NextContinuationToken>") : NULL;
        if (e != NULL) {
            e += strlen("</NextContinuationToken>");
            memmove(t, e, strlen(e) + 1);
            r.body.len = strlen(r.body.p);
        }
    } else if (strncmp(action, "del_", 4) == 0 && r.body.p != NULL) {
        int n = del_count_for(action);
        if (strcmp(action, "del_stranger") == 0) {
            char *end = strstr(r.body.p, "</DeleteResult>");
            if (end != NULL) {
                struct buf nb = {0};
                buf_add(&nb, r.body.p, (size_t)(end - r.body.p));
                const char *s = "<Deleted><Key>never/asked/for</Key></Deleted></DeleteResult>";
                buf_add(&nb, s, strlen(s));
                free(r.body.p);
                r.body = nb;
            }
        } else {
            rewrite_delete(&r.body, n, action[4] == 'r' ? 'r' : action[4] == 'd' ? 'd' : 'm');
        }
    }
    answer(c->fd, &r, is_head ? 0 : r.body.len, false);
out:
    free(r.headers.p);
    free(r.body.p);
    return keep;
}

/* Handles every complete request in c's buffer; false when c was closed. */
static bool serve(struct conn *c)
{
    for (;;) {
        char *end = c->in.p != NULL ? strstr(c->in.p, "\r\n\r\n") : NULL;
        if (c->stall_until != 0)
            return true;
        char method[16], target[4096];
        size_t head_len, clen = 0;
        if (end == NULL)
            return true;
        head_len = (size_t)(end - c->in.p) + 4;
        if (sscanf(c->in.p, "%15s %4095s", method, target) != 2) {
            conn_close(c, true);
            return false;
        }
        for (char *p = c->in.p; p < end; p++)
            if (strncasecmp(p, "\r\ncontent-length:", 17) == 0)
                clen = strtoul(p + 17, NULL, 10);
        if (clen > (32u << 20)) {
            conn_close(c, true);
            return false;
        }
        if (c->in.len < head_len + clen)
            return true;
        char *eol = strstr(c->in.p, "\r\n");
        size_t hlen = head_len - (size_t)(eol + 2 - c->in.p);
        char *hdrs = strndup(eol + 2, hlen);
        char *body = malloc(clen + 1);
        memcpy(body, c->in.p + head_len, clen);
        body[clen] = '\0';
        bool keep = handle(c, method, target, hdrs, body, clen, strcmp(method, "HEAD") == 0);
        free(hdrs);
        free(body);
        if (!keep) {
            conn_close(c, true);
            return false;
        }
        memmove(c->in.p, c->in.p + head_len + clen, c->in.len - head_len - clen + 1);
        c->in.len -= head_len + clen;
    }
}

int main(int argc, char **argv)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof(a);
    int ls, one = 1;
    time_t start = time(NULL);
    FILE *f;

    if (argc != 4) {
        fprintf(stderr, "usage: faultproxy UPSTREAM_URL CA_FILE PORT_FILE\n");
        return 2;
    }
    upstream = argv[1];
    ca_file = argv[2];
    curl_global_init(CURL_GLOBAL_DEFAULT);
    ls = socket(AF_INET, SOCK_STREAM, 0);
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(ls, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(ls, 16) != 0 ||
        getsockname(ls, (struct sockaddr *)&a, &alen) != 0) {
        perror("faultproxy: listen");
        return 1;
    }
    f = fopen(argv[3], "w");
    if (f == NULL)
        return 1;
    fprintf(f, "%d\n", ntohs(a.sin_port));
    fclose(f);
    for (int i = 0; i < MAX_CONN; i++)
        conns[i].fd = -1;
    while (time(NULL) - start < LIFETIME_S) {
        struct pollfd pf[MAX_CONN + 1];
        int map[MAX_CONN + 1], n = 0;
        pf[n] = (struct pollfd){.fd = ls, .events = POLLIN};
        map[n++] = -1;
        for (int i = 0; i < MAX_CONN; i++)
            if (conns[i].fd >= 0) {
                pf[n] = (struct pollfd){.fd = conns[i].fd, .events = POLLIN};
                map[n++] = i;
            }
        for (int i = 0; i < MAX_CONN; i++)
            if (conns[i].fd >= 0 && conns[i].stall_until != 0 && time(NULL) >= conns[i].stall_until)
                conn_close(&conns[i], true);
        if (poll(pf, (nfds_t)n, 200) <= 0)
            continue;
        for (int k = 0; k < n; k++) {
            if (!(pf[k].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            if (map[k] < 0) {
                int fd = accept(ls, NULL, NULL);
                int slot = -1;
                for (int i = 0; i < MAX_CONN && slot < 0; i++)
                    if (conns[i].fd < 0)
                        slot = i;
                if (fd >= 0 && slot < 0)
                    close(fd);
                else if (fd >= 0)
                    conns[slot].fd = fd;
                continue;
            }
            struct conn *c = &conns[map[k]];
            char tmp[65536];
            ssize_t r = recv(c->fd, tmp, sizeof(tmp), 0);
            if (r <= 0) {
                conn_close(c, false);
                continue;
            }
            buf_add(&c->in, tmp, (size_t)r);
            if (c->in.len > MAX_REQ) {
                conn_close(c, true);
                continue;
            }
            serve(c);
        }
    }
    return 0;
}
