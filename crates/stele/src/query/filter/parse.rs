//! Filters from MongoDB-style JSON text.
//!
//! ```text
//! {"a.b": 5, "n": {"$gte": 1, "$lt": 9}, "$or": [{"x": true}, {"tags": {"$in": ["p", "q"]}}]}
//! ```
//!
//! Every key of an object is a condition, and all must hold. Anything not understood is an
//! error naming the operator and where it is (`$or[1].tags.$regex`), never ignored.

use super::{Cond, Fast, Filter, JsonType, Node, Operand};
use crate::error::{Error, Result};
use crate::index::encode::encode_any;
use crate::query::path::DocPath;
use stele_doc::{Document, Value};

/// The operators a field condition may use, for messages.
const FIELD_OPERATORS: &str =
    "$eq $ne $gt $gte $lt $lte $in $nin $exists $type $size $all $elemMatch $not $prefix";

fn err(at: &str, reason: impl Into<String>) -> Error {
    Error::InvalidFilter {
        at: at.to_owned(),
        reason: reason.into(),
    }
}

/// Parses JSON text into a document (the query's own bytes, not stored data).
pub(crate) fn json_document(text: &str, what: &str) -> Result<Vec<u8>> {
    stele_doc::from_json(text.as_bytes()).map_err(|e| {
        err(
            "$",
            format!(
                "the {what} is not JSON ({e}); strings need double quotes: {{\"name\": \"ada\"}}"
            ),
        )
    })
}

impl Filter {
    /// Parses a filter in MongoDB's JSON form (see the [module documentation](crate::query)
    /// for the operators). `{}` keeps every document.
    ///
    /// ```
    /// let f = stele::Filter::parse(r#"{"n": {"$gte": 1, "$lt": 9}, "tags": "rust"}"#).unwrap();
    /// assert!(stele::Filter::parse(r#"{"n": {"$regex": "^a"}}"#).is_err());
    /// # drop(f);
    /// ```
    pub fn parse(json: &str) -> Result<Filter> {
        let bytes = json_document(json, "filter")?;
        let doc = Document::new(&bytes[..]).map_err(|e| err("$", e.to_string()))?;
        parse_filter(doc.root(), "$")
    }
}

/// A filter object: every key a field condition or a logical operator.
pub(crate) fn parse_filter(v: Value<'_>, at: &str) -> Result<Filter> {
    let Value::Object(o) = v else {
        return Err(err(
            at,
            format!(
                "a filter is a JSON object such as {{\"field\": value}}, not {}",
                v.type_name()
            ),
        ));
    };
    let mut parts = Vec::new();
    for (key, value) in o.iter_original() {
        let here = format!("{at}.{key}");
        match key {
            "$and" | "$or" | "$nor" => {
                let list = filter_list(value, &here)?;
                parts.push(Filter {
                    node: match key {
                        "$and" => Node::And(list),
                        "$or" => Node::Or(list),
                        _ => Node::Nor(list),
                    },
                });
            }
            k if k.starts_with('$') => {
                return Err(err(
                    &here,
                    format!(
                        "{k} is not supported at the top of a filter: use $and, $or, $nor, or a field name"
                    ),
                ));
            }
            _ => {
                let path = DocPath::parse(key).map_err(|e| err(&here, e.to_string()))?;
                for cond in field_conditions(value, &here)? {
                    parts.push(Filter::field(path.clone(), cond));
                }
            }
        }
    }
    Ok(if parts.len() == 1 {
        parts.pop().unwrap_or_else(Filter::all)
    } else {
        Filter::and(parts)
    })
}

fn filter_list(v: Value<'_>, at: &str) -> Result<Vec<Filter>> {
    let Value::Array(a) = v else {
        return Err(err(at, "takes an array of filters: [{...}, {...}]"));
    };
    if a.is_empty() {
        return Err(err(at, "takes a non-empty array of filters"));
    }
    a.iter()
        .enumerate()
        .map(|(i, f)| parse_filter(f, &format!("{at}[{i}]")))
        .collect()
}

/// True when `v` is an object whose keys are operators (`{"$gt": 1}`).
fn is_operator_object(v: &Value<'_>) -> bool {
    match v {
        Value::Object(o) => o
            .iter_original()
            .next()
            .is_some_and(|(k, _)| k.starts_with('$')),
        _ => false,
    }
}

/// The conditions of one field: `value` is a plain value (equality) or an operator object.
fn field_conditions(value: Value<'_>, at: &str) -> Result<Vec<Cond>> {
    if !is_operator_object(&value) {
        return Ok(vec![Cond::Eq(operand(value))]);
    }
    operator_conditions(value, at)
}

fn operator_conditions(value: Value<'_>, at: &str) -> Result<Vec<Cond>> {
    let Value::Object(o) = value else {
        return Err(err(at, "takes an object of operators"));
    };
    let mut conds = Vec::new();
    // The bounds of this object, merged into one range condition (one value meets both).
    let mut range: Option<usize> = None;
    for (op, arg) in o.iter_original() {
        let here = format!("{at}.{op}");
        if let Some((is_lo, incl)) = match op {
            "$gt" => Some((true, false)),
            "$gte" => Some((true, true)),
            "$lt" => Some((false, false)),
            "$lte" => Some((false, true)),
            _ => None,
        } {
            let i = *range.get_or_insert_with(|| {
                conds.push(Cond::Range { lo: None, hi: None });
                conds.len() - 1
            });
            if let Some(Cond::Range { lo, hi }) = conds.get_mut(i) {
                let slot = if is_lo { lo } else { hi };
                if slot.is_some() {
                    return Err(err(
                        &here,
                        "gives a second bound on the same side; keep one of $gt/$gte (or $lt/$lte)",
                    ));
                }
                *slot = Some((operand(arg), incl));
            }
            continue;
        }
        if !op.starts_with('$') {
            return Err(err(
                &here,
                format!(
                    "mixes operators and field names; to match an object exactly write {{\"$eq\": {{...}}}}, to reach into it use a dotted path (\"{}.{op}\")",
                    at.rsplit('.').next().unwrap_or(at)
                ),
            ));
        }
        conds.push(operator(op, arg, &here)?);
    }
    if let Some(Cond::Range {
        lo: Some((lo, _)),
        hi: Some((hi, _)),
    }) = range.and_then(|i| conds.get(i))
        && lo.enc > hi.enc
    {
        return Err(err(
            at,
            format!(
                "the range ends ({}) before it starts ({}): swap the bounds",
                hi.json, lo.json
            ),
        ));
    }
    Ok(conds)
}

fn operator(op: &str, arg: Value<'_>, at: &str) -> Result<Cond> {
    Ok(match op {
        "$eq" => Cond::Eq(operand(arg)),
        "$ne" => Cond::Ne(operand(arg)),
        "$in" => Cond::In(operand_list(arg, at)?),
        "$nin" => Cond::Nin(operand_list(arg, at)?),
        "$all" => Cond::All(operand_list(arg, at)?),
        "$exists" => match arg {
            Value::Bool(b) => Cond::Exists(b),
            Value::Int(0) => Cond::Exists(false),
            Value::Int(1) => Cond::Exists(true),
            _ => return Err(err(at, "takes true or false")),
        },
        "$size" => match arg.as_u64() {
            Some(n) if !matches!(arg, Value::Float(_)) || arg.as_f64() == Some(n as f64) => {
                Cond::Size(n)
            }
            _ => return Err(err(at, "takes a whole number of elements, 0 or more")),
        },
        "$type" => Cond::Type(types(arg, at)?),
        "$prefix" => match arg.as_str() {
            Some(p) => Cond::Prefix(p.into_owned()),
            None => return Err(err(at, "takes a string: {\"$prefix\": \"ab\"}")),
        },
        "$not" => {
            if !is_operator_object(&arg) {
                return Err(err(
                    at,
                    "takes an object of operators ({\"$not\": {\"$gt\": 5}}); to negate equality use $ne",
                ));
            }
            Cond::Not(operator_conditions(arg, at)?)
        }
        "$elemMatch" => {
            let Value::Object(o) = arg else {
                return Err(err(
                    at,
                    "takes an object: a filter on the elements, or operators",
                ));
            };
            let operators_only = o
                .iter_original()
                .all(|(k, _)| k.starts_with('$') && !matches!(k, "$and" | "$or" | "$nor"));
            if o.is_empty() {
                return Err(err(at, "takes a non-empty object"));
            }
            if operators_only {
                Cond::ElemMatchValue(operator_conditions(arg, at)?)
            } else {
                Cond::ElemMatchDoc(Box::new(parse_filter(arg, at)?))
            }
        }
        "$regex" | "$options" => {
            return Err(err(
                at,
                "regular expressions are not supported; $prefix matches strings starting with a text",
            ));
        }
        "$and" | "$or" | "$nor" => {
            return Err(err(
                at,
                format!(
                    "{op} goes at the top of a filter, not on a field: {{\"{op}\": [{{\"field\": ...}}, ...]}}"
                ),
            ));
        }
        other => {
            return Err(err(
                at,
                format!(
                    "{other} is not a supported operator; a field condition may use {FIELD_OPERATORS}"
                ),
            ));
        }
    })
}

pub(crate) fn operand(v: Value<'_>) -> Operand {
    let mut enc = Vec::new();
    encode_any(&v, &mut enc);
    let fast = match v {
        Value::String(s) => Fast::Str(s.to_cow().into_owned()),
        Value::Int(i) => Fast::Int(i128::from(i)),
        Value::UInt(u) => Fast::Int(i128::from(u)),
        Value::Float(f) if f.is_finite() => Fast::Float(f),
        Value::Scaled(d) => Fast::Scaled {
            negative: d.is_negative(),
            mantissa: d.mantissa(),
            scale: d.scale(),
        },
        _ => Fast::Slow,
    };
    Operand {
        enc,
        json: v.to_json(),
        fast,
    }
}

fn operand_list(v: Value<'_>, at: &str) -> Result<Vec<Operand>> {
    let Value::Array(a) = v else {
        return Err(err(at, "takes an array of values: [1, 2, 3]"));
    };
    a.iter()
        .enumerate()
        .map(|(i, item)| {
            if is_operator_object(&item) {
                Err(err(
                    &format!("{at}[{i}]"),
                    "holds an operator; the list takes plain values",
                ))
            } else {
                Ok(operand(item))
            }
        })
        .collect()
}

fn types(v: Value<'_>, at: &str) -> Result<Vec<JsonType>> {
    let one = |t: Value<'_>| -> Result<JsonType> {
        let name = t.as_str().unwrap_or_default();
        Ok(match name.as_ref() {
            "null" => JsonType::Null,
            "bool" | "boolean" => JsonType::Bool,
            "number" => JsonType::Number,
            "integer" | "int" | "long" => JsonType::Integer,
            "string" => JsonType::String,
            "object" => JsonType::Object,
            "array" => JsonType::Array,
            _ => {
                return Err(err(
                    at,
                    format!(
                        "{} is not a type name; use null, bool, number, integer, string, object or array",
                        t.to_json()
                    ),
                ));
            }
        })
    };
    match v {
        Value::Array(a) if !a.is_empty() => a.iter().map(one).collect(),
        Value::Array(_) => Err(err(at, "takes a type name or a non-empty list of them")),
        other => Ok(vec![one(other)?]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fails(json: &str, at: &str, says: &str) {
        match Filter::parse(json) {
            Err(Error::InvalidFilter { at: got, reason }) => {
                assert_eq!(got, at, "{json}: {reason}");
                assert!(reason.contains(says), "{json}: {reason}");
            }
            other => panic!("{json}: {other:?}"),
        }
    }

    #[test]
    fn errors_name_the_operator_and_its_place() {
        fails(r#"{"a": {"$regex": "x"}}"#, "$.a.$regex", "$prefix");
        fails(
            r#"{"$or": [{"a": 1}, {"b": {"$foo": 1}}]}"#,
            "$.$or[1].b.$foo",
            "$foo",
        );
        fails(r#"{"$where": "x"}"#, "$.$where", "$where");
        fails(r#"{"a": {"$gt": 1, "b": 2}}"#, "$.a.b", "mixes");
        fails(r#"{"$or": []}"#, "$.$or", "non-empty");
        fails(r#"{"a": {"$in": 5}}"#, "$.a.$in", "array");
        fails(r#"{"a": {"$type": "date"}}"#, "$.a.$type", "type name");
        fails(r#"{"a": {"$size": -1}}"#, "$.a.$size", "whole number");
        fails(r#"[1]"#, "$", "JSON object");
        fails(r#"{"a": "#, "$", "not JSON");
        fails(r#"{"a..b": 1}"#, "$.a..b", "empty name");
    }

    #[test]
    fn the_forms_parse() {
        for ok in [
            "{}",
            r#"{"a.b": 5, "n": {"$gte": 1, "$lt": 9}, "$or": [{"x": true}, {"y": null}]}"#,
            r#"{"tags": {"$all": ["a", "b"]}, "s": {"$prefix": "ab"}, "t": {"$type": ["string", "null"]}}"#,
            r#"{"items": {"$elemMatch": {"sku": "x", "qty": {"$gt": 1}}}, "v": {"$elemMatch": {"$gt": 1}}}"#,
            r#"{"n": {"$not": {"$gt": 5}}, "$nor": [{"a": 1}], "e": {"$exists": false}, "z": {"$size": 2}}"#,
            r#"{"o": {"x": 1}, "o2": {"$eq": {"$x": 1}}, "m": {"$nin": [1, "a", null]}}"#,
        ] {
            Filter::parse(ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
        }
        assert!(Filter::parse("{}").unwrap().is_all());
    }
}
