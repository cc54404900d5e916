/* One reader for line-oriented input files (cluster files, threshold files,
 * result CSVs): each line whole
 * or refused, never split. fgets with a fixed buffer used to cut a long line
 * and hand its tail back as a line of its own, so a '#' comment could smuggle
 * in a key. Refused with the file and line (FILE:LINE): a line longer than
 * PB_LINES_MAX bytes, a NUL byte, CR-only line ends, a byte-order mark after
 * the start of the file. A leading UTF-8 BOM is skipped and CRLF is read as LF
 * (files from editors on Windows). */
#ifndef PB_LINES_H
#define PB_LINES_H

#include <stdio.h>

#define PB_LINES_MAX 4096

typedef struct pb_lines {
    FILE *fp;
    const char *path, *option;
    int lineno;
    int ended;        /* the last line read had its '\n' (0: the file was cut there) */
    int quiet;        /* refuse without printing: the caller reports `why` itself */
    int owns;         /* fp was opened here, closed by pb_lines_close */
    size_t max;       /* longest line accepted: PB_LINES_MAX unless the caller sets it after opening */
    const char *why;  /* after a refusal: what is wrong with line `lineno` ("is longer than ...") */
    char too_long[96];
    char *buf;
    size_t cap;
} pb_lines;

/* Open `path` for `option`: PB_OK, or PB_ERR_ENV naming both when it cannot be opened. */
int pb_lines_open(pb_lines *r, const char *path, const char *option);

/* Read an open stream (not closed here) labelled `path` in messages; quiet:
 * refusals only set `why` (parsers that hand their messages back). */
void pb_lines_from(pb_lines *r, FILE *fp, const char *path, const char *option, int quiet);

/* The next line, without its end of line, in *line (NULL at the end of the
 * file; valid until the next call). PB_OK, or PB_ERR_USAGE naming FILE:LINE. */
int pb_lines_next(pb_lines *r, char **line);

void pb_lines_close(pb_lines *r);

#endif
