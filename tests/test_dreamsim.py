"""The DreamSim pairwise backend: its tiny stand-in loads through the dreamsim package's own entry point,
agrees with the package, is a distance (d(x, x) = 0, symmetric), is cached, and fails in one line."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
import torch
import torch.hub
from PIL import Image

from cultureboard.errors import CultureboardError
from cultureboard.evaluators.engine import dreamsim as backend
from cultureboard.evaluators.engine.cache import Cache
from cultureboard.evaluators.engine.images import ImageSource
from cultureboard.evaluators.engine.pairwise import compare_pairs
from cultureboard.evaluators.engine.scorers import identity_of, load_scorer

@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return backend.save_tiny_dreamsim(tmp_path_factory.mktemp("dreamsim") / "dreamsim")


@pytest.fixture(scope="module")
def config(folder):
    return {"dreamsim": {"backend": "dreamsim", "path": str(folder), "dreamsim_type": "dino_vitb16"}}


@pytest.fixture(scope="module")
def scorer(config):
    return load_scorer("dreamsim", config=config, device="cpu")


@pytest.fixture(scope="module")
def images(tmp_path_factory) -> list[ImageSource]:
    out = []
    folder = tmp_path_factory.mktemp("images")
    rng = np.random.default_rng(7)
    for i, size in enumerate([(64, 48), (40, 72), (64, 64)]):
        path = folder / f"{i}.png"
        Image.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)).save(path)
        out.append(ImageSource(hashlib.sha256(path.read_bytes()).hexdigest(), path, label=path.name))
    return out


def batch(scorer, sources):
    return torch.stack([scorer.image_transform(s.open()) for s in sources])


@pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")  # the package's own calls
def test_loads_through_the_package_and_agrees_with_it(scorer, folder, images):
    from dreamsim import dreamsim

    assert (scorer.kind, scorer.backend) == ("pairwise", "dreamsim")
    assert scorer.revision.startswith("local:") and "type=dino_vitb16" in scorer.preprocessing
    model, preprocess = dreamsim(pretrained=True, device="cpu", cache_dir=str(folder), dreamsim_type="dino_vitb16")
    a = torch.cat([preprocess(images[0].open()), preprocess(images[1].open())])
    b = torch.cat([preprocess(images[2].open()), preprocess(images[0].open())])
    torch.testing.assert_close(batch(scorer, images[:2]), a)  # the same preprocessing as the package's
    with torch.inference_mode():
        expected = model(a, b).numpy()
    np.testing.assert_allclose(scorer.compare(a, b), expected, rtol=1e-5, atol=1e-6)


def test_a_distance_zero_on_itself_symmetric_and_batch_independent(scorer, images):
    x, y = batch(scorer, images[:2]), batch(scorer, images[1:])
    d_xy, d_yx = scorer.compare(x, y), scorer.compare(y, x)
    np.testing.assert_allclose(d_xy, d_yx, atol=1e-6)
    assert (d_xy > 1e-4).all(), "distinct random images are apart"
    np.testing.assert_allclose(scorer.compare(x, x), 0.0, atol=1e-6)
    one = scorer.compare(x[:1], y[:1])
    np.testing.assert_allclose(one, d_xy[:1], rtol=1e-5, atol=1e-6)
    assert ((d_xy >= 0) & (d_xy <= 2)).all()


def test_reduced_precision_runs_under_autocast_and_stays_close(config, scorer, images):
    x, y = batch(scorer, images[:2]), batch(scorer, images[1:])
    half = load_scorer("dreamsim", config=config, device="cpu", dtype="bfloat16")
    assert half.dtype == "bfloat16" and next(half.model.parameters()).dtype == torch.float32
    np.testing.assert_allclose(half.compare(x, y), scorer.compare(x, y), atol=0.03)
    np.testing.assert_allclose(half.compare(x, x), 0.0, atol=1e-3)


def test_loading_leaves_torch_hub_where_it_was(config, tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch-home"))
    before = torch.hub.get_dir()
    load_scorer("dreamsim", config=config, device="cpu")
    assert torch.hub.get_dir() == before


def test_pairs_are_cached_by_their_images(scorer, images, tmp_path):
    pairs = [(images[0], images[1]), (images[1], images[0]), (images[2], images[2])]
    d = compare_pairs(Cache(tmp_path), identity_of(scorer), lambda: scorer, pairs)
    assert d[0] == pytest.approx(d[1], abs=1e-6) and d[2] == pytest.approx(0.0, abs=1e-6) and d[0] > 0
    again = compare_pairs(Cache(tmp_path), identity_of(scorer), lambda: pytest.fail("model loaded"), pairs)
    np.testing.assert_array_equal(again, d)


def test_known_types_and_required_files_are_the_packages(tmp_path, monkeypatch):
    from dreamsim.config import dreamsim_weights
    from dreamsim.model import download_weights

    assert set(backend.DREAMSIM_TYPES) == {k for k in dreamsim_weights if not k.endswith("_patch")}

    def no_download(*args, **kwargs):
        raise AssertionError("the package wanted to download: REQUIRED lacks one of its files")

    monkeypatch.setattr(torch.hub, "download_url_to_file", no_download)
    for kind, files in backend.REQUIRED.items():
        folder = tmp_path / kind
        folder.mkdir()
        for name in files:
            (folder / name).mkdir() if name.endswith("_lora") else (folder / name).write_bytes(b"")
        download_weights(str(folder), kind)  # finds every file it requires: no download


def test_an_incomplete_folder_or_an_offline_download_is_one_line(folder, tmp_path, monkeypatch):
    with pytest.raises(CultureboardError, match="lacks .*ensemble_lora of DreamSim ensemble"):
        load_scorer("dreamsim", config={"dreamsim": {"backend": "dreamsim", "path": str(folder)}}, device="cpu")

    def offline(cache_dir, kind):
        raise OSError("network unreachable")

    import dreamsim.model

    monkeypatch.setattr(dreamsim.model, "download_weights", offline)
    entry = {"dreamsim": {"backend": "dreamsim", "cache_dir": str(tmp_path / "empty")}}
    with pytest.raises(CultureboardError, match="cannot download the DreamSim ensemble checkpoint"):
        load_scorer("dreamsim", config=entry, device="cpu")
    with pytest.raises(CultureboardError, match="dreamsim_type must be one of"):
        load_scorer("dreamsim", config={"dreamsim": {"backend": "dreamsim", "dreamsim_type": "vgg"}}, device="cpu")


def test_the_standin_is_reproducible(folder, tmp_path):
    from cultureboard.provenance import folder_sha256

    again = backend.save_tiny_dreamsim(tmp_path / "again")
    assert folder_sha256(again) == folder_sha256(folder)


@pytest.mark.slow  # a fresh process builds every tiny scorer
def test_a_fresh_process_writes_the_standin_with_every_tiny_scorer(tmp_path):
    """save_tiny_scorers alone (as the demo calls it first thing) must know the DreamSim and CultDiff-S stand-ins."""
    import os
    import subprocess
    import sys

    code = ("import sys; from cultureboard.evaluators.engine.tiny_scorers import save_tiny_scorers; "
            "print(sorted(save_tiny_scorers(sys.argv[1])))")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert "'dreamsim'" in done.stdout and "'cultdiff.learned'" in done.stdout
    assert "dreamsim: {path: dreamsim, dreamsim_type: dino_vitb16}" in (tmp_path / "scorers-tiny.yaml").read_text()
