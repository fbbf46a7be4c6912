//! What the fuzz targets in `fuzz/` (cargo-fuzz) reach that the crate keeps
//! to itself: thin wrappers over crate-private parsers, in one place, so
//! that no internal is made public for them one by one. Not an API: hidden
//! from the docs, compiled always (clippy checks it), free to change.

use futures_util::StreamExt;

use crate::history::Message;
use crate::session_files::chain::{Chain, Checkpoint, SessionKey};
use crate::session_files::load;

pub use crate::lsp::documents::{Change, Document};
pub use crate::lsp::pump::forward_input as forward_editor_frames;
pub use crate::tools::edit_file::{EditError, Edited, apply_edit};

/// The frames the ACP line reader makes of `input`, in order.
pub async fn acp_lines(input: Vec<u8>) -> Vec<String> {
    crate::acp::transport::lines(std::io::Cursor::new(input))
        .filter_map(|line| async move { line.ok() })
        .collect()
        .await
}

/// A session file of `records` (JSON objects, one a line), each line
/// tagged as bareagent writes it with `key`, and where its writer synced
/// it last (as kept in the user's state).
pub fn seal_session(key: &[u8; 32], records: &[&[u8]]) -> (Vec<u8>, String) {
    let mut chain = Chain::new(SessionKey::from_bytes(key));
    let mut file = Vec::new();
    for record in records {
        let (line, next) = chain.seal(record);
        file.extend_from_slice(&line);
        chain = next;
    }
    (file, chain.checkpoint().to_text())
}

/// What a session file replays to, with what a resume and a rewind take
/// from it.
#[derive(Debug, PartialEq)]
pub struct Replayed {
    pub messages: Vec<Message>,
    pub turns: usize,
    pub edits: usize,
    /// The history a rewind of the last turn goes back to.
    pub before_last_turn: Option<Vec<Message>>,
    /// The history once a kill's unanswered tool calls are answered, as a
    /// resume repairs it, passes `check_history` (else: why not).
    pub resumable: Result<(), String>,
}

/// Replays a session file's bytes as the loader does: checked against the
/// chain of `key` and the sync point `end` (text as `seal_session` gives
/// it), or, without a key, unchecked as the session list reads it.
pub fn replay_session(
    bytes: &[u8],
    check: Option<(&[u8; 32], Option<&str>)>,
) -> Result<Replayed, String> {
    let check = match check {
        Some((key, end)) => {
            let end = match end {
                Some(text) => Some(Checkpoint::from_text(text).ok_or("not a checkpoint")?),
                None => None,
            };
            Some((SessionKey::from_bytes(key), end))
        }
        None => None,
    };
    let loaded = load::replay("fuzz.jsonl", bytes, check).map_err(|error| error.to_string())?;
    let mut repaired = loaded.messages.clone();
    let message = Message {
        role: crate::history::Role::User,
        content: load::interrupted_results(&repaired),
    };
    crate::session_files::append(&mut repaired, message, &crate::session_files::NoTranscript);
    Ok(Replayed {
        before_last_turn: loaded.last_turn().map(|turn| turn.history_before),
        resumable: crate::history::check_history(&repaired),
        messages: loaded.messages,
        turns: loaded.turns,
        edits: loaded.edits.len(),
    })
}
