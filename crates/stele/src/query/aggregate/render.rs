//! `$group`'s output rows as JSON text: `_id`, then each accumulator's output, written into
//! one buffer reused from row to row. Rows used to be built by `format!` and a string per
//! part (the name's JSON, each number), several allocations per group: with a group per
//! document they were a large part of the group-by (`docs/notes/2026-12-02-scan-costs.md`).
//!
//! A row is handed on as the answer when [`Render::canonical`] proves it is the text the
//! old path made of it (the row parsed into a document, then that document's JSON):
//! what it cannot prove goes through that round trip. The proof, part by part:
//! - numbers: the writer stores every JSON number text so that it prints back byte for
//!   byte (`stele_doc`'s `writer::number`), and every number here is JSON (`{int}` of an
//!   `i128` is never `-0`; `{:?}` of a finite `f64` is `123.0`, `1e21`, `-0.0`, `5e-324`);
//! - strings and names: the document writer escapes `"`, `\`, `\n`, `\r`, `\t` as
//!   [`json_string`] does, and other control characters as `\b`, `\f` or `\u00XX`
//!   where [`json_string`] writes `\u00XX`: a row without `\u` holds no such character, and
//!   text of a value the writer printed (`to_json`) prints the same again;
//! - object keys: a row's own names are `_id` and the accumulators' names, checked to be
//!   distinct here (the writer would keep one of twins); objects inside come from stored
//!   documents or from the pipeline's own objects (documents too), which hold no twins;
//! - depth: the writer refuses containers nested deeper than
//!   [`stele_doc::DEFAULT_MAX_DEPTH`]; a row with at most that many `{` and `[` in all
//!   (strings counted too) cannot nest deeper.

use super::spill_state::State;
use crate::query::project::json_string;
use std::fmt::Write;

/// Renders group rows; see the module documentation.
pub(super) struct Render {
    /// Each accumulator's output name as JSON, with the `,` before it and the `:` after.
    names: Vec<String>,
    /// The names are distinct and none is `_id` (see [`Render::canonical`]).
    distinct_names: bool,
    out: String,
}

impl Render {
    pub(super) fn new<'a>(names: impl Iterator<Item = &'a str>) -> Render {
        let names: Vec<&str> = names.collect();
        let distinct_names = names
            .iter()
            .enumerate()
            .all(|(i, n)| *n != "_id" && !names.get(..i).unwrap_or_default().contains(n));
        let names = names
            .into_iter()
            .map(|name| {
                let mut json = Vec::from(&b","[..]);
                json_string(name, &mut json);
                json.push(b':');
                String::from_utf8_lossy(&json).into_owned()
            })
            .collect();
        Render {
            names,
            distinct_names,
            out: String::new(),
        }
    }

    /// Whether `row` (made by [`Render::row`]) is byte for byte what the document writer
    /// makes of it and prints back (`Document::to_json` of `from_json(row)`), so that it
    /// can be the answer without that round trip; false when that is not proven (see the
    /// module documentation), never when it would differ.
    pub(super) fn canonical(&self, row: &str) -> bool {
        if !self.distinct_names {
            return false;
        }
        // An escaped backslash before a `u` (`\\u` in the text) is refused too: a needless
        // round trip, never a wrong row.
        if row.contains("\\u") {
            return false;
        }
        // A row shorter than the limit cannot hold more `{` and `[` than it.
        let limit = stele_doc::DEFAULT_MAX_DEPTH;
        row.len() <= limit || row.bytes().filter(|&b| b == b'{' || b == b'[').count() <= limit
    }

    /// [`Render::row`], and whether it is [`Render::canonical`].
    pub(super) fn checked_row(&mut self, key: &str, states: &[State]) -> (&str, bool) {
        self.row(key, states);
        let canonical = self.canonical(&self.out);
        (&self.out, canonical)
    }

    /// The row of the group whose key is `key` (JSON text) with these accumulator states
    /// (one per name, in order).
    pub(super) fn row(&mut self, key: &str, states: &[State]) -> &str {
        let out = &mut self.out;
        out.clear();
        out.push_str("{\"_id\":");
        out.push_str(key);
        for (name, state) in self.names.iter().zip(states) {
            out.push_str(name);
            match state {
                &State::Sum { int, float, floats } => {
                    if floats || i64::try_from(int).is_err() && u64::try_from(int).is_err() {
                        float_json(float, out);
                    } else {
                        let _ = write!(out, "{int}");
                    }
                }
                &State::Avg { sum, n } => {
                    if n == 0 {
                        out.push_str("null");
                    } else {
                        float_json(sum / n as f64, out);
                    }
                }
                State::Extreme(best) => match best {
                    Some((_, json)) => out.push_str(json),
                    None => out.push_str("null"),
                },
                State::Count(n) => {
                    let _ = write!(out, "{n}");
                }
                State::Value(v) => out.push_str(v.as_deref().unwrap_or("null")),
                State::Push(list) => {
                    out.push('[');
                    for (i, json) in list.iter().enumerate() {
                        if i > 0 {
                            out.push(',');
                        }
                        out.push_str(json);
                    }
                    out.push(']');
                }
            }
        }
        out.push('}');
        out
    }
}

/// A float as JSON (`null` when not finite).
fn float_json(f: f64, out: &mut String) {
    if f.is_finite() {
        let _ = write!(out, "{f:?}");
    } else {
        out.push_str("null");
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    /// The rendering this module replaced (`format!` and a string per part): the rows
    /// must stay byte for byte the same.
    fn old_render(names: &[&str], key: &str, states: Vec<State>) -> String {
        let float_json = |f: f64| {
            if f.is_finite() {
                format!("{f:?}")
            } else {
                "null".to_owned()
            }
        };
        let mut out = format!("{{\"_id\":{key}");
        for (name, state) in names.iter().zip(states) {
            let mut json = Vec::new();
            json_string(name, &mut json);
            out.push(',');
            out.push_str(&String::from_utf8_lossy(&json));
            out.push(':');
            out.push_str(&match state {
                State::Sum { int, float, floats } => {
                    if floats || i64::try_from(int).is_err() && u64::try_from(int).is_err() {
                        float_json(float)
                    } else {
                        int.to_string()
                    }
                }
                State::Avg { sum, n } => {
                    if n == 0 {
                        "null".to_owned()
                    } else {
                        float_json(sum / n as f64)
                    }
                }
                State::Extreme(best) => best.map_or_else(|| "null".to_owned(), |(_, j)| j),
                State::Count(n) => n.to_string(),
                State::Value(v) => v.unwrap_or_else(|| "null".to_owned()),
                State::Push(list) => format!("[{}]", list.join(",")),
            });
        }
        out.push('}');
        out
    }

    #[test]
    fn rows_render_as_before() {
        let names = ["n", "s\"q", "é\u{1}", "avg", "min", "v", "all", "c"];
        let sets: Vec<(&str, Vec<State>)> = vec![
            (
                "\"a\"",
                vec![
                    State::Sum {
                        int: 42,
                        float: 42.0,
                        floats: false,
                    },
                    State::Sum {
                        int: i128::from(u64::MAX) + 1,
                        float: 1.8e19,
                        floats: false,
                    },
                    State::Sum {
                        int: -7,
                        float: -6.5,
                        floats: true,
                    },
                    State::Avg { sum: 1.0, n: 3 },
                    State::Extreme(Some((vec![1], "{\"x\":[1,2]}".to_owned()))),
                    State::Value(Some("\"v\"".to_owned())),
                    State::Push(vec!["1".to_owned(), "null".to_owned(), "\"z\"".to_owned()]),
                    State::Count(u64::MAX),
                ],
            ),
            (
                "null",
                vec![
                    State::Sum {
                        int: i128::from(i64::MIN),
                        float: 0.0,
                        floats: false,
                    },
                    State::Sum {
                        int: 0,
                        float: f64::NAN,
                        floats: true,
                    },
                    State::Sum {
                        int: 0,
                        float: 1e-7,
                        floats: true,
                    },
                    State::Avg { sum: 0.0, n: 0 },
                    State::Extreme(None),
                    State::Value(None),
                    State::Push(Vec::new()),
                    State::Count(0),
                ],
            ),
            (
                "{\"y\":2020,\"m\":[1]}",
                vec![
                    State::Sum {
                        int: 0,
                        float: f64::INFINITY,
                        floats: true,
                    },
                    State::Sum {
                        int: i128::MAX,
                        float: 1e300,
                        floats: false,
                    },
                    State::Sum {
                        int: 0,
                        float: 123_456_789.125,
                        floats: true,
                    },
                    State::Avg { sum: 1e21, n: 1 },
                    State::Extreme(Some((vec![], "-0.5".to_owned()))),
                    State::Value(Some("[]".to_owned())),
                    State::Push(vec!["{}".to_owned()]),
                    State::Count(1),
                ],
            ),
        ];
        let mut render = Render::new(names.iter().copied());
        for (key, states) in sets {
            let want = old_render(&names, key, states.clone());
            assert_eq!(render.row(key, &states), want);
        }
        // Fewer accumulators than names never happens; no accumulator at all does.
        let mut none = Render::new(std::iter::empty());
        assert_eq!(none.row("1", &[]), "{\"_id\":1}");
    }
}

#[cfg(test)]
#[path = "render_tests.rs"]
mod canonical_tests;
