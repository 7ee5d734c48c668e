//! The deployment files, checked without a container engine or a systemd
//! running: the systemd unit passes `systemd-analyze verify` (and its
//! offline security review), the Dockerfile's runtime stage and the
//! container configuration agree, the compose file's replicas share one
//! configuration behind a proxy that lists them all, and every metric the
//! Grafana dashboard queries is one a real askgate serves.
#![allow(
    clippy::print_stdout,
    reason = "a test's report goes to its captured stdout, shown by `--nocapture` and on failure"
)]

use crate::support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Command, Output};

use serde_json::{Value, json};
use support::{ASKGATE, ME_KEY, POLL_TIMEOUT, Server, repo_root};

/// The worst `systemd-analyze security` exposure the unit may have (0 is
/// fully locked down, 10 is unprotected; what is left is the network, which
/// askgate exists to use).
const MAX_EXPOSURE: f64 = 2.0;

fn read(relative: &str) -> String {
    let path = repo_root().join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

fn output_text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

// ── systemd ────────────────────────────────────────────────────────────────

/// `systemd-analyze`, installed with apt when it is missing (the check
/// never passes by being skipped).
fn systemd_analyze() -> &'static str {
    const TOOL: &str = "systemd-analyze";
    let _setup = support::setup_lock();
    if Command::new(TOOL).arg("--version").output().is_ok() {
        return TOOL;
    }
    let installed = Command::new("timeout")
        .args(["600", "apt-get", "install", "-y", "--no-install-recommends", "systemd"])
        .env("DEBIAN_FRONTEND", "noninteractive")
        .output()
        .expect("apt-get runs");
    assert!(
        installed.status.success(),
        "systemd-analyze is missing and `apt-get install systemd` failed: {}",
        output_text(&installed)
    );
    Command::new(TOOL)
        .arg("--version")
        .output()
        .expect("systemd-analyze runs after `apt-get install systemd`");
    TOOL
}

/// A file system root holding `unit` as /etc/systemd/system/askgate.service,
/// the programs it runs and the targets it names: `systemd-analyze --root`
/// checks the unit there, not against whatever the host has installed.
fn unit_root(unit: &str) -> tempfile::TempDir {
    let root = tempfile::tempdir().expect("a temporary directory");
    let at = |path: &str| root.path().join(path);
    for dir in [
        "etc/systemd/system",
        "usr/lib/systemd/system",
        "usr/local/bin",
        "usr/bin",
    ] {
        std::fs::create_dir_all(at(dir)).expect("a directory in the root");
    }
    // Merged /usr, as on current distributions: ExecReload's /bin/kill.
    std::os::unix::fs::symlink("usr/bin", at("bin")).expect("the /bin link");
    std::fs::write(at("etc/systemd/system/askgate.service"), unit).expect("the unit is written");
    // A copy, not a symlink: systemd resolves a link's absolute target inside
    // --root, where the cargo target directory does not exist.
    std::fs::copy(ASKGATE, at("usr/local/bin/askgate")).expect("the binary is copied into the root");
    let kill = ["/usr/bin/kill", "/bin/kill"]
        .into_iter()
        .find(|path| Path::new(path).exists())
        .expect("kill(1) is installed (procps)");
    std::fs::copy(kill, at("usr/bin/kill")).expect("kill is copied into the root");
    for target in ["sysinit", "basic", "shutdown", "network-online", "multi-user"] {
        std::fs::write(
            at(&format!("usr/lib/systemd/system/{target}.target")),
            format!("[Unit]\nDescription={target}\n"),
        )
        .expect("a target is written");
    }
    root
}

fn verify(root: &Path) -> Output {
    Command::new(systemd_analyze())
        .arg("verify")
        .arg(format!("--root={}", root.display()))
        .arg("/etc/systemd/system/askgate.service")
        .output()
        .expect("systemd-analyze verify runs")
}

#[test]
fn the_systemd_unit_verifies_clean() {
    let unit = read("deploy/askgate.service");
    let root = unit_root(&unit);
    let verified = verify(root.path());
    let said = output_text(&verified);
    assert!(
        verified.status.success() && said.trim().is_empty(),
        "systemd-analyze verify deploy/askgate.service ({}): {said}",
        verified.status
    );

    // The same check sees a mistake (an unknown key is only a warning, with
    // exit status 0: the output is what tells).
    let broken = unit_root(&unit.replace("ProtectHome=yes", "ProtectHome=yes\nProtectHomme=yes"));
    let said = output_text(&verify(broken.path()));
    assert!(
        said.contains("ProtectHomme"),
        "verify let an unknown key through: {said:?}"
    );
}

#[test]
fn the_systemd_unit_is_sandboxed() {
    let unit = read("deploy/askgate.service");
    let keys: BTreeMap<&str, Vec<&str>> = unit
        .lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| line.split_once('='))
        .fold(BTreeMap::new(), |mut keys, (key, value)| {
            keys.entry(key.trim()).or_default().push(value.trim());
            keys
        });
    let value = |key: &str| keys.get(key).map(|values| values.join(" ")).unwrap_or_default();
    assert_eq!(
        value("ExecStart"),
        "/usr/local/bin/askgate serve --config /etc/askgate/askgate.toml"
    );
    assert_eq!(value("ExecReload"), "/bin/kill -HUP $MAINPID");
    assert_eq!(value("Type"), "simple", "askgate does not speak sd_notify");
    for (key, expected) in [
        ("DynamicUser", "yes"),
        ("StateDirectory", "askgate"),
        ("ConfigurationDirectory", "askgate"),
        ("EnvironmentFile", "-/etc/askgate/env"),
        ("NoNewPrivileges", "yes"),
        ("MemoryDenyWriteExecute", "yes"),
        ("CapabilityBoundingSet", ""),
        ("Restart", "on-failure"),
    ] {
        assert_eq!(value(key), expected, "{key}");
    }
    // askgate's shutdown deadline is 10 s by default: systemd must wait longer.
    let stop: u64 = value("TimeoutStopSec").parse().expect("TimeoutStopSec in seconds");
    assert!(stop > 10, "TimeoutStopSec={stop} cuts the graceful shutdown short");
    // The connection cap (4,096 by default) needs as many open files.
    let nofile: u64 = value("LimitNOFILE").parse().expect("LimitNOFILE is a number");
    assert!(
        nofile >= 4096 + 64,
        "LimitNOFILE={nofile} is below the default connection cap"
    );

    let root = unit_root(&unit);
    let review = Command::new(systemd_analyze())
        .args(["security", "--offline=true", "--no-pager"])
        .arg(format!("--root={}", root.path().display()))
        .arg("/etc/systemd/system/askgate.service")
        .output()
        .expect("systemd-analyze security runs");
    let said = output_text(&review);
    let exposure: f64 = said
        .lines()
        .find_map(|line| line.split_once("Overall exposure level for askgate.service:"))
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .and_then(|number| number.parse().ok())
        .unwrap_or_else(|| panic!("no overall exposure in: {said}"));
    println!("systemd-analyze security: askgate.service exposure {exposure}");
    assert!(exposure <= MAX_EXPOSURE, "exposure {exposure} > {MAX_EXPOSURE}: {said}");
}

// ── Dockerfile ─────────────────────────────────────────────────────────────

/// One instruction: its keyword (upper case) and its arguments, continuation
/// lines joined.
#[derive(Debug)]
struct Instruction {
    keyword: String,
    args: String,
}

/// The Dockerfile's instructions, split into stages at each FROM (the
/// ARGs before the first FROM are stage 0's `global` list).
fn dockerfile() -> (Vec<Instruction>, Vec<Vec<Instruction>>) {
    let text = read("Dockerfile");
    let mut logical = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('#') || (trimmed.is_empty() && current.is_empty()) {
            continue;
        }
        if let Some(part) = trimmed.strip_suffix('\\') {
            current.push_str(part);
            current.push(' ');
        } else {
            current.push_str(trimmed);
            logical.push(std::mem::take(&mut current));
        }
    }
    let mut global = Vec::new();
    let mut stages: Vec<Vec<Instruction>> = Vec::new();
    for line in logical {
        let (keyword, args) = line.split_once(char::is_whitespace).unwrap_or((&line, ""));
        let instruction = Instruction {
            keyword: keyword.to_uppercase(),
            args: args.split_whitespace().collect::<Vec<_>>().join(" "),
        };
        if instruction.keyword == "FROM" {
            stages.push(vec![instruction]);
        } else if let Some(stage) = stages.last_mut() {
            stage.push(instruction);
        } else {
            global.push(instruction);
        }
    }
    (global, stages)
}

fn args_of<'a>(stage: &'a [Instruction], keyword: &str) -> Vec<&'a str> {
    stage
        .iter()
        .filter(|instruction| instruction.keyword == keyword)
        .map(|instruction| instruction.args.as_str())
        .collect()
}

fn one<'a>(stage: &'a [Instruction], keyword: &str) -> &'a str {
    let found = args_of(stage, keyword);
    assert_eq!(found.len(), 1, "the runtime stage has one {keyword}: {found:?}");
    found[0]
}

/// A `[workspace.package]` key of the root Cargo.toml.
fn workspace_package(key: &str) -> String {
    let manifest: toml::Table = toml::from_str(&read("Cargo.toml")).expect("Cargo.toml parses");
    manifest["workspace"]["package"][key]
        .as_str()
        .unwrap_or_else(|| panic!("[workspace.package] {key}"))
        .to_owned()
}

/// A TOML file of the repository.
fn toml_file(relative: &str) -> toml::Table {
    toml::from_str(&read(relative)).unwrap_or_else(|error| panic!("{relative}: {error}"))
}

/// The port of a configuration's `[server] listen`.
fn listen_port(config: &toml::Table) -> u16 {
    let listen = config["server"]["listen"].as_str().expect("[server] listen");
    listen
        .rsplit_once(':')
        .and_then(|(_, port)| port.parse().ok())
        .unwrap_or_else(|| panic!("no port in listen = {listen:?}"))
}

#[test]
fn the_dockerfile_builds_the_pinned_toolchain_and_runs_unprivileged() {
    let (global, stages) = dockerfile();
    assert!(stages.len() >= 2, "a build stage and a runtime stage");

    // The build stage uses the toolchain the workspace declares.
    let rust_version = workspace_package("rust-version");
    assert!(
        args_of(&global, "ARG").contains(&format!("RUST_VERSION={rust_version}").as_str()),
        "ARG RUST_VERSION={rust_version} before the first FROM: {global:?}"
    );
    let build = &stages[0];
    assert_eq!(build[0].args, "rust:${RUST_VERSION}-bookworm AS build");
    let runs = args_of(build, "RUN").join("\n");
    assert!(runs.contains("cargo build --release --locked -p askgate"), "{runs}");
    assert!(
        runs.contains("--mount=type=cache"),
        "the build caches its dependencies: {runs}"
    );

    let runtime = stages.last().expect("a runtime stage");
    assert!(
        runtime[0].args.starts_with("debian:bookworm-slim") || runtime[0].args.starts_with("gcr.io/distroless/cc"),
        "a small runtime image: {}",
        runtime[0].args
    );
    // Not root, by a fixed number (a volume's owner reads the same everywhere).
    let user = one(runtime, "USER");
    let uid: u32 = user
        .split(':')
        .next()
        .and_then(|uid| uid.parse().ok())
        .expect("USER is numeric");
    assert_ne!(uid, 0, "USER {user}");
    assert!(
        args_of(runtime, "RUN")
            .join(" ")
            .contains(&format!("chown {user} /data")),
        "/data belongs to the user"
    );

    // The image's configuration: copied where CMD reads it, listening on the
    // port it exposes, keeping its data in the volume.
    let copies = args_of(runtime, "COPY");
    assert!(
        copies.contains(&"deploy/askgate.container.toml /etc/askgate/askgate.toml"),
        "{copies:?}"
    );
    assert_eq!(one(runtime, "ENTRYPOINT"), r#"["askgate"]"#);
    assert_eq!(
        one(runtime, "CMD"),
        r#"["serve", "--config", "/etc/askgate/askgate.toml"]"#
    );
    let config = toml_file("deploy/askgate.container.toml");
    let port = listen_port(&config);
    assert_eq!(one(runtime, "EXPOSE"), port.to_string());
    assert!(
        config["server"]["listen"]
            .as_str()
            .is_some_and(|listen| listen.starts_with("0.0.0.0:")),
        "a container listens on every interface"
    );
    let data_dir = config["server"]["data_dir"].as_str().expect("data_dir");
    assert_eq!(one(runtime, "VOLUME"), format!(r#"["{data_dir}"]"#));
    let healthcheck = one(runtime, "HEALTHCHECK");
    assert!(healthcheck.ends_with(r#"CMD ["askgate", "health"]"#), "{healthcheck}");
    // `askgate health` asks http://127.0.0.1:8080 unless told otherwise.
    assert_eq!(port, 8080, "askgate health's default URL names port 8080");

    let labels = args_of(runtime, "LABEL").join(" ");
    for label in ["source", "licenses", "version"] {
        assert!(
            labels.contains(&format!("org.opencontainers.image.{label}=")),
            "{labels}"
        );
    }
    assert!(labels.contains(&format!("licenses=\"{}\"", workspace_package("license"))));
    assert!(
        args_of(runtime, "ARG").contains(&format!("VERSION={}", workspace_package("version")).as_str()),
        "the version label's default is the workspace's version"
    );

    // The files the image is built from are all in the build context.
    let ignored = read(".dockerignore");
    for needed in [
        "Cargo.toml",
        "Cargo.lock",
        "crates",
        "config",
        "tests",
        "deploy/askgate.container.toml",
    ] {
        assert!(
            !ignored.lines().any(|line| line.trim() == needed),
            "{needed} is left out of the build context"
        );
    }
}

#[test]
fn the_container_configuration_passes_check_config() {
    let checked = Command::new(ASKGATE)
        .arg("check-config")
        .arg(repo_root().join("deploy/askgate.container.toml"))
        .env_clear()
        .output()
        .expect("askgate check-config runs");
    let said = output_text(&checked);
    assert!(checked.status.success(), "{said}");
    assert!(said.contains("listening on 0.0.0.0:8080"), "{said}");
}

// ── compose ────────────────────────────────────────────────────────────────

fn compose() -> serde_yaml_ng::Value {
    let mut compose: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(&read("deploy/compose.yaml")).expect("compose.yaml parses");
    compose.apply_merge().expect("compose.yaml's merge keys apply");
    compose
}

fn strings(value: &serde_yaml_ng::Value) -> Vec<String> {
    value
        .as_sequence()
        .map(|items| {
            items
                .iter()
                .filter_map(|item| item.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// The `${NAME}` references of a configuration text.
fn env_references(text: &str) -> BTreeSet<String> {
    text.split("${")
        .skip(1)
        .filter_map(|rest| rest.split_once('}').map(|(name, _)| name.to_owned()))
        .collect()
}

#[test]
fn compose_runs_two_replicas_of_one_configuration_behind_the_proxy() {
    let compose = compose();
    let services = compose["services"].as_mapping().expect("services");
    let replicas: Vec<(&str, &serde_yaml_ng::Value)> = services
        .iter()
        .filter_map(|(name, service)| Some((name.as_str()?, service)))
        .filter(|(_, service)| service.get("build").is_some())
        .collect();
    assert_eq!(replicas.len(), 2, "two askgate replicas built from the Dockerfile");

    let config_text = read("deploy/compose/askgate.toml");
    let config: toml::Table = toml::from_str(&config_text).expect("deploy/compose/askgate.toml parses");
    assert_eq!(config["store"]["kind"].as_str(), Some("postgres"));
    assert_eq!(config["store"]["url"].as_str(), Some("${DATABASE_URL}"));
    assert!(
        config["server"].get("public_url").is_some(),
        "links name the proxy's address"
    );
    let port = listen_port(&config);

    for (name, service) in &replicas {
        assert_eq!(service["build"]["context"].as_str(), Some(".."), "{name}");
        assert_eq!(service["build"]["dockerfile"].as_str(), Some("Dockerfile"), "{name}");
        assert_eq!(
            strings(&service["volumes"]),
            ["./compose/askgate.toml:/etc/askgate/askgate.toml:ro"],
            "{name} runs the shared configuration, read-only"
        );
        assert_eq!(
            service["depends_on"]["postgres"]["condition"].as_str(),
            Some("service_healthy"),
            "{name}"
        );
        // Every ${NAME} the configuration reads is given, and no secret is
        // written into compose.yaml itself.
        let environment = service["environment"].as_mapping().expect("environment");
        for reference in env_references(&config_text) {
            let given = environment
                .get(reference.as_str())
                .and_then(serde_yaml_ng::Value::as_str)
                .unwrap_or_else(|| panic!("{name} does not set {reference}"));
            assert!(given.contains("${"), "{name}'s {reference} is written out: {given}");
        }
    }
    assert!(
        compose["services"]["postgres"]["healthcheck"].get("test").is_some(),
        "the database has a healthcheck"
    );
    assert!(
        strings(&compose["services"]["postgres"]["volumes"])
            .iter()
            .any(|volume| volume.ends_with(":/var/lib/postgresql/data")),
        "the database keeps its data in a volume"
    );

    // The proxy: published, its Caddyfile mounted, every replica an upstream.
    let proxy = &compose["services"]["proxy"];
    assert_eq!(strings(&proxy["ports"]).len(), 1, "the proxy is published on one port");
    assert!(
        strings(&proxy["volumes"]).contains(&"./compose/Caddyfile:/etc/caddy/Caddyfile:ro".to_owned()),
        "{proxy:?}"
    );
    let caddyfile = read("deploy/compose/Caddyfile");
    let upstreams: BTreeSet<&str> = caddyfile
        .lines()
        .filter_map(|line| line.trim().strip_prefix("to "))
        .flat_map(str::split_whitespace)
        .collect();
    let expected: BTreeSet<String> = replicas.iter().map(|(name, _)| format!("{name}:{port}")).collect();
    assert_eq!(
        upstreams,
        expected.iter().map(String::as_str).collect(),
        "the proxy balances over every replica"
    );
    for directive in ["lb_policy round_robin", "health_uri /readyz", "flush_interval -1"] {
        assert!(caddyfile.contains(directive), "the Caddyfile lacks {directive}");
    }
    for sticky in ["cookie", "ip_hash", "client_ip_hash", "header"] {
        assert!(
            !caddyfile.contains(&format!("lb_policy {sticky}")),
            "no sticky sessions: lb_policy {sticky}"
        );
    }

    // Every variable compose requires is documented in .env.example.
    let example = read("deploy/.env.example");
    let documented: BTreeSet<&str> = example
        .lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| line.split_once('=').map(|(name, _)| name.trim()))
        .collect();
    let text = read("deploy/compose.yaml");
    for reference in env_references(&text) {
        let name = reference.split([':', '-']).next().unwrap_or(&reference);
        assert!(documented.contains(name), "{name} is not in deploy/.env.example");
    }
}

// ── Grafana ────────────────────────────────────────────────────────────────

/// The metric names a Prometheus query reads.
fn metric_names(expr: &str) -> BTreeSet<String> {
    expr.match_indices("askgate_")
        .filter(|(at, _)| {
            !expr[..*at]
                .chars()
                .next_back()
                .is_some_and(|before| before.is_ascii_alphanumeric() || before == '_')
        })
        .map(|(at, _)| {
            expr[at..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect()
        })
        .collect()
}

fn dashboard() -> Value {
    serde_json::from_str(&read("deploy/grafana/askgate.json")).expect("the dashboard is JSON")
}

fn dashboard_exprs(dashboard: &Value) -> Vec<String> {
    let mut exprs = Vec::new();
    for panel in dashboard["panels"].as_array().expect("panels") {
        for target in panel["targets"].as_array().into_iter().flatten() {
            exprs.push(target["expr"].as_str().expect("a target's expr").to_owned());
        }
    }
    exprs
}

#[test]
fn the_dashboard_is_importable() {
    let dashboard = dashboard();
    assert!(dashboard["schemaVersion"].as_u64().is_some_and(|version| version >= 36));
    assert_eq!(dashboard["__inputs"][0]["name"], "DS_PROMETHEUS");
    for panel in dashboard["panels"].as_array().expect("panels") {
        if panel["type"] == "row" {
            continue;
        }
        assert_eq!(panel["datasource"]["uid"], "${DS_PROMETHEUS}", "{}", panel["title"]);
        assert!(
            panel["targets"].as_array().is_some_and(|targets| !targets.is_empty()),
            "{} queries nothing",
            panel["title"]
        );
    }
    let exprs = dashboard_exprs(&dashboard);
    let queried: BTreeSet<String> = exprs.iter().flat_map(|expr| metric_names(expr)).collect();
    // The panels the dashboard promises.
    for needed in [
        "askgate_http_requests_total",
        "askgate_http_request_duration_seconds_bucket",
        "askgate_questions_created_total",
        "askgate_questions_ended_total",
        "askgate_questions_pending",
        "askgate_time_to_answer_seconds_bucket",
        "askgate_deliveries_total",
        "askgate_delivery_errors_total",
        "askgate_channel_up",
        "askgate_store_write_failures_total",
        "askgate_build_info",
    ] {
        assert!(queried.contains(needed), "no panel reads {needed}: {queried:?}");
    }
    assert!(metric_names("rate(askgate_a_total[5m]) / x_askgate_b") == BTreeSet::from(["askgate_a_total".to_owned()]));
}

/// Every metric the dashboard queries is a family of the right type in a
/// real askgate's /metrics, once a question was asked and answered on the
/// page (a labelled family shows once it has a sample): a `_total` a
/// counter's, a `_bucket` a histogram's, any other name a gauge.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_metric_the_dashboard_queries_is_served() {
    let server = Server::start();
    let asked = server
        .create(&json!({
            "to": "me",
            "questions": [{
                "id": "target",
                "header": "Deploy",
                "question": "Where should this build go?",
                "options": [{"label": "Staging"}, {"label": "Production"}],
            }],
        }))
        .await;
    let id = asked["id"].as_str().expect("the question has an id");
    let (status, answered) = server.web_choose(ME_KEY, id, "target", 1).await;
    assert_eq!(status, 200, "{answered}");
    server.question_with_status(id, "answered", POLL_TIMEOUT).await;

    let reply = server.get_reply("/metrics", None).await;
    assert_eq!(reply.status, 200);
    let families: BTreeMap<&str, &str> = reply
        .text
        .lines()
        .filter_map(|line| line.strip_prefix("# TYPE "))
        .filter_map(|line| line.split_once(' '))
        .collect();

    let mut missing = BTreeSet::new();
    for name in dashboard_exprs(&dashboard()).iter().flat_map(|expr| metric_names(expr)) {
        let (family, kind) = if let Some(family) = name.strip_suffix("_bucket") {
            (family.to_owned(), "histogram")
        } else if let Some(family) = name.strip_suffix("_total") {
            (family.to_owned(), "counter")
        } else {
            (name.clone(), "gauge")
        };
        if families.get(family.as_str()) != Some(&kind) {
            missing.insert(format!("{name} (# TYPE {family} {kind})"));
        }
    }
    assert!(
        missing.is_empty(),
        "the dashboard queries metrics askgate does not serve: {missing:?}\n/metrics families: {families:?}"
    );
}
