//! What the editor's own language servers report about files — errors and
//! warnings, with where and why — kept as the editor last sent them, so the
//! agent sees a broken build without being asked to run it.
//!
//! Two ways in: a client that pushes them (`bareagent/diagnostics`, from
//! the VS Code extension and the Neovim plugin) gives a file's complete set
//! each time it changes; any client's code-action requests carry the ones
//! under the cursor, which replace those stored for that range. Only a
//! pushing client is waited for after an edit: the others would never
//! answer, and every edit would pay the wait.
//!
//! Architecture Invariant: no LSP types here; `lsp` converts them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::sync::Locked;
use tokio::sync::watch;

/// How long an edit waits, by default, for the editor's fresh diagnostics.
pub const DEFAULT_SETTLE: Duration = Duration::from_millis(1500);

/// After the first fresh report, how long more reports may follow (a
/// syntax check, then a type check) before the wait ends.
const QUIET: Duration = Duration::from_millis(150);

/// Diagnostics shown in one answer; the rest are counted.
const SHOWN: usize = 10;

/// A message is cut here: some compilers quote whole types.
const MESSAGE_CHARS: usize = 300;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Error,
    Warning,
    Information,
    Hint,
}

impl Severity {
    fn word(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Information => "info",
            Severity::Hint => "hint",
        }
    }
}

/// One diagnostic. Lines and columns count from 1, as the model reads files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: Severity,
    pub line: u32,
    pub column: u32,
    pub end_line: u32,
    pub message: String,
    /// The server that reported it (`ts`, `rust-analyzer`, …).
    pub source: Option<String>,
    pub code: Option<String>,
}

impl Diagnostic {
    /// Errors and warnings: what the model is shown.
    fn matters(&self) -> bool {
        self.severity <= Severity::Warning
    }

    fn describe(&self) -> String {
        let mut origin = String::new();
        if let Some(source) = &self.source {
            origin.push_str(source);
        }
        if let Some(code) = &self.code {
            if !origin.is_empty() {
                origin.push(' ');
            }
            origin.push_str(code);
        }
        let origin = if origin.is_empty() {
            String::new()
        } else {
            format!(" ({origin})")
        };
        let message: String = self
            .message
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        format!(
            "line {}:{} {}{origin}: {}",
            self.line,
            self.column,
            self.severity.word(),
            crate::text::clip(&message, MESSAGE_CHARS)
        )
    }
}

/// A file's errors and warnings as lines for the model: at most [`SHOWN`],
/// the rest counted. Empty when there are none.
pub fn describe(diagnostics: &[Diagnostic]) -> Vec<String> {
    let mut shown: Vec<&Diagnostic> = diagnostics.iter().filter(|d| d.matters()).collect();
    shown.sort_by_key(|d| (d.severity, d.line, d.column));
    let mut lines: Vec<String> = shown.iter().take(SHOWN).map(|d| d.describe()).collect();
    if shown.len() > SHOWN {
        lines.push(format!("… and {} more", shown.len() - SHOWN));
    }
    lines
}

/// Where a file's reports stood: an edit notes it before writing, and
/// waits for a report after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mark(u64);

#[derive(Default)]
struct Reported {
    /// Bumped by each report for the file.
    generation: u64,
    items: Vec<Diagnostic>,
    /// The last word on the file was that no report is coming.
    none_coming: bool,
}

/// The editor's diagnostics, by resolved path.
pub struct EditorDiagnostics {
    files: Mutex<HashMap<PathBuf, Reported>>,
    /// Any report: what a waiting edit wakes on.
    reports: watch::Sender<u64>,
    /// The client pushes every change: an edit can wait for its report.
    pushes: AtomicBool,
    settle: Mutex<Duration>,
    /// The files a report follows every change of, where that is not all
    /// of them (our own servers report only on their languages' files).
    watched: Mutex<Option<Watched>>,
    /// What another source reported (the editor's code actions, beside our
    /// own servers): read for the files this store has no report on.
    fallback: Mutex<Option<std::sync::Arc<EditorDiagnostics>>>,
}

/// Whether a report follows every change of a file.
pub type Watched = std::sync::Arc<dyn Fn(&Path) -> bool + Send + Sync>;

impl Default for EditorDiagnostics {
    fn default() -> Self {
        EditorDiagnostics {
            files: Mutex::default(),
            reports: watch::Sender::new(0),
            pushes: AtomicBool::new(false),
            settle: Mutex::new(DEFAULT_SETTLE),
            watched: Mutex::new(None),
            fallback: Mutex::new(None),
        }
    }
}

impl EditorDiagnostics {
    fn files(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, Reported>> {
        self.files.locked()
    }

    /// The client pushes every change (it said so, or has pushed one).
    pub fn set_pushed(&self) {
        self.pushes.store(true, Ordering::Relaxed);
    }

    /// The client pushes every change (so an edit waits for its report).
    pub fn pushes(&self) -> bool {
        self.pushes.load(Ordering::Relaxed)
    }

    /// The editor has sent diagnostics, or said it will.
    pub fn any(&self) -> bool {
        self.pushes.load(Ordering::Relaxed) || !self.files().is_empty()
    }

    /// Only these files are waited for after an edit (default: all).
    pub fn set_watched(&self, watched: Watched) {
        *self.watched.locked() = Some(watched);
    }

    /// How long an edit waits for a report; zero: never.
    pub fn set_settle(&self, settle: Duration) {
        *self.settle.locked() = settle;
    }

    /// A file's complete set, pushed by the client.
    pub fn replace(&self, path: PathBuf, items: Vec<Diagnostic>) {
        self.set_pushed();
        self.update(path, |reported| reported.items = items);
    }

    /// The diagnostics a code-action request carries for lines
    /// `first..=last`: they replace what was known on those lines. Not a
    /// report an edit waits for: an editor asks for code actions at its
    /// cursor as soon as a buffer changes (VS Code does, with the file
    /// shown), before its language server has checked the change, and
    /// only about the cursor's lines.
    pub fn replace_lines(&self, path: PathBuf, first: u32, last: u32, items: Vec<Diagnostic>) {
        let mut files = self.files();
        let reported = files.entry(path).or_default();
        reported
            .items
            .retain(|d| d.end_line < first || d.line > last);
        reported.items.extend(items);
    }

    /// No report will follow the last change of `path` (the server that
    /// would send it did not start): an edit waiting for one stops waiting,
    /// with nothing to say.
    pub fn none_coming(&self, path: PathBuf) {
        self.update(path, |reported| reported.none_coming = true);
    }

    fn update(&self, path: PathBuf, change: impl FnOnce(&mut Reported)) {
        let mut files = self.files();
        let reported = files.entry(path).or_default();
        reported.none_coming = false;
        change(reported);
        reported.generation += 1;
        drop(files);
        self.reports.send_modify(|n| *n += 1);
    }

    /// Reads `other`'s reports for the files this store has none on (the
    /// first one given stays).
    pub fn fall_back_to(&self, other: std::sync::Arc<EditorDiagnostics>) {
        let mut fallback = self.fallback.locked();
        if fallback.is_none() && !std::ptr::eq(self, other.as_ref()) {
            *fallback = Some(other);
        }
    }

    fn fallback(&self) -> Option<std::sync::Arc<EditorDiagnostics>> {
        self.fallback.locked().clone()
    }

    /// A file's diagnostics, or `None` when the editor never reported on it.
    pub fn of(&self, path: &Path) -> Option<Vec<Diagnostic>> {
        let own = self.files().get(path).map(|r| r.items.clone());
        own.or_else(|| self.fallback()?.of(path))
    }

    /// Every file with errors or warnings, in path order.
    pub fn with_problems(&self) -> Vec<(PathBuf, Vec<Diagnostic>)> {
        let mut found: Vec<(PathBuf, Vec<Diagnostic>)> = self
            .files()
            .iter()
            .filter(|(_, r)| r.items.iter().any(Diagnostic::matters))
            .map(|(path, r)| (path.clone(), r.items.clone()))
            .collect();
        if let Some(fallback) = self.fallback() {
            let reported: Vec<PathBuf> = self.files().keys().cloned().collect();
            found.extend(
                fallback
                    .with_problems()
                    .into_iter()
                    .filter(|(path, _)| !reported.contains(path)),
            );
        }
        found.sort_by(|a, b| a.0.cmp(&b.0));
        found
    }

    /// Where `path`'s reports stand now, if an edit should wait for the
    /// next one (the client pushes, and the wait is not off).
    pub fn mark(&self, path: &Path) -> Option<Mark> {
        if !self.pushes.load(Ordering::Relaxed) || self.settle().is_zero() {
            return None;
        }
        let watched = self.watched.locked().clone();
        if watched.is_some_and(|watched| !watched(path)) {
            return None;
        }
        Some(Mark(self.generation(path)))
    }

    fn settle(&self) -> Duration {
        *self.settle.locked()
    }

    fn generation(&self, path: &Path) -> u64 {
        self.files().get(path).map_or(0, |r| r.generation)
    }

    /// The report on `path` that came after `mark`, waiting up to the
    /// settle time for it (and a moment more for a second report); `None`
    /// if none came.
    pub async fn after(&self, path: &Path, mark: Mark) -> Option<Vec<Diagnostic>> {
        let mut reports = self.reports.subscribe();
        let deadline = tokio::time::Instant::now() + self.settle();
        while self.generation(path) == mark.0 {
            if tokio::time::timeout_at(deadline, reports.changed())
                .await
                .is_err()
            {
                return None;
            }
        }
        if self.files().get(path).is_some_and(|r| r.none_coming) {
            return None;
        }
        // More may follow soon (a syntax check, then a type check): wait
        // until a quiet moment passes with no new report on the file.
        loop {
            let seen = self.generation(path);
            let quiet = (tokio::time::Instant::now() + QUIET).min(deadline);
            let more = loop {
                match tokio::time::timeout_at(quiet, reports.changed()).await {
                    Ok(Ok(())) if self.generation(path) != seen => break true,
                    Ok(Ok(())) => continue,
                    Ok(Err(_)) | Err(_) => break false,
                }
            };
            if !more {
                break;
            }
        }
        self.of(path)
    }
}

/// The line an edit's result gains: what the editor reports now, compared
/// with before. `None` when there is nothing to say (clean before and after).
pub fn after_edit_line(shown: &str, before: &[Diagnostic], now: &[Diagnostic]) -> Option<String> {
    let lines = describe(now);
    if lines.is_empty() {
        return (!describe(before).is_empty())
            .then(|| format!("The editor now reports no errors or warnings in {shown}."));
    }
    Some(format!(
        "The editor now reports in {shown}:\n{}",
        lines
            .iter()
            .map(|line| format!("  {line}"))
            .collect::<Vec<_>>()
            .join("\n")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fallback_is_read_only_where_this_store_has_no_report() {
        let ours = EditorDiagnostics::default();
        let editor = std::sync::Arc::new(EditorDiagnostics::default());
        let (a, b) = (PathBuf::from("/w/a.py"), PathBuf::from("/w/b.ts"));
        ours.replace(a.clone(), vec![]);
        editor.replace_lines(a.clone(), 1, 1, vec![error(1, "stale")]);
        editor.replace_lines(b.clone(), 1, 1, vec![error(1, "theirs")]);
        assert_eq!(ours.of(&b), None);
        ours.fall_back_to(editor.clone());
        // Ours says a.py is clean; the editor's is the only word on b.ts.
        assert_eq!(ours.of(&a), Some(vec![]));
        assert_eq!(ours.of(&b), Some(vec![error(1, "theirs")]));
        let problems: Vec<PathBuf> = ours.with_problems().into_iter().map(|(p, _)| p).collect();
        assert_eq!(problems, [b]);
    }

    fn error(line: u32, message: &str) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            line,
            column: 1,
            end_line: line,
            message: message.into(),
            source: Some("ts".into()),
            code: Some("2304".into()),
        }
    }

    #[test]
    fn what_the_model_is_told_after_an_edit() {
        let hint = Diagnostic {
            severity: Severity::Hint,
            ..error(1, "unused")
        };
        let cases: [(&[Diagnostic], &[Diagnostic], Option<&str>); 4] = [
            (&[], &[], None),
            (&[], std::slice::from_ref(&hint), None),
            (
                &[],
                &[error(3, "Cannot find\n  name 'x'.")],
                Some(
                    "The editor now reports in a.ts:\n  line 3:1 error (ts 2304): Cannot find name 'x'.",
                ),
            ),
            (
                &[error(3, "x")],
                std::slice::from_ref(&hint),
                Some("The editor now reports no errors or warnings in a.ts."),
            ),
        ];
        for (before, now, expected) in cases {
            assert_eq!(
                after_edit_line("a.ts", before, now).as_deref(),
                expected,
                "{before:?} → {now:?}"
            );
        }
    }

    #[test]
    fn many_are_counted_not_listed() {
        let many: Vec<Diagnostic> = (1..=13).map(|n| error(n, "bad")).collect();
        let lines = describe(&many);
        assert_eq!(lines.len(), SHOWN + 1);
        assert_eq!(lines.last().unwrap(), "… and 3 more");
    }

    #[test]
    fn code_action_diagnostics_replace_only_their_lines() {
        let store = EditorDiagnostics::default();
        let path = PathBuf::from("/w/a.ts");
        store.replace_lines(path.clone(), 1, 10, vec![error(2, "a"), error(8, "b")]);
        store.replace_lines(path.clone(), 8, 8, vec![error(8, "c")]);
        let messages: Vec<String> = store
            .of(&path)
            .unwrap()
            .into_iter()
            .map(|d| d.message)
            .collect();
        assert_eq!(messages, ["a", "c"]);
        // Code actions alone are not a reason to wait after edits.
        assert_eq!(store.mark(&path), None);
    }

    #[tokio::test(start_paused = true)]
    async fn an_edit_waits_for_the_next_report_and_no_longer_than_the_settle_time() {
        let store = std::sync::Arc::new(EditorDiagnostics::default());
        let path = PathBuf::from("/w/a.ts");
        store.replace(path.clone(), vec![]);
        let mark = store.mark(&path).expect("the client pushes");
        // No report: the wait ends at the settle time with nothing.
        assert_eq!(store.after(&path, mark).await, None);
        // A report, then a second one close behind: the second is what counts.
        let pushing = store.clone();
        let pushed = path.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            pushing.replace(pushed.clone(), vec![error(1, "syntax")]);
            tokio::time::sleep(Duration::from_millis(100)).await;
            pushing.replace(pushed, vec![error(1, "syntax"), error(2, "type")]);
        });
        let now = store.after(&path, mark).await.expect("a report came");
        assert_eq!(now.len(), 2, "{now:?}");
        // Told no report is coming: the wait ends at once, with nothing.
        let mark = store.mark(&path).expect("the client pushes");
        let telling = store.clone();
        let told = path.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            telling.none_coming(told);
        });
        let waited = tokio::time::Instant::now();
        assert_eq!(store.after(&path, mark).await, None);
        assert_eq!(waited.elapsed(), Duration::from_millis(200));
        // A wait of zero turns it off.
        store.set_settle(Duration::ZERO);
        assert_eq!(store.mark(&path), None);
    }

    #[test]
    fn only_watched_files_are_waited_for() {
        let store = EditorDiagnostics::default();
        store.set_pushed();
        store.set_watched(std::sync::Arc::new(|path: &Path| {
            path.extension().is_some_and(|e| e == "py")
        }));
        assert!(store.mark(Path::new("/w/a.py")).is_some());
        assert_eq!(store.mark(Path::new("/w/notes.md")), None);
    }
}
