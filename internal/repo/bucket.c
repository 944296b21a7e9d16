/*
 * The upload token bucket (repo_records.h, "the upload token bucket"): pure, time is
 * an input.
 */
#include "repo/repo.h"

void repo_bucket_init(struct repo_bucket *b, uint64_t rate, uint64_t now_ns)
{
    b->rate = (double)rate;
    b->cap = b->rate / 20 > 512 ? b->rate / 20 : 512;
    b->tokens = b->cap;
    b->last = now_ns;
}

static void repo_bucket_fill(struct repo_bucket *b, uint64_t now_ns)
{
    if (now_ns > b->last) {
        b->tokens += b->rate * (double)(now_ns - b->last) / 1e9;
        if (b->tokens > b->cap)
            b->tokens = b->cap;
        b->last = now_ns;
    }
}

size_t repo_bucket_take(struct repo_bucket *b, uint64_t now_ns, size_t want)
{
    repo_bucket_fill(b, now_ns);
    double have = b->tokens < 0 ? 0 : b->tokens;
    size_t got = (double)want <= have ? want : (size_t)have;
    b->tokens -= (double)got;
    return got;
}

uint64_t repo_bucket_wait(struct repo_bucket *b, uint64_t now_ns, size_t want)
{
    repo_bucket_fill(b, now_ns);
    double need = (double)want < b->cap ? (double)want : b->cap;
    if (need < 1)
        need = 1;
    if (b->tokens >= need)
        return 0;
    return (uint64_t)((need - b->tokens) * 1e9 / b->rate) + 1;
}
