//! Who is connected: the open connections, capped in all, and which of
//! them are idle — silent since they connected, or between two requests on
//! a kept-alive connection. Idle connections hold no request slot
//! (`slots.rs`) and cost little; when the table is full a new connection
//! takes the place of the oldest idle connection of the address holding
//! the most idle ones, so silent sockets from any number of addresses
//! cannot keep a client that sends its request at once out. Refusals
//! (nothing idle to close) are logged at a bounded rate (one line a second
//! at most, with the count).
//!
//! ```text
//!  accept ─▶ Connections::enter(ip) ─▶ Some(Conn)  (idle; dropped when the connection ends)
//!              full? close the oldest idle one of the address with the most idle ones
//!              nothing idle ─▶ None: refused (429, logged, bounded)
//!  a request starts ─▶ Conn::busy() (a guard: idle again when its answer is sent)
//! ```

use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio::sync::Notify;

/// How often a refusal is logged at most.
const LOG_EVERY: Duration = Duration::from_secs(1);

/// The open connections (see the [module docs](self)).
#[derive(Debug)]
pub(crate) struct Connections {
    table: Mutex<Table>,
    max: usize,
    refusals: Mutex<Refusals>,
}

/// The open connections and the idle ones per address (oldest first).
#[derive(Debug, Default)]
struct Table {
    open: usize,
    next_id: u64,
    idle: HashMap<IpAddr, VecDeque<Idle>>,
}

/// An idle connection: its id and how to close it.
#[derive(Debug)]
struct Idle {
    id: u64,
    close: Arc<Closing>,
}

/// How a connection is closed to make room: the flag says it gave its
/// place up; the notice wakes its task.
#[derive(Debug, Default)]
struct Closing {
    gone: AtomicBool,
    notice: Notify,
}

/// Refusals since the last log line.
#[derive(Debug)]
struct Refusals {
    logged_at: Option<Instant>,
    since: u64,
}

impl Connections {
    /// At most `max` open connections.
    pub(crate) fn new(max: usize) -> Arc<Self> {
        Arc::new(Self {
            table: Mutex::new(Table::default()),
            max: max.max(1),
            refusals: Mutex::new(Refusals {
                logged_at: None,
                since: 0,
            }),
        })
    }

    /// A place for a new (idle) connection from `ip`; when the table is
    /// full, the oldest idle connection of the address with the most idle
    /// ones is told to close and gives its place. `None` when every open
    /// connection is busy with a request.
    pub(crate) fn enter(self: &Arc<Self>, ip: IpAddr) -> Option<Conn> {
        let mut table = self.table.lock();
        if table.open >= self.max {
            let crowded = table
                .idle
                .iter()
                .filter(|(_, q)| !q.is_empty())
                .max_by_key(|(_, q)| q.len())
                .map(|(ip, _)| *ip)?;
            let evicted = table.idle.get_mut(&crowded).and_then(VecDeque::pop_front)?;
            if table.idle.get(&crowded).is_some_and(VecDeque::is_empty) {
                table.idle.remove(&crowded);
            }
            // Its place is this connection's now; it closes at once.
            table.open -= 1;
            evicted.close.gone.store(true, Ordering::SeqCst);
            evicted.close.notice.notify_one();
        }
        table.open += 1;
        table.next_id += 1;
        let id = table.next_id;
        let close = Arc::new(Closing::default());
        table.idle.entry(ip).or_default().push_back(Idle {
            id,
            close: close.clone(),
        });
        Some(Conn {
            inner: Arc::new(ConnInner {
                connections: self.clone(),
                ip,
                id,
                close,
                busy: Mutex::new(0),
            }),
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
            max_connections = self.max,
            "connections refused ({why}); counted since the last such line"
        );
        refusals.logged_at = Some(now);
        refusals.since = 0;
    }

    /// Takes connection `id` of `ip` off the idle list; false when it was
    /// not there (busy already, or closed to make room).
    fn unidle(&self, ip: IpAddr, id: u64) -> bool {
        let mut table = self.table.lock();
        let Some(queue) = table.idle.get_mut(&ip) else {
            return false;
        };
        let Some(at) = queue.iter().position(|i| i.id == id) else {
            return false;
        };
        queue.remove(at);
        if queue.is_empty() {
            table.idle.remove(&ip);
        }
        true
    }
}

/// One open connection; its place is freed when the last clone drops.
#[derive(Debug, Clone)]
pub(crate) struct Conn {
    inner: Arc<ConnInner>,
}

#[derive(Debug)]
struct ConnInner {
    connections: Arc<Connections>,
    ip: IpAddr,
    id: u64,
    close: Arc<Closing>,
    /// Requests under way on it.
    busy: Mutex<usize>,
}

impl Conn {
    /// Resolves when the connection was closed to make room for another.
    pub(crate) async fn evicted(&self) {
        self.inner.close.notice.notified().await;
    }

    /// A request started on this connection: it is not idle until the
    /// guard drops (its answer sent). `None` when the connection was
    /// already closed to make room (the request should not be served).
    pub(crate) fn busy(&self) -> Option<Busy> {
        let mut busy = self.inner.busy.lock();
        if self.inner.close.gone.load(Ordering::SeqCst) {
            return None;
        }
        if *busy == 0 && !self.inner.connections.unidle(self.inner.ip, self.inner.id) {
            // Chosen to make room: it is gone.
            return None;
        }
        *busy += 1;
        Some(Busy { conn: self.clone() })
    }
}

/// A request under way on a connection (see [`Conn::busy`]).
#[derive(Debug)]
pub(crate) struct Busy {
    conn: Conn,
}

impl Drop for Busy {
    fn drop(&mut self) {
        let inner = &self.conn.inner;
        let mut busy = inner.busy.lock();
        *busy = busy.saturating_sub(1);
        if *busy == 0 && !inner.close.gone.load(Ordering::SeqCst) {
            let mut table = inner.connections.table.lock();
            table.idle.entry(inner.ip).or_default().push_back(Idle {
                id: inner.id,
                close: inner.close.clone(),
            });
        }
    }
}

impl Drop for ConnInner {
    fn drop(&mut self) {
        // Off the idle list first, so nobody picks it to make room.
        let _ = self.connections.unidle(self.ip, self.id);
        // A connection closed to make room gave its place up already.
        if !self.close.gone.load(Ordering::SeqCst) {
            let mut table = self.connections.table.lock();
            table.open = table.open.saturating_sub(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_table_closes_the_oldest_idle_connection_of_the_most_crowded_address() {
        let connections = Connections::new(3);
        let a: IpAddr = [127, 0, 0, 2].into();
        let b: IpAddr = [127, 0, 0, 3].into();
        let a1 = connections.enter(a).unwrap();
        let a2 = connections.enter(a).unwrap();
        let b1 = connections.enter(b).unwrap();
        let _b1_busy = b1.busy().unwrap();
        // Full: a's oldest idle one makes room.
        let c = connections.enter(b).unwrap();
        assert!(a1.busy().is_none(), "closed to make room");
        let a2_busy = a2.busy();
        assert!(a2_busy.is_some(), "the newer idle one stays");
        drop(a1);
        // Full again, and every connection busy: refused.
        let _c_busy = c.busy().unwrap();
        assert!(connections.enter(b).is_none());
        drop(c);
        drop(_c_busy);
        assert!(connections.enter(b).is_some(), "a freed place serves again");
    }
}
