"""Tiny random diffusers pipelines, saved to a folder: local stand-ins for real text-to-image models.

They are built from the real diffusers / transformers classes (so they load and run through exactly the
code path of a Hub checkpoint) with about 70,000 random weights. Their images are noise-like and any
score computed on them is meaningless: they exist for tests, demos and smoke runs, never for results.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

#: Edge of the generated images in pixels (latents are a quarter of it: the tiny VAE downsamples twice).
TINY_RESOLUTION = 64


def _byte_vocab() -> dict[str, int]:
    """A CLIP byte-level BPE vocabulary without merges: every byte alone and at a word's end, plus the specials.

    Each character is then one token, so any prompt tokenizes (long prompts are truncated at 77 tokens).
    """
    from tokenizers.pre_tokenizers import ByteLevel

    chars = sorted(ByteLevel.alphabet())
    tokens = ["<|startoftext|>", "<|endoftext|>", *chars, *(c + "</w>" for c in chars)]
    return {token: i for i, token in enumerate(tokens)}


def _tiny_tokenizer(vocab: dict[str, int]):
    """A CLIPTokenizer read from a ``vocab.json`` and an empty ``merges.txt`` (works on transformers 4 and 5)."""
    from transformers import CLIPTokenizer

    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
        (Path(tmp) / "merges.txt").write_text("#version: 0.2\n", encoding="utf-8")
        return CLIPTokenizer.from_pretrained(tmp, model_max_length=77)


def save_tiny_text2image(path: str | Path, seed: int = 0) -> Path:
    """Build a tiny random ``StableDiffusionPipeline`` and ``save_pretrained`` it to ``path``; returns ``path``.

    It makes 64x64 px images (the smallest size the submission validator accepts). Components: a
    ``UNet2DConditionModel`` and an ``AutoencoderKL`` with 4- and 8-channel blocks, a 2-layer
    ``CLIPTextModel`` (hidden size 32), a character-level ``CLIPTokenizer`` and a ``DDIMScheduler``; no
    safety checker. The weights are drawn from ``seed`` (the caller's global torch RNG is left as it
    was), so the same seed gives the same weights. Reload with ``DiffusionPipeline.from_pretrained(path)``
    (no network needed). The weights are random: images are noise-like and scores on them mean nothing.
    """
    import torch
    from diffusers import (
        AutoencoderKL,
        DDIMScheduler,
        StableDiffusionPipeline,
        UNet2DConditionModel,
    )
    from transformers import CLIPTextConfig, CLIPTextModel

    path = Path(path)
    vocab = _byte_vocab()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        unet = UNet2DConditionModel(
            sample_size=TINY_RESOLUTION // 4, in_channels=4, out_channels=4, layers_per_block=1,
            block_out_channels=(4, 8), norm_num_groups=2, cross_attention_dim=32, attention_head_dim=2,
            down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
            up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
        )
        vae = AutoencoderKL(
            sample_size=TINY_RESOLUTION, in_channels=3, out_channels=3, latent_channels=4, layers_per_block=1,
            block_out_channels=(4, 8, 8), norm_num_groups=2,
            down_block_types=("DownEncoderBlock2D",) * 3, up_block_types=("UpDecoderBlock2D",) * 3,
        )
        text_encoder = CLIPTextModel(CLIPTextConfig(
            vocab_size=len(vocab), hidden_size=32, intermediate_size=37, num_attention_heads=4, num_hidden_layers=2,
            max_position_embeddings=77, bos_token_id=vocab["<|startoftext|>"], eos_token_id=vocab["<|endoftext|>"],
            pad_token_id=vocab["<|endoftext|>"], projection_dim=32,
        ))
    scheduler = DDIMScheduler(beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear",
                              clip_sample=False, set_alpha_to_one=False, steps_offset=1)
    pipe = StableDiffusionPipeline(
        vae=vae, text_encoder=text_encoder, tokenizer=_tiny_tokenizer(vocab), unet=unet, scheduler=scheduler,
        safety_checker=None, feature_extractor=None, requires_safety_checker=False,
    )
    pipe.save_pretrained(path)
    return path
