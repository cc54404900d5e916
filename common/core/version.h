/* parabench version and the git revision the Makefile compiles in. */
#ifndef PB_VERSION_H
#define PB_VERSION_H

#define PB_VERSION "0.1.0"
#ifndef PB_GIT_REV
#define PB_GIT_REV "unknown"
#endif

#endif
