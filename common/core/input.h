/* Opening an input file without hanging. A FIFO with no writer blocks open()
 * and then the first read forever, and no watchdog covers the reading of
 * options and input files. A regular file opens as usual; a FIFO, socket or
 * terminal must have data (or its end) within the wait, else the open fails
 * with ETIMEDOUT. The wait is PB_INPUT_WAIT_S seconds, or
 * PARABENCH_INPUT_WAIT_S (a number of seconds, 0.1 to 3600) when set. */
#ifndef PB_INPUT_H
#define PB_INPUT_H

#include <stdio.h>

#define PB_INPUT_WAIT_S 30.0

/* fopen(path, "r") that never blocks longer than the wait: NULL with errno
 * set (ETIMEDOUT: nothing arrived; EINVAL: PARABENCH_INPUT_WAIT_S is not a
 * number of seconds). */
FILE *pb_input_open(const char *path);

/* The reason for pb_input_open's failure `err`, in words (for messages). */
const char *pb_input_why(int err);

#endif
