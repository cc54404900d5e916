/* One registry of the files a run writes (and the files it reads that an
 * output must not overwrite). Every option naming an output registers it when
 * it is parsed; a second option naming the same file is refused, so one output
 * never silently destroys another. "The same file": the same string, the same
 * resolved directory and base name, or the same device and inode when the
 * file exists (a link or a second path to it). */
#ifndef PB_OUTPATH_H
#define PB_OUTPATH_H

/* Register `path`, given by `option` (e.g. "--csv"), as an output. A later
 * call for the same option replaces its entry (the last --csv wins, as for
 * any option). Refused with PB_ERR_USAGE: an empty name, a name ending in
 * '/', a directory, the same file as another registered path (the message
 * names both options), a file inside a run's results folder (one holding
 * meta.json or steps.tsv) unless PARABENCH_RUN names that folder (the run's own
 * steps; meta.json and steps.tsv never). PB_ERR_ENV: its directory is missing
 * or not writable. */
int pb_outpath_add(const char *option, const char *path);

/* As pb_outpath_add, for a file the run reads: only an output naming the
 * same file is refused. */
int pb_outpath_add_input(const char *option, const char *path);

/* Which files of an input directory the run reads, by base name. */
typedef int (*pb_outpath_reads_fn)(const char *name);

/* A directory the run reads files from (acceptance --results, plan --fit and
 * --calibrate): an output in it whose base name `reads` accepts is refused
 * with PB_ERR_USAGE naming both options, whichever was registered first.
 * PB_ERR_USAGE when `dir` is not a directory, or not a run's results folder
 * (it holds neither meta.json nor steps.tsv). */
int pb_outpath_add_input_dir(const char *option, const char *dir, pb_outpath_reads_fn reads);

/* Forget every registration (each parse of a command line starts empty). */
void pb_outpath_reset(void);

#endif
