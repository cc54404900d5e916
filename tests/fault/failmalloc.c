/* Test-only fault injection: an LD_PRELOAD library that makes one heap
 * allocation of the program's own code fail, so that its out-of-memory paths
 * run (tests/fault/sweep.sh, tests/integration/test_failmalloc.sh).
 *
 * Environment (nothing happens without PB_FAILMALLOC_NTH):
 *   PB_FAILMALLOC_NTH=N        allocation N (1, 2, ...) fails with ENOMEM; 0 only
 *                              counts, and prints the count at exit
 *   PB_FAILMALLOC_RANK=R       only in the process whose OMPI_COMM_WORLD_RANK
 *                              (or PMIX_RANK, SLURM_PROCID) is R
 *   PB_FAILMALLOC_MIN_BYTES=B  count only allocations of at least B bytes
 *   PB_FAILMALLOC_TRACE=1      print the failing call's stack (addresses)
 *   PB_FAILMALLOC_CALLERS=1    print each counted allocation's caller as an
 *                              address in the executable's file ("failmalloc:
 *                              caller N 0xADDR", for addr2line: sweep.sh --in)
 *
 * Counted: malloc, calloc, realloc, posix_memalign and aligned_alloc called
 * directly from the program's executable (which holds libparabench.a), not
 * from a library (Open MPI, OpenBLAS, libc's own strdup ...): the numbering
 * then depends on our code only; and only while main runs, not once the program
 * exits (main returned, or exit called): what runs then is the exit handlers',
 * a coverage build's profile dump among them (libgcov is linked into the
 * executable, and a failure there is its own, not the program's). Messages go
 * to stderr as "failmalloc: ...". */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* glibc's own allocators: what the wrappers hand through to. */
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static uintptr_t text_lo = UINTPTR_MAX, text_hi, load_base;
static int counting, tracing, callers;
static volatile int exiting; /* main has returned, or exit was called */
static long nth, seen;
static size_t min_bytes;

/* The executable's code: the first object dl_iterate_phdr reports. */
static int program_text(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size, (void)data;
    load_base = info->dlpi_addr; /* 0 unless position-independent */
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        if (p->p_type != PT_LOAD || !(p->p_flags & PF_X)) continue;
        uintptr_t a = info->dlpi_addr + p->p_vaddr;
        if (a < text_lo) text_lo = a;
        if (a + p->p_memsz > text_hi) text_hi = a + p->p_memsz;
    }
    return 1;
}

static void say(const char *what, long n, size_t bytes)
{
    char line[128]; /* no allocation here: this runs inside malloc */
    int len = snprintf(line, sizeof line, "failmalloc: %s %ld (%zu bytes)\n", what, n, bytes);
    if (len > 0) (void)!write(2, line, (size_t)len);
}

static const char *my_rank(void)
{
    const char *names[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (getenv(names[i])) return getenv(names[i]);
    return NULL;
}

__attribute__((constructor)) static void start(void)
{
    const char *n = getenv("PB_FAILMALLOC_NTH"), *want = getenv("PB_FAILMALLOC_RANK");
    if (!n) return;
    if (want && (!my_rank() || strcmp(want, my_rank()) != 0)) return;
    const char *m = getenv("PB_FAILMALLOC_MIN_BYTES");
    min_bytes = m ? strtoull(m, NULL, 10) : 0;
    nth = atol(n);
    tracing = getenv("PB_FAILMALLOC_TRACE") != NULL;
    callers = getenv("PB_FAILMALLOC_CALLERS") != NULL;
    if (tracing) {
        void *warm[2];
        backtrace(warm, 2); /* loads libgcc's unwinder now, not inside a failing malloc */
    }
    dl_iterate_phdr(program_text, NULL);
    counting = text_hi > text_lo;
}

__attribute__((destructor)) static void finish(void)
{
    if (counting && nth == 0) say("allocations", seen, min_bytes);
}

/* main, wrapped: when it returns, the program is exiting. */
typedef int (*main_fn)(int, char **, char **);
static main_fn real_main;

static int wrapped_main(int argc, char **argv, char **envp)
{
    int rc = real_main(argc, argv, envp);
    exiting = 1;
    return rc;
}

int __libc_start_main(main_fn main_, int argc, char **argv, void (*init)(void), void (*fini)(void),
                      void (*rtld_fini)(void), void *stack_end)
{
    int (*real)(main_fn, int, char **, void (*)(void), void (*)(void), void (*)(void), void *) =
        (int (*)(main_fn, int, char **, void (*)(void), void (*)(void), void (*)(void), void *))dlsym(
            RTLD_NEXT, "__libc_start_main");
    real_main = main_;
    return real(wrapped_main, argc, argv, init, fini, rtld_fini, stack_end);
}

void exit(int status)
{
    exiting = 1;
    void (*real)(int) = (void (*)(int))dlsym(RTLD_NEXT, "exit");
    real(status);
    __builtin_unreachable();
}

static int fail_now(size_t bytes, void *caller)
{
    if (!counting || exiting || (uintptr_t)caller < text_lo || (uintptr_t)caller >= text_hi || bytes < min_bytes) return 0;
    ++seen;
    if (callers) {
        char line[96]; /* no allocation here: this runs inside malloc */
        int len = snprintf(line, sizeof line, "failmalloc: caller %ld 0x%lx\n", seen,
                           (unsigned long)((uintptr_t)caller - load_base));
        if (len > 0) (void)!write(2, line, (size_t)len);
    }
    if (seen != nth) return 0;
    say("failing allocation", seen, bytes);
    if (tracing) {
        void *frames[16];
        backtrace_symbols_fd(frames, backtrace(frames, 16), 2);
    }
    errno = ENOMEM;
    return 1;
}

#define CALLER __builtin_return_address(0)

void *malloc(size_t n) { return fail_now(n, CALLER) ? NULL : __libc_malloc(n); }
void *calloc(size_t k, size_t n) { return fail_now(k * n, CALLER) ? NULL : __libc_calloc(k, n); }
void *realloc(void *p, size_t n) { return fail_now(n, CALLER) ? NULL : __libc_realloc(p, n); }
void *aligned_alloc(size_t align, size_t n) { return fail_now(n, CALLER) ? NULL : __libc_memalign(align, n); }

int posix_memalign(void **out, size_t align, size_t n)
{
    if (fail_now(n, CALLER)) return ENOMEM;
    void *p = __libc_memalign(align, n);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}
