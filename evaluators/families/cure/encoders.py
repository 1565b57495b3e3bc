"""CuRe's encoders: which registry scorer computes each metric, the one backend CuRe adds, and the tiny
stand-ins of the scorers it adds to the registry.

Image-image similarity (PS, GT; CuRe section 2.1, Table 1): SigLIP 2, DINOv2 and AIMV2 through transformers.
Image-text alignment (ITA; section 2.2): SigLIP 2, and for the generative-entanglement view (Table 15) the
OpenCLIP backbones trained on LAION-2B, OpenAI WIT, DFN-5B and DataComp-1B. Diversity: LPIPS with AlexNet.
CuRe names no checkpoints; ours are in ``engine/data/scorers.yaml`` with the reason for each.

Backend ``transformers-patch-mean``: ``AutoModel`` + ``AutoImageProcessor`` of a vision trunk that has no
pooled output (AIMv2: no CLS token, and its pre-trained checkpoints carry no pooling head); the embedding is
the mean of the final (normalised) patch tokens, then L2-normalised. The pooling is part of the scorer's
preprocessing string, so its cached vectors never mix with another pooling of the same checkpoint.
"""

from __future__ import annotations

from pathlib import Path

from ...engine.embedding import TransformersScorer, check_transformers, locate_transformers
from ...engine.scorers import Backend, register_backend
from ...engine.tiny_scorers import TINY_IMAGE_SIZE, register_tiny, save_tiny_dinov2, save_tiny_open_clip

#: Metric-name suffix -> image encoder of the perceptual-similarity metrics (no suffix: SigLIP 2, CuRe's first).
IMAGE_ENCODERS = {"": "siglip2-so400m", ".dinov2": "dinov2-large", ".aimv2": "aimv2-large"}
#: The image-text scorer of cure.ita.* (CuRe Table 2 uses SigLIP 2).
TEXT_ENCODER = "siglip2-so400m"
#: Metric-name suffix -> (OpenCLIP scorer, its training data) of the entanglement view of cure.ita.cr (Table 15).
ENTANGLEMENT = {
    ".laion2b": ("openclip-h14-laion2b", "LAION-2B"),
    ".wit": ("openclip-l14-openai", "OpenAI WIT"),
    ".dfn5b": ("openclip-h14-dfn5b", "DFN-5B"),
    ".datacomp": ("openclip-l14-datacomp", "DataComp-1B"),
}
#: The pairwise scorer of cure.div (LPIPS, AlexNet).
DISTANCE = "lpips-alex"
POOLING = "embedding = mean of last_hidden_state over tokens"


class PatchMeanScorer(TransformersScorer):
    """A transformers vision trunk whose embedding is the mean of its final tokens (module docstring)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.preprocessing = f"{self.preprocessing}; {POOLING}"

    def _image_features(self, pixels):
        return self.model(pixel_values=pixels).last_hidden_state.mean(dim=1)


register_backend("transformers-patch-mean", Backend(
    kind="embedding", locate=locate_transformers, check=check_transformers,
    build=lambda name, entry, files, model_id, revision, device, dtype: PatchMeanScorer(
        name, model_id, revision, device, dtype, files, False, {})))


def save_tiny_aimv2(path, seed: int = 0):
    """A tiny ``Aimv2VisionModel`` (no head, as the pre-trained AIMv2 trunks) + ``CLIPImageProcessor``: stand-in
    for AIMV2, in the layout ``AutoModel`` / ``AutoImageProcessor`` load."""
    import torch
    from transformers import Aimv2VisionConfig, Aimv2VisionModel, CLIPImageProcessor

    torch.manual_seed(seed)
    model = Aimv2VisionModel(Aimv2VisionConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                               num_attention_heads=2, image_size=TINY_IMAGE_SIZE, patch_size=8,
                                               use_head=False))
    processor = CLIPImageProcessor(size={"shortest_edge": TINY_IMAGE_SIZE},
                                   crop_size={"height": TINY_IMAGE_SIZE, "width": TINY_IMAGE_SIZE})
    model.save_pretrained(path)
    processor.save_pretrained(path)
    return Path(path)


register_tiny("aimv2-large", save_tiny_aimv2)
register_tiny("dinov2-large", lambda path: save_tiny_dinov2(path, seed=1))
for _k, (_name, _) in enumerate(ENTANGLEMENT.values(), start=1):
    register_tiny(_name, lambda path, seed=_k: save_tiny_open_clip(path, seed=seed))
