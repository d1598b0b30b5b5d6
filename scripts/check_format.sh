#!/usr/bin/env bash
# Fails if any C++ source differs from .clang-format. `scripts/check_format.sh --fix` rewrites.
set -u
cd "$(dirname "$0")/.."
files=$(git ls-files '*.h' '*.cpp' '*.cc' 2>/dev/null || find include src tests tools examples -name '*.h' -o -name '*.cpp')
[ -n "$files" ] || exit 0
if [ "${1:-}" = "--fix" ]; then echo "$files" | xargs clang-format -i; exit 0; fi
echo "$files" | xargs clang-format --dry-run -Werror 2>&1 | head -40
exit "${PIPESTATUS[1]}"
