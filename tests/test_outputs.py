"""No output is ever lost: each kind replaced only by its own kind, replacement recoverable after a SIGKILL at
any point, dead writers' leftovers cleaned and hidden from readers, one writer at a time, unwritable or full
folders refused in one line before the work and without a torn output, and ordinary permissions."""

from __future__ import annotations

import errno
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from tiny_dataset import write_tiny_dataset

from cultureboard.atomic import (
    KINDS,
    MARKER,
    MAX_OUTPUT_NAME,
    atomic_dir,
    atomic_write_bytes,
    atomic_write_text,
    check_replaceable,
    check_writable,
    claim_folder,
    output_folders,
)
from cultureboard.cli import main
from cultureboard.errors import CultureboardError


def make_output(target: Path, kind: str | None, content: str = "old", files: tuple[str, ...] = ("content.txt",)) -> Path:
    with atomic_dir(target, kind=kind) as tmp:
        for name in files:
            (tmp / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp / name).write_text(content)
    return target


def hidden_work(folder: Path) -> list[str]:
    """Work folders, temporary files and lock files left in ``folder``."""
    return sorted(n for n in os.listdir(folder) if n.startswith("."))


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


def start_child(code: str, *args) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})


def wait_for(path: Path, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 900  # a bound against hanging, not a speed requirement
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the child never got there"
        time.sleep(0.05)


def no_work(*_, **__):
    raise AssertionError("the work started before the output was checked")


# --- kinds


@pytest.fixture
def outputs(tmp_path):
    """A dataset, one submission's results and a site, as their writers leave them."""
    dataset = write_tiny_dataset(tmp_path / "dataset")
    result = make_output(tmp_path / "results" / "lab__model", "results", files=("summary.json", "scores.parquet"))
    site = make_output(tmp_path / "site", "site", files=("index.html", "static/site.css"))
    return {"dataset": dataset, "result": result, "site": site}


@pytest.mark.parametrize("case", ["site over dataset", "site over results", "build over site"])
def test_wrong_kind_refused_through_the_cli_before_any_work(case, outputs, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("cultureboard.site.render._load_results", no_work)
    monkeypatch.setattr("cultureboard.builder.artifact_space.extract", no_work)
    site_build = ["site", "build", "--results", tmp_path / "results", "--dataset", outputs["dataset"],
                  "--submissions", tmp_path / "submissions", "--out"]
    victim, argv, holds = {
        "site over dataset": (outputs["dataset"], site_build, "holds a dataset"),
        "site over results": (outputs["result"], site_build, "holds one submission's results"),
        "build over site": (outputs["site"], ["build", "--out"], "holds a leaderboard site"),
    }[case]
    before = {p: p.read_bytes() for p in victim.rglob("*") if p.is_file()}
    assert main([str(a) for a in [*argv, victim]]) == 1
    line = one_error_line(capsys)
    assert line.startswith(f"error: {victim}: {holds}") and "will not be replaced" in line and "(fix: " in line
    assert {p: p.read_bytes() for p in victim.rglob("*") if p.is_file()} == before


def test_each_kind_is_replaced_only_by_its_own_kind(tmp_path):
    for held in KINDS:
        target = make_output(tmp_path / held, held)
        for kind in KINDS:
            if kind == held:
                continue
            with pytest.raises(CultureboardError, match=re.escape(f"holds {KINDS[held].label}, not {KINDS[kind].label}")):
                check_replaceable(target, kind=kind)
            with pytest.raises(CultureboardError, match="will not be replaced"), atomic_dir(target, kind=kind) as tmp:
                (tmp / "content.txt").write_text("new")
            assert (target / "content.txt").read_text() == "old"
        make_output(target, held, "rerun")  # a rerun of the same kind replaces it
        assert (target / "content.txt").read_text() == "rerun"
        assert (target / MARKER).read_text().splitlines()[0] == f"cultureboard output: {held}"


def test_older_outputs_of_unknown_kind(tmp_path):
    """An output with the marker of older versions (no kind) is replaced only by a kind whose files it holds."""
    old_dataset = tmp_path / "dataset"
    (old_dataset / "data").mkdir(parents=True)
    (old_dataset / "build.json").write_text("{}")
    (old_dataset / MARKER).write_text("This folder was written by cultureboard and may be replaced by a rerun.\n")
    with pytest.raises(CultureboardError, match="holds what looks like a dataset .* not a leaderboard site"):
        check_replaceable(old_dataset, kind="site")
    check_replaceable(old_dataset, kind="dataset")
    make_output(old_dataset, "dataset", files=("build.json", "data/x"))
    assert (old_dataset / MARKER).read_text().startswith("cultureboard output: dataset")

    strange = tmp_path / "strange"
    strange.mkdir()
    (strange / MARKER).write_text("something else\n")
    (strange / "notes.txt").write_text("keep")
    for kind in KINDS:
        with pytest.raises(CultureboardError, match="holds a cultureboard output of unknown kind"):
            check_replaceable(strange, kind=kind)
    make_output(strange, None, "generic")  # a caller without kind= may replace an output without one...
    with pytest.raises(CultureboardError, match="holds a leaderboard site"):
        check_replaceable(make_output(tmp_path / "site", "site"), kind=None)  # ...but no output of a kind


def test_what_is_never_replaced(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "thesis.tex").write_text("years of work")
    with pytest.raises(CultureboardError, match="is not a cultureboard output"):
        check_replaceable(plain, kind="site")
    (tmp_path / "file").write_text("x")
    with pytest.raises(CultureboardError, match="is a file"):
        check_replaceable(tmp_path / "file", kind="site")
    (tmp_path / "link").symlink_to(make_output(tmp_path / "real-site", "site"))
    with pytest.raises(CultureboardError, match="is a symbolic link"):
        check_replaceable(tmp_path / "link", kind="site")
    with pytest.raises(CultureboardError, match=f"at most {MAX_OUTPUT_NAME}"):
        check_replaceable(tmp_path / ("x" * (MAX_OUTPUT_NAME + 1)), kind="site")
    (tmp_path / "empty").mkdir()
    make_output(tmp_path / "empty", "site")
    assert (tmp_path / "empty" / "content.txt").is_file()


def test_demo_folder_is_claimed(tmp_path):
    older = tmp_path / "older-demo"  # older demos left their four folders and no marker
    for name in ("dataset", "site"):
        (older / name).mkdir(parents=True)
    claim_folder(older, kind="demo")
    assert (older / MARKER).read_text().startswith("cultureboard output: demo")
    claim_folder(older, kind="demo")  # a rerun
    with pytest.raises(CultureboardError, match="holds a demo folder"):
        check_replaceable(older, kind="site")
    with pytest.raises(CultureboardError, match="holds a leaderboard site"):
        claim_folder(make_output(tmp_path / "site", "site"), kind="demo")


# --- crash safety


KILLER = """
    import os, signal, sys
    from pathlib import Path
    from cultureboard.atomic import atomic_dir

    target, stage = Path(sys.argv[1]), sys.argv[2]
    real, done = os.replace, []

    def replace(src, dst):  # the swap's two renames: die before, between or after them
        if stage == "before-renames":
            os.kill(os.getpid(), signal.SIGKILL)
        real(src, dst)
        done.append(dst)
        if stage == "between-renames" or (stage == "after-renames" and len(done) == 2):
            os.kill(os.getpid(), signal.SIGKILL)

    os.replace = replace
    with atomic_dir(target, kind="results") as tmp:
        (tmp / "content.txt").write_text("new")
        if stage == "writing":
            os.kill(os.getpid(), signal.SIGKILL)
"""


def killed_writer(target: Path, stage: str) -> None:
    proc = start_child(KILLER, target, stage)
    proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGKILL


@pytest.mark.parametrize("stage,survivor", [("writing", "old"), ("before-renames", "old"), ("between-renames", "new"),
                                            ("after-renames", "new")])
@pytest.mark.parametrize("who", ["reader", "next run"])
def test_sigkill_leaves_the_old_or_the_new_output(tmp_path, stage, survivor, who):
    target = make_output(tmp_path / "results" / "lab__model", "results")
    killed_writer(target, stage)
    if stage == "between-renames":  # the moment of the issue: no results/<id> at all
        assert not target.exists()
    assert hidden_work(target.parent)  # the dead writer's leftovers
    if who == "reader":
        assert output_folders(target.parent) == [target]
        assert (target / "content.txt").read_text() == survivor
    else:
        check_replaceable(target, kind="results")  # recovers before it checks
        assert (target / "content.txt").read_text() == survivor
        make_output(target, "results", "third")
        assert (target / "content.txt").read_text() == "third"
    assert hidden_work(target.parent) == []


def test_interrupted_swap_of_an_older_version_is_restored(tmp_path):
    """Older versions named the moved-away output ``.<name>.old-<pid>`` and had no recovery."""
    target = make_output(tmp_path / "results" / "lab__model", "results")
    os.rename(target, target.parent / ".lab__model.old-4242")
    (target.parent / ".lab__model.tmp-k2j4_x1z").mkdir()  # its mkdtemp work folder, unfinished
    assert output_folders(target.parent) == [target]
    assert (target / "content.txt").read_text() == "old"
    assert hidden_work(target.parent) == []


HOLDER = """
    import sys, time
    from pathlib import Path
    from cultureboard.atomic import atomic_dir

    target, ready, go = map(Path, sys.argv[1:4])
    with atomic_dir(target, kind="site") as tmp:
        (tmp / "index.html").write_text("first writer")
        ready.touch()
        while not go.exists():
            time.sleep(0.02)
"""


def test_live_writer_is_left_alone_and_a_second_writer_gets_one_line(tmp_path):
    target = make_output(tmp_path / "site", "site")
    ready, go = tmp_path / "ready", tmp_path / "go"
    writer = start_child(HOLDER, target, ready, go)
    try:
        wait_for(ready, writer)
        work = hidden_work(tmp_path)  # its lock file and work folder
        assert len(work) == 2 and work[0] == ".site.lock" and work[1].startswith(f".site.tmp-{writer.pid}-")
        assert output_folders(tmp_path) == [target]  # a reader skips the live writer's work folder...
        assert hidden_work(tmp_path) == work  # ...and leaves it alone
        message = f"{target}: is being written by process {writer.pid} (fix: wait for it or choose another --out)"
        with pytest.raises(CultureboardError) as caught, atomic_dir(target, kind="site"):
            raise AssertionError("two writers at once")
        assert caught.value.message == message
        second = subprocess.run([sys.executable, "-m", "cultureboard.cli", "site", "build", "--results",
                                 tmp_path / "results", "--dataset", tmp_path / "dataset", "--submissions",
                                 tmp_path / "submissions", "--out", target], capture_output=True, text=True,
                                timeout=120, check=False)
        assert second.returncode == 1 and second.stderr == f"error: {message}\n"
    finally:
        go.touch()
        _, err = writer.communicate(timeout=120)
    assert writer.returncode == 0, err
    assert (target / "index.html").read_text() == "first writer"  # one result: the first writer's, whole
    assert not (target / "content.txt").exists() and hidden_work(tmp_path) == []


def test_dead_writers_leftovers_are_cleaned(tmp_path):
    target = make_output(tmp_path / "results" / "lab__model", "results")
    killed_writer(target, "writing")
    first = hidden_work(target.parent)  # its lock file and work folder
    killed_writer(target, "writing")  # the next run cleans the first one's leftovers, then dies too
    second = hidden_work(target.parent)
    assert len(first) == len(second) == 2 and first[0] == second[0] == ".lab__model.lock" and first != second
    (target.parent / ".lab__model.old-99999999-abc123").mkdir()  # a pid that cannot be alive
    check_replaceable(target, kind="results")
    assert hidden_work(target.parent) == [] and (target / "content.txt").read_text() == "old"


def test_readers_skip_hidden_folders(tmp_path):
    results = tmp_path / "results"
    make_output(results / "lab__a", "results", files=("summary.json",))
    (results / "lab__a.shards").mkdir()  # not hidden: readers pick by content
    (results / ".lab__a.tmp-1-abc123").mkdir()  # a killed rerun of lab__a
    (results / ".lab__a.tmp-1-abc123" / "summary.json").write_text("{}")
    (results / ".cache").mkdir()  # anything else hidden is skipped, not touched
    assert output_folders(results) == [results / "lab__a", results / "lab__a.shards"]
    assert sorted(n for n in os.listdir(results) if n.startswith(".")) == [".cache"]

    only_hidden = tmp_path / "only-hidden"  # site build: the hidden results folder is not a submission id
    (only_hidden / ".lab__b.tmp-7-abc123").mkdir(parents=True)
    (only_hidden / ".lab__b.tmp-7-abc123" / "summary.json").write_text("{}")
    from cultureboard.site.render import build_site

    with pytest.raises(CultureboardError, match="holds no results"):
        build_site(only_hidden, tmp_path / "dataset", tmp_path / "submissions", tmp_path / "site")


# --- unwritable and full


@pytest.fixture
def read_only(tmp_path):
    """A read-only folder: by permissions for a normal user; root ignores those, so a read-only tmpfs."""
    folder = tmp_path / "read-only"
    folder.mkdir()
    if os.geteuid() != 0:
        folder.chmod(0o555)
        yield folder
        folder.chmod(0o755)
        return
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", folder], capture_output=True,
                      check=False).returncode:
        pytest.skip("running as root without permission to mount a read-only tmpfs")
    yield folder
    subprocess.run(["umount", folder], check=True)


@pytest.fixture
def small_disk(tmp_path):
    """A 256 KiB tmpfs (needs permission to mount; the ENOSPC tests below also run without one)."""
    folder = tmp_path / "small-disk"
    folder.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", folder], capture_output=True,
                      check=False).returncode:
        pytest.skip("no permission to mount a tmpfs")
    yield folder
    subprocess.run(["umount", folder], check=True)


def test_read_only_out_refused_before_the_work(read_only, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("cultureboard.site.render._load_results", no_work)
    monkeypatch.setattr("cultureboard.builder.artifact_space.extract", no_work)
    assert main(["build", "--out", str(read_only / "dataset")]) == 1
    assert one_error_line(capsys).startswith(f"error: {read_only / 'dataset'}: cannot be written: {read_only}: ")
    assert main(["site", "build", "--results", str(tmp_path), "--dataset", str(tmp_path), "--submissions",
                 str(tmp_path), "--out", str(read_only / "deeper" / "site")]) == 1
    assert f"cannot be written: {read_only}: " in one_error_line(capsys)
    with pytest.raises(CultureboardError, match=rf"^--cache {read_only}/cache: cannot be written: {read_only}: "):
        check_writable(read_only / "cache", f"--cache {read_only / 'cache'}")
    (tmp_path / "file").write_text("x")
    with pytest.raises(CultureboardError, match="is not a folder"):
        check_writable(tmp_path / "file" / "cache", "--cache")
    check_writable(tmp_path / "new" / "cache", "--cache")  # absent folders are created later
    assert sorted(os.listdir(tmp_path)) == ["file", "read-only"]  # the probe files are gone


def test_full_disk_during_the_work_gives_one_line_and_keeps_the_old_output(tmp_path, monkeypatch):
    dataset = write_tiny_dataset(tmp_path / "dataset")
    before = {p: p.read_bytes() for p in dataset.rglob("*") if p.is_file()}

    def full(*_, **__):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr("cultureboard.builder.dataset.pq.write_table", full)
    with pytest.raises(CultureboardError) as caught:
        write_tiny_dataset(dataset)
    assert caught.value.message == (f"{dataset}: could not be written: No space left on device (nothing was left "
                                    "half-written) (fix: free space on that disk, or choose another --out)")
    assert {p: p.read_bytes() for p in dataset.rglob("*") if p.is_file()} == before
    assert hidden_work(tmp_path) == []

    monkeypatch.setattr(os, "fdopen", lambda fd, mode: _Full(fd))  # atomic_write_bytes writes through it
    atomic_file = tmp_path / "notes.txt"
    atomic_file.write_text("old")
    with pytest.raises(CultureboardError, match="notes.txt: could not be written: No space left on device"):
        atomic_write_text(atomic_file, "new")
    assert atomic_file.read_text() == "old" and hidden_work(tmp_path) == []


class _Full:
    """A file object whose writes fail as on a full disk."""

    def __init__(self, fd):
        os.close(fd)

    def __enter__(self):
        return self

    def __exit__(self, *_):
        return False

    def write(self, _):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_full_tmpfs(small_disk):
    kept = make_output(small_disk / "site", "site", "small")
    with pytest.raises(CultureboardError, match="could not be written: No space left on device"), \
            atomic_dir(kept, kind="site") as tmp:
        (tmp / "big.bin").write_bytes(bytes(1 << 20))
    assert (kept / "content.txt").read_text() == "small" and not (kept / "big.bin").exists()
    with pytest.raises(CultureboardError, match="big.bin: could not be written: No space left on device"):
        atomic_write_bytes(small_disk / "big.bin", bytes(1 << 20))
    assert hidden_work(small_disk) == [] and os.listdir(small_disk) == ["site"]
    with open(small_disk / "filler", "wb", buffering=0) as fh, pytest.raises(OSError):  # fill it to the last block
        while True:
            fh.write(bytes(4096))
    with pytest.raises(CultureboardError, match=f"^--out {small_disk}/x: cannot be written: .*No space left"):
        check_writable(small_disk / "x", f"--out {small_disk / 'x'}")


# --- permissions


@pytest.mark.parametrize("umask,folder_mode,file_mode", [(0o022, 0o755, 0o644), (0o077, 0o700, 0o600)])
def test_outputs_follow_the_umask(tmp_path, umask, folder_mode, file_mode):
    from cultureboard.evaluators.submission.format import write_submission

    previous = os.umask(umask)
    try:
        dataset = write_tiny_dataset(tmp_path / "dataset")
        write_submission(tmp_path / "submission", {"organization": "lab"}, [])
        atomic_write_bytes(tmp_path / "cache" / "shard.npz", b"x")
    finally:
        os.umask(previous)
    folders = [dataset, *(p for p in dataset.rglob("*") if p.is_dir())]
    files = [p for p in dataset.rglob("*") if p.is_file()]
    files += [*(tmp_path / "submission").iterdir(), tmp_path / "cache" / "shard.npz"]
    assert len(files) > 5
    assert {oct(p.stat().st_mode & 0o777) for p in folders} == {oct(folder_mode)}
    assert {oct(p.stat().st_mode & 0o777) for p in files} == {oct(file_mode)}


FORKING_WRITER = """
import os, sys, time
from pathlib import Path
from cultureboard.atomic import output_lock

target = Path(sys.argv[1])
with output_lock(target):
    if os.fork() == 0:  # a worker process (a DataLoader's) that outlives its parent for a while
        os.close(1), os.close(2)
        time.sleep(20)
        os._exit(0)
    print("locked", flush=True)
    os.kill(os.getpid(), 9)
"""


def test_a_killed_writers_forked_workers_do_not_keep_the_lock(tmp_path):
    target = tmp_path / "results" / "lab__model"
    target.parent.mkdir()
    script = tmp_path / "writer.py"
    script.write_text(FORKING_WRITER)
    out = subprocess.run([sys.executable, str(script), str(target)], capture_output=True, text=True, timeout=60)
    assert "locked" in out.stdout
    from cultureboard.atomic import output_lock

    with output_lock(target):  # the worker still lives, the lock is free
        pass
