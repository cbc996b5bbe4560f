"""OCR adapters behind the ``Ocr`` port, and the choice between them.

- ``TextractOcr``: Amazon Textract's synchronous ``DetectDocumentText``, one call per page (a one-page PDF
  or an image; sync calls take one page of at most 10 MB), at most ``max_concurrency`` pages at once.
  botocore's standard retry mode backs off on throttling and 5xx; what is left after ``max_attempts`` is
  translated like every AWS error (``ProviderRateLimited`` / ``ProviderUnavailable``, so SQS retries the
  document later). A page Textract cannot read (bad or unsupported image, too large) gives no text and
  does not fail the document. No new package: boto3 comes from the Lambda runtime.
- ``TesseractOcr``: Debian's ``tesseract-ocr`` (its English model comes in the package, so nothing is
  downloaded at run time), run as a command under an address-space cap (``local_memory_mb``, set with
  ``prlimit`` on the child before it is handed the page: no ``preexec_fn``, which is unsafe in a threaded
  process), one process per core at most. Chosen by measurement over PyPI's ``rapidocr-onnxruntime``,
  which ships its models in the wheel but missed whole lines and dropped spaces on the same 200-dpi
  scans (training/NOTEBOOK.md, "Documents as people have them"). ``make demo`` installs it with apt.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from io import BytesIO
from typing import TYPE_CHECKING, Any

from winnow.errors import ConfigurationError, ParseBudgetExceeded, ProviderRateLimited, ProviderRejected
from winnow.observability import IN_LAMBDA, logger
from winnow.ports import Ocr, OcrPage

if TYPE_CHECKING:
    from winnow.settings import OcrSettings

# Textract's answers for one page it cannot read: that page has no text, the others still count.
_UNREADABLE_PAGE = frozenset(
    {
        "BadDocumentException",
        "UnsupportedDocumentException",
        "DocumentTooLargeException",
        "InvalidParameterException",
    }
)
_TEXTRACT_THROTTLES = frozenset({"LimitExceededException", "ProvisionedThroughputExceededException"})


def make_ocr(settings: OcrSettings) -> Ocr | None:
    """The configured engine. ``auto``: Textract in Lambda, else RapidOCR when installed, else None."""
    engine = settings.engine
    if engine == "none":
        return None
    if engine == "textract" or (engine == "auto" and IN_LAMBDA):
        return TextractOcr(settings)
    if engine == "local" or tesseract_installed():
        return TesseractOcr(settings)
    return None


class TextractOcr(Ocr):
    def __init__(self, settings: OcrSettings, client: Any | None = None) -> None:
        self._settings = settings
        self._client = client
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return "textract"

    def _textract(self) -> Any:
        with self._lock:
            if self._client is None:
                from winnow.adapters._aws import make_client

                self._client = make_client("textract", self._settings.max_attempts)
            return self._client

    def read(self, pages: Sequence[OcrPage], *, deadline: float | None = None) -> list[str]:
        if not pages:
            return []
        client = self._textract()
        workers = min(self._settings.max_concurrency, len(pages))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="textract") as pool:
            return list(pool.map(lambda page: self._read_page(client, page, deadline), pages))

    def _read_page(self, client: Any, page: OcrPage, deadline: float | None) -> str:
        from winnow.adapters._aws import error_code, translate

        if len(page.data) > self._settings.textract_max_bytes or _past(deadline):
            return ""
        try:
            response = client.detect_document_text(Document={"Bytes": page.data})
        except Exception as exc:
            code = error_code(exc)
            if code in _UNREADABLE_PAGE:
                logger.info("textract could not read a page", extra={"code": code})
                return ""
            if code in _TEXTRACT_THROTTLES:
                raise ProviderRateLimited(f"Textract: throttled ({code})", retry_after=5) from exc
            translated = translate(exc, "Textract")
            if translated is None:
                raise
            raise translated from exc
        return "\n".join(_textract_lines(response))


def _textract_lines(response: Any) -> list[str]:
    """LINE blocks in the order Textract gives them (its reading order), from an answer that may be
    malformed: anything unexpected in it is skipped, never trusted."""
    if not isinstance(response, dict):
        raise ProviderRejected("Textract: malformed answer")
    blocks = response.get("Blocks") or []
    if not isinstance(blocks, list):
        raise ProviderRejected("Textract: malformed answer")
    return [
        block["Text"]
        for block in blocks
        if isinstance(block, dict) and block.get("BlockType") == "LINE" and isinstance(block.get("Text"), str)
    ]


class TesseractOcr(Ocr):
    """The local engine: Debian's ``tesseract`` command, one process per page (``OMP_THREAD_LIMIT=1``: a
    page per core reads faster than one page on every core), at most ``max_concurrency`` at once."""

    def __init__(
        self, settings: OcrSettings, command: str = "tesseract", timeout_seconds: float = 120
    ) -> None:
        self._settings = settings
        self._command = command
        self._timeout = timeout_seconds

    @property
    def name(self) -> str:
        return "tesseract"

    def read(self, pages: Sequence[OcrPage], *, deadline: float | None = None) -> list[str]:
        import os

        if not pages:
            return []
        # One page per core (each process is single-threaded): more only adds processes' memory.
        workers = min(self._settings.max_concurrency, len(pages), os.cpu_count() or 1)
        stop = threading.Event()  # a page over the memory cap fails the document: start no other page
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tesseract") as pool:
            return list(pool.map(lambda page: self._read_page(page, deadline, stop), pages))

    def _read_page(self, page: OcrPage, deadline: float | None, stop: threading.Event) -> str:
        import os
        import signal
        import subprocess

        if stop.is_set() or _past(deadline):
            return ""
        prepared = page_png(page, self._settings)
        timeout = self._timeout if deadline is None else min(self._timeout, deadline - time.monotonic())
        if prepared is None or timeout <= 0:
            return ""
        png, dpi = prepared
        command = [self._command, "stdin", "stdout", "-l", "eng", "--psm", "3"]
        if dpi:
            command += ["--dpi", str(dpi)]
        try:
            process = subprocess.Popen(  # noqa: S603 - fixed command, image bytes on stdin
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env={**os.environ, "OMP_THREAD_LIMIT": "1"},
            )
        except FileNotFoundError as exc:
            raise ConfigurationError(
                "local OCR needs Debian's tesseract-ocr: run `make demo`, or set WINNOW_OCR_ENGINE=none"
            ) from exc
        try:
            cap_address_space(process.pid, self._settings.local_memory_mb)
            out, err = process.communicate(png, timeout=timeout)
        except subprocess.TimeoutExpired:
            logger.info("tesseract timed out on a page")
            return ""
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate()
        if process.returncode == 0:
            return out.decode("utf-8", errors="replace")
        if b"bad_alloc" in err or process.returncode in (-signal.SIGABRT, -signal.SIGKILL):
            stop.set()
            raise ParseBudgetExceeded(
                f"OCR of a page needs more than the {self._settings.local_memory_mb} MB memory budget"
                " of local OCR (WINNOW_OCR_LOCAL_MEMORY_MB)"
            )
        logger.info("tesseract could not read a page", extra={"returncode": process.returncode})
        return ""


def cap_address_space(pid: int, memory_mb: int) -> None:
    """Lower a child's address-space limit (``RLIMIT_AS``): an allocation past it fails in that process
    (tesseract aborts with ``bad_alloc``), never in ours. Lowering a limit needs no privilege."""
    import resource
    from contextlib import suppress

    limit = memory_mb * 1024 * 1024
    with suppress(ProcessLookupError):  # it already exited: nothing left to cap
        resource.prlimit(pid, resource.RLIMIT_AS, (limit, limit))


def _past(deadline: float | None) -> bool:
    return deadline is not None and time.monotonic() >= deadline


def tesseract_installed(command: str = "tesseract") -> bool:
    import shutil

    return shutil.which(command) is not None


def page_png(page: OcrPage, settings: OcrSettings) -> tuple[bytes, int | None] | None:
    """The page as PNG bytes and its resolution (when known), or None when it holds no readable image."""
    image = page_image(page, settings)
    if image is None:
        return None
    pil, dpi = image
    out = BytesIO()
    pil.save(out, format="PNG")
    return out.getvalue(), dpi


def page_image(page: OcrPage, settings: OcrSettings) -> tuple[Any, int | None] | None:
    """The page as a Pillow image and its dpi (when known), or None when it holds no readable image.
    Sizes are checked on the header (an image file) or the PDF's declared /Width and /Height before
    anything is decoded."""
    from PIL import Image

    from winnow.parsing.images import check_image

    Image.MAX_IMAGE_PIXELS = settings.max_image_pixels
    try:
        if page.media_type == "application/pdf":
            return _largest_pdf_image(page.data, settings)
        check_image(
            page.data,
            page.media_type,
            max_pixels=settings.max_image_pixels,
            max_side=settings.max_side_pixels,
        )
        with Image.open(BytesIO(page.data)) as opened:
            opened.seek(0)  # a multi-page TIFF: its first page
            dpi = opened.info.get("dpi")
            return opened.convert("L"), int(dpi[0]) if dpi and dpi[0] else None
    except Exception as exc:
        logger.info("page image unreadable", extra={"error_type": type(exc).__name__})
        return None


def _largest_pdf_image(data: bytes, settings: OcrSettings) -> Any:
    """A scanned page is one image (sometimes strips of one): the largest image XObject of the page,
    decoded only when its declared size is within the limits."""
    from pypdf import PdfReader

    page = PdfReader(BytesIO(data), strict=False).pages[0]
    best: tuple[int, Any, int] | None = None
    resources = page.get("/Resources")
    xobjects = resources.get_object().get("/XObject") if resources is not None else None
    if xobjects is None:
        return None
    for name, reference in xobjects.get_object().items():
        xobject = reference.get_object()
        if xobject.get("/Subtype") != "/Image":
            continue
        width, height = int(xobject.get("/Width", 0)), int(xobject.get("/Height", 0))
        if max(width, height) > settings.max_side_pixels or width * height > settings.max_image_pixels:
            continue
        if best is None or width * height > best[0]:
            best = (width * height, name, width)
    if best is None:
        return None
    page_inches = float(page.mediabox.width) / 72
    dpi = round(best[2] / page_inches) if page_inches > 0 else None
    for image in page.images:
        if image.name.lstrip("/").split(".")[0] == str(best[1]).lstrip("/"):
            return (image.image.convert("L"), dpi) if image.image is not None else None
    return None
