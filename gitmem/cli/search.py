"""CLI commands for finding memories: ``search``, ``recall``, ``reindex`` and ``model``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from gitmem.cli.app import State, cli, emit_json, json_option, pass_state
from gitmem.errors import GitmemError, ValidationError
from gitmem.text.counted import counted


def _progress(desc: str, unit: str = "mem") -> Any:
    from tqdm import tqdm

    return tqdm(desc=desc, unit=unit, file=sys.stderr, disable=None, leave=False)


def _notice(index: Any) -> None:
    if getattr(index, "notice", None):
        click.echo(f"gitmem: {index.notice}", err=True)


def _hit_json(hit: Any, explain: bool) -> dict[str, Any]:
    data = {"id": hit.id, "score": round(hit.score, 6), "snippet": hit.snippet, "memory": hit.memory.to_dict()}
    if explain:
        data["parts"] = {k: round(v, 6) for k, v in hit.parts.items()}
    return data


@cli.command()
@click.argument("query")
@click.option("-k", "--k", "k", default=10, show_default=True, type=click.IntRange(1, 1000), help="Results.")
@click.option("--type", "type_", help="Only this type.")
@click.option("--category", help="Only this category.")
@click.option("--tag", "tags", multiple=True, help="Only memories with this tag (repeatable).")
@click.option("--project", default=None, help="This project's memories plus the global ones.")
@click.option("--deprecated", is_flag=True, help="Include deprecated memories.")
@click.option("--mode", type=click.Choice(["hybrid", "bm25", "vector"]), default="hybrid", show_default=True)
@click.option("--explain", is_flag=True, help="Show the BM25, vector, importance and recency parts of each score.")
@json_option
@pass_state
def search(state: State, query: str, k: int, type_: str | None, category: str | None, tags: tuple[str, ...],
           project: str | None, deprecated: bool, mode: str, explain: bool, as_json: bool) -> None:
    """Search memories with a question or keywords (English, Chinese or both).

    Shows only memories related to the query: ones sharing a word with it, or near it in meaning by the embedding
    model's measured floor; a query nothing is about finds nothing."""
    from gitmem.search.index import open_index

    if not query.strip():
        raise ValidationError("the search query is empty", 'say what to look for, e.g. gitmem search "database"')
    repo = state.open()
    index = open_index(repo, embedder="none" if mode == "bm25" else "auto")
    hits = index.search(query, k=k, type=type_, category=category, tags=list(tags) or None, project=project,
                        include_deprecated=deprecated, mode=mode, related_only=True)
    _notice(index)
    if as_json:
        emit_json([_hit_json(h, explain) for h in hits])
        return
    if not hits:
        click.echo("no memories match", err=True)
    for rank, hit in enumerate(hits, start=1):
        memory = hit.memory
        flag = f" [replaced by {memory.superseded_by}]" if memory.superseded_by else \
            " [deprecated]" if memory.deprecated else ""
        click.echo(f"{rank:>2}. {hit.score:.3f}  {memory.id}  {memory.type}/{memory.category}{flag}")
        click.echo(f"    {hit.snippet}")
        if explain:
            click.echo("    " + "  ".join(f"{name}={value:.3f}" for name, value in hit.parts.items()))


@cli.command()
@click.option("--cwd", type=click.Path(file_okay=False, exists=True, path_type=Path),
              help="Code project (default: here).")
@click.option("--budget", type=click.IntRange(1), help="Token budget (default from config; capped at max_budget).")
@click.option("-k", "--k", "k", type=click.IntRange(1, 100), help="At most this many memories.")
@click.option("--query", help="Search for this instead of the project/branch/commit query.")
@json_option
@pass_state
def recall(state: State, cwd: Path | None, budget: int | None, k: int | None, query: str | None,
           as_json: bool) -> None:
    """Print the memories a session start in this project is given: its Essentials and Relevant memories (the
    session start adds the standing directives, the project summary, hot paths and the wiki overview; `gitmem hook
    session-start` prints all of it)."""
    from gitmem.recall import recall as run_recall

    repo = state.open()
    result = run_recall(repo, cwd=(cwd or Path.cwd()).resolve(), query=query, budget=budget, k=k)
    if result.notice:
        click.echo(f"gitmem: {result.notice}", err=True)
    if as_json:
        emit_json({"text": result.text, "tokens": result.tokens, "budget": result.budget, "query": result.query,
                   "project": result.project, "ids": result.ids, "essentials": [m.id for m in result.essentials],
                   "relevant": [h.id for h in result.hits], "more": result.more, "left_out": result.left_out,
                   "parts": [list(p) for p in result.given()[1]]})
        return
    if result.text:
        click.echo(result.text, nl=False)
        if result.more:
            from gitmem.briefing.block import left_out_hint

            click.echo(f"gitmem: {counted(result.more, 'more memory')} of this project and global ones left out; "
                       f"find them with: {left_out_hint(result.project)}", err=True)
    elif result.left_out:  # there were memories: none fit the budget
        settings = repo.config.recall
        bigger = next((n for n in (settings.budget, settings.max_budget) if n > result.budget), None)
        raise_it = f"raise it with --budget {bigger}" if bigger else \
            f"{result.budget} tokens is the cap: recall.max_budget in gitmem.toml raises it"
        click.echo(f"nothing fit the {result.budget}-token budget: {counted(result.left_out, 'memory')} for project "
                   f"{result.project} left out ({raise_it})", err=True)
    else:
        click.echo(f"no memories for project {result.project} (query: {result.query!r})", err=True)


@cli.command()
@click.option("--bm25-only", is_flag=True, help="Rebuild the text index only, no embeddings.")
@json_option
@pass_state
def reindex(state: State, bm25_only: bool, as_json: bool) -> None:
    """Rebuild the search index and embedding cache from the repository (derived state, safe to delete), then
    embed the wiki pages and writer notes that have no vector yet."""
    import time

    repo = state.open()
    index = repo.index(embedder="none" if bm25_only else "auto")  # "auto": the one embed_pages uses too
    with _progress("embedding") as bar:
        def length(n: int) -> None:
            bar.total = n
            bar.refresh()

        stats = index.rebuild(progress=bar.update, total=length)
    pages = vectors = 0
    took = 0.0
    if not bm25_only:
        with _progress("embedding wiki pages and notes", "page") as bar:
            def more(n: int) -> None:  # one call per folder
                bar.total = (bar.total or 0) + n
                bar.refresh()

            started = time.perf_counter()
            pages, vectors = repo.embed_pages(progress=bar.update, total=more)
            took = time.perf_counter() - started
    _notice(index)
    data = dict(stats if isinstance(stats, dict) else vars(stats), pages_embedded=pages, page_vectors_embedded=vectors)
    if as_json:
        emit_json(data)
    else:
        line = f"reindexed {counted(stats.indexed, 'memory')} in {stats.seconds:.1f} s"
        if bm25_only:
            line += " (BM25 only, as asked)"
        elif index.embedder is None:
            line += " (BM25 only: no embedding model; gitmem model status says why)"
        elif not stats.embedded:
            line += " (every vector was cached: nothing to embed)"
        click.echo(line)
        for problem in stats.unreadable[:3]:
            click.echo(f"skipped an unreadable file: {problem}", err=True)
        if len(stats.unreadable) > 3:
            rest = counted(len(stats.unreadable) - 3, "more unreadable file")
            click.echo(f"skipped {rest}: gitmem doctor lists them", err=True)
        if stats.embedded and stats.embed_seconds > 0:
            click.echo(f"embedded {counted(stats.embedded, 'memory')} in {stats.embed_seconds:.1f} s "
                       f"({stats.embedded / stats.embed_seconds:.1f} memories/s)")
        if pages and took > 0:
            click.echo(f"embedded {counted(pages, 'page')} of the wiki and writer notes "
                       f"({counted(vectors, 'vector')}, chunks included) in {took:.1f} s ({pages / took:.1f} pages/s)")


# -- models ---------------------------------------------------------------------------------------------
def _models_dir(state: State) -> Path:
    return Path(state.config.embedding.models_dir).expanduser()


def embed_spec(state: State) -> Any:
    """The embedding model the configuration asks for, as :func:`gitmem.embeddings.runtime.load_embedder` takes it."""
    from gitmem.embeddings.runtime import EmbedSpec

    cfg = state.config.embedding
    return EmbedSpec(model=cfg.model, path=Path(cfg.path).expanduser() if cfg.path else None,
                     dim=cfg.dim or None, models_dir=_models_dir(state))


def reading_issues(state: State, repo: Any) -> list[Any]:
    """``gitmem doctor``'s warning when the model in use does not read a tenth or more of the active memories
    (Chinese ones for the packaged English model), naming one that does; none without a model."""
    from gitmem.embeddings.catalogue import UNREAD_WARN_SHARE
    from gitmem.embeddings.runtime import EmbeddingError, load_embedder
    from gitmem.store.layout import Issue

    try:
        embedder = load_embedder(embed_spec(state))
    except EmbeddingError:
        return []  # `gitmem model status` says why
    if embedder is None:
        return []
    count, missed, note = _read_by(embedder, repo)
    if not count or missed < UNREAD_WARN_SHARE * count:
        return []
    return [Issue("warning", f"embedding model {embedder.model_id}", note)]


def _read_by(embedder: Any, repo: Any) -> tuple[int, int, str]:
    """(active memories, those ``embedder`` does not read, the line that says so or "")."""
    from gitmem.embeddings.catalogue import reading

    texts = [m.text for m in repo.list()]
    missed, note = reading(tuple(getattr(embedder, "scripts", ())), texts)
    return len(texts), missed, note


def _info_json(info: Any) -> dict[str, Any]:
    return {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(info).items()}


@cli.group()
def model() -> None:
    """Embedding models: what is installed, what is in use, install nomic-embed-text."""


@model.command("list")
@json_option
@pass_state
def model_list(state: State, as_json: bool) -> None:
    """Installed, packaged and installable models."""
    from gitmem.embeddings.catalogue import list_models

    infos = list_models(_models_dir(state))
    if as_json:
        emit_json([_info_json(i) for i in infos])
        return
    for info in infos:
        extra = f"  dim {info.dim}" if info.dim else ""
        problem = f"  ({info.problem})" if info.problem else ""
        click.echo(f"{info.name:28} {info.kind:9} {info.state:13}{extra}{problem}")


@model.command("status")
@json_option
@pass_state
def model_status(state: State, as_json: bool) -> None:
    """The model recall uses now (from the configuration), or why there is none."""
    from gitmem.embeddings.runtime import EmbeddingError, load_embedder

    cfg = state.config.embedding
    try:
        embedder = load_embedder(embed_spec(state))
        int8 = getattr(embedder, "int8_activations", None)
        data = {"configured": cfg.model, "path": cfg.path, "in_use": embedder.model_id if embedder else None,
                "dim": embedder.dim if embedder else None,
                "activations": None if int8 is None else "int8" if int8 else "float32",
                "note": "" if embedder else "no embedding model: search uses BM25 only"}
        if embedder is not None:
            data.update(_reading(state, embedder))
    except EmbeddingError as exc:
        data = {"configured": cfg.model, "path": cfg.path, "in_use": None, "dim": None, "activations": None,
                "note": f"{exc}; search falls back to BM25"}
    if as_json:
        emit_json(data)
        return
    click.echo(f"configured: {data['configured']}" + (f" ({data['path']})" if data["path"] else ""))
    click.echo(f"in use:     {data['in_use'] or 'none'}" + (f" (dim {data['dim']})" if data["dim"] else ""))
    if data["activations"]:
        click.echo(f"runs with:  {data['activations']} activations")
    if data.get("memories"):
        click.echo(f"reads:      {data['memories'] - data['not_read']} of {counted(data['memories'], 'active memory')}")
    if data["note"]:
        click.echo(f"note:       {data['note']}")


def _reading(state: State, embedder: Any) -> dict[str, Any]:
    """``memories`` (active), ``not_read`` (those the model does not read) and a ``note`` when there are any; none
    of them when there is no memory repository (a status never creates one)."""
    from gitmem.store.base import is_memory_repo

    if not is_memory_repo(state.config.repo):
        return {}
    count, missed, note = _read_by(embedder, state.open())
    return {"memories": count, "not_read": missed, **({"note": note} if note else {})}


@model.command("install")
@click.argument("name")
@click.option("--from", "from_path", type=click.Path(exists=True, path_type=Path),
              help="Install from files already on disk instead of downloading.")
@click.option("--checksums", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="A sha256sum file the downloaded or copied files must match.")
@click.option("--variant", help="Model variant (e.g. a quantised export).")
@pass_state
def model_install(state: State, name: str, from_path: Path | None, checksums: Path | None,
                  variant: str | None) -> None:
    """Install an embedding model (checksums verified) under the models directory."""
    from gitmem.embeddings.install import install_model

    with _progress(f"install {name}") as bar:
        def progress(file: str, done: int, total: int | None) -> None:
            bar.set_description(f"install {name}: {file}")
            if total and bar.total != total:
                bar.total = total
                bar.unit = "B"
            bar.n = done
            bar.refresh()

        info = install_model(name, _models_dir(state), from_path=from_path, progress=progress,
                             variant=variant, checksums=checksums)
    click.echo(f"installed {info.name} at {info.path}" + (f" (dim {info.dim})" if info.dim else ""))
    click.echo(f"use it with: [embedding] model = \"{info.name}\" in {Path('~/.config/gitmem/config.toml')}"
               " (model = \"auto\" already prefers installed models)")


@model.command("remove")
@click.argument("name")
@pass_state
def model_remove(state: State, name: str) -> None:
    """Delete an installed model."""
    from gitmem.embeddings.install import remove_model

    if not remove_model(name, _models_dir(state)):
        from gitmem.embeddings.runtime import PACKAGED_DEFAULT

        if name == PACKAGED_DEFAULT:
            raise GitmemError(f"model {name!r} is packaged with gitmem and cannot be removed",
                              "only installed models can; see: gitmem model list")
        raise GitmemError(f"model {name!r} is not installed", "see: gitmem model list")
    click.echo(f"removed {name}")
