//! Who a message notifies and what it links to, as Slack reads its text:
//! the control sequences of `mrkdwn` (`<@U…>`, `<!here>`, `<!channel>`,
//! `<!everyone>`, `<!subteam^S…>`, `<#C…>`, `<url|label>`), the bare URLs
//! Slack links on its own, and with `link_names` the bare `@channel`,
//! `@here`, `@everyone` and `@name` it turns into mentions. Escaped text
//! (`&lt;!channel&gt;`) is text. Also the elements of `rich_text` blocks
//! (`user`, `usergroup`, `broadcast`, `channel`, `link`), and the
//! `rich_text` block Slack makes of what a person typed.

use serde_json::{Value, json};

use super::types::{Link, Ping};

/// A piece of `mrkdwn` text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Segment {
    /// Text, still escaped as Slack stores it.
    Text(String),
    /// `<@U…>`.
    User(String),
    /// `<!here>`, `<!channel>`, `<!everyone>`: the range.
    Broadcast(&'static str),
    /// `<!subteam^S…>`.
    Subteam(String),
    /// `<#C…>`.
    Channel(String),
    /// `<url|label>` or a bare URL.
    Link { url: String, label: Option<String> },
}

/// The mentions and links found in a message.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Mentions {
    pub(crate) pings: Vec<Ping>,
    pub(crate) links: Vec<Link>,
    pub(crate) channels: Vec<String>,
}

impl Mentions {
    fn ping(&mut self, ping: Ping) {
        if !self.pings.contains(&ping) {
            self.pings.push(ping);
        }
    }

    fn add(&mut self, segment: &Segment, unfurls: bool) {
        match segment {
            Segment::Text(_) => {}
            Segment::User(id) => self.ping(Ping::User(id.clone())),
            Segment::Subteam(id) => self.ping(Ping::Subteam(id.clone())),
            Segment::Broadcast(range) => self.ping(broadcast(range)),
            Segment::Channel(id) => {
                if !self.channels.contains(id) {
                    self.channels.push(id.clone());
                }
            }
            Segment::Link { url, label } => self.links.push(Link {
                url: url.clone(),
                label: label.clone(),
                unfurls,
            }),
        }
    }

    /// Adds what `text` mentions and links; `link_names` also reads bare
    /// `@names` (`user_named` finds a user id by name); links unfurl if
    /// `unfurls`.
    pub(crate) fn scan(
        &mut self,
        text: &str,
        link_names: bool,
        unfurls: bool,
        user_named: &dyn Fn(&str) -> Option<String>,
    ) {
        for segment in segments(text) {
            if let (Segment::Text(text), true) = (&segment, link_names) {
                for name in bare_names(text) {
                    match name.as_str() {
                        "channel" | "group" => self.ping(Ping::Channel),
                        "here" => self.ping(Ping::Here),
                        "everyone" => self.ping(Ping::Everyone),
                        name => {
                            if let Some(id) = user_named(name) {
                                self.ping(Ping::User(id));
                            }
                        }
                    }
                }
            }
            self.add(&segment, unfurls);
        }
    }

    /// Adds what blocks mention and link: every `mrkdwn` text object (not
    /// `plain_text`, which Slack shows as it is) and every `rich_text`
    /// element that mentions or links. Links in blocks do not unfurl.
    pub(crate) fn scan_blocks(&mut self, value: &Value, link_names: bool, user_named: &dyn Fn(&str) -> Option<String>) {
        match value {
            Value::Array(items) => {
                for item in items {
                    self.scan_blocks(item, link_names, user_named);
                }
            }
            Value::Object(object) => {
                let kind = object.get("type").and_then(Value::as_str).unwrap_or_default();
                let text = |key: &str| object.get(key).and_then(Value::as_str).map(str::to_owned);
                match kind {
                    "mrkdwn" => {
                        let verbatim = object.get("verbatim").and_then(Value::as_bool) == Some(true);
                        if let Some(body) = text("text") {
                            self.scan(&body, link_names && !verbatim, false, user_named);
                        }
                        return;
                    }
                    "plain_text" => return,
                    "user" => {
                        if let Some(id) = text("user_id") {
                            self.ping(Ping::User(id));
                        }
                    }
                    "usergroup" => {
                        if let Some(id) = text("usergroup_id") {
                            self.ping(Ping::Subteam(id));
                        }
                    }
                    "broadcast" => match text("range").as_deref() {
                        Some("here") => self.ping(Ping::Here),
                        Some("channel") => self.ping(Ping::Channel),
                        Some("everyone") => self.ping(Ping::Everyone),
                        _ => {}
                    },
                    "link" => {
                        if let Some(url) = text("url") {
                            self.add(
                                &Segment::Link {
                                    url,
                                    label: text("text"),
                                },
                                false,
                            );
                        }
                    }
                    "channel" => {
                        if let Some(id) = text("channel_id") {
                            self.add(&Segment::Channel(id), false);
                        }
                    }
                    _ => {}
                }
                for (key, child) in object {
                    if key != "type" {
                        self.scan_blocks(child, link_names, user_named);
                    }
                }
            }
            _ => {}
        }
    }
}

fn broadcast(range: &str) -> Ping {
    match range {
        "here" => Ping::Here,
        "everyone" => Ping::Everyone,
        _ => Ping::Channel,
    }
}

/// Splits `mrkdwn` text into text, control sequences and bare URLs. An
/// unescaped `<` without a closing `>` is text.
pub(crate) fn segments(text: &str) -> Vec<Segment> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('<') {
        plain(&rest[..open], &mut out);
        let after = &rest[open + 1..];
        match after.find('>') {
            Some(close) if !after[..close].contains('<') => {
                if let Some(segment) = control(&after[..close]) {
                    out.push(segment);
                }
                rest = &after[close + 1..];
            }
            _ => {
                plain("<", &mut out);
                rest = after;
            }
        }
    }
    plain(rest, &mut out);
    out
}

/// What a control sequence `<…>` is.
fn control(inner: &str) -> Option<Segment> {
    let (target, label) = match inner.split_once('|') {
        Some((target, label)) => (target, Some(label.to_owned())),
        None => (inner, None),
    };
    let segment = if let Some(id) = target.strip_prefix('@') {
        Segment::User(id.to_owned())
    } else if let Some(id) = target.strip_prefix("!subteam^") {
        Segment::Subteam(id.to_owned())
    } else if let Some(id) = target.strip_prefix('#') {
        Segment::Channel(id.to_owned())
    } else if let Some(command) = target.strip_prefix('!') {
        match command {
            "channel" | "group" => Segment::Broadcast("channel"),
            "here" => Segment::Broadcast("here"),
            "everyone" => Segment::Broadcast("everyone"),
            // `<!date^…|fallback>` and unknown commands show their label.
            _ => return label.map(Segment::Text),
        }
    } else {
        Segment::Link {
            url: target.to_owned(),
            label,
        }
    };
    Some(segment)
}

/// Text, with the bare URLs in it as links.
fn plain(text: &str, out: &mut Vec<Segment>) {
    let mut rest = text;
    while let Some((start, end)) = bare_url(rest) {
        push_text(&rest[..start], out);
        out.push(Segment::Link {
            url: rest[start..end].to_owned(),
            label: None,
        });
        rest = &rest[end..];
    }
    push_text(rest, out);
}

fn push_text(text: &str, out: &mut Vec<Segment>) {
    if text.is_empty() {
        return;
    }
    if let Some(Segment::Text(last)) = out.last_mut() {
        last.push_str(text);
    } else {
        out.push(Segment::Text(text.to_owned()));
    }
}

/// The first bare `http://` or `https://` URL in `text`, as byte offsets:
/// it starts a word and runs to whitespace, without trailing punctuation.
fn bare_url(text: &str) -> Option<(usize, usize)> {
    let mut from = 0;
    while from < text.len() {
        let at = from + text[from..].find("http")?;
        let rest = &text[at..];
        let starts_word = text[..at]
            .chars()
            .next_back()
            .is_none_or(|before| !before.is_alphanumeric());
        if starts_word && (rest.starts_with("http://") || rest.starts_with("https://")) {
            let len = rest
                .find(|c: char| c.is_whitespace() || matches!(c, '"' | '|' | '<' | '>'))
                .unwrap_or(rest.len());
            let len = ["&lt;", "&gt;"]
                .iter()
                .filter_map(|entity| rest[..len].find(entity))
                .min()
                .unwrap_or(len);
            let url = rest[..len].trim_end_matches(['.', ',', ';', ':', '!', '?', ')', '\'']);
            if url.len() > "https://".len() {
                return Some((at, at + url.len()));
            }
        }
        from = at + "http".len();
    }
    None
}

/// The bare `@names` in text (with `link_names`): an `@` that starts a
/// word, then letters, digits, `.`, `_` and `-`.
fn bare_names(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut previous: Option<char> = None;
    for (at, c) in text.char_indices() {
        if c == '@' && previous.is_none_or(char::is_whitespace) {
            let name: String = text[at + 1..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || matches!(c, '.' | '_' | '-'))
                .collect();
            let name = name.trim_end_matches(['.', '-']).to_lowercase();
            if !name.is_empty() {
                names.push(name);
            }
        }
        previous = Some(c);
    }
    names
}

/// Undoes Slack's three escapes.
pub(crate) fn unescape(text: &str) -> String {
    text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
}

/// The `rich_text` block a Slack client sends with what a person typed.
pub(crate) fn rich_text(text: &str, block_id: &str) -> Value {
    let elements: Vec<Value> = segments(text)
        .into_iter()
        .map(|segment| match segment {
            Segment::Text(text) => json!({ "type": "text", "text": unescape(&text) }),
            Segment::User(id) => json!({ "type": "user", "user_id": id }),
            Segment::Broadcast(range) => json!({ "type": "broadcast", "range": range }),
            Segment::Subteam(id) => json!({ "type": "usergroup", "usergroup_id": id }),
            Segment::Channel(id) => json!({ "type": "channel", "channel_id": id }),
            Segment::Link { url, label } => match label {
                Some(label) => json!({ "type": "link", "url": url, "text": label }),
                None => json!({ "type": "link", "url": url }),
            },
        })
        .collect();
    json!({
        "type": "rich_text",
        "block_id": block_id,
        "elements": [{ "type": "rich_text_section", "elements": elements }],
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{Mentions, Segment, segments};
    use crate::slack::types::{Link, Ping};

    fn nobody(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn control_sequences_are_read_as_slack_reads_them() {
        let mut found = Mentions::default();
        found.scan(
            "<!channel> <@U999|bob> <https://evil.example|click> <!subteam^S1> <#C1|general> <!here|here> <!date^1|x>",
            false,
            true,
            &nobody,
        );
        assert_eq!(
            found.pings,
            [
                Ping::Channel,
                Ping::User("U999".into()),
                Ping::Subteam("S1".into()),
                Ping::Here
            ]
        );
        assert_eq!(
            found.links,
            [Link {
                url: "https://evil.example".into(),
                label: Some("click".into()),
                unfurls: true
            }]
        );
        assert_eq!(found.channels, ["C1"]);
    }

    #[test]
    fn escaped_text_and_lone_brackets_are_text() {
        let mut found = Mentions::default();
        found.scan(
            "&lt;!channel&gt; a &lt; b &gt; c &lt;@U1&gt; 1 < 2",
            false,
            true,
            &nobody,
        );
        assert_eq!(found, Mentions::default());
        assert_eq!(segments("1 < 2"), [Segment::Text("1 < 2".into())]);
    }

    #[test]
    fn bare_urls_link_and_bare_names_need_link_names() {
        let alice = |name: &str| (name == "alice").then(|| "U1".to_owned());
        let mut found = Mentions::default();
        found.scan("see https://example.com/a?b=1. @here @alice", false, false, &alice);
        assert!(found.pings.is_empty());
        assert_eq!(found.links[0].url, "https://example.com/a?b=1");
        assert!(!found.links[0].unfurls);
        let mut named = Mentions::default();
        named.scan("hi @here and @alice, not me@example.com", true, true, &alice);
        assert_eq!(named.pings, [Ping::Here, Ping::User("U1".into())]);
    }

    #[test]
    fn blocks_count_mrkdwn_and_rich_text_but_not_plain_text() {
        let blocks = json!([
            { "type": "section", "text": { "type": "plain_text", "text": "<!channel>" } },
            { "type": "context", "elements": [{ "type": "mrkdwn", "text": "<@U2>" }] },
            { "type": "rich_text", "elements": [{ "type": "rich_text_section", "elements": [
                { "type": "broadcast", "range": "everyone" },
                { "type": "link", "url": "https://x.example" }
            ] }] }
        ]);
        let mut found = Mentions::default();
        found.scan_blocks(&blocks, false, &nobody);
        assert_eq!(found.pings, [Ping::User("U2".into()), Ping::Everyone]);
        assert_eq!(found.links.len(), 1);
        assert!(!found.links[0].unfurls, "links in blocks do not unfurl");
    }
}
