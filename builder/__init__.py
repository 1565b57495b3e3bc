"""The builder: knowledge base -> artifact spaces -> prompt sets -> a Hub dataset folder.

Public functions, one per CLI verb: :func:`artifacts`, :func:`build`, :func:`import_dataset` and
:func:`publish_dataset`.
"""

from .artifact_space import artifacts
from .build import build, import_dataset
from .publish import publish_dataset

__all__ = ["artifacts", "build", "import_dataset", "publish_dataset"]
