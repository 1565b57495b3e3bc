"""The one cache of model outputs: reuse, keys, verification of what it reads, compaction, resumption after
SIGKILL, and scorer identities that let a rerun load no model."""

from __future__ import annotations

import hashlib
import io
import json
import os
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
from cultureboard.evaluators.engine import cache as cache_module
from cultureboard.evaluators.engine.cache import Cache, cache_key
from cultureboard.evaluators.engine.batching import BATCH_SIZE, FIXED, in_batches
from cultureboard.evaluators.engine.embedding import embed_images, embed_texts, image_key
from cultureboard.evaluators.engine.images import ImageSource
from cultureboard.evaluators.engine.scorers import Scorers, identity_of, load_scorer

TEXTS = ["a bowl of pho", "Ein Teller Spätzle", "寿司"]


@pytest.fixture(scope="module")
def images(tmp_path_factory) -> list[ImageSource]:
    """40 small random PNGs of varied sizes."""
    folder = tmp_path_factory.mktemp("images")
    rng = np.random.default_rng(0)
    items = []
    for i in range(40):
        path = folder / f"{i:02d}.png"
        size = (int(rng.integers(20, 48)), int(rng.integers(20, 48)))
        Image.fromarray(rng.integers(0, 256, (*size, 3), dtype=np.uint8)).save(path)
        items.append(ImageSource(hashlib.sha256(path.read_bytes()).hexdigest(), path))
    return items


@pytest.fixture(scope="module")
def siglip(tiny_scorers):
    return load_scorer("siglip2-so400m", config=tiny_scorers)


def count_calls(scorer, method: str) -> list[int]:
    """Wrap ``scorer.method`` to record the batch size of every call."""
    calls, original = [], getattr(scorer, method)

    def wrapper(batch):
        calls.append(len(batch))
        return original(batch)

    setattr(scorer, method, wrapper)
    return calls


def embed(cache: Cache, scorer, items, **kw):
    return embed_images(cache, identity_of(scorer), lambda: scorer, items, **kw)


def test_rerun_computes_nothing_and_returns_identical_vectors(siglip, images, tmp_path):
    image_calls, text_calls = count_calls(siglip, "encode_pixels"), count_calls(siglip, "embed_texts")
    try:
        first = Cache(tmp_path)
        vectors = embed(first, siglip, images + images[:3], batch_size=8, num_workers=1)
        texts = embed_texts(first, identity_of(siglip), lambda: siglip, TEXTS + TEXTS)
        modes = identity_of(siglip)["forward_passes"]
        # every pass has one shape: 5 decoded batches of 8, each padded to 32; or each input alone
        expected = ([BATCH_SIZE] * 5 if modes["image"] == FIXED else [1] * 40,
                    [BATCH_SIZE] if modes["text"] == FIXED else [1] * 3)
        assert (image_calls, text_calls) == expected, "fixed batches or each input alone, never free batches"
        assert first.stats == Counter({"image-embedding_misses": 40, "text-embedding_misses": 3,
                                       "image-embedding_hits": 0, "text-embedding_hits": 0})
        rerun = Cache(tmp_path)
        assert all(np.array_equal(vectors[s], v) for s, v in embed(rerun, siglip, images).items())
        again = embed_texts(rerun, identity_of(siglip), lambda: siglip, TEXTS)
        assert all(np.array_equal(texts[t], v) for t, v in again.items())
        assert (image_calls, text_calls) == expected, "a rerun must read everything from the cache"
        assert rerun.stats["image-embedding_hits"] == 40 and rerun.stats["text-embedding_hits"] == 3
    finally:
        del siglip.encode_pixels, siglip.embed_texts
    import torch

    pixels = torch.stack([siglip.image_transform(item.open()) for item in images[:8]])
    recomputed = in_batches(modes["image"], siglip.encode_pixels, pixels)
    assert all(np.array_equal(v, vectors[item.sha256]) for v, item in zip(recomputed, images))
    key = json.loads((tmp_path / cache_key(image_key(identity_of(siglip))) / "key.json").read_text())
    assert key == {"kind": "image-embedding", "model_id": siglip.model_id, "revision": siglip.revision,
                   "dtype": "float32", "preprocessing": siglip.preprocessing, "computed": modes["image"],
                   "value_shape": [len(vectors[images[0].sha256])]}


def test_vectors_do_not_depend_on_what_the_cache_held(siglip, images, tmp_path):
    """A cache warmed with an overlapping subset (another submission's images, a killed run) gives the same bits as
    an empty one: in batches, the rest would be computed beside other batch-mates than in a fresh run."""
    fresh_cache, warm_cache = Cache(tmp_path / "fresh"), Cache(tmp_path / "warm")
    fresh = embed(fresh_cache, siglip, images, batch_size=16)
    fresh_texts = embed_texts(fresh_cache, identity_of(siglip), lambda: siglip, TEXTS)
    embed(warm_cache, siglip, images[3:20:3], batch_size=4)
    embed_texts(warm_cache, identity_of(siglip), lambda: siglip, TEXTS[1:2])
    warm = embed(Cache(tmp_path / "warm"), siglip, images, batch_size=16)
    warm_texts = embed_texts(Cache(tmp_path / "warm"), identity_of(siglip), lambda: siglip, TEXTS)
    assert all(fresh[s].tobytes() == warm[s].tobytes() for s in fresh)
    assert all(fresh_texts[t].tobytes() == warm_texts[t].tobytes() for t in TEXTS)


def test_key_changes_with_revision_preprocessing_and_dtype(tiny_scorers, images, tmp_path):
    base = {"kind": "image-embedding", "model_id": "m", "revision": "r1", "dtype": "float32", "preprocessing": "p"}
    variants = [base, {**base, "revision": "r2"}, {**base, "preprocessing": "q"}, {**base, "model_id": "n"},
                {**base, "dtype": "float16"}, {**base, "kind": "text-embedding"}]
    assert len({cache_key(v) for v in variants}) == len(variants)
    fp32 = load_scorer("clip-vit-l-14", config=tiny_scorers, dtype="float32")
    bf16 = load_scorer("clip-vit-l-14", config=tiny_scorers, dtype="bfloat16")
    cache = Cache(tmp_path)
    a, b = embed(cache, fp32, images[:2]), embed(cache, bf16, images[:2])
    assert cache.stats["image-embedding_misses"] == 4, "a bfloat16 vector is never reused by a float32 run"
    assert not np.array_equal(a[images[0].sha256], b[images[0].sha256])


def test_corrupt_image_is_an_error_naming_the_file(siglip, images, tmp_path):
    broken = tmp_path / "broken.png"
    broken.write_bytes(images[0].path.read_bytes()[:60])
    with pytest.raises(CultureboardError, match=r"broken\.png: cannot read the image"):
        embed(Cache(tmp_path / "cache"), siglip, [*images[:4], ImageSource("f" * 64, broken)], batch_size=4,
              num_workers=1)


def _shards(root: Path) -> list[Path]:
    return sorted(root.glob("*/shard-*.npz"))


def _rewrite(shard: Path, **changes) -> None:
    with np.load(shard) as data:
        arrays = {k: data[k] for k in data.files}
    arrays.update(changes)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    shard.write_bytes(buffer.getvalue())


@pytest.mark.parametrize("damage", ["random vectors", "wrong dimension", "nan", "truncated"])
def test_a_damaged_shard_is_dropped_and_recomputed(siglip, images, tmp_path, damage):
    items = images[:6]
    fresh = embed(Cache(tmp_path / "fresh"), siglip, items)
    embed(Cache(tmp_path / "cache"), siglip, items[:2], batch_size=2)
    [shard] = _shards(tmp_path / "cache")
    with np.load(shard) as data:
        vectors = data["vectors" if "vectors" in data.files else "values"]
    rng = np.random.default_rng(1)
    if damage == "random vectors":  # a valid file whose checksum no longer matches
        _rewrite(shard, values=rng.normal(size=vectors.shape).astype(np.float32))
    elif damage == "wrong dimension":  # consistent checksum, other shape than most of the folder's entries
        embed(Cache(tmp_path / "cache"), siglip, items[2:5])
        values = rng.normal(size=(2, vectors.shape[1] + 1)).astype(np.float32)
        with np.load(shard) as data:
            keys = data["keys"]
        _rewrite(shard, values=values, checksum=np.array(cache_module._checksum(keys, values)))
    elif damage == "nan":
        values = vectors.copy()
        values[0, 0] = np.nan
        with np.load(shard) as data:
            keys = data["keys"]
        _rewrite(shard, values=values, checksum=np.array(cache_module._checksum(keys, values)))
    else:
        shard.write_bytes(shard.read_bytes()[:100])
    cache = Cache(tmp_path / "cache")
    with pytest.warns(UserWarning, match="cache shard dropped"):
        got = embed(cache, siglip, items)
    assert cache.stats["rejected_shards"] == 1
    # batches of another composition may differ in the last bits, damaged values would differ entirely
    assert all(np.allclose(got[s], fresh[s], atol=1e-5) for s in fresh), "damaged entries are recomputed, never used"
    assert list((tmp_path / "cache").glob("*/*.rejected"))


def _reshaped(shard: Path, dim: int) -> None:
    """Give ``shard`` random values of ``dim`` columns, with a checksum that matches them."""
    with np.load(shard) as data:
        keys = data["keys"]
    values = np.random.default_rng(2).normal(size=(len(keys), dim)).astype(np.float32)
    _rewrite(shard, values=values, checksum=np.array(cache_module._checksum(keys, values)))


def test_the_value_shape_is_recorded_and_a_shard_of_another_is_dropped(siglip, images, tmp_path):
    """key.json records the shape of one value with the first batch; a folder whose only shard has another
    (its checksum right, so no majority and no checksum could tell) is recomputed; the model cannot add values
    of another shape; a folder of an older version, which recorded none, records the shape most entries have."""
    items = images[:4]
    fresh = embed(Cache(tmp_path / "fresh"), siglip, items)
    dim = len(fresh[items[0].sha256])
    embed(Cache(tmp_path / "cache"), siglip, items[:2])
    [shard] = _shards(tmp_path / "cache")
    key_file = shard.parent / "key.json"
    assert json.loads(key_file.read_text())["value_shape"] == [dim]
    _reshaped(shard, dim + 1)
    cache = Cache(tmp_path / "cache")
    with pytest.warns(UserWarning, match=rf"its values have shape \({dim + 1},\), key\.json records \({dim},\)"):
        got = embed(cache, siglip, items)
    assert cache.stats["rejected_shards"] == 1
    assert all(np.allclose(got[s], fresh[s], atol=1e-5) for s in fresh)
    with pytest.raises(ValueError, match=rf"values of shape \({dim + 1},\), but .*key\.json records \({dim},\)"):
        cache.store(image_key(identity_of(siglip))).put(["f" * 64], np.zeros((1, dim + 1)))

    shards = _shards(tmp_path / "cache")  # the recomputed 4 entries, and the rejected one aside
    embed(Cache(tmp_path / "cache"), siglip, images[4:5])  # a fifth entry, then the lone one gets another shape
    [lone] = sorted(set(_shards(tmp_path / "cache")) - set(shards))
    _reshaped(lone, dim + 1)
    older = {k: v for k, v in json.loads(key_file.read_text()).items() if k != "value_shape"}
    key_file.write_text(json.dumps(older))
    cache = Cache(tmp_path / "cache")
    with pytest.warns(UserWarning, match=rf"its values have shape \({dim + 1},\), key\.json records \({dim},\)"):
        embed(cache, siglip, images[:5])
    assert cache.stats["rejected_shards"] == 1 and json.loads(key_file.read_text()) == {**older, "value_shape": [dim]}


def test_folders_are_read_once_and_compacted(siglip, images, tmp_path, monkeypatch):
    cache = Cache(tmp_path)
    for item in images[:5]:
        embed(cache, siglip, [item])
    assert len(_shards(tmp_path)) == 5
    monkeypatch.setattr(cache_module, "COMPACT_ABOVE", 3)
    loads = []
    original = np.load
    monkeypatch.setattr(np, "load", lambda *a, **k: (loads.append(a[0]), original(*a, **k))[1])
    reopened = Cache(tmp_path)
    first = embed(reopened, siglip, images[:5])
    assert len(_shards(tmp_path)) == 1 and reopened.stats["compactions"] == 1
    count = len(loads)
    for _ in range(3):
        embed(reopened, siglip, images[:5])
    assert len(loads) == count, "a folder is read once per run, not on every call"
    monkeypatch.setattr(np, "load", original)
    again = embed(Cache(tmp_path), siglip, images[:5])
    assert all(np.array_equal(first[s], again[s]) for s in first)


def test_text_values_round_trip(tmp_path):
    store = Cache(tmp_path).store({"kind": "judge-answer", "model_id": "m", "revision": "r", "dtype": "float32",
                                   "preprocessing": "p"})
    store.put(["k1", "k2"], ['{"choice": 1}', "Ja, é sim 寿司"])
    reread = Cache(tmp_path).store(store.key).get(["k1", "k2", "k3"])
    assert reread == {"k1": '{"choice": 1}', "k2": "Ja, é sim 寿司"}


def test_identities_are_remembered_so_a_rerun_loads_no_model(tiny_scorers, images, tmp_path):
    first = Scorers(tiny_scorers, "cpu", "float32", state=tmp_path / "state")
    identity = first.identity("msiglip")
    assert "msiglip" in first._models  # the first time, identity means loading
    second = Scorers(tiny_scorers, "cpu", "float32", state=tmp_path / "state")
    assert second.identity("msiglip") == identity and not second._models
    other_dtype = Scorers(tiny_scorers, "cpu", "bfloat16", state=tmp_path / "state")
    assert other_dtype.identity("msiglip")["dtype"] == "bfloat16" and "msiglip" in other_dtype._models
    cache = Cache(tmp_path / "cache")
    embed_images(cache, first.identity("msiglip"), lambda: first.model("msiglip"), images[:3])
    rerun = Scorers(tiny_scorers, "cpu", "float32", state=tmp_path / "state")
    embed_images(Cache(tmp_path / "cache"), rerun.identity("msiglip"), lambda: rerun.model("msiglip"), images[:3])
    assert not rerun._models, "every input was cached: no model may be loaded"
    assert json.loads((tmp_path / "state" / "fingerprints.json").read_text()), "file hashes are remembered"


def test_declared_training_data_is_recorded_but_not_part_of_the_identity(tiny_scorers, tmp_path):
    """The registry's training_data reaches the provenance (the site's entanglement badges) and is descriptive:
    changing it neither changes a scorer's identity nor makes a rerun load the model again."""
    import yaml

    config = yaml.safe_load(tiny_scorers.read_text())
    config = {name: {**entry, "path": str(tiny_scorers.parent / entry["path"])} if "path" in entry else entry
              for name, entry in config.items()}
    first = Scorers({**config, "msiglip": {**config["msiglip"], "training_data": ["WebLI"]}}, "cpu", "float32",
                    state=tmp_path / "state")
    identity = first.identity("msiglip")
    assert first.used() == [{**identity, "training_data": ["WebLI"]}] and "training_data" not in identity
    renamed = Scorers({**config, "msiglip": {**config["msiglip"], "training_data": ["LAION-2B"]}}, "cpu", "float32",
                      state=tmp_path / "state")
    assert renamed.identity("msiglip") == identity and not renamed._models
    assert renamed.used()[0]["training_data"] == ["LAION-2B"]


RESUMABLE_JOB = """
import json, sys, time
from pathlib import Path
from cultureboard.evaluators.engine.cache import Cache
from cultureboard.evaluators.engine.embedding import embed_images
from cultureboard.evaluators.engine.images import ImageSource
from cultureboard.evaluators.engine.scorers import identity_of, load_scorer

config, cache, items = sys.argv[1:]
scorer = load_scorer("msiglip", config=config)
encode = scorer.encode_pixels
scorer.encode_pixels = lambda pixels: (time.sleep(0.2), encode(pixels))[1]  # slow enough to be killed midway
sources = [ImageSource(sha, Path(path)) for sha, path in json.loads(items)]
embed_images(Cache(cache), identity_of(scorer), lambda: scorer, sources, batch_size=4, num_workers=0)
"""


def test_sigkill_then_rerun_continues_from_the_cache(tiny_scorers, images, tmp_path):
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(RESUMABLE_JOB))
    items = json.dumps([(item.sha256, str(item.path)) for item in images])
    job = subprocess.Popen([sys.executable, str(script), str(tiny_scorers), str(tmp_path / "cache"), items],
                           env={**os.environ, "HF_HUB_OFFLINE": "1"}, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 900  # a bound against hanging, not a speed requirement
    while len(_shards(tmp_path / "cache")) < 2:
        assert job.poll() is None and time.monotonic() < deadline, "the job ended before it could be killed"
        time.sleep(0.05)
    job.send_signal(signal.SIGKILL)
    job.wait()
    done = sum(len(np.load(shard)["keys"]) for shard in _shards(tmp_path / "cache"))
    assert 0 < done < len(images)

    scorer = load_scorer("msiglip", config=tiny_scorers)
    calls = count_calls(scorer, "encode_pixels")
    resumed = Cache(tmp_path / "cache")
    vectors = embed(resumed, scorer, images, batch_size=4, num_workers=1)
    missing = len(images) - done  # decoded 4 at a time, each batch padded to one fixed shape (or each image alone)
    fixed = identity_of(scorer)["forward_passes"]["image"] == FIXED
    assert calls == ([BATCH_SIZE] * -(-missing // 4) if fixed else [1] * missing), \
        "the rerun must compute only the images the killed run did not finish"
    assert resumed.stats["image-embedding_hits"] == done
    fresh = embed(Cache(tmp_path / "fresh"), scorer, images, batch_size=4, num_workers=0)
    assert fresh.keys() == vectors.keys()
    assert all(np.array_equal(fresh[s], vectors[s]) for s in fresh), "resumed and fresh runs must agree exactly"
