"""The seal's logs folder: emptied without following anything, even while it changes."""
import os
import threading

from tasks.verify import seal


def test_planted_files_links_and_folders_are_removed_never_followed(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me")
    logs = tmp_path / "logs"
    (logs / "sub").mkdir(parents=True)
    (logs / "sub" / "reward.txt").write_text("1")
    (logs / "reward.json").symlink_to(outside)
    os.mkfifo(logs / "pipe")
    seal.take_logs(str(logs))
    assert list(logs.iterdir()) == []
    assert outside.read_text() == "keep me"


def test_an_entry_gone_between_the_listing_and_its_removal_is_skipped(tmp_path, monkeypatch):
    """A process the seal failed to stop may rename its files while the folder is
    emptied; the verifier must still finish (and report the reward as taken), not crash."""
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "planted").symlink_to("/etc/passwd")
    listdir = os.listdir
    monkeypatch.setattr(os, "listdir", lambda fd: [*listdir(fd), ".j13224"])
    seal.take_logs(str(logs))
    monkeypatch.undo()
    assert list(logs.iterdir()) == []


def test_a_writer_renaming_files_in_the_folder_never_breaks_the_emptying(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    stop = threading.Event()

    def writer():
        n = 0
        while not stop.is_set():
            n += 1
            tmp = logs / f".j{n}"
            try:
                tmp.symlink_to("/etc/passwd")
                tmp.rename(logs / "reward.txt")
            except OSError:
                pass

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        for _ in range(300):
            seal.take_logs(str(logs))
    finally:
        stop.set()
        thread.join()
