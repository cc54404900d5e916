/* Pipeline schedules by name: the one enum the planner's model and the
 * pipeline executor (workload/pp_schedule.h) share. */
#ifndef PB_PP_SCHED_H
#define PB_PP_SCHED_H

typedef enum { PB_PP_GPIPE, PB_PP_1F1B, PB_PP_INTERLEAVED, PB_PP_SCHED_COUNT } pb_pp_sched;

const char *pb_pp_sched_name(pb_pp_sched s);
const char *const *pb_pp_sched_names(void); /* NULL-terminated, in enum order */
/* "gpipe", "1f1b", "interleaved"; PB_ERR_USAGE naming `option` otherwise. */
int pb_pp_sched_parse(const char *option, const char *name, pb_pp_sched *out);

#endif
