// Clang thread-safety annotations; no-ops on compilers without the analysis.
#pragma once

#if defined(__clang__)
#define LOAM_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define LOAM_THREAD_ANNOTATION(x)
#endif

#define LOAM_GUARDED_BY(x) LOAM_THREAD_ANNOTATION(guarded_by(x))
#define LOAM_REQUIRES(...) LOAM_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define LOAM_EXCLUDES(...) LOAM_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
