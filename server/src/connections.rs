//! Who is connected: the open connections per client address (capped, so
//! one client cannot take every slot), and a log of refused connections
//! at a bounded rate (one line a second at most, with the count), so a
//! flood of refusals cannot flood the log either.
//!
//! ```text
//!  accept ─▶ Clients::enter(ip) ─▶ Some(ClientSlot)   (dropped when the connection ends)
//!                               └▶ None: over the per-address cap ─▶ refused (logged, bounded)
//! ```

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// How often a refusal is logged at most.
const LOG_EVERY: Duration = Duration::from_secs(1);

/// The open connections per client address.
#[derive(Debug)]
pub(crate) struct Clients {
    open: Mutex<HashMap<IpAddr, usize>>,
    max: usize,
    refusals: Mutex<Refusals>,
}

/// Refusals since the last log line.
#[derive(Debug)]
struct Refusals {
    logged_at: Option<Instant>,
    since: u64,
}

impl Clients {
    /// At most `max` connections per client address.
    pub(crate) fn new(max: usize) -> Arc<Self> {
        Arc::new(Self {
            open: Mutex::new(HashMap::new()),
            max: max.max(1),
            refusals: Mutex::new(Refusals {
                logged_at: None,
                since: 0,
            }),
        })
    }

    /// A slot for a connection from `ip`, or `None` when that address
    /// already has the most.
    pub(crate) fn enter(self: &Arc<Self>, ip: IpAddr) -> Option<ClientSlot> {
        let mut open = self.open.lock();
        let count = open.entry(ip).or_insert(0);
        if *count >= self.max {
            return None;
        }
        *count += 1;
        Some(ClientSlot {
            clients: self.clone(),
            ip,
        })
    }

    /// Logs a refused connection from `remote`, at most once a second
    /// (the line counts the ones refused since the last).
    pub(crate) fn refused(&self, remote: SocketAddr, why: &'static str) {
        let mut refusals = self.refusals.lock();
        refusals.since += 1;
        let now = Instant::now();
        if refusals
            .logged_at
            .is_some_and(|at| now.duration_since(at) < LOG_EVERY)
        {
            return;
        }
        tracing::warn!(
            %remote,
            refused = refusals.since,
            per_client = self.max,
            "connections refused ({why}); counted since the last such line"
        );
        refusals.logged_at = Some(now);
        refusals.since = 0;
    }
}

/// One connection of a client address; its slot is freed when dropped.
#[derive(Debug)]
pub(crate) struct ClientSlot {
    clients: Arc<Clients>,
    ip: IpAddr,
}

impl Drop for ClientSlot {
    fn drop(&mut self) {
        let mut open = self.clients.open.lock();
        if let Some(count) = open.get_mut(&self.ip) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                open.remove(&self.ip);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_gets_at_most_its_share_and_a_freed_slot_serves_again() {
        let clients = Clients::new(2);
        let a: IpAddr = [127, 0, 0, 2].into();
        let b: IpAddr = [127, 0, 0, 3].into();
        let first = clients.enter(a);
        let second = clients.enter(a);
        assert!(first.is_some() && second.is_some());
        assert!(clients.enter(a).is_none());
        assert!(clients.enter(b).is_some());
        drop(first);
        assert!(clients.enter(a).is_some());
    }
}
