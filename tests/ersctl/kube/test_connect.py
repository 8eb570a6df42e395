"""A kubeconfig's embedded credentials reach the client without a temporary file: the
image's root filesystem is read-only, and there is no usable temporary directory."""

from __future__ import annotations

import base64
import ssl
import tempfile
from pathlib import Path

import pytest
import yaml

from ersctl.kube.connect import api_client, check_api_group
from ersctl.kube.errors import NotFoundError
from ersctl.platform.errors import ConfigError
from ghalistener.testing.model import GitHubSimulator
from ghalistener.testing.server import serve
from tests.certificates import server_certificates


def _b64(data: bytes) -> str:
    return base64.standard_b64encode(data).decode()


def _kubeconfig(path: Path, server: str, *, ca: bytes, cert: bytes, key: bytes) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": "c",
                        "cluster": {"server": server, "certificate-authority-data": _b64(ca)},
                    }
                ],
                "users": [
                    {
                        "name": "u",
                        "user": {
                            "client-certificate-data": _b64(cert),
                            "client-key-data": _b64(key),
                        },
                    }
                ],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        ),
        encoding="utf-8",
    )
    return path


@pytest.fixture
def no_temporary_directory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """As on the image's read-only root: any temporary file fails."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "read-only-root" / "tmp"))


@pytest.mark.usefixtures("no_temporary_directory")
def test_embedded_credentials_reach_the_client_with_no_temporary_file(tmp_path: Path) -> None:
    tls = server_certificates(tmp_path)
    cert, key = (tmp_path / "leaf.pem").read_bytes(), (tmp_path / "leaf.key").read_bytes()
    with serve(GitHubSimulator(), port=0, tls=tls.server) as server:
        path = _kubeconfig(
            tmp_path / "kubeconfig", server.url, ca=tls.root_pem.encode(), cert=cert, key=key
        )

        api = api_client(str(path))

        conf = api.configuration
        assert Path(conf.ssl_ca_cert).read_bytes() == tls.root_pem.encode()
        assert Path(conf.cert_file).read_bytes() == cert
        assert Path(conf.key_file).read_bytes() == key
        ssl.create_default_context().load_cert_chain(conf.cert_file, conf.key_file)
        assert not (tmp_path / "read-only-root").exists()
        # The server's certificate verified against the embedded CA: the request was
        # answered (this server serves no Kubernetes API), not refused at the handshake.
        with pytest.raises(NotFoundError):
            check_api_group(api, group="actions.github.com", version="v1alpha1")


@pytest.mark.usefixtures("no_temporary_directory")
def test_embedded_data_that_is_not_base64_is_one_line_naming_the_file(tmp_path: Path) -> None:
    path = _kubeconfig(tmp_path / "kubeconfig", "https://127.0.0.1:1", ca=b"", cert=b"", key=b"")
    doc = yaml.safe_load(path.read_text())
    doc["clusters"][0]["cluster"]["certificate-authority-data"] = "not base64!"
    path.write_text(yaml.safe_dump(doc))

    with pytest.raises(ConfigError) as caught:
        api_client(str(path))

    assert str(caught.value) == f"kubeconfig: {path}: certificate-authority-data is not base64"
