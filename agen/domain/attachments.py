"""Files a task is given with its input (images, PDFs, text): what is accepted, the limits, and
how they are stored.

A file is stored once per namespace as an artifact named by the sha256 of its bytes (binary files
as base64 text, text files as they are), and a task, its run's first message and a replay cassette
carry ``Attachment`` references to it (agen.domain.artifacts.save_files_tx stores them), so a resumed run, a later turn of the conversation and a
replay send the model the same bytes. The type is read from the bytes (magic numbers; UTF-8 for
text), not trusted from a name or a declared type: a declared type that disagrees is refused.
"""

from __future__ import annotations

import base64
import binascii
from pathlib import PurePath

from pydantic import BaseModel, ConfigDict, Field

from agen.errors import InvalidError

MAX_FILE_BYTES = 10 * 1024 * 1024
MAX_TOTAL_BYTES = 20 * 1024 * 1024
MAX_FILES = 20
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
PDF = "application/pdf"
TEXT_TYPES = ("text/plain", "text/markdown", "text/csv", "application/json")
_TEXT_BY_SUFFIX = {".md": "text/markdown", ".csv": "text/csv", ".json": "application/json"}
_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"%PDF-", PDF),
)


class Attachment(BaseModel):
    """A file given to a task, stored as an artifact of its namespace."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(description="the artifact: sha256:<hex> of the file's bytes")
    name: str = Field(description="the file's name, as given")
    media_type: str = Field(description="what the bytes are: an image, application/pdf or text")
    size: int = Field(description="bytes")

    @property
    def is_text(self) -> bool:
        return self.media_type in TEXT_TYPES

    def describe(self) -> str:
        return f"{self.name} ({self.media_type}, {self.size} bytes)"


class FileIn(BaseModel):
    """A file as a request carries it: its name, its bytes as base64, optionally its declared type."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=255, description="the file's name")
    data: str = Field(description="the file's bytes, base64")
    media_type: str | None = Field(
        None, description="the declared type; it must match the bytes (default: read from them)"
    )


def media_type_of(name: str, data: bytes) -> str:
    """The type of a file's bytes, or InvalidError saying what is accepted."""
    for magic, kind in _MAGIC:
        if data.startswith(magic):
            return kind
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if b"\x00" not in data:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            pass
        else:
            return _TEXT_BY_SUFFIX.get(PurePath(name).suffix.lower(), "text/plain")
    raise InvalidError(
        f"file {name} ({len(data)} bytes) is not an image (png, jpeg, gif, webp), a PDF or UTF-8 "
        "text; convert it to one of those to attach it",
        field="attachments",
    )


def check_file(name: str, data: bytes, declared: str | None = None) -> str:
    """The media type of one file within the limits, or InvalidError naming the file."""
    if len(data) > MAX_FILE_BYTES:
        raise InvalidError(
            f"file {name} is {len(data)} bytes; a file may have at most {MAX_FILE_BYTES} bytes "
            "(10 MiB): shrink or split it",
            field="attachments",
        )
    if not data:
        raise InvalidError(f"file {name} is empty; attach a file with content", field="attachments")
    kind = media_type_of(name, data)
    if declared and declared.split(";")[0].strip().lower() != kind:
        plain = declared.split(";")[0].strip().lower()
        if not (kind in TEXT_TYPES and plain in TEXT_TYPES):
            raise InvalidError(
                f"file {name} is declared {declared} but its bytes are {kind}; send it with its "
                "real type",
                field="attachments",
            )
        kind = plain
    return kind


def check_files(files: list[tuple[str, bytes, str | None]]) -> list[str]:
    """The media type of each (name, bytes, declared type), the count and total within the limits."""
    if len(files) > MAX_FILES:
        raise InvalidError(
            f"{len(files)} files attached; at most {MAX_FILES} per task", field="attachments"
        )
    total = sum(len(data) for _, data, _ in files)
    if total > MAX_TOTAL_BYTES:
        raise InvalidError(
            f"the attached files have {total} bytes together; at most {MAX_TOTAL_BYTES} bytes "
            "(20 MiB) per task",
            field="attachments",
        )
    return [check_file(name, data, declared) for name, data, declared in files]


def decode_files(files: list[FileIn]) -> list[tuple[str, bytes, str | None]]:
    """(name, bytes, declared type) of request files; InvalidError for data that is not base64."""
    out = []
    for f in files:
        try:
            data = base64.b64decode(f.data, validate=True)
        except (binascii.Error, ValueError):
            raise InvalidError(
                f"file {f.name}: data is not base64; send the file's bytes base64-encoded",
                field="attachments",
            ) from None
        out.append((f.name, data, f.media_type))
    return out


def stored_text(media_type: str, data: bytes) -> str:
    """How a file's bytes are kept in the artifacts table (its content column is text)."""
    return data.decode("utf-8") if media_type in TEXT_TYPES else base64.b64encode(data).decode()


def file_bytes(media_type: str, content: str) -> bytes:
    """A stored file's bytes back (stored_text's inverse)."""
    return content.encode() if media_type in TEXT_TYPES else base64.b64decode(content)
