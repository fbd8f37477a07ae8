//! `$group`'s output rows as JSON text: `_id`, then each accumulator's output, written into
//! one buffer reused from row to row. Rows used to be built by `format!` and a string per
//! part (the name's JSON, each number), several allocations per group: with a group per
//! document they were a large part of the group-by (`docs/notes/2026-12-02-scan-costs.md`).

use super::spill_state::State;
use crate::query::project::json_string;
use std::fmt::Write;

/// Renders group rows; see the module documentation.
pub(super) struct Render {
    /// Each accumulator's output name as JSON, with the `,` before it and the `:` after.
    names: Vec<String>,
    out: String,
}

impl Render {
    pub(super) fn new<'a>(names: impl Iterator<Item = &'a str>) -> Render {
        let names = names
            .map(|name| {
                let mut json = Vec::from(&b","[..]);
                json_string(name, &mut json);
                json.push(b':');
                String::from_utf8_lossy(&json).into_owned()
            })
            .collect();
        Render {
            names,
            out: String::new(),
        }
    }

    /// The row of the group whose key is `key` (JSON text) with these accumulator states
    /// (one per name, in order).
    pub(super) fn row(&mut self, key: &str, states: Vec<State>) -> &str {
        let out = &mut self.out;
        out.clear();
        out.push_str("{\"_id\":");
        out.push_str(key);
        for (name, state) in self.names.iter().zip(states) {
            out.push_str(name);
            match state {
                State::Sum { int, float, floats } => {
                    if floats || i64::try_from(int).is_err() && u64::try_from(int).is_err() {
                        float_json(float, out);
                    } else {
                        let _ = write!(out, "{int}");
                    }
                }
                State::Avg { sum, n } => {
                    if n == 0 {
                        out.push_str("null");
                    } else {
                        float_json(sum / n as f64, out);
                    }
                }
                State::Extreme(best) => match best {
                    Some((_, json)) => out.push_str(&json),
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
            assert_eq!(render.row(key, states), want);
        }
        // Fewer accumulators than names never happens; no accumulator at all does.
        let mut none = Render::new(std::iter::empty());
        assert_eq!(none.row("1", Vec::new()), "{\"_id\":1}");
    }
}
