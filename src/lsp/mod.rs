//! The language server: `bareagent` with no arguments. It runs the agent
//! loop against the editor's workspace — open buffers first, edits through
//! `workspace/applyEdit`, questions through `window/showMessageRequest` or
//! code actions — and is the only module that knows LSP types.

mod approvals;
mod chat;
mod code;
mod compact;
mod diagnostics_from_lsp;
pub(crate) mod documents;
mod editor;
pub mod editor_event;
mod effort;
mod mcp;
mod model;
mod parent;
mod pending;
pub(crate) mod pump;
mod restore;
mod resume;
mod rewind;
mod saving;
mod server;
mod session;
mod state;
mod turn;

use std::sync::Arc;

use tower_lsp_server::{LspService, Server};

pub use documents::{Change, Document, Encoding, Pos};

/// Handlers that may run at once. tower-lsp-server's default (4) lets four
/// handlers waiting on the client wedge everything, `$/cancelRequest` included.
const CONCURRENCY: usize = 64;

/// Serves LSP on stdin/stdout until the editor closes stdin, says `exit`,
/// or its process ends (`client_process_id`, from `--clientProcessId`, or
/// `initialize`'s `processId`). Returns whether the ending was clean:
/// `false` for an `exit` that came without a `shutdown` before it (the
/// process then exits with 1).
pub async fn serve(client_process_id: Option<u32>) -> bool {
    let shared: Arc<std::sync::OnceLock<Arc<state::State>>> = Arc::default();
    let keep = shared.clone();
    let (service, socket) = LspService::build(move |client| {
        let state = Arc::new(state::State::new(client));
        let _ = keep.set(state.clone());
        server::Backend { state }
    })
    .custom_method(
        "window/workDoneProgress/cancel",
        |backend: &server::Backend, params| server::cancel_progress(backend.state.clone(), params),
    )
    .custom_method(
        "bareagent/diagnostics",
        |backend: &server::Backend, params| {
            diagnostics_from_lsp::pushed(&backend.state, params);
            std::future::ready(())
        },
    )
    .finish();
    let (server_input, pump_output) = tokio::io::duplex(1 << 20);
    let (server_output, writer_input) = tokio::io::duplex(1 << 20);
    let (errors, error_answers) = tokio::sync::mpsc::unbounded_channel();
    let reader = tokio::spawn(pump::forward_input(tokio::io::stdin(), pump_output, errors));
    let writer = tokio::spawn(pump::write_output(
        writer_input,
        error_answers,
        tokio::io::stdout(),
    ));
    let parent_gone = shared
        .get()
        .map(|state| state.parent_gone.clone())
        .unwrap_or_default();
    if let Some(pid) = client_process_id {
        parent::watch(pid, parent_gone.clone());
    }
    let served = Server::new(server_input, server_output, socket)
        .concurrency_level(CONCURRENCY)
        .serve(service);
    tokio::select! {
        () = served => {}
        () = parent_gone.notified() => {
            if let Some(state) = shared.get() {
                state.stop_everything();
            }
            reader.abort();
            writer.abort();
            return true;
        }
    }
    // Still reading: the editor's `exit` ended the server, not its closing stdin.
    let by_exit = !reader.is_finished();
    reader.abort();
    let _ = writer.await;
    let shut_down = shared.get().is_some_and(|state| {
        state
            .shutdown_requested
            .load(std::sync::atomic::Ordering::Relaxed)
    });
    !by_exit || shut_down
}
