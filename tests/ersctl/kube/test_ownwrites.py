"""Read your own writes (``ersctl.kube.ownwrites``): pure bookkeeping, judged on plain objects."""

from __future__ import annotations

from ersctl.api import EphemeralRunnerSet
from ersctl.kube.ownwrites import OwnWrites


def ers(version: str, *, uid: str = "u1", marker: int = 0) -> EphemeralRunnerSet:
    return EphemeralRunnerSet(
        {
            "metadata": {"name": "web", "namespace": "ci", "uid": uid, "resourceVersion": version},
            "status": {"finishedRunnerCleanupPatchID": marker},
        }
    )


def test_a_cache_still_at_the_version_a_write_replaced_reads_the_writes_answer() -> None:
    own = OwnWrites[EphemeralRunnerSet]()
    own.written(ers("10"), ers("12", marker=3))

    assert own.newest(ers("10")).finished_runner_cleanup_patch_id == 3


def test_chained_writes_on_an_unmoved_cache_keep_the_newest_answer() -> None:
    own = OwnWrites[EphemeralRunnerSet]()
    own.written(ers("10"), ers("12", marker=3))
    own.written(ers("12", marker=3), ers("13", marker=4))

    assert own.newest(ers("10")).finished_runner_cleanup_patch_id == 4


def test_a_cache_that_moved_on_is_believed_again_and_the_record_dropped() -> None:
    own = OwnWrites[EphemeralRunnerSet]()
    own.written(ers("10"), ers("12", marker=3))

    # 11 is a version in between (someone else's write): not known to be older.
    assert own.newest(ers("11", marker=1)).finished_runner_cleanup_patch_id == 1
    assert own.newest(ers("10")).finished_runner_cleanup_patch_id == 0, "the record is gone"


def test_a_recreated_object_never_inherits_its_predecessors_record() -> None:
    own = OwnWrites[EphemeralRunnerSet]()
    own.written(ers("10"), ers("12", marker=3))

    assert own.newest(ers("10", uid="u2")).finished_runner_cleanup_patch_id == 0
