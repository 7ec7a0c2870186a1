//! TLS as the live services and their clients take it: PEM files named
//! by flags (or a node's JSON configuration), read once at start, each
//! error naming its flag and file.

use anyhow::{Context, Result};
use faasched_live::tls::{ClientTls, ServerTls};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// A service's TLS files: its own certificate and key, and the CA its
/// peers' certificates must chain to.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::Args)]
#[serde(default, deny_unknown_fields)]
pub struct TlsFiles {
    /// Serve TLS only, with the certificate chain in this PEM file (the
    /// service's own certificate first; it must name the host clients
    /// reach it at: an IP address or a DNS name). Needs --tls-key.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert, a PEM file (keep it mode 600).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Speak TLS to the services this one reaches (a node: its --register
    /// gateway; a gateway: its nodes), trusting the CA certificates in
    /// this PEM file; they must then all serve TLS.
    #[arg(long, value_name = "FILE")]
    pub tls_ca: Option<PathBuf>,
}

/// A service's TLS, read: its listener's, and how it speaks to its peers.
#[derive(Clone, Debug, Default)]
pub struct Tls {
    /// The listener takes TLS only, with this certificate.
    pub listener: Option<ServerTls>,
    /// Peers are spoken to under TLS, checked against this CA.
    pub peers: Option<ClientTls>,
}

impl TlsFiles {
    /// The files read; errors name the flag and the file.
    pub fn read(&self) -> Result<Tls> {
        let listener = match (&self.tls_cert, &self.tls_key) {
            (Some(cert), Some(key)) => {
                Some(ServerTls::from_pem_files(cert, key).context("--tls-cert and --tls-key")?)
            }
            (None, None) => None,
            (Some(_), None) => anyhow::bail!("--tls-cert needs --tls-key"),
            (None, Some(_)) => anyhow::bail!("--tls-key needs --tls-cert"),
        };
        Ok(Tls {
            listener,
            peers: client(self.tls_ca.as_deref())?,
        })
    }
}

/// A client's TLS, trusting the CA in `ca` (`--tls-ca`), if given.
pub fn client(ca: Option<&Path>) -> Result<Option<ClientTls>> {
    ca.map(|ca| ClientTls::from_ca_file(ca).context("--tls-ca"))
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_a_pair_and_bad_files_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.pem");
        let half = TlsFiles {
            tls_cert: Some(missing.clone()),
            ..TlsFiles::default()
        };
        assert!(half.read().unwrap_err().to_string().contains("--tls-key"));
        let bad = TlsFiles {
            tls_ca: Some(missing),
            ..TlsFiles::default()
        };
        let e = format!("{:#}", bad.read().unwrap_err());
        assert!(e.contains("--tls-ca") && e.contains("missing.pem"), "{e}");
        let none = TlsFiles::default().read().unwrap();
        assert!(none.listener.is_none() && none.peers.is_none());
    }
}
