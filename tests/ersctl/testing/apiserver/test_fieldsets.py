"""Field sets as structured-merge-diff sees an object (the pure part of server-side
apply and managedFields): the comparison a write is recorded with, FieldsV1, paths."""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from typing import Any

import pytest

from ersctl.testing.apiserver import fieldsets
from ersctl.testing.apiserver.resources import BUILTIN_TYPES

DEPLOYMENT = next(t for t in BUILTIN_TYPES if t.plural == "deployments").structure
BASE: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "d", "labels": {"a": "1"}, "finalizers": ["x"]},
    "spec": {
        "replicas": 1,
        "selector": {"matchLabels": {"a": "1"}},
        "template": {
            "metadata": {"labels": {"a": "1"}},
            "spec": {
                "containers": [
                    {
                        "name": "c",
                        "image": "i",
                        "env": [{"name": "A", "value": "1"}],
                        "ports": [{"containerPort": 80, "protocol": "TCP"}],
                    },
                    {"name": "d", "image": "j"},
                ]
            },
        },
    },
}


def mutated(obj: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """``obj`` with one to three random changes: scalars, map keys, keyed list items
    added and removed, a set, an atomic list, a whole subtree."""
    out = copy.deepcopy(obj)
    spec = out["spec"]
    containers = spec["template"]["spec"]["containers"]
    changes: list[Callable[[], object]] = [
        lambda: spec.__setitem__("replicas", rng.randint(0, 3)),
        lambda: out["metadata"]["labels"].__setitem__(rng.choice("abc"), str(rng.randint(0, 2))),
        lambda: out["metadata"]["labels"].pop("a", None),
        lambda: containers[0].setdefault("env", []).append({"name": rng.choice("BCD")}),
        lambda: containers[0].__setitem__("image", rng.choice("ijk")),
        lambda: containers.append({"name": rng.choice("efg"), "image": "z"}),
        lambda: containers.pop() if len(containers) > 1 else None,
        lambda: out["metadata"].__setitem__("finalizers", rng.sample(["x", "y", "z"], 2)),
        lambda: spec.pop("selector", None),
        lambda: containers[0].__setitem__("command", [rng.choice("ab")]),
    ]
    for _ in range(rng.randint(1, 3)):
        rng.choice(changes)()
    return out


def by_definition(old: dict[str, Any], new: dict[str, Any]) -> tuple[set[Any], ...]:
    """SMD's Compare spelled out: the difference of the two whole field sets with their
    maps and lists merged by item, and the leaves in both whose value differs."""
    maps_before: set[tuple[str, ...]] = set()
    maps_after: set[tuple[str, ...]] = set()
    before = fieldsets.field_set(old, DEPLOYMENT, maps_before)
    after = fieldsets.field_set(new, DEPLOYMENT, maps_after)
    modified = {
        path
        for path in before & after
        if path[-1].startswith("f:")
        and fieldsets.value_at(old, path)[1] != fieldsets.value_at(new, path)[1]
    }
    before, after = before | maps_before, after | maps_after
    return after - before, modified, before - after


def test_the_comparison_of_changed_subtrees_finds_what_the_whole_field_sets_find() -> None:
    rng = random.Random(16)
    for _ in range(500):
        old = mutated(BASE, rng)
        new = mutated(old if rng.random() < 0.5 else BASE, rng)

        assert fieldsets.compare(old, new, DEPLOYMENT) == by_definition(old, new), (old, new)


def test_containers_and_their_env_are_items_by_name_and_finalizers_a_set() -> None:
    found = fieldsets.field_set(BASE, DEPLOYMENT)

    containers = ("f:spec", "f:template", "f:spec", "f:containers")
    assert (*containers, 'k:{"name":"c"}') in found
    assert (*containers, 'k:{"name":"c"}', "f:env", 'k:{"name":"A"}', "f:value") in found
    assert (
        *containers,
        'k:{"name":"c"}',
        "f:ports",
        'k:{"containerPort":80,"protocol":"TCP"}',
    ) in found
    assert ("f:metadata", "f:finalizers", 'v:"x"') in found
    assert ("f:spec", "f:template") not in found  # a map merged by key is no leaf itself
    assert ("f:spec", "f:selector") in found  # LabelSelector is atomic: one leaf


@pytest.mark.parametrize(
    "paths",
    [
        pytest.param({("f:a",), ("f:b", "f:c")}, id="leaves"),
        pytest.param(
            {("f:a",), ("f:a", 'k:{"name":"x"}'), ("f:a", 'k:{"name":"x"}', "f:y")},
            id="a member with children",
        ),
    ],
)
def test_fields_v1_reads_back_the_set_it_was_written_from(paths: set[tuple[str, ...]]) -> None:
    encoded = fieldsets.to_fields_v1(paths)

    assert fieldsets.from_fields_v1(encoded) == paths


def test_a_path_reads_as_the_real_server_prints_it() -> None:
    path = ("f:spec", "f:containers", 'k:{"name":"c"}', "f:image")

    assert fieldsets.display(path) == '.spec.containers[name="c"].image'
