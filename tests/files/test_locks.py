"""The cross-process lock: exclusive between processes, re-entrant within one, released by a crash."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from gitmem.files.locks import LockTimeout, file_lock

HOLD = "import sys, time\nfrom pathlib import Path\nfrom gitmem.files.locks import file_lock\n" \
       "with file_lock(Path(sys.argv[1])):\n    print('held', flush=True)\n    time.sleep(float(sys.argv[2]))\n"


def test_another_process_waits_then_times_out(tmp_path: Path) -> None:
    lock = tmp_path / "x.lock"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(lock), "3"], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    start = time.monotonic()
    with pytest.raises(LockTimeout, match="stayed locked"), file_lock(lock, timeout=0.3):
        pass
    assert time.monotonic() - start >= 0.3
    holder.kill()  # a killed holder releases the lock at once: no stale lock file to clean up
    holder.wait()
    with file_lock(lock, timeout=2):
        pass


def test_another_thread_waits(tmp_path: Path) -> None:
    import threading

    lock = tmp_path / "t.lock"
    outcome: list[str] = []

    def contend() -> None:
        try:
            with file_lock(lock, timeout=0.2):
                outcome.append("acquired")
        except LockTimeout:
            outcome.append("timed out")

    with file_lock(lock, timeout=0.2):
        worker = threading.Thread(target=contend)
        worker.start()
        worker.join()
    assert outcome == ["timed out"]


def test_reentrant_within_a_thread(tmp_path: Path) -> None:
    lock = tmp_path / "y.lock"
    with file_lock(lock, timeout=0.2), file_lock(lock, timeout=0.2):
        pass
    with file_lock(lock, timeout=0.2):  # fully released after the nested use
        pass
