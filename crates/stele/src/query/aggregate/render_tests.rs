//! [`Render::canonical`] against the round trip it saves: group rows of mixed values
//! (every accumulator's state, keys of every kind of value, names and strings with quotes,
//! control characters and non-ASCII text, twin names, nesting near the writer's limit)
//! are rendered, and each row called canonical must equal the row parsed into a document
//! and printed back; rows of plain values must be called canonical (or nothing is saved).

#![allow(clippy::unwrap_used, reason = "tests")]

use super::*;
use proptest::prelude::*;
use stele_doc::Document;

/// What the pipeline did with every row before: the row as a document, printed back.
fn round_trip(row: &str) -> Option<String> {
    let bytes = stele_doc::from_json(row.as_bytes()).ok()?;
    Some(Document::new(&bytes[..]).ok()?.to_json())
}

/// The JSON text a group's value has: what the writer prints of `text` (as `to_json` of
/// a stored value does), or `text` itself when it does not convert.
fn printed(text: &str) -> String {
    round_trip(text).unwrap_or_else(|| text.to_owned())
}

fn escaped(s: &str) -> String {
    let mut out = Vec::new();
    json_string(s, &mut out);
    String::from_utf8(out).unwrap()
}

/// Strings with what JSON escapes: quotes, backslashes, every kind of control character.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z]{0,4}",
        "[a-z\"\\\\/\u{8}\u{c}\n\r\t\u{1}\u{1f}\u{7f}é😀]{0,6}",
        any::<String>(),
    ]
}

/// Number texts: every kind the writer stores (integers, beyond `u64`, `-0`, scaled
/// fractions with trailing zeros, exponents, long digits, floats' shortest text).
fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<i64>().prop_map(|n| n.to_string()),
        any::<u64>().prop_map(|n| n.to_string()),
        Just("18446744073709551616".to_owned()),
        Just("-0".to_owned()),
        Just("-0.0".to_owned()),
        Just("1.50".to_owned()),
        Just("1E+5".to_owned()),
        Just("0.1000000000000000000001".to_owned()),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| format!("{f:?}")),
    ]
}

/// A JSON value as text (objects may hold twin keys: the writer keeps one).
fn value() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("null".to_owned()),
        Just("true".to_owned()),
        number(),
        text().prop_map(|s| escaped(&s)),
        // Nesting near the writer's limit of 128.
        (120usize..135).prop_map(|d| format!("{}1{}", "[".repeat(d), "]".repeat(d))),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(|v| format!("[{}]", v.join(","))),
            prop::collection::vec((text(), inner), 0..4).prop_map(|kv| {
                let parts: Vec<String> = kv
                    .iter()
                    .map(|(k, v)| format!("{}:{v}", escaped(k)))
                    .collect();
                format!("{{{}}}", parts.join(","))
            }),
        ]
    })
}

/// A part of a row as the grouper makes it: a stored value's printed JSON, or text built
/// by [`json_string`] (a string id, an object expression's keys).
fn part() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => value().prop_map(|v| printed(&v)),
        1 => text().prop_map(|s| escaped(&s)),
        1 => (text(), value()).prop_map(|(k, v)| format!("{{{}:{}}}", escaped(&k), printed(&v))),
    ]
}

fn float() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<f64>(),
        Just(-0.0),
        Just(f64::NAN),
        Just(f64::INFINITY),
        Just(1e21),
        Just(5e-324),
    ]
}

fn state() -> impl Strategy<Value = State> {
    prop_oneof![
        (any::<i128>(), float(), any::<bool>()).prop_map(|(int, float, floats)| State::Sum {
            int: int >> (int & 127).unsigned_abs(),
            float,
            floats
        }),
        (float(), 0u64..3).prop_map(|(sum, n)| State::Avg { sum, n }),
        proptest::option::of(part()).prop_map(|p| State::Extreme(p.map(|j| (Vec::new(), j)))),
        any::<u64>().prop_map(State::Count),
        proptest::option::of(part()).prop_map(State::Value),
        prop::collection::vec(part(), 0..3).prop_map(State::Push),
    ]
}

fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("n".to_owned()),
        Just("_id".to_owned()),
        "[a-c]{1,2}",
        text()
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, ..ProptestConfig::default() })]

    /// A row called canonical is the row the round trip gives.
    #[test]
    fn canonical_rows_equal_their_round_trip(
        names in prop::collection::vec(name(), 0..4),
        key in part(),
        states in prop::collection::vec(state(), 4),
    ) {
        let mut render = Render::new(names.iter().map(String::as_str));
        let states: Vec<State> = states.into_iter().take(names.len()).collect();
        let (row, canonical) = render.checked_row(&key, &states);
        if canonical {
            prop_assert_eq!(Some(row.to_owned()), round_trip(row));
        }
    }
}

/// Rows of plain values (what a group-by count or sum gives) skip the round trip; rows
/// it cannot prove do not.
#[test]
fn plain_rows_are_canonical() {
    let mut render = Render::new(["n", "total", "avg", "first", "all"].into_iter());
    let states = || {
        vec![
            State::Count(7),
            State::Sum {
                int: -3,
                float: 0.5,
                floats: true,
            },
            State::Avg { sum: -0.0, n: 1 },
            State::Value(Some("{\"a\":[1,\"\\\"q\\\"\",null]}".to_owned())),
            State::Push(vec!["\"é\\n\"".to_owned(), "1e21".to_owned()]),
        ]
    };
    for key in [
        "\"https://x.org/a?b=1\"",
        "-12.50",
        "null",
        "{\"y\":2020,\"m\":[1]}",
    ] {
        let (row, canonical) = render.checked_row(key, &states());
        assert!(canonical, "{row}");
        assert_eq!(round_trip(row).as_deref(), Some(row));
    }
    // A backspace as `json_string` escapes it, which the writer prints as `\b`.
    let (row, canonical) = render.checked_row("\"a\\u0008\"", &states());
    assert!(!canonical);
    assert_ne!(round_trip(row).as_deref(), Some(row));
    // Nested past the writer's limit: the round trip fails, as the pipeline did.
    let deep = format!("{}1{}", "[".repeat(128), "]".repeat(128));
    let (row, canonical) = render.checked_row(&deep, &states());
    assert!(!canonical);
    assert_eq!(round_trip(row), None);
    // Twin names: the writer keeps one.
    let mut twins = Render::new(["n", "n"].into_iter());
    let (_, canonical) = twins.checked_row("1", &[State::Count(1), State::Count(2)]);
    assert!(!canonical);
    let mut id = Render::new(["_id"].into_iter());
    assert!(!id.checked_row("1", &[State::Count(1)]).1);
}
