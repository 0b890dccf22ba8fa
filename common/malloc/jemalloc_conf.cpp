// jemalloc's built-in options for the executables that link jemalloc (the dialtree-torch
// executable and the benchmarks that measure it; cmake/Dependencies.cmake dialtree_jemalloc).
// jemalloc reads this string when it starts, then MALLOC_CONF from the environment, whose
// settings win (docs/build.md P13).
//
// dirty_decay_ms:-1 and muzzy_decay_ms:-1: freed pages are never handed back to the kernel. With
// jemalloc's default (dirty pages returned over 10 s, muzzy at once) a training step re-faults
// the memory of its activations on every step: 52,000 minor page faults a second on a 2-core VM,
// a quarter of the process's CPU time in the kernel, and the MLM stage ran at 190 examples/s
// against 550 without returning pages. A process's resident memory stays at its peak instead.

extern "C" {
// NOLINTNEXTLINE: the name and type are jemalloc's (its weak symbol `malloc_conf`).
__attribute__((used, visibility("default"))) const char* malloc_conf =
    "dirty_decay_ms:-1,muzzy_decay_ms:-1";
}
