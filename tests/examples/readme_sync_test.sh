#!/usr/bin/env bash
# The README's C++ example must be examples/quickstart.cpp minus its first comment line.
set -euo pipefail
root="$1"
readme_code=$(awk '/^```cpp$/{f=1;next} /^```$/{if(f){exit}} f' "$root/README.md")
example_code=$(tail -n +2 "$root/examples/quickstart.cpp")
if [ "$readme_code" != "$example_code" ]; then
  echo "README.md's example differs from examples/quickstart.cpp:"
  diff <(echo "$readme_code") <(echo "$example_code") || true
  exit 1
fi
echo "README example matches examples/quickstart.cpp"
