//! The real binary while chat platforms fail: unreachable (a closed port)
//! or answering 500 when askgate starts, coming back later, refusing a
//! webhook before taking it, or answering with an error body of a
//! gigabyte. askgate serves throughout (the web page, `/v1`, MCP), says
//! where each channel stands (`/readyz`, `askgate_channel_up`), tries
//! again with its backoff, delivers what waited once the platform is back,
//! and reads no answer past its bound.
// Helpers panic on purpose: a panic is how a test reports a failure.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::future::Future;
use std::time::{Duration, Instant};

use askgate_testkit::discord::{DiscordUser, FakeDiscord};
use askgate_testkit::slack::FakeSlack;
use askgate_testkit::telegram::{FakeTelegram, TgChat, TgUser};
use serde_json::{Value, json};
use support::chat::{deploy, report_if_failing};
use support::{AGENT_TOKEN, ME_KEY, Server, metric, until};

/// Alice in Telegram: her user id, and her private chat's.
const ALICE_TG: i64 = 4242;
const ALICE_DC: u64 = 411_111_111_111_111_111;
const ALICE_SL: &str = "U0ALICE001";
/// What askgate tells Telegram its public address is (webhook mode).
const PUBLIC_URL: &str = "https://askgate.test";
const WEBHOOK_SECRET: &str = "e2e-webhook-secret-0123456789abcdefghijkl";
/// How long a step may take before the test fails.
const PATIENCE: Duration = Duration::from_secs(30);
/// A proxy's error page: a gigabyte, made as it is sent.
const GIGABYTE: u64 = 1 << 30;
/// How much askgate's peak memory may grow while it is answered with one:
/// far below the gigabyte a whole read costs, and far above what the
/// allocator's per-thread heaps add on a busy machine (8 MiB was passed by
/// 4 KiB there, with two builds running beside the suite).
const MEMORY_MARGIN_KIB: u64 = 64 * 1024;
/// An error body askgate reads whole: just under its bound (2 MiB).
const UNDER_THE_BOUND: u64 = 2 * 1024 * 1024 - 4096;
/// How many of those are answered before askgate's peak memory is taken:
/// the allocator takes memory in segments of megabytes, per thread, the
/// first times an answer that large is read; after that, reading one costs
/// nothing more, and neither may a gigabyte.
const WARM_UPS: usize = 3;

fn telegram(api: &str, mode: &str) -> String {
    format!(
        "\n[channels.tg]\ntype = \"telegram\"\ntoken = \"{token}\"\napi_url = \"{api}\"\n{mode}\n\
         [recipients.alice_tg]\nchannel = \"tg\"\nchat_id = {ALICE_TG}\ndisplay_name = \"Alice\"\n",
        token = askgate_testkit::telegram::TOKEN,
    )
}

fn discord(api: &str) -> String {
    format!(
        "\n[channels.dc]\ntype = \"discord\"\ntoken = \"{token}\"\napi_url = \"{api}\"\nmode = \"gateway\"\n\n\
         [recipients.alice_dc]\nchannel = \"dc\"\nuser_id = \"{ALICE_DC}\"\ndisplay_name = \"Alice\"\n",
        token = askgate_testkit::discord::TOKEN,
    )
}

fn slack(api: &str) -> String {
    format!(
        "\n[channels.sl]\ntype = \"slack\"\nbot_token = \"{bot}\"\napi_url = \"{api}\"\nmode = \"socket\"\n\
         app_token = \"{app}\"\n\n\
         [recipients.alice_sl]\nchannel = \"sl\"\nuser_id = \"{ALICE_SL}\"\ndisplay_name = \"Alice\"\n",
        bot = askgate_testkit::slack::BOT_TOKEN,
        app = askgate_testkit::slack::APP_TOKEN,
    )
}

/// A loopback port nothing listens on (bound, then let go).
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
    listener.local_addr().unwrap().port()
}

/// A "platform" answering every request `500 Internal Server Error`.
async fn failing_platform() -> (String, tokio::task::JoinHandle<()>) {
    let app = axum::Router::new()
        .fallback(|| async { (axum::http::StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error") });
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (url, task)
}

/// `/readyz`, which must say ready: the store takes writes, whatever the platforms do.
async fn readiness(server: &Server) -> Value {
    let (status, ready) = server.get("/readyz", None).await;
    assert_eq!((status, &ready["status"]), (200, &json!("ready")), "{ready}");
    ready
}

/// `askgate_channel_up{channel}` now.
async fn channel_up(server: &Server, channel: &str) -> Option<f64> {
    let text = server.get_reply("/metrics", None).await.text;
    metric(&text, &format!("askgate_channel_up{{channel=\"{channel}\"}}"))
}

/// The process's peak resident memory (`VmHWM`), in KiB.
fn peak_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|line| line.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// The page, `/v1` and MCP all serve, and a question to the page is answered there.
async fn everything_but_the_chats_serves(server: &Server) {
    let (status, health) = server.get("/healthz", None).await;
    assert_eq!((status, health), (200, json!({"status": "ok"})));
    let page = server.get_reply(&format!("/web/{ME_KEY}"), None).await;
    assert_eq!(page.status, 200, "the web page: {}", page.text);
    let (status, agent) = server.get("/v1/agent", Some(AGENT_TOKEN)).await;
    assert_eq!(status, 200, "{agent}");
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "askgate-tests", "version": "0"}},
    });
    let mcp = server
        .http()
        .post(server.url("/mcp"))
        .header("Accept", "application/json, text/event-stream")
        .bearer_auth(AGENT_TOKEN)
        .json(&initialize)
        .send()
        .await
        .unwrap();
    assert_eq!(mcp.status().as_u16(), 200, "MCP initialize: {mcp:?}");
    let asked = server.create(&deploy("me")).await;
    let id = asked["id"].as_str().unwrap();
    let (status, answered) = server.web_choose(ME_KEY, id, "deploy", 1).await;
    assert_eq!(status, 200, "{answered}");
    server.question_with_status(id, "answered", PATIENCE).await;
}

/// With every chat platform out of reach (`api` unreachable or failing):
/// askgate serves, and each chat channel is `connecting`, with the reason,
/// in `/readyz` and the metric, and tried again with the backoff.
async fn serves_with_every_platform_down(api: &str, reason: &str) {
    let started = Instant::now();
    let mut server = Server::start_with(
        "",
        &(telegram(api, "") + discord(api.trim_end_matches('/')).as_str() + slack(api.trim_end_matches('/')).as_str()),
    );
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "askgate took {:?} to serve",
        started.elapsed()
    );
    everything_but_the_chats_serves(&server).await;

    let ready = until("every chat channel's first attempt", PATIENCE, || async {
        let ready = readiness(&server).await;
        ["tg", "dc", "sl"]
            .iter()
            .all(|channel| ready["channels"][channel]["reason"].is_string())
            .then_some(ready)
    })
    .await;
    assert_eq!(ready["channels"]["web"], json!({"state": "up"}), "{ready}");
    for (channel, platform) in [("tg", "Telegram"), ("dc", "Discord"), ("sl", "Slack")] {
        let state = &ready["channels"][channel];
        assert_eq!(state["state"], "connecting", "{ready}");
        let said = state["reason"].as_str().unwrap();
        assert!(
            said.starts_with(&format!("could not reach {platform}")) && said.contains(reason),
            "{channel}: {said}"
        );
        assert_eq!(channel_up(&server, channel).await, Some(0.0), "{channel}");
    }
    assert_eq!(channel_up(&server, "web").await, Some(1.0));

    // Tried again, with the backoff, and still serving meanwhile.
    let log = until("Discord tried three times", PATIENCE, || {
        let log = server.stderr();
        async move {
            let tries = log
                .lines()
                .filter(|line| line.contains("channel=dc") && line.contains("trying again"))
                .count();
            (tries >= 3).then_some(log)
        }
    })
    .await;
    assert!(
        !log.contains(askgate_testkit::telegram::TOKEN) && !log.contains(askgate_testkit::slack::BOT_TOKEN),
        "a token in the log"
    );
    everything_but_the_chats_serves(&server).await;
    report_if_failing(&mut server, Vec::new);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_every_platform_unreachable_askgate_serves_and_says_where_each_channel_stands() {
    let closed = format!("http://127.0.0.1:{}/", free_port());
    serves_with_every_platform_down(&closed, "Connection refused").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_every_platform_answering_500_askgate_serves_and_says_where_each_channel_stands() {
    let (failing, _platform) = failing_platform().await;
    serves_with_every_platform_down(&failing, "500").await;
}

/// Telegram is down when askgate starts, and Alice's only surface is
/// there: her question waits, pending (its delivery retried), and is
/// delivered once Telegram is back; the channel turns `up` and her tap is
/// taken (polling runs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_waiting_for_a_platform_down_at_start_is_delivered_once_it_is_back() {
    let port = free_port();
    let mut server = Server::start_with("", &telegram(&format!("http://127.0.0.1:{port}/"), ""));
    let ready = readiness(&server).await;
    assert_eq!(ready["channels"]["tg"]["state"], "connecting", "{ready}");

    let asked = server.create(&deploy("alice_tg")).await;
    let id = asked["id"].as_str().unwrap().to_owned();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let waiting = server.question(&id).await;
    assert_eq!(waiting["status"], "pending", "{waiting}");
    assert_eq!(waiting["deliveries"][0]["status"], "sending", "{waiting}");

    // Telegram comes back, on the address askgate was given.
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await.unwrap();
    let fake = FakeTelegram::start_on(listener);
    let dm = TgChat::private(ALICE_TG);
    fake.add_chat(&dm);
    let prompt = until("the prompt in Alice's chat", PATIENCE, || async {
        fake.messages().get(&ALICE_TG).and_then(|sent| {
            sent.iter()
                .find(|m| m["reply_markup"].to_string().contains(&id))
                .cloned()
        })
    })
    .await;
    until("the channel up", PATIENCE, || async {
        (readiness(&server).await["channels"]["tg"] == json!({"state": "up"})).then_some(())
    })
    .await;
    assert_eq!(channel_up(&server, "tg").await, Some(1.0));

    let message = prompt["message_id"].as_i64().unwrap();
    fake.tap(&TgUser::new(ALICE_TG, "Alice"), &dm, message, &format!("ag1:{id}:1"));
    let answered = server.question_with_status(&id, "answered", PATIENCE).await;
    assert_eq!(answered["deliveries"][0]["status"], "delivered", "{answered}");
    assert_eq!(
        answered["result"]["answers"]["answers"]["deploy"],
        json!(["Production"])
    );
    report_if_failing(&mut server, || {
        vec![("the fake's calls", format!("{:#?}", fake.calls()))]
    });
}

/// `setWebhook` fails twice (500), then succeeds: askgate keeps serving,
/// says why the channel is not up yet, tries again, and the webhook ends up set.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_refused_twice_with_500_is_set_at_the_third_try() {
    let fake = FakeTelegram::start().await;
    for _ in 0..2 {
        fake.fail_next("setWebhook", askgate_testkit::telegram::Failure::ServerError);
    }
    let mode = format!("mode = \"webhook\"\nsecret_token = \"{WEBHOOK_SECRET}\"\n");
    let mut server = Server::start_with(
        &format!("public_url = \"{PUBLIC_URL}\""),
        &telegram(&fake.api_url(), &mode),
    );
    everything_but_the_chats_serves(&server).await;
    let said = until(
        "the failed registration in /readyz",
        Duration::from_secs(60),
        || async {
            let ready = readiness(&server).await;
            let tg = &ready["channels"]["tg"];
            tg["reason"]
                .as_str()
                .filter(|reason| reason.starts_with("registering the webhook"))
                .map(|reason| (tg["state"].clone(), reason.to_owned()))
        },
    )
    .await;
    assert_eq!(said.0, "connecting");
    assert!(said.1.contains("500"), "{}", said.1);

    let webhook = until("the webhook set", Duration::from_secs(60), || async { fake.webhook() }).await;
    assert_eq!(webhook.url, format!("{PUBLIC_URL}/telegram/tg"));
    assert_eq!(webhook.secret_token.as_deref(), Some(WEBHOOK_SECRET));
    assert_eq!(fake.calls_to("setWebhook").len(), 3);
    until("the channel up", PATIENCE, || async {
        (readiness(&server).await["channels"]["tg"] == json!({"state": "up"})).then_some(())
    })
    .await;
    let log = server.stderr();
    let retries = log
        .lines()
        .filter(|line| line.contains("could not register the channel's webhook; trying again"))
        .count();
    assert_eq!(retries, 2, "{log}");
    report_if_failing(&mut server, || {
        vec![("the fake's calls", format!("{:#?}", fake.calls()))]
    });
}

/// After a platform answered a send with a gigabyte: askgate's peak memory
/// grew by no more than [`MEMORY_MARGIN_KIB`] (it grows by the gigabyte when
/// the body is read whole), it logged the failure on a short line naming
/// the bound (the last failure logged), and every line of its log is short.
fn assert_bounded(server: &mut Server, peak_before: u64, channel: &str) {
    let grown = peak_kib(server.pid()).saturating_sub(peak_before);
    assert!(
        grown < MEMORY_MARGIN_KIB,
        "askgate's peak memory grew by {grown} KiB on a gigabyte's answer"
    );
    let log = server.stderr();
    let failed = log
        .lines()
        .rev()
        .find(|line| {
            line.contains("delivery failed")
                && (line.contains(&format!("channel={channel}")) || line.contains(&format!("channel=\"{channel}\"")))
        })
        .unwrap_or_else(|| panic!("no failed delivery logged: {log}"));
    assert!(failed.contains("larger than 2 MiB"), "{failed}");
    let longest = log.lines().map(str::len).max().unwrap_or(0);
    assert!(longest < 2000, "a log line of {longest} bytes");
}

/// Warms askgate up with [`WARM_UPS`] answers just under the bound (each
/// failed once with `fail(warm_status, UNDER_THE_BOUND)`), then fails one
/// send with a gigabyte (`fail(huge_status, GIGABYTE)`): the prompt is still
/// delivered by the retry, and askgate's peak memory and log stay bounded.
async fn a_gigabyte_is_read_no_further_than_the_bound<T, P, F>(
    server: &mut Server,
    recipient: &str,
    channel: &str,
    (warm_status, huge_status): (u16, u16),
    fail: impl Fn(u16, u64),
    delivered: impl Fn(String) -> P,
) where
    P: FnMut() -> F,
    F: Future<Output = Option<T>>,
{
    for _ in 0..WARM_UPS {
        fail(warm_status, UNDER_THE_BOUND);
        let warm_up = server.create(&deploy(recipient)).await["id"]
            .as_str()
            .unwrap()
            .to_owned();
        until("a prompt after an answer under the bound", PATIENCE, delivered(warm_up)).await;
    }
    let before = peak_kib(server.pid());
    fail(huge_status, GIGABYTE);
    let second = server.create(&deploy(recipient)).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    until("the prompt, after the retry", PATIENCE, delivered(second.clone())).await;
    assert_eq!(server.question(&second).await["status"], "pending");
    assert_bounded(server, before, channel);
}

/// Telegram answers a send with a 500 whose body is a gigabyte: askgate
/// reads 2 MiB of it, retries as for any 5xx, and delivers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gigabyte_error_from_telegram_costs_no_memory_and_is_retried() {
    let fake = FakeTelegram::start().await;
    fake.add_chat(&TgChat::private(ALICE_TG));
    let mut server = Server::start_with("", &telegram(&fake.api_url(), ""));
    let delivered = |id: String| {
        let fake = &fake;
        move || {
            let id = id.clone();
            async move {
                fake.messages().get(&ALICE_TG).and_then(|sent| {
                    sent.iter()
                        .find(|m| m["reply_markup"].to_string().contains(&id))
                        .cloned()
                })
            }
        }
    };
    // Warmed up with answers just under the bound (HTTP 200, not Telegram's
    // JSON: teloxide reads them whole, and askgate retries at once).
    let fail = |status, bytes| {
        fake.fail_next(
            "sendMessage",
            askgate_testkit::telegram::Failure::Huge { status, bytes },
        );
    };
    a_gigabyte_is_read_no_further_than_the_bound(&mut server, "alice_tg", "tg", (200, 500), fail, delivered).await;
}

/// Discord answers a send with a 500 whose body is a gigabyte.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gigabyte_error_from_discord_costs_no_memory_and_is_retried() {
    let fake = FakeDiscord::start().await;
    let alice = DiscordUser::new(ALICE_DC, "alice").with_global_name("Alice");
    fake.add_user(&alice);
    let dm = fake.dm_channel(&alice);
    let mut server = Server::start_with("", &discord(&fake.api_url()));
    let delivered = |id: String| {
        let fake = &fake;
        move || {
            let id = id.clone();
            async move {
                fake.messages(dm.id)
                    .into_iter()
                    .find(|message| format!("{:?}", message.rows).contains(&id))
            }
        }
    };
    let fail = |status, bytes| {
        fake.fail_next(
            "POST /channels/{channel_id}/messages",
            askgate_testkit::discord::Failure::Huge { status, bytes },
        );
    };
    a_gigabyte_is_read_no_further_than_the_bound(&mut server, "alice_dc", "dc", (500, 500), fail, delivered).await;
}

/// Slack (or a proxy in front of it) answers a post with a 502 whose body
/// is a gigabyte.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gigabyte_error_from_slack_costs_no_memory_and_is_retried() {
    let fake = FakeSlack::start().await;
    let alice = fake.user(ALICE_SL, "Alice");
    let dm = fake.dm(&alice);
    let mut server = Server::start_with("", &slack(&fake.api_url()));
    let delivered = |id: String| {
        let (fake, dm) = (&fake, dm.clone());
        move || {
            let (id, dm) = (id.clone(), dm.clone());
            async move {
                fake.messages(&dm)
                    .into_iter()
                    .find(|message| message.blocks.to_string().contains(&id))
            }
        }
    };
    let fail = |status, bytes| {
        fake.fail_next(
            "chat.postMessage",
            askgate_testkit::slack::Failure::Huge { status, bytes },
        );
    };
    a_gigabyte_is_read_no_further_than_the_bound(&mut server, "alice_sl", "sl", (502, 502), fail, delivered).await;
}
