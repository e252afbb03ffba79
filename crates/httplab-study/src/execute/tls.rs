//! Studies over TLS: the study's own certificate and an HTTPS readiness probe.
//!
//! With `tls = true` (or `httplab study --tls`) the study makes one
//! self-signed certificate (rcgen, ECDSA P-256, subject alternative names
//! `127.0.0.1` and `localhost`) in its work directory. Every server serves
//! HTTPS with it, and every load run trusts exactly that certificate
//! (`httplab load --ssl --cacert CERT`): the client verifies the chain and
//! the address as a browser would, so a peer that serves some other
//! certificate (a default snakeoil, a stale file) fails loudly instead of
//! being measured, and the handshake cost measured includes verification,
//! which every real client pays.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail, Context as _, Result};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};

/// The study's certificate and key, as PEM files. The certificate is
/// self-signed, so it is also the only trust anchor the clients need.
#[derive(Debug, Clone)]
pub struct CertFiles {
    /// Certificate (PEM); also the CA file given to the load generator.
    pub cert: PathBuf,
    /// Private key (PEM, PKCS#8).
    pub key: PathBuf,
}

/// What the study records about its certificate (`environment.extra.tls`).
pub const CERT_DESCRIPTION: &str =
    "self-signed ECDSA P-256 certificate for 127.0.0.1 and localhost, made by the study (rcgen); \
     the load generator verifies it (--ssl --cacert: chain and address)";

/// Makes the study's certificate in `dir` (`cert.pem`, `key.pem`).
pub fn generate(dir: &Path) -> Result<CertFiles> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let ck =
        rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string(), "localhost".to_string()])
            .context("generating the study's TLS certificate (rcgen)")?;
    let cert = dir.join("cert.pem");
    let key = dir.join("key.pem");
    std::fs::write(&cert, ck.cert.pem()).with_context(|| format!("writing {}", cert.display()))?;
    std::fs::write(&key, ck.signing_key.serialize_pem())
        .with_context(|| format!("writing {}", key.display()))?;
    // Apache and nginx read the key as root before dropping privileges, but a
    // server running as an unprivileged user must read it too: the study's
    // work directory is private to this run and the key protects nothing else.
    crate::execute::corpus::make_world_readable(dir)?;
    Ok(CertFiles { cert, key })
}

/// A rustls client configuration trusting only the certificates in `ca`.
pub fn client_config(ca: &Path) -> Result<Arc<ClientConfig>> {
    let mut roots = RootCertStore::empty();
    let certs = CertificateDer::pem_file_iter(ca)
        .map_err(|e| anyhow!("reading {}: {e}", ca.display()))?
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| anyhow!("{} is not valid PEM: {e}", ca.display()))?;
    if certs.is_empty() {
        bail!("{} holds no certificate", ca.display());
    }
    for c in certs {
        roots
            .add(c)
            .map_err(|e| anyhow!("{}: not usable as a trust anchor: {e}", ca.display()))?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut cfg = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("TLS versions")?
        .with_root_certificates(roots)
        .with_no_client_auth();
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(cfg))
}

/// The protocol version and cipher suite a handshake chose, e.g.
/// `TLSv1_3 TLS13_AES_256_GCM_SHA384` (rustls' names, as in `RunResult.tls`).
pub fn describe(conn: &ClientConnection) -> String {
    let v = conn
        .protocol_version()
        .map_or_else(|| "?".to_string(), |v| format!("{v:?}"));
    let s = conn
        .negotiated_cipher_suite()
        .map_or_else(|| "?".to_string(), |s| format!("{:?}", s.suite()));
    format!("{v} {s}")
}

/// One GET over TLS: Ok((status, "version suite")) when an HTTP response
/// head arrived over a verified handshake.
pub fn probe(
    addr: SocketAddr,
    path: &str,
    timeout: Duration,
    cfg: &Arc<ClientConfig>,
) -> Result<(u16, String)> {
    let sock = TcpStream::connect_timeout(&addr, timeout)?;
    sock.set_read_timeout(Some(timeout))?;
    sock.set_write_timeout(Some(timeout))?;
    let name = ServerName::IpAddress(addr.ip().into());
    let conn = ClientConnection::new(Arc::clone(cfg), name).context("TLS client")?;
    let mut s = StreamOwned::new(conn, sock);
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| anyhow!("TLS handshake or request: {e}"))?;
    s.flush()?;
    let mut buf = [0u8; 64];
    let mut n = 0;
    while n < 12 {
        let k = s
            .read(&mut buf[n..])
            .map_err(|e| anyhow!("TLS read: {e}"))?;
        if k == 0 {
            break;
        }
        n += k;
    }
    let seen = describe(&s.conn);
    let code = crate::execute::http::status_code(&buf[..n])?;
    Ok((code, seen))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn certificate_files_and_trust() {
        let d = tempfile::tempdir().unwrap();
        let c = generate(d.path()).unwrap();
        let pem = std::fs::read_to_string(&c.cert).unwrap();
        assert!(pem.contains("BEGIN CERTIFICATE"));
        assert!(std::fs::read_to_string(&c.key)
            .unwrap()
            .contains("PRIVATE KEY"));
        client_config(&c.cert).unwrap();
        assert!(client_config(&c.key).is_err(), "a key is no trust anchor");
    }
}
