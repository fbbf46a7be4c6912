//! Writing a session file: one record a line, each written with one
//! `write(2)` as it happens (so a crash loses at most the record being
//! written), synced to disk at turn ends. The file is made at the first
//! record, so a session that never said anything leaves nothing behind.
//!
//! Every open goes through the workspace's resolver: a `.bareagent` or
//! `sessions` planted as a link fails the open; a new file is created
//! exclusively (a link at its name is refused, not written through); an
//! existing one is opened without following a link.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::chain::{Chain, SessionKey};
use super::record::{CompactionRecord, EditRecord, Header, Record, VERSION};
use super::{Entry, SessionFileError, Transcript, sessions_dir};
use crate::diff::Before;
use crate::sync::Locked;
use crate::workspace::{PathResolver, WorkspaceError};

/// One session's file, written as the conversation goes.
pub struct SessionFile {
    id: String,
    path: PathBuf,
    paths: PathResolver,
    state: Mutex<State>,
}

struct State {
    /// `None` until the first record (for a new session).
    file: Option<std::fs::File>,
    /// The header still to write, for a new session.
    header: Option<Header>,
    /// A write failed: said once in the log, then tried again each record.
    failed: bool,
    /// The chain after the last line written (see `chain.rs`).
    chain: Chain,
}

impl SessionFile {
    /// A new session; its file appears with its first record.
    pub fn create(paths: &PathResolver) -> SessionFile {
        let id = super::new_id();
        let header = Header {
            version: VERSION,
            id: id.clone(),
            created: super::now_rfc3339(),
            workspace: paths.root().display().to_string(),
            first_prompt: None,
            token: Some(super::vouch::new_token()),
        };
        let key = SessionKey::load_or_create().unwrap_or_else(|error| {
            tracing::warn!(session = %id, %error, "no session key: the session is saved but cannot be resumed");
            SessionKey::ephemeral()
        });
        SessionFile {
            path: sessions_dir(paths).join(format!("{id}.jsonl")),
            id,
            paths: paths.clone(),
            state: Mutex::new(State {
                file: None,
                header: Some(header),
                failed: false,
                chain: Chain::new(key),
            }),
        }
    }

    /// An existing session, to append to. `valid_len` is where its last
    /// whole line ends (see `load`), `chain` the chain there: a torn tail
    /// is cut off first, so the next record starts a line of its own.
    pub(super) fn reopen(
        paths: &PathResolver,
        id: &str,
        valid_len: u64,
        chain: Chain,
    ) -> Result<SessionFile, SessionFileError> {
        let path = sessions_dir(paths).join(format!("{id}.jsonl"));
        let file = paths.open_append(&path, false)?;
        if lock(&file).is_err() {
            return Err(SessionFileError::InUse(id.to_string()));
        }
        let size = file.metadata().map(|m| m.len()).unwrap_or(valid_len);
        if size > valid_len {
            tracing::warn!(
                session = id,
                cut = size - valid_len,
                "cutting the torn last line off the session file"
            );
            file.set_len(valid_len).map_err(|e| WorkspaceError::Io {
                path: paths.display(&path),
                message: e.to_string(),
            })?;
        }
        Ok(SessionFile {
            id: id.to_string(),
            path,
            paths: paths.clone(),
            state: Mutex::new(State {
                file: Some(file),
                header: None,
                failed: false,
                chain,
            }),
        })
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    /// The workspace-relative path of the file.
    pub fn shown_path(&self) -> String {
        self.paths.display(&self.path)
    }

    fn write(&self, record: &Record, sync: bool) {
        let mut state = self.state.locked();
        if state.file.is_none()
            && let Some(header) = state.header.as_mut()
        {
            header.first_prompt = first_prompt(record);
        }
        let result = self.write_locked(&mut state, record, sync);
        match result {
            Ok(()) => state.failed = false,
            Err(error) if !state.failed => {
                state.failed = true;
                tracing::warn!(session = %self.id, %error, "cannot write the session file; the conversation is not being saved");
            }
            Err(_) => {}
        }
    }

    fn write_locked(&self, state: &mut State, record: &Record, sync: bool) -> Result<(), String> {
        if state.file.is_none() {
            let dir = self
                .paths
                .create_own_dir("sessions")
                .map_err(|e| e.to_string())?;
            // Sessions quote files: they stay out of commits, whatever the
            // user's own `.bareagent/.gitignore` says.
            ignore_everything(&self.paths, &dir.join(".gitignore")).map_err(|e| e.to_string())?;
            let mut file = self
                .paths
                .open_append(&self.path, true)
                .map_err(|e| e.to_string())?;
            lock(&file).map_err(|e| e.to_string())?;
            if let Some(header) = state.header.take() {
                let token = header.token.as_deref().unwrap_or_default();
                if let Err(error) = super::vouch::vouch(&self.id, token, self.paths.root()) {
                    tracing::warn!(session = %self.id, %error, "cannot record the session as yours; it will not be resumed");
                }
                let (line, next) = state.chain.seal(&json(&Record::Header(header))?);
                file.write_all(&line).map_err(|e| e.to_string())?;
                state.chain = next;
            }
            state.file = Some(file);
        }
        let Some(file) = state.file.as_mut() else {
            return Ok(());
        };
        // One write per record: `File` is unbuffered, so this is in the
        // kernel when it returns (a crash of the agent cannot lose it).
        let (line, next) = state.chain.seal(&json(record)?);
        file.write_all(&line).map_err(|e| e.to_string())?;
        state.chain = next;
        if sync {
            file.sync_data().map_err(|e| e.to_string())?;
            // Where the file ends now, in the user's state: records cut off
            // the end later are found missing on load.
            if let Err(error) =
                super::vouch::record_end(&self.id, &state.chain.checkpoint().to_text())
            {
                tracing::warn!(session = %self.id, %error, "cannot record where the session file ends");
            }
        }
        Ok(())
    }
}

/// Makes `path` a `.gitignore` that ignores everything, the cheapest way:
/// a new one is written in place, not synced (one cut short by a crash is
/// replaced at the next session); one that says anything else is replaced
/// atomically; one that already says it is left alone. A sync here was a
/// millisecond before every new session's first model request.
fn ignore_everything(paths: &PathResolver, path: &Path) -> Result<(), WorkspaceError> {
    const EVERYTHING: &[u8] = b"*\n";
    match paths.open_file(path) {
        Ok(file) => {
            let mut held = Vec::new();
            let read = file
                .take(EVERYTHING.len() as u64 + 1)
                .read_to_end(&mut held);
            if read.is_ok() && held == EVERYTHING {
                return Ok(());
            }
        }
        Err(WorkspaceError::NotFound(_)) => {
            // `create_new`: one made meanwhile is not written through, but
            // replaced below like any other.
            if let Ok(mut file) = paths.open_append(path, true)
                && file.write_all(EVERYTHING).is_ok()
            {
                return Ok(());
            }
        }
        // A link, a directory, anything else: replaced, never written through.
        Err(_) => {}
    }
    paths.write_atomically(path, EVERYTHING)
}

/// Holds the file for this process alone, while it is open: two agents
/// appending to one session would interleave two histories (and a rewind
/// or a repair would act on a turn that is still running).
fn lock(file: &std::fs::File) -> std::io::Result<()> {
    rustix::fs::flock(file, rustix::fs::FlockOperation::NonBlockingLockExclusive)
        .map_err(std::io::Error::from)
}

/// A record as JSON (its line is made by the chain).
fn json(record: &Record) -> Result<Vec<u8>, String> {
    serde_json::to_vec(record).map_err(|e| e.to_string())
}

/// The user's text of a message record, for the header.
fn first_prompt(record: &Record) -> Option<String> {
    match record {
        Record::Message { message } if message.role == crate::history::Role::User => {
            let text = message.text();
            (!text.trim().is_empty()).then(|| crate::text::prefix(text.trim(), 200).to_string())
        }
        _ => None,
    }
}

impl Transcript for SessionFile {
    fn record(&self, entry: Entry<'_>) {
        let (record, sync) = match entry {
            Entry::Message(message) => (
                Record::Message {
                    message: message.clone(),
                },
                false,
            ),
            Entry::Usage { usage, cost_usd } => (Record::Usage { usage, cost_usd }, false),
            Entry::Compaction {
                before_tokens,
                after_tokens,
                messages,
            } => (
                Record::Compaction(CompactionRecord {
                    before_tokens,
                    after_tokens,
                    messages: messages.to_vec(),
                }),
                true,
            ),
            Entry::Edit {
                path,
                before,
                after,
            } => (
                Record::Edit(EditRecord {
                    path: path.to_string(),
                    before: match before {
                        Before::Text(text) => Some(text.to_string()),
                        Before::Missing | Before::Binary => None,
                    },
                    binary: before == Before::Binary,
                    after: after.to_string(),
                }),
                false,
            ),
            Entry::TurnEnd => (Record::TurnEnd, true),
            Entry::Rewind(rewind) => (Record::Rewind(rewind.clone()), true),
        };
        // A turn end of a session that never wrote anything makes no file.
        if matches!(record, Record::TurnEnd) && self.state.locked().file.is_none() {
            return;
        }
        self.write(&record, sync);
    }
}
