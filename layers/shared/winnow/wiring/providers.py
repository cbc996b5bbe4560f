"""The providers' part of the composition root: secrets, the embedder (Voyage or the local model), the
Voyage connection pool and key, OCR, the sparse encoder, the answer generator and the vision model."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from winnow.errors import ConfigurationError
from winnow.wiring import Parts

if TYPE_CHECKING:
    import httpx

    from winnow.adapters.secrets import KeySource, SecretCache
    from winnow.models import EmbeddingProfile
    from winnow.ports import Embedder, Generator, Ocr
    from winnow.text.sparse import Bm25Encoder


class ProviderParts(Parts):
    # --- secrets -----------------------------------------------------------------------------------
    @cached_property
    def secrets(self) -> SecretCache:
        """Secrets Manager values, read again after ``SecretsMaxAgeSeconds`` (rotation reaches a warm
        function) or when a provider answers 401. Tests assign one with their own clock."""
        from winnow.adapters.secrets import SecretCache

        return SecretCache(self.settings.providers.secrets_max_age_seconds)

    def _secret(self, plain: object, arn: str | None) -> str | None:
        if plain is not None:
            return str(plain.get_secret_value()) if hasattr(plain, "get_secret_value") else str(plain)
        if arn:
            return self.secrets.get(arn)
        return None

    @property
    def uses_voyage_embedder(self) -> bool:
        choice = self.settings.providers.embedder
        return choice == "voyage" or (choice == "auto" and self.settings.voyage.configured)

    @property
    def uses_voyage_reranker(self) -> bool:
        choice = self.settings.providers.reranker
        return choice == "voyage" or (choice == "auto" and self.settings.voyage.configured)

    # --- embedders ---------------------------------------------------------------------------------
    @cached_property
    def embedder(self) -> Embedder:
        with self._lock:
            if self.uses_voyage_embedder:
                from winnow.adapters.voyage import VoyageEmbedder

                return VoyageEmbedder(self.settings.voyage, self._voyage_key(), self.voyage_http)
            return self._local_embedder()

    def _local_embedder(self) -> Embedder:
        from winnow.embedded import embedded

        p = self.settings.providers
        local_onnx_embedder = embedded("embedder", instead="VOYAGE_API_KEY")
        return local_onnx_embedder(
            model_path=p.local_model_path,
            tokenizer_path=p.local_tokenizer_path,
            batch_size=p.local_batch_size,
            max_tokens=p.local_max_tokens,
        )

    @cached_property
    def voyage_http(self) -> httpx.Client:
        """One connection pool shared by the Voyage embedder and re-ranker (see ``voyage_http_client``)."""
        with self._lock:
            from winnow.adapters.voyage import voyage_http_client

            return voyage_http_client(self.settings.voyage)

    def _voyage_key(self) -> str | KeySource:
        v = self.settings.voyage
        key = self._key(v.api_key, v.api_key_secret_arn)
        if not key:
            raise ConfigurationError("Voyage is selected but no key is set: set VOYAGE_API_KEY")
        return key

    def _key(self, plain: object, arn: str | None) -> str | KeySource | None:
        """The key, or with a secret ARN a source asked on every request (see ``SecretCache``), so a
        rotated key reaches a warm function."""
        key = self._secret(plain, arn)  # read now: a missing secret fails here
        return self.secrets.source(arn) if plain is None and arn and key else key

    def query_embedder(self, profile: EmbeddingProfile) -> Embedder:
        """A query embedder for ``profile`` (the collection searches still read during a rebuild)."""
        if profile == self.embedder.profile:
            return self.embedder
        if profile.provider == "voyage":
            from winnow.adapters.voyage import VoyageEmbedder

            voyage = self.settings.voyage.model_copy(
                update={"embed_model": profile.model, "output_dimension": profile.dimension}
            )
            return VoyageEmbedder(voyage, self._voyage_key(), self.voyage_http)
        if profile.provider == "local":
            embedder = self._local_embedder()
            if embedder.profile == profile:
                return embedder
        raise ConfigurationError(
            f"searches read the {profile.slug} collection but no embedder for it can be built here: "
            "finish the rebuild with reconcile, or configure that embedder"
        )

    @cached_property
    def sparse(self) -> Bm25Encoder:
        from winnow.text.sparse import Bm25Encoder

        return Bm25Encoder()

    # --- OCR and generators ------------------------------------------------------------------------
    @cached_property
    def ocr(self) -> Ocr | None:
        """Textract in Lambda, the local engine elsewhere (when installed), or None (OCR off)."""
        with self._lock:
            from winnow.adapters.ocr import make_ocr

            return make_ocr(self.settings.ocr)

    @cached_property
    def generator(self) -> Generator:
        """The answer generator; ``FeatureDisabled`` (501 on ``/answer``) when none is configured."""
        with self._lock:
            a = self.settings.answer
            chosen = a.chosen
            if chosen == "bedrock":
                from winnow.adapters.bedrock import BedrockGenerator

                return BedrockGenerator(a)
            if chosen == "ollama":
                from winnow.adapters.ollama import OllamaGenerator

                return OllamaGenerator(a)
            from winnow.errors import FeatureDisabled

            raise FeatureDisabled(
                "answers are not enabled here: in AWS deploy with AnswerGenerator=bedrock (BedrockModelId "
                "names the model); on the embedded default set OLLAMA_HOST to a running Ollama server "
                "(and WINNOW_ANSWER_OLLAMA_MODEL to a pulled model)"
            )

    @cached_property
    def vision(self) -> Generator | None:
        """The model that describes figures (``FigureSettings``), on the answer's provider settings;
        None when off."""
        with self._lock:
            figures, answer = self.settings.figures, self.settings.answer
            chosen = figures.chosen(answer)
            if chosen == "bedrock":
                from winnow.adapters.bedrock import BedrockGenerator

                return BedrockGenerator(
                    answer.model_copy(update={"bedrock_model_id": figures.bedrock_model_id})
                )
            if chosen == "ollama":
                from winnow.adapters.ollama import OllamaGenerator

                return OllamaGenerator(answer.model_copy(update={"ollama_model": figures.ollama_model}))
            return None

    def _rewriter(self) -> Generator | None:
        """The answer generator, or None where answers are off (follow-ups are then rewritten by rule)."""
        from winnow.errors import FeatureDisabled

        try:
            return self.generator
        except FeatureDisabled:
            return None
