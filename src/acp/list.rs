//! `session/list`: the sessions stored in a workspace — the ones
//! `bareagent sessions` lists, from the same store — last used first, each
//! with its workspace, its first prompt as the title and when it was last
//! written, a page at a time.
//!
//! The cursor is the place of the last session sent, in the list's own
//! order (when it was last written, then its id): the next page is what
//! comes after it, so a session written between two pages moves to the top
//! rather than pushing another one onto the next page twice.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use agent_client_protocol::v1::schema::{ListSessionsRequest, ListSessionsResponse, SessionInfo};
use agent_client_protocol::{Error, ErrorCode};

use crate::sessions::{self, SessionSummary};
use crate::workspace::PathResolver;

/// Sessions a page holds.
pub const PAGE: usize = 20;

/// Characters of the first prompt a title keeps.
const TITLE: usize = 100;

/// The place of a session in the list: when it was last written, its id.
type Place = (Option<SystemTime>, String);

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
    let all = sessions::list(&paths).map_err(|e| invalid(e.to_string()))?;
    let (page, more) = page(all, after.as_ref());
    let next = more.then(|| page.last().map(|s| cursor(&(s.updated, s.id.clone()))));
    let infos = page
        .into_iter()
        .map(|summary| info(paths.root(), summary))
        .collect();
    Ok(ListSessionsResponse::new(infos).next_cursor(next.flatten()))
}

/// The page after `after` (from the top without it), and whether more
/// follow. `all` is in the list's order: the last written first.
fn page(all: Vec<SessionSummary>, after: Option<&Place>) -> (Vec<SessionSummary>, bool) {
    let mut rest: Vec<SessionSummary> = all
        .into_iter()
        .filter(|s| after.is_none_or(|after| (s.updated, s.id.clone()) < *after))
        .collect();
    let more = rest.len() > PAGE;
    rest.truncate(PAGE);
    (rest, more)
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
    info.updated_at = summary.updated.map(sessions::rfc3339);
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
            let since = Duration::new(seconds.parse().ok()?, nanos.parse().ok()?);
            Some(UNIX_EPOCH.checked_add(since)?)
        }
    };
    Some((updated, id.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(id: &str, updated: Option<u64>) -> SessionSummary {
        SessionSummary {
            id: id.to_string(),
            date: String::new(),
            first_prompt: None,
            turns: 0,
            messages: 0,
            tokens: 0,
            cost_usd: None,
            size: 0,
            updated: updated.map(|s| UNIX_EPOCH + Duration::new(s, 5)),
        }
    }

    /// Pages follow one another without a gap or a repeat, including across
    /// equal times (the id decides) and files without a time (last); a
    /// cursor reads back as the place it was made from.
    #[test]
    fn pages_cover_the_list_once_in_its_order() {
        let mut all: Vec<SessionSummary> = (0..PAGE * 2 + 3)
            .map(|n| summary(&format!("s{n:03}"), Some(1000 - (n as u64) / 3)))
            .collect();
        all.push(summary("z-untimed", None));
        all.push(summary("a-untimed", None));
        // As `sessions::list` orders them: the last written first.
        all.sort_by(|a, b| (b.updated, &b.id).cmp(&(a.updated, &a.id)));
        let mut seen = Vec::new();
        let mut after: Option<Place> = None;
        loop {
            let (page, more) = page(all.clone(), after.as_ref());
            assert!(page.len() <= PAGE);
            seen.extend(page.iter().map(|s| s.id.clone()));
            if !more {
                break;
            }
            let last = page.last().expect("a full page");
            let text = cursor(&(last.updated, last.id.clone()));
            after = Some(parse(&text).expect("a cursor parses"));
            assert_eq!(after, Some((last.updated, last.id.clone())), "{text}");
        }
        let want: Vec<String> = all.iter().map(|s| s.id.clone()).collect();
        assert_eq!(seen, want);
        for bad in ["", "x", "1/", "a.b/c", "1.2.3/x"] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }
}
