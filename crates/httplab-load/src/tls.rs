//! HTTPS: the client's TLS layer (rustls with the ring provider, the same
//! provider `httplab serve` uses, so one is built).
//!
//! TLS is a byte transformer between the socket and the HTTP/1.1 machine
//! (`h1.rs`): the engine hands ciphertext from the socket to a
//! [`rustls::ClientConnection`] and feeds the plaintext it yields to the
//! connection's `H1Conn`; requests go the other way. This module builds the
//! configuration once per run ([`Client::new`]): verification, trust
//! anchors, cipher suites, versions, ALPN, SNI and session resumption, and
//! words handshake failures for the report ([`describe_error`]).
//!
//! Verification follows the rule: `https://` URLs verify the
//! server's certificate (the system's roots, or `--cacert FILE`) unless
//! `--insecure`; httperf's `--ssl` spelling does not verify (as httperf), so
//! seed command lines run unchanged, and the report says the certificate
//! was not checked.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{anyhow, bail, Context, Result};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::Resumption;
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

/// TLS protocol versions `--tls-version` can pin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsVersion {
    /// TLS 1.2.
    V1_2,
    /// TLS 1.3.
    V1_3,
}

/// TLS settings of a run ([`crate::LoadSpec::tls`]); None there: cleartext.
#[derive(Debug, Clone, PartialEq)]
pub struct TlsSpec {
    /// Verify the server's certificate chain and name (`https://` URLs).
    /// False for httperf's `--ssl` and for `--insecure`.
    pub verify: bool,
    /// Trust anchors (PEM file) instead of the system's roots.
    pub cacert: Option<PathBuf>,
    /// Cipher suites, by rustls or OpenSSL name (`--ssl-ciphers`, `:` or `,`
    /// separated); empty: every suite of the provider.
    pub ciphers: Vec<String>,
    /// Offer session resumption (tickets and session IDs) on new
    /// connections; httperf's default, off with `--ssl-no-reuse`.
    pub reuse: bool,
    /// Only this protocol version (`--tls-version`); None: TLS 1.2 and 1.3.
    pub version: Option<TlsVersion>,
    /// Name sent as SNI and verified; None: the Host header's name
    /// (`--server-name`), else `--server`. An IP address sends no SNI.
    pub sni: Option<String>,
    /// ALPN protocols offered, in preference order.
    pub alpn: Vec<String>,
}

impl Default for TlsSpec {
    fn default() -> TlsSpec {
        TlsSpec {
            verify: true,
            cacert: None,
            ciphers: Vec::new(),
            reuse: true,
            version: None,
            sni: None,
            alpn: vec!["http/1.1".into()],
        }
    }
}

/// Session cache entries per worker thread (resumption with --ssl reuse).
const SESSIONS_PER_WORKER: usize = 4096;

/// OpenSSL's names of the suites the ring provider has (httperf's
/// `--ssl-ciphers` takes OpenSSL names); rustls' own names work as well.
const OPENSSL_NAMES: &[(&str, &str)] = &[
    ("TLS_AES_256_GCM_SHA384", "TLS13_AES_256_GCM_SHA384"),
    ("TLS_AES_128_GCM_SHA256", "TLS13_AES_128_GCM_SHA256"),
    (
        "TLS_CHACHA20_POLY1305_SHA256",
        "TLS13_CHACHA20_POLY1305_SHA256",
    ),
    (
        "ECDHE-ECDSA-AES256-GCM-SHA384",
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
    ),
    (
        "ECDHE-ECDSA-AES128-GCM-SHA256",
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
    ),
    (
        "ECDHE-ECDSA-CHACHA20-POLY1305",
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
    ),
    (
        "ECDHE-RSA-AES256-GCM-SHA384",
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
    ),
    (
        "ECDHE-RSA-AES128-GCM-SHA256",
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
    ),
    (
        "ECDHE-RSA-CHACHA20-POLY1305",
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
    ),
];

/// Parses `--ssl-ciphers` (`:` or `,` separated names).
pub fn parse_ciphers(list: &str) -> Vec<String> {
    list.split([':', ','])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

/// The run's TLS client: a configuration and the server name, built once.
#[derive(Debug, Clone)]
pub(crate) struct Client {
    pub config: Arc<ClientConfig>,
    pub name: ServerName<'static>,
    /// SNI actually sent (empty for an IP address).
    pub sni: String,
    pub verify: bool,
    pub reuse: bool,
}

impl Client {
    /// Builds the configuration for `tls` against `host` (the SNI fallback).
    pub fn new(tls: &TlsSpec, host: &str) -> Result<Client> {
        let mut provider = rustls::crypto::ring::default_provider();
        if !tls.ciphers.is_empty() {
            let mut chosen = Vec::new();
            for want in &tls.ciphers {
                let rustls_name = OPENSSL_NAMES
                    .iter()
                    .find(|(o, _)| o.eq_ignore_ascii_case(want))
                    .map_or(want.as_str(), |(_, r)| r);
                let Some(s) = provider.cipher_suites.iter().find(|s| {
                    s.suite()
                        .as_str()
                        .is_some_and(|n| n.eq_ignore_ascii_case(rustls_name))
                }) else {
                    let names: Vec<&str> = OPENSSL_NAMES.iter().map(|(o, _)| *o).collect();
                    bail!(
                        "--ssl-ciphers: cipher suite '{want}' is not available (rustls offers only modern AEAD suites: {})",
                        names.join(":")
                    );
                };
                chosen.push(*s);
            }
            provider.cipher_suites = chosen;
        }
        let mut versions: Vec<&'static rustls::SupportedProtocolVersion> = Vec::new();
        for v in [&rustls::version::TLS13, &rustls::version::TLS12] {
            let pinned_out = match tls.version {
                Some(TlsVersion::V1_2) => v.version != rustls::ProtocolVersion::TLSv1_2,
                Some(TlsVersion::V1_3) => v.version != rustls::ProtocolVersion::TLSv1_3,
                None => false,
            };
            let has_suite = provider
                .cipher_suites
                .iter()
                .any(|s| s.version().version == v.version);
            if !pinned_out && has_suite {
                versions.push(v);
            }
        }
        if versions.is_empty() {
            bail!("--ssl-ciphers and --tls-version leave no cipher suite to offer");
        }
        let provider = Arc::new(provider);
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&versions)
            .map_err(|e| anyhow!("TLS setup failed: {e}"))?;
        let mut config = if tls.verify {
            builder
                .with_root_certificates(roots(tls.cacert.as_ref())?)
                .with_no_client_auth()
        } else {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(NoVerification(
                    provider.signature_verification_algorithms,
                )))
                .with_no_client_auth()
        };
        config.alpn_protocols = tls.alpn.iter().map(|p| p.as_bytes().to_vec()).collect();
        config.resumption = if tls.reuse {
            Resumption::in_memory_sessions(SESSIONS_PER_WORKER)
        } else {
            Resumption::disabled()
        };
        let sni_host = tls.sni.as_deref().unwrap_or(host);
        let sni_host = strip_port(sni_host);
        let name = ServerName::try_from(sni_host.to_string())
            .map_err(|_| anyhow!("'{sni_host}' is not a valid TLS server name (SNI)"))?;
        let sni = match &name {
            ServerName::DnsName(d) => d.as_ref().to_string(),
            _ => String::new(),
        };
        Ok(Client {
            config: Arc::new(config),
            name,
            sni,
            verify: tls.verify,
            reuse: tls.reuse,
        })
    }

    /// A copy for one worker thread: its own session cache, so threads
    /// never contend for one lock per handshake.
    pub fn for_worker(&self) -> Arc<ClientConfig> {
        let mut c = (*self.config).clone();
        if self.reuse {
            c.resumption = Resumption::in_memory_sessions(SESSIONS_PER_WORKER);
        }
        Arc::new(c)
    }
}

/// `host[:port]` or `[v6]:port` → host.
fn strip_port(h: &str) -> &str {
    if let Some(rest) = h.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match h.rsplit_once(':') {
        Some((a, p)) if !a.contains(':') && p.bytes().all(|b| b.is_ascii_digit()) => a,
        _ => h,
    }
}

/// Trust anchors: `--cacert FILE`, else the system's roots.
fn roots(cacert: Option<&PathBuf>) -> Result<RootCertStore> {
    let mut store = RootCertStore::empty();
    if let Some(path) = cacert {
        let pem = std::fs::read(path)
            .with_context(|| format!("cannot read --cacert file {}", path.display()))?;
        let certs = CertificateDer::pem_slice_iter(&pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| anyhow!("--cacert file {} is not valid PEM: {e}", path.display()))?;
        if certs.is_empty() {
            bail!(
                "--cacert file {} holds no certificate (expected PEM \"BEGIN CERTIFICATE\" blocks)",
                path.display()
            );
        }
        for c in certs {
            store.add(c).map_err(|e| {
                anyhow!(
                    "--cacert file {}: a certificate is not usable as a trust anchor: {e}",
                    path.display()
                )
            })?;
        }
        return Ok(store);
    }
    let found = rustls_native_certs::load_native_certs();
    let (added, _ignored) = store.add_parsable_certificates(found.certs);
    if added == 0 {
        let why = found
            .errors
            .first()
            .map(|e| format!(" ({e})"))
            .unwrap_or_default();
        bail!(
            "no trusted root certificates found on this system{why}: give --cacert FILE, or --insecure to skip verification"
        );
    }
    Ok(store)
}

/// httperf's `--ssl` and `--insecure`: any certificate is accepted, but the
/// handshake's signatures are still checked (a broken peer still fails).
#[derive(Debug)]
struct NoVerification(WebPkiSupportedAlgorithms);

impl ServerCertVerifier for NoVerification {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_schemes()
    }
}

/// A handshake failure in words for the report, with what to do when that is clear.
pub(crate) fn describe_error(e: &rustls::Error) -> String {
    use rustls::{AlertDescription as A, CertificateError as C, Error as E};
    match e {
        E::InvalidCertificate(C::UnknownIssuer) => {
            "certificate verification failed: unknown issuer (self-signed or private CA: give --cacert FILE, or --insecure)".into()
        }
        E::InvalidCertificate(C::NotValidForName)
        | E::InvalidCertificate(C::NotValidForNameContext { .. }) => {
            "certificate verification failed: the certificate is not valid for the server name (set it with --server-name, or --insecure)".into()
        }
        E::InvalidCertificate(C::Expired) | E::InvalidCertificate(C::ExpiredContext { .. }) => {
            "certificate verification failed: the certificate has expired".into()
        }
        E::InvalidCertificate(c) => {
            let full = format!("{c:?}");
            if full.contains("CaUsedAsEndEntity") {
                return "certificate verification failed: the server's certificate is a CA certificate (basicConstraints CA:TRUE), which is refused as a server certificate; reissue it with CA:FALSE, or --insecure".into();
            }
            // The variant's name; its context is a dump of DER bytes.
            let name = full.split(['{', '(']).next().unwrap_or(&full).trim();
            format!(
                "certificate verification failed: {name} (a self-signed or private-CA certificate? give --cacert FILE, or --insecure)"
            )
        }
        E::AlertReceived(A::NoApplicationProtocol) => {
            "the server refused the handshake: no ALPN protocol in common (alert no_application_protocol)".into()
        }
        E::AlertReceived(A::HandshakeFailure) => {
            "the server refused the handshake (alert handshake_failure: no cipher suite or version in common?)".into()
        }
        E::AlertReceived(a) => format!("the server refused the handshake (alert {a:?})"),
        E::PeerIncompatible(p) => format!("the server is incompatible: {p:?}"),
        E::InvalidMessage(m) => format!("the server did not speak TLS ({m:?}): is it a cleartext port?"),
        other => format!("TLS handshake failed: {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn insecure() -> TlsSpec {
        TlsSpec {
            verify: false,
            ..TlsSpec::default()
        }
    }

    #[test]
    fn names_and_sni() {
        assert_eq!(strip_port("example.org:8443"), "example.org");
        assert_eq!(strip_port("[::1]:8443"), "::1");
        assert_eq!(strip_port("::1"), "::1");
        let c = Client::new(&insecure(), "127.0.0.1").unwrap();
        assert_eq!(c.sni, "");
        let mut t = insecure();
        t.sni = Some("www.example.org:8443".into());
        assert_eq!(Client::new(&t, "127.0.0.1").unwrap().sni, "www.example.org");
    }

    #[test]
    fn ciphers_by_either_name_and_refusals() {
        let mut t = insecure();
        t.ciphers = parse_ciphers("ECDHE-RSA-AES128-GCM-SHA256:TLS13_AES_128_GCM_SHA256");
        let c = Client::new(&t, "h").unwrap();
        assert_eq!(c.config.crypto_provider().cipher_suites.len(), 2);
        t.ciphers = parse_ciphers("RC4-MD5");
        let e = Client::new(&t, "h").unwrap_err().to_string();
        assert!(e.contains("RC4-MD5") && e.contains("not available"), "{e}");
        // Only TLS 1.2 suites and TLS 1.3 pinned: nothing to offer.
        t.ciphers = parse_ciphers("ECDHE-RSA-AES128-GCM-SHA256");
        t.version = Some(TlsVersion::V1_3);
        assert!(Client::new(&t, "h").is_err());
    }

    #[test]
    fn cacert_errors_are_clear() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("ca.pem");
        std::fs::write(&p, "not a certificate\n").unwrap();
        let t = TlsSpec {
            cacert: Some(p),
            ..TlsSpec::default()
        };
        let e = Client::new(&t, "h").unwrap_err().to_string();
        assert!(e.contains("holds no certificate"), "{e}");
        let t = TlsSpec {
            cacert: Some(dir.path().join("missing.pem")),
            ..TlsSpec::default()
        };
        let e = format!("{:#}", Client::new(&t, "h").unwrap_err());
        assert!(e.contains("cannot read --cacert"), "{e}");
    }

    #[test]
    fn error_words() {
        let e = rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
        assert!(describe_error(&e).contains("unknown issuer"));
        let e = rustls::Error::AlertReceived(rustls::AlertDescription::NoApplicationProtocol);
        assert!(describe_error(&e).contains("ALPN"));
    }
}
