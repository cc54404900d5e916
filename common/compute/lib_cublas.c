/* cuBLAS through dlopen: see lib_cublas.h for why. The executable's run
 * path (the CUDA toolkit's lib64, set at link time) and LD_LIBRARY_PATH are
 * searched, as they would be for a linked library. */
#include "compute/lib_cublas.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#define STR_(x) #x
#define STR(x) STR_(x)
/* The symbol a cublas_v2.h name stands for (cublasCreate is cublasCreate_v2). */
#define SYMBOL(name) STR(name)

static pb_lib_cublas lib;
static const pb_lib_cublas *loaded;
static char why[512];
static pthread_once_t once = PTHREAD_ONCE_INIT;

const char *pb_lib_cublas_name(void) { return "libcublas.so." STR(CUBLAS_VER_MAJOR); }

static int resolve(void *h, void **slot, const char *symbol)
{
    dlerror();
    *slot = dlsym(h, symbol);
    if (*slot) return 1;
    const char *e = dlerror();
    snprintf(why, sizeof why, "%s has no %s (%s)", pb_lib_cublas_name(), symbol, e ? e : "null symbol");
    return 0;
}

static void load(void)
{
    void *h = dlopen(pb_lib_cublas_name(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(why, sizeof why, "cannot load %s: %s", pb_lib_cublas_name(), e ? e : "unknown reason");
        return;
    }
    int ok = resolve(h, (void **)&lib.Create, SYMBOL(cublasCreate)) &&
             resolve(h, (void **)&lib.Destroy, SYMBOL(cublasDestroy)) &&
             resolve(h, (void **)&lib.SetStream, SYMBOL(cublasSetStream)) &&
             resolve(h, (void **)&lib.SetMathMode, SYMBOL(cublasSetMathMode)) &&
             resolve(h, (void **)&lib.GetProperty, SYMBOL(cublasGetProperty)) &&
             resolve(h, (void **)&lib.GetStatusString, SYMBOL(cublasGetStatusString)) &&
             resolve(h, (void **)&lib.GemmEx, SYMBOL(cublasGemmEx)) &&
             resolve(h, (void **)&lib.GemmStridedBatchedEx, SYMBOL(cublasGemmStridedBatchedEx));
    if (ok) loaded = &lib;
    else dlclose(h);
}

const pb_lib_cublas *pb_lib_cublas_get(const char **reason)
{
    pthread_once(&once, load);
    if (!loaded && reason) *reason = why;
    return loaded;
}
