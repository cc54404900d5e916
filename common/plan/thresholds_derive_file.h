/* acceptance --derive's output: a threshold file from a golden run. Each rule
 * plan/thresholds_derive.h proposes for the run is judged on it as a check
 * would judge it (plan/thresholds_run.h), then written at the measured value
 * less the margin (plus it for a time), with a comment naming the value, the
 * run and its date; a figure the run cannot be trusted for becomes a comment. */
#ifndef PB_THRESHOLDS_DERIVE_FILE_H
#define PB_THRESHOLDS_DERIVE_FILE_H

/* The file derived from the run in folder `run` with `margin` (a fraction),
 * written to `output` whole or not at all, or to stdout when NULL. PB_OK, or
 * PB_ERR_ENV with a message when the run holds no trustworthy figure or the
 * file cannot be written. */
int pb_thresholds_derive_file_write(const char *run, double margin, const char *output);

#endif
