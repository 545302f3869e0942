"""Map the top-level folders into one ``speakerflow.*`` import namespace.

``pyproject.toml`` holds the metadata; this file only computes the package list so that
every sub-folder of ``ops/``, ``schemas/`` ... is installed as ``speakerflow.ops.*`` and
nothing named ``ops`` or ``schemas`` lands in site-packages.
"""

import warnings
from pathlib import Path

from setuptools import setup
from setuptools.warnings import InformationOnly

# `pip install -e .` (make install): setuptools' notice that an editable install exists is
# information, not a problem of this project; keep the install output free of it
warnings.filterwarnings("ignore", message="Editable installation", category=InformationOnly)

ROOT = Path(__file__).parent
MAPPED = ("schemas", "ops", "graphs", "assets", "pipelines", "training", "benchmarks")


#: folders of data files inside the package (no ``__init__.py``), installed as data packages
DATA_PACKAGES = ("speakerflow/data",)


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
    for folder in DATA_PACKAGES:
        for sub in sorted(p for p in [ROOT / folder, *(ROOT / folder).rglob("*")] if p.is_dir()):
            if sub.name != "__pycache__":
                packages.append(".".join(sub.relative_to(ROOT).parts))
    return packages, package_dir


PACKAGES, PACKAGE_DIR = _packages()
setup(
    packages=PACKAGES,
    package_dir=PACKAGE_DIR,
    package_data={p: ["*"] for p in PACKAGES if p.startswith("speakerflow.data")},
)
