"""What ``winnow eval`` shows: a table on a terminal, one JSON object, or one HTML file with the score
distributions, the refusal trade-off and the misses."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

LABELS = (
    ("ndcg@10", "nDCG@10"),
    ("hit@1", "right document first (hit@1)"),
    ("hit@3", "hit@3"),
    ("mrr@10", "MRR@10"),
    ("answer@3", "answering passage in the top 3"),
    ("refused", "answerable questions refused"),
    ("offtopic_refused", "off-topic questions refused"),
)
MISSES_SHOWN = 20


def _value(value: Any, name: str) -> str:
    if value is None:
        return "-"
    return f"{value:.3f}" if name in {"ndcg@10", "mrr@10"} else f"{value:.1%}"


def apply_hint(threshold: float) -> str:
    return (
        f"sam deploy --parameter-overrides RelevanceThreshold={threshold} (AWS); "
        f"WINNOW_SEARCH_RELEVANCE_THRESHOLD={threshold} (embedded default, winnow serve); "
        f'or "relevance_threshold": {threshold} in a request'
    )


def _got(got: Sequence[dict[str, Any]]) -> str:
    return ", ".join(f"{g['document']} ({g['score']:.3f})" for g in got) or "nothing"


def text_report(result: dict[str, Any]) -> str:
    lines = [
        f"{result['questions']['asked']} questions ({result['questions']['answerable']} answerable, "
        f"{result['questions']['offtopic']} off-topic) against {result['target']}, tenant {result['tenant']}",
    ]
    if result["interrupted"]:
        lines.append(f"interrupted: {result['questions']['done']} of {result['questions']['asked']} done")
    if result["questions"]["errors"]:
        lines.append(f"{result['questions']['errors']} question(s) got no answer from the API (see misses)")
    lines.append(f"threshold {result['threshold']:.3f} ({result['threshold_source']})")
    width = max(len(label) for _, label in LABELS)
    for name, label in LABELS:
        lines.append(f"  {label:<{width}}  {_value(result['metrics'][name], name)}")
    latency = result["latency_ms"]
    if latency["p50"] is not None:
        lines.append(f"  {'latency p50 / p95':<{width}}  {latency['p50']:.0f} ms / {latency['p95']:.0f} ms")
    lines += ["", _threshold_lines(result)]
    misses = result["misses"]
    if misses:
        lines.append(
            f"\nmisses ({len(misses)}{'; first ' + str(MISSES_SHOWN) if len(misses) > MISSES_SHOWN else ''}):"
        )
        for miss in misses[:MISSES_SHOWN]:
            got = _got(miss["got"])
            wanted = ", ".join(miss["wanted"]) or "nothing (off-topic)"
            lines.append(f"  [{miss['id']}] {miss['question'][:80]}")
            lines.append(f"      {miss['why']}; wanted {wanted}; got {got}")
    return "\n".join(lines)


def _threshold_lines(result: dict[str, Any]) -> str:
    choice = result["threshold_choice"]
    if choice is None:
        return (
            "no threshold recommended: it needs at least 2 answerable and 2 off-topic questions "
            '(add {"question": ..., "offtopic": true} lines, or --offtopic FILE)'
        )
    cv = choice["cross_validated"]
    lines = [
        f"recommended threshold {choice['threshold']:.3f}: the lowest that refuses at least "
        f"{choice['target_offtopic_refused']:.0%} of the off-topic questions",
        f"  held out ({choice['folds']}-fold cross-validation): "
        f"off-topic refused {cv['offtopic_refused']:.1%}, "
        f"answerable refused {cv['refused']:.1%}; fold thresholds "
        f"{min(choice['fold_thresholds']):.3f}-{max(choice['fold_thresholds']):.3f}",
    ]
    if choice["caveat"]:
        lines.append(f"  note: {choice['caveat']}")
    lines.append(f"  apply it: {apply_hint(choice['threshold'])}")
    return "\n".join(lines)


# --- HTML ----------------------------------------------------------------------------------------------
_W, _H, _PAD = 560, 220, 36


def _histogram(
    answerable: Sequence[float], offtopic: Sequence[float], threshold: float, recommended: float | None
) -> str:
    bins = 20
    counts = [[0] * bins, [0] * bins]
    for row, scores in enumerate((answerable, offtopic)):
        for s in scores:
            counts[row][min(bins - 1, max(0, int(s * bins)))] += 1
    top = max(1, *counts[0], *counts[1])
    bar_w = (_W - 2 * _PAD) / bins / 2
    parts = []
    for row, colour in ((0, "#2b6cb0"), (1, "#c05621")):
        for i, count in enumerate(counts[row]):
            h = (_H - 2 * _PAD) * count / top
            x = _PAD + i * 2 * bar_w + row * bar_w
            parts.append(
                f'<rect x="{x:.1f}" y="{_H - _PAD - h:.1f}" width="{bar_w:.1f}" height="{h:.1f}" '
                f'fill="{colour}"><title>{count}</title></rect>'
            )
    return _frame("".join(parts), threshold, recommended, "best score of each question", "questions")


def _curve(points: Sequence[dict[str, float]], threshold: float, recommended: float | None) -> str:
    def path(name: str) -> str:
        return " ".join(
            f"{_PAD + p['threshold'] * (_W - 2 * _PAD):.1f},{_H - _PAD - p[name] * (_H - 2 * _PAD):.1f}"
            for p in points
        )

    lines = (
        f'<polyline fill="none" stroke="#2b6cb0" stroke-width="2" points="{path("refused")}"/>'
        f'<polyline fill="none" stroke="#c05621" stroke-width="2" points="{path("offtopic_refused")}"/>'
    )
    return _frame(lines, threshold, recommended, "threshold", "share refused")


def _frame(inner: str, threshold: float, recommended: float | None, x_label: str, y_label: str) -> str:
    x = _PAD + threshold * (_W - 2 * _PAD)
    if recommended is not None:
        r = _PAD + recommended * (_W - 2 * _PAD)
        inner += (
            f'<line x1="{r:.1f}" y1="{_PAD / 2}" x2="{r:.1f}" y2="{_H - _PAD}" '
            'stroke="#2f855a" stroke-width="2"/>'
        )
    return (
        f'<svg viewBox="0 0 {_W} {_H}" width="{_W}" height="{_H}" role="img">'
        f'<line x1="{_PAD}" y1="{_H - _PAD}" x2="{_W - _PAD}" y2="{_H - _PAD}" stroke="#444"/>'
        f'<line x1="{_PAD}" y1="{_PAD}" x2="{_PAD}" y2="{_H - _PAD}" stroke="#444"/>{inner}'
        f'<line x1="{x:.1f}" y1="{_PAD / 2}" x2="{x:.1f}" y2="{_H - _PAD}" '
        'stroke="#000" stroke-dasharray="4"/>'
        f'<text x="{_W / 2}" y="{_H - 6}" text-anchor="middle" font-size="12">{x_label} (0 to 1; dashed: '
        f"threshold {threshold:.3f}; green: recommended)</text>"
        f'<text x="4" y="14" font-size="12">{y_label}</text></svg>'
    )


def html_report(result: dict[str, Any], answerable: Sequence[float], offtopic: Sequence[float]) -> str:
    esc = html.escape
    rows = "".join(
        f"<tr><th>{esc(label)}</th><td>{_value(result['metrics'][name], name)}</td></tr>"
        for name, label in LABELS
    )
    misses = "".join(
        f"<tr><td>{esc(m['id'])}</td><td>{esc(m['question'])}</td><td>{esc(m['why'])}</td>"
        f"<td>{esc(', '.join(m['wanted']))}</td><td>{esc(_got(m['got']))}</td></tr>"
        for m in result["misses"]
    )
    threshold = result["threshold"]
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>winnow eval: {esc(result["target"])}</title>
<style>body{{font:14px system-ui,sans-serif;margin:2em;max-width:60em}}table{{border-collapse:collapse}}
pre{{white-space:pre-wrap}}td,th{{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}}
.key span{{display:inline-block;width:1em;height:1em;margin:0 .3em 0 1em;vertical-align:middle}}</style>
</head><body><h1>winnow eval</h1>
<pre>{esc(text_report({**result, "misses": []}))}</pre>
<h2>Figures</h2><table>{rows}</table>
<h2>Best score of each question</h2>
<p class="key"><span style="background:#2b6cb0"></span>answerable ({len(answerable)})
<span style="background:#c05621"></span>off-topic ({len(offtopic)})</p>
{_histogram(answerable, offtopic, threshold, result["recommended_threshold"])}
<h2>Refusal trade-off</h2>
<p class="key"><span style="background:#2b6cb0"></span>answerable refused
<span style="background:#c05621"></span>off-topic refused</p>
{_curve(result["curve"], threshold, result["recommended_threshold"])}
<h2>Misses ({len(result["misses"])})</h2>
<table><tr><th>id</th><th>question</th><th>why</th><th>wanted</th><th>got (top 3)</th></tr>{misses}</table>
</body></html>
"""
