"""Executors: score many submissions as units of work, in this process or on a Ray cluster, merged to the same bytes.

One **unit** is (submission, shard i of n): :func:`run_unit` runs ``evaluate(..., shard=(i, n))``, a pure function of
its inputs that writes ``OUT/<id>.shards/<i>-of-<n>`` atomically (a killed unit leaves no folder, only the hidden
temporary one that the next write of that shard clears). ``shard.json`` is its done-marker: it records the digest of
the unit's inputs (``inputs_sha256``: submission, dataset revision, scorer config, device kind, dtype, seed,
bootstrap size, options, code version) and of its rows (``rows_sha256``); a unit whose shard holds both, matching,
is skipped. Once every unit of a submission is done, its shards are joined by :func:`.evaluate.merge_shards` into
``OUT/<id>``: exactly the bytes of a plain ``evaluate`` of that submission, whichever executor ran the units.

* ``local``: the units one after another in this process, models kept loaded across them;
* ``ray``: the units on a Ray cluster (``address``: ``HOST:PORT`` of a running cluster's head, ``auto``, or a
  ``ray://`` client address; none: a local Ray instance started and stopped with the command). Each worker is an
  actor that keeps its models loaded across units, one GPU each where the cluster has GPUs (one CPU each
  otherwise). A unit whose worker dies (killed, out of memory) or that raises is retried on a fresh worker, up to
  :data:`ATTEMPTS` times in all; a unit that fails that often, or with a :class:`CultureboardError` (bad input,
  which a retry cannot fix), ends the command with one line, the submissions' results unwritten (units already
  done stay, complete, and the rerun skips them). ``OUT`` and the cache must be one shared folder for every
  node.
"""

from __future__ import annotations

import socket
from collections import Counter, deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from cultureboard import progress
from cultureboard.errors import CultureboardError

EXECUTORS = ("local", "ray")
#: How many times a unit is tried before the command gives up on it.
ATTEMPTS = 3
#: How long joining a cluster may wait for its head to answer.
CONNECT_SECONDS = 10.0


@dataclass(frozen=True)
class Unit:
    """Part ``shard[0]`` of ``shard[1]`` of one submission folder."""

    submission: str
    shard: tuple[int, int]

    @property
    def label(self) -> str:
        return f"{self.submission} shard {self.shard[0]}/{self.shard[1]}"


def run_unit(unit: Unit, settings: Mapping[str, Any], models: dict | None = None) -> str:
    """Score ``unit`` with ``settings`` (the keyword arguments of :func:`.evaluate.evaluate` but ``shard``) unless its
    shard is already done with the same inputs; ``"skipped"`` or ``"scored"``. ``models`` keeps loaded models for
    the next unit."""
    from cultureboard.device import choose_device, choose_dtype

    from ..submission.format import SUBMISSION_YAML, read_spec, submission_id
    from .evaluate import evaluate, finished_shard, inputs_sha256
    from .scorers import load_registry

    submission, dataset = Path(unit.submission), Path(settings["dataset"])
    device = choose_device(settings.get("device"), defer=True)
    dtype = choose_dtype(device, settings.get("dtype"))
    try:
        folder = Path(settings["out"]) / f"{submission_id(read_spec(submission / SUBMISSION_YAML))}.shards"
        inputs = inputs_sha256(submission, dataset, load_registry(settings.get("scorers")), device, dtype,
                               settings.get("seed", 0), settings.get("n_boot", 1000), settings.get("options"),
                               settings.get("option_overrides", ()), unit.shard,
                               settings.get("read_text", True))
    except (OSError, KeyError, TypeError):  # an unreadable submission: evaluate reports it, in one line
        folder, inputs = None, None
    if folder is not None and finished_shard(folder / f"{unit.shard[0]}-of-{unit.shard[1]}", inputs):
        return "skipped"
    evaluate(submission, dataset, settings["out"], shard=unit.shard, models=models,
             **{k: v for k, v in settings.items() if k not in ("dataset", "out")})
    return "scored"


def evaluate_all(submissions: list[str | Path], dataset: str | Path, out: str | Path, *, executor: str = "local",
                 address: str | None = None, shards: int = 1, runner: Callable = run_unit,
                 **settings: Any) -> list[Path]:
    """Score every submission in ``shards`` units each with ``executor`` and merge each one's units into
    ``out/<id>``; returns those folders, in the order of ``submissions``. ``settings`` are the keyword arguments of
    :func:`.evaluate.evaluate` (scorers, device, dtype, cache, seed, n_boot, options, option_overrides, read_text).
    ``runner(unit, settings, models)`` scores one unit (:func:`run_unit`)."""
    from ..submission.format import SUBMISSION_YAML, read_spec, submission_id
    from .evaluate import merge_shards

    if executor not in EXECUTORS:
        raise CultureboardError(f"--executor {executor}", "is not an executor", f"choose one of {', '.join(EXECUTORS)}",
                                exit_code=2)
    if shards < 1:
        raise CultureboardError(f"--shards {shards}", "must be at least 1", "e.g. --shards 8", exit_code=2)
    ids = {}
    for submission in submissions:
        sid = submission_id(read_spec(Path(submission) / SUBMISSION_YAML))
        if ids.setdefault(sid, submission) != submission:
            raise CultureboardError(submission, f"has the id {sid} of {ids[sid]} too",
                                    "score submissions of one id in separate commands")
    units = [Unit(str(s), (i, shards)) for s in submissions for i in range(shards)]
    settings = {**settings, "dataset": str(dataset), "out": str(out)}
    if executor == "local":
        models: dict = {}
        for unit in units:
            progress.say(f"unit {unit.label}: {runner(unit, settings, models)}")
    else:
        run_on_ray(units, settings, address, runner)
    return [merge_shards(out, sid, dataset) for sid in ids]


# ------------------------------------------------------------------------------------------------------- ray

class _Worker:
    """A Ray actor: scores units one at a time, keeping the models it loaded for the next."""

    def __init__(self, runner: Callable, settings: Mapping[str, Any]):
        self.runner, self.settings, self.models = runner, dict(settings), {}

    def run(self, unit: Unit) -> str:
        return self.runner(unit, self.settings, self.models)


def run_on_ray(units: list[Unit], settings: Mapping[str, Any], address: str | None, runner: Callable) -> None:
    """Run ``units`` on Ray actors (see the module doc): on the Ray instance this process already joined, else the
    cluster at ``address``, else a local instance started here and stopped at the end."""
    try:
        import ray
    except ImportError:
        raise CultureboardError("--executor ray", "needs Ray, which is not installed",
                                "pip install 'cultureboard[ray]'", exit_code=2) from None
    if address is not None:
        _check_address(address)
    started = not ray.is_initialized()
    if started:
        _connect(ray, address)
    try:
        _schedule(ray, units, settings, runner)
    finally:
        if started:
            ray.shutdown()


def _check_address(address: str) -> None:
    """A ``HOST:PORT`` address must answer within :data:`CONNECT_SECONDS` (Ray itself would wait for it forever)."""
    if address != "auto" and not address.startswith("ray://"):
        host, _, port = address.rpartition(":")
        try:
            socket.create_connection((host or "127.0.0.1", int(port)), timeout=CONNECT_SECONDS).close()
        except (OSError, ValueError) as exc:
            raise CultureboardError(f"--address {address}", f"no Ray head answers there ({type(exc).__name__})",
                                    "start one with `ray start --head --port PORT` and pass HEAD_HOST:PORT, or leave "
                                    "--address out to run a local Ray instance", exit_code=2) from None


def _connect(ray, address: str | None) -> None:
    """Join the cluster at ``address``, or start a local instance without a dashboard."""
    if address is None:
        ray.init(include_dashboard=False, log_to_driver=False, configure_logging=False)
        return
    try:
        ray.init(address=address, log_to_driver=False, configure_logging=False)
    except Exception as exc:  # noqa: BLE001  (Ray raises several types for a cluster it cannot join)
        first = (str(exc).strip().splitlines() or [""])[0]
        raise CultureboardError(f"--address {address}", f"cannot join the Ray cluster ({type(exc).__name__}: "
                                f"{first})", "check the address and that this Python and Ray match the cluster's",
                                exit_code=2) from None


def _schedule(ray, units: list[Unit], settings: Mapping[str, Any], runner: Callable) -> None:
    resources = ray.cluster_resources()
    gpus = int(resources.get("GPU", 0))
    workers = min(len(units), gpus or max(1, int(resources.get("CPU", 1))))
    actor = ray.remote(**({"num_gpus": 1} if gpus else {"num_cpus": 1}))(_Worker)
    idle = [actor.remote(runner, settings) for _ in range(workers)]
    pending, running, attempts = deque(units), {}, Counter()
    try:
        while pending or running:
            while pending and idle:
                unit, worker = pending.popleft(), idle.pop()
                running[worker.run.remote(unit)] = (unit, worker)
            (ref,), _ = ray.wait(list(running), num_returns=1)
            unit, worker = running.pop(ref)
            try:
                progress.say(f"unit {unit.label}: {ray.get(ref)}")
                idle.append(worker)
                continue
            except ray.exceptions.RayTaskError as exc:  # the unit raised: bad input is final, anything else retried
                if isinstance(exc.cause, CultureboardError):
                    raise exc.cause from None
                why = f"{type(exc.cause).__name__}: {(str(exc.cause).strip().splitlines() or [''])[0]}"
            except ray.exceptions.RayActorError:  # its worker died (killed, out of memory): a fresh one takes over
                why = "its worker died"
                ray.kill(worker)
                worker = actor.remote(runner, settings)
            idle.append(worker)
            attempts[unit] += 1
            if attempts[unit] >= ATTEMPTS:
                raise CultureboardError(f"unit {unit.label}", f"failed {ATTEMPTS} times (last: {why})",
                                        "fix the cause and rerun the same command: finished units are skipped")
            progress.say(f"unit {unit.label}: retried ({why})")
            pending.append(unit)
    finally:
        for worker in idle + [w for _, w in running.values()]:
            ray.kill(worker)
