//! Every line of a session file carries a keyed hash (HMAC-SHA256) of its
//! record chained to the line before it, so that a line the agent did not
//! write — a forged `user` message appended by a command, a record changed,
//! removed or reordered — is found when the file is loaded.
//!
//! A line is the record's JSON with the tag put first:
//! `{"mac":"<64 hex>","type":…}`. The tag covers the previous line's tag
//! (32 zero bytes before the header) and the record's JSON exactly as
//! written (the line without its `"mac":"…",`), so verifying never
//! re-serialises anything.
//!
//! The key is the user's, 32 random bytes created 0600 in the user's state
//! directory next to the records of `vouch.rs` — never in a workspace,
//! which commands can write. Records at the end of a file cannot be told
//! from a chain alone: at each sync (turn end, compaction, rewind) the
//! writer records how many lines the file holds and the last tag
//! ([`Checkpoint`]), and a file holding fewer, or other ones, is refused.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use ring::hmac;

use crate::sync::Locked;

/// `{"mac":"` + 64 hex digits + `",`: what a line starts with.
const PREFIX: &[u8] = b"{\"mac\":\"";
const TAG_HEX: usize = 64;
const LINE_START: usize = PREFIX.len() + TAG_HEX + 2;
const KEY_LEN: usize = 32;

/// The user's key for session files.
#[derive(Clone, Debug)]
pub struct SessionKey(hmac::Key);

/// Held while the user's key is read or made: a session started while
/// [`SessionKey::prepare`] makes it waits for that key, not a second one.
static MAKING: Mutex<()> = Mutex::new(());

impl SessionKey {
    /// The user's key, made on first use: `<state>/bareagent/session-key`
    /// (see `vouch::state_dir`). Refused, never replaced, if it is not a
    /// private regular file of this user's: a key others could read signs
    /// nothing.
    pub fn load_or_create() -> Result<SessionKey, String> {
        // Read each time (a key moved away is not signed with again), one
        // caller at a time: a second waits for the first's new key.
        let _one_at_a_time = MAKING.locked();
        let base = super::vouch::state_dir()
            .ok_or("no state directory (set HOME or XDG_STATE_HOME), so no session key")?;
        Self::in_state_dir(&base)
    }

    /// Makes the user's key, if there is none yet, on a thread of its own,
    /// so that the first session finds it made: making it syncs a file to
    /// disk, a millisecond that came before the first model request.
    pub fn prepare() {
        let _ = std::thread::Builder::new()
            .name("bareagent-key".into())
            .spawn(|| {
                if let Err(error) = SessionKey::load_or_create() {
                    tracing::debug!(%error, "the session key, loaded ahead");
                }
            });
    }

    /// The key under `base` (the user's state directory).
    pub fn in_state_dir(base: &Path) -> Result<SessionKey, String> {
        let path = key_path(base);
        match read_key(&path) {
            Ok(key) => return Ok(key),
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
                return Err(format!(
                    "{}: {error} (move it away to make a new key; sessions signed with it will not resume)",
                    path.display()
                ));
            }
            Err(_) => {}
        }
        create_key(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        read_key(&path).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// A key of these bytes (tests, and the fuzz targets through
    /// `crate::fuzzing`).
    pub fn from_bytes(bytes: &[u8; KEY_LEN]) -> SessionKey {
        SessionKey(hmac::Key::new(hmac::HMAC_SHA256, bytes))
    }

    /// A key that signs a session nobody can resume (no state directory):
    /// the file is still written, in the same format.
    pub fn ephemeral() -> SessionKey {
        let mut bytes = [0u8; KEY_LEN];
        let _ = rustix::rand::getrandom(&mut bytes, rustix::rand::GetRandomFlags::empty());
        SessionKey(hmac::Key::new(hmac::HMAC_SHA256, &bytes))
    }
}

fn key_path(base: &Path) -> PathBuf {
    base.join("bareagent").join("session-key")
}

/// Reads the key, checking on the open descriptor that it is a regular
/// file of this user's that nobody else can read or write.
fn read_key(path: &Path) -> std::io::Result<SessionKey> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    let meta = file.metadata()?;
    // SAFETY: geteuid has no preconditions.
    let mine = meta.uid() == unsafe { libc::geteuid() };
    if !meta.is_file() || !mine || meta.mode() & 0o077 != 0 || meta.len() != KEY_LEN as u64 {
        return Err(std::io::Error::other(
            "not a private 32-byte file of yours, so it is not used as the session key",
        ));
    }
    let mut bytes = [0u8; KEY_LEN];
    file.read_exact(&mut bytes)?;
    Ok(SessionKey(hmac::Key::new(hmac::HMAC_SHA256, &bytes)))
}

/// Writes a new key whole under a temporary name, then links it into
/// place: two agents starting at once end with one key, and nobody reads
/// a half-written one.
fn create_key(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let mut bytes = [0u8; KEY_LEN];
    rustix::rand::getrandom(&mut bytes, rustix::rand::GetRandomFlags::empty())
        .map_err(std::io::Error::from)?;
    let temp = dir.join(format!(".session-key.{}", super::vouch::new_token()));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&temp)?;
    let written = file.write_all(&bytes).and_then(|()| file.sync_all());
    let linked = written.and_then(|()| std::fs::hard_link(&temp, path));
    let _ = std::fs::remove_file(&temp);
    match linked {
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        other => other,
    }
}

/// Where a file's chain stands: its last tag and how many lines it has.
#[derive(Clone, Debug)]
pub struct Chain {
    key: SessionKey,
    last: [u8; 32],
    lines: u64,
}

/// What the writer last synced: the file held `lines` lines, the last
/// tagged `tag`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    pub lines: u64,
    pub tag: [u8; 32],
}

/// Why a line does not verify.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Broken {
    /// No tag where a line of this format has one.
    Untagged,
    /// A tag that is not the one the key gives: the line was changed,
    /// written by someone else, or lines were removed or moved before it.
    Mismatch,
}

impl Chain {
    /// The chain of a new file.
    pub fn new(key: SessionKey) -> Chain {
        Chain {
            key,
            last: [0; 32],
            lines: 0,
        }
    }

    /// `record` (one JSON object, no newline) as a line of the file,
    /// newline included, and the chain after it. The chain itself moves
    /// on only when the line is written ([`Chain::advance`]).
    pub fn seal(&self, record: &[u8]) -> (Vec<u8>, Chain) {
        let tag = self.tag(record.get(1..).unwrap_or_default());
        let mut line = Vec::with_capacity(record.len() + LINE_START + 1);
        line.extend_from_slice(PREFIX);
        line.extend_from_slice(hex(&tag).as_bytes());
        line.extend_from_slice(b"\",");
        line.extend_from_slice(record.get(1..).unwrap_or_default());
        line.push(b'\n');
        let next = Chain {
            key: self.key.clone(),
            last: tag,
            lines: self.lines + 1,
        };
        (line, next)
    }

    /// Checks one line (no newline) against the chain, and moves on past it.
    pub fn verify(&mut self, line: &[u8]) -> Result<(), Broken> {
        let (Some(head), Some(rest)) = (line.get(..LINE_START), line.get(LINE_START..)) else {
            return Err(Broken::Untagged);
        };
        let shape = head.starts_with(PREFIX) && head.ends_with(b"\",");
        let Some(claimed) = shape
            .then(|| unhex(&head[PREFIX.len()..PREFIX.len() + TAG_HEX]))
            .flatten()
        else {
            return Err(Broken::Untagged);
        };
        let tag = self.tag(rest);
        // Constant time: no early exit on the first differing byte.
        if claimed
            .iter()
            .zip(&tag)
            .fold(0, |acc, (a, b)| acc | (a ^ b))
            != 0
        {
            return Err(Broken::Mismatch);
        }
        self.last = tag;
        self.lines += 1;
        Ok(())
    }

    /// The tag of a record whose JSON is `{` + `rest`, after this chain.
    fn tag(&self, rest: &[u8]) -> [u8; 32] {
        let mut context = hmac::Context::with_key(&self.key.0);
        context.update(&self.last);
        context.update(b"{");
        context.update(rest);
        let mut tag = [0u8; 32];
        tag.copy_from_slice(context.sign().as_ref());
        tag
    }

    /// Where the chain stands now.
    pub fn checkpoint(&self) -> Checkpoint {
        Checkpoint {
            lines: self.lines,
            tag: self.last,
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The tag `hex` wrote, and nothing else: lowercase digits only (not
/// `A` for `a`, nor a sign), so a file that verifies is byte for byte
/// the one written.
fn unhex(text: &[u8]) -> Option<[u8; 32]> {
    let digit = |b: u8| match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        _ => None,
    };
    let mut out = [0u8; 32];
    if text.len() != 64 {
        return None;
    }
    for (i, pair) in text.chunks(2).enumerate() {
        out[i] = (digit(pair[0])? << 4) | digit(pair[1])?;
    }
    Some(out)
}

impl Checkpoint {
    /// As kept in the user's state: `lines hex`.
    pub fn to_text(self) -> String {
        format!("{} {}\n", self.lines, hex(&self.tag))
    }

    pub fn from_text(text: &str) -> Option<Checkpoint> {
        let (lines, tag) = text.trim().split_once(' ')?;
        Some(Checkpoint {
            lines: lines.parse().ok()?,
            tag: unhex(tag.as_bytes())?,
        })
    }
}

/// A session file's text as bareagent would write it with the key under
/// `state` (the user's state directory): `records` are JSON objects, one
/// per line, the header first. For tests and tools that must make a
/// session file by hand; holding the key is what signing takes.
pub fn sign_records(state: &Path, records: &[String]) -> Result<String, String> {
    let mut chain = Chain::new(SessionKey::in_state_dir(state)?);
    let mut text = Vec::new();
    for record in records {
        let (line, next) = chain.seal(record.as_bytes());
        text.extend_from_slice(&line);
        chain = next;
    }
    String::from_utf8(text).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(byte: u8) -> SessionKey {
        SessionKey::from_bytes(&[byte; 32])
    }

    /// Found by fuzzing (fuzz/fuzz_targets/session_file.rs): a tag's hex
    /// read `A` as `a`, so a file with a byte changed (a digit's case)
    /// still verified. Only the tag as written verifies.
    #[test]
    fn a_tag_in_other_digits_does_not_verify() {
        let (line, _) = Chain::new(key(1)).seal(br#"{"type":"a"}"#);
        let line = &line[..line.len() - 1];
        assert_eq!(Chain::new(key(1)).verify(line), Ok(()));
        let tag = PREFIX.len()..PREFIX.len() + TAG_HEX;
        let letter = tag
            .clone()
            .find(|&i| line[i].is_ascii_lowercase())
            .expect("a letter among 64 hex digits");
        let mut upper = line.to_vec();
        upper[letter] = upper[letter].to_ascii_uppercase();
        assert!(Chain::new(key(1)).verify(&upper).is_err());
        let mut signed = line.to_vec();
        signed[tag.start] = b'+';
        assert!(Chain::new(key(1)).verify(&signed).is_err());
    }

    /// The user's key is made once, private, and used again; one that
    /// others could read or write, or a link in its place, is refused (and
    /// left as it is), never replaced.
    #[test]
    fn the_key_is_made_once_and_refused_when_not_private() {
        use std::os::unix::fs::PermissionsExt;
        let state = tempfile::tempdir().unwrap();
        let first = SessionKey::in_state_dir(state.path()).unwrap();
        let path = key_path(state.path());
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let (line, _) = Chain::new(first).seal(br#"{"type":"a"}"#);
        let again = SessionKey::in_state_dir(state.path()).unwrap();
        assert_eq!(Chain::new(again).verify(&line[..line.len() - 1]), Ok(()));

        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let error = SessionKey::in_state_dir(state.path()).unwrap_err();
        assert!(error.contains("not a private 32-byte file"), "{error}");
        std::fs::remove_file(&path).unwrap();
        let elsewhere = state.path().join("elsewhere");
        std::fs::write(&elsewhere, [0u8; 32]).unwrap();
        std::fs::set_permissions(&elsewhere, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
        assert!(SessionKey::in_state_dir(state.path()).is_err(), "a link");
        assert_eq!(std::fs::read(&elsewhere).unwrap(), [0u8; 32]);
    }

    /// Lines sealed in order verify in that order, and in no other; a
    /// changed byte, another key, or a line without a tag do not.
    #[test]
    fn a_chain_verifies_only_what_it_sealed_in_its_order() {
        let records = [r#"{"type":"header"}"#, r#"{"type":"a"}"#, r#"{"type":"b"}"#];
        let mut chain = Chain::new(key(1));
        let mut lines = Vec::new();
        for record in records {
            let (line, next) = chain.seal(record.as_bytes());
            serde_json::from_slice::<serde_json::Value>(&line).expect("a line is JSON");
            lines.push(line[..line.len() - 1].to_vec());
            chain = next;
        }
        // Up to the first line that fails (where a load stops).
        let verify = |key: SessionKey, lines: &[&Vec<u8>]| {
            let mut chain = Chain::new(key);
            let mut results = Vec::new();
            for line in lines {
                results.push(chain.verify(line));
                if results.last() != Some(&Ok(())) {
                    break;
                }
            }
            results
        };
        let ok = Ok(());
        let bad = Err(Broken::Mismatch);
        let [h, a, b] = [&lines[0], &lines[1], &lines[2]];
        assert_eq!(verify(key(1), &[h, a, b]), [ok, ok, ok]);
        assert_eq!(verify(key(1), &[h, b, a]), [ok, bad], "reordered");
        assert_eq!(verify(key(1), &[h, b]), [ok, bad], "removed");
        assert_eq!(verify(key(2), &[h]), [bad], "another key");
        let mut changed = a.clone();
        let at = changed.len() - 3;
        changed[at] ^= 1;
        assert_eq!(verify(key(1), &[h, &changed]), [ok, bad], "changed");
        let plain = br#"{"type":"a"}"#.to_vec();
        assert_eq!(
            verify(key(1), &[h, &plain]),
            [ok, Err(Broken::Untagged)],
            "untagged"
        );
        let point = Checkpoint {
            lines: 3,
            tag: [7; 32],
        };
        assert_eq!(Checkpoint::from_text(&point.to_text()), Some(point));
    }
}
