"""``agen migrate`` that stops for good after its N-th committed batch, for a test to SIGKILL there:
``python migrate_paused.py N MARKER migrate --to …``. The pause is installed through the copy's
public seam (its DEBUG record of each committed batch, agen.store.copy), so the product ships no
test switch; MARKER is written with this process's id once the batch is durable."""

from __future__ import annotations

import logging
import os
import sys
import threading
from pathlib import Path


class PauseAtBatch(logging.Handler):
    def __init__(self, n: int, marker: Path) -> None:
        super().__init__(logging.DEBUG)
        self.n, self.marker = n, marker

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(record, "batch", None) == self.n:
            self.marker.write_text(str(os.getpid()))
            threading.Event().wait()  # until the test kills this process


def main() -> None:
    n, marker, *argv = sys.argv[1:]
    copy_log = logging.getLogger("agen.store.copy")
    copy_log.setLevel(logging.DEBUG)
    copy_log.addHandler(PauseAtBatch(int(n), Path(marker)))
    from agen.cli import main as agen

    agen(argv)


if __name__ == "__main__":
    main()
