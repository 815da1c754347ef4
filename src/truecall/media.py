"""Images, audio and files a tool returns: ``return Image(path="chart.png")``.

The same names and arguments as FastMCP's and the SDK's (``Image(path=...)`` or
``Image(data=..., format="png")``), so a tool written for them returns the same block here.  A
tool may return one, or a list mixing them with text and other content blocks; each becomes one
content block of the result (an image or audio block; a file is an embedded resource).
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from .results import embedded_resource

__all__ = ["Image", "Audio", "File"]


class _Media:
    """Bytes from ``path`` or ``data`` (exactly one), and their MIME type."""

    kind = "application"
    default_mime = "application/octet-stream"

    def __init__(self, path: str | Path | None = None, data: bytes | None = None, format: str | None = None,
                 annotations: dict[str, Any] | None = None) -> None:
        if (path is None) == (data is None):
            raise ValueError(f"{type(self).__name__} takes exactly one of path or data")
        self.path = Path(path) if path is not None else None
        self.data = data
        self._format = format
        self.annotations = annotations

    @property
    def mime_type(self) -> str:
        if self._format:
            return self._format if "/" in self._format else f"{self.kind}/{self._format.lower()}"
        if self.path is not None:
            import mimetypes

            guessed = mimetypes.guess_type(self.path.name)[0]
            if guessed:
                return guessed
        return self.default_mime

    def read(self) -> bytes:
        if self.data is not None:
            return self.data
        assert self.path is not None
        return self.path.read_bytes()

    def _encoded(self) -> str:
        return base64.b64encode(self.read()).decode()

    def to_block(self) -> dict[str, Any]:
        """The content block this stands for."""
        block: dict[str, Any] = {"type": self.kind, "data": self._encoded(), "mimeType": self.mime_type}
        if self.annotations:
            block["annotations"] = self.annotations
        return block


class Image(_Media):
    """An image: ``Image(path="chart.png")`` or ``Image(data=png_bytes, format="png")``."""

    kind = "image"
    default_mime = "image/png"

    def to_image_content(self) -> dict[str, Any]:
        """The image block (FastMCP's name for :meth:`to_block`)."""
        return self.to_block()


class Audio(_Media):
    """Audio: ``Audio(path="note.wav")`` or ``Audio(data=wav_bytes, format="wav")``."""

    kind = "audio"
    default_mime = "audio/wav"

    def to_audio_content(self) -> dict[str, Any]:
        """The audio block (FastMCP's name for :meth:`to_block`)."""
        return self.to_block()


class File(_Media):
    """A file, sent inside the result as an embedded resource (text for ``text/*`` types)."""

    def __init__(self, path: str | Path | None = None, data: bytes | None = None, format: str | None = None,
                 name: str | None = None, annotations: dict[str, Any] | None = None) -> None:
        super().__init__(path, data, format, annotations)
        self.name = name or (self.path.name if self.path is not None else "file")

    def to_block(self) -> dict[str, Any]:
        mime = self.mime_type
        uri = f"file:///{self.name}"
        raw = self.read()
        if mime.startswith("text/"):
            try:
                return embedded_resource(uri, text=raw.decode(), mime_type=mime, annotations=self.annotations)
            except UnicodeDecodeError:
                pass
        return embedded_resource(uri, blob=raw, mime_type=mime, annotations=self.annotations)

    def to_resource_content(self) -> dict[str, Any]:
        """The embedded resource block (FastMCP's name for :meth:`to_block`)."""
        return self.to_block()
