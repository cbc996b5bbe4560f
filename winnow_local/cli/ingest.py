"""``winnow ingest`` and ``winnow delete``: files into (or out of) the local bucket, and the resulting S3
notification through the ingest handler."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from winnow.errors import InvalidKey
from winnow.ingest.results import IngestOutcome
from winnow.rules import object_key, path_in_tenant, split_key
from winnow_local.cli.common import (
    FAILED_STATUSES,
    INGEST_FIELDS,
    SIDECAR_SUFFIX,
    TENANT_HELP,
    Progress,
    check_prefix,
    check_tenant,
    print_json,
)
from winnow_local.errors import CliError
from winnow_local.runtime import DEFAULT_TENANT, LocalRuntime, Upload


def format_ingest(result: dict[str, Any]) -> str:
    status = str(result.get("status"))
    key = str(result.get("key"))
    if status in FAILED_STATUSES or (result.get("error") and status != IngestOutcome.SKIPPED):
        return f"{status:<9}  {key}  {result.get('error') or ''}".rstrip()
    if status in (IngestOutcome.INDEXED, IngestOutcome.UNCHANGED):
        embedded, reused = result.get("embedded", 0), result.get("reused", 0)
        chunks = result.get("chunks", 0)
        detail = f"{chunks} chunk{'' if chunks == 1 else 's'} ({embedded} embedded, {reused} reused)"
        return f"{status:<9}  {key}  {detail}"
    extra = f"  {result['error']}" if result.get("error") else ""
    return f"{status:<9}  {key}{extra}"


def ingest_record(result: dict[str, Any]) -> dict[str, Any]:
    return {name: result.get(name) for name in INGEST_FIELDS}


@dataclass(frozen=True)
class LocalFile:
    """A file to ingest, the key it gets, and its sidecar when one sits next to it."""

    path: Path
    key: str
    sidecar: Path | None = None


def _hidden(path: Path, root: Path) -> bool:
    return any(part.startswith(".") for part in path.relative_to(root).parts)


def collect_files(paths: Sequence[str], tenant: str, prefix: str) -> list[LocalFile]:
    """Expand files and folders into the objects to upload: ``<tenant>/<prefix><relative path>``, the path
    relative to a folder argument, or a file argument's name. Sidecars found in folders travel with their
    document; hidden files and folders are left out."""
    found: list[LocalFile] = []
    seen: dict[str, Path] = {}

    def add(path: Path, relative: str, sidecar: Path | None) -> None:
        key = object_key(tenant, prefix + relative)
        if key in seen and seen[key] != path:
            raise CliError(f"{seen[key]} and {path} would both become {key}; use --prefix to tell them apart")
        if key not in seen:
            seen[key] = path
            found.append(LocalFile(path, key, sidecar))

    for raw in paths:
        path = Path(raw).expanduser()
        if path.is_dir():
            files = sorted(p for p in path.rglob("*") if p.is_file() and not _hidden(p, path))
            names = {p for p in files}
            for file in files:
                if (
                    file.name.endswith(SIDECAR_SUFFIX)
                    and file.with_name(file.name[: -len(SIDECAR_SUFFIX)]) in names
                ):
                    continue  # uploaded with its document
                sidecar = file.with_name(file.name + SIDECAR_SUFFIX)
                add(file, file.relative_to(path).as_posix(), sidecar if sidecar in names else None)
        elif path.is_file():
            sidecar = path.with_name(path.name + SIDECAR_SUFFIX)
            add(
                path,
                path.name,
                sidecar if sidecar.is_file() and not path.name.endswith(SIDECAR_SUFFIX) else None,
            )
        else:
            raise CliError(f"no such file or folder: {raw}")
    return found


# Files sent through the handler in one notification: their documents' texts are embedded together.
# Bounded by count and bytes, so a folder of large files never sits in memory at once.
FILES_PER_NOTIFICATION = 32
BYTES_PER_NOTIFICATION = 8 * 1024 * 1024


def notification_groups(files: Sequence[LocalFile]) -> list[list[LocalFile]]:
    """Consecutive groups of at most ``FILES_PER_NOTIFICATION`` files and ``BYTES_PER_NOTIFICATION``
    bytes (by the size on disk; a larger file goes alone)."""
    groups: list[list[LocalFile]] = []
    current: list[LocalFile] = []
    used = 0
    for file in files:
        try:
            size = file.path.stat().st_size + (file.sidecar.stat().st_size if file.sidecar else 0)
        except OSError:
            size = 0  # reported when read
        if current and (len(current) >= FILES_PER_NOTIFICATION or used + size > BYTES_PER_NOTIFICATION):
            groups.append(current)
            current, used = [], 0
        current.append(file)
        used += size
    if current:
        groups.append(current)
    return groups


def _uploads(file: LocalFile) -> list[Upload]:
    try:
        data = file.path.read_bytes()
        sidecar = file.sidecar.read_bytes() if file.sidecar else None
    except OSError as exc:
        raise CliError(f"cannot read {file.path}: {exc.strerror or exc}") from exc
    uploads = [Upload(file.key, data)]
    if sidecar is not None:
        uploads.append(Upload(file.key + SIDECAR_SUFFIX, sidecar))
    return uploads


def ingest_files(
    runtime: LocalRuntime, files: Sequence[LocalFile], *, as_json: bool, out: IO[str] | None = None
) -> list[dict[str, Any]]:
    """Upload and ingest the files (with their sidecars) a group at a time, their embedding shared, and
    print one line per document."""
    out = out or sys.stdout
    progress = Progress(len(files))
    results: list[dict[str, Any]] = []
    progress.draw()
    for group in notification_groups(files):
        progress.draw(group[0].key)
        outcome = runtime.put_and_ingest([upload for file in group for upload in _uploads(file)])
        by_key = {str(r.get("key")): r for r in outcome}
        progress.clear()
        for file in group:
            document = by_key.get(file.key) or {
                "key": file.key,
                "status": IngestOutcome.FAILED.value,
                "error": "the ingest handler returned no result for this document",
            }
            # A sidecar's own result matters only when it is broken (its metadata was then ignored).
            sidecar = by_key.get(file.key + SIDECAR_SUFFIX) if file.sidecar else None
            shown = [document] + ([sidecar] if sidecar and sidecar.get("status") in FAILED_STATUSES else [])
            for result in shown:
                if as_json:
                    print_json(ingest_record(result), out)
                else:
                    print(format_ingest(result), file=out, flush=True)
                results.append(result)
            progress.advance(file.key)
    progress.clear()
    return results


def summary(results: Iterable[dict[str, Any]]) -> str:
    counts: dict[str, int] = {}
    total = 0
    for result in results:
        counts[str(result.get("status"))] = counts.get(str(result.get("status")), 0) + 1
        total += 1
    parts = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    return f"{total} object{'s' if total != 1 else ''}: {parts}" if total else "nothing to ingest"


def cmd_ingest(args: argparse.Namespace) -> int:
    tenant = check_tenant(args.tenant)
    files = collect_files(args.paths, tenant, check_prefix(args.prefix))
    if not files:
        raise CliError("no files found to ingest (hidden files are skipped)")
    results = ingest_files(LocalRuntime(), files, as_json=args.json)
    if not args.json:
        print(summary(results), file=sys.stderr)
    return 1 if any(r.get("status") in FAILED_STATUSES for r in results) else 0


def cmd_delete(args: argparse.Namespace) -> int:
    runtime = LocalRuntime()
    tenant = check_tenant(args.tenant) if args.tenant else None
    results: list[dict[str, Any]] = []
    for raw in args.keys:
        key = raw if tenant is None else object_key(tenant, path_in_tenant(tenant, raw))
        try:
            key_tenant, _ = split_key(key)
        except InvalidKey:
            raise CliError(
                f"{raw!r} is not a full key: give <tenant>/<path> as `winnow documents` shows it, "
                "or add --tenant"
            ) from None
        keys = [key] + ([key + SIDECAR_SUFFIX] if runtime.object_exists(key + SIDECAR_SUFFIX) else [])
        if not runtime.object_exists(key):
            raise CliError(
                f"no object {key!r} in the local bucket; `winnow documents --tenant {key_tenant}` lists them"
            )
        outcome = runtime.delete_and_ingest(keys)
        for result in outcome:
            if result.get("key") != key and result.get("status") not in FAILED_STATUSES:
                continue
            results.append(result)
            if args.json:
                print_json(ingest_record(result))
            else:
                print(format_ingest(result), flush=True)
    return 1 if any(r.get("status") in FAILED_STATUSES for r in results) else 0


def add_parsers(commands: Any) -> None:
    ingest = commands.add_parser(
        "ingest",
        help="index files or folders",
        description="Put files into the local bucket as <tenant>/<prefix><relative path> and run the ingest "
        "handler on each. Folders are read recursively; a <file>.metadata.json next to a file is its "
        "sidecar.",
    )
    ingest.add_argument("paths", nargs="+", metavar="PATH")
    ingest.add_argument("--tenant", default=DEFAULT_TENANT, help=TENANT_HELP)
    ingest.add_argument("--prefix", default="", help="prepended to every key after the tenant, e.g. 'docs/'")
    ingest.add_argument("--json", action="store_true", help="one JSON object per document")
    ingest.set_defaults(func=cmd_ingest)

    delete = commands.add_parser(
        "delete",
        help="remove documents",
        description="Remove objects (and their sidecars) and run the delete events.",
    )
    delete.add_argument(
        "keys", nargs="+", metavar="KEY", help="<tenant>/<path>, as `winnow documents --json` shows"
    )
    delete.add_argument("--tenant", default=None, help="accept keys relative to this tenant")
    delete.add_argument("--json", action="store_true", help="one JSON object per document")
    delete.set_defaults(func=cmd_delete)
