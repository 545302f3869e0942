#!/bin/sh
# Check the import layers (the [tool.importlinter] contracts in pyproject.toml).
#
# import-linter (grimp) finds a package's modules by walking its folder, but speakerflow's
# sub-packages live in top-level folders (ops/, graphs/ ...) that setup.py maps to
# speakerflow.ops, speakerflow.graphs ... So lint a mirror: build/import-tree/speakerflow/
# (or $IMPORT_TREE/speakerflow/) with the same layout as the installed package, made of
# symlinks to the real files. `--tree-only` builds the mirror and stops (what
# tests/unit/test_import_graph.py uses to build the import graph with grimp).
set -e
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TREE=${IMPORT_TREE:-"$ROOT/build/import-tree"}
rm -rf "$TREE"
mkdir -p "$TREE/speakerflow"
cp -rs "$ROOT/speakerflow/." "$TREE/speakerflow/"
for top in schemas graphs ops pipelines training benchmarks assets; do   # setup.py's MAPPED
    mkdir -p "$TREE/speakerflow/$top"
    cp -rs "$ROOT/$top/." "$TREE/speakerflow/$top/"
done
find "$TREE" -name __pycache__ -prune -exec rm -rf {} +
if [ "$1" = "--tree-only" ]; then
    exit 0
fi
LINT=${LINT_IMPORTS:-"$ROOT/.venv/bin/lint-imports"}
case "$LINT" in
    */*) LINT="$(cd "$(dirname "$LINT")" && pwd)/$(basename "$LINT")" ;;   # absolute: we cd below
esac
cd "$TREE"   # lint-imports puts the working directory first on sys.path
PYTHONPATH="$TREE" exec "$LINT" "$ROOT/pyproject.toml" --no-cache "$@"
