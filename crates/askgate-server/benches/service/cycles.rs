//! Full ask → wait → answer cycles with K in flight.
//!
//! K workers each loop: the agent creates a question in the worker's own
//! session (`POST /v1/questions`), then at once waits for it
//! (`GET /v1/questions/{id}?wait=60`, sent first) while the person answers
//! it on the web page's API (`POST /web/{key}/api/questions/{id}/answer`);
//! the cycle ends when the agent's wait returns, and its answer is checked
//! to be exactly the one given. Workers start in batches (so that the
//! listener's accept queue never overflows: a dropped SYN is retried after a
//! second), run a warm-up, then a window during which cycles, commits and
//! CPU time are counted; then they finish the cycle they are in and stop.
//!
//! The agent's wait is sent before the answer, on another connection; on a
//! loaded server it can still be read after the answer is committed, and
//! then returns at once. Such a cycle counts as any other: its latency still
//! runs from the answer's POST being sent to the agent having its response.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::Result;
use crate::app::Service;
use crate::client::{Answer, Client, LONG_POLL_TIMEOUT, REQUEST_TIMEOUT};
use crate::stats::Cpu;

/// Workers started at once.
const RAMP_BATCH: usize = 100;
/// The pause between two batches.
const RAMP_PAUSE: Duration = Duration::from_millis(20);
/// Problems kept word for word (the rest are counted).
const PROBLEMS_KEPT: usize = 5;

/// How long each part of a phase lasts.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timing {
    pub(crate) warmup: Duration,
    pub(crate) window: Duration,
}

/// One cycle, as the client saw it.
#[derive(Debug, Clone, Copy)]
struct Cycle {
    /// The agent's `POST /v1/questions` was sent.
    created: Instant,
    /// The answer's POST was sent.
    answer_sent: Instant,
    /// The answer's POST had its response.
    answer_returned: Instant,
    /// The waiting agent had its response.
    agent_received: Instant,
}

/// What a phase measured.
#[derive(Debug, Default)]
pub(crate) struct Phase {
    pub(crate) in_flight: usize,
    /// Cycles completed within the window, and the window's length.
    pub(crate) cycles: u64,
    pub(crate) window: Duration,
    /// Cycles completed in the whole phase, all checked.
    pub(crate) checked: usize,
    /// Commits of askgate's store within the window.
    pub(crate) commits: u64,
    /// CPU time within the window.
    pub(crate) cpu: Cpu,
    /// Of the cycles whose answer was sent within the window: answer POST
    /// sent → waiting agent has its response.
    pub(crate) sent_to_agent: Vec<Duration>,
    /// Answer POST returned → waiting agent has its response, 0 when the
    /// agent was first (counted in `agent_first`).
    pub(crate) returned_to_agent: Vec<Duration>,
    pub(crate) agent_first: usize,
    /// The answer POST's round trip.
    pub(crate) answer_post: Vec<Duration>,
    /// The whole cycle: create sent → agent has the answer.
    pub(crate) cycle: Vec<Duration>,
    /// Cycles whose agent did not get exactly its answer.
    pub(crate) wrong: usize,
    pub(crate) problems: Vec<String>,
}

impl Phase {
    pub(crate) fn cycles_per_second(&self) -> f64 {
        crate::stats::u64_f64(self.cycles) / self.window.as_secs_f64()
    }

    pub(crate) fn commits_per_cycle(&self) -> f64 {
        crate::stats::u64_f64(self.commits) / crate::stats::u64_f64(self.cycles.max(1))
    }

    /// Adds another round of the same phase: counts, windows and CPU time
    /// summed, samples pooled.
    #[allow(dead_code, reason = "the replicas benchmark's, which runs a phase in rounds")]
    pub(crate) fn absorb(&mut self, other: Self) {
        self.cycles += other.cycles;
        self.window += other.window;
        self.checked += other.checked;
        self.commits += other.commits;
        self.cpu = self.cpu.plus(other.cpu);
        self.sent_to_agent.extend(other.sent_to_agent);
        self.returned_to_agent.extend(other.returned_to_agent);
        self.agent_first += other.agent_first;
        self.answer_post.extend(other.answer_post);
        self.cycle.extend(other.cycle);
        self.wrong += other.wrong;
        let room = PROBLEMS_KEPT.saturating_sub(self.problems.len());
        self.problems.extend(other.problems.into_iter().take(room));
    }

    /// CPU time per cycle in the window: the whole process's, and askgate's.
    pub(crate) fn cpu_per_cycle(&self) -> (Duration, Duration) {
        let cycles = u32::try_from(self.cycles.max(1)).unwrap_or(u32::MAX);
        (self.cpu.total / cycles, self.cpu.server() / cycles)
    }
}

#[derive(Default)]
struct Control {
    stop: AtomicBool,
    completed: AtomicU64,
}

/// Runs a phase of `in_flight` workers: the agent asks and waits through
/// `agent`, the person answers through `person` (the same service, or
/// another replica on the same database); `service`'s commits are counted.
pub(crate) async fn run(
    agent: &Arc<Client>,
    person: &Arc<Client>,
    service: &Service,
    in_flight: usize,
    timing: Timing,
) -> Result<Phase> {
    let (phase, (), ()) = run_marked(agent, person, service, in_flight, timing, async || Ok(())).await?;
    Ok(phase)
}

/// [`run`], calling `mark` just before the window opens and just after it
/// closes (to read counters of the window alone, not of the warm-up or the
/// last cycles' drain): the phase, and what `mark` read at both ends.
pub(crate) async fn run_marked<M>(
    agent: &Arc<Client>,
    person: &Arc<Client>,
    service: &Service,
    in_flight: usize,
    timing: Timing,
    mark: impl AsyncFn() -> Result<M>,
) -> Result<(Phase, M, M)> {
    let control = Arc::new(Control::default());
    let mut workers = tokio::task::JoinSet::new();
    let mut started = 0;
    while started < in_flight {
        for worker in started..(started + RAMP_BATCH).min(in_flight) {
            let (agent, person, control) = (agent.clone(), person.clone(), control.clone());
            workers.spawn(async move { work(&agent, &person, &control, in_flight, worker).await });
        }
        started = (started + RAMP_BATCH).min(in_flight);
        tokio::time::sleep(RAMP_PAUSE).await;
    }
    tokio::time::sleep(timing.warmup).await;

    let marked_before = mark().await?;
    let (start, cycles_before, commits_before, cpu_before) = (
        Instant::now(),
        control.completed.load(Ordering::Relaxed),
        service.commits(),
        Cpu::now()?,
    );
    tokio::time::sleep(timing.window).await;
    let (end, cycles_after, commits_after, cpu_after) = (
        Instant::now(),
        control.completed.load(Ordering::Relaxed),
        service.commits(),
        Cpu::now()?,
    );
    let marked_after = mark().await?;
    control.stop.store(true, Ordering::Relaxed);

    let mut phase = Phase {
        in_flight,
        cycles: cycles_after - cycles_before,
        window: end - start,
        commits: commits_after - commits_before,
        cpu: cpu_after.since(cpu_before),
        ..Phase::default()
    };
    let limit = LONG_POLL_TIMEOUT + REQUEST_TIMEOUT * 2;
    while let Some(worker) = tokio::time::timeout(limit, workers.join_next())
        .await
        .map_err(|_| format!("a worker did not finish its cycle within {limit:?}"))?
    {
        let (cycles, wrong) = worker??;
        phase.checked += cycles.len();
        phase.wrong += wrong.len();
        phase.problems.extend(
            wrong
                .into_iter()
                .take(PROBLEMS_KEPT.saturating_sub(phase.problems.len())),
        );
        for cycle in cycles.iter().filter(|cycle| (start..end).contains(&cycle.answer_sent)) {
            phase
                .sent_to_agent
                .push(cycle.agent_received.saturating_duration_since(cycle.answer_sent));
            match cycle.agent_received.checked_duration_since(cycle.answer_returned) {
                Some(latency) => phase.returned_to_agent.push(latency),
                None => {
                    phase.agent_first += 1;
                    phase.returned_to_agent.push(Duration::ZERO);
                }
            }
            phase
                .answer_post
                .push(cycle.answer_returned.saturating_duration_since(cycle.answer_sent));
            phase
                .cycle
                .push(cycle.agent_received.saturating_duration_since(cycle.created));
        }
    }
    Ok((phase, marked_before, marked_after))
}

/// One worker: cycles until told to stop. Returns its cycles and, for each
/// one whose agent did not get exactly its answer, why.
async fn work(
    client: &Client,
    person: &Client,
    control: &Control,
    phase: usize,
    worker: usize,
) -> Result<(Vec<Cycle>, Vec<String>)> {
    // One session per worker: its cycles follow one another, so the rule of
    // one pending question per session never refuses one.
    let session = format!("bench-{phase}-{worker}");
    let mut cycles = Vec::new();
    let mut wrong = Vec::new();
    let mut index = 0;
    while !control.stop.load(Ordering::Relaxed) {
        let created = Instant::now();
        let id = client
            .create(Some(&session), &format!("{phase}-{worker}-{index}"))
            .await?;
        let answer = Answer::for_cycle(phase, worker, index);
        // The agent's wait is polled first, so its request goes out first.
        let (waited, answered) = tokio::join!(client.wait(&id), async {
            let sent = Instant::now();
            person.answer(&id, &answer).await.map(|returned| (sent, returned))
        });
        let (agent_received, resource) = waited?;
        let (answer_sent, answer_returned) = answered?;
        if let Err(problem) = answer.check(&resource) {
            wrong.push(format!("question {id}: {problem}"));
        }
        cycles.push(Cycle {
            created,
            answer_sent,
            answer_returned,
            agent_received,
        });
        control.completed.fetch_add(1, Ordering::Relaxed);
        index += 1;
    }
    Ok((cycles, wrong))
}
