"""Scorer registry, loader and embedding cache, on tiny random models loaded through the real code path.

HF_HUB_OFFLINE=1 (conftest): Hub checkpoints are found in a fabricated Hugging Face cache or not at all.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from cultureboard.errors import CultureboardError
from cultureboard.evaluators.engine.cache import EmbeddingCache, cache_key
from cultureboard.evaluators.engine.scorers import choose_device, choose_dtype, load_registry, load_scorer
from cultureboard.evaluators.engine.tiny_scorers import TINY_CONFIG, save_tiny_scorers

NAMES = ["siglip2-so400m", "clip-vit-l-14", "msiglip", "hpsv2.1", "dinov2-base"]
TEXTS = ["a bowl of pho", "Ein Teller Spätzle", "寿司"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    """The scorer config pointing every registry name at its tiny model."""
    root = tmp_path_factory.mktemp("tiny-scorers")
    save_tiny_scorers(root)
    return root / TINY_CONFIG


@pytest.fixture(scope="module")
def images(tmp_path_factory) -> list[tuple[str, Path]]:
    """40 small random PNGs of varied sizes, as (sha256, path)."""
    folder = tmp_path_factory.mktemp("images")
    rng = np.random.default_rng(0)
    items = []
    for i in range(40):
        path = folder / f"{i:02d}.png"
        size = (int(rng.integers(20, 48)), int(rng.integers(20, 48)))
        Image.fromarray(rng.integers(0, 256, (*size, 3), dtype=np.uint8)).save(path)
        items.append((hashlib.sha256(path.read_bytes()).hexdigest(), path))
    return items


def count_calls(scorer, method: str) -> list[int]:
    """Wrap ``scorer.method`` to record the batch size of every call."""
    calls, original = [], getattr(scorer, method)

    def wrapper(batch):
        calls.append(len(batch))
        return original(batch)

    setattr(scorer, method, wrapper)
    return calls


def test_registry_names_the_default_checkpoints():
    registry = load_registry()
    assert set(NAMES) <= set(registry)
    assert registry["siglip2-so400m"]["model"] == "google/siglip2-so400m-patch14-384"
    assert registry["clip-vit-l-14"]["model"] == "openai/clip-vit-large-patch14"
    assert registry["hpsv2.1"]["weights"] == {"repo": "xswu/HPSv2", "file": "HPS_v2.1_compressed.pt"}
    assert registry["msiglip"]["weights"]["repo"] == "timm/ViT-SO400M-16-SigLIP-i18n-256"
    assert all(entry.get("revision") and entry.get("role") for entry in registry.values())


@pytest.mark.parametrize("name", NAMES)
def test_tiny_scorer_loads_through_the_real_loader(tiny, images, name):
    scorer = load_scorer(name, config=tiny)
    again = load_scorer(name, config=tiny)
    assert scorer.backend == load_registry()[name]["backend"]
    assert (scorer.device, scorer.dtype) == ("cpu", "float32")
    assert scorer.revision.startswith("local:") and len(scorer.revision) == len("local:") + 64
    assert again.revision == scorer.revision, "the revision of a local folder must be stable across reloads"
    pil = [Image.open(path) for _, path in images[:5]]
    vectors = scorer.embed_images(pil)
    assert vectors.dtype == np.float32 and vectors.shape[0] == 5
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    assert np.array_equal(vectors, again.embed_images(pil)), "embeddings must be deterministic"
    if name == "dinov2-base":
        assert scorer.logit_scale is None
        with pytest.raises(CultureboardError, match="no text tower"):
            scorer.embed_texts(TEXTS)
    else:
        texts = scorer.embed_texts(TEXTS)
        np.testing.assert_allclose(np.linalg.norm(texts, axis=1), 1, atol=1e-5)
        assert np.array_equal(texts, again.embed_texts(TEXTS))
        assert scorer.logit_scale > 0


def fake_hub_snapshot(cache: Path, repo: str, commit: str) -> Path:
    """The folder of ``repo``@``commit`` in a Hugging Face cache at ``cache``, with refs/main pointing at it."""
    storage = cache / ("models--" + repo.replace("/", "--"))
    (storage / "refs").mkdir(parents=True)
    (storage / "refs" / "main").write_text(commit)
    return storage / "snapshots" / commit


def test_hub_checkpoints_resolve_to_the_cached_commit(tiny, images, tmp_path, monkeypatch):
    import huggingface_hub
    import open_clip
    import torch

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    clip_commit, hps_commit = "a" * 40, "b" * 40
    shutil.copytree(tiny.parent / "clip-vit-l-14", fake_hub_snapshot(tmp_path / "hub", "openai/clip-vit-large-patch14",
                                                                     clip_commit))
    clip = load_scorer("clip-vit-l-14")
    assert (clip.model_id, clip.revision) == ("openai/clip-vit-large-patch14", clip_commit)
    pil = [Image.open(path) for _, path in images[:3]]
    assert np.array_equal(clip.embed_images(pil), load_scorer("clip-vit-l-14", config=tiny).embed_images(pil))

    # HPS v2.1 as the registry loads it: an open_clip architecture + the checkpoint file from xswu/HPSv2.
    tiny_hps = tiny.parent / "hpsv2.1"
    architecture = tmp_path / "tiny-ViT-H-14.json"
    architecture.write_text(json.dumps(json.loads((tiny_hps / "open_clip_config.json").read_text())["model_cfg"]))
    open_clip.add_model_config(architecture)
    from safetensors.torch import load_file

    snapshot = fake_hub_snapshot(tmp_path / "hub", "xswu/HPSv2", hps_commit)
    snapshot.mkdir(parents=True)
    torch.save({"state_dict": load_file(tiny_hps / "open_clip_model.safetensors")}, snapshot / "HPS_v2.1_compressed.pt")
    hps = load_scorer("hpsv2.1", config={"hpsv2.1": {"model": "tiny-ViT-H-14"}})
    assert (hps.model_id, hps.revision) == ("tiny-ViT-H-14:xswu/HPSv2/HPS_v2.1_compressed.pt", hps_commit)
    assert '"resize_mode": "longest"' in hps.preprocessing
    assert np.array_equal(hps.embed_images(pil), load_scorer("hpsv2.1", config=tiny).embed_images(pil))

    with pytest.raises(CultureboardError) as error:
        load_scorer("siglip2-so400m")  # not in the cache, and the Hub is offline
    assert "siglip2-so400m" in str(error.value) and "download it on a machine with network" in str(error.value)


def test_device_and_dtype(tiny, images):
    import torch

    assert (choose_dtype("cuda"), choose_dtype("cpu"), choose_dtype("mps")) == ("float16", "float32", "float32")
    assert choose_dtype("cpu", torch.bfloat16) == choose_dtype("cpu", "bf16") == "bfloat16"
    with pytest.raises(CultureboardError, match="unknown dtype"):
        choose_dtype("cpu", "int8")
    if not torch.cuda.is_available():
        with pytest.raises(CultureboardError, match="'cuda' is not available"):
            choose_device("cuda")
    scorer = load_scorer("clip-vit-l-14", config=tiny, device="cpu", dtype="bfloat16")
    vectors = scorer.embed_images([Image.open(path) for _, path in images[:2]])
    assert scorer.dtype == "bfloat16" and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)


def test_loading_errors_name_the_scorer_and_the_fix(tmp_path):
    with pytest.raises(CultureboardError, match=r"scorer clip-vit-l-14: local path .*nowhere does not exist"):
        load_scorer("clip-vit-l-14", config={"clip-vit-l-14": {"path": str(tmp_path / "nowhere")}})
    (tmp_path / "empty").mkdir()
    with pytest.raises(CultureboardError, match="scorer msiglip: .* lacks open_clip_config.json or weights"):
        load_scorer("msiglip", config={"msiglip": {"path": str(tmp_path / "empty")}})
    with pytest.raises(CultureboardError, match="scorer dinov2-base: cannot load"):
        load_scorer("dinov2-base", config={"dinov2-base": {"path": str(tmp_path / "empty")}})
    with pytest.raises(CultureboardError, match="is not in the registry"):
        load_scorer("no-such-scorer")
    config = tmp_path / "scorers.yaml"
    config.write_text("mine: {backend: tensorflow, model: x}\n")
    with pytest.raises(CultureboardError, match="scorers.yaml: scorer 'mine': backend must be one of"):
        load_scorer("mine", config=config)


def test_cache_rerun_computes_nothing_and_returns_identical_vectors(tiny, images, tmp_path):
    scorer = load_scorer("siglip2-so400m", config=tiny)
    image_calls, text_calls = count_calls(scorer, "encode_pixels"), count_calls(scorer, "embed_texts")
    first = EmbeddingCache(tmp_path)
    vectors = first.embed_images(scorer, images + images[:3], batch_size=8, num_workers=1)
    texts = first.embed_texts(scorer, TEXTS + TEXTS)
    assert image_calls == [8] * 5 and text_calls == [3]
    assert first.stats == Counter(image_misses=40, text_misses=3)
    rerun = EmbeddingCache(tmp_path)
    assert all(np.array_equal(vectors[sha], v) for sha, v in rerun.embed_images(scorer, images).items())
    assert all(np.array_equal(texts[t], v) for t, v in rerun.embed_texts(scorer, TEXTS).items())
    assert image_calls == [8] * 5 and text_calls == [3], "a rerun must read everything from the cache"
    assert rerun.stats == Counter(image_hits=40, text_hits=3)
    pil = [Image.open(path) for _, path in images[:8]]
    assert np.array_equal(scorer.embed_images(pil), np.stack([vectors[sha] for sha, _ in images[:8]]))
    key = json.loads((rerun.folder(scorer, "image") / "key.json").read_text())
    assert key == {"kind": "image", "model_id": scorer.model_id, "revision": scorer.revision,
                   "preprocessing": scorer.preprocessing}


def test_cache_key_changes_with_revision_and_preprocessing(tiny, tmp_path):
    base = cache_key("image", "m", "rev1", "size=32")
    assert len({base, cache_key("image", "m", "rev2", "size=32"), cache_key("image", "m", "rev1", "size=64"),
                cache_key("image", "n", "rev1", "size=32"), cache_key("text", "m", "rev1", "size=32")}) == 5
    default = load_scorer("hpsv2.1", config=tiny)
    squashed = load_scorer("hpsv2.1", config={"hpsv2.1": {"path": str(tiny.parent / "hpsv2.1"),
                                                          "preprocess": {"resize_mode": "squash"}}})
    assert squashed.revision == default.revision and squashed.preprocessing != default.preprocessing
    cache = EmbeddingCache(tmp_path)
    assert cache.folder(default, "image") != cache.folder(squashed, "image")
    assert cache.folder(default, "text") == cache.folder(squashed, "text")


def test_corrupt_image_is_an_error_naming_the_file(tiny, images, tmp_path):
    broken = tmp_path / "broken.png"
    broken.write_bytes(images[0][1].read_bytes()[:60])
    scorer = load_scorer("clip-vit-l-14", config=tiny)
    with pytest.raises(CultureboardError, match=r"broken\.png: cannot read the image"):
        EmbeddingCache(tmp_path / "cache").embed_images(scorer, [*images[:4], ("f" * 64, broken)], batch_size=4,
                                                        num_workers=1)


RESUMABLE_JOB = """
import json, sys, time
from cultureboard.evaluators.engine.cache import EmbeddingCache
from cultureboard.evaluators.engine.scorers import load_scorer

config, cache, items = sys.argv[1:]
scorer = load_scorer("msiglip", config=config)
encode = scorer.encode_pixels
scorer.encode_pixels = lambda pixels: (time.sleep(0.2), encode(pixels))[1]  # slow enough to be killed midway
EmbeddingCache(cache).embed_images(scorer, json.loads(items), batch_size=4, num_workers=0)
"""


def test_sigkill_then_rerun_continues_from_the_cache(tiny, images, tmp_path):
    items = [(sha, str(path)) for sha, path in images]
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(RESUMABLE_JOB))
    job = subprocess.Popen([sys.executable, str(script), str(tiny), str(tmp_path / "cache"), json.dumps(items)],
                           env={**os.environ, "HF_HUB_OFFLINE": "1"}, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while len(list((tmp_path / "cache").glob("*/shard-*.npz"))) < 2:
        assert job.poll() is None and time.monotonic() < deadline, "the job ended before it could be killed"
        time.sleep(0.05)
    job.send_signal(signal.SIGKILL)
    job.wait()
    done = sum(len(np.load(shard)["keys"]) for shard in (tmp_path / "cache").glob("*/shard-*.npz"))
    assert 0 < done < len(items)

    scorer = load_scorer("msiglip", config=tiny)
    calls = count_calls(scorer, "encode_pixels")
    resumed = EmbeddingCache(tmp_path / "cache")
    vectors = resumed.embed_images(scorer, items, batch_size=4, num_workers=1)
    assert sum(calls) == len(items) - done, "the rerun must compute only the images the killed run did not finish"
    assert resumed.stats == Counter(image_hits=done, image_misses=len(items) - done)
    fresh = EmbeddingCache(tmp_path / "fresh").embed_images(scorer, items, batch_size=4, num_workers=0)
    assert fresh.keys() == vectors.keys()
    assert all(np.array_equal(fresh[sha], vectors[sha]) for sha in fresh), "resumed and fresh runs must agree exactly"
