//! Ctrl-C: stop the run, keep the session.
//!
//! ```text
//!  Ctrl-C ──> Interrupt::watch task ──> requested = true
//!                 │                          │
//!                 │   a run is going on:     └─> `interrupted()` wakes, the run
//!                 │   it notices at once         future is dropped, the caller
//!                 │                              saves and exits 130
//!                 └─ nobody noticed within a moment (the command waits on
//!                    stdin at a prompt): exit 130 here; the checkpoint saved
//!                    the session when the run paused
//! ```
//!
//! A second Ctrl-C quits at once, whatever is going on (a save that hangs
//! on an unreachable Redis, say).
//!
//! In an interactive chat ([`Interrupt::watch_turns`]) Ctrl-C cancels the
//! turn in flight instead: the run future is dropped, the chat saves and
//! the prompt returns ([`Interrupt::reset`] re-arms the watcher). A second
//! Ctrl-C before the prompt is back quits at once, saying how to resume.
//! (At the prompt the line editor reads Ctrl-C as a key, not a signal.)

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

/// The exit code of an interrupted command (128 + SIGINT, as shells do).
pub(crate) const INTERRUPTED: u8 = 130;

/// How long the running command has to notice an interrupt before the
/// watcher ends the process itself.
const NOTICE: Duration = Duration::from_millis(300);

/// Whether Ctrl-C was pressed, for the code that runs the agent.
#[derive(Clone)]
pub(crate) struct Interrupt {
    requested: watch::Receiver<bool>,
    noticed: Arc<AtomicBool>,
    /// The watcher's switch, for [`Interrupt::reset`] (turn mode only).
    sender: Option<Arc<watch::Sender<bool>>>,
}

impl Interrupt {
    /// Watches Ctrl-C for an interactive chat: a press cancels the turn in
    /// flight; a second one before [`Interrupt::reset`] exits (130) after
    /// printing `resume`.
    pub(crate) fn watch_turns(resume: Arc<std::sync::Mutex<String>>) -> Self {
        let (tx, requested) = watch::channel(false);
        let tx = Arc::new(tx);
        let sender = tx.clone();
        match Presses::new() {
            Ok(mut presses) => {
                tokio::spawn(async move {
                    while presses.next().await {
                        if *tx.borrow() {
                            if let Ok(text) = resume.lock() {
                                eprintln!("\n{text}");
                            }
                            std::process::exit(i32::from(INTERRUPTED));
                        }
                        eprintln!("\ncancelling the turn (Ctrl-C again quits)");
                        let _ = tx.send(true);
                    }
                });
            }
            Err(e) => eprintln!("warning: cannot watch Ctrl-C: {e}"),
        }
        Self {
            requested,
            noticed: Arc::new(AtomicBool::new(false)),
            sender: Some(sender),
        }
    }

    /// Re-arms a [`Interrupt::watch_turns`] watcher once the prompt is
    /// back (the next Ctrl-C cancels the next turn).
    pub(crate) fn reset(&self) {
        if let Some(tx) = &self.sender {
            let _ = tx.send(false);
        }
    }

    /// Starts watching Ctrl-C (inside a tokio runtime). The handler is in
    /// place when this returns.
    pub(crate) fn watch() -> Self {
        let (tx, requested) = watch::channel(false);
        let noticed = Arc::new(AtomicBool::new(false));
        let seen = noticed.clone();
        match Presses::new() {
            Ok(mut presses) => {
                tokio::spawn(async move {
                    if !presses.next().await {
                        return;
                    }
                    eprintln!(
                        "\ninterrupted: stopping the run and saving the session (Ctrl-C again quits at once)"
                    );
                    let _ = tx.send(true);
                    tokio::time::sleep(NOTICE).await;
                    if seen.load(Ordering::SeqCst) {
                        presses.next().await;
                    }
                    std::process::exit(i32::from(INTERRUPTED));
                });
            }
            // Ctrl-C keeps its default (the process ends; the checkpoints
            // hold what ran).
            Err(e) => eprintln!("warning: cannot watch Ctrl-C: {e}"),
        }
        Self {
            requested,
            noticed,
            sender: None,
        }
    }

    /// Resolves when Ctrl-C is pressed (at once if it was already); the
    /// caller then stops what it runs and saves.
    pub(crate) async fn interrupted(&self) {
        let mut requested = self.requested.clone();
        if requested.wait_for(|pressed| *pressed).await.is_ok() {
            self.noticed.store(true, Ordering::SeqCst);
        } else {
            // The watcher is gone (no signal handler could be installed):
            // never resolve.
            std::future::pending::<()>().await;
        }
    }
}

/// Ctrl-C presses, registered at once (a press between `new` and the first
/// `next` is not lost).
struct Presses {
    #[cfg(unix)]
    signal: tokio::signal::unix::Signal,
}

impl Presses {
    fn new() -> std::io::Result<Self> {
        Ok(Self {
            #[cfg(unix)]
            signal: tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?,
        })
    }

    /// The next press; `false` when no more can come.
    async fn next(&mut self) -> bool {
        #[cfg(unix)]
        return self.signal.recv().await.is_some();
        #[cfg(not(unix))]
        return tokio::signal::ctrl_c().await.is_ok();
    }
}
