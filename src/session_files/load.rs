//! Reading session files back: the history a session had, repaired where a
//! kill left it unfinished, and the list `bareagent sessions` shows.
//!
//! What a reader accepts, failing closed: a file the user's own record
//! vouches for (`vouch.rs`), whose first line is a header of the version it
//! knows, every whole line tagged by the user's key in its order and as
//! many as were last synced (`chain.rs`: the list alone skips this), each a
//! record it reads, and the history they make passing `check_history` once
//! repaired. The one exception is the last line when the file does not end
//! with a newline: a write cut by a crash. It is ignored (with a log line)
//! and cut off when the session is appended to again. Anything else is an
//! error naming the file and the line: a history that is guessed at could
//! send the model something nobody wrote.

use std::io::Read;
use std::path::PathBuf;

use super::Transcript;
use super::chain::{Broken, Chain, Checkpoint, SessionKey};
use super::file::SessionFile;
use super::record::{Header, Record, VERSION};
use crate::history::{ContentBlock, Message, Role, Usage, check_history};
use crate::workspace::{PathResolver, WorkspaceError};

/// The text every unanswered tool call of a killed session gets.
pub const INTERRUPTED: &str = "Interrupted: bareagent stopped before this tool call finished (it may have run in part); check its effects before relying on them";

#[derive(Debug, thiserror::Error)]
pub enum SessionFileError {
    #[error("no session `{0}` in this workspace (see `bareagent sessions`)")]
    NotFound(String),
    #[error("`{0}` is not a session id (they look like 20261201T143000123-ab12)")]
    BadId(String),
    #[error("{path}, line {line}: {reason}; the session is not loaded (the file is kept as it is)")]
    Corrupt {
        path: String,
        line: usize,
        reason: String,
    },
    #[error(
        "{path}: written by a newer bareagent (format version {version}, this one reads {VERSION})"
    )]
    NewerVersion { path: String, version: u32 },
    #[error(
        "{path}: written by an older bareagent, without the integrity chain this one checks, so it is not resumed (the file is kept as it is); start a new session instead (`bareagent sessions rm {id}` removes this one)"
    )]
    Unchained { path: String, id: String },
    #[error(
        "{path}, line {line}: {reason}: bareagent did not write the file as it is (a record was added, changed, removed or moved), so the session is not loaded (the file is kept as it is); start a new session instead"
    )]
    Tampered {
        path: String,
        line: usize,
        reason: String,
    },
    #[error("cannot check session files: {0}")]
    Key(String),
    #[error("{path}: its history is not valid ({reason}); the session is not loaded")]
    InvalidHistory { path: String, reason: String },
    #[error(
        "{path} was not written by bareagent for you in this workspace (it is readable by others, not yours, or not in your own record of sessions: it may have come with the repository); it is neither resumed nor rewound"
    )]
    NotOurs { path: String },
    #[error(
        "{path} is yours but readable by others (mode {mode:o}), so it is not taken as written by bareagent for you: it is neither resumed nor rewound; if you changed its mode, `chmod 600 {path}` makes it resumable again"
    )]
    OpenToOthers { path: String, mode: u32 },
    #[error("session `{0}` is in use by another bareagent (an editor, or a run): end it first")]
    InUse(String),
    #[error("nothing to rewind: the session has no turn yet")]
    NothingToRewind,
    #[error("no session to rewind in this workspace")]
    NoSession,
    #[error("nothing was rewound ({0}); the turn is kept, so you can try again")]
    RewindFailed(String),
    #[error(transparent)]
    Workspace(#[from] WorkspaceError),
}

/// `.bareagent/sessions` in the workspace.
pub fn sessions_dir(paths: &PathResolver) -> PathBuf {
    paths.root().join(".bareagent").join("sessions")
}

/// A session read back.
#[derive(Debug)]
pub struct Loaded {
    pub header: Header,
    /// The history, repaired: what the model is sent next.
    pub messages: Vec<Message>,
    pub usage: Usage,
    /// What the calls cost, in USD; `None` when one's price was unknown.
    pub cost_usd: Option<f64>,
    /// Turns that ended (a turn cut by a kill is not counted).
    pub turns: usize,
    pub edits: Vec<super::EditRecord>,
    /// Where each turn still in the history began (for a rewind).
    pub(super) marks: Vec<TurnMark>,
    /// The histories compactions replaced, oldest first, where a turn
    /// still to be rewound began in one of them.
    compacted: Vec<Vec<Message>>,
    /// Tool calls a kill left unanswered, given an interrupted result.
    pub repaired: usize,
    pub size: u64,
    /// Where the last whole line ends.
    valid_len: u64,
    /// The chain after the last whole line: where appending goes on.
    pub(super) chain: Chain,
}

/// Where a turn began in the replayed history.
#[derive(Clone, Copy, Debug)]
pub(super) struct TurnMark {
    /// The history's length and its last message's block count just before
    /// the turn's first message (user content may join a trailing user
    /// message).
    pub(super) history: (usize, usize),
    /// Which history `history` counts in: the current one (`None`), or the
    /// one a later compaction replaced (an index into `Loaded::compacted`).
    pub(super) compacted: Option<usize>,
    /// How many edits came before the turn.
    pub(super) edits: usize,
    /// The model answered in it (an unanswered prompt belongs with the
    /// turn before it when rewinding).
    pub(super) answered: bool,
    pub(super) ended: bool,
}

/// The last turn of a replayed history, as a rewind undoes it.
pub struct LastTurn<'a> {
    /// The history just before it, exactly.
    pub history_before: Vec<Message>,
    /// A compaction came after the turn began: `history_before` is from
    /// before it, so rewinding the turn undoes that compaction too.
    pub before_a_compaction: bool,
    pub edits: &'a [super::EditRecord],
}

impl Loaded {
    /// Which marks the last turn spans: from the last answered one (an
    /// unanswered prompt after it goes with it).
    fn last_turn_start(&self) -> Option<usize> {
        let last = self.marks.len().checked_sub(1)?;
        Some(
            (0..=last)
                .rev()
                .find(|&i| self.marks[i].answered)
                .unwrap_or(last),
        )
    }

    /// The last turn (an unanswered prompt after it included).
    pub fn last_turn(&self) -> Option<LastTurn<'_>> {
        let start = self.last_turn_start()?;
        let mark = self.marks[start];
        let history = match mark.compacted {
            Some(index) => self.compacted.get(index)?,
            None => &self.messages,
        };
        let (len, blocks) = mark.history;
        let mut history_before = history[..len.min(history.len())].to_vec();
        if let Some(last) = history_before.last_mut() {
            last.content.truncate(blocks);
        }
        Some(LastTurn {
            history_before,
            before_a_compaction: mark.compacted.is_some(),
            edits: &self.edits[mark.edits.min(self.edits.len())..],
        })
    }

    /// A rewind record, replayed: the last turn is gone.
    fn rewound(&mut self, messages: Vec<Message>) {
        if let Some(start) = self.last_turn_start() {
            let ended = self.marks[start..].iter().filter(|m| m.ended).count();
            self.turns = self.turns.saturating_sub(ended);
            self.edits.truncate(self.marks[start].edits);
            self.marks.truncate(start);
        }
        self.messages = messages;
    }
}

/// What `bareagent sessions` and `bareagent.resume` list.
#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionSummary {
    pub id: String,
    pub date: String,
    pub first_prompt: Option<String>,
    pub turns: usize,
    pub messages: usize,
    pub tokens: u64,
    /// USD; `None`: some call's price is unknown.
    pub cost_usd: Option<f64>,
    pub size: u64,
    /// When the file was last written: the session last used.
    #[serde(skip)]
    pub updated: Option<std::time::SystemTime>,
}

fn check_id(id: &str) -> Result<(), SessionFileError> {
    let plain = !id.is_empty()
        && id.len() <= 64
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if plain {
        Ok(())
    } else {
        Err(SessionFileError::BadId(id.to_string()))
    }
}

fn file_of(paths: &PathResolver, id: &str) -> PathBuf {
    sessions_dir(paths).join(format!("{id}.jsonl"))
}

/// Reads session `id`, repairs its tail, and opens it to append to.
///
/// Only a file bareagent wrote for this user is resumed: one owned by the
/// user and readable by nobody else (it creates them 0600). A session file
/// that came with a repository (git checks files out 0644) would put its
/// history in front of the model as if it were the user's own.
pub fn load(paths: &PathResolver, id: &str) -> Result<(Loaded, SessionFile), SessionFileError> {
    let loaded = read(paths, id, true)?;
    let file = SessionFile::reopen(paths, id, loaded.valid_len, loaded.chain.clone())?;
    let mut loaded = loaded;
    let repair = interrupted_results(&loaded.messages);
    if !repair.is_empty() {
        loaded.repaired = repair.len();
        // Written, so the file alone gives the history the model is sent.
        super::append(
            &mut loaded.messages,
            Message {
                role: Role::User,
                content: repair,
            },
            &file,
        );
    }
    // A turn a kill cut short ended there: what comes next is a turn of
    // its own (a rewind undoes one, not both).
    if loaded.marks.last().is_some_and(|mark| !mark.ended) {
        file.record(super::Entry::TurnEnd);
        if let Some(mark) = loaded.marks.last_mut() {
            mark.ended = true;
        }
        loaded.turns += 1;
    }
    check_history(&loaded.messages).map_err(|reason| SessionFileError::InvalidHistory {
        path: paths.display(&file_of(paths, id)),
        reason,
    })?;
    Ok((loaded, file))
}

/// Reads session `id` as it is, if bareagent wrote it for this user here
/// (see [`load`]), without opening it to append: what a rewind acts on.
pub fn read_own(paths: &PathResolver, id: &str) -> Result<Loaded, SessionFileError> {
    read(paths, id, true)
}

/// The results a history's unanswered last tool calls need: an assistant
/// message asking for tools is the last one when a kill struck before its
/// results were written. Nothing for any other history.
pub fn interrupted_results(messages: &[Message]) -> Vec<ContentBlock> {
    match messages.last() {
        Some(last) if last.role == Role::Assistant => last
            .tool_calls()
            .map(|call| ContentBlock::tool_result(call.id, INTERRUPTED, true))
            .collect(),
        _ => Vec::new(),
    }
}

/// Reads and replays a session file, without repairing it. Whose file it
/// is comes first (`own`: only the user's own is read at all), then
/// whether every line is one the user's bareagent wrote.
fn read(paths: &PathResolver, id: &str, own: bool) -> Result<Loaded, SessionFileError> {
    check_id(id)?;
    let path = file_of(paths, id);
    let shown = paths.display(&path);
    let mut bytes = Vec::new();
    let mut file = paths.open_file(&path).map_err(|error| match error {
        WorkspaceError::NotFound(_) => SessionFileError::NotFound(id.to_string()),
        other => other.into(),
    })?;
    let io = |e: std::io::Error| WorkspaceError::Io {
        path: shown.clone(),
        message: e.to_string(),
    };
    // The descriptor's own metadata: what was opened is what is judged.
    let meta = file.metadata().map_err(io)?;
    file.read_to_end(&mut bytes).map_err(io)?;
    let token = first_line_token(&bytes);
    let (owner_only, open_to_others) = {
        use std::os::unix::fs::MetadataExt;
        // SAFETY: geteuid has no preconditions.
        let yours = meta.uid() == unsafe { libc::geteuid() }
            && super::vouch::vouched(id, token.as_deref(), paths.root());
        (
            yours && meta.mode() & 0o077 == 0,
            yours.then_some(meta.mode() & 0o777),
        )
    };
    if own && !owner_only {
        // Only a file the user's own record vouches for is told how to
        // make it theirs again: a planted one is not theirs to chmod.
        return Err(match open_to_others {
            Some(mode) => SessionFileError::OpenToOthers { path: shown, mode },
            None => SessionFileError::NotOurs { path: shown },
        });
    }
    // The list shows what a file says (escaped where shown); what is
    // resumed or rewound is checked line by line.
    let check = if own {
        let key = SessionKey::load_or_create().map_err(SessionFileError::Key)?;
        let end = super::vouch::recorded_end(id)
            .map_err(SessionFileError::Key)?
            .map(|(text, path)| {
                Checkpoint::from_text(&text).ok_or_else(|| {
                    SessionFileError::Key(format!(
                        "{}: not a record of where the session ended",
                        path.display()
                    ))
                })
            })
            .transpose()?;
        Some((key, end))
    } else {
        None
    };
    let loaded = replay(&shown, &bytes, check).map_err(|error| match error {
        SessionFileError::Unchained { path, .. } => SessionFileError::Unchained {
            path,
            id: id.to_string(),
        },
        other => other,
    })?;
    if loaded.header.id != id {
        return Err(SessionFileError::Tampered {
            path: shown,
            line: 1,
            reason: format!("its header is session `{}`'s", loaded.header.id),
        });
    }
    Ok(loaded)
}

/// The token of the header, if the first line is one.
fn first_line_token(bytes: &[u8]) -> Option<String> {
    let first = bytes.split(|&b| b == b'\n').next()?;
    let value: serde_json::Value = serde_json::from_slice(first).ok()?;
    Some(value.get("token")?.as_str()?.to_string())
}

/// The records of a file's bytes, replayed into a history. With `check`,
/// each is checked against the chain of its key, and the file against
/// where its writer last synced it; without, the tags are not looked at
/// (the list).
pub(crate) fn replay(
    shown: &str,
    bytes: &[u8],
    check: Option<(SessionKey, Option<Checkpoint>)>,
) -> Result<Loaded, SessionFileError> {
    let tampered = |line: usize, reason: String| SessionFileError::Tampered {
        path: shown.to_string(),
        line,
        reason,
    };
    let verifying = check.is_some();
    let (key, end) = check.unwrap_or_else(|| (SessionKey::ephemeral(), None));
    let mut chain = Chain::new(key);
    let corrupt = |line: usize, reason: String| SessionFileError::Corrupt {
        path: shown.to_string(),
        line,
        reason,
    };
    let valid_len = bytes
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |at| at + 1);
    if valid_len < bytes.len() {
        tracing::warn!(
            file = shown,
            bytes = bytes.len() - valid_len,
            "ignoring the torn last line of a session file (a write cut by a crash)"
        );
    }
    let mut header = None;
    // The next message starts a turn.
    let mut turn_starts = true;
    let mut loaded = Loaded {
        header: Header {
            version: VERSION,
            id: String::new(),
            created: String::new(),
            workspace: String::new(),
            first_prompt: None,
            token: None,
        },
        messages: Vec::new(),
        usage: Usage::default(),
        cost_usd: Some(0.0),
        turns: 0,
        edits: Vec::new(),
        marks: Vec::new(),
        compacted: Vec::new(),
        repaired: 0,
        size: bytes.len() as u64,
        valid_len: valid_len as u64,
        chain: chain.clone(),
    };
    let whole = bytes[..valid_len].strip_suffix(b"\n").unwrap_or_default();
    let whole_lines = (valid_len > 0).then(|| whole.split(|&b| b == b'\n'));
    for (index, line) in whole_lines.into_iter().flatten().enumerate() {
        let number = index + 1;
        if header.is_none() {
            // The header alone first: a newer version is said as such, not
            // as a record this reader does not know.
            let value: serde_json::Value = serde_json::from_slice(line)
                .map_err(|e| corrupt(number, format!("not JSON: {e}")))?;
            let version = value.get("version").and_then(serde_json::Value::as_u64);
            if value.get("type").and_then(serde_json::Value::as_str) != Some("header") {
                return Err(corrupt(number, "the first record is not a header".into()));
            }
            if let Some(version) = version.filter(|v| *v > u64::from(VERSION)) {
                return Err(SessionFileError::NewerVersion {
                    path: shown.to_string(),
                    version: u32::try_from(version).unwrap_or(u32::MAX),
                });
            }
            if verifying && version.is_none_or(|v| v < u64::from(VERSION)) {
                return Err(SessionFileError::Unchained {
                    path: shown.to_string(),
                    id: String::new(),
                });
            }
        }
        if verifying {
            chain.verify(line).map_err(|broken| {
                tampered(
                    number,
                    match broken {
                        Broken::Untagged => "a line without its integrity tag".into(),
                        Broken::Mismatch => "its integrity tag does not match".into(),
                    },
                )
            })?;
        }
        if let Some(end) = end.filter(|end| end.lines == number as u64)
            && chain.checkpoint() != end
        {
            return Err(tampered(
                number,
                "not the line bareagent last synced there".into(),
            ));
        }
        let record: Record = serde_json::from_slice(line)
            .map_err(|e| corrupt(number, format!("not a record: {e}")))?;
        match record {
            Record::Header(found) if header.is_none() => header = Some(found),
            Record::Header(_) => return Err(corrupt(number, "a second header".into())),
            Record::Message { message } => {
                if std::mem::take(&mut turn_starts) {
                    loaded.marks.push(TurnMark {
                        history: (
                            loaded.messages.len(),
                            loaded.messages.last().map_or(0, |m| m.content.len()),
                        ),
                        compacted: None,
                        edits: loaded.edits.len(),
                        answered: false,
                        ended: false,
                    });
                }
                if let Some(mark) = loaded.marks.last_mut() {
                    mark.answered |= message.role == Role::Assistant;
                }
                super::join(&mut loaded.messages, message);
            }
            Record::Usage { usage, cost_usd } => {
                loaded.usage += usage;
                loaded.cost_usd = loaded.cost_usd.zip(cost_usd).map(|(a, b)| a + b);
            }
            Record::Compaction(compaction) => {
                // Turns that began before it keep the history it replaced,
                // so each can still be rewound exactly.
                let replaced = std::mem::replace(&mut loaded.messages, compaction.messages);
                let index = loaded.compacted.len();
                let mut kept = false;
                for mark in loaded.marks.iter_mut().filter(|m| m.compacted.is_none()) {
                    mark.compacted = Some(index);
                    kept = true;
                }
                if kept {
                    loaded.compacted.push(replaced);
                }
            }
            Record::Edit(edit) => {
                if let Some(mark) = loaded.marks.last_mut() {
                    mark.answered = true;
                }
                loaded.edits.push(edit);
            }
            Record::TurnEnd => {
                loaded.turns += 1;
                if let Some(mark) = loaded.marks.last_mut() {
                    mark.ended = true;
                }
                turn_starts = true;
            }
            Record::Rewind(rewind) => {
                loaded.rewound(rewind.messages);
                turn_starts = true;
            }
        }
    }
    loaded.header = header.ok_or_else(|| corrupt(1, "the file has no header".into()))?;
    if let Some(end) = end.filter(|end| chain.checkpoint().lines < end.lines) {
        return Err(tampered(
            usize::try_from(chain.checkpoint().lines + 1).unwrap_or(usize::MAX),
            format!(
                "the file ends here, but bareagent had written {} lines",
                end.lines
            ),
        ));
    }
    loaded.chain = chain;
    Ok(loaded)
}

/// Where a session stands in the list: when its file was last written,
/// then its id (ordered so, the last used first is the greatest).
pub type Place = (Option<std::time::SystemTime>, String);

/// The ids of this workspace's session files with when each was last
/// written, the last written first (then the newest id): `--continue` goes
/// on with the conversation last used, even one started before another.
fn ids(paths: &PathResolver) -> Result<Vec<Place>, SessionFileError> {
    let mut ids: Vec<Place> = paths
        .file_names(&sessions_dir(paths))?
        .into_iter()
        .filter_map(|name| name.strip_suffix(".jsonl").map(str::to_string))
        .filter(|id| check_id(id).is_ok())
        .map(|id| (paths.file_modified(&file_of(paths, &id)), id))
        .collect();
    ids.sort_unstable_by(|a, b| b.cmp(a));
    Ok(ids)
}

/// The sessions of this workspace, last used first. A file that cannot be
/// read is left out of the list, and logged.
pub fn list(paths: &PathResolver) -> Result<Vec<SessionSummary>, SessionFileError> {
    Ok(list_after(paths, None, usize::MAX)?.0)
}

/// At most `count` sessions of the list that come after `after` (from the
/// top without it), and whether more follow: a page, for which only the
/// files on it are read.
pub fn list_after(
    paths: &PathResolver,
    after: Option<&Place>,
    count: usize,
) -> Result<(Vec<SessionSummary>, bool), SessionFileError> {
    let mut places = ids(paths)?
        .into_iter()
        .filter(|place| after.is_none_or(|after| place < after));
    let mut summaries = Vec::new();
    for (updated, id) in places.by_ref() {
        match read(paths, &id, false) {
            Ok(loaded) => summaries.push(SessionSummary {
                date: loaded.header.created.clone(),
                first_prompt: loaded.header.first_prompt.clone(),
                turns: loaded.turns,
                messages: loaded.messages.len(),
                tokens: loaded.usage.input_tokens
                    + loaded.usage.output_tokens
                    + loaded.usage.cache_creation_input_tokens
                    + loaded.usage.cache_read_input_tokens,
                cost_usd: loaded.cost_usd,
                size: loaded.size,
                updated,
                id,
            }),
            Err(error) => tracing::warn!(session = %id, %error, "cannot read a session file"),
        }
        if summaries.len() == count {
            break;
        }
    }
    Ok((summaries, places.next().is_some()))
}

/// The session of this workspace last written — readable or not: a
/// damaged last session is an error when loaded, never silently passed
/// over for an older one.
pub fn latest(paths: &PathResolver) -> Result<Option<String>, SessionFileError> {
    Ok(ids(paths)?.into_iter().next().map(|(_, id)| id))
}

/// Deletes session `id`, and the user's record of it.
pub fn remove(paths: &PathResolver, id: &str) -> Result<(), SessionFileError> {
    check_id(id)?;
    paths
        .remove_file(&file_of(paths, id))
        .map_err(|error| match error {
            WorkspaceError::NotFound(_) => SessionFileError::NotFound(id.to_string()),
            other => other.into(),
        })?;
    super::vouch::forget(id);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> SessionKey {
        SessionKey::from_bytes(&[3; 32])
    }

    /// The records as bareagent writes them: each line chained.
    fn lines(records: &[&str]) -> Vec<u8> {
        let mut chain = Chain::new(key());
        let mut bytes = Vec::new();
        for record in records {
            let (line, next) = chain.seal(record.as_bytes());
            bytes.extend_from_slice(&line);
            chain = next;
        }
        bytes
    }

    fn replay(shown: &str, bytes: &[u8]) -> Result<Loaded, SessionFileError> {
        super::replay(shown, bytes, Some((key(), None)))
    }

    const HEADER: &str = r#"{"type":"header","version":2,"id":"x","created":"c","workspace":"/w"}"#;
    const PROMPT: &str =
        r#"{"type":"message","message":{"role":"user","content":[{"type":"text","text":"hi"}]}}"#;
    const CALL: &str = r#"{"type":"message","message":{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"bash","input":{}}]}}"#;

    /// (file, what loading says): only a torn last line is forgiven.
    #[test]
    fn a_bad_line_fails_the_load_but_a_torn_last_one() {
        let torn = {
            let mut bytes = lines(&[HEADER, PROMPT]);
            bytes.extend_from_slice(br#"{"type":"message","message":{"role":"assi"#);
            bytes
        };
        let cases: Vec<(Vec<u8>, Result<usize, &str>)> = vec![
            (lines(&[HEADER, PROMPT]), Ok(1)),
            (torn, Ok(1)),
            (
                lines(&[HEADER, "{not json", PROMPT]),
                Err("line 2: not a record"),
            ),
            (
                lines(&[HEADER, r#"{"type":"mystery"}"#]),
                Err("line 2: not a record"),
            ),
            (
                lines(&[PROMPT]),
                Err("line 1: the first record is not a header"),
            ),
            (lines(&[HEADER, HEADER]), Err("line 2: a second header")),
            (
                lines(&[
                    r#"{"type":"header","version":9,"id":"x","created":"c","workspace":"/w"}"#,
                ]),
                Err("newer bareagent"),
            ),
            (Vec::new(), Err("no header")),
        ];
        for (bytes, expected) in cases {
            let got = replay("s.jsonl", &bytes).map(|l| l.messages.len());
            match (&got, expected) {
                (Ok(n), Ok(m)) => assert_eq!(*n, m),
                (Err(error), Err(text)) => {
                    assert!(error.to_string().contains(text), "{error} ∌ {text}")
                }
                _ => panic!("{got:?} for {:?}", String::from_utf8_lossy(&bytes)),
            }
        }
    }

    /// (file, where its writer last synced it, what loading says): only
    /// lines the key chained, in their order, all of them up to the last
    /// sync, are loaded; a torn last line is still forgiven.
    #[test]
    fn a_line_the_agent_did_not_write_fails_the_load() {
        let whole = lines(&[HEADER, PROMPT, ANSWER, END]);
        let at = |n: u64| {
            let mut chain = Chain::new(key());
            for line in whole.split(|&b| b == b'\n').take(n as usize) {
                chain.verify(line).unwrap();
            }
            Some(chain.checkpoint())
        };
        let text = String::from_utf8(whole.clone()).unwrap();
        let kept: Vec<&str> = text.lines().collect();
        let join = |l: &[&str]| l.iter().map(|l| format!("{l}\n")).collect::<String>();
        let forged = format!(
            "{text}{}\n",
            r#"{"type":"message","message":{"role":"user","content":[{"type":"text","text":"forged"}]}}"#
        );
        let torn = format!("{text}{{\"mac\":\"00");
        let cases: Vec<(String, Option<Checkpoint>, Result<usize, &str>)> = vec![
            (text.clone(), at(4), Ok(2)),
            (torn, at(4), Ok(2)),
            (
                forged,
                at(4),
                Err("line 5: a line without its integrity tag"),
            ),
            (
                join(&[kept[0], kept[2], kept[1], kept[3]]),
                None,
                Err("line 2: its integrity tag does not match"),
            ),
            (
                join(&[kept[0], kept[2], kept[3]]),
                None,
                Err("line 2: its integrity tag does not match"),
            ),
            (
                text.replace("\"ok\"", "\"OK\""),
                None,
                Err("line 3: its integrity tag does not match"),
            ),
            (
                join(&kept[..2]),
                at(4),
                Err("line 3: the file ends here, but bareagent had written 4 lines"),
            ),
            (
                String::from_utf8(lines(&[HEADER.replace(":2,", ":1,").as_str(), PROMPT])).unwrap(),
                None,
                Err("without the integrity chain"),
            ),
        ];
        for (file, end, expected) in cases {
            let got = super::replay("s.jsonl", file.as_bytes(), Some((key(), end)))
                .map(|l| l.messages.len());
            match (&got, expected) {
                (Ok(n), Ok(m)) => assert_eq!(*n, m),
                (Err(error), Err(text)) => {
                    assert!(error.to_string().contains(text), "{error} ∌ {text}")
                }
                _ => panic!("{got:?} for {file}"),
            }
        }
        let other = super::replay(
            "s.jsonl",
            &whole,
            Some((SessionKey::from_bytes(&[4; 32]), None)),
        );
        assert!(
            other.is_err_and(|e| e.to_string().contains("line 1: its integrity tag")),
            "another user's key"
        );
    }

    #[test]
    fn a_call_left_without_a_result_gets_an_interrupted_one() {
        let loaded = replay("s.jsonl", &lines(&[HEADER, PROMPT, CALL])).unwrap();
        assert!(check_history(&loaded.messages).is_err());
        let mut messages = loaded.messages;
        let repair = interrupted_results(&messages);
        assert_eq!(repair.len(), 1);
        crate::history::push_user_blocks(&mut messages, repair);
        assert_eq!(check_history(&messages), Ok(()));
    }

    const ANSWER: &str = r#"{"type":"message","message":{"role":"assistant","content":[{"type":"text","text":"ok"}]}}"#;
    const RESULT: &str = r#"{"type":"message","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"cut","is_error":true}]}}"#;
    const NEXT: &str =
        r#"{"type":"message","message":{"role":"user","content":[{"type":"text","text":"next"}]}}"#;
    const EDIT: &str = r#"{"type":"edit","path":"a","before":"1","after":"2"}"#;
    const END: &str = r#"{"type":"turn_end"}"#;

    /// (records, the history before the last turn as its shape, how many
    /// of the edits are the last turn's)
    #[test]
    fn the_last_turn_is_found_whatever_came_before_it() {
        let compaction = r#"{"type":"compaction","before_tokens":9,"after_tokens":1,"messages":[{"role":"user","content":[{"type":"text","text":"summary"}]}]}"#;
        let rewind = r#"{"type":"rewind","restored":[],"refused":[],"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]},{"role":"assistant","content":[{"type":"text","text":"ok"}]}]}"#;
        let cases: Vec<(Vec<&str>, (&str, bool), usize)> = vec![
            // One turn: before it, nothing.
            (vec![HEADER, PROMPT, ANSWER, EDIT, END], ("", false), 1),
            // Two: the first stays, with its edit.
            (
                vec![
                    HEADER, PROMPT, EDIT, ANSWER, END, NEXT, EDIT, EDIT, ANSWER, END,
                ],
                ("user:1 assistant:1", false),
                2,
            ),
            // A cancelled turn ended on tool results; the next prompt joined
            // them: before it, the results alone.
            (
                vec![HEADER, PROMPT, CALL, RESULT, END, NEXT, ANSWER, END],
                ("user:1 assistant:1 user:1", false),
                0,
            ),
            // A prompt nobody answered goes with the turn before it.
            (
                vec![
                    HEADER, PROMPT, ANSWER, END, NEXT, ANSWER, EDIT, END, PROMPT, END,
                ],
                ("user:1 assistant:1", false),
                1,
            ),
            // Compacted between turns (the editor's idle compaction): exact.
            (
                vec![HEADER, PROMPT, ANSWER, END, compaction, NEXT, ANSWER, END],
                ("user:1", false),
                0,
            ),
            // Prompts queued during a cancelled turn, then the user's own:
            // one turn, both joining the results it ended on.
            (
                vec![HEADER, PROMPT, CALL, RESULT, END, NEXT, NEXT, ANSWER, END],
                ("user:1 assistant:1 user:1", false),
                0,
            ),
            // Compacted during the turn: the history it replaced has the
            // turn's start.
            (
                vec![HEADER, PROMPT, ANSWER, END, NEXT, compaction, ANSWER, END],
                ("user:1 assistant:1", true),
                0,
            ),
            // Compacted after the turns (`/compact`): each can still be
            // rewound exactly, from the history the compaction replaced.
            (
                vec![
                    HEADER, PROMPT, ANSWER, END, NEXT, ANSWER, EDIT, END, compaction,
                ],
                ("user:1 assistant:1", true),
                1,
            ),
            (
                vec![
                    HEADER, PROMPT, ANSWER, EDIT, END, NEXT, ANSWER, END, compaction, rewind,
                ],
                ("", true),
                1,
            ),
            // Rewound once: the turn before is the last now.
            (
                vec![
                    HEADER, PROMPT, ANSWER, EDIT, END, NEXT, EDIT, ANSWER, END, rewind,
                ],
                ("", false),
                1,
            ),
        ];
        for (records, before, edits) in cases {
            let loaded = replay("s.jsonl", &lines(&records)).unwrap();
            let turn = loaded.last_turn().unwrap();
            let shape = turn
                .history_before
                .iter()
                .map(|m| {
                    format!(
                        "{}:{}",
                        if m.role == Role::User {
                            "user"
                        } else {
                            "assistant"
                        },
                        m.content.len()
                    )
                })
                .collect::<Vec<_>>()
                .join(" ");
            assert_eq!(
                (shape.as_str(), turn.before_a_compaction),
                before,
                "{records:?}"
            );
            if !turn.history_before.is_empty() {
                assert_eq!(check_history(&turn.history_before), Ok(()), "{records:?}");
            }
            assert_eq!(turn.edits.len(), edits, "{records:?}");
        }
        let once = replay(
            "s.jsonl",
            &lines(&[
                HEADER,
                PROMPT,
                ANSWER,
                END,
                r#"{"type":"rewind","restored":[],"refused":[],"messages":[]}"#,
            ]),
        )
        .unwrap();
        assert_eq!((once.turns, once.messages.len()), (0, 0));
        assert!(once.last_turn().is_none(), "nothing left to rewind");
    }
}
