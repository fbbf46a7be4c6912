//! The second turn's way to the model over HTTPS: the time from sending
//! `bareagent.ask` to the model server receiving the model request, on the
//! language server's second turn. A build that makes a new HTTP client per
//! turn loads the root store and shakes hands again there; one that keeps
//! its client for the session sends on the connection it has.
//!
//! The model server is the scripted one (tests/support) behind a TLS front
//! on 127.0.0.1: rustls, with a CA and a leaf for 127.0.0.1 made at run time
//! (rcgen); each TLS connection is forwarded to a connection of its own to
//! the server, so keep-alive passes through. The agent trusts the test CA
//! the way any program on the machine is made to: reqwest's verifier reads
//! the platform's roots (when the client is built), which
//! rustls-native-certs takes from `SSL_CERT_FILE` and `SSL_CERT_DIR`: here
//! the system's roots and the test CA in one file, and the system's folder
//! of roots, the two places it finds on Debian when neither is set, so the
//! root store costs what it costs with the system's roots. The front
//! offers HTTP/1.1 only (all the scripted server speaks), where the APIs
//! offer HTTP/2 as well.
//!
//! `cargo bench --bench second_turn`. Knobs: `RUNS` (default 20),
//! `BAREAGENT_BIN` (the build measured; default this one),
//! `BAREAGENT_BIN_BEFORE` (another build, measured in the same run, each of
//! its runs next to one of the first's), `PLAIN=1` (plain HTTP to the model
//! server, no TLS front: what the figure is without TLS).

// Its unit tests are compiled out here; their imports would warn.
#[allow(unused_imports)]
#[path = "../tests/support/event_schema.rs"]
mod event_schema;
#[path = "support/measured.rs"]
mod measured;
// Its unit tests are compiled out here; their imports would warn.
#[allow(unused_imports)]
#[path = "../tests/support/lsp_client.rs"]
mod lsp_client;
#[path = "../tests/support/model_server.rs"]
mod model_server;

use measured::bareagent;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use lsp_client::{ClientOptions, LspClient};
use model_server::{ModelServer, Reply};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use serde_json::json;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

/// Where Debian and its kin keep the system's roots: one file, and a folder
/// of a file each.
const SYSTEM_ROOTS: &str = "/etc/ssl/certs/ca-certificates.crt";
const SYSTEM_ROOTS_DIR: &str = "/etc/ssl/certs";
const TURN_TIMEOUT: Duration = Duration::from_secs(30);

fn main() {
    let runs: usize = std::env::var("RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(20)
        .max(1);
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp dir");
    let plain = std::env::var("PLAIN").is_ok_and(|v| v == "1");
    let (tls, ca) = test_tls();
    let roots = dir.path().join("roots.pem");
    let system = std::fs::read_to_string(SYSTEM_ROOTS).unwrap_or_else(|_| {
        println!("no {SYSTEM_ROOTS}: the root store holds the test CA alone");
        String::new()
    });
    std::fs::write(&roots, format!("{system}\n{ca}")).expect("write the roots");

    let measured = match std::env::var_os("BAREAGENT_BIN") {
        Some(_) => "BAREAGENT_BIN",
        None => "this build",
    };
    let mut builds = vec![(measured, bareagent())];
    if let Some(before) = std::env::var_os("BAREAGENT_BIN_BEFORE") {
        builds.insert(0, ("BAREAGENT_BIN_BEFORE", before.into()));
    }
    for (name, binary) in &builds {
        println!("{name}: {}", binary.display());
        // A warm-up (page cache), not recorded.
        second_turn(binary, (!plain).then_some(&tls), &roots);
    }
    let mut times = vec![Vec::new(); builds.len()];
    for _ in 0..runs {
        for ((_, binary), times) in builds.iter().zip(&mut times) {
            times.push(second_turn(binary, (!plain).then_some(&tls), &roots));
        }
    }
    let over = if plain { "plain HTTP" } else { "HTTPS" };
    println!(
        "\nbareagent.ask sent → model request received, second turn, over {over} ({runs} runs):"
    );
    for ((name, _), mut times) in builds.into_iter().zip(times) {
        times.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let p90 = times[(times.len() * 9).div_ceil(10).saturating_sub(1)];
        println!(
            "  {name:<20} median {:.2} ms, p90 {:.2} ms, min {:.2} ms, max {:.2} ms",
            ms(times[times.len() / 2]),
            ms(p90),
            ms(times[0]),
            ms(times[times.len() - 1])
        );
    }
}

/// One language server, two turns; the second's ask → model request. With
/// `tls`, the model server is behind a TLS front.
fn second_turn(binary: &Path, tls: Option<&Arc<rustls::ServerConfig>>, roots: &Path) -> Duration {
    let model = ModelServer::start(vec![Reply::text("one").into(), Reply::text("two").into()]);
    let backend = model
        .anthropic_base()
        .trim_start_matches("http://")
        .parse()
        .expect("the model server's address");
    let front = tls.map(|tls| TlsFront::start(tls.clone(), backend));
    let base_url = match &front {
        Some(front) => format!("https://{}", front.addr),
        None => model.anthropic_base(),
    };
    let root = tempfile::tempdir().expect("workspace");
    let mut options = ClientOptions::new(root.path());
    options.env.extend([
        ("ANTHROPIC_API_KEY".to_string(), "sk-bench".to_string()),
        ("SSL_CERT_FILE".to_string(), roots.display().to_string()),
        ("SSL_CERT_DIR".to_string(), SYSTEM_ROOTS_DIR.to_string()),
    ]);
    options.initialization_options = json!({
        "provider": "anthropic", "baseUrl": base_url, "permissionMode": "default",
    });
    let client = LspClient::start(binary, options);
    client.initialize();
    let turn = |prompt: &str| {
        let sent = Instant::now();
        let started = client
            .execute("bareagent.ask", json!([prompt]))
            .unwrap_or_else(|e| panic!("ask: {e}"));
        let end = client.wait_for_notification(TURN_TIMEOUT, "the turn's end", |method, params| {
            method == "bareagent/event"
                && params["turn"] == started["turn"]
                && matches!(
                    params["type"].as_str(),
                    Some("turn_finished" | "turn_failed")
                )
        });
        assert_eq!(end["type"], "turn_finished", "{end}\n{}", client.stderr());
        sent
    };
    turn("one");
    let sent = turn("two");
    let requests = model.requests();
    assert_eq!(requests.len(), 2, "two model requests");
    client.shutdown();
    requests[1].received.duration_since(sent)
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
struct TlsFront {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl TlsFront {
    fn start(config: Arc<rustls::ServerConfig>, backend: SocketAddr) -> TlsFront {
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
