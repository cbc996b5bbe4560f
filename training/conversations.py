"""Follow-ups: hit@3 of the last turn of two- and three-turn dialogues, searched alone, with the rule
(``winnow.conversations.followup.rule_query``) and with a rewrite by the fake model (a scripted, ideal
rewrite through the real Ollama adapter and the loopback fake: the plumbing is measured, not a model).

The dialogues are built from documents we did not write (SciFact, ``../shared/eval/scifact``): turn 1 is
a SciFact claim, whose judged relevant abstract is the dialogue's document; each follow-up asks "and what
about <word>?" for a word of that abstract that is common in the corpus (the most frequent one the
earlier turns have not used), so alone it is ambiguous. A hit: the document among the top 3 results.

    python -m training.conversations [--dialogues 80] [--documents 400]"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.common import Progress, machine, positive_int, stdout_reserved_for_result, table
from benchmarks.stack import EmbeddedStack
from training.data import load_eval_set
from training.embedcache import DEFAULT_CACHE, caching

_WORD = re.compile(r"[a-z]{5,}")
TOP = 3
NAMES = ("alone", "verbatim", "rule", "rewrite")
LABELS = {
    "alone": "alone",
    "verbatim": "follow-up + earlier questions verbatim",
    "rule": "rule: + earlier questions' content words",
    "rewrite": "scripted model rewrite",
}


@dataclass(frozen=True)
class Dialogue:
    document: str  # the key of the document every turn is about
    turns: tuple[str, ...]
    rewrites: tuple[str, ...]  # the scripted standalone form of each follow-up


def build_dialogues(
    documents: dict[str, str], claims: list[tuple[str, str]], count: int, key_of: dict[str, str]
) -> list[Dialogue]:
    """Alternately two- and three-turn dialogues, one per claim (first ``count`` claims)."""
    from winnow.text.sparse import ENGLISH_STOP_WORDS

    df = Counter(w for text in documents.values() for w in set(_WORD.findall(text.lower())))
    common = len(documents) * 0.03  # the word is in at least 3 % of the documents: ambiguous alone
    out = []
    for i, (claim, doc_id) in enumerate(claims[:count]):
        used = set(_WORD.findall(claim.lower()))
        words = sorted(
            (w for w in set(_WORD.findall(documents[doc_id].lower())) if w not in ENGLISH_STOP_WORDS),
            key=lambda w: (-df[w], w),
        )
        picks = [w for w in words if w not in used and df[w] >= common][: 1 + i % 2]
        if len(picks) < 1 + i % 2:
            continue
        follow = tuple(f"and what about {w}?" for w in picks)
        rewrites = tuple(f"{claim} What about {w}?" for w in picks)
        out.append(Dialogue(key_of[doc_id], (claim, *follow), rewrites))
    return out


def run(dialogues_wanted: int, max_documents: int, note: Progress, eval_dir: Path | None) -> dict[str, Any]:
    from winnow.access import Caller
    from winnow.adapters.ollama import OllamaGenerator
    from winnow.conversations.service import ConversationService
    from winnow.search.query import Query
    from winnow.settings import AnswerSettings
    from winnow_fakes.fake_ollama import DEFAULT_MODEL, FakeOllamaServer

    eval_set = load_eval_set(eval_dir=eval_dir).limited(max_documents, dialogues_wanted * 2)
    claims = [
        (text, next(d for d, r in eval_set.qrels[qid].items() if r > 0))
        for qid, text in eval_set.queries.items()
    ]
    with (
        tempfile.TemporaryDirectory() as workdir,
        FakeOllamaServer() as fake,
        EmbeddedStack(Path(workdir) / "home", wrap_embedder=caching(DEFAULT_CACHE)) as stack,
    ):
        files = [(f"{doc_id}.txt", text.encode()) for doc_id, text in eval_set.documents.items()]
        note(f"ingesting {len(files)} SciFact abstracts")
        stack.ingest(files)
        key_of = {doc_id: stack.key_for(f"{doc_id}.txt") for doc_id in eval_set.documents}
        dialogues = build_dialogues(eval_set.documents, claims, dialogues_wanted, key_of)
        note(f"{len(dialogues)} dialogues ({sum(len(d.turns) == 3 for d in dialogues)} of three turns)")
        container = stack.container
        searches = container.search_service()
        generator = OllamaGenerator(
            AnswerSettings(
                generator="ollama", ollama_host=fake.url, ollama_model=DEFAULT_MODEL, max_attempts=1
            )
        )
        rule = ConversationService(searches, container.conversation_store, container.settings.conversations)
        rewrite = ConversationService(
            searches, container.conversation_store, container.settings.conversations, generator
        )

        def request(query: str) -> Query:
            return Query(query=query, top_k=TOP, relevance_threshold=0.0)

        def hit(keys: Sequence[str], dialogue: Dialogue) -> bool:
            return dialogue.document in keys[:TOP]

        counts = Counter[str]()
        first_hits = 0
        for n, d in enumerate(dialogues):
            caller = Caller(stack.tenant, f"bench-{n}")
            alone = searches.search(caller.tenant, request(d.turns[-1]))
            counts["alone"] += hit([r.key for r in alone.results], d)
            # The other rule considered: the earlier questions appended word for word (stop-words kept)
            verbatim = " ".join([d.turns[-1], *reversed(d.turns[:-1])])[:2000]
            counts["verbatim"] += hit(
                [r.key for r in searches.search(caller.tenant, request(verbatim)).results], d
            )
            for name, service in (("rule", rule), ("rewrite", rewrite)):
                opened = service.search(caller, request(d.turns[0]))
                first_hits += name == "rule" and hit([r.key for r in opened.results], d)
                found = opened
                for follow, scripted in zip(d.turns[1:], d.rewrites, strict=True):
                    if name == "rewrite":
                        fake.script(scripted)
                    found = service.search(caller, request(follow), opened.conversation_id)
                counts[name] += hit([r.key for r in found.results], d)
        total = len(dialogues)
    return {
        "dialogues": total,
        "three_turn": sum(len(d.turns) == 3 for d in dialogues),
        "documents": len(eval_set.documents),
        "hit_at_3": {name: round(counts[name] / total, 3) for name in NAMES},
        "first_turn_hit_at_3": round(first_hits / total, 3),
        "rewrite_requests": len(fake.requests),
        "machine": machine(),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dialogues", type=positive_int, default=80, help="claims to build dialogues from")
    parser.add_argument("--documents", type=positive_int, default=400, help="abstracts indexed (distractors)")
    parser.add_argument("--eval-dir", type=Path, default=None, help="SciFact folder (default ../shared)")
    args = parser.parse_args(argv)
    note = Progress()
    with stdout_reserved_for_result():
        result = run(args.dialogues, args.documents, note, args.eval_dir)
    hits = result["hit_at_3"]
    print(
        table(
            ["follow-up searched", f"hit@{TOP}"],
            [[LABELS[name], f"{hits[name]:.1%}"] for name in NAMES],
        )
    )
    print(
        f"{result['dialogues']} dialogues ({result['three_turn']} of three turns) over "
        f"{result['documents']} abstracts; first turn hit@{TOP} {result['first_turn_hit_at_3']:.1%}; "
        f"{result['rewrite_requests']} rewrite requests to the fake model"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
