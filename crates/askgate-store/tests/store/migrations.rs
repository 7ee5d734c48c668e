//! The guard of the upgrade policy (`src/schema.rs`): every migration is
//! additive — an older askgate still runs against the schema it leaves —
//! unless it says otherwise by writing the setting
//! `schema.oldest_compatible` itself.
//!
//! Read from the migration files' text: each statement (comments dropped,
//! split at `;` outside quotes and dollar-quoted bodies) is checked for what
//! takes away from a schema an older askgate uses: `DROP TABLE`,
//! `DROP COLUMN`, `RENAME`, a column's type or nullability changed or its
//! default dropped, and a column added `NOT NULL` without a default (an older
//! askgate's inserts leave it out).

use std::path::Path;

/// The newest migration of each store when the policy came in. askgate
/// releases before it refuse any schema newer than theirs (sqlx's "previously
/// applied but is missing"), so only releases that know these migrations
/// ever run against a newer schema: what these migrations dropped (the
/// columns that `surfaces` replaced) is no older release's concern.
const BEFORE_THE_POLICY: [(&str, i64); 2] = [("postgres", 5), ("sqlite", 6)];

/// The setting a migration that breaks compatibility writes.
const MARKER: &str = "schema.oldest_compatible";

#[test]
fn every_migration_since_the_policy_is_additive_or_declares_the_oldest_compatible_version() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations");
    let (mut problems, mut before) = (Vec::new(), Vec::new());
    for (store, policy_since) in BEFORE_THE_POLICY {
        let mut files: Vec<_> = std::fs::read_dir(root.join(store))
            .expect("the store's migrations")
            .map(|entry| entry.expect("a directory entry").path())
            .filter(|path| path.extension().is_some_and(|extension| extension == "sql"))
            .collect();
        files.sort();
        assert!(
            files.len() >= usize::try_from(policy_since).unwrap(),
            "{store}: fewer migrations than when the policy came in"
        );
        for file in files {
            let name = file.file_name().unwrap().to_string_lossy().into_owned();
            let version: i64 = name
                .split('_')
                .next()
                .and_then(|number| number.parse().ok())
                .unwrap_or_else(|| panic!("{store}/{name}: a migration's name starts with its number"));
            let sql = std::fs::read_to_string(&file).expect("a migration's text");
            for (statement, why) in breaking(&sql) {
                let found = format!("{store}/{name}: `{statement}` {why}");
                if version <= policy_since {
                    before.push(found);
                } else {
                    problems.push(found);
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "migrations that break older askgates without writing {MARKER} (see docs/deploy.md, Upgrading):\n{}",
        problems.join("\n")
    );
    // The migrations before the policy are read the same way: what they
    // broke is exactly the columns `surfaces` replaced (which also shows
    // the checker at work on the real files).
    let before: Vec<&str> = before
        .iter()
        .map(|found| found.split(" drops").next().unwrap())
        .collect();
    assert_eq!(
        before,
        [
            "postgres/0005_surfaces.sql: `ALTER TABLE questions DROP COLUMN delivery`",
            "postgres/0005_surfaces.sql: `ALTER TABLE questions DROP COLUMN conversation`",
            "postgres/0005_surfaces.sql: `ALTER TABLE questions DROP COLUMN channel`",
            "sqlite/0006_surfaces.sql: `ALTER TABLE questions DROP COLUMN delivery`",
            "sqlite/0006_surfaces.sql: `ALTER TABLE questions DROP COLUMN conversation`",
            "sqlite/0006_surfaces.sql: `ALTER TABLE questions DROP COLUMN channel`",
        ]
    );
}

#[test]
fn the_checker_finds_each_breaking_statement_and_passes_additive_ones() {
    let breaking_sql = "
        -- A comment that says DROP TABLE questions; is not a statement.
        DROP TABLE old_things;
        ALTER TABLE questions DROP COLUMN channel;
        alter table questions rename column recipient to person;
        ALTER TABLE leases RENAME TO locks;
        ALTER TABLE questions ALTER COLUMN locale TYPE INTEGER USING 0;
        ALTER TABLE questions ALTER COLUMN run_id SET NOT NULL;
        ALTER TABLE questions ALTER COLUMN surfaces DROP DEFAULT;
        ALTER TABLE questions ADD COLUMN priority INTEGER NOT NULL;
        ALTER TABLE questions ADD weight BIGINT NOT NULL, ADD note TEXT;
    ";
    let found = breaking(breaking_sql);
    let statements: Vec<&str> = found.iter().map(|(statement, _)| statement.as_str()).collect();
    assert_eq!(
        statements,
        [
            "DROP TABLE old_things",
            "ALTER TABLE questions DROP COLUMN channel",
            "alter table questions rename column recipient to person",
            "ALTER TABLE leases RENAME TO locks",
            "ALTER TABLE questions ALTER COLUMN locale TYPE INTEGER USING 0",
            "ALTER TABLE questions ALTER COLUMN run_id SET NOT NULL",
            "ALTER TABLE questions ALTER COLUMN surfaces DROP DEFAULT",
            "ALTER TABLE questions ADD COLUMN priority INTEGER NOT NULL",
            "ALTER TABLE questions ADD weight BIGINT NOT NULL, ADD note TEXT",
        ],
        "{found:#?}"
    );

    let additive = "
        CREATE TABLE notes (
            id   TEXT NOT NULL PRIMARY KEY,
            body TEXT NOT NULL
        );
        ALTER TABLE questions ADD COLUMN note TEXT;
        ALTER TABLE questions ADD COLUMN tries INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE questions ADD CONSTRAINT tries_positive CHECK (tries IS NOT NULL AND tries >= 0);
        CREATE INDEX questions_note ON questions (note) WHERE note IS NOT NULL;
        INSERT INTO settings (key, value) VALUES ('drop table; rename', 'x');
        CREATE FUNCTION touch() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            PERFORM pg_notify('x', 'DROP TABLE y; RENAME');
            RETURN NEW;
        END;
        $$;
    ";
    assert_eq!(breaking(additive), Vec::<(String, &str)>::new());

    // A migration that writes the marker may break whatever it declares.
    let declared = "
        ALTER TABLE questions DROP COLUMN channel;
        INSERT INTO settings (key, value) VALUES ('schema.oldest_compatible', '7')
            ON CONFLICT (key) DO UPDATE SET value = excluded.value;
    ";
    assert_eq!(breaking(declared), Vec::<(String, &str)>::new());
}

/// The statements of `sql` that take away from a schema an older askgate
/// uses, each with why; none when `sql` writes the marker.
fn breaking(sql: &str) -> Vec<(String, &'static str)> {
    let statements = statements(sql);
    if statements
        .iter()
        .any(|statement| statement.contains(&format!("'{MARKER}'")))
    {
        return Vec::new();
    }
    statements
        .into_iter()
        .filter_map(|statement| why_breaking(&statement).map(|why| (statement, why)))
        .collect()
}

/// Why one statement breaks an older askgate, if it does.
fn why_breaking(statement: &str) -> Option<&'static str> {
    // Literals and function bodies are data, not schema changes.
    let code = format!(" {} ", without_literals(statement).to_uppercase());
    let words: Vec<&str> = code.split_whitespace().collect();
    let has = |phrase: &str| {
        let phrase: Vec<&str> = phrase.split(' ').collect();
        words.windows(phrase.len()).any(|window| window == phrase.as_slice())
    };
    if has("DROP TABLE") {
        return Some("drops a table an older askgate may use");
    }
    if has("DROP COLUMN") {
        return Some("drops a column an older askgate may use");
    }
    if words.contains(&"RENAME") {
        return Some("renames what an older askgate uses by its old name");
    }
    if has("ALTER COLUMN") && (words.contains(&"TYPE") || has("SET NOT NULL") || has("DROP DEFAULT")) {
        return Some("changes a column an older askgate writes (its type, its nullability or its default)");
    }
    if words.starts_with(&["ALTER", "TABLE"]) {
        let adds_required = actions(&code).iter().any(|action| {
            let action: Vec<&str> = action.split_whitespace().collect();
            let adds_column = action.first() == Some(&"ADD")
                && !matches!(
                    action.get(1),
                    Some(&("CONSTRAINT" | "PRIMARY" | "UNIQUE" | "FOREIGN" | "CHECK" | "EXCLUDE"))
                );
            let not_null = action.windows(2).any(|pair| pair == ["NOT", "NULL"]);
            adds_column && not_null && !action.contains(&"DEFAULT")
        });
        if adds_required {
            return Some("adds a NOT NULL column without a default, which an older askgate's inserts leave out");
        }
    }
    None
}

/// The actions of an `ALTER TABLE` (split at commas outside parentheses),
/// the first one without its `ALTER TABLE name`.
fn actions(code: &str) -> Vec<String> {
    let mut actions = vec![String::new()];
    let mut depth = 0_u32;
    for character in code.chars() {
        match character {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                actions.push(String::new());
                continue;
            }
            _ => {}
        }
        actions.last_mut().expect("one at least").push(character);
    }
    if let Some(first) = actions.first_mut() {
        // `ALTER TABLE [IF EXISTS] [ONLY] name action…`
        let words: Vec<&str> = first.split_whitespace().collect();
        let skip = 3 + usize::from(words.get(2) == Some(&"IF")) * 2 + usize::from(words.contains(&"ONLY"));
        *first = words.get(skip..).unwrap_or_default().join(" ");
    }
    actions
}

/// `sql`'s statements, trimmed, without comments, in order.
fn statements(sql: &str) -> Vec<String> {
    let mut statements = Vec::new();
    let mut current = String::new();
    let mut rest = sql;
    while let Some(character) = rest.chars().next() {
        if rest.starts_with("--") {
            rest = rest.find('\n').map_or("", |end| &rest[end..]);
            continue;
        }
        if character == '\'' || character == '$' {
            let quoted = quoted_len(rest);
            current.push_str(&rest[..quoted]);
            rest = &rest[quoted..];
            continue;
        }
        rest = &rest[character.len_utf8()..];
        if character == ';' {
            statements.push(std::mem::take(&mut current));
        } else {
            current.push(character);
        }
    }
    statements.push(current);
    statements
        .into_iter()
        .map(|statement| statement.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|statement| !statement.is_empty())
        .collect()
}

/// The length of the quoted text `rest` starts with (`'…'` with `''`
/// inside, or `$tag$…$tag$`), to its end when unterminated; 1 for a `$`
/// that starts no dollar quote (`$1`).
fn quoted_len(rest: &str) -> usize {
    if rest.starts_with('\'') {
        let mut index = 1;
        while let Some(found) = rest[index..].find('\'') {
            index += found + 1;
            if !rest[index..].starts_with('\'') {
                return index;
            }
            index += 1;
        }
        return rest.len();
    }
    let Some(tag_end) = rest[1..].find('$') else {
        return 1;
    };
    let tag = &rest[..tag_end + 2];
    if !tag[1..tag.len() - 1]
        .chars()
        .all(|character| character.is_alphanumeric() || character == '_')
    {
        return 1;
    }
    rest[tag.len()..]
        .find(tag)
        .map_or(rest.len(), |end| tag.len() + end + tag.len())
}

/// `statement` with every quoted text emptied (`''`, `$$$$`).
fn without_literals(statement: &str) -> String {
    let mut code = String::new();
    let mut rest = statement;
    while let Some(character) = rest.chars().next() {
        if character == '\'' || character == '$' {
            let quoted = quoted_len(rest);
            if quoted > 1 {
                code.push_str(" '' ");
                rest = &rest[quoted..];
                continue;
            }
        }
        code.push(character);
        rest = &rest[character.len_utf8()..];
    }
    code
}
