"""Runner specs compare by meaning (``ersctl.autoscalingrunnerset.template_equality``): ARC's Go
client's spelling of a spec is the same spec, and a real change is always a change."""

from __future__ import annotations

import copy
import json
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ersctl.autoscalingrunnerset.template_equality import ZERO_IS_UNSET, equal, normalized, quantity

# Keys a runner template uses; none is a quantity field, so every value here means
# itself (quantities have their own test below).
KEYS = st.sampled_from(
    ["name", "image", "command", "env", "value", "labels", "spec", "containers", "x", "y"]
)
LEAVES = st.one_of(
    st.text(min_size=1, max_size=6),
    st.integers(min_value=1, max_value=99),
    st.just(True),
)
DOCS = st.recursive(
    LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, min_size=1, max_size=3),
        st.dictionaries(KEYS, inner, min_size=1, max_size=4),
    ),
    max_leaves=20,
)
TEMPLATES = st.dictionaries(KEYS, DOCS, min_size=1, max_size=4)
EMPTY: st.SearchStrategy[Any] = st.sampled_from([None, {}, [], "", {"creationTimestamp": None}])


def as_go_writes_it(doc: Any, data: st.DataObject) -> Any:
    """``doc`` with what Go's encoder adds or drops: empty structs and nulls under new
    keys, ``resources: {}`` on containers, ``false`` of a non-pointer field."""
    if isinstance(doc, list):
        return [as_go_writes_it(item, data) for item in doc]
    if not isinstance(doc, dict):
        return doc
    out = {key: as_go_writes_it(value, data) for key, value in doc.items()}
    for extra in data.draw(st.lists(st.sampled_from(["resources", "metadata", "status", "z"]))):
        out.setdefault(extra, data.draw(EMPTY))
    if data.draw(st.booleans()):
        out.setdefault(
            data.draw(st.sampled_from(sorted(ZERO_IS_UNSET))),
            data.draw(st.sampled_from([False, 0])),
        )
    return out


def leaf_paths(doc: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(doc, dict):
        return [p for key, value in doc.items() for p in leaf_paths(value, (*path, key))]
    if isinstance(doc, list):
        return [p for index, value in enumerate(doc) for p in leaf_paths(value, (*path, index))]
    return [path]


def replaced(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    out = copy.deepcopy(doc)
    target = out
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return out


@given(st.data())
def test_arcs_spelling_of_a_template_is_the_same_template(data: st.DataObject) -> None:
    template = data.draw(TEMPLATES)
    go = as_go_writes_it(template, data)
    assert equal(template, go)
    assert equal(go, template)


@given(st.data())
def test_a_changed_value_is_always_a_change(data: st.DataObject) -> None:
    template = data.draw(TEMPLATES)
    path = data.draw(st.sampled_from(leaf_paths(template)))
    old = _at(template, path)
    new = data.draw(LEAVES.filter(lambda v: normalized(v) != normalized(old)))
    changed = replaced(template, path, new)
    # Even spelled by Go, on either side.
    assert not equal(template, as_go_writes_it(changed, data))
    assert not equal(as_go_writes_it(template, data), changed)


@given(st.data())
def test_an_added_or_removed_value_is_always_a_change(data: st.DataObject) -> None:
    template = data.draw(TEMPLATES)
    key = data.draw(st.text(alphabet="abc", min_size=8, max_size=8))  # a key none has
    added = {**template, key: data.draw(DOCS)}
    assert not equal(template, added)
    assert not equal(added, template)


def _at(doc: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        doc = doc[step]
    return doc


def test_arcs_rendering_of_a_pod_template_equals_the_users() -> None:
    user = {
        "spec": {
            "containers": [
                {
                    "name": "runner",
                    "image": "ghcr.io/actions/actions-runner:2.330.0",
                    "env": [{"name": "A", "value": ""}],
                    "resources": {"limits": {"cpu": "1000m", "memory": "1024Mi"}},
                    "tty": False,
                }
            ],
            "hostNetwork": False,
            "volumes": [],
        }
    }
    go = {
        "metadata": {"creationTimestamp": None},
        "spec": {
            "containers": [
                {
                    "name": "runner",
                    "image": "ghcr.io/actions/actions-runner:2.330.0",
                    "env": [{"name": "A"}],
                    "resources": {"limits": {"cpu": "1", "memory": "1Gi"}},
                }
            ]
        },
    }
    assert equal(user, go)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        pytest.param("automountServiceAccountToken", False, id="pointer-false"),
        pytest.param("runAsUser", 0, id="pointer-zero-root"),
        pytest.param("terminationGracePeriodSeconds", 0, id="pointer-zero-grace"),
    ],
)
def test_a_zero_a_pointer_field_holds_is_not_unset(field: str, value: object) -> None:
    # Go keeps these (nil and false/0 differ): removing one is a change.
    assert not equal({"spec": {field: value}}, {"spec": {}})


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("500m", Fraction(1, 2)),
        ("0.5", Fraction(1, 2)),
        ("1Gi", Fraction(2**30)),
        ("1024Mi", Fraction(2**30)),
        ("1e3", Fraction(1000)),
        ("1k", Fraction(1000)),
        ("nonsense", None),
    ],
)
def test_quantities_are_read_as_kubernetes_reads_them(text: str, value: Fraction | None) -> None:
    assert quantity(text) == value


def test_a_normalized_template_is_json_and_hashes_alike_in_either_spelling() -> None:
    ours = {"spec": {"containers": [{"name": "r", "resources": {"limits": {"cpu": "1000m"}}}]}}
    arcs = {"spec": {"containers": [{"name": "r", "resources": {"limits": {"cpu": "1"}}}]}}
    assert json.dumps(normalized(ours)) == json.dumps(normalized(arcs))


def test_a_changed_quantity_is_a_change() -> None:
    assert not equal({"limits": {"cpu": "1"}}, {"limits": {"cpu": "1001m"}})
    assert equal({"limits": {"cpu": 2}}, {"limits": {"cpu": "2000m"}})
