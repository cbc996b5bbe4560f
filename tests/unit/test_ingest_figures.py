"""The per-document bounds of describing figures with a vision model (``winnow.ingest.figures``): the time
bound, driven by a clock the test owns (the calls and tokens bounds are tested through the loopback
Bedrock fake in tests/integration/test_figure_vision.py)."""

from __future__ import annotations

from tests.support.figure_docs import INTRO, SAMPLE_FIGURES, figure_docx
from winnow.ingest.figures import describe_figures
from winnow.parsing import parse_document
from winnow.ports import Generation, Generator, Prompt
from winnow.settings import FigureSettings


class SlowVision(Generator):
    """A vision model whose every call takes ``seconds`` on the test's clock."""

    def __init__(self, clock: list[float], seconds: float) -> None:
        self.clock = clock
        self.seconds = seconds
        self.calls = 0

    @property
    def model(self) -> str:
        return "slow-vision"

    def generate(self, prompt: Prompt, deadline: float | None = None) -> Generation:
        self.calls += 1
        self.clock[0] += self.seconds
        return Generation(f"Described figure {self.calls}.", self.model, 100, 20)


def test_figures_past_the_time_budget_keep_their_caption() -> None:
    # Given a document of three figures and a vision model that takes 50 s a call, with 80 s per document
    parsed = parse_document("acme/report.docx", figure_docx(SAMPLE_FIGURES, intro=INTRO))
    assert sum(block.figure is not None for block in parsed.blocks) == 3
    now = [1000.0]
    vision = SlowVision(now, seconds=50)
    settings = FigureSettings(vision="bedrock", bedrock_model_id="m", max_seconds=80)
    # When its figures are described
    described, use = describe_figures(parsed, vision, settings, clock=lambda: now[0])
    # Then the calls stop once the budget is spent (at 0 s and 50 s; not at 100 s), and the third
    # figure keeps its caption and OCR text
    assert vision.calls == 2 and use.calls == 2 and use.tokens == 240
    kinds = [b.figure.figure_text for b in described.blocks if b.figure is not None]
    assert kinds.count("vision") == 2 and "vision" not in kinds[2:]
    # And with time to spare every figure is described
    now[0] = 0.0
    everything = FigureSettings(vision="bedrock", bedrock_model_id="m", max_seconds=900)
    _, use = describe_figures(parsed, SlowVision(now, seconds=50), everything, clock=lambda: now[0])
    assert use.calls == 3
