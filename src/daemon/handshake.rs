//! Pre-authentication limits of a `tls://` listener.
//!
//! A TLS connection is not served (and takes no connection permit) until its handshake has
//! authenticated a listed client. Until then it holds only a slot of this table, which is
//! bounded three ways:
//!
//! - in time: the handshake (and the lingering after a refused one) must finish within
//!   [`ServerTimeouts::handshake`](super::ServerTimeouts) (5 s by default);
//! - in total: at most [`MAX_PENDING_HANDSHAKES`] are pending at once;
//! - per source: at most [`MAX_HANDSHAKES_PER_SOURCE`] from one source (an IPv4 address, or
//!   an IPv6 /64, which one host usually owns whole).
//!
//! A new connection is never refused for want of a slot: it takes the slot of the oldest
//! pending handshake of its own source when that source is at its cap, or else, when the
//! table is full, of the source holding the most slots. Holding sockets open therefore
//! cannot lock anyone out: an authenticated client's handshake (a few milliseconds) gets a
//! slot as soon as it connects, and only a source opening new connections faster than
//! that, from more sources than the client's, could take it away again.
//!
//! **Invariant:** a slot is cancelled only while its handshake is pending; once the
//! handshake completed, the connection is no longer in the table.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::oneshot;

/// Pending handshakes the daemon holds at once.
pub const MAX_PENDING_HANDSHAKES: usize = 64;

/// Pending handshakes one source may hold at once.
pub const MAX_HANDSHAKES_PER_SOURCE: usize = 8;

/// The pending handshakes of a listener.
#[derive(Debug)]
pub(super) struct Handshakes {
    table: Mutex<Table>,
    capacity: usize,
    per_source: usize,
}

#[derive(Debug, Default)]
struct Table {
    next_id: u64,
    pending: usize,
    /// Per source, its pending handshakes oldest first; dropping a sender cancels one.
    by_source: HashMap<IpAddr, VecDeque<(u64, oneshot::Sender<()>)>>,
}

impl Table {
    /// Cancels the oldest pending handshake of `source`.
    fn evict_oldest(&mut self, source: IpAddr) {
        let Some(queue) = self.by_source.get_mut(&source) else {
            return;
        };
        if queue.pop_front().is_some() {
            self.pending -= 1;
            tracing::debug!(%source, "cancelling the oldest pending TLS handshake of a busy source");
        }
        if queue.is_empty() {
            self.by_source.remove(&source);
        }
    }

    fn remove(&mut self, source: IpAddr, id: u64) {
        let Some(queue) = self.by_source.get_mut(&source) else {
            return;
        };
        if let Some(at) = queue.iter().position(|(entry, _)| *entry == id) {
            queue.remove(at);
            self.pending -= 1;
        }
        if queue.is_empty() {
            self.by_source.remove(&source);
        }
    }
}

/// The source a connection is counted against: its IPv4 address (IPv4-mapped IPv6 included)
/// or its IPv6 /64 network.
pub(super) fn source_of(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let bits = u128::from(v6) & !((1u128 << 64) - 1);
                IpAddr::V6(bits.into())
            }
        },
    }
}

impl Handshakes {
    pub(super) fn new() -> Arc<Handshakes> {
        Handshakes::with_limits(MAX_PENDING_HANDSHAKES, MAX_HANDSHAKES_PER_SOURCE)
    }

    pub(super) fn with_limits(capacity: usize, per_source: usize) -> Arc<Handshakes> {
        Arc::new(Handshakes {
            table: Mutex::new(Table::default()),
            capacity: capacity.max(1),
            per_source: per_source.max(1),
        })
    }

    /// Takes a slot for a handshake from `peer`, cancelling an older one if the limits say
    /// so.
    pub(super) fn enter(self: &Arc<Self>, peer: IpAddr) -> Slot {
        let source = source_of(peer);
        let (cancel, cancelled) = oneshot::channel();
        let mut table = self.table.lock().unwrap_or_else(PoisonError::into_inner);
        if table.by_source.get(&source).map_or(0, VecDeque::len) >= self.per_source {
            table.evict_oldest(source);
        } else if table.pending >= self.capacity {
            let heaviest = table
                .by_source
                .iter()
                .max_by_key(|(_, queue)| queue.len())
                .map(|(source, _)| *source);
            if let Some(heaviest) = heaviest {
                table.evict_oldest(heaviest);
            }
        }
        let id = table.next_id;
        table.next_id += 1;
        table.pending += 1;
        table.by_source.entry(source).or_default().push_back((id, cancel));
        Slot {
            handshakes: Arc::clone(self),
            source,
            id,
            cancelled: Some(cancelled),
        }
    }

    /// Pending handshakes (for tests).
    #[cfg(test)]
    pub(super) fn pending(&self) -> usize {
        self.table.lock().unwrap_or_else(PoisonError::into_inner).pending
    }
}

/// One pending handshake's slot; dropping it frees the slot.
#[derive(Debug)]
pub(super) struct Slot {
    handshakes: Arc<Handshakes>,
    source: IpAddr,
    id: u64,
    cancelled: Option<oneshot::Receiver<()>>,
}

impl Slot {
    /// Runs `handshake` until it finishes or this slot is taken by a newer connection
    /// (`None`), then frees the slot.
    pub(super) async fn run<T>(mut self, handshake: impl Future<Output = Option<T>>) -> Option<T> {
        let cancelled = self.cancelled.take()?;
        tokio::select! {
            biased;
            _ = cancelled => None,
            done = handshake => done,
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut table = self.handshakes.table.lock().unwrap_or_else(PoisonError::into_inner);
        table.remove(self.source, self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn an_ipv6_source_is_its_slash_64_and_a_mapped_ipv4_is_the_ipv4_address() {
        assert_eq!(source_of(ip("2001:db8:1:2:aaaa::1")), ip("2001:db8:1:2::"));
        assert_eq!(source_of(ip("::ffff:10.0.0.7")), ip("10.0.0.7"));
        assert_eq!(source_of(ip("127.0.0.1")), ip("127.0.0.1"));
    }

    #[tokio::test]
    async fn a_source_at_its_cap_loses_its_oldest_handshake_and_a_full_table_evicts_the_heaviest_source() {
        let table = Handshakes::with_limits(4, 2);
        let mut a1 = table.enter(ip("10.0.0.1"));
        let a2 = table.enter(ip("10.0.0.1"));
        let a3 = table.enter(ip("10.0.0.1"));
        assert_eq!(table.pending(), 2, "the source's cap holds");
        assert!(
            a1.cancelled
                .as_mut()
                .unwrap()
                .try_recv()
                .is_err_and(|e| e == oneshot::error::TryRecvError::Closed)
        );
        let b1 = table.enter(ip("10.0.0.2"));
        let c1 = table.enter(ip("10.0.0.3"));
        assert_eq!(table.pending(), 4);
        // Full: the newcomer takes the slot of the source holding the most (10.0.0.1).
        let d1 = table.enter(ip("10.0.0.4"));
        assert_eq!(table.pending(), 4);
        let mut a2 = a2;
        assert!(
            a2.cancelled
                .as_mut()
                .unwrap()
                .try_recv()
                .is_err_and(|e| e == oneshot::error::TryRecvError::Closed)
        );
        for slot in [b1, c1, d1] {
            assert!(
                slot.run(async { Some(()) }).await.is_some(),
                "other sources keep their slots"
            );
        }
        drop((a1, a2, a3));
        assert_eq!(table.pending(), 0, "dropped slots are freed");
    }
}
