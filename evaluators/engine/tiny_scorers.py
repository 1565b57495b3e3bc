"""Tiny random stand-ins for the registry scorers, saved in the on-disk formats the real loader reads.

Each is built from the same library classes as the checkpoint it stands for (CLIPModel, SiglipModel,
Dinov2Model, open_clip CLIP / CustomTextCLIP) with a few hundred thousand random weights and 32 px
images, so :func:`~.scorers.load_scorer` loads it through exactly the code path of the real one, on
a CPU, in well under a second. Their embeddings are meaningless: they exist for tests, demos and
smoke runs, never for results.

``save_tiny_scorers(root)`` writes one folder per registry name and ``root/scorers-tiny.yaml``, a
scorer config pointing each name at its folder: ``load_scorer(name, config=root / TINY_CONFIG)``.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..submission.tiny_pipelines import _byte_vocab, _tiny_tokenizer

#: Edge of the images the tiny scorers take, in pixels.
TINY_IMAGE_SIZE = 32
#: File name of the scorer config that :func:`save_tiny_scorers` writes.
TINY_CONFIG = "scorers-tiny.yaml"
# One transformer layer, width 16, patches of 8 px: the smallest shapes every library accepts.
_TOWER = dict(hidden_size=16, intermediate_size=32, num_attention_heads=2, num_hidden_layers=1)


def save_tiny_clip(path: str | Path, seed: int = 0) -> Path:
    """A tiny ``CLIPModel`` + ``CLIPProcessor`` (character-level CLIP BPE tokenizer), stand-in for CLIP ViT-L/14."""
    import torch
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor

    vocab = _byte_vocab()
    torch.manual_seed(seed)
    model = CLIPModel(CLIPConfig(
        text_config=dict(**_TOWER, vocab_size=len(vocab), max_position_embeddings=77,
                         bos_token_id=vocab["<|startoftext|>"], eos_token_id=vocab["<|endoftext|>"],
                         pad_token_id=vocab["<|endoftext|>"]),
        vision_config=dict(**_TOWER, image_size=TINY_IMAGE_SIZE, patch_size=8),
        projection_dim=16,
    ))
    image_processor = CLIPImageProcessor(size={"shortest_edge": TINY_IMAGE_SIZE},
                                         crop_size={"height": TINY_IMAGE_SIZE, "width": TINY_IMAGE_SIZE})
    return _save(path, model, CLIPProcessor(image_processor=image_processor, tokenizer=_tiny_tokenizer(vocab)))


def save_tiny_siglip(path: str | Path, seed: int = 0) -> Path:
    """A tiny ``SiglipModel`` + ``SiglipProcessor`` with a byte-fallback ``GemmaTokenizer``.

    The layout of SigLIP 2's fixed-resolution checkpoints (SiglipModel, Gemma tokenizer, 64 text
    positions); the Gemma tokenizer is backed by ``tokenizers``, so no sentencepiece is needed.
    """
    import torch
    from transformers import (
        GemmaTokenizer,
        SiglipConfig,
        SiglipImageProcessor,
        SiglipModel,
        SiglipProcessor,
    )

    vocab = {token: i for i, token in enumerate(["<pad>", "<eos>", "<bos>", "<unk>", "<mask>"])}
    vocab.update({f"<0x{byte:02X}>": len(vocab) + byte for byte in range(256)})
    torch.manual_seed(seed)
    model = SiglipModel(SiglipConfig(
        text_config=dict(**_TOWER, vocab_size=len(vocab), max_position_embeddings=64,
                         pad_token_id=vocab["<pad>"], bos_token_id=vocab["<bos>"], eos_token_id=vocab["<eos>"]),
        vision_config=dict(**_TOWER, image_size=TINY_IMAGE_SIZE, patch_size=8),
    ))
    image_processor = SiglipImageProcessor(size={"height": TINY_IMAGE_SIZE, "width": TINY_IMAGE_SIZE})
    tokenizer = GemmaTokenizer(vocab=vocab, merges=[])
    return _save(path, model, SiglipProcessor(image_processor=image_processor, tokenizer=tokenizer))


def save_tiny_dinov2(path: str | Path, seed: int = 0) -> Path:
    """A tiny ``Dinov2Model`` + ``BitImageProcessor`` (resize, centre crop, ImageNet mean/std), stand-in for DINOv2."""
    import torch
    from transformers import BitImageProcessor, Dinov2Config, Dinov2Model

    torch.manual_seed(seed)
    model = Dinov2Model(Dinov2Config(hidden_size=16, num_attention_heads=2, num_hidden_layers=1, mlp_ratio=2,
                                     image_size=TINY_IMAGE_SIZE, patch_size=8))
    image_processor = BitImageProcessor(
        size={"shortest_edge": TINY_IMAGE_SIZE}, crop_size={"height": TINY_IMAGE_SIZE, "width": TINY_IMAGE_SIZE},
        image_mean=[0.485, 0.456, 0.406], image_std=[0.229, 0.224, 0.225])
    return _save(path, model, image_processor)


def _save(path: str | Path, model, processor) -> Path:
    path = Path(path)
    model.save_pretrained(path)
    processor.save_pretrained(path)
    return path


def save_tiny_open_clip(path: str | Path, siglip: bool = False, seed: int = 0) -> Path:
    """A tiny open_clip model in open_clip's Hub layout: ``open_clip_config.json`` + ``open_clip_model.safetensors``.

    Default: a ``CLIP`` like ViT-H-14 (stand-in for HPS v2.1) with OpenAI mean/std. ``siglip=True``:
    a ``CustomTextCLIP`` with SigLIP's text tower settings (no causal mask, last-token pooling, logit
    bias; stand-in for mSigLIP), mean/std 0.5 and squash resizing. Both use open_clip's
    built-in CLIP BPE tokenizer, so they need no tokenizer files.
    """
    import open_clip
    import torch
    from safetensors.torch import save_file

    text_cfg = {"context_length": 64 if siglip else 77, "vocab_size": 49408, "width": 16, "heads": 2, "layers": 1}
    model_cfg = {"embed_dim": 16, "vision_cfg": {"image_size": TINY_IMAGE_SIZE, "layers": 1, "width": 16,
                                                  "head_width": 8, "patch_size": 8}, "text_cfg": text_cfg}
    preprocess_cfg = {"mean": list(open_clip.OPENAI_DATASET_MEAN), "std": list(open_clip.OPENAI_DATASET_STD)}
    if siglip:
        model_cfg.update(custom_text=True, init_logit_bias=-10)
        text_cfg.update(no_causal_mask=True, pool_type="last", proj_type="none")
        preprocess_cfg = {"mean": [0.5] * 3, "std": [0.5] * 3, "resize_mode": "squash"}
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    (path / "open_clip_config.json").write_text(
        json.dumps({"model_cfg": model_cfg, "preprocess_cfg": preprocess_cfg}, indent=2), encoding="utf-8")
    torch.manual_seed(seed)
    model = (open_clip.CustomTextCLIP if siglip else open_clip.CLIP)(
        **{k: v for k, v in model_cfg.items() if k != "custom_text"})
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, path / "open_clip_model.safetensors")
    return path


def save_tiny_scorers(root: str | Path) -> dict[str, Path]:
    """Write a tiny stand-in for every registry scorer under ``root`` and ``root/scorers-tiny.yaml`` pointing at them.

    Returns {registry name: folder}. Each keeps its registry entry's backend and settings (only
    ``path`` is overridden), so loading it exercises the real code path.
    """
    root = Path(root)
    builders = {
        "siglip2-so400m": save_tiny_siglip,
        "clip-vit-l-14": save_tiny_clip,
        "msiglip": lambda path: save_tiny_open_clip(path, siglip=True),
        "hpsv2.1": save_tiny_open_clip,
        "dinov2-base": save_tiny_dinov2,
    }
    folders = {name: build(root / name) for name, build in builders.items()}
    lines = ["# Tiny random stand-ins for the registry scorers (cultureboard.evaluators.engine.tiny_scorers).",
             "# Their embeddings are meaningless: for tests and demos only.",
             *(f"{name}: {{path: {name}}}" for name in folders)]
    (root / TINY_CONFIG).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folders
