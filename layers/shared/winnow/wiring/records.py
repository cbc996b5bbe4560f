"""The records' part of the composition root: the bucket, the ledger, the embedding checkpoints and the
conversation store; each on AWS when its setting names a resource, else the embedded default."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from winnow.wiring import Parts

if TYPE_CHECKING:
    from winnow.conversations.store import ConversationStore
    from winnow.ports import Ledger, ObjectSource, VectorCheckpoint


class RecordParts(Parts):
    @cached_property
    def ledger(self) -> Ledger:
        with self._lock:
            s = self.settings.storage
            if s.ledger_table:
                from winnow.adapters.ledger_dynamodb import DynamoDbLedger

                return DynamoDbLedger(s.ledger_table)
            from winnow.embedded import embedded

            sqlite_ledger = embedded("ledger", instead="WINNOW_LEDGER_TABLE")
            s.home.mkdir(parents=True, exist_ok=True)
            return sqlite_ledger(s.sqlite_path)

    @cached_property
    def vector_checkpoint(self) -> VectorCheckpoint | None:
        """Where a large document's finished embedding groups wait for a retry: the DynamoDB ledger's
        table in AWS; none in the embedded default (no redelivery there)."""
        table = self.settings.storage.ledger_table
        if not table:
            return None
        from winnow.adapters.checkpoint_dynamodb import DynamoDbVectorCheckpoint

        return DynamoDbVectorCheckpoint(table)

    @cached_property
    def objects(self) -> ObjectSource:
        with self._lock:
            s = self.settings.storage
            if s.bucket:
                from winnow.adapters.objects_s3 import S3ObjectSource

                return S3ObjectSource(s.bucket)
            from winnow.embedded import embedded

            folder_bucket = embedded("objects", instead="WINNOW_BUCKET")
            s.local_bucket_dir.mkdir(parents=True, exist_ok=True)
            return folder_bucket(s.local_bucket_dir)

    @cached_property
    def conversation_store(self) -> ConversationStore:
        """DynamoDB when ``WINNOW_CONVERSATION_TABLE`` is set, else SQLite beside the ledger."""
        with self._lock:
            c = self.settings.conversations
            if c.table:
                from winnow.adapters.conversations_dynamodb import DynamoDbConversationStore

                return DynamoDbConversationStore(c.table)
            from winnow.embedded import embedded

            sqlite_conversations = embedded("conversations", instead="WINNOW_CONVERSATION_TABLE")
            home = self.settings.storage.home
            store: ConversationStore = sqlite_conversations(home / "conversations.sqlite3")
            return store
