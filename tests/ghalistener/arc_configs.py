"""The listener configuration files ARC 0.14's controller generates, byte for byte.

What the controller writes into the AutoscalingListener's config Secret
(``controllers/actions.github.com/resourcebuilder.go``, ``newScaleSetListenerConfig``):
``cmd/ghalistener/config.Config`` through Go's JSON encoder, so keys in the struct's
order, the GitHub App block embedded (all four keys, the unused ones zero), the vault
keys empty, map keys of the ``metrics`` block sorted, no spaces and a final newline.
With the listener metrics off the controller writes ``"metrics_addr":""`` and
``"metrics_endpoint":""``. The ERS is ``create_ers``'s, of scale set 1, unless
given.
"""

from __future__ import annotations

import json

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.ghalistener.test_cli_subprocess import ERS_NAME

PAT = "ghp_arcGeneratedConfigPAT0123456789"


def pat_config_metrics_off(
    configure_url: str,
    namespace: str,
    *,
    token: str = PAT,
    ers_name: str = ERS_NAME,
    min_runners: int = 0,
    max_runners: int = 2147483647,
    scale_set_id: int = 1,
    scale_set_name: str = "arc-runners",
) -> str:
    return (
        "{"
        f'"configure_url":{json.dumps(configure_url)},'
        '"vault_type":"","vault_lookup_key":"",'
        '"github_app_id":"","github_app_installation_id":0,"github_app_private_key":"",'
        f'"github_token":"{token}",'
        f'"ephemeral_runner_set_namespace":"{namespace}","ephemeral_runner_set_name":"{ers_name}",'
        f'"max_runners":{max_runners},"min_runners":{min_runners},'
        f'"runner_scale_set_id":{scale_set_id},'
        f'"runner_scale_set_name":"{scale_set_name}","server_root_ca":"",'
        '"log_level":"debug","log_format":"text",'
        '"metrics_addr":"","metrics_endpoint":"","metrics":null'
        "}\n"
    )


METRICS_BLOCK = (
    '{"counters":{'
    '"gha_completed_jobs_total":{"labels":'
    '["repository","job_workflow_name","job_workflow_target","job_result"]},'
    '"gha_started_jobs_total":{"labels":["repository"]}},'
    '"gauges":{'
    '"gha_assigned_jobs":{"labels":["name","namespace"]},'
    '"gha_desired_runners":{"labels":["name"]}},'
    '"histograms":{'
    '"gha_job_execution_duration_seconds":{"labels":["job_workflow_ref","job_result"],'
    '"buckets":[1,10,60]}}}'
)
SELECTED = {
    "gha_completed_jobs_total": {
        "repository",
        "job_workflow_name",
        "job_workflow_target",
        "job_result",
    },
    "gha_started_jobs_total": {"repository"},
    "gha_assigned_jobs": {"name", "namespace"},
    "gha_desired_runners": {"name"},
    "gha_job_execution_duration_seconds": {"job_workflow_ref", "job_result"},
}


def app_config_metrics_on(
    configure_url: str, namespace: str, private_key: str, metrics_port: int
) -> str:
    return (
        "{"
        f'"configure_url":{json.dumps(configure_url)},'
        '"vault_type":"","vault_lookup_key":"",'
        '"github_app_id":"12345","github_app_installation_id":67890,'
        f'"github_app_private_key":{json.dumps(private_key)},"github_token":"",'
        f'"ephemeral_runner_set_namespace":"{namespace}","ephemeral_runner_set_name":"{ERS_NAME}",'
        '"max_runners":5,"min_runners":0,"runner_scale_set_id":1,'
        '"runner_scale_set_name":"arc-runners","server_root_ca":"",'
        '"log_level":"info","log_format":"json",'
        f'"metrics_addr":":{metrics_port}","metrics_endpoint":"/metrics",'
        f'"metrics":{METRICS_BLOCK}'
        "}\n"
    )


def rsa_private_key() -> str:
    """A GitHub App key as GitHub hands it out: PKCS#1 PEM."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    ).decode()
