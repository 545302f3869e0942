#!/bin/sh
# Dead code: vulture over the package, with the tests counted as users (a public helper only
# the tests call is not dead) but not reported, and vulture_allow.py naming what is used from
# outside the call graph (Dagster, FastAPI, MCP, pydantic, names looked up at run time).
# Fails, listing them, when vulture finds anything in the package.
ROOT=$(cd "$(dirname "$0")/.." && pwd)
VULTURE=${VULTURE:-"$ROOT/.venv/bin/vulture"}
cd "$ROOT" || exit 2
out=$("$VULTURE" speakerflow schemas graphs ops pipelines training benchmarks assets tests \
    vulture_allow.py --min-confidence 60)
found=$(printf '%s\n' "$out" | grep -v '^tests/' | grep -v '^$')
if [ -n "$found" ]; then
    printf '%s\n' "$found"
    echo "vulture: unused code above (remove it, or add an entry point to vulture_allow.py)" >&2
    exit 1
fi
