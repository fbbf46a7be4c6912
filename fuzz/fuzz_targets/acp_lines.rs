//! The ACP line reader (`acp::transport`): any bytes on stdin.
//!
//! What must hold: the frames are exactly the stream's lines, split at
//! `\n`, without their `\r`/`\n` ends, blank (all-whitespace) lines left
//! out, each decoded lossily where it is not UTF-8 — so a line that is not
//! UTF-8 costs that one frame, never the connection — and no frame holds a
//! line break.
#![no_main]

use std::sync::OnceLock;

use bareagent::fuzzing::acp_lines;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let frames = runtime().block_on(acp_lines(data.to_vec()));
    let expected: Vec<String> = data
        .split(|&b| b == b'\n')
        .map(|line| {
            let end = line
                .iter()
                .rposition(|&b| b != b'\r')
                .map_or(0, |at| at + 1);
            &line[..end]
        })
        .filter(|line| !line.iter().all(u8::is_ascii_whitespace))
        .map(|line| String::from_utf8_lossy(line).into_owned())
        .collect();
    assert_eq!(frames, expected);
    for frame in &frames {
        assert!(!frame.contains('\n'), "a line break inside {frame:?}");
    }
});

fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a runtime")
    })
}
