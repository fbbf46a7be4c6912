//! `grep`: a regex search over the workspace with ripgrep's own crates —
//! `ignore` walks in parallel and skips what `.gitignore` ignores,
//! `grep-regex` matches, `grep-searcher` reads and skips binary files.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::{WalkBuilder, WalkState, overrides::OverrideBuilder};
use schemars::JsonSchema;
use serde::Deserialize;

use super::buffers::only_in_buffers;
use super::output::MAX_OUTPUT_CHARS;
use super::visibility::HiddenFiles;
use super::{Tool, ToolContext, ToolError, read_action};
use crate::permission::Action;
use crate::sync::Locked;
use crate::text::truncate_chars;
use crate::workspace::{Buffers, PathResolver};

pub struct Grep;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OutputMode {
    /// Matching lines, as `path:line:text`.
    Content,
    /// Paths of files with a match (the default).
    #[default]
    FilesWithMatches,
    /// Matching lines per file, as `path:count`.
    Count,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// Regular expression (Rust regex syntax, like ripgrep).
    pub pattern: String,
    /// File or directory to search, relative to the workspace root. Default: the root.
    #[serde(default)]
    pub path: Option<String>,
    /// Only files matching this glob, e.g. `*.rs` or `src/**/*.ts`.
    #[serde(default)]
    pub glob: Option<String>,
    /// `files_with_matches` (default), `content` or `count`.
    #[serde(default)]
    pub output_mode: Option<OutputMode>,
    /// Lines of context around each match (content mode).
    #[serde(default)]
    pub context: Option<usize>,
    #[serde(default)]
    pub case_insensitive: bool,
    /// Most entries (paths, lines or counts) to return. Default 200 (300 lines for content).
    #[serde(default)]
    pub head_limit: Option<usize>,
}

#[async_trait]
impl Tool for Grep {
    type Input = Input;
    const NAME: &'static str = "grep";
    const DESCRIPTION: &'static str = "Search file contents with a regex (ripgrep's engine), skipping .gitignored, hidden and binary \
        files. Returns matching paths (default), matching lines with line numbers (`output_mode: content`, optional \
        `context`), or counts per file; capped by `head_limit`.";

    fn action(&self, input: &Input, paths: &PathResolver) -> Result<Action, ToolError> {
        let detail = format!("/{}/", input.pattern);
        read_action(Self::NAME, input.path.as_deref(), detail, paths)
    }

    async fn run(&self, input: Input, cx: &ToolContext<'_, '_>) -> Result<String, ToolError> {
        let paths = cx.workspace().paths();
        let path = paths.resolve(input.path.as_deref().unwrap_or("."))?;
        let hidden = HiddenFiles::new(cx.gate, Self::NAME, paths.root(), &path);
        let query = GrepQuery {
            path,
            root: paths.root().to_path_buf(),
            mode: input.output_mode.unwrap_or_default(),
            head_limit: input.head_limit,
            context: input.context.unwrap_or(0).min(20),
            case_insensitive: input.case_insensitive,
            glob: input.glob,
            pattern: input.pattern,
            hidden: Some(Arc::new(hidden)),
            buffers: Arc::new(cx.workspace().buffers()),
        };
        tokio::task::spawn_blocking(move || search(&query))
            .await
            .map_err(|error| ToolError::failed(format!("grep failed: {error}")))?
            .map_err(|error| ToolError::failed(error.to_string()))
    }
}

/// One search, independent of the tool plumbing (the benchmark calls it too).
#[derive(Clone, Debug)]
pub struct GrepQuery {
    pub pattern: String,
    /// File or directory to search.
    pub path: PathBuf,
    /// Paths in the answer are shown relative to this.
    pub root: PathBuf,
    pub glob: Option<String>,
    pub mode: OutputMode,
    pub context: usize,
    pub case_insensitive: bool,
    pub head_limit: Option<usize>,
    /// The read policy: files it hides are not searched.
    pub hidden: Option<Arc<HiddenFiles>>,
    /// Texts searched in place of the disk (the editor's buffers).
    pub buffers: Arc<Buffers>,
}

/// What one file gave.
pub struct FileResult {
    pub path: PathBuf,
    /// Matching lines.
    pub count: u64,
    /// Matching and context lines kept for `content` mode.
    pub lines: Vec<String>,
}

/// Why a search could not start; each names what was wrong.
#[derive(Debug, thiserror::Error)]
pub enum GrepError {
    #[error("invalid regex `{pattern}`: {source}")]
    Regex {
        pattern: String,
        source: grep_regex::Error,
    },
    #[error("invalid glob `{glob}`: {source}")]
    Glob { glob: String, source: ignore::Error },
    #[error("cannot open `{}`: {source}", root.display())]
    Root { root: PathBuf, source: io::Error },
}

/// Runs the search and renders the answer the model sees.
pub fn search(query: &GrepQuery) -> Result<String, GrepError> {
    let limit = query.head_limit.unwrap_or(match query.mode {
        OutputMode::Content => 300,
        _ => 200,
    });
    let results = search_files(query, limit)?;
    let mut answer = render(&results, query, limit);
    if let Some(note) = query.hidden.as_ref().and_then(|h| h.note()) {
        answer.push('\n');
        answer.push_str(&note);
    }
    Ok(answer)
}

/// Runs the search: every file with a match, sorted by path, with at most
/// `limit` lines kept per file.
pub fn search_files(query: &GrepQuery, limit: usize) -> Result<Vec<FileResult>, GrepError> {
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(query.case_insensitive)
        // Promising that a match never spans lines lets the searcher scan
        // whole buffers for candidates instead of going line by line (what rg does).
        .line_terminator(Some(b'\n'))
        .build(&query.pattern)
        .map_err(|source| GrepError::Regex {
            pattern: query.pattern.clone(),
            source,
        })?;
    let mut walk = WalkBuilder::new(&query.path);
    walk.hidden(true).require_git(false).threads(0);
    let overrides = match &query.glob {
        Some(glob) => {
            let invalid = |source| GrepError::Glob {
                glob: glob.clone(),
                source,
            };
            let mut overrides = OverrideBuilder::new(&query.path);
            overrides.add(glob).map_err(invalid)?;
            let overrides = overrides.build().map_err(invalid)?;
            walk.overrides(overrides.clone());
            Some(overrides)
        }
        None => None,
    };
    // Every file is opened through the resolver, never by the walk's name:
    // a directory swapped for a link to outside is walked, perhaps, but
    // nothing is read through it.
    let resolver = PathResolver::new(&query.root).map_err(|source| GrepError::Root {
        root: query.root.clone(),
        source,
    })?;
    let results: Mutex<Vec<FileResult>> = Mutex::default();
    let mut searcher = SearcherBuilder::new();
    searcher
        .binary_detection(BinaryDetection::quit(b'\x00'))
        .line_number(true)
        .before_context(query.context)
        .after_context(query.context);
    walk.build_parallel().run(|| {
        let matcher = matcher.clone();
        let mut searcher = searcher.build();
        let results = &results;
        let resolver = &resolver;
        Box::new(move |entry| {
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            if query.hidden.as_ref().is_some_and(|h| h.hides(entry.path())) {
                return WalkState::Continue;
            }
            let mut sink = FileSink::new(query.mode, limit);
            if let Some(text) = query.buffers.get(entry.path()) {
                // The editor's text, unsaved changes included, as read_file shows it.
                if searcher
                    .search_slice(&matcher, text.as_bytes(), &mut sink)
                    .is_ok()
                {
                    keep(results, entry.path(), sink);
                }
                return WalkState::Continue;
            }
            let file = match entry
                .path()
                .strip_prefix(&query.root)
                .map_err(|_| "outside the root".to_string())
                .and_then(|relative| resolver.open_file(relative).map_err(|e| e.to_string()))
            {
                Ok(file) => file,
                Err(error) => {
                    tracing::debug!(path = %entry.path().display(), %error, "grep skipped a file");
                    return WalkState::Continue;
                }
            };
            if searcher.search_file(&matcher, &file, &mut sink).is_ok() {
                keep(results, entry.path(), sink);
            }
            WalkState::Continue
        })
    });
    let mut searcher = searcher.build();
    let in_buffers = only_in_buffers(&query.buffers, &query.path, false);
    for (path, text) in in_buffers {
        let excluded = overrides
            .as_ref()
            .is_some_and(|o| o.matched(path, false).is_ignore());
        if excluded || query.hidden.as_ref().is_some_and(|h| h.hides(path)) {
            continue;
        }
        let mut sink = FileSink::new(query.mode, limit);
        if searcher
            .search_slice(&matcher, text.as_bytes(), &mut sink)
            .is_ok()
        {
            keep(&results, path, sink);
        }
    }
    let mut results = results.into_inner().unwrap_or_else(|p| p.into_inner());
    results.sort_unstable_by(|a, b| a.path.cmp(&b.path));
    Ok(results)
}

/// Adds a file's matches to the results, if it had any.
fn keep(results: &Mutex<Vec<FileResult>>, path: &Path, sink: FileSink) {
    if sink.count > 0 {
        let result = FileResult {
            path: path.to_path_buf(),
            count: sink.count,
            lines: sink.lines,
        };
        results.locked().push(result);
    }
}

fn render(results: &[FileResult], query: &GrepQuery, limit: usize) -> String {
    if results.is_empty() {
        return format!("No matches for `{}`.", query.pattern);
    }
    let shown =
        |path: &Path| crate::workspace::escaped(path.strip_prefix(&query.root).unwrap_or(path));
    let mut out = String::new();
    let mut entries = 0;
    let mut left_out = 0;
    let mut shown_matches = 0u64;
    for result in results {
        match query.mode {
            OutputMode::FilesWithMatches | OutputMode::Count if entries >= limit => left_out += 1,
            OutputMode::FilesWithMatches => {
                out.push_str(&shown(&result.path));
                out.push('\n');
                entries += 1;
            }
            OutputMode::Count => {
                out.push_str(&format!("{}:{}\n", shown(&result.path), result.count));
                entries += 1;
            }
            OutputMode::Content => {
                let name = shown(&result.path);
                for line in &result.lines {
                    if entries >= limit {
                        left_out += 1;
                        continue;
                    }
                    if line == "--" {
                        out.push_str("--\n");
                    } else {
                        shown_matches += u64::from(line.starts_with(':'));
                        out.push_str(&name);
                        out.push_str(line);
                        out.push('\n');
                    }
                    entries += 1;
                }
            }
        }
    }
    if query.mode == OutputMode::Content {
        let total: u64 = results.iter().map(|r| r.count).sum();
        left_out = total.saturating_sub(shown_matches) as usize;
    }
    let unit = match query.mode {
        OutputMode::Content => "matching lines",
        _ => "files",
    };
    if truncate_chars(&mut out, MAX_OUTPUT_CHARS) {
        out.push_str("\n(Output cut at 30000 characters; narrow the search.)");
    } else if left_out > 0 {
        out.push_str(&format!(
            "({left_out} more {unit} left out; narrow the search or raise head_limit.)"
        ));
    }
    out
}

/// Collects one file's matches: stops at the first for `files_with_matches`,
/// counts for `count`, keeps lines (and context) for `content`.
struct FileSink {
    mode: OutputMode,
    limit: usize,
    count: u64,
    lines: Vec<String>,
}

/// Long lines are cut in content mode: minified files would flood the answer.
const MAX_LINE_CHARS: usize = 300;

impl FileSink {
    fn new(mode: OutputMode, limit: usize) -> Self {
        FileSink {
            mode,
            limit,
            count: 0,
            lines: Vec::new(),
        }
    }

    fn keep(&mut self, line_number: Option<u64>, separator: char, bytes: &[u8]) {
        if self.lines.len() >= self.limit {
            return;
        }
        let mut text = String::from_utf8_lossy(bytes)
            .trim_end_matches(['\n', '\r'])
            .to_string();
        if truncate_chars(&mut text, MAX_LINE_CHARS) {
            text.push_str(" …");
        }
        self.lines.push(format!(
            "{separator}{}{separator}{text}",
            line_number.unwrap_or(0)
        ));
    }
}

impl Sink for FileSink {
    type Error = io::Error;

    fn matched(&mut self, _searcher: &Searcher, found: &SinkMatch<'_>) -> Result<bool, io::Error> {
        self.count += 1;
        match self.mode {
            OutputMode::FilesWithMatches => Ok(false),
            OutputMode::Count => Ok(true),
            OutputMode::Content => {
                self.keep(found.line_number(), ':', found.bytes());
                Ok(true)
            }
        }
    }

    fn context(
        &mut self,
        _searcher: &Searcher,
        context: &SinkContext<'_>,
    ) -> Result<bool, io::Error> {
        self.keep(context.line_number(), '-', context.bytes());
        Ok(true)
    }

    fn context_break(&mut self, _searcher: &Searcher) -> Result<bool, io::Error> {
        if self.lines.len() < self.limit {
            self.lines.push("--".into());
        }
        Ok(true)
    }
}
