/* How busy a node was around a measurement: the CPU time the kernel counted
 * (/proc/stat) against what the job's own ranks used (getrusage), so that a
 * figure measured while other processes ran, or while the hypervisor took
 * the CPUs (steal), is marked as such rather than judged. */
#ifndef PB_LOAD_H
#define PB_LOAD_H

typedef struct pb_load {
    double total_s, busy_s, steal_s; /* the node's CPU time, all CPUs: every state, busy (not idle, not steal), steal */
    double ours_s;                   /* this process's user + system time */
    int ok;                          /* /proc/stat was read */
} pb_load;

/* The node's counters from /proc/stat's first line ("cpu  user nice system
 * idle iowait irq softirq steal ..."), TICKS per second; PB_ERR_USAGE when the
 * line is not that. */
int pb_load_parse_stat(const char *line, long ticks, pb_load *out);

/* Now: /proc/stat and this process's CPU time (out->ok = 0 where /proc/stat
 * cannot be read: not Linux). */
void pb_load_sample(pb_load *out);

/* Between samples A and B of one node, while the job's ranks on it used
 * OURS_S CPU seconds: the share of the node's CPU time that other processes
 * used and the share stolen, each in [0, 1]. PB_ERR_USAGE when no time passed
 * or a sample is missing. */
typedef struct pb_load_share {
    double others, steal;
} pb_load_share;
int pb_load_share_of(const pb_load *a, const pb_load *b, double ours_s, pb_load_share *out);

#endif
