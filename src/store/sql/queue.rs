//! A store's queue of redeems waiting to be committed in a group, and the
//! count of the leaders taking groups from it (see [`super::group`]).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::oneshot;

use crate::store::{RedeemOutcome, RedemptionPlan};
use crate::Result;

/// One queued redeem and where its answer goes.
pub(crate) type Member = (RedemptionPlan, oneshot::Sender<Result<RedeemOutcome>>);

/// A store's queue of redeems. Cheap to clone: clones share the queue.
#[derive(Clone, Default)]
pub(crate) struct RedeemQueue {
    state: Arc<Mutex<State>>,
}

#[derive(Default)]
struct State {
    waiting: VecDeque<Member>,
    leaders: usize,
}

impl RedeemQueue {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues `member`; a [`Leader`] for the caller to run when fewer than
    /// `most` leaders run now.
    pub(crate) fn push(&self, member: Member, most: usize) -> Option<Leader> {
        let mut state = self.state();
        state.waiting.push_back(member);
        (state.leaders < most).then(|| {
            state.leaders += 1;
            Leader {
                queue: self.clone(),
                counted: true,
            }
        })
    }
}

impl std::fmt::Debug for RedeemQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.state();
        f.debug_struct("RedeemQueue")
            .field("waiting", &state.waiting.len())
            .field("leaders", &state.leaders)
            .finish()
    }
}

/// The right to take groups from a queue, counted among its leaders while
/// it lives.
pub(crate) struct Leader {
    queue: RedeemQueue,
    /// Still counted among the leaders.
    counted: bool,
}

impl Leader {
    /// The redeems queued now, `most` at most; `None` when there are none,
    /// and then this leader is no longer counted — under the queue's lock,
    /// so that a redeem queued after this finds too few leaders and starts
    /// one.
    pub(crate) fn next_group(&mut self, most: usize) -> Option<Vec<Member>> {
        let mut state = self.queue.state();
        let n = state.waiting.len().min(most);
        if n == 0 {
            state.leaders -= 1;
            self.counted = false;
            return None;
        }
        Some(state.waiting.drain(..n).collect())
    }
}

/// A leader cut short (its runtime shutting down, a panic) is counted out
/// too; when it was the last, the redeems still queued are dropped, so that
/// their callers hear "not run" rather than wait for nobody.
impl Drop for Leader {
    fn drop(&mut self) {
        if !self.counted {
            return;
        }
        let mut state = self.queue.state();
        state.leaders -= 1;
        if state.leaders == 0 {
            state.waiting.clear();
        }
    }
}
