"""Images decoded in a thread while a model loads (evaluators/engine/images.py: Opened) give exactly the batches
that decoding them afterwards gives, and a broken image is the same error either way."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from PIL import Image

from cultureboard.errors import CultureboardError
from cultureboard.evaluators.engine.images import ImageSource, Opened, decode_batches
from cultureboard.evaluators.engine.pairwise import SquareResize


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> list[ImageSource]:
    folder = tmp_path_factory.mktemp("overlap")
    rng = np.random.default_rng(1)
    out = []
    for k in range(45):
        path = folder / f"{k}.png"
        Image.fromarray(rng.integers(0, 256, (20 + k % 7, 30, 3), dtype=np.uint8)).save(path)
        out.append(ImageSource(f"sha{k}", path=path))
    return out


def batches(sources, opened=None, batch_size=4):
    return [(items, pixels) for items, pixels in decode_batches(sources, SquareResize(12), batch_size, 0, opened)]


@pytest.mark.parametrize("n", [3, 8, 13, 45])  # within the first batch, a whole number of batches, beyond them
def test_images_decoded_ahead_give_the_same_batches(sources, n):
    import torch

    plain = batches(sources[:n])
    ahead = batches(sources[:n], Opened(sources[:n], batch_size=4, batches=2))
    assert [items for items, _ in ahead] == [items for items, _ in plain]
    assert [len(items) for items, _ in plain] == [len(sources[:n][i:i + 4]) for i in range(0, n, 4)]
    assert all(torch.equal(a, b) for (_, a), (_, b) in zip(ahead, plain))


@pytest.mark.parametrize("broken", [2, 30])  # decoded ahead, and decoded afterwards
def test_a_broken_image_is_the_same_error_either_way(sources, tmp_path, broken):
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"not a png")
    items = [*sources[:broken], ImageSource("bad", path=bad, label="images/bad.png"), *sources[broken:40]]
    errors = []
    for opened in (None, Opened(items, batch_size=4, batches=2)):
        with pytest.raises(CultureboardError, match="images/bad.png: cannot read the image") as error:
            batches(items, opened)
        errors.append(str(error.value))
    assert errors[0] == errors[1]


def test_decoding_ahead_runs_in_another_thread_and_must_match_its_images(sources, monkeypatch):
    threads = []
    original = ImageSource.open
    monkeypatch.setattr(ImageSource, "open", lambda self: threads.append(threading.current_thread()) or original(self))
    opened = Opened(sources[:6], batch_size=4, batches=1)
    opened.images()
    assert len(threads) == 4 and threading.main_thread() not in threads
    assert sum(len(items) for items, _ in batches(sources[:6], opened)) == 6
    assert len(threads) == 6, "an image decoded ahead was decoded again"
    with pytest.raises(ValueError, match="other images or batches"):
        batches(sources[1:7], opened)
    with pytest.raises(ValueError, match="other images or batches"):
        batches(sources[:6], opened, batch_size=2)
