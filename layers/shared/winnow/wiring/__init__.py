"""The parts the composition root (``winnow.factory.Container``) is assembled from, one mixin per
concern: ``providers`` (secrets, embedders, OCR, generators), ``records`` (bucket, ledger, checkpoints,
conversations). Each builds its objects lazily, once, under the root's lock; none imports the root."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from winnow.settings import (
    AnswerSettings,
    ChunkingSettings,
    ConversationSettings,
    FigureSettings,
    IngestSettings,
    OcrSettings,
    ProviderSettings,
    QdrantSettings,
    ReconcileSettings,
    RerankServerSettings,
    SearchSettings,
    StorageSettings,
    VoyageSettings,
)


@dataclass
class Settings:
    """Every settings class, read from the environment when the bundle is created."""

    storage: StorageSettings = field(default_factory=StorageSettings)
    qdrant: QdrantSettings = field(default_factory=QdrantSettings)
    voyage: VoyageSettings = field(default_factory=VoyageSettings)
    providers: ProviderSettings = field(default_factory=ProviderSettings)
    rerank_server: RerankServerSettings = field(default_factory=RerankServerSettings)
    chunking: ChunkingSettings = field(default_factory=ChunkingSettings)
    ingest: IngestSettings = field(default_factory=IngestSettings)
    search: SearchSettings = field(default_factory=SearchSettings)
    answer: AnswerSettings = field(default_factory=AnswerSettings)
    figures: FigureSettings = field(default_factory=FigureSettings)
    ocr: OcrSettings = field(default_factory=OcrSettings)
    reconcile: ReconcileSettings = field(default_factory=ReconcileSettings)
    conversations: ConversationSettings = field(default_factory=ConversationSettings)

    def __post_init__(self) -> None:
        if self.qdrant.url is None:  # the embedded default: Edge and the local model share this process
            self.ingest = self.ingest.embedded()


class Parts:
    """What every part reads of the root: its settings and its (re-entrant) lock."""

    settings: Settings
    _lock: threading.RLock
