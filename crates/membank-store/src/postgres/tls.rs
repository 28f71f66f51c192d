//! TLS to the database, with libpq's meaning of `sslmode` so a URL that works with `psql`
//! works here:
//!
//! | `sslmode` | encrypted | server checked |
//! |---|---|---|
//! | `disable` | no | — |
//! | `prefer` (the default) | when the server offers it | only if `sslrootcert` is given (its CA) |
//! | `require` | always | only if `sslrootcert` is given (its CA) |
//! | `verify-ca` | always | chain to `sslrootcert` (else the Mozilla roots) |
//! | `verify-full` | always | chain and host name |
//!
//! `sslrootcert=PATH` names a PEM file of CA certificates (a managed database's CA bundle);
//! `sslrootcert=system` or none means the Mozilla roots compiled in (`webpki-roots`). Client
//! certificates (`sslcert`, `sslkey`) are not supported and are refused rather than ignored.
//! rustls with the `ring` provider does the TLS; the `postgres` client only knows `disable`,
//! `prefer` and `require`, so this module takes `sslmode` and `sslrootcert` out of the
//! connection string and configures both sides itself.

use std::path::PathBuf;
use std::sync::Arc;

use membank_core::InvalidInput;
use postgres::config::SslMode;
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::StoreError;

/// What the connection string asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

/// The connection string without `sslmode`/`sslrootcert`, and what they said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Settings {
    pub rest: String,
    pub mode: Mode,
    pub root_cert: Option<PathBuf>,
}

fn invalid(message: impl Into<String>) -> StoreError {
    StoreError::Invalid(InvalidInput::new("database URL", message.into()))
}

fn mode(value: &str) -> Result<Mode, StoreError> {
    Ok(match value {
        "disable" => Mode::Disable,
        "allow" | "prefer" => Mode::Prefer,
        "require" => Mode::Require,
        "verify-ca" => Mode::VerifyCa,
        "verify-full" => Mode::VerifyFull,
        other => {
            return Err(invalid(format!(
                "sslmode {other:?} is not one of disable, prefer, require, verify-ca, verify-full"
            )));
        }
    })
}

/// Takes the TLS settings out of a `postgres://` URL (query parameters) or a `key=value`
/// connection string.
pub(super) fn settings(text: &str) -> Result<Settings, StoreError> {
    let mut out = Settings { rest: String::new(), mode: Mode::Prefer, root_cert: None };
    let mut take = |key: &str, value: &str| -> Result<bool, StoreError> {
        match key {
            "sslmode" => out.mode = mode(value)?,
            "sslrootcert" if value == "system" => out.root_cert = None,
            "sslrootcert" => out.root_cert = Some(PathBuf::from(value)),
            "sslcert" | "sslkey" | "sslpassword" => {
                return Err(invalid(format!(
                    "{key}: client certificates are not supported; authenticate with a password"
                )));
            }
            _ => return Ok(false),
        }
        Ok(true)
    };
    let rest = if text.starts_with("postgres://") || text.starts_with("postgresql://") {
        match text.split_once('?') {
            Some((base, query)) => {
                let mut kept = Vec::new();
                for pair in query.split('&').filter(|p| !p.is_empty()) {
                    let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
                    let value = percent_decode(value);
                    if !take(key, &value)? {
                        kept.push(pair);
                    }
                }
                if kept.is_empty() { base.to_string() } else { format!("{base}?{}", kept.join("&")) }
            }
            None => text.to_string(),
        }
    } else {
        let mut kept = Vec::new();
        for word in text.split_whitespace() {
            let (key, value) = word.split_once('=').unwrap_or((word, ""));
            if !take(key.trim(), value.trim().trim_matches('\''))? {
                kept.push(word);
            }
        }
        kept.join(" ")
    };
    out.rest = rest;
    Ok(out)
}

/// `%XX` escapes decoded (paths in a URL may carry them); anything malformed stays as is.
fn percent_decode(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(byte) = value.get(i + 1..i + 3).and_then(|hex| u8::from_str_radix(hex, 16).ok())
        {
            out.push(byte);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl Settings {
    /// The `postgres` client's mode.
    pub(super) fn ssl_mode(&self) -> SslMode {
        match self.mode {
            Mode::Disable => SslMode::Disable,
            Mode::Prefer => SslMode::Prefer,
            Mode::Require | Mode::VerifyCa | Mode::VerifyFull => SslMode::Require,
        }
    }

    /// The TLS connector for these settings (reads `sslrootcert` now, so a missing or
    /// unreadable file is an error at open, not at the first query).
    pub(super) fn connector(&self) -> Result<MakeRustlsConnect, StoreError> {
        // The provider is named, so no process-wide default is needed (none is installed).
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let roots = match &self.root_cert {
            Some(path) => {
                let mut roots = RootCertStore::empty();
                let certs = CertificateDer::pem_file_iter(path)
                    .map_err(|e| invalid(format!("cannot read sslrootcert {}: {e}", path.display())))?;
                for cert in certs {
                    let cert = cert.map_err(|e| invalid(format!("sslrootcert {}: {e}", path.display())))?;
                    roots.add(cert).map_err(|e| invalid(format!("sslrootcert {}: {e}", path.display())))?;
                }
                if roots.is_empty() {
                    return Err(invalid(format!("sslrootcert {} holds no certificate", path.display())));
                }
                Some(roots)
            }
            None if matches!(self.mode, Mode::VerifyCa | Mode::VerifyFull) => {
                Some(RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() })
            }
            None => None,
        };
        let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| invalid(format!("TLS: {e}")))?;
        let verifier: Arc<dyn ServerCertVerifier> = match roots {
            None => Arc::new(EncryptOnly { algorithms: provider.signature_verification_algorithms }),
            Some(roots) => {
                let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
                    .build()
                    .map_err(|e| invalid(format!("TLS: {e}")))?;
                if self.mode == Mode::VerifyFull { webpki } else { Arc::new(ChainOnly(webpki)) }
            }
        };
        let config = builder.dangerous().with_custom_certificate_verifier(verifier).with_no_client_auth();
        Ok(MakeRustlsConnect::new(config))
    }
}

/// `prefer`/`require` without a CA, as libpq: the session is encrypted and the server's
/// handshake signature checked, but nobody vouches for who the server is.
#[derive(Debug)]
struct EncryptOnly {
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for EncryptOnly {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// `verify-ca` (and `require` with a CA): the chain must lead to a trusted root; the name
/// in the certificate need not be the host's.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.0.verify_server_cert(end_entity, intermediates, name, ocsp, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_parameters_leave_the_url_and_keep_the_rest() {
        let s =
            settings("postgres://me:pw@db:5432/m?sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem&application_name=x")
                .unwrap();
        assert_eq!(s.rest, "postgres://me:pw@db:5432/m?application_name=x");
        assert_eq!(s.mode, Mode::VerifyFull);
        assert_eq!(s.root_cert, Some(PathBuf::from("/etc/ca.pem")));
        let s = settings("postgres://db/m").unwrap();
        assert_eq!((s.rest.as_str(), s.mode, s.root_cert), ("postgres://db/m", Mode::Prefer, None));
        let s = settings("host=db dbname=m sslmode=require").unwrap();
        assert_eq!((s.rest.as_str(), s.mode), ("host=db dbname=m", Mode::Require));
        assert_eq!(settings("postgres://db/m?sslmode=disable").unwrap().ssl_mode(), SslMode::Disable);
    }

    #[test]
    fn unknown_modes_and_client_certificates_are_refused() {
        assert!(matches!(settings("postgres://db/m?sslmode=sometimes"), Err(StoreError::Invalid(_))));
        assert!(matches!(settings("postgres://db/m?sslcert=/c.pem"), Err(StoreError::Invalid(_))));
        let missing =
            Settings { rest: String::new(), mode: Mode::VerifyFull, root_cert: Some("/nonexistent/ca.pem".into()) };
        assert!(matches!(missing.connector(), Err(StoreError::Invalid(_))));
    }
}
