# Sourced by `make sanitize` and test_unit_sanitized.sh: how the ASan, UBSan and
# LeakSanitizer builds report.
# - Full stacks (fast_unwind_on_malloc=0), so that tests/lsan.supp can recognise
#   Open MPI's own never-freed allocations; everything else is reported.
# - exitcode=86: a report changes the exit status to one no test expects; the
#   default (1) would pass unseen in a test that expects exit 1 (wrong data).
here=$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")" && pwd)
export ASAN_OPTIONS=fast_unwind_on_malloc=0:detect_leaks=1:abort_on_error=0:exitcode=86
export LSAN_OPTIONS=suppressions=$here/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=86
