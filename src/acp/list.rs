//! `session/list`: the sessions stored in a workspace — the ones
//! `bareagent sessions` lists, from the same store — last used first, each
//! with its workspace, its first prompt as the title and when it was last
//! written, a page at a time.
//!
//! The cursor is the place of the last session sent, in the list's own
//! order (when it was last written, then its id): the next page is what
//! comes after it, so a session written between two pages moves to the top
//! rather than pushing another one onto the next page twice. Only the
//! files on a page are read.

use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use agent_client_protocol::v1::schema::{ListSessionsRequest, ListSessionsResponse, SessionInfo};
use agent_client_protocol::{Error, ErrorCode};

use crate::session_files::{self, Place, SessionSummary};
use crate::workspace::PathResolver;

/// Sessions a page holds.
pub const PAGE: usize = 20;

/// Characters of the first prompt a title keeps.
const TITLE: usize = 100;

/// Answers `session/list` for the workspace `cwd` names, else the one the
/// agent was started in.
pub fn list(request: &ListSessionsRequest) -> Result<ListSessionsResponse, Error> {
    let invalid = |message: String| Error::new(ErrorCode::INVALID_PARAMS, message);
    let root = match &request.cwd {
        Some(cwd) if !cwd.is_absolute() => {
            return Err(invalid(format!(
                "cwd `{}` is relative: session/list needs the workspace's absolute path",
                cwd.display()
            )));
        }
        Some(cwd) => cwd.clone(),
        None => std::env::current_dir()
            .map_err(|e| invalid(format!("no cwd given, and the agent's own is gone: {e}")))?,
    };
    let after = match request.cursor.as_deref() {
        Some(cursor) => Some(parse(cursor).ok_or_else(|| {
            invalid(format!(
                "`{cursor}` is not a cursor this agent gave (start again without one)"
            ))
        })?),
        None => None,
    };
    // A directory that is not there holds no sessions.
    if !root.is_dir() {
        return Ok(ListSessionsResponse::new(Vec::new()));
    }
    let paths = PathResolver::new(&root)
        .map_err(|e| invalid(format!("cannot open the workspace {}: {e}", root.display())))?;
    let (page, more) = session_files::list_after(&paths, after.as_ref(), PAGE)
        .map_err(|e| invalid(e.to_string()))?;
    let next = more.then(|| page.last().map(|s| cursor(&(s.updated, s.id.clone()))));
    let infos = page
        .into_iter()
        .map(|summary| info(paths.root(), summary))
        .collect();
    Ok(ListSessionsResponse::new(infos).next_cursor(next.flatten()))
}

fn info(root: &Path, summary: SessionSummary) -> SessionInfo {
    let title = summary
        .first_prompt
        .as_deref()
        .and_then(|prompt| prompt.lines().next())
        .map(|line| crate::text::prefix(line.trim(), TITLE).to_string())
        .filter(|line| !line.is_empty());
    let mut info = SessionInfo::new(summary.id, PathBuf::from(root));
    info.title = title;
    info.updated_at = summary.updated.map(session_files::rfc3339);
    info
}

/// A place as a cursor: `SECONDS.NANOS/ID`, or `-/ID` for a file whose
/// time could not be read.
fn cursor((updated, id): &Place) -> String {
    match updated.and_then(|at| at.duration_since(UNIX_EPOCH).ok()) {
        Some(since) => format!("{}.{:09}/{id}", since.as_secs(), since.subsec_nanos()),
        None => format!("-/{id}"),
    }
}

fn parse(cursor: &str) -> Option<Place> {
    let (time, id) = cursor.split_once('/')?;
    if id.is_empty() {
        return None;
    }
    let updated = match time {
        "-" => None,
        time => {
            let (seconds, nanos) = time.split_once('.')?;
            // Nine digits, as `cursor` writes them (`Duration::new` would
            // carry more into the seconds, and panic past their range).
            let nanos: u32 = nanos.parse().ok().filter(|_| nanos.len() == 9)?;
            let since = Duration::new(seconds.parse().ok()?, nanos);
            Some(UNIX_EPOCH.checked_add(since)?)
        }
    };
    Some((updated, id.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cursor reads back as the place it was made from, a file without a
    /// time too; anything else is no cursor.
    #[test]
    fn a_cursor_reads_back_as_its_place() {
        let places: [Place; 3] = [
            (
                Some(UNIX_EPOCH + Duration::new(1_764_000_000, 5)),
                "20261201T143000123-ab12".into(),
            ),
            (Some(UNIX_EPOCH), "a".into()),
            (None, "z".into()),
        ];
        for place in places {
            let text = cursor(&place);
            assert_eq!(parse(&text), Some(place), "{text}");
        }
        for bad in [
            "",
            "x",
            "1/",
            "-/",
            "a.b/c",
            "1.2.3/x",
            "1.5000000000/x",
            "18446744073709551615.1000000000/x",
            "1.1500000000/x",
            "1.5/x",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }
}
