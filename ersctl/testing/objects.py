"""Objects of any API server by plural, through the official ``kubernetes`` client: the
embedded server's direct-access methods (``get_object``, ``list_objects``,
``create_object``, ``patch_object``, ``delete_object``) by name and meaning over HTTP,
so code written against one runs against the other (the tests' existing-cluster mode,
the simulation on an existing cluster). Errors are the client's ``ApiException``.

:func:`request` is one request to any path, for what the client's typed calls do not
cover (any resource by plural, server-side apply); :func:`http_client` a raw HTTP
client with the official client's address, TLS and credentials, for what it cannot
send at all (malformed bodies, streams relayed as they come)."""

from __future__ import annotations

import contextlib
import ssl
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
from kubernetes import client
from kubernetes.client import ApiException

from ersctl import api

JsonObject = dict[str, Any]

RESOURCES: dict[str, tuple[str, str, bool]] = {
    api.ARS_PLURAL: (api.GROUP, api.VERSION, True),
    api.AL_PLURAL: (api.GROUP, api.VERSION, True),
    api.ER_PLURAL: (api.GROUP, api.VERSION, True),
    api.ERS_PLURAL: (api.GROUP, api.VERSION, True),
    "pods": ("", "v1", True),
    "secrets": ("", "v1", True),
    "configmaps": ("", "v1", True),
    "events": ("", "v1", True),
    "serviceaccounts": ("", "v1", True),
    "leases": ("coordination.k8s.io", "v1", True),
    "roles": ("rbac.authorization.k8s.io", "v1", True),
    "rolebindings": ("rbac.authorization.k8s.io", "v1", True),
    "deployments": ("apps", "v1", True),
    "statefulsets": ("apps", "v1", True),
    "replicasets": ("apps", "v1", True),
    "namespaces": ("", "v1", False),
}
"""The resources addressed by plural: (group, version, namespaced); the project's kinds
first, then the built-in ones, namespaced ones before namespaces."""


def request(
    api_client: client.ApiClient,
    method: str,
    path: str,
    body: object = None,
    *,
    content_type: str = "application/json",
    query: list[tuple[str, str]] | None = None,
) -> JsonObject:
    """One request through the official client (its address, TLS and credentials) to a
    path of the API. Returns the JSON answer; raises ``ApiException`` for an error."""
    serialized = api_client.param_serialize(
        method=method,
        resource_path=path,
        query_params=query or [],
        header_params={"Content-Type": content_type, "Accept": "application/json"},
        body=body,
        auth_settings=["BearerToken"],
    )
    method, url, headers, payload, post = serialized
    response = api_client.call_api(
        method, url, header_params=headers, body=payload, post_params=post
    )
    response.read()  # type: ignore[no-untyped-call]
    answer = api_client.response_deserialize(response, {"2XX": "object"}).data
    if not isinstance(answer, dict):
        raise TypeError(f"expected a JSON object from {method} {path}")
    return answer


def auth_headers(configuration: client.Configuration) -> dict[str, str]:
    """The headers of the client's auth settings: a kubeconfig's token or basic
    credentials, an exec plugin's token (refreshed, as the client refreshes it before
    each call)."""
    settings: dict[str, Any] = {**configuration.auth_settings()}
    return {
        str(setting["key"]): str(setting["value"])
        for setting in settings.values()
        if setting["in"] == "header" and setting["value"]
    }


def http_client(
    api_client: client.ApiClient, *, timeout: httpx.Timeout | float = 10.0
) -> httpx.Client:
    """A raw HTTP client (the caller closes it) with ``api_client``'s address, TLS
    settings, credentials (:func:`auth_headers`, as they are now) and client
    certificate (presented whether or not the server's is verified)."""
    conf = api_client.configuration
    verify: bool | ssl.SSLContext = False
    if str(conf.host).startswith("https"):
        verify = ssl.create_default_context(cafile=conf.ssl_ca_cert)
        if not conf.verify_ssl:
            verify.check_hostname = False
            verify.verify_mode = ssl.CERT_NONE
        if conf.cert_file:
            verify.load_cert_chain(conf.cert_file, conf.key_file)
    return httpx.Client(
        base_url=str(conf.host), verify=verify, headers=auth_headers(conf), timeout=timeout
    )


def resource_path(resource: str, namespace: str | None, name: str | None = None) -> str:
    """The path of ``resource`` (a plural of :data:`RESOURCES`), in ``namespace`` when
    it is namespaced and one is given, of object ``name`` when given."""
    group, version, namespaced = RESOURCES[resource]
    path = f"/apis/{group}/{version}" if group else f"/api/{version}"
    if namespaced and namespace:
        path += f"/namespaces/{namespace}"
    path += f"/{resource}"
    return f"{path}/{name}" if name else path


class ApiObjects:
    """Object access to the API ``new_client`` reaches (one client, made on first use,
    shared by the threads that call; :meth:`close` closes it)."""

    def __init__(self, new_client: Callable[[], client.ApiClient], namespace: str = "default"):
        """``namespace``: where :meth:`create_object` creates an object that names none."""
        self.new_client = new_client
        self.namespace = namespace
        self._client: client.ApiClient | None = None
        self._lock = threading.Lock()

    def call(
        self,
        method: str,
        path: str,
        body: object = None,
        *,
        content_type: str = "application/json",
        query: list[tuple[str, str]] | None = None,
    ) -> JsonObject:
        with self._lock:
            if self._client is None:
                self._client = self.new_client()
            api_client = self._client
        return request(api_client, method, path, body, content_type=content_type, query=query)

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()  # type: ignore[no-untyped-call]
                self._client = None

    def get_object(self, resource: str, namespace: str, name: str) -> JsonObject | None:
        """The object, or None when it does not exist."""
        try:
            return self.call("GET", resource_path(resource, namespace, name))
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def list_objects(
        self, resource: str, namespace: str | None = None, *, label_selector: str | None = None
    ) -> list[JsonObject]:
        """The objects (all namespaces when ``namespace`` is None) that ``label_selector``
        selects, sorted by namespace and name."""
        query = [("labelSelector", label_selector)] if label_selector else None
        listed = self.call("GET", resource_path(resource, namespace), query=query)
        items = list(listed.get("items") or ())
        items.sort(key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]))
        return items

    def create_object(self, resource: str, obj: JsonObject) -> JsonObject:
        """Create ``obj`` in its metadata's namespace (:attr:`namespace` when it names
        none)."""
        namespace = str((obj.get("metadata") or {}).get("namespace") or "")
        if not namespace and RESOURCES[resource][2]:
            namespace = self.namespace
        return self.call("POST", resource_path(resource, namespace), obj)

    def patch_object(
        self,
        resource: str,
        namespace: str,
        name: str,
        patch: JsonObject,
        *,
        subresource: str | None = None,
    ) -> JsonObject:
        """A JSON merge patch (a ``metadata.resourceVersion`` in it is a precondition)."""
        path = resource_path(resource, namespace, name) + (f"/{subresource}" if subresource else "")
        return self.call("PATCH", path, patch, content_type="application/merge-patch+json")

    def delete_object(self, resource: str, namespace: str, name: str) -> None:
        """Delete (an object with finalizers only gets a deletionTimestamp)."""
        self.call("DELETE", resource_path(resource, namespace, name))

    # -- a namespace and what is in it ----------------------------------------------------

    def remove_namespace(self, name: str, *, finalize: bool) -> None:
        """Delete everything in namespace ``name`` (of the kinds of :data:`RESOURCES`),
        every finalizer released first, then the namespace. ``finalize``: the API runs
        no namespace controller, so clear the namespace's ``kubernetes`` finalizer as it
        would (which removes the emptied namespace); else the controller does, soon."""
        options = {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0}
        for plural, (_, _, namespaced) in RESOURCES.items():
            if not namespaced:
                continue
            with contextlib.suppress(ApiException):  # a kind the server does not serve
                for item in self.list_objects(plural, name):
                    if item["metadata"].get("finalizers"):
                        release = {"metadata": {"finalizers": None}}
                        with contextlib.suppress(ApiException):  # gone meanwhile
                            self.patch_object(plural, name, item["metadata"]["name"], release)
                self.call("DELETE", resource_path(plural, name), options)
        with contextlib.suppress(ApiException):  # gone already
            self.call("DELETE", resource_path("namespaces", "", name))
            if finalize:
                body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
                self.call("PUT", f"{resource_path('namespaces', '', name)}/finalize", body)

    def await_gone(self, names: list[str], timeout: float) -> list[str]:
        """Wait up to ``timeout`` seconds for namespaces ``names`` to be gone; returns
        each one still there, described: ``name (phase): plural/object [finalizers]``."""
        deadline = time.monotonic() + timeout
        remaining = list(names)
        while remaining:
            remaining = [n for n in remaining if self.get_object("namespaces", "", n) is not None]
            if not remaining or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        return [self._describe(name) for name in remaining]

    def _describe(self, name: str) -> str:
        namespace = self.get_object("namespaces", "", name) or {}
        phase = (namespace.get("status") or {}).get("phase", "gone")
        left = []
        for plural, (_, _, namespaced) in RESOURCES.items():
            if not namespaced:
                continue
            with contextlib.suppress(ApiException):
                for item in self.list_objects(plural, name):
                    finalizers = item["metadata"].get("finalizers") or []
                    left.append(f"{plural}/{item['metadata']['name']} {finalizers}")
        return f"{name} ({phase}): {', '.join(left) or 'nothing listed in it'}"
