#!/bin/sh
# Type-check the package with mypy (config: [tool.mypy] in pyproject.toml), as it is installed.
#
# setup.py maps the top-level folders (ops/, graphs/, ...) into one ``speakerflow.*``
# namespace, which mypy cannot see from the source tree. This script lays the package out
# the installed way with symlinks under build/typecheck/speakerflow (speakerflow/* plus one
# link per mapped folder) and runs mypy there, so ``from speakerflow.ops...`` resolves to
# the source files. Run by `make test` and `make lint`: MYPY=.venv/bin/mypy scripts/typecheck.sh
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TREE="$ROOT/build/typecheck/speakerflow"
mkdir -p "$TREE"
for f in "$ROOT"/speakerflow/*; do
    case "$(basename "$f")" in __pycache__) continue ;; esac
    ln -sfn "$f" "$TREE/$(basename "$f")"
done
for d in schemas ops graphs assets pipelines training benchmarks; do
    ln -sfn "$ROOT/$d" "$TREE/$d"
done
MYPY=${MYPY:-mypy}
case "$MYPY" in */*) MYPY="$(cd "$(dirname "$MYPY")" && pwd)/$(basename "$MYPY")" ;; esac  # before the cd
cd "$ROOT/build/typecheck"
exec "$MYPY" --config-file "$ROOT/pyproject.toml" --cache-dir "$ROOT/build/mypy-cache" speakerflow "$@"
