#!/bin/sh
# Check the import layers (the [tool.importlinter] contracts in pyproject.toml).
#
# import-linter (grimp) finds a package's modules by walking its folder, but speakerflow's
# sub-packages live in top-level folders (ops/, graphs/ ...) that setup.py maps to
# speakerflow.ops, speakerflow.graphs ... So lint a mirror: build/import-tree/speakerflow/
# with the same layout as the installed package, made of symlinks to the real files.
set -e
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TREE="$ROOT/build/import-tree"
LINT=${LINT_IMPORTS:-"$ROOT/.venv/bin/lint-imports"}
case "$LINT" in
    */*) LINT="$(cd "$(dirname "$LINT")" && pwd)/$(basename "$LINT")" ;;   # absolute: we cd below
esac
rm -rf "$TREE"
mkdir -p "$TREE/speakerflow"
cp -rs "$ROOT/speakerflow/." "$TREE/speakerflow/"
for top in schemas graphs ops pipelines training benchmarks assets; do   # setup.py's MAPPED
    mkdir -p "$TREE/speakerflow/$top"
    cp -rs "$ROOT/$top/." "$TREE/speakerflow/$top/"
done
find "$TREE" -name __pycache__ -prune -exec rm -rf {} +
cd "$TREE"   # lint-imports puts the working directory first on sys.path
PYTHONPATH="$TREE" exec "$LINT" "$ROOT/pyproject.toml" --no-cache "$@"
