// A search result's `highlight` on the page: the sentences of `text` that best answer, as offsets in
// Unicode code points (the API's unit, Python's str indices). JavaScript strings count UTF-16 units,
// so an emoji or any character outside the BMP before a sentence would shift it: each offset is
// converted first. The text only ever goes in as text nodes (never HTML), and an offset that is not a
// whole number, lies outside the text or overlaps a better highlight is ignored.
"use strict";

(function () {
  const MOST = 64; // highlights read per result: a runaway list costs no more than this

  // The UTF-16 index of every code point offset 0..n of `text`.
  function unitIndex(text) {
    const at = [0];
    let unit = 0;
    for (const character of text) {
      unit += character.length;
      at.push(unit);
    }
    return at;
  }

  // The usable highlights as [start, end) in UTF-16 units, in text order.
  function spans(text, highlight) {
    if (typeof text !== "string" || !Array.isArray(highlight)) return [];
    const at = unitIndex(text);
    const points = at.length - 1;
    const kept = [];
    for (const item of highlight.slice(0, MOST)) {
      if (!item || typeof item !== "object") continue;
      const start = item.start;
      const end = item.end;
      if (!Number.isInteger(start) || !Number.isInteger(end) || start < 0 || end <= start || end > points) {
        continue;
      }
      if (kept.some(([s, e]) => start < e && s < end)) continue; // best first: the better one stays
      kept.push([start, end]);
    }
    return kept.map(([s, e]) => [at[s], at[e]]).sort((a, b) => a[0] - b[0]);
  }

  // `text` as a fragment of text nodes, each highlight in a <mark>; `show` rewrites each piece's text
  // for display (it must not change what a piece means, only how it reads).
  function marked(text, highlight, show) {
    const shown = show || ((piece) => piece);
    const fragment = document.createDocumentFragment();
    let at = 0;
    for (const [start, end] of spans(text, highlight)) {
      if (start > at) fragment.appendChild(document.createTextNode(shown(text.slice(at, start))));
      const mark = document.createElement("mark");
      mark.textContent = shown(text.slice(start, end));
      fragment.appendChild(mark);
      at = end;
    }
    if (at < text.length) fragment.appendChild(document.createTextNode(shown(text.slice(at))));
    return fragment;
  }

  // The numbers of the lines of `text` (split at "\n") that a highlight touches.
  function markedLines(text, highlight) {
    const found = new Set();
    const highlighted = spans(text, highlight);
    let at = 0;
    text.split("\n").forEach((line, number) => {
      const end = at + line.length;
      if (highlighted.some(([s, e]) => s < end && at < e)) found.add(number);
      at = end + 1;
    });
    return found;
  }

  window.winnowHighlight = { spans, marked, markedLines };
})();
