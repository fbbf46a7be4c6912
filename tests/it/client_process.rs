//! The flags language clients add (`--stdio`, `--clientProcessId=N`) and
//! the server's exit when the editor's process ends, however it was told
//! of that process.

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::support::lsp_client::{ClientOptions, LspClient};

/// How the server learns of the editor's process.
enum Told {
    /// `--stdio --clientProcessId=PID`, as vscode-languageclient passes them.
    FlagJoined,
    /// `lsp --stdio --clientProcessId PID`.
    FlagAfterSubcommand,
    /// `initialize`'s `processId`.
    Initialize,
}

/// A started, initialized server that answers a request.
fn serving(options: ClientOptions) -> LspClient {
    let client = LspClient::start(env!("CARGO_BIN_EXE_bareagent").as_ref(), options);
    client.initialize();
    let status = client.request(
        "workspace/executeCommand",
        serde_json::json!({"command": "bareagent.status"}),
    );
    assert!(
        status.is_ok(),
        "the server answers: {status:?}\n{}",
        client.stderr()
    );
    client
}

#[test]
fn the_server_accepts_client_flags_and_exits_when_the_editor_process_ends() {
    for told in [
        Told::FlagJoined,
        Told::FlagAfterSubcommand,
        Told::Initialize,
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut editor = Command::new("sleep")
            .arg("600")
            .stdin(Stdio::null())
            .spawn()
            .expect("start a stand-in editor process");
        let pid = editor.id();
        let mut options = ClientOptions::new(dir.path());
        match told {
            Told::FlagJoined => {
                options.args = vec!["--stdio".into(), format!("--clientProcessId={pid}")];
            }
            Told::FlagAfterSubcommand => {
                options.args = vec![
                    "lsp".into(),
                    "--stdio".into(),
                    "--clientProcessId".into(),
                    pid.to_string(),
                ];
            }
            Told::Initialize => options.process_id = pid,
        }
        let client = serving(options);
        editor.kill().unwrap();
        editor.wait().unwrap();
        let exit = client.wait_for_exit(Duration::from_secs(20));
        assert!(
            exit.is_some_and(|status| status.success()),
            "the server ends with the editor: {exit:?}\n{}",
            client.stderr()
        );
    }
}

#[test]
fn a_client_process_that_is_not_visible_is_not_taken_as_ended() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = ClientOptions::new(dir.path());
    // No such process (above the kernel's pid_max): as an editor in
    // another PID namespace looks.
    options.process_id = 99_999_999;
    let client = serving(options);
    client.wait_until(Duration::from_secs(10), "the warning", |c| {
        c.stderr().contains("not visible")
    });
}
