//! Certificates for a TLS `redis-server`, made in the test with `rcgen`:
//! a private CA and a server certificate it signs for `127.0.0.1` and
//! `localhost`, written as PEM files into a temp dir (for
//! [`crate::RedisServer::start_tls`]).

use std::path::PathBuf;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};

/// A CA and a server certificate, as files.
pub struct TestCertificates {
    dir: tempfile::TempDir,
    /// The CA certificate (PEM): what a client trusts.
    pub ca_pem: String,
}

impl Default for TestCertificates {
    fn default() -> Self {
        Self::new()
    }
}

impl TestCertificates {
    /// Makes a CA and a server certificate signed by it.
    pub fn new() -> TestCertificates {
        let ca_key = KeyPair::generate().expect("ca key");
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("ca params");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "lc-agent test CA");
        let ca = ca_params.self_signed(&ca_key).expect("ca cert");
        let issuer = Issuer::new(ca_params, ca_key);

        let server_key = KeyPair::generate().expect("server key");
        let mut server_params =
            CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
                .expect("server params");
        server_params
            .distinguished_name
            .push(DnType::CommonName, "127.0.0.1");
        let server = server_params
            .signed_by(&server_key, &issuer)
            .expect("server cert");

        let dir = tempfile::tempdir().expect("tempdir");
        let certs = TestCertificates {
            ca_pem: ca.pem(),
            dir,
        };
        std::fs::write(certs.ca(), &certs.ca_pem).expect("write ca");
        std::fs::write(certs.cert(), server.pem()).expect("write cert");
        std::fs::write(certs.key(), server_key.serialize_pem()).expect("write key");
        certs
    }

    /// The CA certificate file.
    pub fn ca(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    /// The server certificate file.
    pub fn cert(&self) -> PathBuf {
        self.dir.path().join("server.pem")
    }

    /// The server key file.
    pub fn key(&self) -> PathBuf {
        self.dir.path().join("server.key")
    }
}
