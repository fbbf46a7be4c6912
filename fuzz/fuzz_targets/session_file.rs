//! The session-file loader (`sessions::load`): any bytes as a file the
//! list reads, and any lines as records bareagent itself tagged, which the
//! resume checks and replays.
//!
//! What must hold:
//! - any bytes read unchecked (the list) give a history or an error;
//! - lines tagged with the user's key replay the same checked as
//!   unchecked (the check only refuses, it never changes a history);
//! - one byte changed anywhere in the tagged lines, or one line left off
//!   their end, and the checked replay refuses the file;
//! - a replayed history either passes `check_history` once a kill's
//!   unanswered calls are answered, or the resume refuses it — and the
//!   rewind of its last turn gives a prefix of what was replayed.
#![no_main]

use bareagent::fuzzing::{replay_session, seal_session};
use libfuzzer_sys::fuzz_target;

const KEY: [u8; 32] = [7; 32];

fuzz_target!(|data: &[u8]| {
    let Some((&mode, bytes)) = data.split_first() else {
        return;
    };
    if mode & 1 == 0 {
        let _ = replay_session(bytes, None);
        return;
    }
    // Records, one a line; the file bareagent would have written of them.
    let records: Vec<&[u8]> = bytes
        .split(|&b| b == b'\n')
        .filter(|line| line.first() == Some(&b'{'))
        .take(64)
        .collect();
    let (file, end) = seal_session(&KEY, &records);
    let checked = replay_session(&file, Some((&KEY, Some(&end))));
    if let Ok(replayed) = &checked {
        let unchecked = replay_session(&file, None).expect("unchecked, what checked reads");
        assert_eq!(replayed, &unchecked, "the check changed the history");
        // Without a compaction, the history before the last turn is what
        // the history was then: a prefix of it (the last message's first
        // blocks, where the turn's user content joined it).
        let compacted = records.iter().any(|record| {
            serde_json::from_slice::<serde_json::Value>(record)
                .is_ok_and(|value| value["type"] == "compaction")
        });
        if let (Some(before), false) = (&replayed.before_last_turn, compacted) {
            let history = &replayed.messages;
            assert!(
                before.len() <= history.len(),
                "a rewind to a longer history"
            );
            if let Some((last, whole)) = before.split_last() {
                assert_eq!(
                    whole,
                    &history[..whole.len()],
                    "a rewind to another history"
                );
                let then = &history[whole.len()];
                assert_eq!(last.role, then.role);
                assert_eq!(
                    Some(&last.content[..]),
                    then.content.get(..last.content.len())
                );
            }
        }
    }
    if file.is_empty() {
        return;
    }
    // One byte changed: the byte `mode` points at, flipped by a bit.
    let at = usize::from(mode >> 1) * file.len() / 128;
    let mut changed = file.clone();
    changed[at] ^= 1 << (mode >> 5);
    if changed != file {
        let tampered = replay_session(&changed, Some((&KEY, Some(&end))));
        assert!(tampered.is_err(), "a changed byte at {at} was accepted");
    }
    // The last line left off.
    let cut = file[..file.len() - 1]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |at| at + 1);
    let shorter = replay_session(&file[..cut], Some((&KEY, Some(&end))));
    assert!(
        shorter.is_err(),
        "a file without its last line was accepted"
    );
});
