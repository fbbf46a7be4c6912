//! One line of a session file: a JSON object with a `type`. The first line
//! is the [`Header`]; then, in the order they happened, messages (each as
//! appended to the history), usage, compactions, edits and turn ends.
//!
//! Version 1. A reader refuses a file whose header has a newer version, and
//! any line it cannot read (but a torn last one: see `load.rs`).

use serde::{Deserialize, Serialize};

use crate::history::{Message, Usage};

/// The record format's version, in every header.
pub const VERSION: u32 = 2;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Record {
    Header(Header),
    /// Appended to the history: an assistant message is pushed, user
    /// content joins a trailing user message.
    Message {
        message: Message,
    },
    /// One model call's tokens.
    Usage {
        usage: Usage,
        /// USD, at the price of the call's model; absent: unknown.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost_usd: Option<f64>,
    },
    Compaction(CompactionRecord),
    Edit(EditRecord),
    /// A turn ended (the file was synced to disk after it).
    TurnEnd,
    /// The last turn was rewound: its edits undone (where they could be)
    /// and the turn dropped from the history.
    Rewind(RewindRecord),
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Header {
    pub version: u32,
    pub id: String,
    /// UTC, RFC 3339.
    pub created: String,
    /// The workspace root, as the agent saw it.
    pub workspace: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_prompt: Option<String>,
    /// Random; the user's own record of the session carries it too (see
    /// `vouch.rs`): what tells the user's session from a planted one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

/// The history was compacted. `messages` is the whole history after it, so
/// a reader need not know how it was made; the token counts are the
/// estimate before and after, for the user.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompactionRecord {
    pub before_tokens: u64,
    pub after_tokens: u64,
    pub messages: Vec<Message>,
}

/// A file the agent changed, workspace-relative, with its text before
/// (`None`: created) and after: what a rewind restores, and how it sees
/// that the user changed the file since (its text is no longer `after`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EditRecord {
    pub path: String,
    pub before: Option<String>,
    /// The file was binary before: its bytes were not kept, so a rewind
    /// cannot restore it (and says so).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub binary: bool,
    pub after: String,
}

/// A rewind: `messages` is the whole history after it (as for a
/// compaction, a reader need not know how it was made). It also ends the
/// turn it rewound: that turn's edits are no longer the last turn's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RewindRecord {
    /// Files put back as they were before the turn.
    pub restored: Vec<String>,
    /// Files left as they are, with why.
    pub refused: Vec<Refused>,
    pub messages: Vec<Message>,
}

/// A file a rewind left as it is, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Refused {
    pub path: String,
    pub reason: String,
}

/// A new session id: the UTC time to the millisecond, then four random
/// characters — ids sort by time, and two sessions started in one
/// millisecond still differ.
pub fn new_id() -> String {
    let now = std::time::SystemTime::now();
    let (date, time) = utc_parts(now);
    let millis = now
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_millis());
    let suffix: String = (0..4)
        .map(|_| {
            let n = fastrand::u8(0..36);
            char::from_digit(u32::from(n), 36).unwrap_or('x')
        })
        .collect();
    format!(
        "{:04}{:02}{:02}T{:02}{:02}{:02}{millis:03}-{suffix}",
        date.0, date.1, date.2, time.0, time.1, time.2
    )
}

/// Now, as `2026-12-01T14:30:00Z`.
pub fn now_rfc3339() -> String {
    rfc3339(std::time::SystemTime::now())
}

/// `at`, as `2026-12-01T14:30:00Z`.
pub fn rfc3339(at: std::time::SystemTime) -> String {
    let (date, time) = utc_parts(at);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        date.0, date.1, date.2, time.0, time.1, time.2
    )
}

type Date = (i64, u32, u32);
type Time = (u64, u64, u64);

/// The civil UTC date and time of `at` (Howard Hinnant's days-to-date).
fn utc_parts(at: std::time::SystemTime) -> (Date, Time) {
    let seconds = at
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rest) = ((seconds / 86_400) as i64, seconds % 86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (
        (year, month, day),
        (rest / 3600, rest % 3600 / 60, rest % 60),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_civil_utc() {
        let at = |s: u64| std::time::UNIX_EPOCH + std::time::Duration::from_secs(s);
        assert_eq!(utc_parts(at(0)), ((1970, 1, 1), (0, 0, 0)));
        // 2000-02-29 (a leap day) 12:34:56, and 2026-12-01 14:30:00.
        assert_eq!(utc_parts(at(951_827_696)), ((2000, 2, 29), (12, 34, 56)));
        assert_eq!(utc_parts(at(1_796_135_400)), ((2026, 12, 1), (14, 30, 0)));
        let id = new_id();
        assert_eq!(id.len(), "20261201T143000123-abcd".len(), "{id}");
        assert_eq!(&id[8..9], "T");
    }
}
