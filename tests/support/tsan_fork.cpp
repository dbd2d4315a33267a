// Linked into the tests that fork a child which then starts threads (a writer, a compaction)
// and is killed: the parent is multi-threaded by then (liburcu's reclamation thread is started
// by the first engine that retires memory), and ThreadSanitizer refuses threads in the child
// of a multi-threaded fork unless told to go on. The child only needs malloc and liburcu to be
// usable after fork: glibc's malloc is, and PackFS installs liburcu's fork handlers (rcu.cpp).
#if defined(__SANITIZE_THREAD__)
extern "C" const char* __tsan_default_options() {
    return "die_after_fork=0";
}
#endif
