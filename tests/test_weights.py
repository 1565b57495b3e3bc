"""Scorer models built without random initialisation (evaluators/engine/weights.py, the loaders of embedding.py and
judge.py) are the models the ordinary build gives: every tensor equal, none left on the meta device, and the same
embeddings, in float32 and float16."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from cultureboard.evaluators.engine.scorers import load_scorer

TEXTS = ["a bowl of paella", "a kimono"]


def tensors(model) -> dict:
    """Every parameter and buffer (the ones a module computes itself included), by name."""
    return {**dict(model.named_parameters()), **dict(model.named_buffers())}


def assert_same_model(new, old):
    new_t, old_t = tensors(new), tensors(old)
    assert new_t.keys() == old_t.keys()
    meta = [name for name, t in new_t.items() if t.is_meta]
    assert not meta, f"left on the meta device: {meta[:5]}"
    for name, t in new_t.items():
        assert (t.dtype, t.device) == (old_t[name].dtype, old_t[name].device), name
        assert torch_equal(t, old_t[name]), name


def torch_equal(a, b) -> bool:
    import torch

    return torch.equal(a, b)


def pictures(n: int = 3) -> list:
    rng = np.random.default_rng(0)
    return [Image.fromarray(rng.integers(0, 256, (40, 56, 3), dtype=np.uint8)) for _ in range(n)]


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("name", ["hpsv2.1", "msiglip"])
def test_open_clip_built_without_init_is_the_ordinary_model(tiny_scorers, name, dtype):
    import open_clip

    scorer = load_scorer(name, config=tiny_scorers, device="cpu", dtype=dtype)
    precision = {"float32": "fp32", "float16": "fp16"}[dtype]
    old = open_clip.create_model(scorer.model_name, precision=precision, device="cpu")
    assert_same_model(scorer.model, old.eval())
    if dtype == "float32":  # CPU kernels for float16 are not what this compares
        import torch

        pixels = torch.stack([scorer.image_transform(p) for p in pictures()])
        with torch.inference_mode():
            expected = torch.nn.functional.normalize(old.encode_image(pixels).float(), dim=-1).numpy()
        assert np.array_equal(scorer.encode_pixels(pixels), expected)
        with torch.inference_mode():
            expected = torch.nn.functional.normalize(old.encode_text(scorer.tokenizer(TEXTS)).float(), dim=-1).numpy()
        assert np.array_equal(scorer.embed_texts(TEXTS), expected)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("name", ["siglip2-so400m", "clip-vit-l-14", "dinov2-base"])
def test_transformers_read_to_the_device_is_the_ordinary_model(tiny_scorers, name, dtype):
    import torch
    from transformers import AutoModel

    scorer = load_scorer(name, config=tiny_scorers, device="cpu", dtype=dtype)
    old = AutoModel.from_pretrained(tiny_scorers.parent / name).to(device="cpu", dtype=getattr(torch, dtype)).eval()
    assert_same_model(scorer.model, old)


def test_the_judge_read_to_the_device_is_the_ordinary_model(tiny_scorers):
    import torch
    from transformers import AutoModelForImageTextToText

    scorer = load_scorer("qwen2.5-vl-7b", config=tiny_scorers, device="cpu")
    old = AutoModelForImageTextToText.from_pretrained(tiny_scorers.parent / "qwen2.5-vl-7b",
                                                      dtype=torch.float32).to("cpu").eval()
    assert_same_model(scorer.model, old)


def test_the_build_context_restores_torch_afterwards(tmp_path):
    """Initialisers and torch.load's mmap default are torch's own again after the block, also after an error; a
    legacy (non-zip) pickle is not memory-mapped (torch refuses mmap for it)."""
    import torch
    from torch.utils.serialization import config

    from cultureboard.evaluators.engine.weights import filled_from_checkpoint

    before = torch.nn.init.normal_
    legacy, modern = tmp_path / "legacy.pt", tmp_path / "modern.pt"
    torch.save({"w": torch.ones(2)}, legacy, _use_new_zipfile_serialization=False)
    torch.save({"w": torch.ones(2)}, modern)
    with filled_from_checkpoint("cpu", [modern]):
        assert torch.nn.init.normal_ is not before and config.load.mmap
        layer = torch.nn.Linear(3, 2)
        assert layer.weight.device.type == "cpu"
    with pytest.raises(RuntimeError, match="inside"):
        with filled_from_checkpoint("cpu", [legacy]):
            assert not config.load.mmap
            assert torch.equal(torch.load(legacy, weights_only=True)["w"], torch.ones(2))
            raise RuntimeError("inside")
    assert torch.nn.init.normal_ is before and not config.load.mmap
    torch.manual_seed(0)
    assert not torch.equal(torch.nn.Linear(3, 2).weight, torch.nn.Linear(3, 2).weight)  # initialised again


@pytest.mark.parametrize("name", ["hpsv2.1", "msiglip"])
def test_open_clip_models_are_built_without_drawing_their_initialisation(tiny_scorers, monkeypatch, name):
    """The checkpoint replaces every weight: none of torch.nn.init's initialisers runs while the scorer is built."""
    import torch

    calls = []
    for function in ("normal_", "uniform_", "kaiming_uniform_", "trunc_normal_", "zeros_", "ones_", "constant_"):
        original = getattr(torch.nn.init, function)
        monkeypatch.setattr(torch.nn.init, function,
                            lambda t, *a, _f=original, _n=function, **k: calls.append(_n) or _f(t, *a, **k))
    load_scorer(name, config=tiny_scorers, device="cpu")
    assert calls == []
    torch.nn.Linear(2, 2)  # the counters work: outside the build, a module initialises its weights
    assert "kaiming_uniform_" in calls
