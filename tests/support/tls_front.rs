//! A model server over HTTPS, on 127.0.0.1: a TLS front (rustls) before
//! the plain scripted server, under a CA made at run time (rcgen) for
//! 127.0.0.1. Each TLS connection is forwarded to a connection of its own
//! to the server, so keep-alive passes through. The front offers HTTP/1.1
//! only (all the scripted server speaks), where the APIs offer HTTP/2 too.
//!
//! The agent trusts the test CA the way any program on the machine is
//! made to: reqwest's verifier reads the platform's roots (when the client
//! is built), which rustls-native-certs takes from `SSL_CERT_FILE` and
//! `SSL_CERT_DIR`: here the system's roots and the test CA in one file, and
//! the system's folder of roots, the two places it finds on Debian when
//! neither is set. So the root store costs what it costs a user.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

/// Where Debian and its kin keep the system's roots: one file, and a folder
/// of a file each.
const SYSTEM_ROOTS: &str = "/etc/ssl/certs/ca-certificates.crt";
const SYSTEM_ROOTS_DIR: &str = "/etc/ssl/certs";

/// The server side of the test CA, and the roots file a client trusts it by.
pub struct TestTls {
    pub config: Arc<rustls::ServerConfig>,
    /// The test CA's certificate (PEM).
    pub ca: String,
    roots: PathBuf,
}

impl TestTls {
    /// A CA and a leaf for 127.0.0.1, made now; the roots file (the
    /// system's and the CA) is written in a folder of its own in `dir`.
    pub fn new(dir: &Path) -> TestTls {
        let (config, ca) = test_tls();
        let folder = dir.join("test-roots");
        std::fs::create_dir_all(&folder).expect("a folder for the roots");
        let roots = folder.join("roots.pem");
        let system = std::fs::read_to_string(SYSTEM_ROOTS).unwrap_or_else(|_| {
            println!("no {SYSTEM_ROOTS}: the root store holds the test CA alone");
            String::new()
        });
        std::fs::write(&roots, format!("{system}\n{ca}")).expect("write the roots");
        TestTls { config, ca, roots }
    }

    /// The environment that makes an agent trust the test CA, with the
    /// system's roots as well (on a machine without a folder of them, the
    /// roots file's own folder, which holds nothing else).
    pub fn env(&self) -> [(String, String); 2] {
        let system = Path::new(SYSTEM_ROOTS_DIR);
        let dir = if system.is_dir() {
            system
        } else {
            self.roots.parent().unwrap_or(Path::new("."))
        };
        [
            (
                "SSL_CERT_FILE".to_string(),
                self.roots.display().to_string(),
            ),
            ("SSL_CERT_DIR".to_string(), dir.display().to_string()),
        ]
    }
}

/// A server config for 127.0.0.1 under a CA made now, and the CA's
/// certificate (PEM) for the client's roots.
fn test_tls() -> (Arc<rustls::ServerConfig>, String) {
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "bareagent bench CA");
    let ca_key = rcgen::KeyPair::generate().expect("CA key");
    let ca_cert = ca.self_signed(&ca_key).expect("CA certificate");
    let issuer = rcgen::Issuer::new(ca, ca_key);
    let leaf_key = rcgen::KeyPair::generate().expect("leaf key");
    let leaf = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()])
        .expect("leaf params")
        .signed_by(&leaf_key, &issuer)
        .expect("leaf certificate");
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der()));
    let chain: Vec<CertificateDer<'static>> = vec![leaf.der().clone()];
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .expect("server certificate");
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    (Arc::new(config), ca_cert.pem())
}

/// TLS on 127.0.0.1 in front of a plain HTTP server: each connection
/// accepted is forwarded to a connection of its own to `backend`. Dropping
/// it stops it.
pub struct TlsFront {
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl TlsFront {
    pub fn start(config: Arc<rustls::ServerConfig>, backend: SocketAddr) -> TlsFront {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("TLS front: bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let addr = listener.local_addr().expect("TLS front: address");
        let (stop, stopped) = oneshot::channel();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("TLS front: runtime");
            runtime.block_on(async move {
                let listener = TcpListener::from_std(listener).expect("TLS front: listener");
                let acceptor = tokio_rustls::TlsAcceptor::from(config);
                let accept = async {
                    while let Ok((stream, _)) = listener.accept().await {
                        drop(tokio::spawn(forward(acceptor.clone(), stream, backend)));
                    }
                };
                tokio::select! {
                    _ = stopped => {}
                    () = accept => {}
                }
            });
        });
        TlsFront {
            addr,
            stop: Some(stop),
            thread: Some(thread),
        }
    }
}

impl Drop for TlsFront {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// One client's connection: the handshake, then bytes both ways until
/// either side closes.
async fn forward(acceptor: tokio_rustls::TlsAcceptor, stream: TcpStream, backend: SocketAddr) {
    let _ = stream.set_nodelay(true);
    let Ok(mut tls) = acceptor.accept(stream).await else {
        return;
    };
    let Ok(mut plain) = TcpStream::connect(backend).await else {
        return;
    };
    let _ = plain.set_nodelay(true);
    let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
}
