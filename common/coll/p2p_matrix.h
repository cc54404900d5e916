/* The all-pairs view of point-to-point performance (p2p_sweep --matrix):
 * per link class summaries, the pairs that stand out as slow, and the N x N
 * matrices for a heatmap. This is how a bad link or NIC shows up in
 * acceptance testing: one pair far below the others of its class. */
#ifndef PB_P2P_MATRIX_H
#define PB_P2P_MATRIX_H

typedef struct pb_p2p_matrix_pair_result {
    int a, b;
    const char *link;   /* pb_link_name of the pair */
    double lat_us;      /* half round trip at the small size */
    double bw_GBps;     /* streaming bandwidth at the large size */
    int slow;           /* set by pb_p2p_matrix_flag_slow */
} pb_p2p_matrix_pair_result;

typedef struct pb_p2p_matrix_class_summary {
    const char *link;
    int pairs;
    double lat_min, lat_median, lat_max;
    double bw_min, bw_median, bw_max;
} pb_p2p_matrix_class_summary;

/* Summaries per link class present (at most 3: intra, inter, mixed). Returns how many. */
int pb_p2p_matrix_summarize(const pb_p2p_matrix_pair_result *r, int n, pb_p2p_matrix_class_summary out[3]);

/* Flag pairs whose bandwidth is below bw_frac x their class median, or whose
 * latency is above lat_factor x their class median. Returns how many. */
int pb_p2p_matrix_flag_slow(pb_p2p_matrix_pair_result *r, int n, const pb_p2p_matrix_class_summary *s, int nclasses, double bw_frac,
                        double lat_factor);

/* Write an N x N matrix CSV ("rank,0,1,...") of latency (which = 0) or
 * bandwidth (which = 1); the diagonal is empty. Returns a status. */
int pb_p2p_matrix_write_csv(const char *path, int nranks, const pb_p2p_matrix_pair_result *r, int n, int which);

/* Write one line per pair: a,b,link_class,latency_us,bw_GBps,slow. */
int pb_p2p_matrix_write_pairs(const char *path, const pb_p2p_matrix_pair_result *r, int n);

#endif
