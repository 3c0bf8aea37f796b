"""`engram eval`: the quality evaluation on real data (bench/quality.py), as a CLI command."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from engram.terminal_text import echo


def register(app: typer.Typer) -> None:
    """Add the `eval` command."""

    @app.command("eval")
    def eval_(
        data: Annotated[Path | None, typer.Option(help="Root of the evaluation data (default ../shared/data).")] = None,
        out: Annotated[Path | None, typer.Option(help="Directory for QUALITY.md, quality.json, plots.")] = None,
        quick: Annotated[bool, typer.Option("--quick", help="Small samples (smoke runs).")] = False,
        only: Annotated[list[str] | None, typer.Option(help="Run only these evaluations (repeatable).")] = None,
        embedder: Annotated[str, typer.Option(help="minilm or hash.")] = "minilm",
        llm: Annotated[str, typer.Option(help="LLM of the nightly stages: none, fake or gemini.")] = "none",
        as_json: Annotated[bool, typer.Option("--json")] = False,
    ) -> None:
        """Run retrieval, dedupe, contradiction, knowledge-update and extraction evaluations; write the report."""
        import time

        from engram.cli import emit, fail
        from engram.errors import EngramError, InvalidInput

        try:
            from bench import quality
            from bench.quality_report import headline
        except ImportError as exc:  # an install without the bench package (sdist of engram only)
            fail(InvalidInput(f"eval: the bench package is not importable ({exc})"))
            return
        chosen = tuple(only or quality.EVALUATIONS)
        unknown = [x for x in chosen if x not in quality.EVALUATIONS]
        if unknown or embedder not in ("minilm", "hash"):
            fail(InvalidInput(f"only: unknown {unknown}; choose from {list(quality.EVALUATIONS)}" if unknown
                              else f"embedder: expected minilm or hash, got {embedder!r}"))
        if llm not in ("none", "fake", "gemini"):
            fail(InvalidInput(f"llm: expected none, fake or gemini, got {llm!r}"))
        started = time.perf_counter()
        paths = quality.resolve_paths(data or quality.DEFAULT_DATA, {})
        try:
            result = quality.run(paths, quality.QUICK if quick else quality.FULL, embedder, True, chosen,
                                 progress=(lambda _m: None) if as_json else echo, llm=llm)
        except EngramError as exc:
            fail(exc)
            return
        result["command"] = ("engram eval" + (" --quick" if quick else "") + (f" --data {data}" if data else "")
                             + (f" --llm {llm}" if llm != "none" else ""))
        files = quality.write(result, out or Path(quality.__file__).resolve().parent, quick, started)
        summary = {"report": str(files["report"]), "json": str(files["json"]), "wall_s": result["wall_s"],
                   **headline(result)}
        if as_json:
            emit(summary, True)
        else:
            echo(f"wrote {files['report']} ({result['wall_s']:.0f} s)")
            for key, value in headline(result).items():
                echo(f"{key}: {value}")
