//! TLS for the live fronts and the clients that reach them (rustls over
//! ring): a node's and a gateway's listener may take TLS only
//! ([`ServerTls`]), and a gateway reaching its nodes, a node registering
//! with its gateway and the load generators may speak it ([`ClientTls`]),
//! trusting the certificates one CA file names.
//!
//! A peer is checked against the host of the address it is reached at: a
//! node reached at `10.0.0.2:7001` needs a certificate for the IP address
//! 10.0.0.2, one at `node-2.cluster:7001` one for that name. Clients are
//! not asked for certificates: what a client may do is its token's
//! ([`crate::auth`]), and TLS keeps the token and the traffic from the
//! path between.

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_rustls::{TlsAcceptor, TlsConnector};

/// How long a TLS handshake may take, either side, before the connection
/// is closed: a client that opens a connection and never finishes its
/// handshake holds it no longer than this.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a certificate, key or CA file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// The file does not hold what it should, or cannot be read.
    #[error("{path}: {what}")]
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        what: String,
    },
    /// rustls refused the certificate and key together.
    #[error("{cert} with {key}: {source}")]
    Pair {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
        /// Why.
        source: rustls::Error,
    },
}

fn file_error(path: &Path, what: impl fmt::Display) -> TlsError {
    TlsError::File {
        path: path.to_path_buf(),
        what: what.to_string(),
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The certificates of a PEM file, at least one.
fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| file_error(path, e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| file_error(path, e))?;
    if certs.is_empty() {
        return Err(file_error(path, "no PEM certificate in it"));
    }
    Ok(certs)
}

/// A listener's TLS: its certificate chain and key.
#[derive(Clone)]
pub struct ServerTls {
    acceptor: TlsAcceptor,
}

impl fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ServerTls")
    }
}

impl ServerTls {
    /// The chain in PEM file `cert` (the server's certificate first) and
    /// the private key in PEM file `key`.
    pub fn from_pem_files(cert: &Path, key: &Path) -> Result<ServerTls, TlsError> {
        let chain = certificates(cert)?;
        let secret = PrivateKeyDer::from_pem_file(key).map_err(|e| file_error(key, e))?;
        let config = ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .and_then(|b| b.with_no_client_auth().with_single_cert(chain, secret))
            .map_err(|source| TlsError::Pair {
                cert: cert.to_path_buf(),
                key: key.to_path_buf(),
                source,
            })?;
        Ok(ServerTls {
            acceptor: TlsAcceptor::from(Arc::new(config)),
        })
    }

    /// The server's side of a handshake on `stream`, within
    /// [`HANDSHAKE_TIMEOUT`].
    pub(crate) async fn accept(&self, stream: TcpStream) -> io::Result<impl Io> {
        tokio::time::timeout(HANDSHAKE_TIMEOUT, self.acceptor.accept(stream))
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "TLS handshake timed out"))?
    }
}

/// A client's TLS: the CA certificates its peers' certificates must chain
/// to. Two are equal when they are one reading of a CA file (clones).
#[derive(Clone)]
pub struct ClientTls {
    config: Arc<ClientConfig>,
}

impl PartialEq for ClientTls {
    fn eq(&self, other: &ClientTls) -> bool {
        Arc::ptr_eq(&self.config, &other.config)
    }
}

impl fmt::Debug for ClientTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ClientTls")
    }
}

impl ClientTls {
    /// Trusting the certificates in PEM file `ca`.
    pub fn from_ca_file(ca: &Path) -> Result<ClientTls, TlsError> {
        let mut roots = RootCertStore::empty();
        for cert in certificates(ca)? {
            roots.add(cert).map_err(|e| file_error(ca, e))?;
        }
        let config = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| file_error(ca, e))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(ClientTls {
            config: Arc::new(config),
        })
    }

    /// The client's side of a handshake on `stream` with the peer at
    /// `addr` (`HOST:PORT`), whose certificate must name HOST; within
    /// [`HANDSHAKE_TIMEOUT`].
    async fn connect(&self, addr: &str, stream: TcpStream) -> io::Result<impl Io> {
        let host = addr.rsplit_once(':').map_or(addr, |(host, _)| host);
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let name = ServerName::try_from(host.to_string())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("{addr}: {e}")))?;
        let connector = TlsConnector::from(Arc::clone(&self.config));
        tokio::time::timeout(HANDSHAKE_TIMEOUT, connector.connect(name, stream))
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "TLS handshake timed out"))?
    }
}

/// A connection's byte stream, plain or under TLS.
pub trait Io: AsyncRead + AsyncWrite + Send + Unpin + 'static {}

impl<T: AsyncRead + AsyncWrite + Send + Unpin + 'static> Io for T {}

/// A connection to `addr` (`HOST:PORT`), under TLS with `tls`.
pub async fn dial(addr: &str, tls: Option<&ClientTls>) -> io::Result<Box<dyn Io>> {
    over(TcpStream::connect(addr).await?, addr, tls).await
}

/// `stream`, connected to the peer at `addr` (`HOST:PORT`), under TLS with
/// `tls`; requests are small and each is a whole write, so they are not
/// held back.
pub async fn over(
    stream: TcpStream,
    addr: &str,
    tls: Option<&ClientTls>,
) -> io::Result<Box<dyn Io>> {
    stream.set_nodelay(true)?;
    Ok(match tls {
        Some(tls) => Box::new(tls.connect(addr, stream).await?),
        None => Box::new(stream),
    })
}

/// Certificates for tests of TLS, here and in other crates.
#[cfg(any(test, feature = "testing"))]
pub mod testing {
    use std::path::{Path, PathBuf};

    /// A CA, and a certificate it signed for 127.0.0.1 and `localhost`,
    /// written as PEM files in `dir`: (CA, certificate, key).
    pub fn certificates_in(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
        let ca_key = rcgen::KeyPair::generate().expect("a key");
        let mut ca = rcgen::CertificateParams::new(Vec::new()).expect("no names");
        ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let ca = ca.self_signed(&ca_key).expect("a CA");
        let params = rcgen::CertificateParams::new(Vec::new()).expect("no names");
        let issuer = rcgen::Issuer::new(params, &ca_key);
        let key = rcgen::KeyPair::generate().expect("a key");
        let cert = rcgen::CertificateParams::new(vec!["127.0.0.1".into(), "localhost".into()])
            .expect("valid names")
            .signed_by(&key, &issuer)
            .expect("a certificate");
        let paths = (
            dir.join("ca.pem"),
            dir.join("cert.pem"),
            dir.join("key.pem"),
        );
        std::fs::write(&paths.0, ca.pem()).expect("writable");
        std::fs::write(&paths.1, cert.pem()).expect("writable");
        std::fs::write(&paths.2, key.serialize_pem()).expect("writable");
        paths
    }
}

#[cfg(test)]
mod tests {
    use super::testing::certificates_in;
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    #[test]
    fn bad_files_are_refused_naming_them() {
        let dir = tempfile::tempdir().unwrap();
        let (ca, cert, key) = certificates_in(dir.path());
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "").unwrap();
        let e = ClientTls::from_ca_file(&empty).unwrap_err().to_string();
        assert!(
            e.contains("empty.pem") && e.contains("no PEM certificate"),
            "{e}"
        );
        let e = ServerTls::from_pem_files(&cert, &empty)
            .unwrap_err()
            .to_string();
        assert!(e.contains("empty.pem"), "{e}");
        let missing = dir.path().join("missing.pem");
        let e = ClientTls::from_ca_file(&missing).unwrap_err().to_string();
        assert!(e.contains("missing.pem"), "{e}");
        // The CA's certificate with the server's key: they do not match.
        assert!(ServerTls::from_pem_files(&ca, &key).is_err());
        assert!(ServerTls::from_pem_files(&cert, &key).is_ok());
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_client_trusting_the_ca_talks_and_others_do_not() {
        let dir = tempfile::tempdir().unwrap();
        let (ca, cert, key) = certificates_in(dir.path());
        let server = ServerTls::from_pem_files(&cert, &key).unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            loop {
                let (stream, _) = listener.accept().await.unwrap();
                let server = server.clone();
                tokio::spawn(async move {
                    if let Ok(mut tls) = server.accept(stream).await {
                        let mut byte = [0];
                        tls.read_exact(&mut byte).await.unwrap();
                        tls.write_all(&[byte[0] + 1]).await.unwrap();
                        tls.flush().await.unwrap();
                    }
                });
            }
        });
        let client = ClientTls::from_ca_file(&ca).unwrap();
        for host in ["127.0.0.1", "localhost"] {
            let mut conn = dial(&format!("{host}:{port}"), Some(&client))
                .await
                .unwrap();
            conn.write_all(&[41]).await.unwrap();
            let mut byte = [0];
            conn.read_exact(&mut byte).await.unwrap();
            assert_eq!(byte, [42], "{host}");
        }
        // A client that trusts another CA is refused the handshake.
        let other = tempfile::tempdir().unwrap();
        let (other_ca, _, _) = certificates_in(other.path());
        let stranger = ClientTls::from_ca_file(&other_ca).unwrap();
        let refused = dial(&format!("127.0.0.1:{port}"), Some(&stranger)).await;
        assert!(refused.is_err());
    }
}
