/* parabench's version: the VERSION file's number and the git revision the
 * Makefile compiles into version.c alone (-D; the defaults below are for a
 * compile outside the Makefile), so that only version.o is rebuilt when they
 * change. Every binary prints the same string for --version, and every
 * result records it. */
#ifndef PB_VERSION_H
#define PB_VERSION_H

#include <stddef.h>

#ifndef PB_VERSION
#define PB_VERSION "unknown"
#endif
#ifndef PB_GIT_REV
#define PB_GIT_REV "unknown"
#endif

/* "parabench VERSION (git REV)", or "parabench VERSION" when REV is NULL,
 * empty or "unknown" (a build outside git). Returns BUF. suite/version.py
 * formats run_all's in the same words. */
char *pb_version_format(char *buf, size_t len, const char *version, const char *git_rev);

/* This build's number (PB_VERSION), git revision (PB_GIT_REV) and string. */
const char *pb_version_number(void);
const char *pb_version_git_rev(void);
const char *pb_version_string(void);

#endif
