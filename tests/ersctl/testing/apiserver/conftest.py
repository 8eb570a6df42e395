"""Fixtures for the embedded API server's own tests: typed API objects over the shared
``kube_client``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from ersctl import api
from tests.ersctl.testing.apiserver.objects import Objects
from tests.kubeapi import KubeApi
from tests.kubectl import Kubectl


@pytest.fixture
def custom(kube_client: Any) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(kube_client)


@pytest.fixture
def core(kube_client: Any) -> client.CoreV1Api:
    return client.CoreV1Api(kube_client)


@pytest.fixture
def namespace(kube: KubeApi) -> str:
    """The test's own namespace."""
    return kube.namespace


@pytest.fixture
def ers(custom: client.CustomObjectsApi, namespace: str) -> Objects:
    return Objects(custom, api.ERS_PLURAL, namespace)


@pytest.fixture
def runners(custom: client.CustomObjectsApi, namespace: str) -> Objects:
    return Objects(custom, api.ER_PLURAL, namespace)


@pytest.fixture
def kubectl(kube: KubeApi, tmp_path: Path) -> Kubectl:
    """kubectl for the test's API, its namespace the default."""
    return Kubectl(kube.write_kubeconfig(tmp_path / "kubeconfig"), tmp_path / "kube-cache")
