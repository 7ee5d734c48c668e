//! Questions this engine has just asked, as it wrote them, so that an
//! agent's wait that follows its own question (`POST /v1/questions?wait=`,
//! MCP's `ask_user`, a `GET …?wait=` right after the `POST`) starts without
//! reading back the row it has just written.
//!
//! A wait reads its question first only to learn whose it is and whether it
//! has ended already; the waiter is registered before that read, so an end
//! after it wakes the wait. A record kept here says the same as that read
//! as long as nothing ended or changed the question since it was written,
//! so every way a question ends or changes drops it:
//! - an end in this process, through [`super::Engine::wake_waiters`], which
//!   every end passes (a resolution, an expiry, an end read elsewhere);
//! - a change another process made, as the change feed tells it
//!   ([`crate::elsewhere`]), and everything when the feed missed changes;
//! - and a change between the commit and the record's arrival here: a slot
//!   is reserved before the insert ([`Fresh::expect`]) and filled after it
//!   only if nothing dropped it meanwhile ([`Fresh::fill`]).
//!
//! The one way left, a notification lost by a replica killed between its
//! commit and its `NOTIFY`, is the same for a wait that read the row just
//! before that commit: the engine's sweep reads every waited question each
//! second ([`super::SWEEP_EVERY`]).
//!
//! It holds at most [`CAPACITY`] records, the oldest dropped first: a wait
//! follows its question by milliseconds, and a question nobody waits on
//! (polled, or answered through a callback) must not stay here.
//!
//! The replicas benchmark measured why: the wait's read was one statement
//! a cycle on PostgreSQL, on its own replica's queue when another replica
//! takes the answers (issue 28).

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, PoisonError};

use askgate_core::QuestionId;
use askgate_store::QuestionRecord;

/// The most records kept.
pub(super) const CAPACITY: usize = 1024;

/// The records, and the order they came in.
#[derive(Debug, Default)]
pub(super) struct Fresh {
    inner: Mutex<Slots>,
}

#[derive(Debug, Default)]
struct Slots {
    /// A question's slot: reserved (`None`) until its insert returned.
    by_id: HashMap<QuestionId, Slot>,
    /// Slots by age, each with the number it was reserved under (a slot
    /// dropped and reserved again has a new one; the old entry is skipped).
    order: VecDeque<(u64, QuestionId)>,
    next: u64,
}

#[derive(Debug)]
struct Slot {
    number: u64,
    record: Option<QuestionRecord>,
}

impl Fresh {
    fn lock(&self) -> std::sync::MutexGuard<'_, Slots> {
        // Every update is one insert or remove: consistent after a panic.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Reserves `id`'s slot before its insert: a drop of `id` from now on
    /// keeps [`Fresh::fill`] from filling it.
    pub(super) fn expect(&self, id: &QuestionId) {
        let mut slots = self.lock();
        let number = slots.next;
        slots.next += 1;
        slots.by_id.insert(id.clone(), Slot { number, record: None });
        slots.order.push_back((number, id.clone()));
        while slots.by_id.len() > CAPACITY {
            let Some((number, oldest)) = slots.order.pop_front() else {
                break;
            };
            if slots.by_id.get(&oldest).is_some_and(|slot| slot.number == number) {
                slots.by_id.remove(&oldest);
            }
        }
        // Entries of slots dropped since: bounded by twice the capacity.
        if slots.order.len() > 2 * CAPACITY {
            let Slots { by_id, order, .. } = &mut *slots;
            order.retain(|(number, id)| by_id.get(id).is_some_and(|slot| slot.number == *number));
        }
    }

    /// Keeps `record`, just inserted, if its slot is still reserved.
    pub(super) fn fill(&self, record: &QuestionRecord) {
        if let Some(slot) = self.lock().by_id.get_mut(&record.id)
            && slot.record.is_none()
        {
            slot.record = Some(record.clone());
        }
    }

    /// Drops `id`: it ended or changed, or its insert did not happen.
    pub(super) fn forget(&self, id: &QuestionId) {
        self.lock().by_id.remove(id);
    }

    /// Drops every record (the change feed missed changes).
    pub(super) fn forget_all(&self) {
        let mut slots = self.lock();
        slots.by_id.clear();
        slots.order.clear();
    }

    /// Takes `id`'s record, as it was written, if nothing changed it since.
    pub(super) fn take(&self, id: &QuestionId) -> Option<QuestionRecord> {
        self.lock().by_id.remove(id).and_then(|slot| slot.record)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a panic is how a test reports a failure")]

    use askgate_core::Answers;
    use askgate_core::QuestionId;
    use askgate_store::{QuestionRecord, QuestionStatus};

    use super::{CAPACITY, Fresh};

    fn id(n: usize) -> QuestionId {
        QuestionId::parse(&format!("q{n}")).unwrap()
    }

    fn record(n: usize) -> QuestionRecord {
        QuestionRecord {
            id: id(n),
            status: QuestionStatus::Pending,
            agent: "agent".to_owned(),
            session_id: None,
            run_id: None,
            recipient: "alice".to_owned(),
            surfaces: Vec::new(),
            locale: askgate_core::Locale::default(),
            expires_at: 1_000,
            request: askgate_core::validate_json(
                r#"{"questions":[{"id":"ship","header":"Ship","question":"Ship it?",
                    "options":[{"label":"Yes"},{"label":"No"}]}]}"#,
            )
            .unwrap(),
            created_at: 0,
            progress: Answers::new(),
            resolution: None,
            steps: Vec::new(),
        }
    }

    fn kept(fresh: &Fresh, n: usize) {
        fresh.expect(&id(n));
        fresh.fill(&record(n));
    }

    #[test]
    fn a_record_kept_after_its_insert_is_taken_once() {
        let fresh = Fresh::default();
        kept(&fresh, 1);
        assert_eq!(fresh.take(&id(1)).map(|record| record.id), Some(id(1)));
        assert!(fresh.take(&id(1)).is_none(), "taken twice");
    }

    #[test]
    fn a_change_between_the_insert_and_its_return_keeps_the_slot_empty() {
        let fresh = Fresh::default();
        fresh.expect(&id(1));
        fresh.forget(&id(1));
        fresh.fill(&record(1));
        assert!(fresh.take(&id(1)).is_none(), "filled a slot a change had dropped");

        // Dropped by everything the feed missed, too.
        fresh.expect(&id(2));
        fresh.forget_all();
        fresh.fill(&record(2));
        assert!(fresh.take(&id(2)).is_none());
    }

    #[test]
    fn a_record_never_reserved_is_not_kept() {
        let fresh = Fresh::default();
        fresh.fill(&record(1));
        assert!(fresh.take(&id(1)).is_none());
    }

    #[test]
    fn an_ended_or_changed_question_is_dropped() {
        let fresh = Fresh::default();
        kept(&fresh, 1);
        kept(&fresh, 2);
        fresh.forget(&id(1));
        assert!(fresh.take(&id(1)).is_none());
        assert!(fresh.take(&id(2)).is_some());
    }

    #[test]
    fn it_holds_at_most_its_capacity_the_oldest_dropped_first() {
        let fresh = Fresh::default();
        for n in 0..CAPACITY + 10 {
            kept(&fresh, n);
        }
        for n in 0..10 {
            assert!(fresh.take(&id(n)).is_none(), "q{n} outlived the capacity");
        }
        assert!(fresh.take(&id(10)).is_some());
        assert!(fresh.take(&id(CAPACITY + 9)).is_some());
    }

    #[test]
    fn slots_dropped_and_reserved_again_do_not_grow_the_order_without_bound() {
        let fresh = Fresh::default();
        for _ in 0..10 * CAPACITY {
            kept(&fresh, 1);
            fresh.forget(&id(1));
        }
        let slots = fresh.lock();
        assert!(slots.order.len() <= 2 * CAPACITY + 1, "{} entries", slots.order.len());
        assert!(slots.by_id.is_empty());
    }

    #[test]
    fn a_slot_reserved_again_is_not_dropped_by_its_old_entry() {
        let fresh = Fresh::default();
        // q0 reserved, dropped, and reserved again last: its first entry is
        // the oldest in the order, its slot the newest.
        kept(&fresh, 0);
        fresh.forget(&id(0));
        for n in 1..CAPACITY {
            kept(&fresh, n);
        }
        kept(&fresh, 0);
        kept(&fresh, CAPACITY);
        assert!(fresh.take(&id(0)).is_some(), "dropped by its stale entry");
        assert!(fresh.take(&id(1)).is_none(), "the oldest live slot was kept");
    }
}
