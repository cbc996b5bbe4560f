"""The passage benchmark's own logic (training.passages), on small generated documents: the answer
check, the question file, the tallies and the BM25 baselines. The benchmark itself reads /usr/share;
these tests read only the repository."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from training.passage_corpus import sources
from training.passages import (
    QUESTIONS,
    Bm25Passages,
    Passage,
    Question,
    Tally,
    answers,
    document_of,
    fold_spread,
    length_stats,
    load_questions,
    miss_kinds,
    rank_of_answer,
    reachable,
    tally,
)


def _question(excerpt: str, document: str = "a.txt", qid: str = "q1") -> Question:
    return Question(qid, document, "how do I do it", excerpt)


def test_a_passage_answers_when_it_holds_the_excerpt_whatever_the_spacing_case_quotes_and_hyphens() -> None:
    question = _question("Use \u2018--null\u2019 to end items")
    assert answers("Options:\n  USE '--NULL'   to\nend items with a zero byte.", question)
    assert answers("use \u2018\u2010\u2010null\u2019 to end items", question)
    assert not answers("Use --null to end", question)


def test_the_rank_of_the_answer_is_the_first_passage_holding_it() -> None:
    question = _question("exit status is 2")
    ranking = [Passage("a.txt", "nothing here"), Passage("b.txt", "the exit status is 2 on error")]
    assert rank_of_answer(ranking, question) == 2
    assert rank_of_answer(ranking[:1], question) is None


def test_a_tally_counts_rank_one_top_three_right_document_and_refusals() -> None:
    # Given three questions on document a.txt: answered first, answered third from another document,
    # and refused (no passage at all)
    counts = Tally()
    first = _question("alpha")
    counts.add([Passage("a.txt", "alpha"), Passage("b.txt", "x")], first)
    counts.add([Passage("b.txt", "x"), Passage("b.txt", "y"), Passage("a.txt", "alpha")], first)
    counts.add([], first)
    # Then each figure is a share of all three questions
    assert counts.as_dict() == {
        "questions": 3,
        "rank1": round(1 / 3, 4),
        "top3": round(2 / 3, 4),
        "document_first": round(1 / 3, 4),
        "refused": round(1 / 3, 4),
    }


def test_a_miss_is_told_apart_by_whether_its_own_document_was_in_the_top_three() -> None:
    # Given four questions on a.txt: one answered at rank 3, one refused, one shown only b.txt, and one
    # shown a.txt's other passages (its answer at rank 4, below the top 3)
    questions = [_question("alpha", qid=q) for q in ("hit", "refused", "elsewhere", "sibling")]
    rankings = {
        "hit": [Passage("b.txt", "x"), Passage("b.txt", "y"), Passage("a.txt", "alpha")],
        "refused": [],
        "elsewhere": [Passage("b.txt", "alpha"), Passage("c.txt", "z")],
        "sibling": [
            Passage("b.txt", "x"),
            Passage("a.txt", "beta"),
            Passage("b.txt", "y"),
            Passage("a.txt", "alpha"),
        ],
    }
    # Then each miss has its kind, and the hit is none of them (an excerpt in another document still
    # answers: the check is the excerpt, not the name)
    assert miss_kinds(questions, rankings) == {
        "refused": 1,
        "other documents": 0,
        "right document, other passage": 1,
    }
    rankings["elsewhere"] = [Passage("b.txt", "x"), Passage("c.txt", "z")]
    assert miss_kinds(questions, rankings)["other documents"] == 1
    # And only the top 3 count: its own document at rank 4 leaves a miss of other documents
    rankings["elsewhere"] = [
        Passage("b.txt", "x"),
        Passage("b.txt", "y"),
        Passage("c.txt", "z"),
        Passage("a.txt", "alpha"),
    ]
    assert miss_kinds(questions, rankings)["other documents"] == 1


def test_figures_are_reported_for_all_questions_per_source_and_per_format() -> None:
    questions = [_question("alpha", "m.txt", "q1"), _question("beta", "h.html", "q2")]
    rankings = {"q1": [Passage("m.txt", "alpha")], "q2": [Passage("m.txt", "gamma")]}
    kinds = {"m.txt": ("man", "man"), "h.html": ("manuals", "html")}
    figures = tally(questions, rankings, kinds)
    assert set(figures) == {"all", "source:man", "source:manuals", "format:man", "format:html"}
    assert figures["all"]["top3"] == 0.5
    assert figures["source:man"]["top3"] == 1.0
    assert figures["format:html"]["top3"] == 0.0


def test_reachable_counts_an_answer_anywhere_among_the_candidates_per_group() -> None:
    # Given two man questions, one answered by its 5th candidate and one by none, and an html question
    # answered only by another document's passage (the excerpt decides, not the name)
    questions = [
        _question("alpha", "m.txt", "q1"),
        _question("beta", "m.txt", "q2"),
        _question("gamma", "h.html", "q3"),
    ]
    pools = {
        "q1": [Passage("m.txt", "x")] * 4 + [Passage("m.txt", "alpha here")],
        "q2": [Passage("m.txt", "alpha")],
        "q3": [Passage("m.txt", "gamma")],
    }
    kinds = {"m.txt": ("man", "man"), "h.html": ("manuals", "html")}
    # Then each group's share is of its questions with the answer at any rank
    shares = reachable(questions, pools, kinds)
    assert shares["all"] == round(2 / 3, 4)
    assert shares["source:man"] == 0.5 and shares["format:man"] == 0.5
    assert shares["source:manuals"] == 1.0
    # And an empty pool (nothing retrieved) holds nothing
    assert reachable(questions[2:], {"q3": []}, kinds)["all"] == 0.0


def test_a_key_names_its_corpus_document_by_its_upload_name_or_stays_itself() -> None:
    by_upload = {"man-grep.1.txt": "grep.1.txt"}
    assert document_of("bench/man-grep.1.txt", by_upload) == "grep.1.txt"
    assert document_of("bench/other.txt", by_upload) == "bench/other.txt"


def test_bm25_over_passages_ranks_the_passage_with_the_query_words_first() -> None:
    # Given passages of two generated documents
    passages = [
        Passage("tar.txt", "Extract files from an archive into the current directory."),
        Passage("tar.txt", "List the contents of an archive without extracting anything."),
        Passage("gzip.txt", "Keep the input files when compressing or decompressing."),
    ]
    ranking = Bm25Passages(passages).rank("how do I keep my input files while compressing")
    # Then the passage sharing most of the query's words comes first; one sharing none is left out
    assert ranking[0] == passages[2]
    assert passages[1] not in ranking


def test_length_stats_give_the_median_and_the_tenth_and_ninetieth_percentiles() -> None:
    stats = length_stats(range(1, 101))
    assert stats == {"chunks": 100, "median": 50.5, "p10": 11, "p90": 90}
    assert length_stats([])["chunks"] == 0


def test_fold_spread_reports_the_lowest_and_highest_fold() -> None:
    questions = [_question("alpha", qid=f"q{i}") for i in range(10)]
    rankings = {q.id: [Passage("a.txt", "alpha" if i < 5 else "none")] for i, q in enumerate(questions)}
    spread = fold_spread(questions, rankings)
    assert spread["folds"] == 5
    assert 0.0 <= spread["top3_min"] <= 0.5 <= spread["top3_max"] <= 1.0


def test_a_question_file_with_a_duplicate_id_or_an_empty_field_is_refused(tmp_path: Path) -> None:
    header = "id\tdocument\tquestion\tanswer_excerpt\n"
    duplicate = tmp_path / "dup.tsv"
    duplicate.write_text(header + "a\td\tq\te\na\td\tq\te\n", encoding="utf-8")
    with pytest.raises(ValueError, match="line 3: duplicate id a"):
        load_questions(duplicate)
    empty = tmp_path / "empty.tsv"
    empty.write_text(header + "a\td\t\te\n", encoding="utf-8")
    with pytest.raises(ValueError, match="line 2: every column"):
        load_questions(empty)


def test_the_shipped_questions_are_many_name_known_documents_and_cover_two_kinds_of_source() -> None:
    # Given the benchmark's question file and its document list (no /usr/share needed)
    questions = load_questions(QUESTIONS)
    kinds = {source.name: (source.source, source.format) for source in sources()}
    # Then there are at least 300, each on a known document, from both kinds of source and all formats
    assert len(questions) >= 300
    assert all(q.document in kinds for q in questions)
    by_source = Counter(kinds[q.document][0] for q in questions)
    assert set(by_source) == {"man", "manuals"} and min(by_source.values()) >= 100
    assert {kinds[q.document][1] for q in questions} == {"man", "info", "html", "md", "pdf"}
    # and no question repeats its answer's words wholesale
    assert all(q.excerpt.lower() not in q.text.lower() for q in questions)
