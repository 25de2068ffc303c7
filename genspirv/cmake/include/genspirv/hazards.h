/* genspirv/hazards.h -- which commands need a memory barrier before them.
 *
 * Header-only C99 (and C++), no Vulkan include, no allocation: the same rules
 * as genspirv.runtime.hazards, and tested to decide exactly as it does.
 *
 * The tracker holds the byte ranges read and written since the last recorded
 * barrier. Before an access it reports a hazard iff a read overlaps a pending
 * write (RAW), or a write overlaps a pending write (WAW) or a pending read
 * (WAR); overlap means the same memory object and intersecting
 * [offset, offset + size). Only a recorded barrier clears the pending ranges:
 * not a submit, a flush or a fence wait, since none of those orders two
 * commands on the device.
 *
 * Storage: the caller hands in two arrays of genspirv_interval (pending reads
 * and pending writes) with their capacity; the tracker never allocates.
 * Touching or overlapping ranges of one memory object merge into one
 * interval, so a capacity of a few per buffer in use is plenty. When an array
 * is full, the tracker stops remembering which ranges that set holds and
 * treats it as overlapping everything until the next barrier: it may ask for
 * a barrier it did not need, never miss one it needed.
 *
 * A dispatch uses the generated table's masks directly: range i is read if
 * bit i of read_mask is set and written if bit i of write_mask is set, so
 *     genspirv_tracker_access(&t, GENSPIRV_STAGE_COMPUTE, bound, m->binding_count,
 *                             m->readable_mask, m->writable_mask, &barrier)
 * and a copy from `src` to `dst` is ranges {src, dst} with masks 1 and 2.
 *
 * Policies: GENSPIRV_POLICY_SMART (barrier exactly on a hazard),
 * GENSPIRV_POLICY_ALWAYS (a barrier before every access while anything is
 * pending), GENSPIRV_POLICY_NONE (tests only: never, except before a host access).
 */
#ifndef GENSPIRV_HAZARDS_H
#define GENSPIRV_HAZARDS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Stages, as bits of the barrier's masks. */
#define GENSPIRV_STAGE_COMPUTE 1u
#define GENSPIRV_STAGE_TRANSFER 2u
#define GENSPIRV_STAGE_HOST 4u
#define GENSPIRV_DEVICE_STAGES (GENSPIRV_STAGE_COMPUTE | GENSPIRV_STAGE_TRANSFER)

/* Hazard kinds, as bits of genspirv_barrier.kinds. */
#define GENSPIRV_HAZARD_RAW 1u
#define GENSPIRV_HAZARD_WAW 2u
#define GENSPIRV_HAZARD_WAR 4u

typedef enum genspirv_policy {
    GENSPIRV_POLICY_SMART = 0,
    GENSPIRV_POLICY_ALWAYS = 1,
    GENSPIRV_POLICY_NONE = 2
} genspirv_policy;

typedef enum genspirv_decision {
    GENSPIRV_NOTHING_PENDING = 0, /* no barrier, and none could have been needed */
    GENSPIRV_BARRIER = 1,         /* record *barrier before the access */
    GENSPIRV_SKIPPED = 2          /* something was pending, and no hazard: no barrier */
} genspirv_decision;

/* Bytes [offset, offset + size) of one memory object (a VkBuffer handle, an id...). */
typedef struct genspirv_range {
    uint64_t memory;
    uint64_t offset;
    uint64_t size;
} genspirv_range;

/* One pending interval [lo, hi) of one memory object: the tracker's storage. */
typedef struct genspirv_interval {
    uint64_t memory;
    uint64_t lo;
    uint64_t hi;
} genspirv_interval;

/* What one global memory barrier must cover (GENSPIRV_STAGE_* bits). src_*:
 * everything pending, since the barrier clears it all; dst_*: every device
 * stage plus the access's own, since what follows finds nothing pending. */
typedef struct genspirv_barrier {
    unsigned src_stages;
    unsigned src_writes;   /* stages whose writes must be made available */
    unsigned dst_stages;
    unsigned dst_reads;    /* stages whose reads must see them */
    unsigned dst_writes;
    unsigned kinds;        /* GENSPIRV_HAZARD_* bits; 0 under GENSPIRV_POLICY_ALWAYS */
} genspirv_barrier;

typedef struct genspirv_tracker {
    genspirv_interval *reads;
    size_t read_count;
    size_t read_capacity;
    genspirv_interval *writes;
    size_t write_count;
    size_t write_capacity;
    unsigned read_stages;  /* stages with a pending read */
    unsigned write_stages; /* stages with a pending write */
    int reads_overflowed;  /* reads storage was full: assume a pending read everywhere */
    int writes_overflowed; /* writes storage was full: assume a pending write everywhere */
    genspirv_policy policy;
} genspirv_tracker;

/* Set up *t over caller-owned storage (capacities may be 0: always conservative). */
static inline void genspirv_tracker_init(genspirv_tracker *t, genspirv_policy policy,
                                         genspirv_interval *reads, size_t read_capacity,
                                         genspirv_interval *writes, size_t write_capacity)
{
    t->reads = reads;
    t->read_count = 0;
    t->read_capacity = read_capacity;
    t->writes = writes;
    t->write_count = 0;
    t->write_capacity = write_capacity;
    t->read_stages = 0;
    t->write_stages = 0;
    t->reads_overflowed = 0;
    t->writes_overflowed = 0;
    t->policy = policy;
}

static inline int genspirv_tracker_pending(const genspirv_tracker *t)
{
    return (t->read_stages | t->write_stages) != 0;
}

/* Forget everything pending: call only when a barrier has been recorded. */
static inline void genspirv_tracker_clear(genspirv_tracker *t)
{
    t->read_count = 0;
    t->reads_overflowed = 0;
    t->write_count = 0;
    t->writes_overflowed = 0;
    t->read_stages = 0;
    t->write_stages = 0;
}

/* The end of a range, saturating instead of wrapping past 2^64. */
static inline uint64_t genspirv_range_end(const genspirv_range *r)
{
    return r->size > UINT64_MAX - r->offset ? UINT64_MAX : r->offset + r->size;
}

static inline int genspirv_intervals_hit(const genspirv_interval *set, size_t count, int overflowed,
                                         const genspirv_range *r)
{
    uint64_t lo = r->offset, hi = genspirv_range_end(r);
    size_t i;
    if (overflowed) {
        return 1;
    }
    for (i = 0; i < count; i++) {
        const genspirv_interval *p = &set[i];
        if (p->memory == r->memory && p->lo < hi && lo < p->hi) {
            return 1;
        }
    }
    return 0;
}

/* Add r to the set, merging it with every interval of its memory it overlaps
 * or touches (they are disjoint and apart, so one pass finds them all). */
static inline void genspirv_intervals_add(genspirv_interval *set, size_t *count, size_t capacity,
                                          int *overflowed, const genspirv_range *r)
{
    uint64_t lo = r->offset, hi = genspirv_range_end(r);
    size_t i = 0;
    if (*overflowed) {
        return;
    }
    while (i < *count) {
        genspirv_interval *p = &set[i];
        if (p->memory == r->memory && p->lo <= hi && lo <= p->hi) {
            lo = p->lo < lo ? p->lo : lo;
            hi = p->hi > hi ? p->hi : hi;
            set[i] = set[--*count];
        } else {
            i++;
        }
    }
    if (*count == capacity) {
        *overflowed = 1;
        return;
    }
    set[*count].memory = r->memory;
    set[*count].lo = lo;
    set[*count].hi = hi;
    ++*count;
}

/* The hazard kinds (GENSPIRV_HAZARD_* bits) an access has against what is pending. */
static inline unsigned genspirv_tracker_hazards(const genspirv_tracker *t, const genspirv_range *ranges,
                                                size_t count, uint64_t read_mask, uint64_t write_mask)
{
    unsigned kinds = 0;
    size_t i;
    if (count > 64) {
        /* More ranges than the masks describe: a caller error, answered conservatively. */
        return GENSPIRV_HAZARD_RAW | GENSPIRV_HAZARD_WAW | GENSPIRV_HAZARD_WAR;
    }
    for (i = 0; i < count; i++) {
        const genspirv_range *r = &ranges[i];
        if (r->size == 0) {
            continue;
        }
        if ((read_mask >> i & 1u) && genspirv_intervals_hit(t->writes, t->write_count, t->writes_overflowed, r)) {
            kinds |= GENSPIRV_HAZARD_RAW;
        }
        if ((write_mask >> i & 1u) && genspirv_intervals_hit(t->writes, t->write_count, t->writes_overflowed, r)) {
            kinds |= GENSPIRV_HAZARD_WAW;
        }
        if ((write_mask >> i & 1u) && genspirv_intervals_hit(t->reads, t->read_count, t->reads_overflowed, r)) {
            kinds |= GENSPIRV_HAZARD_WAR;
        }
    }
    return kinds;
}

/* Record an access as pending without deciding (one ordered by other means). */
static inline void genspirv_tracker_add_pending(genspirv_tracker *t, unsigned stage, const genspirv_range *ranges,
                                                size_t count, uint64_t read_mask, uint64_t write_mask)
{
    size_t i;
    if (count > 64) {
        /* Ranges the masks cannot describe: assume anything may be pending. */
        t->reads_overflowed = 1;
        t->writes_overflowed = 1;
        t->read_stages |= stage;
        t->write_stages |= stage;
        count = 64;
    }
    for (i = 0; i < count; i++) {
        const genspirv_range *r = &ranges[i];
        if (r->size == 0) {
            continue;
        }
        if (read_mask >> i & 1u) {
            genspirv_intervals_add(t->reads, &t->read_count, t->read_capacity, &t->reads_overflowed, r);
            t->read_stages |= stage;
        }
        if (write_mask >> i & 1u) {
            genspirv_intervals_add(t->writes, &t->write_count, t->write_capacity, &t->writes_overflowed, r);
            t->write_stages |= stage;
        }
    }
}

/* Decide for one access in `stage` (one GENSPIRV_STAGE_* bit), then record it
 * as pending. On GENSPIRV_BARRIER, *barrier says what to record before the
 * access, and the pending sets were cleared first. At most 64 ranges (the
 * masks' bits); more are answered with a barrier before and after. */
static inline genspirv_decision genspirv_tracker_access(genspirv_tracker *t, unsigned stage,
                                                        const genspirv_range *ranges, size_t count,
                                                        uint64_t read_mask, uint64_t write_mask,
                                                        genspirv_barrier *barrier)
{
    genspirv_decision decision = GENSPIRV_NOTHING_PENDING;
    if (genspirv_tracker_pending(t)) {
        unsigned kinds = 0;
        decision = GENSPIRV_SKIPPED;
        if (t->policy == GENSPIRV_POLICY_ALWAYS) {
            decision = GENSPIRV_BARRIER;
        } else if (t->policy == GENSPIRV_POLICY_SMART || stage == GENSPIRV_STAGE_HOST) {
            /* Host reads of mapped memory are never left unsynchronised, even under NONE. */
            kinds = genspirv_tracker_hazards(t, ranges, count, read_mask, write_mask);
            if (kinds != 0) {
                decision = GENSPIRV_BARRIER;
            }
        }
        if (decision == GENSPIRV_BARRIER) {
            barrier->src_stages = t->read_stages | t->write_stages;
            barrier->src_writes = t->write_stages;
            barrier->dst_stages = GENSPIRV_DEVICE_STAGES | stage;
            barrier->dst_reads = GENSPIRV_DEVICE_STAGES | stage;
            barrier->dst_writes = GENSPIRV_DEVICE_STAGES;
            barrier->kinds = kinds;
            genspirv_tracker_clear(t);
        }
    }
    genspirv_tracker_add_pending(t, stage, ranges, count, read_mask, write_mask);
    return decision;
}

/* A barrier ordering everything pending before everything after (e.g. before
 * handing results to another queue): 1 and *barrier filled, or 0 if nothing is pending. */
static inline int genspirv_tracker_barrier_all(genspirv_tracker *t, genspirv_barrier *barrier)
{
    if (!genspirv_tracker_pending(t)) {
        return 0;
    }
    barrier->src_stages = t->read_stages | t->write_stages;
    barrier->src_writes = t->write_stages;
    barrier->dst_stages = GENSPIRV_DEVICE_STAGES;
    barrier->dst_reads = GENSPIRV_DEVICE_STAGES;
    barrier->dst_writes = GENSPIRV_DEVICE_STAGES;
    barrier->kinds = 0;
    genspirv_tracker_clear(t);
    return 1;
}

#ifdef __cplusplus
}
#endif

#endif /* GENSPIRV_HAZARDS_H */
