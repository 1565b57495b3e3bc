"""The ``cultureboard`` command line: a thin shell over the public Python functions.

Grammar: every command is a verb, then what it acts on. A verb that acts on several kinds of things takes
the thing as a subcommand (``build dataset | site``, ``import cube-1k | cure | ratings``, ``publish dataset |
media | results``, ``train cultdiff-s``); a verb with one object is joined to it (``extract-artifacts``,
``fetch-references``, ``make-control``, ``list-metrics``, ``merge-shards``, ``compare-results``,
``convert-dump``); ``export-prompts``, ``generate``, ``package``, ``validate``, ``evaluate`` and ``demo`` act on submissions.
The earlier names keep working, hidden from the help (:data:`ALIASES`), and ``build`` alone is ``build
dataset``. An option that several commands share is defined once below (``--dataset``, ``--prompt-set``,
``--device``, ``--dtype``, ``--scorers``, ``--json``). ``--json`` prints one JSON object on stdout for a
machine to read; messages then go to stderr.

Bad input is reported as one line, ``error: SOURCE: PROBLEM (fix: FIX)``, with a non-zero exit code
(1 for bad input, 2 for a usage error) and no traceback.
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import click

from . import __version__
from .demo import DEMO_COUNTRIES
from .errors import CultureboardError, os_error_line
from .evaluators.submission.format import CONTROL_KINDS
from .hub import DOWNLOAD_COMMAND, OFFICIAL_DATASET

#: Earlier command names -> the command they are now (still accepted, not listed in the help).
ALIASES = {"artifacts": "extract-artifacts", "references": "fetch-references", "control": "make-control",
           "metrics": "list-metrics", "dump-to-rdf": "convert-dump", "site build": "build site",
           "ratings import": "import ratings"}


def _csv(value: str | None) -> list[str] | None:
    """The names of a comma-separated option; [] for one that names nothing (the builder rejects it)."""
    return None if value is None else [v.strip() for v in value.split(",") if v.strip()]


def _seed(value: int) -> int:
    """``--seed``, refused in one line unless it is 0 to 2**63 - 1 (what every random generator takes)."""
    if not 0 <= value < 2**63:
        raise CultureboardError(f"--seed {value}", "is out of range", "give a seed from 0 to 2**63 - 1", exit_code=2)
    return value


def _plain(value):
    """JSON for what the Python functions return besides JSON values: paths, numpy scalars, sets."""
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, (set, frozenset, tuple)):
        return sorted(value) if isinstance(value, (set, frozenset)) else list(value)
    return str(value)


def _emit(as_json: bool, data: dict, text: str) -> None:
    """``data`` as one JSON object (``--json``), or ``text`` for a person."""
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=_plain) if as_json else text)


# ------------------------------------------------------------------------------------ shared options

def dataset_option(required: bool = True):
    return click.option("--dataset", required=required, type=click.Path(file_okay=False),
                        help="Dataset folder (written by `cultureboard build dataset` or `import`, or downloaded "
                             "from the Hub): its prompt sets, artifacts and references. Submissions use the official "
                             f"dataset {OFFICIAL_DATASET}, downloaded at one revision (a tag or commit): "
                             f"{DOWNLOAD_COMMAND}.")


def prompt_set_option(required: bool = True, default_note: str = ""):
    return click.option("--prompt-set", required=required,
                        help="Prompt set, e.g. cube-awareness (`cultureboard list-metrics` lists them)" + default_note + ".")


device_option = click.option("--device", help="cuda, mps or cpu (default: the best available).")
dtype_option = click.option("--dtype", help="float16 (fp16), bfloat16 (bf16) or float32 (fp32) (default: float16 "
                                            "on cuda, float32 otherwise).")
json_option = click.option("--json", "as_json", is_flag=True,
                           help="Print one JSON object on stdout, for a machine to read (messages go to stderr).")


def scorers_option(default: str):
    return click.option("--scorers", default=default, show_default=True,
                        help="tiny: random-weight stand-ins of every scorer, made once in $CULTUREBOARD_CACHE/standins "
                             "(default ~/.cache/cultureboard): every step runs on a CPU in seconds, no score means "
                             "anything; default: the registry's real checkpoints; or a scorer config FILE (YAML) "
                             "pointing scorers at local folders or adding new ones.")


class DefaultGroup(click.Group):
    """A group that runs its ``default`` subcommand when none is named: ``build --out DIR`` is ``build dataset
    --out DIR``."""

    def __init__(self, *args, default: str, **kwargs):
        super().__init__(*args, **kwargs)
        self.default = default

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ctx.help_option_names:
            args = [self.default, *args]
        return super().parse_args(ctx, args)


def alias(group: click.Group, command: click.Command, name: str) -> None:
    """Keep the earlier name ``name`` of ``command`` working in ``group``, hidden from the help."""
    earlier = copy.copy(command)
    earlier.hidden = True
    group.add_command(earlier, name)


@click.group(context_settings={"help_option_names": ["-h", "--help"]},
             help="Benchmarks and a leaderboard for the cultural competence of text-to-image models.\n\n"
                  "Start with `cultureboard demo`: every step, offline, in about a minute.\n\n"
                  f"Submissions (generate, package, validate) pin the official Hub dataset {OFFICIAL_DATASET} at a "
                  f"commit: download it at the revision you pin (a tag such as v1.0, or a commit) with `{DOWNLOAD_COMMAND}` "
                  "and pass --dataset dataset; generate and package record the repository and commit. "
                  "See submissions/README.md.",
             epilog="Earlier names still accepted: " + "; ".join(f"{old} = {new}" for old, new in ALIASES.items())
                    + "; `build --out DIR` = `build dataset --out DIR`.")
@click.version_option(__version__, prog_name="cultureboard")
def cli() -> None:
    """The cultureboard command line (its help text is the ``help`` above: it names the official dataset)."""


# ------------------------------------------------------------------------------------ build

@cli.command(name="extract-artifacts")
@click.option("--dump", type=click.Path(dir_okay=False), help="A Wikidata JSON dump (.json, .json.gz, .json.bz2).")
@click.option("--sparql", metavar="URL", help="A SPARQL 1.1 endpoint with Wikidata's RDF vocabulary.")
@click.option("--concepts", required=True, help="Comma-separated concepts, e.g. cuisine,landmarks,art.")
@click.option("--countries", required=True, help="Comma-separated ISO 3166-1 alpha-2 codes, e.g. IT,JP.")
@click.option("--hops", default=4, show_default=True, help="Maximum hops from the concept roots (CUBE uses 4).")
@click.option("--concepts-file", type=click.Path(dir_okay=False), help="YAML file of concept roots (default: the packaged CUBE Table 8 roots).")
@click.option("--max-malformed", default=0.01, show_default=True, help="Largest fraction of malformed dump lines tolerated.")
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Output folder for artifacts.parquet and report.json.")
def extract_artifacts(dump, sparql, concepts, countries, hops, concepts_file, max_malformed, out):
    """Extract cultural artifacts from a knowledge base (CUBE Algorithm 1)."""
    from cultureboard.builder.artifact_space import artifacts as run

    report = run(out=out, dump=dump, sparql=sparql, concepts=_csv(concepts), countries=_csv(countries), hops=hops,
                 concepts_file=concepts_file, max_malformed=max_malformed)
    click.echo(f"{report['artifacts']} artifacts written to {Path(out) / 'artifacts.parquet'}")
    if "dump" in report and report["dump"]["malformed"]:
        click.echo(f"skipped {report['dump']['malformed']} malformed dump lines (see report.json)")


@cli.group(cls=DefaultGroup, default="dataset")
def build() -> None:
    """Build the dataset (the default: `build --out DIR`) or the leaderboard site."""


@build.command(name="dataset")
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Dataset folder to write (Hub layout).")
@click.option("--config", type=click.Path(dir_okay=False), help="YAML build config; options given here override it.")
@click.option("--dump", type=click.Path(dir_okay=False), help="Wikidata JSON dump (default: the shipped sample).")
@click.option("--sparql", metavar="URL", help="SPARQL endpoint instead of a dump.")
@click.option("--concepts", help="Comma-separated concepts (default cuisine,landmarks,art).")
@click.option("--countries", help="Comma-separated ISO codes (default: CUBE's 8 plus CultDiff's in the sample).")
@click.option("--hops", type=int, help="Maximum hops (default 4).")
@click.option("--llm", help="LLM backend: none, openai:MODEL or transformers:PATH (default none).")
@click.option("--llm-cache", type=click.Path(dir_okay=False), help="A response cache (llm/cache.jsonl of an earlier build) to reuse.")
@click.option("--curation", type=click.Path(dir_okay=False), help="Curation file (include / exclude / rename by QID).")
@click.option("--prompt-sets", help="Comma-separated prompt sets to build (default: all).")
@click.option("--seed", type=int, help="Seed of the stratified sampling (default 0).")
@click.option("--knowledge", type=click.Path(file_okay=False),
              help="ECB culture questions: a folder of country articles with sources.yaml (builder/knowledge.py).")
@click.option("--translations", help="Native-language variants: a translation file (builder/translate.py), or "
                                      "'none' (default: the packaged file of the demo countries).")
@click.option("--translation-threshold", type=float,
              help="The least back-translation similarity a translation needs to be kept (default 0.9).")
@click.option("--llm-deadline", type=float, metavar="SECONDS",
              help="How long the whole build may wait for the LLM servers' answers, every call together (default "
                   "1800: 30 minutes); a server still answering then ends the build in one line.")
@click.option("--held-out", "held_out", metavar="FRACTION",
              help="Hold out this share (0 to 0.5) of each stratum's artifacts in a private dataset, drawn with the "
                   "custodians' key ($CULTUREBOARD_HELD_OUT_KEY or --held-out-key) before the public sample.")
@click.option("--held-out-key", type=click.Path(dir_okay=False), help="A file holding the held-out split's secret key "
              "(default: $CULTUREBOARD_HELD_OUT_KEY).")
@click.option("--held-out-folder", type=click.Path(file_okay=False),
              help="The private dataset's folder (default: beside --out, OUT-held-out).")
@click.option("--rotate", is_flag=True, help="Draw the held-out split of the next release, and publish the retired "
                                             "one's salt and prompts in the public dataset.")
@json_option
def build_dataset(out, config, dump, sparql, concepts, countries, hops, llm, llm_cache, curation, prompt_sets, seed,
                  knowledge, translations, translation_threshold, llm_deadline, held_out, held_out_key, held_out_folder,
                  rotate, as_json):
    """Build the benchmark dataset folder: artifact spaces and the prompt sets of the five families."""
    from cultureboard.builder import build as run

    provenance = run(out, config=config, dump=dump, sparql=sparql, concepts=_csv(concepts), countries=_csv(countries),
                     hops=hops, llm=llm, llm_cache=llm_cache, curation=curation, prompt_sets=_csv(prompt_sets), seed=seed,
                     knowledge=knowledge, translations=translations, translation_threshold=translation_threshold,
                     llm_deadline=llm_deadline, held_out=held_out, held_out_folder=held_out_folder,
                     held_out_key=held_out_key, rotate=rotate)
    if "held_out" in provenance:
        h = provenance["held_out"]
        click.echo(f"held-out split, release {h['release']}: " + ", ".join(f"{n} {k}" for k, n in h["prompts"].items())
                   + f" prompts in the private dataset; fingerprint {h['fingerprint']}", err=True)
    for line in provenance.get("warnings", []):
        click.echo(f"warning: {line}", err=True)
    _print_rows(out, provenance["rows"], as_json)


def _print_rows(out, rows: dict, as_json: bool) -> None:
    text = "\n".join(f"  {name:<20} {n:>6} rows" for name, n in rows.items())
    _emit(as_json, {"out": str(out), "rows": rows},
          f"{text}\ndataset written to {out} (load with datasets.load_dataset({str(out)!r}, CONFIG))")


@build.command(name="site")
@click.option("--results", required=True, type=click.Path(file_okay=False), help="Results folder (one subfolder per submission).")
@dataset_option()
@click.option("--submissions", required=True, type=click.Path(file_okay=False), help="Submissions folder (model cards, images).")
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Folder to write the site to.")
@click.option("--ratings", multiple=True, type=click.Path(),
              help="A ratings folder (output of `cultureboard import ratings`), for metric validity; repeat it for "
                   "several studies.")
@click.option("--order", type=click.Choice(["value", "lcb"]), default="value", show_default=True,
              help="Order ranked submissions by the point value, or by the pessimistic end of the 95% CI (lcb: the "
                   "lower bound where higher is better, the upper where lower is). Rank ranges are the same.")
@click.option("--held-out", "held_out", type=click.Path(file_okay=False),
              help="Folder of held-out records (`cultureboard evaluate-held-out`, results-held-out/): a held-out column "
                   "beside the headline, the gap on model pages and held-out.html.")
@click.option("--media", type=click.Choice(["local", "hub"]), default="local", show_default=True,
              help="Where the pages' images come from: copied into the site (local), or linked from the results "
                   "dataset on the Hub at the commit `cultureboard publish media` uploaded them in (hub; needs "
                   "--media-from).")
@click.option("--media-from", "media_from", type=click.Path(file_okay=False),
              help="With --media hub: the --out folder of `cultureboard publish media` (its published.json).")
@json_option
def build_site(results, dataset, submissions, out, ratings, order, held_out, media, media_from, as_json):
    """Render the leaderboard: overview, slice, model and metric pages, plots and downloads."""
    from cultureboard.site.render import build_site as run

    info = run(results, dataset, submissions, out, ratings=list(ratings), order=order, held_out=held_out,
               media=media, media_from=media_from)
    for entry in info["skipped"]:
        click.echo(f"warning: {entry['source']}: {entry['problem']} (fix: {entry['fix']}); {entry['submission']} is "
                   "left out of the site", err=True)
    for entry in info["unverified"]:
        click.echo(f"warning: {entry['submission']}: image {entry['file']} {entry['problem']} (fix: run `cultureboard "
                   f"validate` on the submission and fix what it reports); it is not published", err=True)
    _emit(as_json, info, f"site written to {out}: {info['pages']} pages, largest {info['largest_page_bytes'] / 1024:.0f} KB; "
                         f"open {Path(out) / 'index.html'}")


@cli.group(name="import")
def import_() -> None:
    """Import the official released data of a paper as a dataset folder, or human ratings."""


@import_.command(name="cube-1k")
@click.argument("source")
@click.option("--out", required=True, type=click.Path(file_okay=False))
@json_option
def import_cube_1k(source, out, as_json):
    """CUBE-1K JSON (a path or the official URL) -> the cube-awareness config, prompts verbatim."""
    from cultureboard.builder import import_dataset

    _print_rows(out, import_dataset("cube-1k", source, out)["rows"], as_json)


@import_.command(name="cure")
@click.argument("source")
@click.option("--out", required=True, type=click.Path(file_okay=False))
@json_option
def import_cure(source, out, as_json):
    """CuRe CSV folder (a path or the official base URL) -> the cure-ladder config."""
    from cultureboard.builder import import_dataset

    _print_rows(out, import_dataset("cure", source, out)["rows"], as_json)


@import_.command(name="ratings")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--study", default="cube", show_default=True,
              help="The registered study whose layout FILE is in: cube, cure, cultdiff, cultivate, ecb (see "
                   "evaluators/results/studies/).")
@dataset_option()
@prompt_set_option(required=False, default_note="; default: the study's own, where it has one")
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Folder for the ratings and their tables.")
@click.option("--scores", type=click.Path(dir_okay=False), help="An evaluator scores.parquet: adds the validity report (cube, cultdiff).")
@click.option("--submissions", type=click.Path(file_okay=False), help="Submissions folder, when ratings name images by file or sha256 (cube, cultdiff).")
@click.option("--results", type=click.Path(file_okay=False), help="A results folder holding the rated submissions: adds the correlation tables (cure, cultivate, ecb).")
@json_option
def import_ratings(file, study, dataset, prompt_set, out, scores, submissions, results, as_json):
    """Import human ratings of any registered study: the common format, agreement, and the study's own tables
    (CUBE Tables 3/10/11/12, CuRe Tables 1-3, ...) with correlations to automatic scores."""
    from cultureboard.evaluators.results.studies import write_study

    done = write_study(study, file, dataset, out, prompt_set=prompt_set, scores=scores, submissions=submissions,
                       results=results)
    # the writers count in their own words: ratings or rows; artifacts, images or items (images); raters or annotators
    ratings = done.get("ratings", done.get("rows"))
    things = next(((done[k], "images" if k == "items" else k) for k in ("artifacts", "images", "items") if k in done), None)
    raters = done.get("raters", done.get("annotators"))
    _emit(as_json, {"study": study, **done},
          f"{ratings} ratings" + (f" of {things[0]} {things[1]}" if things else "")
          + (f" by {raters} raters" if raters is not None else "") + f" written to {done['out']} (study {study})")


@cli.command(name="fetch-references")
@dataset_option()
@click.option("--per-artifact", default=4, show_default=True, help="Images kept per artifact, at most.")
@click.option("--commons-api", default="https://commons.wikimedia.org/w/api.php", show_default=True,
              help="MediaWiki API of Wikimedia Commons.")
@click.option("--contact", envvar="CULTUREBOARD_CONTACT", help="Your URL or e-mail, sent in the User-Agent as Wikimedia "
              "asks (default: $CULTUREBOARD_CONTACT).")
@click.option("--connections", default=3, show_default=True, help="Parallel downloads (1-4).")
@click.option("--max-side", default=1024, show_default=True, help="Largest side kept; bigger originals come as Commons thumbnails.")
@click.option("--max-bytes", default=20 * 2**20, show_default=True, help="Largest file downloaded.")
@json_option
def fetch_references(dataset, per_artifact, commons_api, contact, connections, max_side, max_bytes, as_json):
    """Add real photographs of each artifact from Wikimedia Commons (free licences only) as the references config."""
    from cultureboard.builder.references import MISSING_CONFIG
    from cultureboard.builder.references import references as run

    report = run(dataset, contact=contact or "", per_artifact=per_artifact, commons_api=commons_api,
                 connections=connections, max_side=max_side, max_bytes=max_bytes,
                 echo=lambda line: click.echo(line, err=as_json))
    _emit(as_json, report, f"{report['images']} images of {report['with_images']} of {report['artifacts']} artifacts "
                           f"(downloaded {report['downloaded']}, reused {report['reused']}); {report['missing']} "
                           f"artifacts without a usable image are listed in the {MISSING_CONFIG} config")


@cli.group()
def publish() -> None:
    """Publish to the Hugging Face Hub."""


@publish.command(name="dataset")
@click.argument("folder", type=click.Path(file_okay=False))
@click.option("--repo", required=True, help="Hub dataset repository, ORG/NAME.")
@click.option("--revision", help="Tag to create at the uploaded commit (e.g. v1.0).")
@click.option("--create-pr", is_flag=True, help="Open a pull request on the Hub instead of committing to main.")
@json_option
def publish_dataset(folder, repo, revision, create_pr, as_json):
    """Upload a dataset folder and print the commit that submissions pin; a private held-out dataset goes only to
    a private repository."""
    from cultureboard.builder import publish_dataset as run

    result = run(folder, repo=repo, revision=revision, create_pr=create_pr)
    if as_json:
        _emit(True, {"folder": str(folder), "repo": repo, **result}, "")
        return
    click.echo(f"uploaded {folder} to {repo}: commit {result['commit']}")
    if result.get("pr_url"):
        click.echo(f"pull request: {result['pr_url']}")
    if result.get("tag"):
        click.echo(f"tagged {result['tag']}")
    from cultureboard.builder.held_out import SPLIT_FILE

    if (Path(folder) / SPLIT_FILE).is_file():
        click.echo(f"private held-out dataset: the evaluate workflow's held-out job reads {repo} at {result['commit']} "
                   "(set the repository variable CULTUREBOARD_HELD_OUT_REPO and its secret HELD_OUT_HF_TOKEN)")
        return
    click.echo(f"submissions pin: dataset_revision: {result['commit']}")


@publish.command(name="media")
@click.argument("results", type=click.Path(file_okay=False))
@click.option("--submissions", required=True, type=click.Path(file_okay=False), help="Submissions folder (images).")
@click.option("--repo", required=True, help="Hub dataset repository for results, ORG/NAME (the media go under media/).")
@click.option("--out", required=True, type=click.Path(file_okay=False),
              help="Folder for the thumbnails and full-size copies (kept: the next run reuses what is unchanged) and "
                   "published.json, which `build site --media hub --media-from` reads.")
@json_option
def publish_media(results, submissions, repo, out, as_json):
    """Upload the site's thumbnails and full-size images to the results dataset, for `build site --media hub`."""
    from cultureboard.site.media_hub import publish_media as run

    info = run(results, submissions, repo, out)
    for entry in info["problems"]:
        click.echo(f"warning: {entry['submission']}: image {entry['file']} {entry['problem']} (fix: run `cultureboard "
                   f"validate` on the submission and fix what it reports); it is not published", err=True)
    _emit(as_json, info, f"uploaded {info['images']} images to {repo} (media/): commit {info['commit']}; build the "
                         f"site with --media hub --media-from {out}")


@publish.command(name="results")
@click.argument("results", type=click.Path(file_okay=False))
@click.option("--repo", required=True, help="Hub dataset repository for results, ORG/NAME.")
@click.option("--submission", help="Check that this submission id has results and name it in the commit (every submission is uploaded, so the splits and `latest` always agree).")
@json_option
def publish_results(results, repo, submission, as_json):
    """Upload results to a Hub dataset: one split per submission plus `latest`."""
    from cultureboard.evaluators.results.publish import publish_results as run

    info = run(results, repo, submission=submission)
    _emit(as_json, {"repo": repo, **info}, f"uploaded results to {repo}: commit {info['commit']}")


# ------------------------------------------------------------------------------------ submissions

@cli.command()
@dataset_option()
@prompt_set_option()
@click.option("--pipeline", required=True, help="diffusers pipeline: Hub id (ID or ID@REVISION) or local folder.")
@click.option("--out", required=True, type=click.Path(file_okay=False),
              help="Submission folder submissions/<org>__<model>[__<tag>]: its name gives the organization, model "
                   "name and tag not passed below.")
@click.option("--i2i-pipeline", help="Image-to-image or instruction-edit pipeline for I2I chains (default: derived from --pipeline).")
@click.option("--organization", help="Organization: first part of the folder name (default: from --out, else local).")
@click.option("--model-name", help="Short model name: second part of the folder name (default: from --out, else from --pipeline).")
@click.option("--tag", help="Optional variant tag: last part of the folder name (default: from --out).")
@click.option("--contact", default="unknown", show_default=True, help="Name and e-mail or GitHub handle.")
@click.option("--license", "license_", default="unknown", show_default=True, help="The model's licence.")
@click.option("--batch-size", default=4, show_default=True)
@click.option("--steps", type=int, help="Denoising steps (default: the pipeline's).")
@click.option("--guidance-scale", type=float, help="Guidance scale (default: the pipeline's).")
@click.option("--strength", default=0.6, show_default=True, help="img2img strength of edit steps.")
@device_option
@dtype_option
@click.option("--limit", type=int, help="Only the first N prompts (a smoke test).")
@json_option
def generate(dataset, prompt_set, pipeline, out, i2i_pipeline, organization, model_name, tag, contact, license_,
             batch_size, steps, guidance_scale, strength, device, dtype, limit, as_json):
    """Generate a complete submission with any diffusers pipeline."""
    from diffusers.utils import logging as diffusers_logging
    from transformers.utils import logging as transformers_logging

    from cultureboard.evaluators.submission.generate import generate as run

    for logging in (diffusers_logging, transformers_logging):  # one bar, over the images, instead of theirs
        logging.set_verbosity_error()
        logging.disable_progress_bar()

    result = run(dataset, prompt_set, pipeline, out, i2i_pipeline=i2i_pipeline, organization=organization,
                 model_name=model_name, tag=tag, contact=contact, license=license_, batch_size=batch_size, steps=steps,
                 guidance_scale=guidance_scale, strength=strength, device=device, dtype=dtype, limit=limit)
    _note_local_dataset(result["dataset"], dataset)
    _emit(as_json, result, f"{result['images']} images in {result['out']} ({result['generated']} generated, "
                           f"{result['skipped']} kept from an earlier run); check it with: cultureboard validate "
                           f"{result['out']} --dataset {dataset}")


def _note_local_dataset(pin: dict, dataset: str) -> None:
    """Say on stderr, when the dataset folder is not a Hub download, that the submission pins a local folder."""
    if not pin["hub"]:
        from cultureboard.dataset_folder import local_pin_note

        click.echo(local_pin_note(dataset), err=True)


@cli.command()
@click.option("--from-folder", required=True, type=click.Path(file_okay=False), help="Folder with the images, named and nested however you like.")
@click.option("--mapping", required=True, type=click.Path(dir_okay=False),
              help="CSV (header file,prompt_id,sample_idx[,edit_step,source_file,refused,reason]) or JSONL mapping each image, relative to --from-folder, to its prompt and sample (refused rows: no file).")
@click.option("--spec", required=True, type=click.Path(dir_okay=False),
              help="Partial submission.yaml: organization, contact, model.*, generation settings you know; package fills the rest.")
@dataset_option()
@prompt_set_option()
@click.option("--out", required=True, type=click.Path(file_okay=False),
              help="Submission folder submissions/<org>__<model>[__<tag>]: its name gives the organization, model.name "
                   "and tag the spec leaves out.")
@click.option("--seeds-ignored", is_flag=True, help="The model took no seed: record generation.extra.seed_honoured: false.")
@json_option
def package(from_folder, mapping, spec, dataset, prompt_set, out, seeds_ignored, as_json):
    """Package images made elsewhere (closed APIs) as a submission. It runs validate's rules on the mapping, the
    images and the folder it is about to write, and writes nothing that validate would reject; every problem is
    reported at once, one a line, named by the input to fix (the mapping's line, the spec, the image file)."""
    from cultureboard.evaluators.submission.package import package as run
    from cultureboard.evaluators.submission.rules.report import ProblemsError

    try:
        result = run(from_folder, mapping, out, dataset=dataset, prompt_set=prompt_set, spec=spec,
                     seed_honoured=not seeds_ignored)
    except ProblemsError as exc:
        click.echo(f"error: {exc.message}", err=True)
        for line in exc.lines():
            click.echo(line, err=True)
        raise click.exceptions.Exit(1) from None
    for line in result["warnings"]:
        click.echo(line, err=True)
    _note_local_dataset(result["dataset"], dataset)
    _emit(as_json, result, f"{result['images']} images and {result['refused']} declared refusals packaged into "
                           f"{result['out']}; check it with: cultureboard validate {result['out']} --dataset {dataset}")


@cli.command(name="export-prompts")
@prompt_set_option()
@click.option("--dataset", default="dataset", show_default=True, type=click.Path(file_okay=False),
              help="Dataset folder to read (a Hub download or a build); with --revision, the folder the official "
                   f"dataset {OFFICIAL_DATASET} is downloaded into first.")
@click.option("--revision", help="Download the prompt set from the official Hub dataset at this revision (a tag such "
                                 "as v1.0, or a commit) into --dataset first.")
@click.option("--format", "fmt", type=click.Choice(["csv", "jsonl", "parquet"]),
              help="Output format (default: from --out's extension, else csv).")
@click.option("--out", required=True, type=click.Path(dir_okay=False), help="File to write, e.g. prompts.csv.")
@json_option
def export_prompts(prompt_set, dataset, revision, fmt, out, as_json):
    """Write a prompt set as one row per image to make (prompt id, sample, seed, text, negative prompt, images per
    prompt, edit chain and native-language columns) and the dataset and commit it came from. Add a file column and
    pass it to `cultureboard package --mapping`: package checks the seeds and pins the same commit."""
    from cultureboard.evaluators.submission.export import export_prompts as run

    result = run(prompt_set, out, dataset=dataset, revision=revision, fmt=fmt)
    _emit(as_json, result, f"{result['rows']} images to make ({result['prompts']} prompts of {prompt_set}) written to "
                           f"{result['out']} from {result['dataset']} at {result['revision']}")
    if not result["hub"] and not as_json:
        from cultureboard.dataset_folder import local_pin_note

        click.echo(local_pin_note(dataset), err=True)


@cli.command(name="make-control")
@click.argument("kind", type=click.Choice(CONTROL_KINDS))
@dataset_option()
@prompt_set_option()
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Submission folder: submissions/control__KIND[__TAG] (a tag such as the prompt set tells several apart).")
@click.option("--size", type=int, help="Side of the square images, in pixels (reference-photos, copied-references, text-only; default 512).")
@click.option("--from", "source", type=click.Path(file_okay=False), help="category-images, unedited: the submission whose images the control copies (its P(c) images, or its chains' base images).")
@json_option
def make_control(kind, dataset, prompt_set, out, size, source, as_json):
    """Make a control submission, never ranked: the reference photographs, the prompt's words as an image, the
    category prompt's images for a whole CuRe ladder (category-images), an editor that returns its input
    unchanged (unedited), or the photographs re-encoded and handed in as generations (copied-references, which
    validation refuses)."""
    from cultureboard.evaluators.submission.controls import make_control as run

    result = run(kind, dataset, prompt_set, out, size=size, source=source)
    _emit(as_json, result, f"{result['images']} images and {result['refused']} declared refusals written to {result['out']}")


@cli.command()
@click.argument("submission", required=False, type=click.Path())
@dataset_option(required=False)
@click.option("--changed-files", type=click.Path(dir_okay=False), help="A pull request's changed paths (git diff --name-only), to check its scope.")
@json_option
@click.option("--full-decode", is_flag=True, help="Also decode every pixel (slow; by default the file structure and sha256 are checked).")
@click.option("--read-text", is_flag=True, help="Also read every image's text with the OCR (cultureboard[ocr]) and report the share that spells its prompt (needs --dataset).")
def validate(submission, dataset, changed_files, as_json, full_decode, read_text):
    """Report every problem of a submission, grouped by code, one a line with its fix; exit 0 when valid, 1 when
    not, 2 on usage errors.

    Without --dataset, coverage, seeds and edit chains are not checked: the report says so and is not "valid" (exit 1)."""
    from cultureboard.evaluators.submission.validate import Report, check_pr_scope
    from cultureboard.evaluators.submission.validate import validate as run

    if not submission and not changed_files:
        raise CultureboardError("validate", "needs a SUBMISSION folder, --changed-files, or both",
                                "e.g. cultureboard validate submissions/ORG__MODEL --dataset DIR", exit_code=2)
    reports = []
    if changed_files:
        try:
            paths = Path(changed_files).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise CultureboardError(changed_files, f"cannot be read ({exc.__class__.__name__})",
                                    "pass a text file with one changed path per line", exit_code=2) from None
        reports.append(check_pr_scope(paths, submission))
    if submission:
        reports.append(run(submission, dataset, full_decode=full_decode))
    report = Report.combined(reports)
    if read_text:
        if not (submission and dataset):
            raise CultureboardError("--read-text", "needs a SUBMISSION folder and --dataset",
                                    "pass both, e.g. cultureboard validate submissions/ORG__MODEL --dataset DIR --read-text",
                                    exit_code=2)
        if report.valid:  # the OCR reads only files the rules accepted
            from cultureboard.evaluators.engine.written import check_submission

            report.written = check_submission(Path(submission), Path(dataset))
    click.echo(report.to_json() if as_json else report.to_text())
    raise click.exceptions.Exit(0 if report.accepted else 1)


@cli.command("audit-generation")
@click.argument("submission", type=click.Path(file_okay=False))
@dataset_option()
@click.option("--pr", "pr", required=True, type=click.IntRange(0), help="The pull request's number: seeds the sample of images regenerated.")
@click.option("--pipeline", help="A local copy of the declared pipeline (its files must hash to model.revision when that is local:); default: model.id@model.revision from the Hub.")
@scorers_option("default")
@device_option
@click.option("--tolerance", type=float, default=None, help="Largest LPIPS distance accepted (default: the recorded one, see README).")
@json_option
def audit_generation(submission, dataset, pr, pipeline, scorers, device, tolerance, as_json):
    """Regenerate a sample of an open pipeline's images with the declared seeds and settings and compare them
    with the submitted ones: exit 0 when verified (or self-reported: a closed model), 1 naming the images beyond
    the tolerance."""
    from cultureboard.evaluators.submission.audit import NOT_VERIFIED, TOLERANCE
    from cultureboard.evaluators.submission.audit import audit_generation as run
    from cultureboard.standins import resolve_scorers

    result = run(submission, dataset, pr, pipeline=pipeline, scorers=resolve_scorers(scorers), device=device,
                 tolerance=TOLERANCE if tolerance is None else tolerance)
    text = f"{submission}: {result['verdict']} ({result['checked']} images regenerated, tolerance {result['tolerance']})"
    if result["verdict"] == NOT_VERIFIED:
        text += "\n" + "\n".join(f"beyond tolerance: {name} (LPIPS {result['distances'][name]:.4f}): not made by the "
                                  "declared seed and settings" for name in result["beyond"])
    _emit(as_json, result, text)
    raise click.exceptions.Exit(1 if result["verdict"] == NOT_VERIFIED else 0)


# ------------------------------------------------------------------------------------ results

@cli.command()
@click.argument("submissions", nargs=-1, required=True, type=click.Path(file_okay=False), metavar="SUBMISSION...")
@dataset_option()
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Results folder (results/): writes OUT/<submission id>/.")
@scorers_option("default")
@click.option("--shard", help="Score only part i of n (i/n); join the parts with `cultureboard merge-shards`.")
@click.option("--executor", type=click.Choice(["local", "ray"]), default="local", show_default=True,
              help="Run the units (submission x shard) in this process, or on a Ray cluster (pip install "
                   "'cultureboard[ray]'); either way merged to the same bytes.")
@click.option("--address", help="With --executor ray: HOST:PORT of a running Ray cluster's head (default: a local "
                                "Ray instance started and stopped with the command).")
@click.option("--shards", type=int, help="Split each submission into this many units (default 1).")
@device_option
@dtype_option
@click.option("--cache", type=click.Path(file_okay=False), help="Embedding cache folder (default: $CULTUREBOARD_CACHE/embeddings or ~/.cache/cultureboard/embeddings).")
@click.option("--seed", default=0, show_default=True, callback=lambda ctx, param, value: _seed(value),
              help="Seed of the bootstrap and of any random groups a family draws (0 to 2**63 - 1).")
@click.option("--option", "options", multiple=True, metavar="KEY=VALUE",
              help="A typed option of the submission's family, e.g. --option repetitions=20 (see `cultureboard list-metrics`).")
@click.option("--read-text/--no-read-text", default=True, show_default=True,
              help="Read every image's text with the OCR (the extra cultureboard[ocr]) to find images that spell their prompt.")
@json_option
def evaluate(submissions, dataset, out, scorers, shard, executor, address, shards, device, dtype, cache, seed, options,
             read_text, as_json):
    """Score a submission: per-image scores and per-slice summaries with bootstrap CIs and provenance.

    `--scorers tiny` runs every step on your own submission in seconds with random stand-in scorers (the scores
    mean nothing): a check that the submission and your set-up work before a real scoring run. Progress goes to
    stderr: a live line per stage on a terminal, one line per stage otherwise.

    Several submissions, `--shards N` or `--executor ray` score units of work (submission x shard i/N), skip the
    units already done with the same inputs, then merge each submission's units as `merge-shards` does."""
    from cultureboard import progress

    if len(submissions) > 1 or shards is not None or executor != "local" or address is not None:
        if shard:
            raise CultureboardError(f"--shard {shard}", "scores one part of one submission on the local executor",
                                    "use --shards N to split each submission into units", exit_code=2)
        if address is not None and executor != "ray":
            raise CultureboardError(f"--address {address}", "names a Ray cluster", "add --executor ray", exit_code=2)
        with progress.enabled():
            progress.say(f"evaluate {len(submissions)} submissions with the {executor} executor: loading the evaluator")
            from cultureboard.evaluators.engine.executor import evaluate_all
            from cultureboard.standins import resolve_scorers

            targets = evaluate_all(list(submissions), dataset, out, executor=executor, address=address,
                                   shards=shards or 1, scorers=resolve_scorers(scorers), device=device, dtype=dtype,
                                   cache=cache, seed=seed, option_overrides=options, read_text=read_text)
        _emit(as_json, {"results": [str(t) for t in targets], "executor": executor, "shards": shards or 1,
                        "stand_in_scorers": scorers == "tiny"},
              "\n".join(f"results written to {t}" for t in targets))
        return
    submission = submissions[0]
    with progress.enabled():
        progress.say(f"evaluate {submission}: loading the evaluator")
        from cultureboard.evaluators.engine.evaluate import evaluate as run
        from cultureboard.evaluators.engine.evaluate import parse_shard
        from cultureboard.standins import resolve_scorers

        chosen = parse_shard(shard)
        target = run(submission, dataset, out, scorers=resolve_scorers(scorers), shard=chosen, device=device,
                     dtype=dtype, cache=cache, seed=seed, option_overrides=options, read_text=read_text)
    record = json.loads((target / ("shard.json" if chosen else "summary.json")).read_text(encoding="utf-8"))
    provenance = record["provenance"]
    _emit(as_json, {"results": str(target), "submission": provenance["submission"]["id"],
                    "prompt_set": provenance["prompt_set"], "family": provenance["family"],
                    "metrics": sorted(provenance["metrics"]), "scorers": [s["name"] for s in provenance["scorers"]],
                    "shard": list(chosen) if chosen else None, "stand_in_scorers": scorers == "tiny"},
          f"results written to {target}" + (" (tiny stand-in scorers: these scores measure nothing)"
                                             if scorers == "tiny" else ""))


@cli.command(name="evaluate-held-out")
@click.argument("submission", type=click.Path(file_okay=False))
@dataset_option()
@click.option("--private", required=True, type=click.Path(file_okay=False),
              help="The private held-out dataset of the dataset's release (the custodians' CULTUREBOARD_HELD_OUT_REPO).")
@click.option("--results", required=True, type=click.Path(file_okay=False),
              help="Results folder holding the submission's public results (RESULTS/<submission id>/).")
@click.option("--out", required=True, type=click.Path(file_okay=False),
              help="Folder of held-out records: writes OUT/<submission id>.json (aggregates only).")
@click.option("--pipeline", type=click.Path(file_okay=False),
              help="For a submission of a local pipeline: that folder (its fingerprint must be the submission's revision).")
@scorers_option("default")
@device_option
@click.option("--cache", type=click.Path(file_okay=False), help="Embedding cache folder (default: evaluate's).")
@click.option("--work", type=click.Path(file_okay=False),
              help="Where the temporary images and scores are made (default: the system's temporary folder); removed "
                   "before the command ends.")
@json_option
def evaluate_held_out(submission, dataset, private, results, out, pipeline, scorers, device, cache, work, as_json):
    """Generate and score the held-out prompts with a submission's open pipeline and declared settings; write only
    aggregates (public value, held-out value and the gap with its CI, per metric). Closed APIs are not held-out
    tested."""
    from cultureboard.evaluators.results.held_out import evaluate_held_out as run
    from cultureboard.standins import resolve_scorers

    record = run(submission, dataset, private, results, out, pipeline=pipeline, scorers=resolve_scorers(scorers),
                 device=device, cache=cache, work=work)
    if record["status"] != "tested":
        _emit(as_json, record, f"{record['submission']}: {record['status']} ({record['reason']})")
        return
    lines = [f"  {m['metric']:<28} public {m['public']['value']:.4g}  held-out {m['held_out']['value']:.4g}  "
             f"gap {m['gap']['value']:+.4g}" + ("  tuned to public prompts" if m["tuned_to_public"] else "")
             for m in record["metrics"]]
    _emit(as_json, record, "\n".join(lines) + f"\nheld-out record written to {Path(out) / (record['submission'] + '.json')}")


@cli.command(name="list-metrics")
@json_option
def list_metrics(as_json):
    """List every benchmark family, its prompt sets, options and metric cards (with versions, direction, the
    paper's evidence for it, its validity tier and its smallest meaningful difference)."""
    import dataclasses

    from cultureboard.evaluators.engine.registry import load_families
    from cultureboard.site.names import direction_text

    families = load_families()
    listing = [{"family": f.name, "title": f.title, "papers": dict(f.papers),
                "options": [{"name": o.name, "default": o.default} for o in dataclasses.fields(f.options)],
                "prompt_sets": [{"name": s.name, "primary": f.primary(s.name), "metrics": list(s.metrics)}
                                for s in f.prompt_sets],
                "metrics": [m.to_dict() for m in f.metrics]} for _, f in sorted(families.items())]
    if as_json:
        click.echo(json.dumps({"families": listing}, indent=2, ensure_ascii=False))
        return
    for fam in listing:
        click.echo(f"{fam['family']}: {fam['title']}")
        options = ", ".join(f"{o['name']}={o['default']}" for o in fam["options"]) or "none"
        click.echo(f"  options: {options}")
        for s in fam["prompt_sets"]:
            click.echo(f"  prompt set {s['name']} (headline {s['primary']})")
        for m in fam["metrics"]:
            cluster = f", bootstrap clusters: {m['cluster']}" if m["cluster"] else ""
            cluster += f", Wilson intervals on [{m['bounded'][0]:g}, {m['bounded'][1]:g}]" if m["bounded"] else ""
            smd = f", smallest difference {m['smallest_difference']:g}" if m["smallest_difference"] else ""
            click.echo(f"    {m['name']:<28} v{m['version']}  {direction_text(m):<32}  unit {m['unit']:<6} {m['title']}"
                       f" [{m['tier']}{smd}]{cluster}")


@cli.command(name="merge-shards")
@click.argument("results", type=click.Path(file_okay=False))
@click.argument("submission_id")
@dataset_option()
@json_option
def merge_shards(results, submission_id, dataset, as_json):
    """Join the shards of a sharded evaluation into the result an unsharded run gives."""
    from cultureboard.evaluators.engine.evaluate import merge_shards as run

    out = run(results, submission_id, dataset)
    _emit(as_json, {"submission": submission_id, "out": str(out)}, f"results written to {out}")


@cli.command(name="compare-results")
@click.argument("baseline", type=click.Path(file_okay=False))
@click.argument("new", type=click.Path(file_okay=False))
@click.option("--tolerance", default=0.02, show_default=True, help="Largest absolute change tolerated per metric x slice.")
@json_option
def compare_results(baseline, new, tolerance, as_json):
    """Compare two results of the same submission; exit 1 when scores drifted beyond the tolerance."""
    from cultureboard.evaluators.results.drift import compare_results as run
    from cultureboard.evaluators.results.drift import format_drifts

    drifts = run(baseline, new, tolerance=tolerance)
    _emit(as_json, {"tolerance": tolerance, "drifted": bool(drifts), "drifts": drifts}, format_drifts(drifts))
    raise click.exceptions.Exit(1 if drifts else 0)


@cli.command(name="convert-dump")
@click.argument("dump", type=click.Path(dir_okay=False))
@click.argument("out", type=click.Path(dir_okay=False))
def convert_dump(dump, out):
    """Convert a Wikidata JSON dump to N-Triples (Wikidata RDF), to load into a local SPARQL server."""
    from cultureboard.builder.kb_rdf import dump_to_ntriples

    click.echo(f"{dump_to_ntriples(dump, out)} entities written to {out}")


@cli.command()
@click.option("--out", default="cultureboard-demo", show_default=True, type=click.Path(file_okay=False))
@scorers_option("tiny")
@click.option("--pipeline", "pipelines", multiple=True, metavar="NAME=ID_OR_PATH",
              help="Real diffusers pipelines to generate with instead of the stand-ins (repeatable).")
@click.option("--countries", help=f"Comma-separated ISO codes (default: {','.join(DEMO_COUNTRIES)}).")
@json_option
def demo(out, scorers, pipelines, countries, as_json):
    """Run the whole pipeline offline: build, generate, validate, evaluate, site (stand-in models, cached)."""
    from cultureboard.demo import demo as run

    chosen = {}
    for item in pipelines:
        name, sep, ident = item.partition("=")
        if not sep or not name or not ident:
            raise CultureboardError(f"--pipeline {item}", "is not NAME=ID_OR_PATH", "e.g. --pipeline sdxl=stabilityai/stable-diffusion-xl-base-1.0", exit_code=2)
        chosen[name] = ident
    summary = run(out, scorers=scorers, pipelines=chosen or None, countries=_csv(countries),
                  echo=lambda line: click.echo(line, err=as_json), bars=sys.stderr.isatty())
    if as_json:
        click.echo(json.dumps(summary, indent=2))


@cli.group()
def train() -> None:
    """Train learned metrics on human ratings."""


@train.command(name="cultdiff-s")
@click.option("--ratings", required=True, type=click.Path(dir_okay=False),
              help="Ratings in the common format: q1_1-q1_4 answers about image pairs (item_id pair:SHA:SHA) or "
                   "generated images with their prompt_id.")
@dataset_option()
@click.option("--out", required=True, type=click.Path(file_okay=False),
              help="Model folder to write; score with it as `cultdiff.learned: {path: OUT}` in --scorers FILE.")
@click.option("--images", multiple=True, type=click.Path(file_okay=False),
              help="A folder holding rated generated images, found by sha256 (e.g. the submissions); repeatable.")
@click.option("--init", help="Hub id or folder of a transformers ViT, or 'random' (default "
                             "google/vit-base-patch16-224-in21k).")
@click.option("--epochs", type=int, help="Epochs (default 10, as CultDiff).")
@click.option("--lr", type=float, help="Learning rate (default 1e-4, as CultDiff).")
@click.option("--batch-size", type=int, help="Pairs per batch (default 32, as CultDiff).")
@click.option("--margin", type=float, help="Contrastive margin m (default 1.0).")
@click.option("--held-out", type=float, help="Share of each country's artifacts held out for the correlation (default 0.2).")
@click.option("--seed", type=int, help="Seed of the split, pair sampling, order and initialisation (default 0).")
@device_option
def train_cultdiff_s(ratings, dataset, out, images, init, epochs, lr, batch_size, margin, held_out, seed, device):
    """Train CultDiff-S: a twin ViT with a rating-weighted contrastive loss; writes a model folder with its card."""
    import dataclasses

    from cultureboard.device import choose_device
    from cultureboard.evaluators.families.cultdiff.train import TrainingConfig
    from cultureboard.evaluators.families.cultdiff.train import train_cultdiff_s as run

    given = {"init": init, "epochs": epochs, "lr": lr, "batch_size": batch_size, "margin": margin,
             "held_out": held_out, "seed": seed}
    config = TrainingConfig(**{k: v for k, v in given.items() if v is not None})  # checked before torch loads
    config = dataclasses.replace(config, device=choose_device(device))
    record = run(ratings, dataset, out, images=images, config=config, echo=click.echo)
    after = record["held_out"]["after"]
    rho = "undefined" if after["spearman"] is None else f"{after['spearman']:.3f}"
    click.echo(f"model written to {out} (held-out Spearman {rho} over {after['n']} pairs; see its README.md)")


# ------------------------------------------------------------------------------------ earlier names

@cli.group(name="site", hidden=True)
def site_group() -> None:
    """Earlier name: `site build` is `build site`."""


@cli.group(name="ratings", hidden=True)
def ratings_group() -> None:
    """Earlier name: `ratings import` is `import ratings`."""


alias(site_group, build_site, "build")
alias(ratings_group, import_ratings, "import")
for _old, _new in ALIASES.items():
    if " " not in _old:
        alias(cli, cli.commands[_new], _old)


def main(argv: list[str] | None = None) -> int:
    try:
        result = cli.main(args=argv, prog_name="cultureboard", standalone_mode=False)
    except CultureboardError as exc:
        click.echo(f"error: {exc.message}", err=True)
        return exc.exit_code
    except OSError as exc:  # the rule for every command: one line naming the path and the fix, no traceback
        click.echo(f"error: {os_error_line(exc)}", err=True)  # every output is atomic: none is half-written
        return 1
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return 130
    return result if isinstance(result, int) else 0  # click returns the code of an Exit it caught


if __name__ == "__main__":
    sys.exit(main())
