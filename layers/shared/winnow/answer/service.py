"""``POST /answer``: run the search pipeline, and when something clears the relevance threshold, have the
generator answer from exactly those passages; then keep only the citations that name one of them.

Nothing relevant → an honest null answer and no model call. (No generator configured: the handler answers
501 before a service is built.)"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from winnow.access import Caller
from winnow.answer.citations import check_citations
from winnow.answer.prompt import NO_ANSWER, build_prompt
from winnow.answer.question import Question
from winnow.answer.results import AnswerResponse, AnswerTimings, Citation
from winnow.errors import AnswerModelUnavailable, TransientError
from winnow.observability import logger
from winnow.ports import Generator, Passage
from winnow.search.results import Usage
from winnow.search.service import NOTHING_RELEVANT, SearchService
from winnow.settings import AnswerSettings

NOT_ANSWERED = "The passages do not answer the question"


@dataclass(frozen=True)
class Recall:
    """What a conversation adds to an answer (``winnow.conversations``): the question the model is asked
    (the standalone rewrite, or the follow-up itself), and earlier exchanges shown as context, never as
    sources."""

    question: str
    earlier: Sequence[tuple[str, str | None]] = ()
    memories: Sequence[tuple[str, str | None]] = field(default_factory=tuple)


class AnswerService:
    def __init__(
        self,
        search: SearchService,
        generator: Generator,
        settings: AnswerSettings,
    ) -> None:
        self.search = search
        self.generator = generator
        self.settings = settings

    def answer(
        self,
        who: Caller | str,
        question: Question,
        deadline: float | None = None,
        recall: Recall | None = None,
    ) -> AnswerResponse:
        """Only passages the caller may read reach the model: the search is filtered in the query."""
        started = time.perf_counter()
        found = self.search.search(who, question.search)
        timings = found.timings_ms
        if not found.results:
            return AnswerResponse(
                query=found.query,
                answer=None,
                relevant=False,
                message=NOTHING_RELEVANT,
                citations=[],
                results=[],
                model=None,
                usage=Usage(input_tokens=0, output_tokens=0),
                timings_ms=AnswerTimings(
                    embed=timings.embed,
                    search=timings.search,
                    rerank=timings.rerank,
                    generate=0.0,
                    total=round((time.perf_counter() - started) * 1000, 2),
                ),
                query_used=found.query_used,
            )

        passages = [
            Passage(
                number=r.rank,
                title=r.title,
                section=r.section,
                page=r.page,
                text=r.text,
                before=r.context.before if r.context else "",
                after=r.context.after if r.context else "",
                highlights=tuple(r.text[h.start : h.end] for h in r.highlight),
            )
            for r in found.results
        ]
        prompt = build_prompt(
            found.query if recall is None else recall.question,
            passages,
            max_tokens=question.max_answer_tokens or self.settings.max_answer_tokens,
            temperature=self.settings.temperature,
            earlier=recall.earlier if recall else (),
            memories=recall.memories if recall else (),
        )
        t0 = time.perf_counter()
        try:
            generation = self.generator.generate(prompt, deadline=deadline)
        except TransientError as exc:
            raise AnswerModelUnavailable(str(exc), retry_after=exc.retry_after) from exc
        generate_ms = (time.perf_counter() - t0) * 1000

        checked = check_citations(generation.text, {p.number for p in passages})
        if checked.removed:
            logger.warning(
                "answer cited passages that were not sent; markers removed",
                extra={"removed": checked.removed, "passages": len(passages), "model": generation.model},
            )
        if checked.cited:
            text = checked.text
            message = f"Answered from {len(checked.cited)} of {len(passages)} passage(s)"
        else:
            if checked.text != NO_ANSWER:
                logger.info("answer cited no passage; replaced by the no-answer sentence")
            text = NO_ANSWER
            message = NOT_ANSWERED
        if generation.stop_reason in ("max_tokens", "length"):
            logger.info("answer stopped at max_answer_tokens", extra={"max_tokens": prompt.max_tokens})
        cited = set(checked.cited)
        return AnswerResponse(
            query=found.query,
            answer=text,
            relevant=True,
            message=message,
            citations=[
                Citation(
                    rank=r.rank, chunk_id=r.chunk_id, key=r.key, title=r.title, page=r.page, section=r.section
                )
                for r in found.results
                if r.rank in cited
            ],
            results=found.results,
            model=generation.model,
            usage=Usage(input_tokens=generation.input_tokens, output_tokens=generation.output_tokens),
            timings_ms=AnswerTimings(
                embed=timings.embed,
                search=timings.search,
                rerank=timings.rerank,
                generate=round(generate_ms, 2),
                total=round((time.perf_counter() - started) * 1000, 2),
            ),
            query_used=found.query_used,
        )
