//! The keyboard during a turn on a terminal: Esc cancels the turn as
//! Ctrl-C does, and an approval reads its answer a key at a time.
//!
//! The terminal is taken out of canonical mode without echo for the turn
//! (signals stay on: Ctrl-C is still a SIGINT), and one thread reads it:
//! - a lone Esc (one not followed at once by the rest of an escape
//!   sequence, as an arrow key is) cancels the turn;
//! - while an approval has borrowed the keys ([`Keys::borrow`]), every
//!   other byte goes to it;
//! - otherwise what is typed is kept, to be put at the next prompt
//!   ([`TurnKeys::finish`]); an approval drops what was typed before it
//!   was shown, so typing ahead never answers one.
//!
//! A pager started from an approval reads the same terminal, so the thread
//! can be paused ([`Keys::paused`]); it never reads while paused.
//! The terminal goes back as it was when the turn ends, and before the
//! process exits on a second Ctrl-C ([`restore_terminal`]).

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use rustix::termios::{LocalModes, OptionalActions, SpecialCodeIndex, Termios};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio_util::sync::CancellationToken;

use super::output::TurnSink;
use crate::sync::Locked;

/// How long the rest of an escape sequence may take to follow its Esc
/// (terminals send it in one write; a remote one may split it).
const SEQUENCE_GAP: Duration = Duration::from_millis(40);
/// How often the reader looks whether it should stop or pause.
const TICK: Duration = Duration::from_millis(50);

/// The terminal's settings as the shell left them, while a turn has
/// changed them: what [`restore_terminal`] puts back.
static SHELLS: Mutex<Option<Termios>> = Mutex::new(None);

/// Puts the terminal back as the shell left it, if a turn changed it (for
/// an exit in the middle of one).
pub fn restore_terminal() {
    if let Some(termios) = &*SHELLS.locked() {
        let _ = rustix::termios::tcsetattr(std::io::stdin(), OptionalActions::Now, termios);
    }
}

/// What the reader thread is asked to do.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Asked {
    Read,
    Pause,
    Stop,
}

struct State {
    asked: Asked,
    /// The reader is not reading (paused or stopped).
    idle: bool,
    /// Where keys go while an approval has them.
    lent: Option<UnboundedSender<Vec<u8>>>,
    /// Typed during the turn, for the next prompt.
    typed: Vec<u8>,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
    /// The terminal's settings during the turn.
    turn: Termios,
    /// As they were before it.
    before: Termios,
}

/// A turn's hold on the keyboard; dropping it (or [`TurnKeys::finish`])
/// gives the terminal back.
pub struct TurnKeys {
    shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// What an approval reads the keys through.
#[derive(Clone)]
pub struct Keys(Arc<Shared>);

impl TurnKeys {
    /// Takes the keyboard for a turn that `cancel` cancels; `None` when
    /// stdin's settings cannot be had (not a terminal).
    pub fn start(cancel: CancellationToken, sink: Arc<dyn TurnSink>) -> Option<TurnKeys> {
        let before = rustix::termios::tcgetattr(std::io::stdin()).ok()?;
        let mut turn = before.clone();
        turn.local_modes
            .remove(LocalModes::ICANON | LocalModes::ECHO);
        turn.local_modes.insert(LocalModes::ISIG);
        turn.special_codes[SpecialCodeIndex::VMIN] = 1;
        turn.special_codes[SpecialCodeIndex::VTIME] = 0;
        rustix::termios::tcsetattr(std::io::stdin(), OptionalActions::Now, &turn).ok()?;
        SHELLS.locked().get_or_insert_with(|| before.clone());
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                asked: Asked::Read,
                idle: false,
                lent: None,
                typed: Vec::new(),
            }),
            changed: Condvar::new(),
            turn,
            before,
        });
        let reader = shared.clone();
        let thread = std::thread::spawn(move || {
            read_keys(&reader, &cancel, sink.as_ref());
            // Stopped, or stdin ended: a pause need not wait for it.
            reader.state.locked().idle = true;
            reader.changed.notify_all();
        });
        Some(TurnKeys {
            shared,
            thread: Some(thread),
        })
    }

    pub fn keys(&self) -> Keys {
        Keys(self.shared.clone())
    }

    /// Gives the terminal back; returns what was typed during the turn
    /// and not taken by an approval (printable text only).
    pub fn finish(mut self) -> String {
        self.stop();
        let typed = std::mem::take(&mut self.shared.state.locked().typed);
        String::from_utf8_lossy(&typed)
            .chars()
            .filter(|c| !c.is_control())
            .collect()
    }

    fn stop(&mut self) {
        self.shared.state.locked().asked = Asked::Stop;
        self.shared.changed.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        let _ =
            rustix::termios::tcsetattr(std::io::stdin(), OptionalActions::Now, &self.shared.before);
    }
}

impl Drop for TurnKeys {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The reader thread: until asked to stop.
fn read_keys(shared: &Shared, cancel: &CancellationToken, sink: &dyn TurnSink) {
    let stdin = std::io::stdin();
    let mut buffer = [0u8; 256];
    loop {
        {
            let mut state = shared.state.locked();
            loop {
                match state.asked {
                    Asked::Stop => return,
                    Asked::Read => break,
                    Asked::Pause => {
                        state.idle = true;
                        shared.changed.notify_all();
                        state = shared
                            .changed
                            .wait(state)
                            .unwrap_or_else(|poisoned| poisoned.into_inner());
                    }
                }
            }
            state.idle = false;
        }
        if !readable(&stdin, TICK) || shared.state.locked().asked != Asked::Read {
            continue;
        }
        let mut bytes = match rustix::io::read(&stdin, &mut buffer) {
            Err(rustix::io::Errno::INTR) => continue,
            Ok(0) | Err(_) => return,
            Ok(n) => buffer[..n].to_vec(),
        };
        // An Esc last may be the start of a sequence whose rest follows.
        while bytes.last() == Some(&0x1b) && readable(&stdin, SEQUENCE_GAP) {
            match rustix::io::read(&stdin, &mut buffer) {
                Ok(n) if n > 0 => bytes.extend_from_slice(&buffer[..n]),
                _ => break,
            }
        }
        let (typed, esc) = keys_of(&bytes);
        if esc && !cancel.is_cancelled() {
            // A lone Esc: the turn is cancelled, whoever has the keys.
            sink.notice("\nbareagent: cancelling (Esc)");
            cancel.cancel();
        }
        let mut state = shared.state.locked();
        match &state.lent {
            Some(lent) if !typed.is_empty() => {
                let _ = lent.send(typed);
            }
            Some(_) => {}
            None => state.typed.extend_from_slice(&typed),
        }
    }
}

/// The bytes typed, escape sequences (arrows, function keys, Alt-x)
/// left out, and whether a lone Esc was among them.
fn keys_of(bytes: &[u8]) -> (Vec<u8>, bool) {
    let (mut typed, mut esc) = (Vec::new(), false);
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != 0x1b {
            typed.push(bytes[i]);
            i += 1;
            continue;
        }
        i += match bytes.get(i + 1) {
            None => {
                esc = true;
                1
            }
            // CSI: parameters, then one final byte in @..~.
            Some(b'[') => bytes[i + 2..]
                .iter()
                .position(|b| (0x40..=0x7e).contains(b))
                .map_or(bytes.len() - i, |end| end + 3),
            // SS3 (F1-F4, arrows in application mode): one byte more.
            Some(b'O') => 3,
            // Alt and a key.
            Some(_) => 2,
        };
    }
    (typed, esc)
}

/// Whether stdin has input within `wait`.
fn readable(stdin: &std::io::Stdin, wait: Duration) -> bool {
    let timeout = rustix::event::Timespec {
        tv_sec: 0,
        tv_nsec: i64::try_from(wait.as_nanos()).unwrap_or(0),
    };
    let mut fds = [rustix::event::PollFd::new(
        stdin,
        rustix::event::PollFlags::IN,
    )];
    matches!(rustix::event::poll(&mut fds, Some(&timeout)), Ok(n) if n > 0)
}

impl Keys {
    /// The keys until the returned receiver is dropped; what was typed
    /// before (the next prompt, typed ahead) is dropped, unread.
    pub fn borrow(&self) -> Borrowed {
        let (send, receive) = unbounded_channel();
        let mut state = self.0.state.locked();
        state.typed.clear();
        state.lent = Some(send);
        drop(state);
        let _ = rustix::termios::tcflush(std::io::stdin(), rustix::termios::QueueSelector::IFlush);
        Borrowed {
            keys: self.clone(),
            receive,
        }
    }

    /// Runs `work` with the reader paused and the terminal as the shell
    /// left it (a pager reads it), then takes it back.
    pub fn paused<T>(&self, work: impl FnOnce() -> T) -> T {
        let mut state = self.0.state.locked();
        state.asked = Asked::Pause;
        self.0.changed.notify_all();
        while !state.idle && state.asked == Asked::Pause {
            state = self
                .0
                .changed
                .wait(state)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
        }
        drop(state);
        let stdin = std::io::stdin();
        let _ = rustix::termios::tcsetattr(&stdin, OptionalActions::Now, &self.0.before);
        let done = work();
        let _ = rustix::termios::tcsetattr(&stdin, OptionalActions::Now, &self.0.turn);
        let mut state = self.0.state.locked();
        if state.asked == Asked::Pause {
            state.asked = Asked::Read;
        }
        self.0.changed.notify_all();
        done
    }
}

/// Keys lent to an approval; given back when dropped.
pub struct Borrowed {
    keys: Keys,
    receive: UnboundedReceiver<Vec<u8>>,
}

impl Borrowed {
    /// The next bytes typed (one key, or a paste); `None` once the turn's
    /// keys are given back.
    pub async fn next(&mut self) -> Option<Vec<u8>> {
        self.receive.recv().await
    }
}

impl Drop for Borrowed {
    fn drop(&mut self) {
        self.keys.0.state.locked().lent = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lone_esc_is_told_from_the_sequences_that_start_with_one() {
        let cases: [(&[u8], &[u8], bool); 8] = [
            (b"\x1b", b"", true),
            (b"never mind\x1b", b"never mind", true),
            (b"\x1b[A", b"", false),
            (b"a\x1b[1;5Cb", b"ab", false),
            (b"\x1bOP", b"", false),
            (b"\x1bx", b"", false),
            (b"\x1b[", b"", false),
            (b"y", b"y", false),
        ];
        for (bytes, typed, esc) in cases {
            assert_eq!(keys_of(bytes), (typed.to_vec(), esc), "{bytes:?}");
        }
    }
}
