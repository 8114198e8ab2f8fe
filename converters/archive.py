"""Size checks on zip archives (.keras, .pt2, .npz) before anything is extracted: the declared
uncompressed sizes against a byte budget and against their compressed sizes, so a small zip bomb
is refused from its directory alone. zipfile never inflates a member past its declared size."""

from __future__ import annotations

import zipfile

from relay_core.errors import ModelLoadError, ResourceLimitError

MAX_ARCHIVE_BYTES = 4 << 30  # declared uncompressed bytes of all members
MAX_RATIO = 100  # uncompressed / compressed, for members larger than RATIO_FLOOR
RATIO_FLOOR = 16 << 20
MAX_MEMBERS = 100_000


def check_zip(path, what: str, max_bytes: int | None = None, error=ModelLoadError) -> None:
    """Refuse `path` (a zip file or file object) whose members would inflate to more than
    `max_bytes` in all, or compress suspiciously well. `what` names it in messages; a file
    that is no zip raises `error`.

    >>> check_zip("model.keras", "Keras file model.keras")
    """
    limit = MAX_ARCHIVE_BYTES if max_bytes is None else max_bytes
    try:
        with zipfile.ZipFile(path) as z:
            infos = z.infolist()
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as e:
        raise error(f"{what} is not a valid zip archive: {e}") from None
    if len(infos) > MAX_MEMBERS:
        raise ResourceLimitError(f"{what} has {len(infos):,} members (at most {MAX_MEMBERS:,})")
    total = 0
    for info in infos:
        total += info.file_size
        if total > limit:
            raise ResourceLimitError(
                f"{what} would inflate to more than {limit:,} bytes (member {info.filename!r} "
                f"declares {info.file_size:,}); refused before extracting"
            )
        packed = max(info.compress_size, 1)
        if info.file_size > RATIO_FLOOR and info.file_size / packed > MAX_RATIO:
            raise ResourceLimitError(
                f"{what}: member {info.filename!r} inflates {info.file_size / packed:,.0f}x "
                f"({packed:,} -> {info.file_size:,} bytes), like a zip bomb; refused before "
                "extracting"
            )
