/*
 * The token bucket and the backoff: pure arithmetic on times and random numbers the
 * caller supplies, so the tests drive them with a fake clock.
 */
#include "kube/kube.h"

#define BUCKET_ONE 1000000 /* one token */

void kube_bucket_init(struct kube_bucket *b, double qps, unsigned burst, uint64_t now_ms)
{
    b->rate = 0;
    if (qps > 0) {
        double r = qps * 1000.0 + 0.5;
        b->rate = r < 1.0 ? 1 : r > 1e12 ? (int64_t)1e12 : (int64_t)r;
    }
    b->burst = (int64_t)(burst > 0 ? burst : 1) * BUCKET_ONE;
    b->tokens = b->burst;
    b->last_ms = now_ms;
}

uint64_t kube_bucket_take(struct kube_bucket *b, uint64_t now_ms)
{
    if (b->rate == 0)
        return 0;
    if (now_ms > b->last_ms) {
        uint64_t dt = now_ms - b->last_ms;
        /* A long idle time fills the bucket; the cap also keeps the product small. */
        if (dt > (uint64_t)(b->burst / b->rate) + 1)
            b->tokens = b->burst;
        else
            b->tokens += (int64_t)dt * b->rate;
        if (b->tokens > b->burst)
            b->tokens = b->burst;
        b->last_ms = now_ms;
    }
    if (b->tokens >= BUCKET_ONE) {
        b->tokens -= BUCKET_ONE;
        return 0;
    }
    /* Rounded up, so that waiting this long always finds a whole token. */
    return (uint64_t)((BUCKET_ONE - b->tokens + b->rate - 1) / b->rate);
}

void kube_backoff_init(struct kube_backoff *b, uint64_t base_ms, uint64_t cap_ms)
{
    b->base_ms = base_ms ? base_ms : KUBE_BACKOFF_BASE_MS;
    b->cap_ms = cap_ms ? cap_ms : KUBE_BACKOFF_CAP_MS;
    if (b->cap_ms < b->base_ms)
        b->cap_ms = b->base_ms;
    b->failures = 0;
}

uint64_t kube_backoff_next(struct kube_backoff *b, uint32_t rnd)
{
    uint64_t d = b->base_ms;
    for (unsigned i = 0; i < b->failures && d < b->cap_ms; i++)
        d *= 2;
    if (d > b->cap_ms)
        d = b->cap_ms;
    if (b->failures < 64)
        b->failures++;
    uint64_t half = d / 2;
    /* Uniform in [d - half, d]: (d - half) + rnd * (half + 1) / 2^32. */
    return d - half + (uint64_t)rnd * (half + 1) / ((uint64_t)UINT32_MAX + 1);
}

void kube_backoff_reset(struct kube_backoff *b)
{
    b->failures = 0;
}
