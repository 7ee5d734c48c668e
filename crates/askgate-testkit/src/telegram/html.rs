//! Telegram's HTML parse mode, after `TDLib`'s parser: its tags, four named
//! character references and numeric ones; anything else that starts with `<`
//! is an error. What comes out is the text without its markup and its
//! entities, with UTF-16 offsets.

use serde_json::{Value, json};

use super::entities::{Entity, utf16_len};

const TAGS: &[&str] = &[
    "a",
    "b",
    "strong",
    "i",
    "em",
    "s",
    "strike",
    "del",
    "u",
    "ins",
    "tg-spoiler",
    "tg-emoji",
    "span",
    "pre",
    "code",
    "blockquote",
];

struct Open {
    tag: String,
    argument: String,
    offset: usize,
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
    out: String,
    out_len: usize,
    open: Vec<Open>,
    entities: Vec<Entity>,
}

/// The text without its markup, and its entities.
pub(crate) fn parse(text: &str) -> Result<(String, Vec<Entity>), String> {
    let mut parser = Parser {
        text,
        bytes: text.as_bytes(),
        at: 0,
        out: String::with_capacity(text.len()),
        out_len: 0,
        open: Vec::new(),
        entities: Vec::new(),
    };
    parser.run()?;
    Ok((parser.out, parser.entities))
}

fn is_space(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\r' | b'\n' | b'\x0b' | b'\x0c' | 0)
}

/// A character reference at the start of `text` (which starts with `&`):
/// the character and the bytes it takes. The `;` is optional, as in `TDLib`.
fn reference(text: &str) -> Option<(char, usize)> {
    let bytes = text.as_bytes();
    let mut end = 1;
    let code = if bytes.get(1) == Some(&b'#') {
        let hex = bytes.get(2) == Some(&b'x');
        end = if hex { 3 } else { 2 };
        let start = end;
        while end < bytes.len() && end - start < 8 {
            let digit = if hex {
                bytes[end].is_ascii_hexdigit()
            } else {
                bytes[end].is_ascii_digit()
            };
            if !digit {
                break;
            }
            end += 1;
        }
        u32::from_str_radix(text.get(start..end)?, if hex { 16 } else { 10 }).ok()?
    } else {
        while end < bytes.len() && bytes[end].is_ascii_alphabetic() {
            end += 1;
        }
        match text.get(1..end)? {
            "lt" => u32::from('<'),
            "gt" => u32::from('>'),
            "amp" => u32::from('&'),
            "quot" => u32::from('"'),
            _ => return None,
        }
    };
    let character = char::from_u32(code).filter(|c| *c != '\0')?;
    if bytes.get(end) == Some(&b';') {
        end += 1;
    }
    Some((character, end))
}

impl Parser<'_> {
    fn run(&mut self) -> Result<(), String> {
        while self.at < self.bytes.len() {
            match self.bytes[self.at] {
                b'&' => match reference(&self.text[self.at..]) {
                    Some((character, length)) => {
                        self.push(character);
                        self.at += length;
                    }
                    None => {
                        self.push('&');
                        self.at += 1;
                    }
                },
                b'<' => {
                    let begin = self.at;
                    self.at += 1;
                    if self.bytes.get(self.at) == Some(&b'/') {
                        self.end_tag(begin)?;
                    } else {
                        self.start_tag(begin)?;
                    }
                }
                _ => {
                    let Some(character) = self.text[self.at..].chars().next() else {
                        break;
                    };
                    self.push(character);
                    self.at += character.len_utf8();
                }
            }
        }
        match self.open.last() {
            Some(open) => Err(format!(
                "Can't find end tag corresponding to start tag \"{}\"",
                open.tag
            )),
            None => Ok(()),
        }
    }

    fn push(&mut self, character: char) {
        self.out.push(character);
        self.out_len += character.len_utf16();
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn skip_spaces(&mut self) {
        while self.peek().is_some_and(|byte| is_space(byte) && byte != 0) {
            self.at += 1;
        }
    }

    fn start_tag(&mut self, begin: usize) -> Result<(), String> {
        let unclosed = || format!("Unclosed start tag at byte offset {begin}");
        let name_start = self.at;
        while self.peek().is_some_and(|byte| !is_space(byte) && byte != b'>') {
            self.at += 1;
        }
        if self.peek().is_none() {
            return Err(unclosed());
        }
        let tag = self.text[name_start..self.at].to_ascii_lowercase();
        if !TAGS.contains(&tag.as_str()) {
            return Err(format!("Unsupported start tag \"{tag}\" at byte offset {begin}"));
        }
        let mut argument = String::new();
        loop {
            self.skip_spaces();
            match self.peek() {
                None => return Err(unclosed()),
                Some(b'>') => break,
                Some(_) => {}
            }
            let (name, value) = self.attribute(&tag, begin)?;
            match (tag.as_str(), name.as_str()) {
                ("a", "href") | ("tg-emoji", "emoji-id") => argument = value,
                ("code", "class") if value.starts_with("language-") => {
                    value["language-".len()..].clone_into(&mut argument);
                }
                ("span", "class") if value.starts_with("tg-") => value["tg-".len()..].clone_into(&mut argument),
                ("blockquote", "expandable") => "expandable".clone_into(&mut argument),
                _ => {}
            }
        }
        self.at += 1;
        if tag == "span" && argument != "spoiler" {
            return Err(format!(
                "Tag \"span\" must have class \"tg-spoiler\" at byte offset {begin}"
            ));
        }
        if tag == "tg-emoji" && argument.is_empty() {
            return Err(format!(
                "Tag \"tg-emoji\" must have attribute \"emoji-id\" at byte offset {begin}"
            ));
        }
        self.open.push(Open {
            tag,
            argument,
            offset: self.out_len,
        });
        Ok(())
    }

    /// One `name=value` (or a bare `expandable`) inside a start tag.
    fn attribute(&mut self, tag: &str, begin: usize) -> Result<(String, String), String> {
        let unclosed = || format!("Unclosed start tag at byte offset {begin}");
        let name_start = self.at;
        while self
            .peek()
            .is_some_and(|byte| !is_space(byte) && byte != b'=' && byte != b'>')
        {
            self.at += 1;
        }
        let name = self.text[name_start..self.at].to_ascii_lowercase();
        if name.is_empty() {
            return Err(format!(
                "Empty attribute name in the tag \"{tag}\" at byte offset {begin}"
            ));
        }
        self.skip_spaces();
        match self.peek() {
            None => return Err(unclosed()),
            Some(b'=') => self.at += 1,
            Some(_) if tag == "blockquote" && name == "expandable" => return Ok((name, String::new())),
            Some(_) => {
                return Err(format!(
                    "Expected equal sign in declaration of an attribute of the tag \"{tag}\" at byte offset \
                     {begin}"
                ));
            }
        }
        self.skip_spaces();
        let value = match self.peek() {
            None => return Err(unclosed()),
            Some(quote @ (b'"' | b'\'')) => self.quoted(quote),
            Some(_) => {
                let start = self.at;
                while self
                    .peek()
                    .is_some_and(|byte| byte.is_ascii_alphanumeric() || byte == b'.' || byte == b'-')
                {
                    self.at += 1;
                }
                if self.peek().is_some_and(|byte| !is_space(byte) && byte != b'>') {
                    return Err(format!("Unexpected end of name token at byte offset {start}"));
                }
                self.text[start..self.at].to_ascii_lowercase()
            }
        };
        if self.peek().is_none() {
            return Err(unclosed());
        }
        Ok((name, value))
    }

    fn quoted(&mut self, quote: u8) -> String {
        self.at += 1;
        let mut value = String::new();
        while let Some(byte) = self.peek() {
            if byte == quote {
                self.at += 1;
                break;
            }
            if byte == b'&'
                && let Some((character, length)) = reference(&self.text[self.at..])
            {
                value.push(character);
                self.at += length;
                continue;
            }
            let Some(character) = self.text[self.at..].chars().next() else {
                break;
            };
            value.push(character);
            self.at += character.len_utf8();
        }
        value
    }

    fn end_tag(&mut self, begin: usize) -> Result<(), String> {
        if self.open.is_empty() {
            return Err(format!("Unexpected end tag at byte offset {begin}"));
        }
        self.at += 1;
        let name_start = self.at;
        while self.peek().is_some_and(|byte| !is_space(byte) && byte != b'>') {
            self.at += 1;
        }
        let name = self.text[name_start..self.at].to_ascii_lowercase();
        self.skip_spaces();
        if self.peek() != Some(b'>') {
            return Err(format!("Unclosed end tag at byte offset {begin}"));
        }
        self.at += 1;
        let Some(open) = self.open.pop() else {
            return Err(format!("Unexpected end tag at byte offset {begin}"));
        };
        if !name.is_empty() && name != open.tag {
            return Err(format!(
                "Unmatched end tag at byte offset {begin}, expected \"</{}>\", found \"</{name}>\"",
                open.tag
            ));
        }
        self.close(open);
        Ok(())
    }

    fn close(&mut self, open: Open) {
        let length = self.out_len - open.offset;
        // `<pre><code class="language-x">` is one `pre` entity with a language.
        if open.tag == "code"
            && !open.argument.is_empty()
            && let Some(parent) = self.open.last_mut()
            && parent.tag == "pre"
            && parent.offset == open.offset
        {
            parent.argument.clone_from(&open.argument);
            return;
        }
        if length == 0 {
            return;
        }
        let entity = |kind: &str| Entity::new(kind, open.offset, length);
        let entity = match open.tag.as_str() {
            "a" if open.argument.is_empty() => return,
            "a" => match open
                .argument
                .strip_prefix("tg://user?id=")
                .and_then(|id| id.parse::<i64>().ok())
            {
                Some(id) => entity("text_mention").with("user", json!({ "id": id, "is_bot": false, "first_name": "" })),
                None => entity("text_link").with("url", Value::String(open.argument)),
            },
            "b" | "strong" => entity("bold"),
            "i" | "em" => entity("italic"),
            "u" | "ins" => entity("underline"),
            "s" | "strike" | "del" => entity("strikethrough"),
            "tg-spoiler" | "span" => entity("spoiler"),
            "tg-emoji" => entity("custom_emoji").with("custom_emoji_id", Value::String(open.argument)),
            "code" => entity("code"),
            "pre" if open.argument.is_empty() => entity("pre"),
            "pre" => entity("pre").with("language", Value::String(open.argument)),
            "blockquote" if open.argument == "expandable" => entity("expandable_blockquote"),
            _ => entity("blockquote"),
        };
        debug_assert!(entity.end() <= utf16_len(&self.out));
        self.entities.push(entity);
    }
}
