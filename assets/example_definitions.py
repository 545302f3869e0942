"""The example pipelines ``my_memory`` (``assets/custom_example.py``) and ``my_knowledge``
(``assets/knowledge_example.py``) in their own code location.

``workspace.yaml`` loads it beside the default definitions (``speakerflow.assets.definitions``),
so the shipped assets stay free of the example and a broken custom pipeline cannot stop the
default location from loading. Both locations share the instance's ``groups`` partitions.
"""

from __future__ import annotations

import dagster as dg

from speakerflow.pipelines.resources import default_resources

from .custom_example import my_memory
from .knowledge_example import my_knowledge

defs = dg.Definitions(assets=[my_memory, my_knowledge], resources=default_resources())
