"""Tiny random stand-ins for the registry scorers, saved in the on-disk formats the real loader reads.

Each is built from the same library classes as the checkpoint it stands for (CLIPModel, SiglipModel,
Dinov2Model, open_clip CLIP / CustomTextCLIP, lpips.LPIPS, Qwen2_5_VLForConditionalGeneration) with
random weights and small images, so :func:`~.scorers.load_scorer` loads it through exactly the code path
of the real one, on a CPU, in about a second. Their outputs are meaningless: they exist for tests, demos
and smoke runs, never for results.

``save_tiny_scorers(root)`` writes one folder per registry name and ``root/scorers-tiny.yaml``, a
scorer config pointing each name at its folder: ``load_scorer(name, config=root / TINY_CONFIG)``.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

from ..submission.tiny_pipelines import _byte_vocab, _tiny_tokenizer
from .scorers import STANDIN_MARKER

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


_EXTRA: dict = {}
#: Settings a stand-in overrides besides its path (smaller inputs).
_SETTINGS = {"lpips-alex": ", size: 64", "qwen2.5-vl-7b": ", settings: {batch_size: 32, max_new_tokens: 16}"}


def register_tiny(name: str, build, settings: str = "") -> None:
    """Add the stand-in writer ``build(path)`` of a registry scorer that a family adds; ``settings`` are more
    fields of its config line besides the path (e.g. ``", dreamsim_type: dino_vitb16"``)."""
    _EXTRA[name] = build
    if settings:
        _SETTINGS[name] = settings


def save_tiny_lpips(path: str | Path, seed: int = 0) -> Path:
    """``backbone.pth`` (random AlexNet features in the LPIPS module's names) and ``linear.pth`` (random
    non-negative linear weights) for the ``lpips`` backend's local layout: stand-in for LPIPS-alex."""
    import lpips
    import torch

    torch.manual_seed(seed)
    with warnings.catch_warnings():  # torchvision's deprecation notice for the package's own call
        warnings.simplefilter("ignore")
        model = lpips.LPIPS(net="alex", pretrained=False, pnet_rand=True, verbose=False)
    state = model.state_dict()
    for key, value in state.items():
        if key.startswith("lin"):
            value.copy_(torch.rand_like(value))  # LPIPS's learned weights are non-negative
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    torch.save({k: v for k, v in state.items() if k.startswith("net.")}, path / "backbone.pth")
    torch.save({k: v for k, v in state.items() if k.startswith("lin")}, path / "linear.pth")
    return path


def save_tiny_judge(path: str | Path, seed: int = 0) -> Path:
    """A tiny ``Qwen2_5_VLForConditionalGeneration`` + ``Qwen2_5_VLProcessor`` (byte-level tokenizer with
    Qwen's special tokens and a minimal chat template), stand-in for the Qwen2.5-VL judge. Its weight matrices are
    drawn forty times wider than the default, so its answers depend on the image and the question (at the default
    scale every answer of so small a model is the same token)."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import (
        Qwen2_5_VLConfig,
        Qwen2_5_VLForConditionalGeneration,
        Qwen2_5_VLProcessor,
        Qwen2TokenizerFast,
        Qwen2VLImageProcessor,
        Qwen2VLVideoProcessor,
    )

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
                "<|image_pad|>", "<|video_pad|>"]
    vocab = {c: i for i, c in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
    vocab.update({token: len(vocab) + k for k, token in enumerate(specials)})
    backend = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    backend.add_special_tokens(specials)
    tokenizer = Qwen2TokenizerFast(tokenizer_object=backend, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   unk_token=None, bos_token=None)
    template = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{% if m['content'] is string %}{{ m['content'] }}"
                "{% else %}{% for c in m['content'] %}{% if c['type'] == 'image' %}<|vision_start|><|image_pad|>"
                "<|vision_end|>{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %}"
                "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    pixels = 28 * 28 * 4  # every image becomes 2 x 2 patches of 28 px: four vision tokens after merging
    processor = Qwen2_5_VLProcessor(
        image_processor=Qwen2VLImageProcessor(min_pixels=pixels, max_pixels=pixels),
        video_processor=Qwen2VLVideoProcessor(), tokenizer=tokenizer, chat_template=template)
    torch.manual_seed(seed)
    model = Qwen2_5_VLForConditionalGeneration(Qwen2_5_VLConfig(
        text_config=dict(vocab_size=len(vocab), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=1024,
                         rope_scaling={"type": "mrope", "mrope_section": [1, 1, 2]}, tie_word_embeddings=True,
                         bos_token_id=vocab["<|endoftext|>"], eos_token_id=vocab["<|im_end|>"],
                         pad_token_id=vocab["<|endoftext|>"]),
        vision_config=dict(depth=1, hidden_size=16, intermediate_size=32, num_heads=2, out_hidden_size=16,
                           patch_size=14, spatial_merge_size=2, temporal_patch_size=2, fullatt_block_indexes=[0],
                           window_size=56),
        image_token_id=vocab["<|image_pad|>"], video_token_id=vocab["<|video_pad|>"],
        vision_start_token_id=vocab["<|vision_start|>"], vision_end_token_id=vocab["<|vision_end|>"],
        bos_token_id=vocab["<|endoftext|>"], eos_token_id=vocab["<|im_end|>"], pad_token_id=vocab["<|endoftext|>"]))
    with torch.no_grad():
        for weight in model.parameters():
            if weight.dim() > 1:
                weight.mul_(40.0)
    model.generation_config.pad_token_id = vocab["<|endoftext|>"]
    return _save(path, model, processor)


def save_tiny_scorers(root: str | Path) -> dict[str, Path]:
    """Write a tiny stand-in for every registry scorer under ``root`` and ``root/scorers-tiny.yaml`` pointing at them
    (families that register scorers of their own add stand-ins with :func:`register_tiny`).

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
        "lpips-alex": save_tiny_lpips,
        "qwen2.5-vl-7b": save_tiny_judge,
    }
    from .scorers import backends

    backends()  # the engine's optional backends and the families register their stand-ins on import
    builders.update(_EXTRA)
    folders = {name: build(root / name) for name, build in builders.items()}
    for folder in folders.values():  # results record that they come from stand-ins (the site says so)
        (folder / STANDIN_MARKER).write_text("A tiny random stand-in: its outputs measure nothing.\n")
    lines = ["# Tiny random stand-ins for the registry scorers (cultureboard.evaluators.engine.tiny_scorers).",
             "# Their outputs are meaningless: for tests and demos only.",
             "# lpips-alex compares 64 px crops here (256 px in the registry), and the judge answers 32 questions",
             "# at a time (4 in the registry) in at most 16 tokens (its random weights never stop), to keep demos quick.",
             *(f"{name}: {{path: {name}{_SETTINGS.get(name, '')}}}" for name in folders)]
    (root / TINY_CONFIG).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folders
