"""Throwaway certificates and a loopback HTTPS server for TLS tests.

    certs = make_certs(tmp_path)        # a CA, a server cert for 127.0.0.1, a client cert
    with TlsStreamServer(certs, require_client_cert=True) as server:
        url = server.base_url           # https://127.0.0.1:PORT/v1
    assert server.client_subjects == ["streamscope-test-client"]

The server answers any request with a short OpenAI-style event stream ("Hello over mTLS")
and records the common name of each client certificate it saw. Certificates are made with
``cryptography`` (an ``openssl`` dependency of ``truststore`` users anyway).
"""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import socket
import ssl
import threading
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CLIENT_NAME = "streamscope-test-client"
ANSWER = "Hello over mTLS"


@dataclass(frozen=True, slots=True)
class Certs:
    """PEM files: ``ca`` signs ``server`` (for 127.0.0.1 and localhost) and ``client``;
    ``client_combined`` holds the client certificate and its key in one file;
    ``client_key_encrypted`` is the key protected by a passphrase."""

    ca: Path
    server: Path
    server_key: Path
    client: Path
    client_key: Path
    client_combined: Path
    client_key_encrypted: Path
    stranger: Path
    """A client certificate and key (one file) signed by another CA: servers refuse it."""


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _cert(
    subject: str,
    key: ec.EllipticCurvePrivateKey,
    issuer: tuple[str, ec.EllipticCurvePrivateKey] | None,
    *,
    ca: bool = False,
    usage: ExtendedKeyUsageOID | None = None,
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    issuer_name, issuer_key = issuer if issuer else (subject, key)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(_name(issuer_name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if ca:
        builder = builder.add_extension(
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
        builder = builder.add_extension(
            x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False
        )
    else:
        builder = builder.add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()),
            critical=False,
        )
    if usage == ExtendedKeyUsageOID.SERVER_AUTH:
        builder = builder.add_extension(
            x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
            ),
            critical=False,
        )
    if usage is not None:
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def make_certs(directory: Path) -> Certs:
    """Write a fresh CA, server and client certificate (and keys) into ``directory``."""
    pem = serialization.Encoding.PEM
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = _cert("streamscope-test-ca", ca_key, None, ca=True)
    issuer = ("streamscope-test-ca", ca_key)
    server_key = ec.generate_private_key(ec.SECP256R1())
    server = _cert("127.0.0.1", server_key, issuer, usage=ExtendedKeyUsageOID.SERVER_AUTH)
    client_key = ec.generate_private_key(ec.SECP256R1())
    client = _cert(CLIENT_NAME, client_key, issuer, usage=ExtendedKeyUsageOID.CLIENT_AUTH)

    other_ca_key = ec.generate_private_key(ec.SECP256R1())
    stranger_key = ec.generate_private_key(ec.SECP256R1())
    stranger = _cert(
        CLIENT_NAME,
        stranger_key,
        ("another-ca", other_ca_key),
        usage=ExtendedKeyUsageOID.CLIENT_AUTH,
    )

    def key_bytes(key: ec.EllipticCurvePrivateKey, password: bytes | None = None) -> bytes:
        algorithm: serialization.KeySerializationEncryption = (
            serialization.BestAvailableEncryption(password)
            if password
            else serialization.NoEncryption()
        )
        return key.private_bytes(pem, serialization.PrivateFormat.PKCS8, algorithm)

    files = {
        "ca.pem": ca.public_bytes(pem),
        "server.pem": server.public_bytes(pem),
        "server.key": key_bytes(server_key),
        "client.pem": client.public_bytes(pem),
        "client.key": key_bytes(client_key),
        "client-combined.pem": client.public_bytes(pem) + key_bytes(client_key),
        "client-encrypted.key": key_bytes(client_key, b"passphrase"),
        "stranger.pem": stranger.public_bytes(pem) + key_bytes(stranger_key),
    }
    for name, data in files.items():
        (directory / name).write_bytes(data)
    d = directory
    return Certs(
        d / "ca.pem",
        d / "server.pem",
        d / "server.key",
        d / "client.pem",
        d / "client.key",
        d / "client-combined.pem",
        d / "client-encrypted.key",
        d / "stranger.pem",
    )


def server_context(certs: Certs, *, require_client_cert: bool) -> ssl.SSLContext:
    """An SSL context serving ``certs.server``; with ``require_client_cert``, clients must
    present a certificate signed by ``certs.ca``."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(certs.server, certs.server_key)
    if require_client_cert:
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(certs.ca)
    return context


class TlsStreamServer:
    """See the module docstring. Blocking sockets in threads (unlike asyncio's TLS, they
    send the TLS alert -- "certificate required" -- when a handshake fails, as real
    servers do); ``handshake_errors`` keeps why handshakes failed."""

    def __init__(self, certs: Certs, *, require_client_cert: bool = True) -> None:
        self.context = server_context(certs, require_client_cert=require_client_cert)
        self.client_subjects: list[str] = []
        self.handshake_errors: list[str] = []
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._sock.getsockname()[1])
        self._thread = threading.Thread(target=self._accept, daemon=True)

    @property
    def base_url(self) -> str:
        return f"https://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> TlsStreamServer:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
        self._sock.close()
        self._thread.join(timeout=10)

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        conn.settimeout(10)
        try:
            tls = self.context.wrap_socket(conn, server_side=True)
        except (ssl.SSLError, OSError) as exc:
            self.handshake_errors.append(str(exc))
            _linger_close(conn)
            return
        with tls:
            try:
                self._answer(tls)
            except (ssl.SSLError, OSError) as exc:
                self.handshake_errors.append(str(exc))

    def _answer(self, tls: ssl.SSLSocket) -> None:
        peer = tls.getpeercert() or {}
        for rdn in peer.get("subject", ()):
            for key, value in rdn:
                if key == "commonName":
                    self.client_subjects.append(value)
        data = b""
        while b"\r\n\r\n" not in data:
            part = tls.recv(65536)
            if not part:
                return
            data += part
        head, _, body = data.partition(b"\r\n\r\n")
        length = 0
        for line in head.decode("latin-1").split("\r\n"):
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length":
                length = int(value)
        while len(body) < length:
            part = tls.recv(65536)
            if not part:
                return
            body += part
        chunk = (
            '{"id":"t","object":"chat.completion.chunk","choices":[{"index":0,'
            f'"delta":{{"content":"{ANSWER}"}},"finish_reason":null}}]}}'
        )
        done = (
            '{"id":"t","object":"chat.completion.chunk","choices":[{"index":0,'
            '"delta":{},"finish_reason":"stop"}]}'
        )
        answer = f"data: {chunk}\n\ndata: {done}\n\ndata: [DONE]\n\n".encode()
        tls.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            + f"Content-Length: {len(answer)}\r\nConnection: close\r\n\r\n".encode()
            + answer
        )


def _linger_close(conn: socket.socket) -> None:
    """Close after a failed handshake without a reset: closing with the client's request
    unread would send RST, which can destroy the TLS alert before the client reads it."""
    try:
        conn.shutdown(socket.SHUT_WR)
        conn.settimeout(5)
        while conn.recv(65536):
            pass
    except OSError:
        pass
    finally:
        conn.close()
