//! `@path` mentions and image paths in a chat prompt: Tab completes a
//! mention from the workspace's files (as `.gitignore` leaves them), and
//! the prompt sent carries each file mentioned — its text, or the image —
//! and each image whose path was typed or pasted, as an image block.
//!
//! What is attached goes through the permission rules as a read by the
//! user would: a file a deny rule covers is refused with the rule, and the
//! prompt is not sent. A mention must be inside the workspace; a path of an
//! image may be anywhere (a screenshot the user names), but one inside the
//! workspace is still refused where a deny rule covers it.

use std::path::{Path, PathBuf};

use base64::Engine;
use reedline::{Completer, Span, Suggestion};

use crate::history::{ContentBlock, Image, Message, Role};
use crate::permission::{ActionKind, PermissionGate};
use crate::workspace::{PathResolver, Workspace};

/// Suggestions Tab offers at most.
const MAX_SUGGESTIONS: usize = 50;
/// Files walked at most for them (a huge tree is cut, not stalled on).
const MAX_WALKED: usize = 20_000;

/// The image types both APIs take, by file extension.
const IMAGE_TYPES: [(&str, &str); 5] = [
    ("png", "image/png"),
    ("jpg", "image/jpeg"),
    ("jpeg", "image/jpeg"),
    ("gif", "image/gif"),
    ("webp", "image/webp"),
];

/// Tab's completer: the `@word` before the cursor, completed to the paths
/// under the root that start with it (or whose file name does).
pub struct Mentions {
    root: PathBuf,
}

impl Mentions {
    pub fn new(root: PathBuf) -> Mentions {
        Mentions { root }
    }
}

impl Completer for Mentions {
    fn complete(&mut self, line: &str, pos: usize) -> Vec<Suggestion> {
        let before = line.get(..pos).unwrap_or(line);
        let start = before
            .rfind(char::is_whitespace)
            .map_or(0, |space| space + 1);
        let Some(typed) = before[start..].strip_prefix('@') else {
            return Vec::new();
        };
        files_matching(&self.root, typed)
            .into_iter()
            .map(|path| Suggestion {
                value: format!("@{path}"),
                span: Span::new(start, pos),
                append_whitespace: true,
                ..Suggestion::default()
            })
            .collect()
    }
}

/// The workspace's files (relative, `/`-separated) that start with
/// `typed`, or whose name does; hidden and ignored ones left out.
fn files_matching(root: &Path, typed: &str) -> Vec<String> {
    let walk = ignore::WalkBuilder::new(root).require_git(false).build();
    let mut found: Vec<String> = walk
        .flatten()
        .take(MAX_WALKED)
        .filter(|entry| entry.file_type().is_some_and(|kind| kind.is_file()))
        .filter_map(|entry| {
            let relative = entry.path().strip_prefix(root).ok()?.to_str()?.to_string();
            let name = entry.file_name().to_str()?;
            (relative.starts_with(typed) || name.starts_with(typed)).then_some(relative)
        })
        .collect();
    found.sort();
    found.truncate(MAX_SUGGESTIONS);
    found
}

/// The user message for `typed`: its text as typed, then a block for each
/// file mentioned (`@path`) and each image path; or why it cannot be sent.
pub async fn prompt_message(
    typed: &str,
    workspace: &dyn Workspace,
    gate: &PermissionGate,
) -> Result<Message, String> {
    let paths = workspace.paths();
    let mut content = vec![ContentBlock::Text {
        text: typed.to_string(),
    }];
    let mut attached: Vec<PathBuf> = Vec::new();
    for word in words(typed) {
        let (named, mentioned) = match word.strip_prefix('@') {
            Some(path) => (path, true),
            None => (word.as_str(), false),
        };
        // Punctuation after the path is the sentence's.
        let named = named.trim_end_matches([',', '.', ':', ';', '?', '!', ')']);
        let image_type = image_type(named);
        if named.is_empty() || (!mentioned && image_type.is_none()) {
            continue;
        }
        let Some(path) = located(paths, named, mentioned)? else {
            continue;
        };
        if attached.contains(&path) {
            continue;
        }
        if paths.resolve(&path.to_string_lossy()).is_ok() {
            check_read(gate, paths, &path, named)?;
        }
        let block = match image_type {
            Some(media_type) => image(paths, &path, media_type, named)?,
            None => {
                let file = workspace
                    .read_text(&path)
                    .await
                    .map_err(|error| format!("@{named}: {error}"))?;
                ContentBlock::Text {
                    text: format!(
                        "<file path=\"{}\" attached-by=\"user\">\n{}\n</file>",
                        paths.display(&path),
                        // Scrubbed of the keys, as a read_file result is.
                        crate::secrets::Secrets::global().scrub(&file.text)
                    ),
                }
            }
        };
        attached.push(path);
        content.push(block);
    }
    Ok(Message {
        role: Role::User,
        content,
    })
}

/// The words of `typed` as a shell splits them, roughly: a `\ ` (an
/// escaped space) and a space inside quotes kept in the word, the quotes
/// dropped (terminals paste a dropped file's path either way).
fn words(typed: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut chars = typed.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quote) {
            ('\\', None) if chars.peek() == Some(&' ') => {
                word.push(' ');
                chars.next();
            }
            ('\'' | '"', None) if word.is_empty() => quote = Some(c),
            (c, Some(open)) if c == open => quote = None,
            (c, None) if c.is_whitespace() => words.push(std::mem::take(&mut word)),
            (c, _) => word.push(c),
        }
    }
    words.push(word);
    words.retain(|word| !word.is_empty());
    words
}

/// The media type of an image file, by its extension.
fn image_type(name: &str) -> Option<&'static str> {
    let extension = Path::new(name).extension()?.to_str()?.to_ascii_lowercase();
    IMAGE_TYPES
        .iter()
        .find(|(known, _)| *known == extension)
        .map(|(_, media_type)| *media_type)
}

/// Where `named` is: a mention inside the workspace (else the reason); an
/// image path anywhere, `~/` for the home directory. `None`: no such file
/// (the word was not a path after all).
fn located(paths: &PathResolver, named: &str, mentioned: bool) -> Result<Option<PathBuf>, String> {
    if mentioned {
        let path = paths
            .resolve(named)
            .map_err(|error| format!("@{named}: {error}"))?;
        return Ok(path.is_file().then_some(path));
    }
    let path = match named.strip_prefix("~/") {
        Some(rest) => match std::env::var_os("HOME") {
            Some(home) => PathBuf::from(home).join(rest),
            None => return Ok(None),
        },
        None => paths.root().join(named),
    };
    Ok(path.is_file().then_some(path))
}

/// A deny rule on reading `path` refuses the prompt, naming the rule.
fn check_read(
    gate: &PermissionGate,
    paths: &PathResolver,
    path: &Path,
    named: &str,
) -> Result<(), String> {
    let action = crate::tools::file_action(
        "read_file",
        ActionKind::Read,
        &path.to_string_lossy(),
        None,
        paths,
    )
    .map_err(|error| format!("{named}: {error}"))?;
    match gate.denied_by_rule(&action) {
        Some(denied) => Err(format!("{named} is not attached: {denied}")),
        None => Ok(()),
    }
}

/// The image at `path` as an image block, if the APIs take it.
fn image(
    paths: &PathResolver,
    path: &Path,
    media_type: &str,
    named: &str,
) -> Result<ContentBlock, String> {
    use std::io::Read;
    let cannot = |error: String| format!("{named}: cannot attach the image: {error}");
    // Inside the workspace, read through the checked walk (no link out).
    let mut file = match paths.resolve(&path.to_string_lossy()) {
        Ok(inside) => paths
            .open_file(&inside)
            .map_err(|e| cannot(e.to_string()))?,
        Err(_) => std::fs::File::open(path).map_err(|e| cannot(e.to_string()))?,
    };
    let mut bytes = Vec::new();
    let limit = u64::try_from(crate::history::MAX_IMAGE_BASE64 / 4 * 3 + 1).unwrap_or(u64::MAX);
    file.by_ref()
        .take(limit)
        .read_to_end(&mut bytes)
        .map_err(|e| cannot(e.to_string()))?;
    let image = Image {
        media_type: media_type.to_string(),
        data: base64::engine::general_purpose::STANDARD.encode(&bytes),
    };
    match image.refusal() {
        Some(why) => Err(cannot(why)),
        None => Ok(ContentBlock::Image(image)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_keep_escaped_spaces_and_drop_quotes() {
        assert_eq!(
            words("look at '/tmp/a b.png' and ~/Shot\\ 1.png, @src/x.rs"),
            [
                "look",
                "at",
                "/tmp/a b.png",
                "and",
                "~/Shot 1.png,",
                "@src/x.rs"
            ]
        );
        assert_eq!(image_type("a/B.PNG"), Some("image/png"));
        assert_eq!(image_type("a.jpeg"), Some("image/jpeg"));
        assert_eq!(image_type("notes.txt"), None);
    }
}
