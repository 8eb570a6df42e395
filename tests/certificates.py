"""Throwaway certificate authorities for TLS tests: a root, optionally an intermediate
it signed, and a leaf for 127.0.0.1 (and any other host names asked for) with the
server context that presents it; and a client certificate with the CA that signed it,
for a server that authenticates its clients by certificate."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass(frozen=True)
class ServerCertificates:
    """PEMs of the CAs, and the server side's context (its leaf, then the intermediate)."""

    root_pem: str
    intermediate_pem: str  # "" when the root signed the leaf itself
    server: ssl.SSLContext


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _ca(
    name: str,
    key: ec.EllipticCurvePrivateKey,
    issuer: tuple[x509.Certificate, ec.EllipticCurvePrivateKey] | None,
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    signer_cert, signer_key = issuer or (None, key)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(name))
        .issuer_name(signer_cert.subject if signer_cert else _name(name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
    )
    if signer_cert is not None:
        builder = builder.add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(signer_key.public_key()),
            critical=False,
        )
    return builder.sign(signer_key, hashes.SHA256())


def _leaf(
    key: ec.EllipticCurvePrivateKey,
    issuer: x509.Certificate,
    issuer_key: ec.EllipticCurvePrivateKey,
    hosts: tuple[str, ...],
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(_name("127.0.0.1"))
        .issuer_name(issuer.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([_san(h) for h in hosts]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()),
            critical=False,
        )
        .sign(issuer_key, hashes.SHA256())
    )


def _san(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def _pem(certificate: x509.Certificate) -> str:
    return certificate.public_bytes(serialization.Encoding.PEM).decode()


def server_certificates(
    directory: Path, *, intermediate: bool = False, hosts: tuple[str, ...] = ()
) -> ServerCertificates:
    """Root -> (intermediate ->) leaf for 127.0.0.1 and ``hosts`` (names or addresses);
    files are written to ``directory``."""
    root_key = ec.generate_private_key(ec.SECP256R1())
    root = _ca("test root CA", root_key, None)
    signer, signer_key, chain = root, root_key, ""
    if intermediate:
        signer_key = ec.generate_private_key(ec.SECP256R1())
        signer = _ca("test intermediate CA", signer_key, (root, root_key))
        chain = _pem(signer)
    leaf_key = ec.generate_private_key(ec.SECP256R1())
    leaf = _leaf(leaf_key, signer, signer_key, ("127.0.0.1", *hosts))
    cert_file, key_file = directory / "leaf.pem", directory / "leaf.key"
    # The server presents its leaf and the intermediate, as a web server is set up to.
    cert_file.write_text(_pem(leaf) + chain)
    key_file.write_bytes(
        leaf_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    return ServerCertificates(root_pem=_pem(root), intermediate_pem=chain, server=context)


@dataclass(frozen=True)
class ClientCertificate:
    """A client's certificate and key (files), and the PEM of the CA that signed it."""

    ca_pem: str
    cert_file: Path
    key_file: Path


def client_certificate(directory: Path, user: str = "tester") -> ClientCertificate:
    """A CA and a client certificate it signed for ``user`` (its common name, as the
    API server names the user), written to ``directory``."""
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = _ca("test client CA", ca_key, None)
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(_name(user))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]), False)
        .sign(ca_key, hashes.SHA256())
    )
    cert_file, key_file = directory / f"{user}.pem", directory / f"{user}.key"
    cert_file.write_text(_pem(certificate))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return ClientCertificate(ca_pem=_pem(ca), cert_file=cert_file, key_file=key_file)
