"""The ``cultureboard`` command line: a thin shell over the public Python functions.

Bad input is reported as one line, ``error: SOURCE: PROBLEM (fix: FIX)``, with a non-zero exit code
(1 for bad input, 2 for a usage error) and no traceback.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from . import __version__
from .errors import CultureboardError


def _csv(value: str | None) -> list[str] | None:
    """The names of a comma-separated option; [] for one that names nothing (the builder rejects it)."""
    return None if value is None else [v.strip() for v in value.split(",") if v.strip()]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="cultureboard")
def cli() -> None:
    """Benchmarks and a leaderboard for the cultural competence of text-to-image models."""


@cli.command()
@click.option("--dump", type=click.Path(dir_okay=False), help="A Wikidata JSON dump (.json, .json.gz, .json.bz2).")
@click.option("--sparql", metavar="URL", help="A SPARQL 1.1 endpoint with Wikidata's RDF vocabulary.")
@click.option("--concepts", required=True, help="Comma-separated concepts, e.g. cuisine,landmarks,art.")
@click.option("--countries", required=True, help="Comma-separated ISO 3166-1 alpha-2 codes, e.g. IT,JP.")
@click.option("--hops", default=4, show_default=True, help="Maximum hops from the concept roots (CUBE uses 4).")
@click.option("--concepts-file", type=click.Path(dir_okay=False), help="YAML file of concept roots (default: the packaged CUBE Table 8 roots).")
@click.option("--max-malformed", default=0.01, show_default=True, help="Largest fraction of malformed dump lines tolerated.")
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Output folder for artifacts.parquet and report.json.")
def artifacts(dump, sparql, concepts, countries, hops, concepts_file, max_malformed, out):
    """Extract cultural artifacts from a knowledge base (CUBE Algorithm 1)."""
    from cultureboard.builder.artifact_space import artifacts as run

    report = run(out=out, dump=dump, sparql=sparql, concepts=_csv(concepts), countries=_csv(countries), hops=hops,
                 concepts_file=concepts_file, max_malformed=max_malformed)
    click.echo(f"{report['artifacts']} artifacts written to {Path(out) / 'artifacts.parquet'}")
    if "dump" in report and report["dump"]["malformed"]:
        click.echo(f"skipped {report['dump']['malformed']} malformed dump lines (see report.json)")


@cli.command()
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
def build(out, config, dump, sparql, concepts, countries, hops, llm, llm_cache, curation, prompt_sets, seed, knowledge):
    """Build the benchmark dataset folder: artifact spaces and the prompt sets of the five families."""
    from cultureboard.builder import build as run

    provenance = run(out, config=config, dump=dump, sparql=sparql, concepts=_csv(concepts), countries=_csv(countries),
                     hops=hops, llm=llm, llm_cache=llm_cache, curation=curation, prompt_sets=_csv(prompt_sets), seed=seed,
                     knowledge=knowledge)
    _print_rows(out, provenance["rows"])


def _print_rows(out, rows: dict) -> None:
    for name, n in rows.items():
        click.echo(f"  {name:<20} {n:>6} rows")
    click.echo(f"dataset written to {out} (load with datasets.load_dataset({str(out)!r}, CONFIG))")


@cli.group(name="import")
def import_() -> None:
    """Import the official released data of a paper as a dataset folder."""


@import_.command(name="cube-1k")
@click.argument("source")
@click.option("--out", required=True, type=click.Path(file_okay=False))
def import_cube_1k(source, out):
    """CUBE-1K JSON (a path or the official URL) -> the cube-awareness config, prompts verbatim."""
    from cultureboard.builder import import_dataset

    _print_rows(out, import_dataset("cube-1k", source, out)["rows"])


@import_.command(name="cure")
@click.argument("source")
@click.option("--out", required=True, type=click.Path(file_okay=False))
def import_cure(source, out):
    """CuRe CSV folder (a path or the official base URL) -> the cure-ladder config."""
    from cultureboard.builder import import_dataset

    _print_rows(out, import_dataset("cure", source, out)["rows"])


@cli.command()
@click.option("--dataset", required=True, type=click.Path(file_okay=False), help="Dataset folder (its artifacts config).")
@click.option("--per-artifact", default=4, show_default=True, help="Images kept per artifact, at most.")
@click.option("--commons-api", default="https://commons.wikimedia.org/w/api.php", show_default=True,
              help="MediaWiki API of Wikimedia Commons.")
@click.option("--contact", envvar="CULTUREBOARD_CONTACT", help="Your URL or e-mail, sent in the User-Agent as Wikimedia "
              "asks (default: $CULTUREBOARD_CONTACT).")
@click.option("--connections", default=3, show_default=True, help="Parallel downloads (1-4).")
@click.option("--max-side", default=1024, show_default=True, help="Largest side kept; bigger originals come as Commons thumbnails.")
@click.option("--max-bytes", default=20 * 2**20, show_default=True, help="Largest file downloaded.")
def references(dataset, per_artifact, commons_api, contact, connections, max_side, max_bytes):
    """Add real photographs of each artifact from Wikimedia Commons (free licences only) as the references config."""
    from cultureboard.builder.references import MISSING_CONFIG, references as run

    report = run(dataset, contact=contact or "", per_artifact=per_artifact, commons_api=commons_api,
                 connections=connections, max_side=max_side, max_bytes=max_bytes, echo=click.echo)
    click.echo(f"{report['images']} images of {report['with_images']} of {report['artifacts']} artifacts "
               f"(downloaded {report['downloaded']}, reused {report['reused']}); {report['missing']} artifacts "
               f"without a usable image are listed in the {MISSING_CONFIG} config")


@cli.group()
def publish() -> None:
    """Publish to the Hugging Face Hub."""


@publish.command(name="dataset")
@click.argument("folder", type=click.Path(file_okay=False))
@click.option("--repo", required=True, help="Hub dataset repository, ORG/NAME.")
@click.option("--revision", help="Tag to create at the uploaded commit (e.g. v1.0).")
@click.option("--create-pr", is_flag=True, help="Open a pull request on the Hub instead of committing to main.")
def publish_dataset(folder, repo, revision, create_pr):
    """Upload a dataset folder and print the commit that submissions pin."""
    from cultureboard.builder import publish_dataset as run

    result = run(folder, repo=repo, revision=revision, create_pr=create_pr)
    click.echo(f"uploaded {folder} to {repo}: commit {result['commit']}")
    if result.get("pr_url"):
        click.echo(f"pull request: {result['pr_url']}")
    if result.get("tag"):
        click.echo(f"tagged {result['tag']}")
    click.echo(f"submissions pin: dataset_revision: {result['commit']}")


@cli.command()
@click.option("--dataset", required=True, type=click.Path(file_okay=False), help="Dataset folder of the prompt set.")
@click.option("--prompt-set", required=True, help="Prompt set to generate, e.g. cube-awareness.")
@click.option("--pipeline", required=True, help="diffusers pipeline: Hub id (ID or ID@REVISION) or local folder.")
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Submission folder: submissions/<org>__<model>[__<tag>].")
@click.option("--i2i-pipeline", help="Image-to-image or instruction-edit pipeline for I2I chains (default: derived from --pipeline).")
@click.option("--organization", default="local", show_default=True, help="Organization: first part of the folder name.")
@click.option("--model-name", help="Short model name: second part of the folder name (default: from --pipeline).")
@click.option("--tag", help="Optional variant tag: last part of the folder name.")
@click.option("--contact", default="unknown", show_default=True, help="Name and e-mail or GitHub handle.")
@click.option("--license", "license_", default="unknown", show_default=True, help="The model's licence.")
@click.option("--batch-size", default=4, show_default=True)
@click.option("--steps", type=int, help="Denoising steps (default: the pipeline's).")
@click.option("--guidance-scale", type=float, help="Guidance scale (default: the pipeline's).")
@click.option("--strength", default=0.6, show_default=True, help="img2img strength of edit steps.")
@click.option("--device", help="cuda, mps or cpu (default: the best available).")
@click.option("--dtype", help="fp16, bf16 or fp32 (default: fp16 on cuda, fp32 otherwise).")
@click.option("--limit", type=int, help="Only the first N prompts (a smoke test).")
def generate(dataset, prompt_set, pipeline, out, i2i_pipeline, organization, model_name, tag, contact, license_,
             batch_size, steps, guidance_scale, strength, device, dtype, limit):
    """Generate a complete submission with any diffusers pipeline."""
    from diffusers.utils import logging as diffusers_logging

    from cultureboard.evaluators.submission.generate import generate as run

    diffusers_logging.set_verbosity_error()

    result = run(dataset, prompt_set, pipeline, out, i2i_pipeline=i2i_pipeline, organization=organization,
                 model_name=model_name, tag=tag, contact=contact, license=license_, batch_size=batch_size, steps=steps,
                 guidance_scale=guidance_scale, strength=strength, device=device, dtype=dtype, limit=limit)
    click.echo(f"{result['images']} images in {result['out']} ({result['generated']} generated, {result['skipped']} kept "
               f"from an earlier run); check it with: cultureboard validate {result['out']} --dataset {dataset}")


@cli.command()
@click.option("--from-folder", required=True, type=click.Path(file_okay=False), help="Folder with the images, named and nested however you like.")
@click.option("--mapping", required=True, type=click.Path(dir_okay=False),
              help="CSV (header file,prompt_id,sample_idx[,edit_step,source_file,refused,reason]) or JSONL mapping each image, relative to --from-folder, to its prompt and sample (refused rows: no file).")
@click.option("--spec", required=True, type=click.Path(dir_okay=False),
              help="Partial submission.yaml: organization, contact, model.*, generation settings you know; package fills the rest.")
@click.option("--dataset", required=True, type=click.Path(file_okay=False), help="Dataset folder the images were made from.")
@click.option("--prompt-set", required=True, help="Prompt set the images answer.")
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Submission folder to write: submissions/<org>__<model>[__<tag>].")
@click.option("--seeds-ignored", is_flag=True, help="The model took no seed: record generation.extra.seed_honoured: false.")
def package(from_folder, mapping, spec, dataset, prompt_set, out, seeds_ignored):
    """Package images made elsewhere (closed APIs) as a submission."""
    from cultureboard.evaluators.submission.package import package as run

    result = run(from_folder, mapping, out, dataset=dataset, prompt_set=prompt_set, spec=spec, seed_honoured=not seeds_ignored)
    refused = result["slots"] - result["missing"] - result["images"]
    click.echo(f"{result['images']} images and {refused} declared refusals packaged into {result['out']}")
    if result["missing"]:
        first = ", ".join(f"{m['prompt_id']}#{m['sample_idx']}" for m in result["missing_slots"][:3])
        click.echo(f"{result['missing']} of {result['slots']} prompt x sample slots have no image (first: {first}); "
                   "the validator will report the submission incomplete")


@cli.command()
@click.argument("kind", type=click.Choice(["reference-photos", "text-only"]))
@click.option("--dataset", required=True, type=click.Path(file_okay=False), help="Dataset folder of the prompt set.")
@click.option("--prompt-set", required=True, help="Prompt set the control answers, e.g. cube-awareness.")
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Submission folder: submissions/control__KIND.")
@click.option("--size", default=512, show_default=True, help="Side of the square images, in pixels.")
def control(kind, dataset, prompt_set, out, size):
    """Make a control submission: the reference photographs, or the prompt's words as an image (never ranked)."""
    from cultureboard.evaluators.submission.controls import make_control

    result = make_control(kind, dataset, prompt_set, out, size=size)
    click.echo(f"{result['images']} images and {result['refused']} declared refusals written to {result['out']}")


@cli.command()
@click.argument("submission", required=False, type=click.Path())
@click.option("--dataset", type=click.Path(file_okay=False), help="Dataset folder, to check coverage and the revision.")
@click.option("--changed-files", type=click.Path(dir_okay=False), help="A pull request's changed paths (git diff --name-only), to check its scope.")
@click.option("--json", "as_json", is_flag=True, help="Print a machine-readable report (for the PR comment).")
@click.option("--full-decode", is_flag=True, help="Also decode every pixel (slow; by default the file structure and sha256 are checked).")
def validate(submission, dataset, changed_files, as_json, full_decode):
    """Report every problem of a submission; exit 0 when valid, 1 when not, 2 on usage errors."""
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
    click.echo(report.to_json() if as_json else report.to_text())
    raise click.exceptions.Exit(0 if report.valid else 1)


@cli.command()
@click.argument("submission", type=click.Path(file_okay=False))
@click.option("--dataset", required=True, type=click.Path(file_okay=False), help="Dataset folder of the prompt set.")
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Results folder (results/): writes OUT/<submission id>/.")
@click.option("--scorers", type=click.Path(dir_okay=False), help="Scorer config (YAML): point scorers at local folders or add new ones.")
@click.option("--shard", help="Score only part i of n (i/n); join the parts with `cultureboard merge-shards`.")
@click.option("--device", help="cuda, mps or cpu (default: the best available).")
@click.option("--dtype", help="float16, bfloat16 or float32 (default: float16 on cuda, float32 otherwise).")
@click.option("--cache", type=click.Path(file_okay=False), help="Embedding cache folder (default: $CULTUREBOARD_CACHE/embeddings or ~/.cache/cultureboard/embeddings).")
@click.option("--seed", default=0, show_default=True, help="Seed of the bootstrap and of any random groups a family draws.")
@click.option("--option", "options", multiple=True, metavar="KEY=VALUE",
              help="A typed option of the submission's family, e.g. --option repetitions=20 (see `cultureboard metrics`).")
def evaluate(submission, dataset, out, scorers, shard, device, dtype, cache, seed, options):
    """Score a submission: per-image scores and per-slice summaries with bootstrap CIs and provenance."""
    from cultureboard.evaluators.engine.evaluate import evaluate as run
    from cultureboard.evaluators.engine.evaluate import parse_shard

    target = run(submission, dataset, out, scorers=scorers, shard=parse_shard(shard), device=device, dtype=dtype,
                 cache=cache, seed=seed, option_overrides=options)
    click.echo(f"results written to {target}")


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print the registry as JSON.")
def metrics(as_json):
    """List every benchmark family, its prompt sets, options and metric cards (with versions)."""
    import dataclasses
    import json

    from cultureboard.evaluators.engine.registry import load_families

    families = load_families()
    listing = [{"family": f.name, "title": f.title, "papers": dict(f.papers),
                "options": [{"name": o.name, "default": o.default} for o in dataclasses.fields(f.options)],
                "prompt_sets": [{"name": s.name, "primary": f.primary(s.name), "metrics": list(s.metrics)}
                                for s in f.prompt_sets],
                "metrics": [m.to_dict() for m in f.metrics]} for _, f in sorted(families.items())]
    if as_json:
        click.echo(json.dumps(listing, indent=2, ensure_ascii=False))
        return
    for fam in listing:
        click.echo(f"{fam['family']}: {fam['title']}")
        options = ", ".join(f"{o['name']}={o['default']}" for o in fam["options"]) or "none"
        click.echo(f"  options: {options}")
        for s in fam["prompt_sets"]:
            click.echo(f"  prompt set {s['name']} (headline {s['primary']})")
        for m in fam["metrics"]:
            direction = "descriptive" if m["direction"] == "none" else f"{m['direction']} is better"
            click.echo(f"    {m['name']:<28} v{m['version']}  {direction:<16}  unit {m['unit']:<6} {m['title']}")


@cli.command(name="merge-shards")
@click.argument("results", type=click.Path(file_okay=False))
@click.argument("submission_id")
@click.option("--dataset", required=True, type=click.Path(file_okay=False), help="Dataset folder of the prompt set.")
def merge_shards(results, submission_id, dataset):
    """Join the shards of a sharded evaluation into the result an unsharded run gives."""
    from cultureboard.evaluators.engine.evaluate import merge_shards as run

    click.echo(f"results written to {run(results, submission_id, dataset)}")


@cli.group()
def ratings() -> None:
    """Human ratings (CUBE section 4)."""


@ratings.command(name="import")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--dataset", required=True, type=click.Path(file_okay=False), help="Dataset folder of the rated prompt set.")
@click.option("--prompt-set", required=True, help="The rated prompt set, e.g. cube-awareness.")
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Folder for ratings, consensus and tables.")
@click.option("--scores", type=click.Path(dir_okay=False), help="An evaluator scores.parquet: adds the validity report.")
@click.option("--submissions", type=click.Path(file_okay=False), help="Submissions folder, when ratings name images by file or sha256.")
@click.option("--study", type=click.Choice(["cube", "cure"]), default="cube", show_default=True,
              help="The study whose layout FILE is in (cure: per artifact and rater, see evaluators/results/studies/cure.py).")
@click.option("--results", type=click.Path(file_okay=False), help="cure: a results folder holding the rated submissions: adds the Spearman tables (CuRe Tables 1-3, 15).")
def ratings_import(file, dataset, prompt_set, out, scores, submissions, study, results):
    """Import ratings: consensus, CUBE Tables 3/10/11/12, and correlations with automatic scores."""
    from cultureboard.evaluators.results.ratings import import_ratings

    if study == "cure":
        from cultureboard.evaluators.results.studies.cure import import_cure_ratings

        done = import_cure_ratings(file, dataset, out, results=results, prompt_set=prompt_set)
        click.echo(f"{done['rows']} ratings of {done['artifacts']} artifacts by {done['raters']} raters written to {done['out']}")
        return
    result = import_ratings(file, dataset, prompt_set, out, scores=scores, submissions=submissions)
    click.echo(f"{result['ratings']} ratings of {result['items']} images by {result['raters']} raters written to {result['out']}")


@cli.group(name="site")
def site_group() -> None:
    """The static leaderboard site."""


@site_group.command(name="build")
@click.option("--results", required=True, type=click.Path(file_okay=False), help="Results folder (one subfolder per submission).")
@click.option("--dataset", required=True, type=click.Path(file_okay=False), help="Dataset folder (prompt texts, slices).")
@click.option("--submissions", required=True, type=click.Path(file_okay=False), help="Submissions folder (model cards, images).")
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Folder to write the site to.")
@click.option("--ratings", type=click.Path(file_okay=False), help="Output of `cultureboard ratings import`, for metric validity.")
def site_build(results, dataset, submissions, out, ratings):
    """Render the leaderboard: overview, slice, model and metric pages, plots and downloads."""
    from cultureboard.site.render import build_site

    info = build_site(results, dataset, submissions, out, ratings=ratings)
    for entry in info["skipped"]:
        click.echo(f"warning: {entry['source']}: {entry['problem']} (fix: {entry['fix']}); {entry['submission']} is "
                   "left out of the site", err=True)
    click.echo(f"site written to {out}: {info['pages']} pages, largest {info['largest_page_bytes'] / 1024:.0f} KB; "
               f"open {Path(out) / 'index.html'}")


@publish.command(name="results")
@click.argument("results", type=click.Path(file_okay=False))
@click.option("--repo", required=True, help="Hub dataset repository for results, ORG/NAME.")
@click.option("--submission", help="Check that this submission id has results and name it in the commit (every submission is uploaded, so the splits and `latest` always agree).")
def publish_results_command(results, repo, submission):
    """Upload results to a Hub dataset: one split per submission plus `latest`."""
    from cultureboard.evaluators.results.publish import publish_results

    info = publish_results(results, repo, submission=submission)
    click.echo(f"uploaded results to {repo}: commit {info['commit']}")


@cli.command(name="compare-results")
@click.argument("baseline", type=click.Path(file_okay=False))
@click.argument("new", type=click.Path(file_okay=False))
@click.option("--tolerance", default=0.02, show_default=True, help="Largest absolute change tolerated per metric x slice.")
def compare_results_command(baseline, new, tolerance):
    """Compare two results of the same submission; exit 1 when scores drifted beyond the tolerance."""
    from cultureboard.evaluators.results.drift import compare_results, format_drifts

    drifts = compare_results(baseline, new, tolerance=tolerance)
    click.echo(format_drifts(drifts))
    raise click.exceptions.Exit(1 if drifts else 0)


@cli.command(name="dump-to-rdf")
@click.argument("dump", type=click.Path(dir_okay=False))
@click.argument("out", type=click.Path(dir_okay=False))
def dump_to_rdf(dump, out):
    """Convert a Wikidata JSON dump to N-Triples (Wikidata RDF), to load into a local SPARQL server."""
    from cultureboard.builder.kb_rdf import dump_to_ntriples

    click.echo(f"{dump_to_ntriples(dump, out)} entities written to {out}")


@cli.command()
@click.option("--out", default="cultureboard-demo", show_default=True, type=click.Path(file_okay=False))
@click.option("--scorers", default="tiny", show_default=True,
              help="tiny: random-weight local stand-ins; default: the registry's real checkpoints; or a scorer config FILE.")
@click.option("--pipeline", "pipelines", multiple=True, metavar="NAME=ID_OR_PATH",
              help="Real diffusers pipelines to generate with instead of the stand-ins (repeatable).")
@click.option("--countries", help="Comma-separated ISO codes (default: IT,JP,BR,NG).")
def demo(out, scorers, pipelines, countries):
    """Run the whole pipeline offline: build, generate, validate, evaluate, site."""
    from cultureboard.demo import demo as run

    chosen = {}
    for item in pipelines:
        name, sep, ident = item.partition("=")
        if not sep or not name or not ident:
            raise CultureboardError(f"--pipeline {item}", "is not NAME=ID_OR_PATH", "e.g. --pipeline sdxl=stabilityai/stable-diffusion-xl-base-1.0", exit_code=2)
        chosen[name] = ident
    run(out, scorers=scorers, pipelines=chosen or None, countries=_csv(countries), echo=click.echo)


@cli.group()
def train() -> None:
    """Train learned metrics on human ratings."""


@train.command(name="cultdiff-s")
@click.option("--ratings", required=True, type=click.Path(dir_okay=False),
              help="Ratings in the common format: q1_1-q1_4 answers about image pairs (item_id pair:SHA:SHA) or "
                   "generated images with their prompt_id.")
@click.option("--dataset", required=True, type=click.Path(file_okay=False),
              help="Dataset folder with the references config (and the rated prompt set).")
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
@click.option("--device", help="cuda, mps or cpu (default: the best available).")
def train_cultdiff_s(ratings, dataset, out, images, init, epochs, lr, batch_size, margin, held_out, seed, device):
    """Train CultDiff-S: a twin ViT with a rating-weighted contrastive loss; writes a model folder with its card."""
    import dataclasses

    from cultureboard.device import choose_device
    from cultureboard.evaluators.families.cultdiff.train import TrainingConfig, train_cultdiff_s as run

    given = {"init": init, "epochs": epochs, "lr": lr, "batch_size": batch_size, "margin": margin,
             "held_out": held_out, "seed": seed}
    config = TrainingConfig(**{k: v for k, v in given.items() if v is not None})  # checked before torch loads
    config = dataclasses.replace(config, device=choose_device(device))
    record = run(ratings, dataset, out, images=images, config=config, echo=click.echo)
    after = record["held_out"]["after"]
    rho = "undefined" if after["spearman"] is None else f"{after['spearman']:.3f}"
    click.echo(f"model written to {out} (held-out Spearman {rho} over {after['n']} pairs; see its README.md)")


def main(argv: list[str] | None = None) -> int:
    try:
        result = cli.main(args=argv, prog_name="cultureboard", standalone_mode=False)
    except CultureboardError as exc:
        click.echo(f"error: {exc.message}", err=True)
        return exc.exit_code
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
