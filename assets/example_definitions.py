"""The example ``my_memory`` pipeline (``assets/custom_example.py``) in its own code location.

``workspace.yaml`` loads it beside the default definitions (``speakerflow.assets.definitions``),
so the shipped assets stay free of the example and a broken custom pipeline cannot stop the
default location from loading. Both locations share the instance's ``groups`` partitions.
"""
from __future__ import annotations

import dagster as dg

from speakerflow.pipelines.resources import default_resources

from .custom_example import my_memory

defs = dg.Definitions(assets=[my_memory], resources=default_resources())
