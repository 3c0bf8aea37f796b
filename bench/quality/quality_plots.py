"""PNG plots of the quality results (matplotlib, the optional `bench` extra); None when it is missing."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def _sweep_lines(ax: Any, sweep: list[dict[str, float]], label: str, style: str = "-") -> None:
    t = [r["threshold"] for r in sweep]
    ax.plot(t, [r["precision"] for r in sweep], style, color="tab:blue", label=f"precision {label}")
    ax.plot(t, [r["recall"] for r in sweep], style, color="tab:orange", label=f"recall {label}")
    ax.plot(t, [r["f1"] for r in sweep], style, color="tab:green", label=f"F1 {label}")


def _decay_sweep_plot(plt: Any, sweep: list[dict[str, Any]], choice: dict[str, Any]) -> Any:
    """Replay recall@k (main categories) and the share of facts deprecated against the decay rate."""
    fig, ax = plt.subplots(figsize=(9.5, 3.8))
    rates = [r["decay_rate"] for r in sweep]
    for k, color in ((10, "tab:blue"), (5, "tab:orange"), (1, "tab:green")):
        ax.plot(rates, [r[f"recall_main_at_{k}"] for r in sweep], "o-", color=color, label=f"recall@{k} (main)")
    if choice.get("best_recall_at_10") is not None:
        ax.axhline(choice["best_recall_at_10"] - choice["tolerance"], color="tab:blue", ls=":", lw=0.8,
                   label="best recall@10 - tolerance")
        ax.axvline(choice["preferred_rate"], color="red", ls=":", label="preferred rate")
    ax.axvline(choice["default_rate"], color="black", ls="--", lw=0.8, label="configured decay_rate")
    ax.set_xlabel("decay_rate (per day)")
    ax.set_ylabel("evidence recall@k")
    ax.set_title("LoCoMo nightly replay: decay rate sweep")
    ax.grid(alpha=0.3)
    share = ax.twinx()
    share.plot(rates, [r["deprecated"] / r["facts"] if r["facts"] else 0.0 for r in sweep], "s--", color="gray",
               label="share of facts deprecated")
    share.set_ylabel("share deprecated")
    share.set_ylim(0, 1)
    handles = ax.get_legend_handles_labels()
    extra = share.get_legend_handles_labels()
    ax.legend(handles[0] + extra[0], handles[1] + extra[1], fontsize=7, loc="upper left", bbox_to_anchor=(1.1, 1.0))
    return fig


def write_plots(result: dict[str, Any], out: Path) -> dict[str, str]:
    """Write one PNG per evaluation into `out`; returns {evaluation: file name} (empty without matplotlib)."""
    plt = _pyplot()
    if plt is None:
        return {}
    files: dict[str, str] = {}

    def save(fig: Any, name: str, key: str) -> None:
        fig.tight_layout()
        fig.savefig(out / name, dpi=90)
        plt.close(fig)
        files[key] = name

    if "retrieval" in result:
        r = result["retrieval"]["recall_curves"]
        cats = ["multi-hop", "temporal", "single-hop", "open-domain", "adversarial"]
        fig, axes = plt.subplots(1, len(cats), figsize=(18, 3.6), sharey=True)
        for ax, cat in zip(axes, cats, strict=True):
            series = dict(r)
            if result["retrieval"].get("nightly"):
                series["facts, nightly replay"] = result["retrieval"]["nightly"]["recall_curves"]
            for method, curves in series.items():
                if curves.get(cat):
                    ax.plot(range(1, len(curves[cat]) + 1), curves[cat], marker=".", label=method)
            ax.set_title(f"LoCoMo {cat}")
            ax.set_xlabel("k")
            ax.grid(alpha=0.3)
        axes[0].set_ylabel("evidence recall@k")
        axes[0].legend(fontsize=8)
        save(fig, "quality_retrieval.png", "retrieval")
        n = result["retrieval"].get("nightly")
        fig, axes = plt.subplots(1, 2 if n else 1, figsize=(12 if n else 6, 3.6), squeeze=False)
        bins = [i / 20 for i in range(21)]
        floor = result["settings"]["deprecate_below"]
        ax = axes[0][0]
        ax.hist(result["retrieval"]["confidence_after_extract"], bins=bins, alpha=0.6, label="after extract (new facts)")
        ax.hist(result["retrieval"]["confidence_after_run"], bins=bins, alpha=0.6, label="after the run (all statuses)")
        ax.set_title("LoCoMo, one run over all sessions")
        if n:
            ax2 = axes[0][1]
            ax2.hist(n["confidence_at_creation"], bins=bins, alpha=0.6, label="at creation (each night)")
            ax2.hist(n["confidence_active_at_end"], bins=bins, alpha=0.6, label="active facts, effective at the end")
            ax2.set_title(f"LoCoMo nightly replay ({n['runs']} runs)")
        for a in axes[0]:
            a.axvline(floor, color="red", ls=":", label="deprecate_below")
            a.set_xlabel("fact confidence")
            a.set_ylabel("facts")
            a.legend(fontsize=8)
        save(fig, "quality_confidence.png", "confidence")
        sweep = result["retrieval"].get("nightly_decay_sweep") or []
        if len(sweep) > 1:
            fig = _decay_sweep_plot(plt, sweep, result["retrieval"]["nightly_decay_choice"])
            save(fig, "quality_decay_sweep.png", "decay_sweep")
    if "dedupe" in result:
        d = result["dedupe"]
        fig, axes = plt.subplots(1, 3, figsize=(16, 3.8))
        for ax, key in zip(axes[:2], ("msrp", "sick"), strict=True):
            _sweep_lines(ax, d[key]["sweep_train"], "train", "--")
            _sweep_lines(ax, d[key]["sweep_dev"], "dev", "-")
            ax.axvline(d[key]["default_threshold"], color="black", ls=":", label="default")
            ax.axvline(d[key]["chosen_threshold_on_train"], color="red", ls=":", label="F1-best on train")
            ax.set_title(f"merge rule on {d[key]['source']}")
            ax.set_xlabel("merge_threshold (cosine)")
            ax.grid(alpha=0.3)
        axes[0].legend(fontsize=7)
        curve = d["sick"].get("contradiction_merge_curve_dev", [])
        axes[2].plot([c["threshold"] for c in curve], [c["merged"] for c in curve], label="merged (rule)")
        axes[2].plot([c["threshold"] for c in curve], [c["above_cosine"] for c in curve], "--", label="above cosine only")
        axes[2].axvline(d["sick"]["default_threshold"], color="black", ls=":")
        axes[2].set_title("SICK trial CONTRADICTION pairs merged")
        axes[2].set_xlabel("merge_threshold (cosine)")
        axes[2].legend(fontsize=8)
        axes[2].grid(alpha=0.3)
        save(fig, "quality_dedupe.png", "dedupe")
    if "contradiction" in result:
        c = result["contradiction"]
        al = c.get("conversation_alarms")
        fig, axes = plt.subplots(1, 4 if al else 3, figsize=(21 if al else 16, 3.8))
        for ax in axes[1:3]:
            ax.sharey(axes[0])
        panels = (("SICK train (tuning)", c["sick_train"]["sweep"]), ("SICK trial", c["sick_dev"]["sweep"]),
                  ("MNLI dev-matched binary", c["mnli"]["sweep"]))
        for ax, (title, sweep) in zip(axes[:3], panels, strict=True):
            sweep = [r for r in sweep if r["threshold"] >= 0]
            _sweep_lines(ax, sweep, "")
            ax.axvline(c["default_threshold"], color="black", ls=":", label="contradiction_threshold")
            ax.axvline(c["support_threshold"], color="gray", ls=":", label="support_threshold")
            ax.set_title(title)
            ax.set_xlabel("cosine threshold (rule must also fire)")
            ax.grid(alpha=0.3)
        axes[0].legend(fontsize=7)
        if al:  # the cost side of a low threshold: false alarms between the turns of one conversation
            ax = axes[3]
            ts = sorted(float(t) for t in al["alarms_per_1000_turns"])
            ax.plot(ts, [max(al["alarms_per_1000_turns"][f"{t:.2f}"], 0.1) for t in ts], color="crimson",
                    label="alarms per 1,000 turns (0 drawn at 0.1)")
            ax.axhline(al["budget_per_1000_turns"], color="crimson", ls=":", label="false-alarm budget")
            ax.axvline(c["default_threshold"], color="black", ls=":", label="contradiction_threshold")
            ax.set_yscale("log")
            ax.set_title(f"LoCoMo turn pairs ({al['conversations']} conversations)")
            ax.set_xlabel("cosine threshold (rule must also fire)")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
        save(fig, "quality_contradiction.png", "contradiction")
    if "knowledge_update" in result:
        k = result["knowledge_update"]
        systems = [s for s in ("baseline_bm25", "episodes", "facts") if s in k]
        metrics_ = ("latest_at_1", "stale_at_1", "as_of_at_1")
        fig, ax = plt.subplots(figsize=(7, 3.6))
        width = 0.8 / len(systems)
        for n, s in enumerate(systems):
            ax.bar([i + n * width for i in range(len(metrics_))], [k[s][m] for m in metrics_], width, label=s)
        ax.set_xticks([i + width * (len(systems) - 1) / 2 for i in range(len(metrics_))], metrics_)
        ax.set_ylim(0, 1.15)
        ax.set_title("SituatedQA knowledge updates: top-1 answer")
        ax.legend(fontsize=8, loc="upper center", ncol=3)
        save(fig, "quality_knowledge_update.png", "knowledge_update")
    if "extraction" in result:
        fig, axes = plt.subplots(1, 2, figsize=(12, 3.6), sharey=True)
        for ax, key in zip(axes, ("spc", "locomo"), strict=True):
            e = result["extraction"].get(key)
            if not e:
                continue
            for name, sweep, style in (("engram", e["sweep"], "-"), ("every turn", e["baseline_sweep"], "--")):
                t = [r["threshold"] for r in sweep]
                ax.plot(t, [r["precision"] for r in sweep], style, color="tab:blue", label=f"precision {name}")
                ax.plot(t, [r["recall"] for r in sweep], style, color="tab:orange", label=f"recall {name}")
            ax.axvline(e["match_threshold"], color="black", ls=":")
            ax.set_title(f"extraction vs gold ({key})")
            ax.set_xlabel("match cosine threshold")
            ax.grid(alpha=0.3)
        axes[0].legend(fontsize=7)
        save(fig, "quality_extraction.png", "extraction")
    return files
