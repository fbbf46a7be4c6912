//! Anthropic's prompt cache, simulated from what requests carry, so tests
//! can measure what share of a session's input would be read from the
//! cache rather than script the figures.
//!
//! As the API documents it: the prompt is tools, then system, then
//! messages, cut into blocks; a `cache_control` breakpoint writes the
//! prefix up to its block (if it is at least [`MIN_TOKENS`] long); a
//! request reads the longest cached prefix that ends at a block boundary
//! at most [`LOOKBACK`] blocks before one of its breakpoints. Moving or
//! adding a breakpoint changes nothing in the prefix: the blocks are
//! compared without their `cache_control`. Tokens are counted as a quarter
//! of the bytes of each block's JSON (close enough for shares). Entries
//! never expire (a session in a test lasts seconds, the cache 5 minutes).
#![allow(dead_code)]

use std::collections::HashSet;
use std::hash::{DefaultHasher, Hash, Hasher};

use serde_json::Value;

/// The shortest prefix the API caches (Sonnet and Opus; Haiku's is longer).
pub const MIN_TOKENS: u64 = 1024;
/// How many blocks before a breakpoint the API looks for an earlier hit.
pub const LOOKBACK: usize = 20;

/// What one request's usage would say.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheUsage {
    pub input_tokens: u64,
    pub cache_creation_input_tokens: u64,
    pub cache_read_input_tokens: u64,
}

#[derive(Default, Debug)]
pub struct PromptCache {
    /// Hashes of the cached prefixes.
    cached: HashSet<u64>,
}

/// One block of the prompt: its token count, and whether it carries a breakpoint.
struct Block {
    tokens: u64,
    breakpoint: bool,
    /// The hash of the prompt up to and including this block.
    prefix: u64,
}

impl PromptCache {
    /// Reads and writes the cache for one Messages request body.
    pub fn request(&mut self, body: &Value) -> CacheUsage {
        let blocks = blocks(body);
        let total: u64 = blocks.iter().map(|b| b.tokens).sum();
        let lengths: Vec<u64> = blocks
            .iter()
            .scan(0, |sum, b| {
                *sum += b.tokens;
                Some(*sum)
            })
            .collect();
        let breakpoints: Vec<usize> = (0..blocks.len())
            .filter(|&i| blocks[i].breakpoint)
            .collect();
        // The longest hit: a cached prefix at a boundary within the lookback
        // of some breakpoint.
        let mut read = 0;
        for &point in &breakpoints {
            for at in (point.saturating_sub(LOOKBACK)..=point).rev() {
                if self.cached.contains(&blocks[at].prefix) {
                    read = read.max(lengths[at]);
                    break;
                }
            }
        }
        let mut written_to = read;
        for &point in &breakpoints {
            if lengths[point] >= MIN_TOKENS {
                self.cached.insert(blocks[point].prefix);
                written_to = written_to.max(lengths[point]);
            }
        }
        CacheUsage {
            input_tokens: total - written_to,
            cache_creation_input_tokens: written_to - read,
            cache_read_input_tokens: read,
        }
    }
}

/// The prompt's blocks in cache order: tools, system, then each message's
/// content blocks (with the role, so a user and an assistant block of the
/// same text differ).
fn blocks(body: &Value) -> Vec<Block> {
    let mut pieces: Vec<(String, bool)> = Vec::new();
    let mut push = |value: &Value, extra: &str| {
        let mut value = value.clone();
        let breakpoint = value
            .as_object_mut()
            .and_then(|o| o.remove("cache_control"))
            .is_some();
        pieces.push((format!("{extra}{value}"), breakpoint));
    };
    for tool in body["tools"].as_array().into_iter().flatten() {
        push(tool, "tool:");
    }
    match &body["system"] {
        Value::String(text) => push(&Value::String(text.clone()), "system:"),
        Value::Array(blocks) => blocks.iter().for_each(|b| push(b, "system:")),
        _ => {}
    }
    for message in body["messages"].as_array().into_iter().flatten() {
        let role = message["role"].as_str().unwrap_or_default();
        match &message["content"] {
            Value::String(text) => push(&Value::String(text.clone()), role),
            Value::Array(blocks) => blocks.iter().for_each(|b| push(b, role)),
            _ => {}
        }
    }
    let mut hasher = DefaultHasher::new();
    pieces
        .into_iter()
        .map(|(text, breakpoint)| {
            text.hash(&mut hasher);
            Block {
                tokens: (text.len() as u64).div_ceil(4),
                breakpoint,
                prefix: hasher.finish(),
            }
        })
        .collect()
}
