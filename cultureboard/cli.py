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
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


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
def build(out, config, dump, sparql, concepts, countries, hops, llm, llm_cache, curation, prompt_sets, seed):
    """Build the benchmark dataset folder: artifact spaces and the prompt sets of the five families."""
    from cultureboard.builder import build as run

    provenance = run(out, config=config, dump=dump, sparql=sparql, concepts=_csv(concepts), countries=_csv(countries),
                     hops=hops, llm=llm, llm_cache=llm_cache, curation=curation, prompt_sets=_csv(prompt_sets), seed=seed)
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


@cli.command(name="dump-to-rdf")
@click.argument("dump", type=click.Path(dir_okay=False))
@click.argument("out", type=click.Path(dir_okay=False))
def dump_to_rdf(dump, out):
    """Convert a Wikidata JSON dump to N-Triples (Wikidata RDF), to load into a local SPARQL server."""
    from cultureboard.builder.kb_rdf import dump_to_ntriples

    click.echo(f"{dump_to_ntriples(dump, out)} entities written to {out}")


@cli.command()
@click.option("--out", default="cultureboard-demo", show_default=True, type=click.Path(file_okay=False))
def demo(out):
    """Run the pipeline offline on the shipped sample (today: the builder; later stages follow)."""
    from cultureboard.builder import build as run

    dataset = Path(out) / "dataset"
    provenance = run(dataset)
    _print_rows(dataset, provenance["rows"])
    click.echo(
        f"demo: built the benchmark dataset from the shipped sample Wikidata dump into {dataset} "
        "(LLM stage skipped: --llm none). Generation, evaluation and the site are not part of the demo yet."
    )


def main(argv: list[str] | None = None) -> int:
    try:
        cli.main(args=argv, prog_name="cultureboard", standalone_mode=False)
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
