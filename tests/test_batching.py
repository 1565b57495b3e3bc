"""Fixed-shape batches (evaluators/engine/batching.py): every pass has one shape, padding never reaches a result, and
a model whose rows depend on their batch-mates falls back to one input per pass."""

from __future__ import annotations

import numpy as np
import pytest

from cultureboard.evaluators.engine.batching import (ALONE, BATCH_SIZE, FIXED, fixed_batches, in_batches,
                                                     independent_of_batch_mates, mode_of, probe)


def rows(n: int, width: int = 3) -> np.ndarray:
    return np.arange(n * width, dtype=np.float32).reshape(n, width)


def test_every_pass_has_the_fixed_shape_and_the_padding_is_dropped():
    shapes = []

    def doubled(x):
        shapes.append(x.shape)
        return 2 * x

    out = fixed_batches(doubled, rows(37), size=8)
    assert shapes == [(8, 3)] * 5  # 37 rows: four full batches and a fifth of 5 rows padded to 8
    assert np.array_equal(np.stack(out), 2 * rows(37))


def test_the_last_batch_is_padded_with_copies_of_its_last_row():
    seen = []
    fixed_batches(lambda a, b: seen.append((list(a), b.copy())) or a, ["x", "y", "z"], rows(3)[:, 0], size=5)
    assert seen[0][0] == ["x", "y", "z", "z", "z"] and seen[0][1].tolist() == [0, 3, 6, 6, 6]


def test_in_batches_one_input_a_pass_sees_single_rows():
    sizes = []
    out = in_batches(ALONE, lambda x: sizes.append(len(x)) or x + 1, rows(4))
    assert sizes == [1, 1, 1, 1] and np.array_equal(np.stack(out), rows(4) + 1)
    with pytest.raises(ValueError):
        in_batches("free batches", lambda x: x, rows(2))


def test_a_row_wise_model_passes_the_probe_and_one_that_mixes_batch_mates_fails():
    weights = np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32)
    data = rows(2 * BATCH_SIZE) / 100
    assert independent_of_batch_mates(lambda x: np.tanh(x @ weights), data)
    # batch normalisation with the batch's own statistics: every row depends on the others
    assert not independent_of_batch_mates(lambda x: x - x.mean(axis=0), data)
    # texts padded to the longest batch-mate (a tokenizer's padding "longest"): a short text alone differs
    texts = ["a" * (1 + k % 9) for k in range(2 * BATCH_SIZE)]
    assert not independent_of_batch_mates(lambda t: np.array([[len(x), max(map(len, t))] for x in t], np.float32),
                                          texts)
    assert independent_of_batch_mates(lambda t: np.array([[len(x)] for x in t], np.float32), texts)
    # a row that depends on its position in the batch alone (not on the other rows) fails too
    assert not independent_of_batch_mates(lambda x: x + np.arange(len(x), dtype=np.float32)[:, None], data)


def test_mode_of_an_identity_without_a_verdict_is_one_input_a_pass():
    assert mode_of({"forward_passes": {"image": FIXED}}, "image") == FIXED
    assert mode_of({"forward_passes": {"image": FIXED}}, "text") == ALONE
    assert mode_of({"forward_passes": None}, "pair") == ALONE


class _Encoder:
    """A scorer-shaped object around a torch function of the stacked pixels."""

    text_preprocessing = None

    def __init__(self, function):
        self.function = function

    @staticmethod
    def image_transform(image):
        import torch

        return torch.from_numpy(np.asarray(image.resize((8, 8)), dtype=np.float32).copy()).permute(2, 0, 1) / 255

    def encode_pixels(self, pixels):
        return self.function(pixels.flatten(1)).numpy()


def test_a_scorer_whose_output_depends_on_its_batch_mates_falls_back_to_one_input_a_pass():
    import torch

    row_wise = _Encoder(lambda x: torch.nn.functional.normalize(x[:, :16], dim=-1))
    assert probe(row_wise, "embedding") == {"image": FIXED}
    batch_norm = _Encoder(lambda x: torch.nn.functional.batch_norm(x[:, :16], None, None, training=True))
    assert probe(batch_norm, "embedding") == {"image": ALONE}
    assert probe(row_wise, "judge") is None


def test_a_loaded_scorer_records_its_probe_verdict_and_the_cache_key_follows_it(tiny_scorers, tmp_path):
    import hashlib

    from PIL import Image

    from cultureboard.evaluators.engine.cache import Cache
    from cultureboard.evaluators.engine.embedding import embed_images, image_key
    from cultureboard.evaluators.engine.images import ImageSource
    from cultureboard.evaluators.engine.scorers import Scorers

    pool = Scorers(tiny_scorers, "cpu", "float32", state=tmp_path / "state")
    identity = pool.identity("siglip2-so400m")
    assert identity["forward_passes"]["image"] == FIXED  # a ViT on the CPU: rows never see their batch-mates
    assert set(identity["forward_passes"]) == {"image", "text"}
    assert image_key(identity)["computed"] == FIXED
    # remembered with the identity: a new pool on the same state reads it without loading the model
    again = Scorers(tiny_scorers, "cpu", "float32", state=tmp_path / "state")
    assert again.identity("siglip2-so400m") == identity and not again._models
    # a vector computed beside other images is the one computed beside none (both in a padded batch of 32)
    sources = []
    for k in range(40):
        data = np.random.default_rng(k).integers(0, 256, (32, 32, 3), dtype=np.uint8)
        path = tmp_path / f"{k}.png"
        Image.fromarray(data).save(path)
        sources.append(ImageSource(hashlib.sha256(path.read_bytes()).hexdigest(), path))
    model = lambda: pool.model("siglip2-so400m")  # noqa: E731
    together = embed_images(Cache(tmp_path / "all"), identity, model, sources[::-1])
    alone = embed_images(Cache(tmp_path / "one"), identity, model, sources[:1])
    assert together[sources[0].sha256].tobytes() == alone[sources[0].sha256].tobytes()
