//! `bareagent acp`: the Agent Client Protocol front end (Zed, JetBrains,
//! CodeCompanion, avante.nvim…), newline-delimited JSON-RPC on stdio, on
//! the official SDK (`agent-client-protocol`).
//!
//! Like `src/lsp/`, it is one more implementation of the core's seams over
//! its peer: a [`Workspace`](crate::workspace::Workspace) that reads and
//! writes through the client's `fs/*` (`workspace.rs`), a terminal that
//! runs allowed commands through `terminal/*` (`terminal.rs`), an
//! [`Approver`](crate::permission::Approver) that asks with
//! `session/request_permission` (`approver.rs`) and an
//! [`EventSink`](crate::events::EventSink) that streams `session/update`
//! (`sink.rs`). `server.rs` answers the requests, `session.rs` keeps a
//! session between prompts, `turn.rs` runs one prompt, `replay.rs` shows a
//! stored session again, `list.rs` lists the stored ones and
//! `transport.rs` reads and writes the lines.
//!
//! Architecture invariant: the SDK's types stay inside this module; the
//! core knows nothing of ACP. Stdout is the protocol; logs go to stderr.

mod approver;
mod calls;
mod config_options;
mod list;
mod replay;
mod server;
mod session;
mod sink;
mod terminal;
pub(crate) mod transport;
mod turn;
mod workspace;

pub use server::serve;

/// The connection to the client, to send it requests and notifications.
type Peer = agent_client_protocol::v1::ConnectionTo<agent_client_protocol::Client>;

/// `bareagent acp`'s options; the rest comes from the settings files and
/// the environment, as for `bareagent run`.
#[derive(Clone, Debug, clap::Args)]
pub struct AcpArgs {
    /// Model calls per prompt before the turn ends with `max_turn_requests`
    /// [default: 200].
    #[arg(long, value_name = "N")]
    pub max_iterations: Option<usize>,

    /// API base URL (default: ANTHROPIC_BASE_URL / OPENAI_BASE_URL, else the
    /// public endpoint).
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,

    /// Seconds without data from the model before a call fails [default: 120].
    #[arg(long, value_name = "SECS")]
    pub idle_timeout: Option<u64>,

    #[command(flatten)]
    pub reasoning: crate::session::ReasoningArgs,
}

impl AcpArgs {
    /// The command line's layer of the sessions' settings.
    pub fn layer(&self) -> crate::session::Layer {
        self.reasoning.onto(crate::session::Layer {
            base_url: self.base_url.clone(),
            max_iterations: self.max_iterations,
            idle_timeout: self.idle_timeout.map(std::time::Duration::from_secs),
            ..crate::session::Layer::default()
        })
    }
}
