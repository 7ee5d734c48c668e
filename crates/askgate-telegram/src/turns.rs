//! [`Turns`]: the messages to each chat, sent one at a time and in order,
//! by one task per chat that has messages waiting.
//!
//! teloxide's `Throttle` holds each message until its chat's rate allows it
//! (one a second, 20 a minute), but its queue is shared by every chat and
//! bounded (about 60 requests): a burst to one person would fill it, and
//! every other chat's messages would wait behind it for minutes. Here a chat
//! has at most one message in that queue, and the rest wait in the chat's
//! own line. Taking a place in the line is synchronous, so messages keep
//! the order in which they were queued — a reply to a person's message comes
//! after the replies to their earlier ones.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

/// How long a chat's task waits for another message before it ends.
const IDLE: Duration = Duration::from_secs(30);

type Job = Pin<Box<dyn Future<Output = ()> + Send>>;
type Lines = HashMap<String, mpsc::UnboundedSender<Job>>;

/// The lines of messages waiting, by chat. Cheap to clone: clones share them.
#[derive(Debug, Clone, Default)]
pub(crate) struct Turns {
    lines: Arc<Mutex<Lines>>,
}

/// The chat's task ended before the message's turn came (the runtime is
/// shutting down); the message was not sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LineClosed;

impl Turns {
    /// Sends with `send` in `chat`'s turn, and returns what it returned.
    pub(crate) async fn send<T: Send + 'static>(
        &self,
        chat: &str,
        send: impl Future<Output = T> + Send + 'static,
    ) -> Result<T, LineClosed> {
        let (done, result) = oneshot::channel();
        self.queue(chat, async move {
            // The caller may have stopped waiting; the message went anyway.
            let _ = done.send(send.await);
        });
        result.await.map_err(|_| LineClosed)
    }

    /// Queues `send` for `chat`'s turn, and returns at once.
    pub(crate) fn queue(&self, chat: &str, send: impl Future<Output = ()> + Send + 'static) {
        let job: Job = Box::pin(send);
        let mut lines = lock(&self.lines);
        // A line in the map has a live task: the task leaves the map, under
        // this lock, before it stops receiving.
        let job = match lines.get(chat) {
            Some(line) => match line.send(job) {
                Ok(()) => return,
                Err(mpsc::error::SendError(job)) => job,
            },
            None => job,
        };
        let (line, jobs) = mpsc::unbounded_channel();
        // The receiver is alive: it is right here.
        let _ = line.send(job);
        lines.insert(chat.to_owned(), line);
        tokio::spawn(self.clone().work(chat.to_owned(), jobs));
    }

    async fn work(self, chat: String, mut jobs: mpsc::UnboundedReceiver<Job>) {
        loop {
            let job = match tokio::time::timeout(IDLE, jobs.recv()).await {
                Ok(Some(job)) => job,
                Ok(None) => return,
                Err(_idle) => {
                    let mut lines = lock(&self.lines);
                    match jobs.try_recv() {
                        Ok(job) => job,
                        Err(_) => {
                            lines.remove(&chat);
                            return;
                        }
                    }
                }
            };
            job.await;
        }
    }

    /// How many chats have a task right now.
    #[cfg(test)]
    fn chats(&self) -> usize {
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
        let turns = Turns::default();
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
                async move {
                    sent.lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push("bob".to_owned());
                    7
                }
            })
            .await;
        assert_eq!(bob, Ok(7));
        assert_eq!(*sent.lock().unwrap_or_else(PoisonError::into_inner), ["bob"]);
        let last = turns.send("alice", async {}).await;
        assert_eq!(last, Ok(()));
        assert_eq!(
            *sent.lock().unwrap_or_else(PoisonError::into_inner),
            ["bob", "alice 0", "alice 1", "alice 2"]
        );
        // Quiet chats' tasks end.
        assert_eq!(turns.chats(), 2);
        tokio::time::sleep(IDLE + Duration::from_secs(1)).await;
        assert_eq!(turns.chats(), 0);
        // And a chat gets a new one when it needs it.
        assert_eq!(turns.send("alice", async { 1 }).await, Ok(1));
    }
}
