//! How the command line words things: errors in flags, counts with the right plural.

/// The error and its causes on one line, in the command line's words.
///
/// Library errors often quote their cause in their own message (`reading x: No such file
/// or directory`) and also return it as their source; a cause whose text is already in the
/// line is not repeated. Fixes the libraries phrase in Rust API terms are said in flags.
pub fn error_line(e: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if parts.iter().any(|p| p.contains(&text)) {
            continue;
        }
        // A cause that restates its context and goes on (`opening table t` then `opening
        // table t: No such file`) takes the context's place.
        match parts.last_mut() {
            Some(last) if text.starts_with(last.as_str()) => *last = text,
            _ => parts.push(text),
        }
    }
    in_flags(&parts.join(": "))
}

/// `message` with the libraries' API-worded fixes replaced by the flags that do the same.
pub fn in_flags(message: &str) -> String {
    message
        .replace(
            stele_doc::DUPLICATE_KEY_FIX,
            "pass --duplicates last or --duplicates first to accept such input",
        )
        .replace(
            stele_table::DUPLICATE_KEY_FIX,
            "pass --duplicates last or --duplicates first to accept repeated keys",
        )
        .replace(
            stele_doc::MAX_DEPTH_FIX,
            "raise --max-depth (at most 1024) if this input is expected",
        )
        .replace(
            stele::import::NON_OBJECT_FIX,
            "pass --wrap-non-objects FIELD to store such records as {FIELD: record}",
        )
        .replace(
            stele::CREATE_HERE_FIX,
            "pass --create-here to create the database beside them",
        )
}

/// `n` and the noun, singular for exactly one: `1 row`, `0 rows`, `2 rows`.
pub fn count(n: impl Into<u64>, singular: &str, plural: &str) -> String {
    let n = n.into();
    if n == 1 {
        format!("1 {singular}")
    } else {
        format!("{n} {plural}")
    }
}

/// A parser of counts that must be at least 1 (a limit of 0 can only be a mistake): clap
/// then rejects 0 with exit code 2 and the accepted range.
pub fn at_least_one() -> clap::builder::RangedU64ValueParser<usize> {
    clap::builder::RangedU64ValueParser::<usize>::new().range(1..)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causes_already_quoted_are_not_repeated() {
        let os = std::io::Error::from(std::io::ErrorKind::NotFound);
        let quoted = format!("reading x.jsonl: {os} (nothing was imported)");
        let e = anyhow::Error::new(os)
            .context(quoted)
            .context("importing x.jsonl");
        let line = error_line(&e);
        assert_eq!(line.matches("entity not found").count(), 1, "{line}");
        assert!(
            line.starts_with("importing x.jsonl: reading x.jsonl"),
            "{line}"
        );

        let os = std::io::Error::from(std::io::ErrorKind::NotFound);
        let e = anyhow::Error::new(os)
            .context("opening table t: entity not found")
            .context("opening table t");
        assert_eq!(error_line(&e), "opening table t: entity not found");
    }

    #[test]
    fn api_words_become_flags() {
        let doc = stele_doc::Error::DuplicateKey { key: "a".into() }.to_string();
        let table = stele_table::Error::DuplicateKey { key: b"k".to_vec() }.to_string();
        for text in [doc, table] {
            let said = in_flags(&text);
            assert!(!said.contains("::"), "{said}");
            assert!(said.contains("--duplicates"), "{said}");
        }
        let deep = in_flags(&stele_doc::Error::TooDeep { limit: 3 }.to_string());
        assert!(
            deep.contains("--max-depth") && !deep.contains("::"),
            "{deep}"
        );
    }

    #[test]
    fn plurals() {
        assert_eq!(count(1u64, "row", "rows"), "1 row");
        assert_eq!(count(0u64, "row", "rows"), "0 rows");
        assert_eq!(count(2u32, "table", "tables"), "2 tables");
    }
}
