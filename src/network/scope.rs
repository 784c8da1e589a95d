//! The scope guard: which network new nodes attach to.
//!
//! (The full description is on the [`ScopeGuard`] docs.)

use std::cell::{Cell, RefCell};
use std::marker::PhantomData;
use std::sync::Weak;

use super::{NetworkInner, RunnableNetwork};

thread_local! {
    static STACK: RefCell<Vec<(u64, Weak<NetworkInner>)>> = const { RefCell::new(Vec::new()) };
    static NEXT_TOKEN: Cell<u64> = const { Cell::new(0) };
}

/// The scope guard: which network new nodes attach to.
///
/// Each thread keeps a stack of active networks. [`RunnableNetwork::enter`]
/// pushes one and returns a [`ScopeGuard`] that pops it when dropped; the
/// innermost (most recently entered, still active) network wins.
///
/// The guard is deliberately `!Send`: holding it across an `.await` in a
/// spawned task does not compile, so a task that moves to another worker
/// thread can never leave its scope behind for other tasks to see. Build
/// with the guard, drop it, then `.await`.
///
/// [`RunnableNetwork::enter`]: crate::RunnableNetwork::enter
///
/// Keeps a network active on this thread until dropped.
///
/// It cannot cross threads (the promise of the docs above):
///
/// ```compile_fail
/// fn send<T: Send>(_: T) {}
/// let net = lc_agent::RunnableNetwork::builder().build();
/// send(net.enter()); // error: `ScopeGuard` cannot be sent between threads
/// ```
///
/// so a spawned task that holds it across an `.await` does not compile:
///
/// ```compile_fail
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let net = lc_agent::RunnableNetwork::builder().build();
/// tokio::spawn(async move {
///     let _scope = net.enter();
///     tokio::task::yield_now().await; // the guard lives across this await
/// });
/// # });
/// ```
#[must_use = "the network is active only while the guard lives"]
pub struct ScopeGuard {
    token: u64,
    _not_send: PhantomData<*const ()>,
}

impl std::fmt::Debug for ScopeGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScopeGuard")
            .field("token", &self.token)
            .finish()
    }
}

pub(crate) fn enter(network: &RunnableNetwork) -> ScopeGuard {
    let token = NEXT_TOKEN.with(|t| {
        let v = t.get();
        t.set(v + 1);
        v
    });
    STACK.with(|s| {
        s.borrow_mut()
            .push((token, std::sync::Arc::downgrade(&network.0)))
    });
    ScopeGuard {
        token,
        _not_send: PhantomData,
    }
}

impl Drop for ScopeGuard {
    fn drop(&mut self) {
        // Guards may drop out of order; remove exactly this one.
        let _ = STACK.try_with(|s| {
            let mut s = s.borrow_mut();
            if let Some(pos) = s.iter().rposition(|(t, _)| *t == self.token) {
                s.remove(pos);
            }
        });
    }
}

/// The innermost active network on this thread.
pub(crate) fn current() -> Option<RunnableNetwork> {
    STACK
        .try_with(|s| {
            s.borrow()
                .iter()
                .rev()
                .find_map(|(_, w)| w.upgrade().map(RunnableNetwork))
        })
        .ok()
        .flatten()
}
