"""The JIT Secret and runner Pod built from an EphemeralRunner (pure)."""

from __future__ import annotations

import base64
import re
from typing import Any

import pytest

from ersctl.api import EphemeralRunner, FieldError
from ersctl.ephemeralrunner import pods


def runner(**spec: Any) -> EphemeralRunner:
    base: dict[str, Any] = {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "EphemeralRunner",
        "metadata": {
            "name": "set-runner-abcde",
            "namespace": "ci",
            "uid": "uid-er-1",
            "labels": {"app.kubernetes.io/component": "runner", "team": "a"},
            "annotations": {"actions.github.com/patch-id": "4"},
        },
        "spec": {
            "githubConfigUrl": "https://github.com/org",
            "githubConfigSecret": "creds",
            "runnerScaleSetId": 3,
            "metadata": {"labels": {"team": "b", "pool": "x"}, "annotations": {"note": "t"}},
            "spec": {
                "restartPolicy": "Never",
                "containers": [
                    {"name": "sidecar", "image": "busybox"},
                    {"name": "runner", "image": "runner:1", "env": [{"name": "A", "value": "1"}]},
                ],
            },
        },
    }
    base["spec"].update(spec)
    return EphemeralRunner(base)


OWNER = {
    "apiVersion": "actions.github.com/v1alpha1",
    "kind": "EphemeralRunner",
    "name": "set-runner-abcde",
    "uid": "uid-er-1",
    "controller": True,
    "blockOwnerDeletion": True,
}


def decoded(secret: dict[str, Any]) -> dict[str, str]:
    return {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}


def test_the_jit_secret_is_named_like_the_runner_owned_by_it_and_holds_the_registration() -> None:
    secret = pods.build_jit_secret(
        runner(),
        runner_id=42,
        runner_name="set-runner-abcde",
        scale_set_id=3,
        encoded_jit_config="eyJqaXQiOiJzZWNyZXQifQ==",
    )
    assert secret["metadata"]["name"] == "set-runner-abcde"
    assert secret["metadata"]["namespace"] == "ci"
    assert secret["metadata"]["ownerReferences"] == [OWNER]
    assert decoded(secret) == {
        "jitToken": "eyJqaXQiOiJzZWNyZXQifQ==",
        "runnerId": "42",
        "runnerName": "set-runner-abcde",
        "scaleSetId": "3",
    }
    assert pods.registration_from_secret(secret) == (42, "set-runner-abcde")


def test_the_jit_secret_takes_labels_and_annotations_from_its_template() -> None:
    er = runner(
        ephemeralRunnerConfigSecretMetadata={"labels": {"l": "1"}, "annotations": {"a": "2"}}
    )
    secret = pods.build_jit_secret(
        er, runner_id=1, runner_name="n", scale_set_id=3, encoded_jit_config="x"
    )
    assert secret["metadata"]["labels"] == {"l": "1"}
    assert secret["metadata"]["annotations"] == {"a": "2"}


@pytest.mark.parametrize(
    "data",
    [
        pytest.param({}, id="empty"),
        pytest.param({"runnerId": "NDI="}, id="no JIT config"),
        pytest.param({"jitToken": "eA==", "runnerId": "bm90LWEtbnVtYmVy"}, id="id not a number"),
        pytest.param({"jitToken": "eA==", "runnerId": "MA=="}, id="id zero"),
        pytest.param({"jitToken": "eA==", "runnerId": "%%%"}, id="not base64"),
    ],
)
def test_an_unreadable_jit_secret_yields_no_registration(data: dict[str, str]) -> None:
    assert pods.registration_from_secret({"data": data}) is None


def jit_secret(name: str, config: str = "jit") -> dict[str, Any]:
    """A JIT Secret as the API server returns it."""
    return {
        "metadata": {"name": name, "namespace": "ci"},
        "data": {"jitToken": base64.b64encode(config.encode()).decode()},
    }


def env_of(pod: dict[str, Any], container: str) -> list[dict[str, Any]]:
    (found,) = [c for c in pod["spec"]["containers"] if c["name"] == container]
    env: list[dict[str, Any]] = found.get("env", [])
    return env


def test_the_runner_container_gets_the_jit_config_by_secret_reference_and_the_exit_code_switch() -> (
    None
):
    pod = pods.build_runner_pod(runner(), secret=jit_secret("set-runner-abcde"))
    env = env_of(pod, "runner")
    assert env[0] == {"name": "A", "value": "1"}  # the template's own env stays first
    by_name = {e["name"]: e for e in env}
    assert by_name["ACTIONS_RUNNER_INPUT_JITCONFIG"] == {
        "name": "ACTIONS_RUNNER_INPUT_JITCONFIG",
        "valueFrom": {"secretKeyRef": {"name": "set-runner-abcde", "key": "jitToken"}},
    }
    assert by_name["ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE"]["value"] == "1"
    assert env_of(pod, "sidecar") == []  # only the runner container is configured


def test_a_template_value_for_our_env_vars_is_replaced_not_duplicated() -> None:
    er = runner()
    er.spec["spec"]["containers"][1]["env"] = [
        {"name": "ACTIONS_RUNNER_INPUT_JITCONFIG", "value": "stale"},
        {"name": "ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE", "value": "0"},
    ]
    names = [e["name"] for e in env_of(pods.build_runner_pod(er, secret=jit_secret("s")), "runner")]
    assert sorted(names) == sorted(set(names))
    assert "value" not in env_of(pods.build_runner_pod(er, secret=jit_secret("s")), "runner")[0]


PROXY_SECRET = "set-bcdfghjk-runner-proxy"
HTTP = {"url": "http://proxy.corp:3128"}


def from_proxy_secret(name: str) -> dict[str, Any]:
    return {"name": name, "valueFrom": {"secretKeyRef": {"name": PROXY_SECRET, "key": name}}}


@pytest.mark.parametrize(
    ("proxy", "variables"),
    [
        pytest.param({"http": HTTP}, ["http_proxy"], id="http only"),
        pytest.param({"https": HTTP}, ["https_proxy"], id="https only"),
        pytest.param({"noProxy": ["internal.corp"]}, ["no_proxy"], id="noProxy only"),
        pytest.param(
            {"http": HTTP, "https": HTTP, "noProxy": ["internal.corp"]},
            ["http_proxy", "https_proxy", "no_proxy"],
            id="all three",
        ),
        pytest.param({"http": HTTP, "noProxy": []}, ["http_proxy"], id="an empty noProxy"),
        pytest.param({}, [], id="an empty proxy"),
    ],
)
def test_the_runner_gets_arcs_proxy_variables_from_the_proxy_secret_for_the_parts_set(
    proxy: dict[str, Any], variables: list[str]
) -> None:
    er = runner(proxy=proxy, proxySecretRef=PROXY_SECRET)

    env = env_of(pods.build_runner_pod(er, secret=jit_secret("s")), "runner")

    # After the template's and ours, as ARC appends them.
    assert env[4:] == [from_proxy_secret(name) for name in variables]
    assert env_of(pods.build_runner_pod(er, secret=jit_secret("s")), "sidecar") == []


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param({"proxy": {"http": HTTP}}, id="a proxy but no proxySecretRef"),
        pytest.param({"proxySecretRef": PROXY_SECRET}, id="a proxySecretRef but no proxy"),
    ],
)
def test_without_both_a_proxy_and_its_secret_the_runner_gets_no_proxy_variable(
    spec: dict[str, Any],
) -> None:
    env = env_of(pods.build_runner_pod(runner(**spec), secret=jit_secret("s")), "runner")

    assert not {e["name"] for e in env} & {"http_proxy", "https_proxy", "no_proxy"}


def test_the_sets_proxy_variables_replace_the_templates() -> None:
    er = runner(proxy={"https": HTTP}, proxySecretRef=PROXY_SECRET)
    er.spec["spec"]["containers"][1]["env"] = [{"name": "https_proxy", "value": "http://old:1"}]

    env = env_of(pods.build_runner_pod(er, secret=jit_secret("s")), "runner")

    assert [e for e in env if e["name"] == "https_proxy"] == [from_proxy_secret("https_proxy")]


def test_the_pod_carries_the_runner_labels_annotations_template_metadata_and_owner() -> None:
    pod = pods.build_runner_pod(runner(), secret=jit_secret("s"))
    meta = pod["metadata"]
    assert (meta["name"], meta["namespace"]) == ("set-runner-abcde", "ci")
    hashed = meta["labels"].pop("pod-template-hash")
    assert meta["labels"] == {
        "app.kubernetes.io/component": "runner",
        "team": "b",  # the pod template wins over the runner's own label
        "pool": "x",
        "actions-ephemeral-runner": "True",
    }
    assert re.fullmatch(r"[bcdfghjklmnpqrstvwxz2456789]{1,10}", hashed), hashed
    assert meta["annotations"] == {"actions.github.com/patch-id": "4", "note": "t"}
    assert meta["ownerReferences"] == [OWNER]
    assert pod["spec"]["restartPolicy"] == "Never"


def pod_hash(er: EphemeralRunner, secret: dict[str, Any]) -> str:
    label: str = pods.build_runner_pod(er, secret=secret)["metadata"]["labels"]["pod-template-hash"]
    return label


def test_the_pod_template_hash_follows_metadata_spec_and_jit_config_as_arcs_does() -> None:
    same = pod_hash(runner(), jit_secret("s"))
    assert pod_hash(runner(), jit_secret("s")) == same, "stable for the same inputs"
    relabelled = runner()
    relabelled.metadata["labels"]["tier"] = "c"
    respec = runner()
    respec.spec["spec"]["containers"][1]["image"] = "runner:2"
    ignored = runner()
    ignored.metadata["labels"]["runner-template-hash"] = "abc"  # left out, as ARC does
    assert pod_hash(relabelled, jit_secret("s")) != same
    assert pod_hash(respec, jit_secret("s")) != same
    assert pod_hash(runner(), jit_secret("s", config="another")) != same
    assert pod_hash(ignored, jit_secret("s")) == same


def test_building_the_pod_leaves_the_runner_untouched() -> None:
    er = runner()
    before = er.to_dict()
    pods.build_runner_pod(er, secret=jit_secret("s"))
    assert er.to_dict() == before


@pytest.mark.parametrize(
    ("spec", "path"),
    [
        pytest.param({"spec": {}}, "spec.spec", id="no pod template"),
        pytest.param(
            {"spec": {"containers": [{"name": "main", "image": "x"}]}},
            "spec.spec.containers",
            id="no runner container",
        ),
        pytest.param({"spec": {"containers": "runner"}}, "spec.spec.containers", id="not a list"),
        pytest.param({"metadata": {"labels": {"a": 1}}}, "spec.metadata.labels", id="bad label"),
    ],
)
def test_a_template_that_cannot_run_a_runner_is_a_field_error(
    spec: dict[str, Any], path: str
) -> None:
    with pytest.raises(FieldError) as err:
        pods.build_runner_pod(runner(**spec), secret=jit_secret("s"))
    assert err.value.path == path


def test_a_runner_without_a_uid_cannot_own_anything() -> None:
    er = runner()
    del er.metadata["uid"]
    with pytest.raises(FieldError, match=r"metadata\.uid"):
        pods.build_runner_pod(er, secret=jit_secret("s"))
