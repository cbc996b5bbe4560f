"""The parse worker: ``python -m winnow.parsing.worker MEMORY_MB``, started by ``winnow.parsing.budget``.

It caps its own address space, then answers parse requests on stdin/stdout until stdin closes. After a
``MemoryError`` it answers and exits: memory may be fragmented or half-freed, and a fresh worker costs
less than a doubt.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import IO, Any

from winnow.parsing.budget import ANSWER_HEADER, REQUEST_HEADER, ErrorWire, WorkerAnswer, encode_result


def limit_memory(memory_mb: int) -> None:
    """Cap this process's address space. Lowering a limit needs no privilege, also in Lambda."""
    import resource

    limit = memory_mb * 1024 * 1024
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def main(argv: list[str]) -> int:
    memory_mb = int(argv[0])
    requests, answers = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # a stray print from a library must not corrupt the answer channel
    # Import the parsers before capping memory: a big file should fail on its own size, not on ours.
    from winnow.parsing import parse_document

    limit_memory(memory_mb)
    while True:
        header = _read(requests, REQUEST_HEADER.size)
        if header is None:
            return 0
        settings_length, key_length, data_length = REQUEST_HEADER.unpack(header)
        settings_json = _read(requests, settings_length)
        key = _read(requests, key_length)
        data = _read(requests, data_length)
        if settings_json is None or key is None or data is None:
            return 1
        answer, exhausted = _answer(parse_document, settings_json, key, data, memory_mb, requests, answers)
        del data
        if exhausted:
            answer["retire"] = True  # tells the pool not to hand this worker another document
        body = json.dumps(answer, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
        answers.write(ANSWER_HEADER.pack(len(body)))
        answers.write(body)
        answers.flush()
        if exhausted:
            return 0


def _answer(
    parse: Any,
    settings_json: bytes,
    key: bytes,
    data: bytes,
    memory_mb: int,
    requests: IO[bytes],
    answers: IO[bytes],
) -> tuple[WorkerAnswer, bool]:
    """(the answer, whether memory ran out)."""
    from winnow.errors import DocumentError
    from winnow.settings import IngestSettings, OcrSettings

    over_budget = ErrorWire(
        type="ParseBudgetExceeded", message=f"parsing needs more than the {memory_mb} MB memory budget"
    )
    try:
        request = json.loads(settings_json)
        settings = IngestSettings.model_validate(request["ingest"])
        ocr_settings = None if request["ocr"] is None else OcrSettings.model_validate(request["ocr"])
        ocr = None if ocr_settings is None else ParentOcr(requests, answers)
        document = parse(
            key.decode("utf-8", "surrogatepass"), data, settings, ocr=ocr, ocr_settings=ocr_settings
        )
        return encode_result(document), False
    except DocumentError as error:
        if isinstance(error.__cause__, MemoryError):  # a parser that turned it into its own reason
            return {"error": over_budget}, True
        message = str(error).splitlines()[0] if str(error) else type(error).__name__
        return {"error": ErrorWire(type=type(error).__name__, message=message)}, False
    except MemoryError:
        return {"error": over_budget}, True
    except ImportError as error:
        return {"error": ErrorWire(type="ImportError", message=str(error))}, False
    except Exception as error:  # a parser bug on hostile input must not crash the batch
        reason = f"could not parse file ({type(error).__name__})"
        return {"error": ErrorWire(type="CorruptDocument", message=reason)}, False


class ParentOcr:
    """The ``Ocr`` the parsers see inside the worker: it hands the pages to the ingest process, which
    reads them with the real engine (Textract, tesseract) and its retries, and sends the texts back."""

    name = "parent"

    def __init__(self, requests: IO[bytes], answers: IO[bytes]) -> None:
        self._requests, self._answers = requests, answers

    def read(self, pages: Sequence[Any], *, deadline: float | None = None) -> list[str]:
        """``deadline`` is the ingest process's to keep (it holds the budget's clock)."""
        described = [
            {
                "media_type": page.media_type,
                "length": len(page.data),
                "figure": bool(getattr(page, "figure", False)),
            }
            for page in pages
        ]
        body = json.dumps({"ocr": described}).encode()
        self._answers.write(ANSWER_HEADER.pack(len(body)))
        self._answers.write(body)
        for page in pages:
            self._answers.write(page.data)
        self._answers.flush()
        header = _read(self._requests, ANSWER_HEADER.size)
        reply = None if header is None else _read(self._requests, ANSWER_HEADER.unpack(header)[0])
        if reply is None:
            raise SystemExit(1)  # the ingest process gave up on this document (an OCR outage): stop
        texts = json.loads(reply)["texts"]
        return [str(text) for text in texts]


def _read(stream: IO[bytes], size: int) -> bytes | None:
    parts: list[bytes] = []
    remaining = size
    while remaining:
        chunk = stream.read(remaining)
        if not chunk:
            return None
        parts.append(chunk)
        remaining -= len(chunk)
    return b"".join(parts)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
