//! The configuration's tests: every key read, every problem named by its key.

use super::*;

fn no_env(_: &str) -> Option<String> {
    None
}

fn problems(text: &str) -> Vec<String> {
    parse(text, &no_env).unwrap_err().0.into_iter().map(|p| p.key).collect()
}

#[test]
fn the_embedded_default_is_valid() {
    let config = parse(EMBEDDED_DEFAULT, &no_env).unwrap();
    assert_eq!(config.listen.to_string(), "127.0.0.1:8080");
    assert!(config.listen.ip().is_loopback());
    assert!(
        matches!(&config.store, StoreConfig::Sqlite { path } if path == &PathBuf::from("askgate-data/askgate.db")),
        "{:?}",
        config.store
    );
    assert_eq!(config.recipients[0].surfaces[0].channel, "web");
    assert!(config.agents[0].tokens.is_empty() && config.agents[0].recipients.is_none());
    assert_eq!(config.log, LogConfig::default());
}

#[test]
fn the_example_is_valid_with_its_variables_set() {
    let env = |name: &str| Some(format!("{name}-{}", "x".repeat(32)));
    let config = parse(include_str!("../../../../config/example.toml"), &env).unwrap();
    assert_eq!(config.agents.len(), 2);
    assert_eq!(
        config.agents[0].max_timeout_seconds,
        16 * 3600,
        "{:?}",
        config.agents[0]
    );
    assert_eq!(config.agents[1].max_timeout_seconds, 3600);
    assert_eq!(
        config.agents[0].tokens[0].expose(),
        format!("CI_BOT_TOKEN-{}", "x".repeat(32))
    );
}

#[test]
fn unknown_keys_are_refused_each_by_its_key() {
    let text = "[server]\nlisten_port = 2\n[agents.a]\nrecipients = [\"*\"]\ncolour = 1\n[channels.web]\ntype = \"web\"\n[recipients.me]\nchannel = \"web\"\n";
    assert_eq!(problems(text), ["agents.a.colour", "server.listen_port"]);
}

#[test]
fn every_value_of_a_wrong_type_is_named_by_its_key_all_at_once() {
    let text = "[server]\nlisten = 8080\nmax_body_bytes = \"big\"\n[store]\nkind = 3\n\
                [agents.a]\ntoken = 5\nrecipients = \"me\"\n[channels.web]\ntype = \"web\"\n\
                [recipients.me]\nchannel = \"web\"\nlocale = 3\n";
    let problems = parse(text, &no_env).unwrap_err().0;
    let said: Vec<String> = problems.iter().map(|p| format!("{}: {}", p.key, p.what)).collect();
    for expected in [
        "server.listen: expected a string like \"127.0.0.1:8080\", got the integer 8080.",
        "server.max_body_bytes: expected a whole number like 65536, got the string \"big\".",
        "store.kind: expected a string like \"sqlite\", got the integer 3.",
        "agents.a.recipients: expected a list, got the string \"me\".",
        "agents.a.token: expected a string, got the integer 5.",
        "recipients.me.locale: expected a string like \"en\", got the integer 3.",
    ] {
        assert!(
            said.iter().any(|line| line == expected),
            "missing {expected:?} in {said:#?}"
        );
    }
    assert!(
        !said.iter().any(|line| line.contains("missing field `recipients`")),
        "a value set aside is not reported missing too: {said:#?}"
    );
    assert!(
        !said.iter().any(|line| line.starts_with("agents: no agent")),
        "the agent set aside is not reported as no agent at all: {said:#?}"
    );
    // A file that is not TOML at all still says where.
    let error = parse("[server\n", &no_env).unwrap_err();
    assert!(error.to_string().contains("line 1"), "{error}");
}

#[test]
fn every_problem_is_reported_with_its_key() {
    let text = r#"
        [server]
        listen = "localhost"
        [store]
        kind = "mysql"
        [agents.bot]
        token = "${MISSING_TOKEN}"
        recipients = ["nobody"]
        [agents.short]
        token = "abc"
        recipients = ["*"]
        [channels.chat]
        type = "irc"
        [recipients.me]
        channel = "web"
        locale = "fr"
    "#;
    assert_eq!(
        problems(text),
        [
            "server.listen",
            "store.kind",
            "channels.chat.type",
            "recipients.me.channel",
            "recipients.me.locale",
            "agents.bot.token",
            "agents.bot.recipients",
            "agents.short.token",
        ]
    );
}

#[test]
fn each_kind_reads_its_own_keys_and_unknown_kinds_are_named() {
    let base = "[agents.a]\nrecipients = [\"*\"]\n";
    let text = format!(
        "{base}[channels.web]\ntype = \"web\"\ncolour = 1\n[channels.chat]\ntype = \"irc\"\n\
         [recipients.me]\nchannel = \"web\"\nchat_id = 5\n[recipients.you]\nchannel = \"chat\"\n"
    );
    assert_eq!(
        problems(&text),
        ["channels.chat.type", "channels.web.colour", "recipients.me.chat_id"]
    );
    let message = parse(&text, &no_env).unwrap_err().to_string();
    let listed = kinds()
        .iter()
        .map(|k| format!("\"{}\"", k.kind()))
        .collect::<Vec<_>>()
        .join(", ");
    assert!(message.contains(&listed), "the fix lists the kinds: {message}");
    let ok = format!("{base}[channels.web]\ntype = \"web\"\n[recipients.me]\nchannel = \"web\"\n");
    let config = parse(&ok, &no_env).unwrap();
    assert_eq!(config.channels[0].kind(), "web");
    assert_eq!(config.recipients[0].surfaces[0].address.destination.conversation, "me");
}

#[test]
fn secrets_never_appear_in_problems_or_debug_output() {
    let text = "[agents.a]\ntoken = \"short-secret-value\"\nrecipients = [\"*\"]\n[channels.web]\ntype = \"web\"\n[recipients.me]\nchannel = \"web\"\n";
    let error = parse(text, &no_env).unwrap_err();
    assert!(!error.to_string().contains("short-secret-value"));
    let env = |_: &str| Some("s".repeat(40));
    let config = parse(&text.replace("short-secret-value", "${T}"), &env).unwrap();
    assert!(!format!("{config:?}").contains(&"s".repeat(40)));
}

#[test]
fn the_mcp_wait_is_read_defaults_to_50_seconds_and_0_is_refused() {
    let rest = "[agents.a]\nrecipients = [\"*\"]\n[channels.web]\ntype = \"web\"\n[recipients.me]\nchannel = \"web\"\n";
    assert_eq!(parse(rest, &no_env).unwrap().mcp_wait, Duration::from_secs(50));
    let config = parse(&format!("[mcp]\nwait_seconds = 7\n{rest}"), &no_env).unwrap();
    assert_eq!(config.mcp_wait, Duration::from_secs(7));
    assert_eq!(
        problems(&format!("[mcp]\nwait_seconds = 0\n{rest}")),
        ["mcp.wait_seconds"]
    );
    assert_eq!(problems(&format!("[mcp]\nwait = 5\n{rest}")), ["mcp.wait"]);
}

#[test]
fn the_mcp_session_cap_is_read_defaults_to_32_and_0_is_refused() {
    let rest = "[agents.a]\nrecipients = [\"*\"]\n[channels.web]\ntype = \"web\"\n[recipients.me]\nchannel = \"web\"\n";
    assert_eq!(parse(rest, &no_env).unwrap().mcp_max_sessions, 32);
    let config = parse(&format!("[mcp]\nmax_sessions_per_token = 3\n{rest}"), &no_env).unwrap();
    assert_eq!(config.mcp_max_sessions, 3);
    assert_eq!(
        problems(&format!("[mcp]\nmax_sessions_per_token = 0\n{rest}")),
        ["mcp.max_sessions_per_token"]
    );
}

#[test]
fn the_retention_is_read_defaults_to_30_days_and_0_keeps_everything() {
    let rest = "[agents.a]\nrecipients = [\"*\"]\n[channels.web]\ntype = \"web\"\n[recipients.me]\nchannel = \"web\"\n";
    let day = Duration::from_secs(86_400);
    assert_eq!(parse(rest, &no_env).unwrap().retention, Some(30 * day));
    let config = parse(&format!("[store]\nretention_days = 7\n{rest}"), &no_env).unwrap();
    assert_eq!(config.retention, Some(7 * day));
    let config = parse(&format!("[store]\nretention_days = 0\n{rest}"), &no_env).unwrap();
    assert_eq!(config.retention, None);
    assert_eq!(
        problems(&format!("[store]\nretention_days = -1\n{rest}")),
        ["store.retention_days"]
    );
}

#[test]
fn a_postgres_store_reads_its_url_from_the_environment_and_keys_of_the_other_kind_are_refused() {
    let rest = "[agents.a]\nrecipients = [\"*\"]\n[channels.web]\ntype = \"web\"\n[recipients.me]\nchannel = \"web\"\n";
    let url = "postgres://askgate:s3cret-pw@db.internal:5432/askgate";
    let env = |name: &str| (name == "DATABASE_URL").then(|| url.to_owned());
    let text = format!("[store]\nkind = \"postgres\"\nurl = \"${{DATABASE_URL}}\"\n{rest}");
    let config = parse(&text, &env).unwrap();
    match &config.store {
        StoreConfig::Postgres {
            url: found,
            connections,
        } => {
            assert_eq!((found.expose(), *connections), (url, 5));
        }
        other @ StoreConfig::Sqlite { .. } => panic!("expected a PostgreSQL store, got {other:?}"),
    }
    // The password is a secret: never in debug output.
    assert!(!format!("{config:?}").contains("s3cret-pw"));

    let with = |store: &str| format!("[store]\n{store}\n{rest}");
    let cases = [
        ("kind = \"postgres\"", "store.url"),
        ("kind = \"postgres\"\nurl = \"${DATABASE_URL}\"", "store.url"),
        ("kind = \"postgres\"\nurl = \"mysql://db/askgate\"", "store.url"),
        ("kind = \"postgres\"\nurl = \"not a url\"", "store.url"),
        (
            "kind = \"postgres\"\nurl = \"postgres://db/a\"\nmax_connections = 0",
            "store.max_connections",
        ),
        (
            "kind = \"postgres\"\nurl = \"postgres://db/a\"\nmax_connections = 1",
            "store.max_connections",
        ),
        (
            "kind = \"postgres\"\nurl = \"postgres://db/a\"\npath = \"x.db\"",
            "store.path",
        ),
        ("url = \"postgres://db/a\"", "store.url"),
        ("kind = \"sqlite\"\nmax_connections = 4", "store.max_connections"),
    ];
    for (store, key) in cases {
        assert_eq!(problems(&with(store)), [key], "{store}");
    }
    // A malformed URL is not repeated in the problem (it may hold a password).
    let error = parse(
        &with("kind = \"postgres\"\nurl = \"postgres://u:pw-in-url@[bad/a\""),
        &no_env,
    )
    .unwrap_err()
    .to_string();
    assert!(error.contains("store.url") && !error.contains("pw-in-url"), "{error}");
    let config = parse(
        &with("kind = \"postgres\"\nurl = \"postgres://db/a\"\nmax_connections = 2"),
        &no_env,
    );
    assert!(matches!(
        config.unwrap().store,
        StoreConfig::Postgres { connections: 2, .. }
    ));
}

#[test]
fn the_connection_limits_are_read_and_zeroes_refused() {
    let rest = "[agents.a]\nrecipients = [\"*\"]\n[channels.web]\ntype = \"web\"\n[recipients.me]\nchannel = \"web\"\n";
    let config = parse(rest, &no_env).unwrap();
    assert_eq!(config.connections, askgate_server::ConnectionLimits::default());
    let set = "[server]\nmax_connections = 20\nheader_read_timeout_seconds = 3\nidle_timeout_seconds = 7\n\
               body_timeout_seconds = 4\nshutdown_deadline_seconds = 0\n";
    let config = parse(&format!("{set}{rest}"), &no_env).unwrap();
    assert_eq!(
        config.connections,
        askgate_server::ConnectionLimits {
            header_read_timeout: Duration::from_secs(3),
            idle_timeout: Duration::from_secs(7),
            body_timeout: Duration::from_secs(4),
            max_connections: 20,
            shutdown_deadline: Duration::ZERO,
        }
    );
    let zeroes = "[server]\nmax_connections = 0\nheader_read_timeout_seconds = 0\nidle_timeout_seconds = 0\n\
                  body_timeout_seconds = 0\n";
    assert_eq!(
        problems(&format!("{zeroes}{rest}")),
        [
            "server.max_connections",
            "server.header_read_timeout_seconds",
            "server.idle_timeout_seconds",
            "server.body_timeout_seconds"
        ]
    );
}

/// The rest of a file around the section a test is about.
const WEB_ONLY: &str = "[channels.web]\ntype = \"web\"\n[recipients.me]\nchannel = \"web\"\n";

#[test]
fn an_agent_and_a_page_may_have_several_secrets_while_one_is_rotated() {
    let env = |name: &str| Some(format!("{name}-{}", "x".repeat(32)));
    let text = "[agents.ci]\ntokens = [\"${NEW}\", \"${OLD}\"]\nrecipients = [\"*\"]\n\
                [channels.web]\ntype = \"web\"\n\
                [recipients.me]\nchannel = \"web\"\nweb_keys = [\"${NEW_KEY}\", \"${OLD_KEY}\"]\n";
    let config = parse(text, &env).unwrap();
    let tokens: Vec<&str> = config.agents[0].tokens.iter().map(Secret::expose).collect();
    assert_eq!(tokens, [env("NEW").unwrap(), env("OLD").unwrap()]);
    let keys: Vec<&str> = config.recipients[0].web_keys.iter().map(Secret::expose).collect();
    assert_eq!(keys, [env("NEW_KEY").unwrap(), env("OLD_KEY").unwrap()]);
}

#[test]
fn rotation_lists_refuse_both_spellings_an_empty_list_a_repeat_and_a_shared_token() {
    let token = |n: u8| format!("\"token-{n}-{}\"", "x".repeat(32));
    assert_eq!(
        problems(&format!(
            "[agents.a]\ntoken = {}\ntokens = [{}]\nrecipients = [\"*\"]\n{WEB_ONLY}",
            token(1),
            token(2)
        )),
        ["agents.a.tokens"]
    );
    assert_eq!(
        problems(&format!("[agents.a]\ntokens = []\nrecipients = [\"*\"]\n{WEB_ONLY}")),
        ["agents.a.tokens"]
    );
    assert_eq!(
        problems(&format!(
            "[agents.a]\ntokens = [{}, {}]\nrecipients = [\"*\"]\n{WEB_ONLY}",
            token(1),
            token(1)
        )),
        ["agents.a.tokens[1]"]
    );
    assert_eq!(
        problems(&format!(
            "[agents.a]\ntokens = [{}, \"short\"]\nrecipients = [\"*\"]\n{WEB_ONLY}",
            token(1)
        )),
        ["agents.a.tokens[1]"]
    );
    let shared = format!(
        "[agents.a]\ntoken = {}\nrecipients = [\"*\"]\n[agents.b]\ntokens = [{}, {}]\nrecipients = [\"*\"]\n{WEB_ONLY}",
        token(1),
        token(2),
        token(1)
    );
    let error = parse(&shared, &no_env).unwrap_err();
    assert_eq!(
        error.0.iter().map(|p| p.key.as_str()).collect::<Vec<_>>(),
        ["agents.b.tokens"]
    );
    // Which token is shared is said by name, never by value.
    assert!(!error.to_string().contains("token-1-"), "{error}");
}

#[test]
fn the_log_section_takes_a_format_and_a_filter_and_names_a_wrong_one() {
    let config = parse(&format!("[log]\nformat = \"json\"\nlevel = \"warn,askgate_engine=debug\"\n[agents.a]\nrecipients = [\"*\"]\n{WEB_ONLY}"), &no_env).unwrap();
    assert_eq!(config.log.format, LogFormat::Json);
    assert_eq!(config.log.level, "warn,askgate_engine=debug");
    assert_eq!(
        problems(&format!(
            "[log]\nformat = \"xml\"\nlevel = \"info,=[\"\n[agents.a]\nrecipients = [\"*\"]\n{WEB_ONLY}"
        )),
        ["log.format", "log.level"]
    );
}

/// Two recipients on the page, Alice with every key about waiting.
const WAITING: &str = "[agents.a]\nrecipients = [\"*\"]\nremind = [\"2m before\"]\n\
    escalate = [{ after = 600, to = \"lead\" }]\n[channels.web]\ntype = \"web\"\n\
    [recipients.alice]\nchannel = \"web\"\nremind = [\"50%\", \"2m before\"]\n\
    escalate = [{ after = \"10m\", to = \"lead\" }, { after = \"20m\", to = \"admin\" }]\n\
    timezone = \"Europe/Berlin\"\nquiet_hours = \"22:00-07:00\"\nnotify_failures_to = \"admin\"\n\
    [channels.tg]\ntype = \"telegram\"\ntoken = \"${TG}\"\n\
    [recipients.lead]\nchannel = \"tg\"\nchat_id = 7\n[recipients.admin]\nchannel = \"tg\"\nchat_id = 8\n";

fn tg_env(name: &str) -> Option<String> {
    (name == "TG").then(|| "123456:telegram-token-for-the-config-tests".to_owned())
}

fn waiting_problems(text: &str) -> Vec<String> {
    parse(text, &tg_env).unwrap_err().0.into_iter().map(|p| p.key).collect()
}

#[test]
fn the_keys_about_waiting_are_read_and_described() {
    let config = parse(WAITING, &tg_env).unwrap();
    let alice = config.recipients.iter().find(|r| r.name == "alice").unwrap();
    let waiting = &alice.waiting;
    let remind: Vec<String> = waiting
        .nudges
        .remind
        .as_ref()
        .unwrap()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(remind, ["50%", "2m before"]);
    let ladder: Vec<(u32, &str)> = waiting
        .nudges
        .escalate
        .as_ref()
        .unwrap()
        .iter()
        .map(|step| (step.after, step.to.as_str()))
        .collect();
    assert_eq!(ladder, [(600, "lead"), (1200, "admin")]);
    assert_eq!(waiting.zone.as_ref().unwrap().name(), "Europe/Berlin");
    assert_eq!(waiting.quiet_hours.unwrap().to_string(), "22:00-07:00");
    assert_eq!(waiting.notify_failures_to.as_deref(), Some("admin"));
    let said = alice.describe();
    for part in [
        "reminds at 50%, 2m before",
        "escalates to lead after 10m, then to admin after 20m",
        "quiet 22:00-07:00 (Europe/Berlin)",
        "admin is told when a question cannot reach them",
    ] {
        assert!(said.contains(part), "{said:?} lacks {part:?}");
    }
    let agent = &config.agents[0];
    assert_eq!(agent.nudges.escalate.as_ref().unwrap()[0].after, 600);
    // A recipient with none of them says nothing of them.
    let lead = config.recipients.iter().find(|r| r.name == "lead").unwrap();
    assert!(!lead.describe().contains("remind"), "{}", lead.describe());
}

#[test]
fn every_key_about_waiting_that_cannot_be_kept_is_named() {
    let text = WAITING
        .replace("\"50%\"", "\"150%\"")
        .replace("after = \"10m\", to = \"lead\"", "after = \"2h\", to = \"lead\"")
        .replace("to = \"admin\" }]\n", "to = \"alice\" }]\n")
        .replace("Europe/Berlin", "Europe/Atlantis")
        .replace("22:00-07:00", "22:00-22:00")
        .replace("notify_failures_to = \"admin\"", "notify_failures_to = \"nobody\"")
        .replace("{ after = 600, to = \"lead\" }", "{ after = 0, to = \"ghost\" }");
    let mut said = waiting_problems(&text);
    said.sort();
    assert_eq!(
        said,
        [
            "agents.a.escalate[0].after",
            "recipients.alice.escalate[0].after",
            "recipients.alice.escalate[1].to",
            "recipients.alice.notify_failures_to",
            "recipients.alice.quiet_hours",
            "recipients.alice.remind[0]",
            "recipients.alice.timezone",
        ]
    );
    // An escalation to someone not configured names who is.
    let ghost = WAITING.replace("to = \"lead\" }]\n[channels", "to = \"ghost\" }]\n[channels");
    let problems = parse(&ghost, &tg_env).unwrap_err().0;
    let problem = problems.iter().find(|p| p.key == "agents.a.escalate[0].to").unwrap();
    assert!(
        problem.what.contains("ghost") && problem.fix.contains("admin, alice, lead"),
        "{problem:?}"
    );
    // An escalation reaches a recipient in a chat: one with only the page
    // is refused.
    let page_only = WAITING.replace(
        "[recipients.lead]\nchannel = \"tg\"\nchat_id = 7",
        "[recipients.lead]\nchannel = \"web\"",
    );
    assert_eq!(
        waiting_problems(&page_only),
        ["recipients.alice.escalate[0].to", "agents.a.escalate[0].to"]
    );
    // An escalation must come before the longest wait an agent may ask
    // for: an agent allowed a day makes a recipient's 2-hour step keepable.
    let longer = text_with_long_agent();
    assert!(parse(&longer, &tg_env).is_ok(), "{:?}", parse(&longer, &tg_env).err());
}

fn text_with_long_agent() -> String {
    WAITING
        .replace("after = \"10m\", to = \"lead\"", "after = \"2h\", to = \"lead\"")
        .replace("recipients = [\"*\"]\n", "recipients = [\"*\"]\nmax_timeout = \"1d\"\n")
}

#[test]
fn an_agents_max_timeout_is_a_duration_or_seconds_from_an_hour_to_a_week() {
    let with = |value: &str| {
        format!(
            "[agents.a]\nrecipients = [\"*\"]\n{value}\n[channels.web]\ntype = \"web\"\n[recipients.me]\nchannel = \"web\"\n"
        )
    };
    let read = |value: &str| parse(&with(value), &no_env).unwrap().agents[0].max_timeout_seconds;
    assert_eq!(read(""), 3600);
    assert_eq!(read("max_timeout = \"8h\""), 28_800);
    assert_eq!(read("max_timeout = \"1d12h\""), 129_600);
    assert_eq!(read("max_timeout = \"7d\""), 604_800);
    assert_eq!(read("max_timeout = 7200"), 7200);
    assert_eq!(read("max_timeout = \"1h\""), 3600);
    for (value, says) in [
        ("max_timeout = \"8d\"", "at most 7 days"),
        ("max_timeout = 604801", "at most 7 days"),
        ("max_timeout = -5", "at most 7 days"),
        ("max_timeout = \"30m\"", "30m is shorter than an hour"),
        ("max_timeout = 0", "0s is shorter than an hour"),
        ("max_timeout = \"8 hours\"", "duration \"8 hours\""),
        ("max_timeout = \"\"", "it is empty"),
        ("max_timeout = 1.5", "got the float 1.5"),
    ] {
        let problems = parse(&with(value), &no_env).unwrap_err().0;
        assert_eq!(problems.len(), 1, "{value}: {problems:?}");
        assert_eq!(problems[0].key, "agents.a.max_timeout", "{value}");
        assert!(problems[0].what.contains(says), "{value}: {}", problems[0].what);
        assert!(problems[0].fix.contains("\"7d\""), "{value}: {}", problems[0].fix);
    }
}

#[test]
fn callbacks_are_read_their_hosts_allowed_and_a_bad_url_host_or_secret_refused() {
    let rest = "[channels.web]\ntype = \"web\"\n[recipients.me]\nchannel = \"web\"\n";
    let text = format!(
        "[agents.a]\nrecipients = [\"*\"]\ncallback_url = \"https://Hooks.Example.com/askgate\"\ncallback_hosts = [\"other.example.com\"]\nwebhook_secret = \"${{S}}\"\n{rest}"
    );
    let env = |name: &str| (name == "S").then(|| "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".to_owned());
    let config = parse(&text, &env).unwrap();
    let callbacks = &config.agents[0].callbacks;
    assert_eq!(callbacks.url.as_deref(), Some("https://Hooks.Example.com/askgate"));
    assert!(callbacks.enabled());
    // callback_url's host, lower-cased, and the listed ones.
    assert_eq!(callbacks.hosts, ["hooks.example.com", "other.example.com"]);
    assert!(callbacks.secret.is_some());
    assert!(!format!("{config:?}").contains("MfKQ9r8"));

    let plain = parse(&format!("[agents.a]\nrecipients = [\"*\"]\n{rest}"), &no_env).unwrap();
    assert!(!plain.agents[0].callbacks.enabled());

    assert_eq!(
        problems(&format!(
            "[agents.a]\nrecipients = [\"*\"]\ncallback_url = \"hooks.example.com\"\ncallback_hosts = [\"https://x/\"]\nwebhook_secret = \"not-a-whsec-secret-at-all\"\n{rest}"
        )),
        [
            "agents.a.callback_url",
            "agents.a.callback_hosts[0]",
            "agents.a.webhook_secret"
        ]
    );
}
