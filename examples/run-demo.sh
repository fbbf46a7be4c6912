#!/usr/bin/env bash
# The offline demo: a copy of examples/demo/ in a temporary directory, and one
# agent turn answered from the recording examples/demo.jsonl. No key, no network:
# the model's side is replayed, the tools (read_file, edit_file) run for real.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bareagent=${BAREAGENT:-bareagent}
case $bareagent in */*) bareagent="$(cd "$(dirname "$bareagent")" && pwd)/$(basename "$bareagent")" ;; esac
command -v "$bareagent" >/dev/null || { echo "run-demo: '$bareagent' not found; run 'cargo install --path .' first" >&2; exit 1; }
work=$(mktemp -d)
cp -r "$here/demo/." "$work"
cd "$work"
echo "workspace: $work"
"$bareagent" run --replay "$here/demo.jsonl" --permission-mode accept-edits "Fix the bug in greet.py"
echo
echo "--- the change it made:"
diff -u "$here/demo/greet.py" greet.py || true
