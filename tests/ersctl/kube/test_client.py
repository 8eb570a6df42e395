"""The generic client: any kind by its resource, deletes with preconditions, the fence."""

from __future__ import annotations

from typing import Any

import pytest

from ersctl.kube.client import BUILTIN, Preconditions, Reader, Writer
from ersctl.kube.errors import NotLeaderError
from tests.kubeapi import KubeApi
from tests.kubeclient import SentRequests

SECRETS = BUILTIN["secrets"]


def secret(kube: KubeApi, name: str, **labels: str) -> dict[str, Any]:
    body = {"metadata": {"name": name, "namespace": kube.namespace, "labels": labels}}
    return Writer(kube.api_client()).create(SECRETS, {"apiVersion": "v1", "kind": "Secret", **body})


def test_a_delete_whose_preconditions_fail_deletes_nothing_and_says_so(kube: KubeApi) -> None:
    writer = Writer(kube.api_client())
    created = secret(kube, "s")
    meta = created["metadata"]

    stale = Preconditions(resource_version="1")
    other = Preconditions(uid="another-object")
    assert not writer.delete(SECRETS, kube.namespace, "s", preconditions=stale)
    assert not writer.delete(SECRETS, kube.namespace, "s", preconditions=other)
    assert kube.get_object("secrets", kube.namespace, "s") is not None

    current = Preconditions(uid=meta["uid"], resource_version=meta["resourceVersion"])
    assert writer.delete(SECRETS, kube.namespace, "s", preconditions=current)
    assert kube.get_object("secrets", kube.namespace, "s") is None
    assert not writer.delete(SECRETS, kube.namespace, "s"), "gone: nothing to delete"


def test_a_list_with_a_label_selector_returns_only_what_it_picks(kube: KubeApi) -> None:
    secret(kube, "picked", app="hook")
    secret(kube, "other", app="else")

    listed = Reader(kube.api_client()).list(SECRETS, kube.namespace, label_selector="app=hook")

    assert [item["metadata"]["name"] for item in listed] == ["picked"]


def test_a_closed_fence_refuses_every_write_before_it_is_sent(kube: KubeApi) -> None:
    api_client = kube.api_client()
    sent = SentRequests(api_client)
    writer = Writer(api_client, fence=lambda: False)
    body = {"metadata": {"name": "s", "namespace": kube.namespace}}

    for write in (
        lambda: writer.create(SECRETS, body),
        lambda: writer.patch(SECRETS, kube.namespace, "s", {"data": {}}),
        lambda: writer.status.patch(SECRETS, kube.namespace, "s", {}),
        lambda: writer.delete(SECRETS, kube.namespace, "s"),
    ):
        with pytest.raises(NotLeaderError):
            write()
    assert sent.records() == []
