#!/usr/bin/env bash
# Run every integration test; report each, fail if any failed.
cd "$(dirname "$0")"
failed=()
for t in test_*.sh; do
    [ -e "$t" ] || continue
    echo "=== $t"
    start=$SECONDS
    if bash "$t"; then echo "=== $t passed ($((SECONDS - start)) s)"; else failed+=("$t"); echo "=== $t FAILED"; fi
done
if [ ${#failed[@]} -gt 0 ]; then echo "failed: ${failed[*]}" >&2; exit 1; fi
echo "all integration tests passed"
