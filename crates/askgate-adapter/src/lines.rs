//! [`SendLines`]: the messages to each conversation, sent one at a time and
//! in order, by one task per conversation that has messages waiting.
//!
//! A platform's client may hold each message until its conversation's rate
//! allows it (teloxide's `Throttle`: one a second, 20 a minute), but its
//! queue is shared by every conversation and bounded: a burst to one person
//! would fill it, and every other conversation's messages would wait behind
//! it for minutes. Here a conversation has at most one message in that
//! queue, and the rest wait in the conversation's own line. Taking a place in
//! the line is synchronous, so messages keep the order in which they were
//! queued — a reply to a person's message comes after the replies to their
//! earlier ones.
//!
//! A send the platform refused with a rate limit is waited out and sent
//! again in its turn ([`SendLines::send`]), because the platform's own limiter
//! may be off (serenity's must be, to reach a fake platform).

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use askgate_core::ChannelError;
use tokio::sync::{mpsc, oneshot};

/// How long a conversation's task waits for another message before it ends.
const IDLE: Duration = Duration::from_secs(30);

/// How many times one send is retried after a rate limit before its error
/// is returned.
const RATE_LIMIT_RETRIES: u32 = 5;

type Job = Pin<Box<dyn Future<Output = ()> + Send>>;
type Lines = HashMap<String, mpsc::UnboundedSender<Job>>;

/// The lines of messages waiting, by conversation. Cheap to clone: clones
/// share them.
#[derive(Debug, Clone, Default)]
pub struct SendLines {
    lines: Arc<Mutex<Lines>>,
}

impl SendLines {
    /// Sends with `send` in `conversation`'s turn, and returns what it
    /// returned. A [`ChannelError::RateLimited`] is waited out and `send`
    /// called again, still in the turn, up to [`RATE_LIMIT_RETRIES`] times.
    pub async fn send<T, F, Fut>(&self, conversation: &str, mut send: F) -> Result<T, ChannelError>
    where
        T: Send + 'static,
        F: FnMut() -> Fut + Send + 'static,
        Fut: Future<Output = Result<T, ChannelError>> + Send,
    {
        let (done, result) = oneshot::channel();
        self.queue(conversation, async move {
            let mut retries = 0;
            let outcome = loop {
                match send().await {
                    Err(ChannelError::RateLimited { retry_after }) if retries < RATE_LIMIT_RETRIES => {
                        retries += 1;
                        tracing::debug!(
                            ?retry_after,
                            retries,
                            "rate limited; sending again after the platform's delay"
                        );
                        tokio::time::sleep(retry_after).await;
                    }
                    outcome => break outcome,
                }
            };
            // The caller may have stopped waiting; the message went anyway.
            let _ = done.send(outcome);
        });
        result.await.unwrap_or_else(|_| {
            // The conversation's task ended before the message's turn came:
            // the runtime is shutting down, and the message was not sent.
            Err(ChannelError::Unavailable {
                reason: "askgate is shutting down".into(),
            })
        })
    }

    /// Queues `send` for `conversation`'s turn, and returns at once.
    pub fn queue(&self, conversation: &str, send: impl Future<Output = ()> + Send + 'static) {
        let job: Job = Box::pin(send);
        let mut lines = lock(&self.lines);
        // A line in the map has a live task: the task leaves the map, under
        // this lock, before it stops receiving.
        let job = match lines.get(conversation) {
            Some(line) => match line.send(job) {
                Ok(()) => return,
                Err(mpsc::error::SendError(job)) => job,
            },
            None => job,
        };
        let (line, jobs) = mpsc::unbounded_channel();
        // The receiver is alive: it is right here.
        let _ = line.send(job);
        lines.insert(conversation.to_owned(), line);
        tokio::spawn(self.clone().work(conversation.to_owned(), jobs));
    }

    async fn work(self, conversation: String, mut jobs: mpsc::UnboundedReceiver<Job>) {
        loop {
            let job = match tokio::time::timeout(IDLE, jobs.recv()).await {
                Ok(Some(job)) => job,
                Ok(None) => return,
                Err(_idle) => {
                    let mut lines = lock(&self.lines);
                    match jobs.try_recv() {
                        Ok(job) => job,
                        Err(_) => {
                            lines.remove(&conversation);
                            return;
                        }
                    }
                }
            };
            job.await;
        }
    }

    /// How many conversations have a task right now.
    #[cfg(test)]
    fn conversations(&self) -> usize {
        lock(&self.lines).len()
    }
}

fn lock(lines: &Mutex<Lines>) -> MutexGuard<'_, Lines> {
    // Every change is one insert or remove: the map stays whole even if a holder panicked.
    lines.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_chat_sends_in_order_and_others_do_not_wait_for_it() {
        let turns = SendLines::default();
        let sent = Arc::new(Mutex::new(Vec::new()));
        for n in 0..3 {
            let sent = Arc::clone(&sent);
            turns.queue("alice", async move {
                // Each message waits out Alice's rate.
                tokio::time::sleep(Duration::from_secs(1)).await;
                sent.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(format!("alice {n}"));
            });
        }
        let bob = turns
            .send("bob", {
                let sent = Arc::clone(&sent);
                move || {
                    let sent = Arc::clone(&sent);
                    async move {
                        sent.lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .push("bob".to_owned());
                        Ok(7)
                    }
                }
            })
            .await;
        assert_eq!(bob, Ok(7));
        assert_eq!(*sent.lock().unwrap_or_else(PoisonError::into_inner), ["bob"]);
        let last = turns.send("alice", || async { Ok(()) }).await;
        assert_eq!(last, Ok(()));
        assert_eq!(
            *sent.lock().unwrap_or_else(PoisonError::into_inner),
            ["bob", "alice 0", "alice 1", "alice 2"]
        );
        // Quiet chats' tasks end.
        assert_eq!(turns.conversations(), 2);
        tokio::time::sleep(IDLE + Duration::from_secs(1)).await;
        assert_eq!(turns.conversations(), 0);
        // And a chat gets a new one when it needs it.
        assert_eq!(turns.send("alice", || async { Ok(1) }).await, Ok(1));
    }

    #[tokio::test(start_paused = true)]
    async fn a_rate_limited_send_is_waited_out_and_sent_again_in_its_turn() {
        let lines = SendLines::default();
        let attempts = Arc::new(Mutex::new(Vec::new()));
        let started = tokio::time::Instant::now();
        let result = lines
            .send("alice", {
                let attempts = Arc::clone(&attempts);
                move || {
                    let attempts = Arc::clone(&attempts);
                    async move {
                        let mut attempts = attempts.lock().unwrap_or_else(PoisonError::into_inner);
                        attempts.push(started.elapsed());
                        if attempts.len() < 3 {
                            Err(ChannelError::RateLimited {
                                retry_after: Duration::from_secs(4),
                            })
                        } else {
                            Ok("sent")
                        }
                    }
                }
            })
            .await;
        assert_eq!(result, Ok("sent"));
        assert_eq!(
            *attempts.lock().unwrap_or_else(PoisonError::into_inner),
            [Duration::ZERO, Duration::from_secs(4), Duration::from_secs(8)]
        );
        // Other errors are returned as they are, at once.
        let refused = lines
            .send("alice", || async {
                Err::<(), _>(ChannelError::Rejected {
                    reason: "chat not found".into(),
                })
            })
            .await;
        assert!(matches!(refused, Err(ChannelError::Rejected { .. })));
    }
}
