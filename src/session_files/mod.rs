//! Sessions on disk: each conversation is an append-only JSON-lines file,
//! `.bareagent/sessions/ID.jsonl` (`record.rs` says what a line holds),
//! written as it happens (`file.rs`), each line tagged with the user's key
//! in a chain (`chain.rs`), and read back, checked, repaired, listed and
//! removed (`load.rs`).
//!
//! The loop does not know files: it reports what it appends to the history
//! to a [`Transcript`], which a front end backs with a [`SessionFile`] (or
//! nothing). The history is rebuilt from the records by the same rule the
//! loop appends by ([`append`]), so what is loaded is what the model saw.
//!
//! What it must not do: follow a link (every open goes through the
//! workspace's resolver), or hand back a history `check_history` refuses.

pub(crate) mod chain;
mod file;
pub(crate) mod load;
mod record;
mod vouch;

pub use chain::sign_records;
pub use file::SessionFile;
pub use load::{
    LastTurn, Loaded, Place, SessionFileError, SessionSummary, interrupted_results, latest, list,
    list_after, load, read_own, remove, sessions_dir,
};
pub use record::{
    CompactionRecord, EditRecord, Header, Record, Refused, RewindRecord, VERSION, new_id,
    now_rfc3339, rfc3339,
};

use crate::history::{Message, Role, Usage, push_user_blocks};

/// What happened to a conversation, as it happens. `record` cannot fail:
/// a transcript that cannot write says so in the log, never in the turn.
pub trait Transcript: Send + Sync {
    /// One event of the conversation.
    fn record(&self, entry: Entry<'_>);
}

/// One thing a [`Transcript`] is told.
#[derive(Clone, Copy, Debug)]
pub enum Entry<'a> {
    /// A message appended to the history (by [`append`]'s rule).
    Message(&'a Message),
    /// The usage of one model call, and its cost (`None`: the model's
    /// price is unknown).
    Usage { usage: Usage, cost_usd: Option<f64> },
    /// The history was compacted: `messages` is the whole history after.
    Compaction {
        before_tokens: u64,
        after_tokens: u64,
        messages: &'a [Message],
    },
    /// A file the agent changed (workspace-relative): what it held before,
    /// and its text after. What a rewind restores.
    Edit {
        path: &'a str,
        before: crate::diff::Before<'a>,
        after: &'a str,
    },
    /// A turn ended (whatever its outcome): the file is synced to disk.
    TurnEnd,
    /// The last turn was rewound (see `crate::rewind`); synced.
    Rewind(&'a RewindRecord),
}

/// A transcript that keeps nothing (sub-agents, tests, the default).
pub struct NoTranscript;

impl Transcript for NoTranscript {
    fn record(&self, _entry: Entry<'_>) {}
}

/// Appends `message` to the history and tells `transcript`. The one rule,
/// for the loop and for loading: an assistant message is pushed; user
/// content joins a trailing user message (see `push_user_blocks`).
pub fn append(messages: &mut Vec<Message>, message: Message, transcript: &dyn Transcript) {
    if message.content.is_empty() {
        return;
    }
    transcript.record(Entry::Message(&message));
    join(messages, message);
}

/// [`append`] without telling anyone: replaying a record.
fn join(messages: &mut Vec<Message>, message: Message) {
    match message.role {
        Role::Assistant => messages.push(message),
        Role::User => push_user_blocks(messages, message.content),
    }
}
