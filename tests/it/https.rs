//! The model over HTTPS, as the real APIs are reached: the scripted server
//! behind a TLS front on 127.0.0.1 (tests/support/tls_front.rs), with a
//! certificate for 127.0.0.1 from a CA made at run time. The agent trusts
//! what the machine's roots say (`SSL_CERT_FILE`, `SSL_CERT_DIR`, as any
//! program does), and nothing else: a certificate no root signed, or one
//! for another name, ends the turn before a byte of the request is sent,
//! at once (a retry would meet the same certificate).

use crate::common::{TEST_KEY, bareagent, workspace};
use crate::support::model_server::{ModelServer, Reply};
use crate::support::tls_front::{TestTls, TlsFront};

/// Which roots the agent is given.
#[derive(Clone, Copy, Debug)]
enum Roots {
    /// The system's, and the CA that signed the server's certificate.
    SystemAndTestCa,
    /// Another CA, of the same shape, that signed nothing here, alone.
    OtherCa,
}

#[test]
fn the_model_is_reached_over_https_only_through_a_trusted_certificate() {
    // (case, roots, the host the base URL names, whether the turn reaches the server)
    let cases = [
        (
            "a certificate the roots vouch for",
            Roots::SystemAndTestCa,
            "127.0.0.1",
            true,
        ),
        (
            "a certificate no root signed",
            Roots::OtherCa,
            "127.0.0.1",
            false,
        ),
        (
            "a certificate for another name",
            Roots::SystemAndTestCa,
            "localhost",
            false,
        ),
    ];
    let scratch = tempfile::tempdir().unwrap();
    let tls = TestTls::new(scratch.path());
    let other_dir = scratch.path().join("other-ca");
    std::fs::create_dir(&other_dir).unwrap();
    let other = TestTls::new(&other_dir);
    // The other CA alone: its file, and an empty folder of roots.
    let other_roots = scratch.path().join("other-ca.pem");
    std::fs::write(&other_roots, &other.ca).unwrap();
    let no_roots_dir = scratch.path().join("no-roots");
    std::fs::create_dir(&no_roots_dir).unwrap();
    let other_env = [
        (
            "SSL_CERT_FILE".to_string(),
            other_roots.display().to_string(),
        ),
        (
            "SSL_CERT_DIR".to_string(),
            no_roots_dir.display().to_string(),
        ),
    ];
    for (case, roots, host, reached) in cases {
        let roots_env = match roots {
            Roots::SystemAndTestCa => tls.env(),
            Roots::OtherCa => other_env.clone(),
        };
        let dir = workspace(&[]);
        let server = ModelServer::start(vec![Reply::text("Over TLS.").into()]);
        let backend = server.anthropic_base();
        let backend = backend.trim_start_matches("http://").parse().unwrap();
        let front = TlsFront::start(tls.config.clone(), backend);
        let out = bareagent(dir.path())
            .args(["run", "--provider", "anthropic", "--base-url"])
            .arg(format!("https://{host}:{}", front.addr.port()))
            .env("ANTHROPIC_API_KEY", TEST_KEY)
            .envs(roots_env)
            .arg("hello")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.success(),
            reached,
            "{case}: exit {:?}\n{stdout}\n{stderr}",
            out.status
        );
        assert_eq!(server.requests().len(), usize::from(reached), "{case}");
        if reached {
            assert!(stdout.contains("Over TLS."), "{case}: {stdout}");
        } else {
            assert!(
                stderr.contains("invalid peer certificate") && stderr.contains("SSL_CERT_FILE"),
                "{case}: the error says why, and where roots come from: {stderr}"
            );
            // The same certificate would meet a second attempt.
            assert!(!stderr.contains("retrying"), "{case}: retried: {stderr}");
        }
    }
}
