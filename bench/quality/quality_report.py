"""Markdown rendering of the quality results (bench/quality/QUALITY.md): numbers, baselines, threshold verdicts."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

CATS = ("multi-hop", "temporal", "single-hop", "open-domain", "adversarial")


def _f(x: Any, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{x:.{digits}f}" if isinstance(x, float) else str(x)


def _ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}" if a is not None and b else "n/a"


def _prf_row(name: str, r: dict[str, Any] | None, extra: str = "") -> str:
    if r is None:
        return f"| {name} | n/a | n/a | n/a |{extra}"
    return f"| {name} | {_f(r['precision'])} | {_f(r['recall'])} | {_f(r['f1'])} |{extra}"


def render(res: dict[str, Any]) -> str:
    """The whole report."""
    m, s = res["machine"], res["settings"]
    lines = [
        "# engram quality on real data (bench/quality/quality.py)", "",
        f"- date: {res['date']}; machine: {m['platform']}, {m['cores']} cores, Python {m['python']}; "
        f"load average at the end {m['load_average_end']} (cores shared with other work)",
        f"- command: `{res.get('command', 'python -m bench.quality.quality')}`; wall time {res['wall_s']:.0f} s "
        f"({', '.join(f'{k} {v:.0f} s' for k, v in res['timings'].items())}); " + _llm_line(res.get("llm", "none")),
        f"- embedder: {res['embedder']}; {res['embedding']['texts_embedded']} texts computed by the embedder in "
        f"{res['embedding']['embed_s']:.0f} s (the rest read from the cache in the system temp dir, never the repository; "
        f"cache {'on' if res['embedding']['cache_dir'] else 'off (cold run)'})",
        "- settings under test: " + ", ".join(f"{k} {v}" for k, v in s.items()),
        "- data: " + ", ".join(f"{k} `{p.split('/data/')[-1]}`" for k, p in res["paths"].items()),
        "- rule: every threshold the report *chooses* is chosen on a train split (MSRP train, SICK train) or on the "
        "LoCoMo development conversations (contradiction false alarms, decay replay) and reported on the held-out "
        "splits (MSRP val, SICK trial, MNLI dev); nothing is tuned on a test split",
        "",
    ]
    if res["quick"]:
        lines += ["> **--quick run**: small samples; numbers are noisy and only show the command works.", ""]
    for section in (_retrieval, _dedupe, _contradiction, _knowledge, _extraction, _beam, _verdicts):
        lines += section(res)
    if res.get("plots"):
        lines += ["## Plots", ""] + [f"![{k}]({v})" for k, v in res["plots"].items()] + [""]
    else:
        lines += ["Plots were not written: install the `bench` extra (matplotlib).", ""]
    return "\n".join(lines) + "\n"


def _llm_line(llm: str) -> str:
    if llm == "none":
        return "no LLM (the nightly stages run extractive, as with `llm = none`)"
    if llm.startswith("fake"):
        return ("LLM: the deterministic fake (`--llm fake`): extraction and review decisions come from fixed rules, "
                "so the numbers show the LLM path runs end to end, not what a real model would do")
    return f"LLM: {llm} for extraction and review decisions"


def _retrieval(res: dict[str, Any]) -> list[str]:
    r = res.get("retrieval")
    if not r:
        return []
    c = r["recall_curves"]
    lines = [
        "## 1. Retrieval (LoCoMo evidence recall@k)", "",
        f"{r['conversations']} conversations (one tenant each), {r['turns']} turns, {r['questions']} questions "
        f"({', '.join(f'{k} {v}' for k, v in r['per_category'].items())}). Metric: share of a question's evidence "
        "turns in the top k. *episodes* = hybrid search before consolidation; *facts* = hybrid search over facts "
        "after the nightly stages, a fact covering the turns in its provenance (extracted_from, supports); "
        "*both* = facts and episodes together; *baseline-bm25* = BM25 over \"speaker: text\" (bench/quality/locomo.py).", "",
        "| method | k | " + " | ".join(CATS) + " | main (1, 2, 4) |", "|---|---|" + "---|" * (len(CATS) + 1),
    ]
    rows = [(m, cv, r["recall_main_categories"][m]) for m, cv in c.items()]
    if r.get("nightly"):
        rows.append(("facts, nightly replay", r["nightly"]["recall_curves"], r["nightly"]["recall_main_categories"]))
    for method, curves, main in rows:
        for k in (1, 5, 10):
            vals = [_f(curves[cat][k - 1]) if curves.get(cat) else "n/a" for cat in CATS]
            lines.append(f"| {method} | {k} | " + " | ".join(vals) + f" | {_f(main[k - 1]) if main else 'n/a'} |")
    ep, fa, bo, bm = (r["recall_main_categories"][x] for x in ("episodes", "facts", "both", "baseline-bm25"))
    f = r["facts"]
    lines += [
        "",
        f"**Loss of consolidation** (main categories, recall@10): facts {_f(fa[9])} vs episodes {_f(ep[9])}: "
        f"**{100 * (fa[9] - ep[9]):+.1f} points** (ratio {_ratio(fa[9], ep[9])}); facts and episodes together "
        f"{_f(bo[9])}: {100 * (bo[9] - ep[9]):+.1f} points. At k=1: facts {100 * (fa[0] - ep[0]):+.1f} points. "
        f"Episodes against the BM25 baseline at k=10: {100 * (ep[9] - bm[9]):+.1f} points (ratio {_ratio(ep[9], bm[9])}).",
        "",
        f"Why: the run keeps {f['active']} active facts for {r['turns']} turns; their provenance "
        f"covers {f['turns_covered_by_active_facts']} turns ({100 * f['turn_coverage']:.0f}%): offline, a turn becomes "
        "a fact when it states something on its own, or when it answers the question the turn before it asked "
        "(then one fact holds both); filler, and questions no one answered, do not, so they are reachable only "
        f"as episodes. A fact rests on "
        f"{f['mean_sources_per_active_fact']:.1f} turns on average; fact statuses after the run: {f['statuses']}.",
        "",
    ]
    if n := r.get("nightly"):
        nm = n["recall_main_categories"]
        active = n["confidence_active_at_end"]
        lines += [
            f"**Nightly replay** (*facts, nightly replay*): the same conversations consolidated as production would, "
            f"one run the night after each session ({n['runs']} runs), searched as of the day after the last session. "
            f"Fact statuses at the end: {n['statuses']}: {n['statuses'].get('deprecated', 0)} of "
            f"{sum(n['statuses'].values())} facts were deprecated by decay between sessions; the {len(active)} still "
            f"active have effective confidence median {_f(_median(active))}. Recall@10 (main) "
            f"{_f(nm[9] if nm else None)}: {100 * ((nm[9] if nm else 0) - ep[9]):+.1f} points against episodes, "
            f"{100 * ((nm[9] if nm else 0) - fa[9]):+.1f} against the single run. With decay rate "
            f"{res['settings']['decay_rate']}/day a new fact at initial_confidence "
            f"{res['settings']['initial_confidence']} falls below deprecate_below {res['settings']['deprecate_below']} "
            f"after {_days_to_floor(res['settings']):.0f} days without reinforcement; decay "
            "runs between sessions weeks or months apart, so facts a later session does not reinforce fade.",
            "",
        ]
    lines += _decay_sweep(res)
    a = r["abstention"]
    if "roc_auc_episodes" in a:
        lines += [
            f"**Adversarial questions as an abstention test** ({a['adversarial']} adversarial vs {a['answerable']} "
            "others): can a low top-hit cosine flag a question the memory cannot answer? ROC-AUC of -top cosine: "
            f"episodes {_f(a['roc_auc_episodes'])}, facts {_f(a['roc_auc_facts'])}; BM25 top score (baseline) "
            f"{_f(a['roc_auc_baseline-bm25'])}. Mean top cosine adversarial / answerable: episodes "
            f"{_f(a['mean_top_episodes_adversarial'])} / {_f(a['mean_top_episodes_answerable'])}. 0.5 = no signal. "
            "LoCoMo builds its adversarial questions from things the conversation does mention, with the speaker or "
            "a detail swapped, so the evidence is as similar as for an answerable question: a similarity floor "
            "cannot flag them, and the search has no low-support flag of its own. Abstention has to come from "
            "the grounded-answer check (`ask`), which this offline run does not exercise.", "",
        ]
    return lines


def _decay_sweep(res: dict[str, Any]) -> list[str]:
    """The nightly replay repeated per decay rate: recall, deprecations, confidence left at the end."""
    r = res["retrieval"]
    sweep, choice = r.get("nightly_decay_sweep"), r.get("nightly_decay_choice") or {}
    if not sweep:
        return []
    s = res["settings"]
    plot = (res.get("plots") or {}).get("decay_sweep")
    lines = [
        "### Decay rate sweep (nightly replay)", "",
        f"The nightly replay repeated with each decay_rate (per day; deprecate_below {s['deprecate_below']}, every "
        "other setting as above). Recall is over the main categories (1, 2, 4); *days to floor* is how long a new "
        f"unreinforced fact (initial_confidence {s['initial_confidence']}) stays above deprecate_below; the "
        "confidence column is the median effective confidence of the facts still active at the end"
        + (f"; curve in `{plot}`." if plot else "."), "",
        "| decay_rate | days to floor | recall@1 | recall@5 | recall@10 | facts | deprecated | active | "
        "median confidence (active) | replay s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in sweep:
        rate = row["decay_rate"]
        tags = [t for t, hit in (("configured", rate == choice.get("default_rate")),
                                 ("best", rate == choice.get("best_rate")),
                                 ("preferred", rate == choice.get("preferred_rate"))) if hit]
        days = _days_to_floor({**s, "decay_rate": rate})
        label = f"{rate} ({', '.join(tags)})" if tags else str(rate)
        lines.append(
            f"| {label} | {'never' if math.isinf(days) else f'{days:.0f}'} | "
            f"{_f(row['recall_main_at_1'])} | {_f(row['recall_main_at_5'])} | {_f(row['recall_main_at_10'])} | "
            f"{row['facts']} | {row['deprecated']} | {row['active']} | "
            f"{_f(row['median_effective_confidence_active'])} | {row['replay_s']:.0f} |")
    lines += ["", f"*preferred* = the largest rate whose recall@10 is within {100 * choice.get('tolerance', 0):.1f} "
              "points of the best (a memory should still forget facts that are never reinforced).", ""]
    return lines


def _decay_verdict(res: dict[str, Any]) -> str | None:
    """The decay_rate bullet of the verdicts, read from the sweep (or the single replay when there is no sweep)."""
    r = res.get("retrieval") or {}
    n, sweep, choice = r.get("nightly"), r.get("nightly_decay_sweep") or [], r.get("nightly_decay_choice") or {}
    if not n:
        return None
    s = res["settings"]
    dep, total = n["statuses"].get("deprecated", 0), sum(n["statuses"].values())
    nm = n["recall_main_categories"]
    head = (f"- **decay_rate {s['decay_rate']} with deprecate_below {s['deprecate_below']}**: an unreinforced fact "
            f"stays above the floor for {_fmt_days(_days_to_floor(s))} after its last evidence. In the LoCoMo nightly "
            f"replay that removed {dep} of {total} facts within the conversations' own span, and fact recall@10 "
            "(main) was "
            f"{_f(nm[9] if nm else None)} against {_f(r['recall_main_categories']['facts'][9])} for one run over all "
            f"sessions. {100 * (n.get('evidence_in_first_half_of_sessions') or 0):.0f}% of the questions' evidence "
            "lies in the first half of a conversation's sessions: old facts are asked about. ")
    if len(sweep) < 2 or choice.get("best_rate") is None:
        return head + ("This run replayed only the configured rate, so it cannot say which rate is better: run "
                       "without --quick (or with --decay-rates) for the sweep.")
    by_rate = {row["decay_rate"]: row for row in sweep}
    best, pref, default = choice["best_rate"], choice["preferred_rate"], choice["default_rate"]
    tol = 100 * choice["tolerance"]
    text = (f"Swept over {', '.join(str(x) for x in by_rate)}/day, replay recall@10 (main) is highest at "
            f"**{best}** ({_f(choice['best_recall_at_10'])}, {by_rate[best]['deprecated']} facts deprecated); the "
            f"largest rate within {tol:.1f} points of it is **{pref}** ({_f(choice['preferred_recall_at_10'])}, "
            f"{by_rate[pref]['deprecated']} deprecated, a new fact lasts "
            f"{_fmt_days(_days_to_floor({**s, 'decay_rate': pref}))} unreinforced). ")
    positive = [row for row in sweep if row["decay_rate"] > 0 and row["recall_main_at_10"] is not None]
    if pref == 0 and positive:
        # the rule keeps everything forever; say what the gentlest forgetting in the sweep costs
        low = min(positive, key=lambda row: row["decay_rate"])
        text += (f"No positive rate is within {tol:.1f} points: the smallest swept, {low['decay_rate']} (a new fact "
                 f"lasts {_fmt_days(_days_to_floor({**s, 'decay_rate': low['decay_rate']}))} unreinforced), costs "
                 f"{100 * (choice['best_recall_at_10'] - low['recall_main_at_10']):.1f} points. ")
    if choice["default_recall_at_10"] is None:
        return head + text
    gap = 100 * (choice["best_recall_at_10"] - choice["default_recall_at_10"])
    if default == pref:
        text += (f"The configured rate is that rate ({gap:.1f} points below the best): the data supports keeping "
                 f"decay_rate {default}.")
    elif default > pref:
        text += (f"The configured rate {default} loses {gap:.1f} points of recall@10 against the best: the data "
                 f"supports lowering decay_rate to {pref}.")
    else:
        text += (f"The configured rate {default} is {gap:.1f} points below the best and forgets less than {pref}, "
                 f"which costs no more than {tol:.1f} points: the data supports raising decay_rate to {pref}.")
    return head + text


def _fmt_days(days: float) -> str:
    return "forever" if math.isinf(days) else f"{days:.0f} days"


def _dedupe(res: dict[str, Any]) -> list[str]:
    d = res.get("dedupe")
    if not d:
        return []
    lines = [
        "## 2. Dedupe (merge decision on sentence pairs)", "",
        "The rule under test is the merge stage's pair rule, `pair_rules.same_statement`: cosine > merge_threshold, "
        "a logistic model on cosine and lexical overlap (fitted on MSRP train) above its train-chosen cut, no "
        "valence conflict (negation, antonym, different value), no colour swapped and, in short statements, no "
        "swapped word, direction or role. Positives: MSRP `Quality = 1` (paraphrase); SICK `ENTAILMENT`. "
        "Baseline: token-set Jaccard with its own threshold chosen on train (ratio = engram F1 / Jaccard F1); "
        "floor: exact normalised text (content_hash), which is what dedupe without embeddings gives.", "",
    ]
    for key in ("msrp", "sick"):
        x = d[key]
        lines += [
            f"### {x['source']} (train {x['train_pairs']} pairs, dev {x['dev_pairs']} pairs, "
            f"{100 * x['dev_positive_share']:.0f}% positive)", "",
            "| rule on dev | precision | recall | F1 | SICK contradictions merged |", "|---|---|---|---|---|",
        ]
        for name, row in (
            (f"default merge_threshold {x['default_threshold']}", x["dev_at_default"]),
            (f"F1-best on train: {x['chosen_threshold_on_train']}", x["dev_at_chosen"]),
            (f"precision >= {x['merge_precision_target']} on train: {x['precision_threshold_on_train']}",
             x["dev_at_precision_threshold"]),
            (f"support_threshold {x['support_threshold']} (same rule)", x["dev_at_support"]),
            (f"baseline Jaccard > {x['baseline_jaccard']['threshold_on_train']}", x["baseline_jaccard"]["dev"]),
            ("floor: identical normalised text", x["baseline_exact_hash"]["dev"]),
        ):
            cm = _f(row.get("contradictions_merged")) if row and "contradictions_merged" in row else "-"
            lines.append(_prf_row(name, row, f" {cm} |"))
        lines += [
            "",
            f"ROC-AUC of the cosine on dev: {_f(x['roc_auc_cosine_dev'])} (Jaccard {_f(x['roc_auc_jaccard_dev'])}). "
            f"F1 ratio engram (default) / Jaccard baseline: {_ratio(x['dev_at_default']['f1'], x['baseline_jaccard']['dev']['f1'])}.",
        ]
        if "spearman_cos_relatedness_dev" in x:
            lines.append(
                f"Spearman of the cosine with SICK relatedness: {_f(x['spearman_cos_relatedness_dev'])} "
                f"(Jaccard {_f(x['spearman_jaccard_relatedness_dev'])}). Share of SICK CONTRADICTION pairs merged "
                f"at the default: **{_f(x['dev_at_default']['contradictions_merged'])}** "
                f"({_f(x['dev_at_default']['contradictions_above_cos'])} are above the cosine; the valence, colour and "
                f"role checks and the merge model stop the rest); on train "
                f"{_f(x['train_at_default']['contradictions_merged'])}. Target <= 0.01.")
            if x.get("merged_contradictions_dev"):
                lines += ["", "SICK trial contradictions the merge rule would merge at the default (what the "
                          "valence rules miss):", ""]
                lines += [f"- cos {c['cos']:.3f}: \"{c['a']}\" / \"{c['b']}\"" for c in x["merged_contradictions_dev"]]
        lines.append("")
    return lines


def _contradiction(res: dict[str, Any]) -> list[str]:
    c = res.get("contradiction")
    if not c:
        return []
    lines = [
        "## 3. Contradiction detection", "",
        "Detector: `pair_rules.contradiction`, what the confidence stage applies to fact pairs at "
        "contradiction_threshold: a valence conflict (negation, antonym, different value) between statements "
        "about the same subject, with cosine > threshold, or cosine > 0.6 when they share two thirds of their "
        "content words (episode-vs-fact evidence still uses the valence rule at support_threshold). Positives: "
        "SICK `CONTRADICTION`, MNLI label 1. The threshold is swept on SICK train only; MNLI has no train split "
        "here and is never tuned on. Baseline: always \"contradiction\" (its F1 is what a detector must beat).", "",
        "| detector | SICK trial P | R | F1 | MNLI P | R | F1 |", "|---|---|---|---|---|---|---|",
    ]
    sd, mn = c["sick_dev"], c["mnli"]
    for name, key in ((f"default contradiction_threshold {c['default_threshold']}", "at_default"),
                      (f"at support_threshold {c['support_threshold']}", "at_support_threshold"),
                      (f"F1-best on SICK train: {c['chosen_threshold_on_sick_train']}", "at_chosen"),
                      (f"false-alarm budget on LoCoMo: {_budget(c)}", "at_alarm_budget"),
                      ("rule only (no cosine gate)", "rule_only"), ("baseline: always contradiction", "baseline_always")):
        a, b = sd.get(key), mn.get(key)
        if a is None or b is None:
            continue
        lines.append(f"| {name} | {_f(a['precision'])} | {_f(a['recall'])} | {_f(a['f1'])} | "
                     f"{_f(b['precision'])} | {_f(b['recall'])} | {_f(b['f1'])} |")
    lines += ["", "Precision of each rule when it fires (F1-best threshold): SICK trial "
              + ", ".join(f"{k} {_f(v['precision'])} ({v['fired']} pairs)" for k, v in sd["at_chosen"]["by_reason"].items())
              + "; MNLI " + ", ".join(f"{k} {_f(v['precision'])} ({v['fired']} pairs)"
                                      for k, v in mn["at_chosen"]["by_reason"].items()) + ".", ""]
    if al := c.get("conversation_alarms"):
        shown = [t for t in ("0.60", "0.70", "0.75", "0.78", "0.80", "0.82", "0.85", "0.90") if t in al["alarms_per_1000_turns"]]
        lines += [
            "**False alarms in conversation.** SICK pairs all describe one scene, so a valence difference there "
            "usually is a contradiction. A memory compares statements of one user about many things: the detector "
            f"was run on every pair of turns within each of {al['conversations']} LoCoMo conversations ({al['turns']} "
            "turns, stated as the extractive stage states them, \"speaker: best sentence\"), whose speakers do not "
            "contradict themselves, so what fires there is (nearly all) false alarms, and each would halve two facts. "
            f"Reasons that fired at cos > 0.5: {al['reasons']}.", "",
            "| threshold | " + " | ".join(shown) + " |", "|---|" + "---|" * len(shown),
            "| alarms per 1,000 turns | " + " | ".join(f"{al['alarms_per_1000_turns'][t]:.1f}" for t in shown) + " |",
            "| SICK train recall | " + " | ".join(_f(_sweep_at(c['sick_train']['sweep'], float(t), 'recall')) for t in shown) + " |",
            "",
            f"The lowest threshold with at most {al['budget_per_1000_turns']:.0f} alarms per 1,000 turns is "
            f"**{_budget(c)}**. Alarms still firing above 0.85:", "",
        ]
        lines += [f"- cos {e['cos']:.3f} ({e['why']}): \"{e['a']}\" / \"{e['b']}\"" for e in al["examples"]] or ["- none"]
        lines.append("")
    return lines


def _budget(c: dict[str, Any]) -> str:
    al = c.get("conversation_alarms") or {}
    return str(al.get("lowest_threshold_within_budget", "n/a"))


def _sweep_at(sweep: list[dict[str, Any]], t: float, key: str) -> float | None:
    row = min(sweep, key=lambda r: abs(r["threshold"] - t), default=None)
    return row[key] if row is not None and abs(row["threshold"] - t) < 0.006 else None


def _knowledge(res: dict[str, Any]) -> list[str]:
    k = res.get("knowledge_update")
    if not k:
        return []
    lines = [
        "## 4. Knowledge update (SituatedQA temporal)", "",
        f"{k['questions']} questions whose answer changed at least once; each dated answer start is an episode "
        f"\"<question>? <answer>.\" created at its date ({k['episode_count']} episodes, one tenant). latest@1: the top "
        "hit for the question states the latest answer; stale@1: it states an older answer instead; as_of@1: "
        f"with `as_of` = a probe date ({k['as_of_probes']} probes) the top hit states the answer valid then.", "",
        "| system | latest@1 | stale@1 | as_of@1 |", "|---|---|---|---|",
    ]
    for name in ("baseline_bm25", "episodes", "facts", "both"):
        x = k[name]
        lines.append(f"| {name} | {_f(x['latest_at_1'])} | {_f(x['stale_at_1'])} | {_f(x['as_of_at_1'])} |")
    lines += [
        "",
        f"After the run: fact statuses {k['fact_statuses']}; {k['questions_with_a_fact']} of {k['questions']} "
        f"questions have an active fact; {k['facts_conflating_an_update']} active facts rest on two answers of one "
        f"question (an update folded into the fact it replaces); {k['facts_spanning_questions']} span several "
        "questions. Ratios against the BM25 baseline (latest@1): episodes "
        f"{_ratio(k['episodes']['latest_at_1'], k['baseline_bm25']['latest_at_1'])}, facts "
        f"{_ratio(k['facts']['latest_at_1'], k['baseline_bm25']['latest_at_1'])}.",
        "",
        "How updates are served: search shows a later restatement of the same thing with another value (another "
        "number, or one name swapped) in place of the older one, so plain queries get the latest and `as_of` "
        "queries, which only see what existed then, the answer valid then; the confidence stage lets a later fact "
        "with another value supersede the older one (status superseded, valid_to = the newer fact's valid_from; "
        f"{(k.get('consolidation') or {}).get('confidence', {}).get('superseded', 'n/a')} here), which `as_of` "
        "queries still find. What facts miss are mostly questions with no active fact (counted above).",
        "",
    ]
    return lines


def _extraction(res: dict[str, Any]) -> list[str]:
    e = res.get("extraction")
    if not e:
        return []
    lines = [
        "## 5. Extraction (facts vs gold persona facts and observations)", "",
        "Facts of the nightly run matched 1:1 to gold by cosine >= the match threshold "
        "(an evaluation parameter, fixed before looking at engram's numbers; the plot shows the whole sweep). "
        "Precision = matched facts / facts (duplicates cost precision), recall = matched gold / gold. "
        "Provenance agreement: a matched fact's extracted_from turns include a turn of the persona's speaker "
        "(SPC) or one of the observation's evidence turns (LoCoMo). Baseline: every turn's best sentence as a fact. "
        "SPC gold persona facts are said in the first person (\"I like to ski\"); a fact names its speaker "
        "(\"User 1 likes to ski\"), so gold and the baseline are put in that form by the function extraction uses "
        "(engram.text.atomic.resolve_speaker) before matching. Until 2026-11-24 gold was matched as said, which "
        "counted a correct fact as a miss (the every-turn baseline scored F1 0.158 that way, 0.232 this way).", "",
        "| data | system | facts | gold | precision | recall | F1 | provenance agreement |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for key, name in (("spc", "Synthetic-Persona-Chat"), ("locomo", "LoCoMo observations")):
        x = e.get(key)
        if not x:
            continue
        en, bl = x["engram"], x["baseline_every_turn"]
        lines.append(f"| {name} ({x['tenants']} conversations, match >= {x['match_threshold']}) | engram | {x['facts']} | "
                     f"{x['gold']} | {_f(en['precision'])} | {_f(en['recall'])} | {_f(en['f1'])} | "
                     f"{_f(x['provenance_agreement'])} ({x['matched']} matched) |")
        lines.append(f"| | every turn | {x['baseline_facts']} | {x['gold']} | {_f(bl['precision'])} | "
                     f"{_f(bl['recall'])} | {_f(bl['f1'])} | - |")
    lines.append("")
    return lines


def _beam(res: dict[str, Any]) -> list[str]:
    b = res.get("beam")
    if not b or not b.get("groups"):
        return []
    from bench.quality.beam import METHOD_NOTE, tables

    last = list(b["groups"])[-1]
    g = b["groups"][last]
    lines = [
        "## 6. Agent transcripts (BEAM user-assistant chats)", "",
        f"{len(b['chats'])} chats ({', '.join(str(c['chat']) for c in b['chats'])}); {METHOD_NOTE}. recall@10: share "
        "of a question's source turns covered by the top 10 (a fact covers its provenance); current-first: the first "
        "hit covering the old or the new turn of a knowledge update covers the new one; linked: the night connects "
        "the two statements of a contradiction. Also `python -m bench.quality.beam` (bench/quality/BEAM.md).", "",
        *tables(b["groups"]), "",
        f"Against the targets of issue 46 ({last}): night {_f(g['night']['all'])} vs BM25 {_f(g['bm25']['all'])} "
        f"({g['night']['all'] - g['bm25']['all']:+.3f}; >= +.15) and raw episodes {_f(g['raw']['all'])} "
        f"({g['night']['all'] - g['raw']['all']:+.3f}; >= +.10); temporal {_f(g['night'].get('temporal_reasoning'))} "
        f"vs BM25 {_f(g['bm25'].get('temporal_reasoning'))}; current-first {_f(g['night']['current_first'])} (>= .80); "
        f"linked {g['linked'][0]} of {g['linked'][1]} (>= half); instruction + preference "
        f"{_f(g['night']['instr_pref'])} (>= .60); facts per turn {g['facts_per_turn']:.2f} (<= 3).", "",
    ]
    if n := b.get("never"):
        lines += [f"'Never' links on {Path(res['paths']['locomo']).name} (no contradictions planted: each one is "
                  f"false): {len(n['links'])} over {n['turns']} turns, {n['per_1000']:.2f} per 1,000 turns (<= 5).", ""]
    return lines


def _verdicts(res: dict[str, Any]) -> list[str]:
    lines = ["## Thresholds: what the dev-split curves say", ""]
    d, c = res.get("dedupe"), res.get("contradiction")
    if d:
        ms, sk = d["msrp"], d["sick"]
        lines.append(
            f"- **merge_threshold {ms['default_threshold']}**: on MSRP val it merges with precision "
            f"{_f(ms['dev_at_default']['precision'])} at recall {_f(ms['dev_at_default']['recall'])}; the F1-best "
            f"threshold on train is {ms['chosen_threshold_on_train']} (MSRP) / {sk['chosen_threshold_on_train']} (SICK), "
            f"where dev precision falls to {_f(ms['dev_at_chosen']['precision'])} / {_f(sk['dev_at_chosen']['precision'])} "
            f"and SICK contradictions merged rise from {_f(sk['dev_at_default']['contradictions_merged'])} to "
            f"{_f(sk['dev_at_chosen']['contradictions_merged'])}. A merge hides the losers, so the threshold should "
            f"be chosen for precision: precision >= {ms['merge_precision_target']} on train needs "
            f"{ms['precision_threshold_on_train']} (MSRP) / {sk['precision_threshold_on_train']} (SICK). "
            + _merge_verdict(ms, sk))
        lines.append(
            f"- **support_threshold {ms['support_threshold']}**: the same rule at {ms['support_threshold']} has dev "
            f"precision {_f(ms['dev_at_support']['precision'])} (MSRP) / {_f(sk['dev_at_support']['precision'])} "
            f"(SICK entailment) and F1 {_f(ms['dev_at_support']['f1'])} / {_f(sk['dev_at_support']['f1'])}, between "
            f"the two train F1 optima ({ms['chosen_threshold_on_train']}, {sk['chosen_threshold_on_train']}); support "
            "only nudges confidence (+5% of the gap per episode), so recall matters more than for a merge: the data "
            "supports the default.")
    if c:
        sd = c["sick_dev"]
        lines.append(_contradiction_verdict(c))
        ant = sd["rule_only"]["by_reason"].get("antonym")
        if ant and ant["precision"] is not None and ant["precision"] < 0.5:
            lines.append(
                f"- **antonym rule**: fires on {ant['fired']} SICK trial pairs with precision {_f(ant['precision'])} "
                f"(word pairs that fired, with SICK's judgment: {c.get('sick_dev_antonym_pairs', {})}); review the "
                "pairs in engram/claims.py ANTONYMS.")
    if verdict := _decay_verdict(res):
        lines.append(verdict)
    lines.append("")
    return lines


def _contradiction_verdict(c: dict[str, Any]) -> str:
    sd, mn, default = c["sick_dev"], c["mnli"], c["default_threshold"]
    al = c.get("conversation_alarms")
    text = (f"- **contradiction_threshold {default}**: SICK trial precision {_f(sd['at_default']['precision'])}, "
            f"recall {_f(sd['at_default']['recall'])}, F1 {_f(sd['at_default']['f1'])}. The F1-best threshold on "
            f"SICK train is {c['chosen_threshold_on_sick_train']} (SICK trial F1 {_f(sd['at_chosen']['f1'])})")
    if not al:
        return text + ": run with the LoCoMo file to weigh it against false alarms in conversation."
    rate = al["alarms_per_1000_turns"]
    low = f"{c['chosen_threshold_on_sick_train']:.2f}"
    text += (f", but there the detector raises {rate.get(low, float('nan')):.0f} alarms per 1,000 LoCoMo turns, "
             f"against {rate.get(f'{default:.2f}', float('nan')):.1f} at the default: a contradiction halves two facts, "
             "so the SICK optimum would deprecate facts wholesale in a real memory. The lowest threshold within the "
             f"false-alarm budget ({al['budget_per_1000_turns']:.0f} per 1,000 turns) is {_budget(c)}")
    budget = al.get("lowest_threshold_within_budget")
    if budget is None:
        return text + "; no threshold in the sweep stays within the budget."
    if abs(budget - default) <= 0.011:
        text += f"; the default {default} is that threshold rounded to the safe side: the data supports it."
    else:
        text += f"; the data supports contradiction_threshold {budget} instead of {default}."
    return text + (f" On MNLI no setting of the rules beats always answering \"contradiction\" (F1 "
                   f"{_f(mn['baseline_always']['f1'])}): lexical rules do not generalise to MNLI's contradictions; the "
                   "LLM review (queued cases) is what settles them.")


def _days_to_floor(s: dict[str, Any]) -> float:
    """Days an unreinforced new fact stays above the deprecation floor."""
    if s["decay_rate"] <= 0 or s["initial_confidence"] <= s["deprecate_below"]:
        return 0.0 if s["initial_confidence"] <= s["deprecate_below"] else float("inf")
    return math.log(s["initial_confidence"] / s["deprecate_below"]) / s["decay_rate"]


def _median(values: list[float]) -> float | None:
    ordered = sorted(values)
    if not ordered:
        return None
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def _merge_verdict(ms: dict[str, Any], sk: dict[str, Any]) -> str:
    """What the sweep of the cosine gate says, now that a pair model fitted on train decides the merge."""
    default = ms["default_threshold"]
    f1_hi = max(ms["chosen_threshold_on_train"], sk["chosen_threshold_on_train"])
    dev = ms["dev_at_default"]
    return (f"The merge decision is the pair rule (a logistic model of cosine, word overlap and what one side "
            f"adds, fitted on MSRP train, with its cut chosen there for precision 0.9 with a margin, plus the "
            f"valence and role checks); merge_threshold {default} is only the cosine gate in front of it. "
            f"Sweeping the gate alone on train puts the F1 optimum at {f1_hi} at most, but the model already "
            f"rejects the low-cosine pairs the gate would: at the default MSRP val precision is "
            f"{_f(dev['precision'])} with recall {_f(dev['recall'])}. Raising the gate trades recall for little "
            f"precision: the MSRP pairs merged wrongly mostly restate the other sentence and add a detail, which "
            f"the model's clause and word-count features catch only in part (bench/fit/MERGE_MODEL.md).")


def headline(res: dict[str, Any]) -> dict[str, Any]:
    """The few numbers a reader wants first (printed by `engram eval`)."""
    out: dict[str, Any] = {}
    if r := res.get("retrieval"):
        main = r["recall_main_categories"]
        out["retrieval_recall_at_10"] = {k: v[9] if v else None for k, v in main.items()}
        out["consolidation_loss_points_at_10"] = (
            100 * (main["facts"][9] - main["episodes"][9]) if main["facts"] and main["episodes"] else None)
    if d := res.get("dedupe"):
        out["merge_f1_at_default"] = {k: d[k]["dev_at_default"]["f1"] for k in ("msrp", "sick")}
        out["sick_contradictions_merged"] = d["sick"]["dev_at_default"].get("contradictions_merged")
    if c := res.get("contradiction"):
        out["contradiction_f1_at_default"] = {k: c[k]["at_default"]["f1"] for k in ("sick_dev", "mnli")}
        out["contradiction_threshold_supported"] = c["chosen_threshold_on_sick_train"]
    if k := res.get("knowledge_update"):
        out["latest_at_1"] = {s: k[s]["latest_at_1"] for s in ("baseline_bm25", "episodes", "facts")}
    if b := res.get("beam"):
        g = b["groups"][list(b["groups"])[-1]]
        out["beam_recall_at_10"] = {m: g[m]["all"] for m in ("bm25", "raw", "night")}
        out["beam_current_first"] = g["night"]["current_first"]
    if e := res.get("extraction"):
        out["extraction"] = {key: {"precision": x["engram"]["precision"], "recall": x["engram"]["recall"]}
                             for key, x in e.items()}
    return out
