"""Map the top-level folders into one ``speakerflow.*`` import namespace.

``pyproject.toml`` holds the metadata; this file only computes the package list so that
every sub-folder of ``ops/``, ``schemas/`` ... is installed as ``speakerflow.ops.*`` and
nothing named ``ops`` or ``schemas`` lands in site-packages.
"""
from pathlib import Path

from setuptools import setup

ROOT = Path(__file__).parent
MAPPED = ("schemas", "ops", "graphs", "assets", "pipelines", "training", "benchmarks")


def _packages() -> tuple[list[str], dict[str, str]]:
    packages: list[str] = []
    package_dir: dict[str, str] = {"speakerflow": "speakerflow"}
    for top in ("speakerflow", *MAPPED):
        for init in sorted((ROOT / top).rglob("__init__.py")):
            rel = init.parent.relative_to(ROOT)
            parts = rel.parts if top == "speakerflow" else ("speakerflow", *rel.parts)
            packages.append(".".join(parts))
        if top != "speakerflow":
            package_dir[f"speakerflow.{top}"] = top
    return packages, package_dir


PACKAGES, PACKAGE_DIR = _packages()
setup(packages=PACKAGES, package_dir=PACKAGE_DIR)
